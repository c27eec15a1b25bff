"""Remembered parses: a file whose inputs are unchanged is not parsed again.

A partial depends on more than its file: a handler may list the tree (the Python handler lists
``__init__.py`` files to find package roots), read other files, or ask the tree's label. So while a
chunk is parsed, a :class:`RecordingTree` notes every answer the handler was given — each listing's
hash, each file read's SHA-256 or the refusal (a file gone or unreadable is refused like one outside
the walk) — and the partial is reused only when the tree, asked the same questions now, gives the
same answers; the tree's label, the handler and its options are part of the entry's key. Nothing is
assumed about which inputs matter; what the handler asked decides.

A file's hash is recomputed only when its stat signature (size, mtime, ctime, inode) moved, and a
signature from the last two seconds is never trusted (an edit within the clock's resolution would
look unchanged: git's "racily clean" case). Entries live in memory and, given a folder, on disk
(``<db>.digest/parsed/``, one msgpack file per chunk, written whole or not at all) so a restarted
``serve watch`` or a second ``digest`` of a big tree verifies by content instead of parsing again.
A damaged or foreign entry is a miss, never an error.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgpack

from drsg.kernel.files import write_atomic
from drsg.pipeline.code.handler import Handler, Options, SourceTree

ENTRY_FORMAT = 1
RACY_NS = 2_000_000_000  # a signature this recent may hide a same-tick edit: hash again next time


@dataclass
class Observations:
    """What one parse was told by the tree: the inputs its partial depends on (the label, and the
    handler and options, are part of the entry's key)."""

    listed: dict[str, str] = field(default_factory=dict)  # suffix -> hash of the answer
    read: dict[str, str] = field(default_factory=dict)  # path -> SHA-256, or "!" + the refusal


Signature = tuple[int, int, int, int]


def stat_signature(path: Path) -> Signature | None:
    """(size, mtime, ctime, inode) of what ``path`` names, following symlinks; None when it cannot be had."""
    try:
        stat = os.stat(path)
    except OSError:
        return None
    return (stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns, stat.st_ino)


def _list_hash(paths: Sequence[str]) -> str:
    return hashlib.sha256("\0".join(paths).encode()).hexdigest()


class FileHashes:
    """SHA-256 of a tree's files, recomputed only when a file's stat signature moves."""

    def __init__(self) -> None:
        self._known: dict[str, tuple[Signature, str]] = {}
        self._lock = threading.Lock()

    def of(self, tree: SourceTree, path: str) -> str:
        """The file's hash as ``tree.read`` would give it, or "!" + why it refuses."""
        signature = stat_signature(tree.root / path) if tree.admits(path) else None
        if signature is not None:
            with self._lock:
                known = self._known.get(path)
            if known is not None and known[0] == signature:
                return known[1]
        try:
            data = tree.read(path)
        except ValueError as exc:  # outside the walk, too big, gone or unreadable: SourceTree.read's refusal
            return f"!{exc}"
        return self.note(path, data, signature)

    def note(self, path: str, data: bytes, signature: Signature | None) -> str:
        """Hash ``data`` (just read from ``path``) and remember it under a signature old enough to trust."""
        digest = hashlib.sha256(data).hexdigest()
        if signature is not None and time.time_ns() - max(signature[1], signature[2]) > RACY_NS:
            with self._lock:
                self._known[path] = (signature, digest)
        return digest


class RecordingTree(SourceTree):
    """A tree that answers as ``base`` does and notes every answer (see the module docstring)."""

    def __init__(self, base: SourceTree, hashes: FileHashes) -> None:
        self.root, self.files, self.max_read = base.root, base.files, base.max_read
        self._admitted, self._listed = base._admitted, base._listed
        self._base = base
        self._hashes = hashes
        self.seen = Observations()

    def list(self, suffix: str) -> list[str]:
        answer = self._base.list(suffix)
        self.seen.listed[suffix] = _list_hash(answer)
        return answer

    def read(self, path: str) -> bytes:
        signature = stat_signature(self.root / path) if self.admits(path) else None  # before: an edit after is seen
        try:
            data = self._base.read(path)
        except ValueError as exc:
            self.seen.read[path] = f"!{exc}"
            raise
        self.seen.read[path] = self._hashes.note(path, data, signature)
        return data

    def label(self) -> str | None:
        return self._base.label()


class ParseMemo:
    """Partials by (handler, options, chunk), each with the observations that make it valid."""

    def __init__(self, folder: Path | None = None) -> None:
        self.folder = folder
        self.hashes = FileHashes()
        self._entries: dict[str, tuple[Observations, bytes]] = {}
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def parse(self, handler: Handler, tree: SourceTree, chunk: tuple[str, ...], options: Options) -> bytes:
        """The chunk's partial: remembered when every answer the tree gave it still holds."""
        key = self._key(handler, tree, chunk, options)
        found = self._get(key)
        if found is not None and self._holds(found[0], tree):
            with self._lock:
                self.hits += 1
            return found[1]
        recording = RecordingTree(tree, self.hashes)
        partial = handler.parse(recording, chunk, options)
        with self._lock:
            self.misses += 1
        self._put(key, recording.seen, partial)
        return partial

    def _key(self, handler: Handler, tree: SourceTree, chunk: tuple[str, ...], options: Options) -> str:
        digest = hashlib.sha256()
        parts: list[Any] = [ENTRY_FORMAT, handler.fingerprint, str(tree.root), tree.label(), list(options), *chunk]
        digest.update(msgpack.packb(parts))
        return digest.hexdigest()

    def _holds(self, seen: Observations, tree: SourceTree) -> bool:
        if any(_list_hash(tree.list(suffix)) != answer for suffix, answer in seen.listed.items()):
            return False
        return all(self.hashes.of(tree, path) == answer for path, answer in seen.read.items())

    def _get(self, key: str) -> tuple[Observations, bytes] | None:
        with self._lock:
            found = self._entries.get(key)
        if found is not None or self.folder is None:
            return found
        try:
            raw = msgpack.unpackb((self.folder / key[:2] / key).read_bytes())
            if raw["format"] != ENTRY_FORMAT or raw["key"] != key:
                return None
            seen = Observations(dict(raw["listed"]), dict(raw["read"]))
            found = (seen, bytes(raw["partial"]))
        except (OSError, ValueError, KeyError, TypeError, msgpack.UnpackException):
            return None
        with self._lock:
            self._entries[key] = found
        return found

    def _put(self, key: str, seen: Observations, partial: bytes) -> None:
        with self._lock:
            self._entries[key] = (seen, partial)
        if self.folder is None:
            return
        entry = {
            "format": ENTRY_FORMAT,
            "key": key,
            "listed": seen.listed,
            "read": seen.read,
            "partial": partial,
        }
        with contextlib.suppress(OSError):  # a cache that cannot be written is only a slower next run
            write_atomic(self.folder / key[:2] / key, msgpack.packb(entry), durable=False)
