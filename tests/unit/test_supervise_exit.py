"""The supervising parent of a `drsg` command exits as its child did, without running exit work twice.

The child runs the command and every exit handler; the parent has only waited, so it leaves at once
(surfaces/cli/supervise.py): the same exit code and output, and a handler registered before the
fork (by an import) runs once, in the child, rather than again in the parent.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

_PROBE = """
import atexit, os, sys
from drsg.surfaces.cli.supervise import run_supervised
atexit.register(lambda: print("exit handler ran", flush=True))
def command():
    print("the command's output")
    sys.exit({code})
run_supervised(command)
"""


@pytest.mark.parametrize("code", [0, 3])
def test_the_parent_exits_as_the_child_did_and_runs_no_exit_handler_again(code: int) -> None:
    done = subprocess.run([sys.executable, "-c", _PROBE.format(code=code)], capture_output=True, text=True, timeout=60)
    assert done.returncode == code, done.stderr
    assert done.stdout.splitlines() == ["the command's output", "exit handler ran"]


# the child ends as the interpreter would, without its teardown: a thread still running is waited
# for, exit handlers run, but an object left in a module is not freed one by one (its __del__ would
# say so), which for a one-shot search was ~0.02-0.07 s of numpy, parse tables and the store
_CHILD_PROBE = """
import atexit, sys, threading, time
from drsg.surfaces.cli.supervise import run_supervised

class Kept:
    def __del__(self):
        print("torn down", flush=True)

kept = Kept()
atexit.register(lambda: print("exit handler ran", flush=True))
def late():
    time.sleep(0.2)
    print("thread done", flush=True)
def command():
    threading.Thread(target=late).start()
    print("the command's output", flush=True)
    sys.exit({code})
run_supervised(command)
"""


@pytest.mark.parametrize(("code", "status"), [("None", 0), ("0", 0), ("4", 4), ("True", 1), ("'a message'", 1)])
def test_the_child_waits_for_its_threads_runs_its_handlers_and_skips_the_teardown(code: str, status: int) -> None:
    probe = _CHILD_PROBE.format(code=code)
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert done.returncode == status, done.stderr
    assert done.stdout.splitlines() == ["the command's output", "thread done", "exit handler ran"]
    assert done.stderr == ("a message\n" if code == "'a message'" else "")
