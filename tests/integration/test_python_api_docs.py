"""docs/python-api.md runs: every ```python block, in order, in one namespace, in an empty folder.

The page's promise is that its examples are what the library does; a block that raises fails here
with the block's number and its first line. The blocks need no network: the local embedder and
``ScriptedChatModel``.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

PAGE = Path(__file__).resolve().parents[2] / "docs" / "python-api.md"
BLOCK = re.compile(r"^```python\n(.*?)^```$", re.MULTILINE | re.DOTALL)


def blocks(text: str) -> list[str]:
    return BLOCK.findall(text)


def test_the_page_has_examples_for_each_part() -> None:
    found = blocks(PAGE.read_text())
    assert len(found) >= 8
    for call in (
        "put(",
        "link(",
        "history(",
        "diff(",
        "export_jsonl(",
        "search(",
        "hybrid(",
        "cypher(",
        "ask(",
        "feed(",
    ):
        assert any(call in block for block in found), call


def test_every_example_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("DRSG_CONFIG", raising=False)
    namespace: dict[str, object] = {"__name__": "python_api_docs"}
    for number, source in enumerate(blocks(PAGE.read_text()), 1):
        first = source.strip().splitlines()[0]
        try:
            exec(compile(source, f"python-api.md block {number}", "exec"), namespace)
        except Exception as exc:
            pytest.fail(f"block {number} ({first}) raised {type(exc).__name__}: {exc}")
    out = capsys.readouterr().out
    assert "created ada 3" in out and "['babbage']" in out and "True hopper" in out


def test_a_failing_example_is_caught(tmp_path: Path) -> None:
    """The runner is not vacuous: a page whose block raises is reported."""
    page = "```python\nimport drsg\ndrsg.open('g.drsg').plane('nowhere')\n```\n"
    [source] = blocks(page)
    with pytest.raises(Exception, match="nowhere"):
        exec(compile(source, "planted", "exec"), {"__name__": "planted"})
