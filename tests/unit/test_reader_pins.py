"""This process's long readers as its lease file (store/readers.py): written before a new reader
that needs an older commit reads, never newer than its readers, gone with the last of them; an
expired lease holds nothing and a compaction removes it, a look does not; a stray file holds nothing."""

from __future__ import annotations

import json
import time
from pathlib import Path

from drsg.store.readers import Pins, leases_dir, live_leases


class Reader:
    def __init__(self, needs: int) -> None:
        self.at = needs

    def needs(self) -> int:
        return self.at


def _held(folder: Path) -> list[int]:
    return [lease.seq for lease in live_leases(folder, int(time.time() * 1000))]


def test_the_lease_is_never_newer_than_its_readers(tmp_path: Path) -> None:
    db = tmp_path / "g.drsg"
    pins, other = Pins(db, lambda: 60.0), Pins(db, lambda: 60.0)  # two processes' views of the file
    try:
        late, early = Reader(5), Reader(3)
        pins.add(late)
        assert _held(leases_dir(db)) == [5]
        pins.add(early)
        assert _held(leases_dir(db)) == [3]  # at once, before it reads
        early.at = 10  # it read on: the lease stays older until renewed (history kept is only more)
        pins.add(late)
        assert _held(leases_dir(db)) == [3]
        assert [h.seq for h in other.holders()] == [3] and [h.seq for h in pins.holders()] == [5]
        pins.discard(late)
        pins.discard(early)
        assert not leases_dir(db).exists() and other.holders() == []
    finally:
        pins.close()
        other.close()


def test_an_expired_lease_holds_nothing_and_a_stray_file_is_ignored(tmp_path: Path) -> None:
    folder = leases_dir(tmp_path / "g.drsg")
    folder.mkdir()
    expired = folder / "1-dead.lease"
    expired.write_text(json.dumps({"seq": 2, "pid": 1, "host": "h", "expires_ms": 1}))
    (folder / "2-torn.lease").write_text("{")
    now = int(time.time() * 1000)
    assert live_leases(folder, now, prune=False) == [] and expired.exists()  # a look changes nothing
    assert live_leases(folder, now) == [] and not expired.exists()  # a compaction removes it
