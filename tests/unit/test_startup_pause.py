"""A `drsg` process starts with the garbage collector paused, and has it back after START_PAUSE.

What a one-shot command allocates first — its imports, the Cypher parser's tables, numpy — lives to
the process's end; each collection its allocation triggered walked it again (~10 % of a one-shot
read). The pause is a stretch of kernel/gcpause.py ended by a timer, so a bulk stretch still running
when the timer fires keeps the collector paused until it ends, as nested stretches always do.
"""

from __future__ import annotations

import gc
import subprocess
import sys
import time
from pathlib import Path

from drsg.kernel.gcpause import collector_paused, pause_for

# the collections that start while `drsg get` runs as the `drsg` command does (main(): the child of
# the supervising fork runs it, and its exit handlers), counted from main() on
_PROBE = """
import atexit, gc, sys
from drsg.surfaces.cli import main as entry
started = []
gc.callbacks.append(lambda phase, info: phase == "start" and started.append(info["generation"]))
atexit.register(lambda: print("COLLECTIONS", len(started), flush=True))
sys.argv = ["drsg", *{args!r}]
entry.START_PAUSE = {pause!r}
entry.main()
"""


def _collections(args: list[str], pause: float) -> int:
    done = subprocess.run(
        [sys.executable, "-c", _PROBE.format(args=args, pause=pause)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return int(done.stdout.split("COLLECTIONS ")[-1])


def test_a_one_shot_command_runs_no_collection_and_one_paused_for_nothing_would(tmp_path: Path) -> None:
    db = str(tmp_path / "g.drsg")
    for args in (["plane", "create", "p"], ["node", "put", "-p", "p", "-l", "Doc", "-P", "name=Ada", "a"]):
        _collections(["--db", db, *args], 1.0)
    read = ["--db", db, "cypher", "-p", "p", "MATCH (n:Doc) RETURN n.name"]
    assert _collections(read, 1.0) == 0
    assert _collections(read, 0.0) > 10  # the same read with no pause: the collections it saves


def test_the_pause_ends_on_its_timer_unless_a_stretch_still_runs() -> None:
    assert gc.isenabled()
    pause_for(0.2)
    assert not gc.isenabled()
    deadline = time.monotonic() + 10
    while not gc.isenabled() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert gc.isenabled()
    with collector_paused():
        pause_for(0.05)
        time.sleep(0.3)
        assert not gc.isenabled()  # the timer fired inside a stretch: the stretch still holds the pause
    assert gc.isenabled()
