"""Closing a database while its index workers run in their thread (as `serve` does when it fails to
start) stops them first: py-lmdb freed the thread's transaction of the closed environment a second
time, and the process died of "double free or corruption" (SIGABRT) in about 2 runs of 3."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

CLOSE_UNDER_WORKERS = r"""
import sys, drsg
from drsg.workers.manager import IndexSet
for i in range(30):
    db = drsg.open(f"{sys.argv[1]}/g{i}.drsg")
    db.write(lambda tx: tx.create_node(tx.plane("startup"), "a", ["X"], {"v": 1}))
    IndexSet(db).start()  # never stopped by the caller
    db.close()
print("closed 30 times")
"""


def test_closing_a_database_stops_its_index_workers_first(tmp_path: Path) -> None:
    ran = subprocess.run(
        [sys.executable, "-c", CLOSE_UNDER_WORKERS, str(tmp_path)], capture_output=True, text=True, timeout=120
    )
    assert ran.returncode == 0 and "closed 30 times" in ran.stdout, (ran.returncode, ran.stderr[-800:])
