"""The benchmarks' prose corpus (tests/bench/common.py ``text_lines``) is the same whoever asks for
it first: a test asking for a few hundred lines must not leave a cut-down corpus behind, in the
process or in the cache file, for the benchmarks run later in the same checkout."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.bench import common


def _forget(monkeypatch: pytest.MonkeyPatch) -> None:
    """A new process in the same checkout: the cache file stays, the process's memory does not."""
    monkeypatch.setattr(common, "_LINES", [])
    monkeypatch.setattr(common, "_whole", False, raising=False)  # (a code without the flag fails on the lines)


@pytest.fixture
def fresh_corpus(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """text_lines as in a fresh checkout: no cache file, nothing remembered in the process."""
    monkeypatch.setattr(common, "OUT", tmp_path)
    _forget(monkeypatch)
    return tmp_path


def test_a_small_first_request_leaves_the_corpus_whole(fresh_corpus: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    few = common.text_lines(50)
    assert len(few) == 50
    more = common.text_lines(400)  # the same process, a larger request
    assert len(more) == 400 and more[:50] == few
    _forget(monkeypatch)
    again = common.text_lines(400)  # a later process: whatever the first one left on disk
    assert again == more
