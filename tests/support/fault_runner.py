"""Runs `drsg` commands for the fault suite, fast: one process imports drsg once, then forks a child
per command that calls the real entry point (``drsg.surfaces.cli.main.main``, supervisor included).

Protocol (JSON lines): stdin ``{"argv": [...], "timeout": s}`` → stdout ``{"code": int | null,
"signal": name | null, "seconds": float, "hung": bool, "out": str, "err": str}``. A child that is
still running at its timeout is killed and reported ``hung``. This process itself has one thread,
so forking it is safe.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import tempfile
import time

from drsg.surfaces.cli.main import main


def run(argv: list[str], timeout: float) -> dict[str, object]:
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        started = time.monotonic()
        child = os.fork()
        if child == 0:
            os.dup2(out.fileno(), 1)
            os.dup2(err.fileno(), 2)
            devnull = os.open(os.devnull, os.O_RDONLY)
            os.dup2(devnull, 0)
            sys.argv = ["drsg", *argv]
            try:
                main()
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(code)
            os._exit(0)
        hung = False
        while True:
            done, status = os.waitpid(child, os.WNOHANG)
            if done:
                break
            if time.monotonic() - started > timeout:
                hung = True
                os.kill(child, signal.SIGKILL)  # its supervised child dies with it (PR_SET_PDEATHSIG)
                _, status = os.waitpid(child, 0)
                break
            time.sleep(0.005)
        seconds = time.monotonic() - started
        code = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        return {
            "code": code if code >= 0 else None,
            "signal": None if code >= 0 else signal.Signals(-code).name,
            "seconds": round(seconds, 3),
            "hung": hung,
            "out": out.read().decode(errors="replace")[-20000:],
            "err": err.read().decode(errors="replace")[-4000:],
        }


def serve() -> None:
    for line in sys.stdin:
        request = json.loads(line)
        print(json.dumps(run(request["argv"], request["timeout"])), flush=True)


if __name__ == "__main__":
    serve()
