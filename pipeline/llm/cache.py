"""The answer cache: re-digesting an unchanged document costs zero model calls.

An entry is keyed by SHA-256 of (prompt version, model identity, what was asked): for extraction
that is the chunk's text (the EXISTING ENTITIES context is advisory and left out, so a re-digest
after applying still hits); for the clean-up passes it is the whole prompt. Only answers that
parsed as valid data are stored. Entries are small JSON files under ``<db>.digest/cache/``,
written atomically (temp file + rename), so a crash never leaves a torn entry and concurrent
digests may share the cache. A damaged entry is a miss, never an error.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from drsg.kernel.files import write_atomic

#: the version of the prompts whose answers are kept (digest's extraction and clean-up passes): bump it
#: when one of them changes, and every answer cached before is asked again
PROMPT_VERSION = "digest-1"


class AnswerCache:
    def __init__(self, folder: Path | str) -> None:
        self.folder = Path(folder)
        self.hits = 0

    @staticmethod
    def key(model: str, kind: str, asked: str) -> str:
        digest = hashlib.sha256()
        for part in (PROMPT_VERSION, model, kind, asked):
            digest.update(part.encode())
            digest.update(b"\x00")
        return digest.hexdigest()

    def _path(self, key: str) -> Path:
        return self.folder / key[:2] / f"{key}.json"

    def get(self, key: str) -> str | None:
        try:
            entry = json.loads(self._path(key).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        if not isinstance(entry, dict) or entry.get("key") != key or not isinstance(entry.get("answer"), str):
            return None
        self.hits += 1
        return str(entry["answer"])

    def put(self, key: str, answer: str) -> None:
        entry = json.dumps({"key": key, "answer": answer}, ensure_ascii=False)
        write_atomic(self._path(key), entry.encode("utf-8"), durable=False)
