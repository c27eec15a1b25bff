"""The `drsg` command runs in a child process, so a crash of a native library is one line, not a signal.

LMDB trusts its file: a damaged page can make it read past the map (SIGBUS) or follow a wild
pointer (SIGSEGV) anywhere, in any command. What can be checked before mapping is checked
(``drsg.store.filecheck``); for the rest, the parent waits for the child and turns its death by a
crash signal into one line with the fix and exit code 1.

The parent is invisible otherwise: the child shares its stdin, stdout and stderr, a signal sent to
the parent (``kill PID``, a process manager's SIGTERM) is passed on to the child, a Ctrl-C on the
terminal already reaches both (so it is not passed on twice), the child dies with the parent
(``PR_SET_PDEATHSIG``: a ``kill -9`` of drsg stops the work), and the parent exits as the child did.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import os
import signal
import sys
import threading
from collections.abc import Callable
from typing import NoReturn

#: signals a native library dies of; the parent reports these as a damaged file or a crash
CRASHES = {signal.SIGSEGV, signal.SIGBUS, signal.SIGILL, signal.SIGFPE, signal.SIGABRT}
#: signals passed on to the child when somebody sends them to the parent
FORWARDED = {signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGABRT, signal.SIGUSR1}
_SI_KERNEL = 0x80  # si_code of a signal the terminal sent to the whole foreground process group
_PR_SET_PDEATHSIG = 1


def run_supervised(command: Callable[[], object]) -> NoReturn:
    """Run ``command`` in a child process and exit as it did (see the module docstring)."""
    watched = FORWARDED | {signal.SIGCHLD}
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, watched)  # before fork: no signal slips between
    parent = os.getpid()
    child = os.fork()
    if child == 0:
        _die_with(parent)
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)
        _finish(command)
    _leave(_wait(child, watched))


def _finish(command: Callable[[], object]) -> NoReturn:
    """Run the command in the child and end it as the interpreter ends — its other threads waited
    for, every exit handler run, a SystemExit's message printed, its code the exit code — but without
    tearing the interpreter down: freeing every object a one-shot search loaded (numpy, the parser's
    tables, the store) one by one, and a last full collection, took ~0.02-0.07 s after its work. Any
    other exception leaves as before, through the interpreter's own report and teardown."""
    try:
        command()
        status: object = None
    except SystemExit as exc:
        status = exc.code
    if status is not None and not isinstance(status, int):
        print(status, file=sys.stderr)  # as the interpreter prints sys.exit("message"), exit code 1
    code = (status or 0) if isinstance(status, int) or status is None else 1
    for thread in threading.enumerate():
        if thread is not threading.main_thread() and not thread.daemon:
            thread.join()
    atexit._run_exitfuncs()  # the interpreter's own exit step (atexit has no public runner)
    _leave(code)


def _leave(code: int) -> NoReturn:
    """Exit with ``code`` once the standard streams are flushed, without tearing the interpreter
    down: the parent has only waited, and the child has run every exit handler and closed every
    file already (:func:`_finish`). Tearing down the modules a command imported took ≈0.01 s of every
    command's wall time in the parent, after its work."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):  # a closed pipe (`drsg … | head`): nothing left to say
            stream.flush()
    os._exit(code)


def _die_with(parent: int) -> None:
    try:
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):  # not Linux: a killed parent leaves the child to finish on its own
        return
    if os.getppid() != parent:  # the parent died before prctl took effect
        os._exit(1)


def _wait(child: int, watched: set[signal.Signals]) -> int:
    while True:
        done, status = os.waitpid(child, os.WNOHANG)
        if done:
            return _exit_code(status)
        info = signal.sigwaitinfo(watched)
        if info.si_signo != signal.SIGCHLD and info.si_code != _SI_KERNEL:
            with contextlib.suppress(ProcessLookupError):  # it has just exited: SIGCHLD is on its way
                os.kill(child, info.si_signo)


def _exit_code(status: int) -> int:
    code = os.waitstatus_to_exitcode(status)
    if code >= 0:
        return code
    sig = signal.Signals(-code)
    if sig in CRASHES:
        print(
            f"error: drsg crashed ({sig.name}) inside a native library — most likely LMDB reading a damaged "
            "database file; run `drsg check` on it, and restore it from a backup if check finds damage",
            file=sys.stderr,
        )
        return 1
    return 128 + sig  # killed (SIGKILL, or a signal the child did not handle), as a shell reports it
