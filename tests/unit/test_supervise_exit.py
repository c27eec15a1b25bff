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
