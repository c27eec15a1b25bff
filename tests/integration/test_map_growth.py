"""Map growth across processes: a process that opens, reads or writes while others grow the map
adopts the new size and carries on (MDB_MAP_RESIZED never reaches the caller).

Every process starts with a 1 MiB map. One grower writes 4 KiB nodes 200 to a commit, as `drsg
import` does, so the map doubles inside its long write transactions, which the others wait for.
Three more processes each open the database afresh for every write (the open is where another
process's growth used to surface: ``open_db`` begins a transaction of its own), and a fourth reads
while all of it happens. Every process must finish cleanly and every acknowledged node must be in the file.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import drsg

GROWER = r"""
import sys, drsg
db = drsg.open(sys.argv[1], map_size=1 << 20)
plane = db.write(lambda tx: tx.ensure_plane("grow")).value
def batch(tx, start):
    for i in range(start, start + 200):
        tx.create_node(plane, f"g{i}", ["G"], {"blob": "x" * 4096})
for start in range(0, int(sys.argv[2]), 200):
    db.write(lambda tx, start=start: batch(tx, start))
print(db.env.map_size())
"""

OPENER = r"""
import sys, drsg
path, name, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
for i in range(rounds):
    db = drsg.open(path, map_size=1 << 20)
    plane = db.write(lambda tx: tx.ensure_plane("grow")).value
    db.write(lambda tx, i=i: tx.create_node(plane, f"{name}-{i}", ["O"], {"blob": "y" * 1024}))
    db.close()
print("ok")
"""

READER = r"""
import sys, drsg
db = drsg.open(sys.argv[1], map_size=1 << 20, readonly=True)
seen = 0
for _ in range(int(sys.argv[2])):
    seen = max(seen, db.head())
    with db.snapshot() as snap:
        plane = snap.find_plane("grow")
        if plane is not None:
            sum(1 for _ in snap.nodes(plane.id))
print(seen)
"""

GROWER_WRITES = 4000  # ~16 MiB of nodes: the 1 MiB map doubles at least four times
OPENERS = 3
OPENER_ROUNDS = 15


def _start(script: str, *args: object) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", script, *map(str, args)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


@pytest.mark.slow
@pytest.mark.parametrize("round_no", range(2))
def test_processes_open_read_and_write_while_another_grows_the_map(tmp_path: Path, round_no: int) -> None:
    path = tmp_path / "grow.drsg"
    drsg.open(path, map_size=1 << 20).close()  # the file exists, so the reader can open it read-only
    procs = {"grower": _start(GROWER, path, GROWER_WRITES)}
    procs |= {f"opener{n}": _start(OPENER, path, f"o{n}", OPENER_ROUNDS) for n in range(OPENERS)}
    procs["reader"] = _start(READER, path, 300)
    outs = {}
    for name, proc in procs.items():
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, f"{name} failed: {err.strip().splitlines()[-1:] or err}"
        outs[name] = out.strip()
    assert int(outs["grower"]) >= 8 << 20, "the map never grew: the test did not test growth"
    db = drsg.open(path)
    with db.snapshot() as snap:
        plane = snap.plane("grow")
        keys = {node.key for node in snap.nodes(plane.id)}
    expected = {f"g{i}" for i in range(GROWER_WRITES)}
    expected |= {f"o{n}-{i}" for n in range(OPENERS) for i in range(OPENER_ROUNDS)}
    assert keys == expected
    log = [c.seq for c in db.commits()]
    assert log == list(range(1, db.head() + 1)), "the log has a gap"
    assert json.loads(outs["reader"]) <= db.head()
    db.close()
