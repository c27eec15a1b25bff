"""`serve watch`: a daemon keeping a code plane true to a working tree while people edit it.

OS notifications wake it (``watchfiles``: inotify on Linux), so an idle daemon costs nothing; it
never polls the tree. A burst — a save, a checkout that rewrites hundreds of files, a rebase — is
gathered until the tree has been quiet for ``quiet_ms`` (at most ``max_wait_ms`` after the first
change), then folded into the plane in one commit (``drsg.pipeline.digest.sync``). git's ``HEAD``,
refs and index are watched as well, so a commit or a branch switch moves the plane's drift record
(``synced_commit``) even when no file under the tree changed.

A commit to the database by anyone else (a user's ``drsg node put``, another daemon) is noticed
through the database file and read from the log: if it touched the plane, the next fold states the
whole tree again, so the plane returns to what the tree says.

Nothing a tree does stops the daemon: a fold that fails is logged in one line and tried again when
the next change arrives or ``retry_s`` has passed. Changes to drsg's own files (a database inside
the tree) and to what the walk's floor never reads (dot-directories, ``node_modules``, build
output) do not wake it. SIGTERM and SIGINT let the fold in progress finish, then stop. Under
systemd (``Type=notify``) it reports READY=1 after the first fold and STOPPING=1 on its way out.
"""

from __future__ import annotations

import contextlib
import errno
import gc
import os
import signal
import socket
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import structlog
import watchfiles

from drsg.kernel.errors import ConfigError
from drsg.pipeline.code.walk import floor_folder, git_root, run_git
from drsg.pipeline.digest.sync import FoldReport, TreeSync

log = structlog.get_logger("drsg.feed.watch")

#: what under a git directory says HEAD, a branch or the index moved (objects and logs do not)
GIT_STATE = ("HEAD", "index", "packed-refs", "ORIG_HEAD", "FETCH_HEAD")
#: dotfiles that change what the walk admits, so their edits matter
IGNORE_FILE_NAMES = frozenset({".gitignore", ".dockerignore"})


#: how often the quiet loop comes back to Python (to start, and to retry a failed fold): a wake-up
#: of microseconds, not a look at the tree
WAKE_MS = 250


@dataclass(frozen=True)
class WatchOptions:
    quiet_ms: int = 50  # a burst ends after this long without a change
    max_wait_ms: int = 1600  # but a steady stream of changes is folded at least this often
    retry_s: float = 5.0  # a failed fold is tried again after this, even with no new change


class Relevance:
    """Which changed paths wake the daemon (see the module docstring). The database file itself
    does — not to fold, but to look in the log for another writer (``Watcher.run``)."""

    def __init__(self, root: Path, git_dirs: Iterable[Path], own: Iterable[Path], database: Path) -> None:
        self.root = root.resolve()
        self.git_dirs = tuple(d.resolve() for d in git_dirs)
        self.own = tuple(p.resolve() for p in own)
        self.database = database.resolve()

    def folder(self, path: Path) -> bool:
        """Whether a folder of the tree is one the walk goes into (the floor's rule; not drsg's own)."""
        relative = path.relative_to(self.root).parent.as_posix()
        return not floor_folder(path, "" if relative == "." else relative) and path.resolve() not in self.own

    def __call__(self, change: Any, path: str) -> bool:
        file = Path(path)
        if file == self.database:
            return True
        for git_dir in self.git_dirs:
            if file.is_relative_to(git_dir):
                inside = file.relative_to(git_dir).as_posix()
                return inside in GIT_STATE or inside.startswith("refs/")
        if any(file == own or file.is_relative_to(own) for own in self.own):
            return False
        if not file.is_relative_to(self.root):
            return False
        parts = file.relative_to(self.root).parts
        if not parts:
            return False
        # only folders the walk goes into are watched (``folders``): the name alone decides here
        return not parts[-1].startswith(".") or parts[-1] in IGNORE_FILE_NAMES


def git_dirs(root: Path) -> list[Path]:
    """The git directories whose state names the tree's commit (a worktree has two), or none."""
    if git_root(root) is None:
        return []
    found = []
    for flag in ("--absolute-git-dir", "--git-common-dir"):
        out = run_git(root, "rev-parse", flag)
        if out and out.strip():
            path = Path(out.strip())
            found.append(path if path.is_absolute() else (root / path))
    return list(dict.fromkeys(p.resolve() for p in found))


class Watcher:
    """Runs ``sync`` on every settled burst of changes until ``stop`` is set."""

    def __init__(
        self,
        sync: TreeSync,
        own: Iterable[Path] = (),
        options: WatchOptions | None = None,
        stop: threading.Event | None = None,
    ) -> None:
        self.sync = sync
        self.options = options or WatchOptions()
        self.stop = stop or threading.Event()
        self.gits = git_dirs(sync.root)
        self.database = Path(sync.db.path).resolve()
        self.relevant = Relevance(sync.root, self.gits, own, self.database)
        self.failing = False
        self.ready = False  # the first fold is done (systemd hears it once)
        self._unwatched: set[str] = set()  # folders it may not read, logged once each
        self._warned: str | None = None  # the walk's warning last logged: said again only when it changes

    def fold(self, why: str) -> FoldReport | None:
        """One fold, logged; a failure is logged too (one line) and leaves the daemon running."""
        try:
            report = self.sync.fold()
        except Exception as exc:  # the daemon outlives any one tree state: log it, try again later
            self.failing = True
            log.error("fold failed", plane=self.sync.plane, why=why, error=f"{type(exc).__name__}: {exc}")
            return None
        self.failing = False
        log.info("folded", plane=self.sync.plane, why=why, **report.fields())
        if report.warning is not None and report.warning != self._warned:
            log.warning("most of the tree is withheld", plane=self.sync.plane, warning=report.warning)
        self._warned = report.warning
        for note in report.notes:
            log.debug("fold note", note=note)
        _collect_between_folds()
        return report

    def run(self) -> None:
        """Fold once (the whole tree, so a restart converges) as soon as the notifications are set
        up — so nothing between the two is missed — then on every change until stopped.

        Each folder is watched on its own (a recursive watch stops at the first folder it may not
        read, leaving the rest unwatched). A folder created or removed changes the set: the watch
        is set up again and the tree folded again, so what happened in between is not missed."""
        log.info("watching", root=str(self.sync.root), plane=self.sync.plane, git=[str(d) for d in self.gits])
        why: str | None = "start"
        while why is not None and not self.stop.is_set():
            try:
                why = self._watch(self.folders(), why)
            except (FileNotFoundError, PermissionError):  # a folder went, or was closed, since it was listed
                log.info("a folder changed as the watch was set up; setting it up again", plane=self.sync.plane)
            except OSError as exc:
                raise _watch_limit(exc) from exc
        notify_systemd("STOPPING=1")
        log.info("stopped", plane=self.sync.plane)

    def folders(self) -> list[Path]:
        """The folders to watch: the tree's (but those the walk's floor never reads, and those this
        user may not read — each logged once), git's state, and the database file itself."""
        found: list[Path] = []
        for top, floor in ((self.sync.root, True), *((git, False) for git in self.gits)):
            for folder, subfolders, _ in os.walk(top, onerror=self._unreadable):
                here = Path(folder)
                if floor:
                    subfolders[:] = [d for d in subfolders if self.relevant.folder(here / d)]
                elif here == top:
                    subfolders[:] = [d for d in subfolders if d == "refs"]  # not objects/, logs/
                if os.access(here, os.R_OK | os.X_OK):
                    found.append(here)
                else:
                    self._unreadable(PermissionError(13, "Permission denied", str(here)))
        return [*dict.fromkeys(found), self.database]

    def _unreadable(self, error: OSError) -> None:
        if error.filename not in self._unwatched:
            self._unwatched.add(error.filename)
            log.warning("cannot watch a folder", path=error.filename, error=error.strerror or str(error))

    def _watch(self, folders: list[Path], first: str) -> str | None:
        """Watch ``folders`` until the set of folders changes (returns why, for the fold that
        follows) or the daemon stops (None)."""
        started = False
        last_try = time.monotonic()
        watched = set(folders)
        for changes in watchfiles.watch(
            *folders,
            watch_filter=self.relevant,
            debounce=self.options.max_wait_ms,
            step=self.options.quiet_ms,
            stop_event=self.stop,
            rust_timeout=WAKE_MS,
            yield_on_timeout=True,
            raise_interrupt=False,
            recursive=False,
            ignore_permission_denied=False,  # it would hide the OS's watch limit too; folders() checked access
        ):
            if self.stop.is_set():
                return None
            if not started:  # the notifications are set up now: an edit from here on is not missed
                started = True
                self.fold(first)
                if not self.ready:  # Type=notify units start their dependants now
                    self.ready = True
                    notify_systemd("READY=1")
                last_try = time.monotonic()
                continue
            if not changes:
                if self.failing and time.monotonic() - last_try >= self.options.retry_s:
                    last_try = time.monotonic()
                    self.fold("retry")
                continue
            last_try = time.monotonic()
            tree = {(kind, path) for kind, path in changes if Path(path) != self.database}
            moved = {path for _, path in tree if Path(path) in watched or Path(path).is_dir()}
            if moved:  # a folder came or went: watch the new set, and fold what it held
                return _why(tree, self.sync.root)
            if tree:
                self.fold(_why(tree, self.sync.root))
            elif self._written_by_another():
                self.fold("another writer changed the plane")
        return None

    def _written_by_another(self) -> bool:
        try:
            return self.sync.written_by_another()
        except Exception as exc:  # a log that cannot be read now is read at the next fold
            log.error("reading the log failed", plane=self.sync.plane, error=f"{type(exc).__name__}: {exc}")
            return False


def _watch_limit(exc: OSError) -> Exception:
    """The OS refused another watch: say which limit, and how to raise it (a fix the daemon cannot make)."""
    text = str(exc)
    if exc.errno in (errno.ENOSPC, errno.EMFILE) or "limit" in text.lower() or "too many" in text.lower():
        return ConfigError(
            f"the OS refused to watch more folders ({text}); raise the inotify limits, e.g. "
            "`sysctl fs.inotify.max_user_watches=524288 fs.inotify.max_user_instances=1024`, and start again"
        )
    return exc


def notify_systemd(state: str) -> None:
    """Tell systemd (a ``Type=notify`` unit: ``$NOTIFY_SOCKET``) how the daemon is; elsewhere nothing."""
    address = os.environ.get("NOTIFY_SOCKET")
    if not address:
        return
    if address.startswith("@"):  # an abstract socket
        address = "\0" + address[1:]
    with contextlib.suppress(OSError), socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        sock.connect(address)
        sock.sendall(state.encode())


def _collect_between_folds() -> None:
    """Collect garbage now, while the tree is quiet, and freeze what survives.

    A daemon holds a big, long-lived heap (the last fold's facts, the remembered parses); a fold
    allocates tens of thousands of objects, which would trigger full collections that walk that
    heap in the middle of the next fold (a third of a one-file fold on a 1,500-file tree). Frozen
    objects are skipped by those; each fold unfreezes them first, so nothing is kept for ever."""
    gc.unfreeze()
    gc.collect()
    gc.freeze()


def _why(changes: set[tuple[Any, str]], root: Path) -> str:
    paths = sorted({path for _, path in changes})
    first = Path(paths[0])
    shown = first.relative_to(root).as_posix() if first.is_relative_to(root) else first.name
    return shown if len(paths) == 1 else f"{shown} and {len(paths) - 1} more"


def stop_on_signals(stop: threading.Event) -> None:
    """SIGTERM and SIGINT set ``stop``: the fold in progress finishes, then the daemon exits."""

    def handle(signum: int, frame: object) -> None:
        log.info("stopping", signal=signal.Signals(signum).name)
        stop.set()

    signal.signal(signal.SIGTERM, handle)
    signal.signal(signal.SIGINT, handle)
