"""Retention through the command line: `compact --history` moves the horizon the settings ask for,
every read before it (`--as-of`, `AS OF`, `diff`, `log --from`, `feed --from`) is refused with the
one line naming it and the setting, reads after it answer as before, `stats` reports the window,
`check` verifies what is left and `rebuild` is refused with one line."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.cli import Drsg
from tests.support.damage import alter_record, tamper
from tests.support.sample import SAMPLE

KEEP = 4


@pytest.fixture
def compacted(drsg: Drsg, db_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[int, int, dict[int, str]]:
    """A history of updates to one node, compacted to the last KEEP commits: (horizon, head, the
    node's JSON as of each seq from the horizon, read before the compaction)."""
    assert drsg("import", str(SAMPLE), "--plane", "pioneers", "--create-plane").code == 0
    for n in range(8):
        assert drsg("node", "put", "ada", "--plane", "pioneers", "-P", f"round={n}").code == 0
    assert drsg("node", "delete", "@dijkstra", "--plane", "pioneers").code == 0
    head = int(drsg("stats", "--json").json_lines()[0]["commit_seq"])
    horizon = head - KEEP
    before = {s: drsg("get", "@ada", "--plane", "pioneers", "--as-of", str(s)).out for s in range(horizon, head + 1)}
    assert drsg("compact", "--history").code == 2  # nothing asks for less history yet
    monkeypatch.setenv("DRSG_LOG_RETAIN_COMMITS", str(KEEP))
    done = drsg("compact", "--history", "--json").json_lines()[0]
    assert done["horizon"] == horizon and done["log_records"] == horizon - 1 and done["versions"] > 0
    return horizon, head, before


def test_reads_before_the_horizon_are_refused_with_one_line(
    drsg: Drsg, compacted: tuple[int, int, dict[int, str]]
) -> None:
    horizon, head, _ = compacted
    line = f"is older than the retained history (it starts at commit {horizon}: [log] retain_commits = {KEEP})"
    old = str(horizon - 1)
    for args in (
        ("get", "@ada", "--plane", "pioneers", "--as-of", old),
        ("cypher", f"MATCH (p:Person) RETURN count(p) AS OF {old}", "--plane", "pioneers"),
        ("cypher", "MATCH (p:Person) RETURN count(p)", "--plane", "pioneers", "--as-of", old),
        ("diff", old, str(head), "--plane", "pioneers"),
        ("log", "--from", "1"),
        ("feed", "--from", str(horizon), "--plane", "pioneers"),  # it reads the state before its first commit
    ):
        refused = drsg(*args)
        assert refused.code == 2, args
        assert line in refused.err and refused.err.count("\n") == 1, (args, refused.err)
    assert f"ask for commit {horizon + 1} or later" in drsg("feed", "--from", str(horizon), "--plane", "pioneers").err


def test_reads_from_the_horizon_answer_as_before(drsg: Drsg, compacted: tuple[int, int, dict[int, str]]) -> None:
    horizon, head, before = compacted
    for seq, shown in before.items():
        assert drsg("get", "@ada", "--plane", "pioneers", "--as-of", str(seq)).out == shown
    assert [c["seq"] for c in drsg("log", "--json").json_lines()] == list(range(horizon, head + 1))
    assert drsg("diff", str(horizon), str(head), "--plane", "pioneers").code == 0
    stats = drsg("stats", "--json").json_lines()[0]
    assert stats["history"] == {"oldest": horizon, "latest": head}
    assert f"history: commits {horizon}..{head} may be read" in drsg("stats").out


def test_check_verifies_what_is_left_and_rebuild_is_refused(
    drsg: Drsg, db_path: Path, compacted: tuple[int, int, dict[int, str]]
) -> None:
    horizon, _, _ = compacted
    checked = drsg("check", "--json").json_lines()[0]
    assert checked["ok"] and any(f"before commit {horizon} was compacted" in n for n in checked["notes"])
    refused = drsg("rebuild")
    assert refused.code == 2 and f"the log starts at commit {horizon}" in refused.err
    tamper(db_path, "nodes", alter_record)  # a retained version altered below drsg
    found = drsg("check")
    assert found.code == 1 and "table nodes: the projection differs from a replay of the log" in found.err
