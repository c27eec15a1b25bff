"""``GET /snapshot``: the database as one snapshot file (workers/backup.py), streamed as it is written.

Token required: a server without ``DRSG_TOKEN`` answers HTTP 403 here even on loopback, since the
answer is the whole database. The indexes are saved first, so the snapshot carries sidecars as
close to its seq as they can be. The seq is in the file's header; ``drsg restore`` reads it back.
A client that goes away ends the copy (it meets a closed stream) and nothing is left behind.
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
import re
import threading
from pathlib import Path

import structlog
from aiohttp import web

from drsg.kernel.errors import UNAUTHORIZED
from drsg.surfaces.server.state import ServerState
from drsg.workers.backup import take_snapshot

STATE = web.AppKey("drsg_snapshot_state", ServerState)
log = structlog.get_logger("drsg.surfaces.server")
BACKLOG = 16  # chunks (of up to 1 MiB) written ahead of a slow client


def install(app: web.Application, state: ServerState) -> None:
    app[STATE] = state
    app.add_routes([web.get("/snapshot", snapshot)])


class _Gone(Exception):
    """The client left: the snapshot's writer stops."""


class _Stream:
    """What the snapshot writes into, from its thread: chunks to the event loop, with backpressure."""

    def __init__(self) -> None:
        self.chunks: queue.Queue[bytes | None] = queue.Queue(BACKLOG)
        self.gone = threading.Event()
        self.pending: list[bytes] = []
        self.held = 0

    def write(self, data: bytes) -> int:
        self.pending.append(data)
        self.held += len(data)
        if self.held >= 1 << 20:
            self.flush()
        return len(data)

    def flush(self) -> None:
        if self.pending:
            block, self.pending, self.held = b"".join(self.pending), [], 0
            while not self.gone.is_set():
                try:
                    self.chunks.put(block, timeout=0.5)
                    return
                except queue.Full:
                    continue
            raise _Gone


async def snapshot(request: web.Request) -> web.StreamResponse:
    state = request.app[STATE]
    if state.config.token is None:
        return web.json_response(
            {"error": {"code": UNAUTHORIZED, "message": "unauthorized: /snapshot needs a token; set DRSG_TOKEN"}},
            status=403,
        )
    loop = asyncio.get_running_loop()
    stream = _Stream()
    done: dict[str, object] = {}

    def write() -> None:
        try:
            try:  # sidecars as near the snapshot's seq as they can be; stale ones catch up after a restore
                state.indexes.catch_up()
                state.indexes.save()
            except Exception:
                log.warning("snapshot: indexes not saved first", exc_info=True)
            done["taken"] = take_snapshot(state.db, stream)
            stream.flush()
        except _Gone:
            done["gone"] = True
        except Exception as exc:
            done["error"] = exc
            log.exception("snapshot failed", db=str(state.db.path))
        finally:
            while not stream.gone.is_set():
                try:
                    stream.chunks.put(None, timeout=0.5)
                    break
                except queue.Full:
                    continue

    name = re.sub(r"[^A-Za-z0-9._-]", "_", Path(str(state.db.path)).name)
    response = web.StreamResponse(
        headers={
            "Content-Type": "application/octet-stream",
            "Content-Disposition": f'attachment; filename="{name}.snapshot"',
            "Cache-Control": "no-store",
        }
    )
    worker = threading.Thread(target=write, name="drsg-snapshot", daemon=True)
    worker.start()
    try:
        await response.prepare(request)
        while (chunk := await loop.run_in_executor(None, stream.chunks.get)) is not None:
            await response.write(chunk)
        if "error" not in done:  # else the body ends without its trailer: a restore refuses it
            await response.write_eof()
    finally:
        stream.gone.set()
        await loop.run_in_executor(None, worker.join)
        with contextlib.suppress(queue.Full):  # a getter left waiting by a cancelled answer
            stream.chunks.put_nowait(None)
    return response
