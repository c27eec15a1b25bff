"""The history keeper: `drsg serve`'s background history compaction (store/retention.py).

A thread of its own runs a compaction at start and then at most once per ``every`` seconds: when
commits came since the last one, or always under ``retain_days`` (time moves the horizon too).
Each compaction's transactions take the writer's turn like commits, so writers interleave; an
error is logged and the next round tries again.
"""

from __future__ import annotations

import threading

import structlog

from drsg.kernel.errors import DrsgError
from drsg.store.database import Database
from drsg.store.retention import Retention

EVERY = 60.0  # seconds between two compactions at most: each walks every versioned table
log = structlog.get_logger("drsg.store")


class HistoryKeeper:
    def __init__(self, db: Database, retention: Retention, every: float = EVERY) -> None:
        self.db = db
        self.retention = retention
        self.every = every
        self.rounds = 0  # compactions run (a test waits on it)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        if self._thread is not None or not self.retention.bounded:
            return
        self._thread = threading.Thread(target=self._run, name="drsg-history", daemon=True)
        self._thread.start()
        self.db.on_close(self.stop)  # it reads through the file: it ends before the file closes

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join()

    def _run(self) -> None:
        compacted_at = -1  # the head at the last compaction
        while True:
            head = self.db.head()
            if head != compacted_at or self.retention.days:
                try:
                    self.db.compact_history(self.retention)
                except DrsgError as exc:  # e.g. the disk is full: the next round tries again
                    log.warning("history compaction failed; it runs again later", error=str(exc))
                compacted_at = head
                self.rounds += 1
            if self._stop.wait(self.every):
                return
