"""A full disk is a clean error, every time it happens, and nothing is lost: the database stays whole
and the same import succeeds once there is room. Runs on a small tmpfs mounted for the test (root
only: mounting needs it; CI runs as root)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.cli import Drsg
from tests.support.small_disk import tmpfs


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    with tmpfs(tmp_path, 6) as disk:
        yield disk


def test_a_full_disk_is_one_clean_line_each_time_and_the_import_resumes(
    drsg: Drsg, small_disk: Path, tmp_path: Path
) -> None:
    db = small_disk / "g.drsg"
    assert drsg("plane", "create", "p", db=db).code == 0
    filler = small_disk / "filler"
    filler.write_bytes(b"\0" * (4 << 20))  # leave about 2 MiB for the database
    source = tmp_path / "nodes.jsonl"
    with source.open("w") as out:
        for i in range(6_000):
            out.write(json.dumps({"labels": ["N"], "external_key": f"n{i}", "properties": {"text": "x" * 200}}) + "\n")
    head = drsg("log", "--json", db=db).lines()
    for attempt in (1, 2):  # the second attempt said "Input/output error" before
        ran = drsg("import", str(source), "--plane", "p", db=db)
        assert ran.code == 1, (attempt, ran.err)
        assert "the disk is full" in ran.err and "free space and retry" in ran.err, (attempt, ran.err)
        assert len(ran.err.strip().splitlines()) == 1
        assert drsg("log", "--json", db=db).lines() == head, "a failed import wrote something"
    assert drsg("check", db=db).code == 0
    filler.unlink()
    done = drsg("import", str(source), "--plane", "p", db=db)
    assert done.code == 0 and "imported 6000 node(s)" in done.out, done.err
    assert drsg("check", db=db).code == 0
