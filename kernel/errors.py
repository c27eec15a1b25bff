"""Every error drsg raises on purpose, in one tree.

    DrsgError                    base; ``exit_code`` 1 (runtime) unless a subclass says 2
    ├── UsageError               the caller asked for something malformed (exit 2)
    │   ├── BadValue             a value outside the data model (NaN, NUL in a key, huge int, …)
    │   ├── BadAsOf              an AS OF that names no commit (future seq, time before the log)
    │   └── BadImportLine        a JSONL line that cannot be imported (carries the line number)
    ├── NotFound                 a plane, node or edge that does not exist
    ├── Conflict                 a write that collides with existing state (duplicate key, …)
    ├── StoreError               the database itself cannot do what was asked
    │   ├── StoreFull            the map reached its configured ceiling, or the disk is full
    │   ├── CorruptRecord        a log record whose checksum or format is wrong (carries its seq)
    │   ├── DamagedDatabase      the file itself is damaged (truncated, bad header, a table out of order)
    │   └── DatabaseUnavailable  missing file, read-only path, lock trouble
    ├── ConfigError              drsg.toml or DRSG_* settings are invalid, a key is missing (exit 2)
    ├── EmbedderError            an embedder could not produce vectors
    │   ├── ModelFileError       the local model files are missing or fail their SHA-256 check
    │   ├── EmbedderUnavailable  the service kept failing (429/5xx/timeouts) past the retry budget
    │   └── BadEmbeddingResponse the service answered, but not with one finite vector per text
    └── ChatError                a chat model could not answer
        └── ChatUnavailable      the service kept failing (429/5xx/timeouts) past the retry budget

Library errors (lmdb, msgpack, json) are converted at the boundary where they occur, so callers
only ever catch ``DrsgError``. Messages are one line and say how to fix the problem.
"""

from __future__ import annotations


class DrsgError(Exception):
    """Base of every deliberate drsg error."""

    exit_code = 1
    #: JSON-RPC error code used when this error crosses the RPC boundary.
    rpc_code = -32000

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message


class UsageError(DrsgError):
    exit_code = 2
    rpc_code = -32602


class BadValue(UsageError):
    pass


class BadAsOf(UsageError):
    pass


class BadImportLine(UsageError):
    def __init__(self, line_no: int, problem: str) -> None:
        super().__init__(f"line {line_no}: {problem}")
        self.line_no = line_no
        self.problem = problem


class NotFound(DrsgError):
    rpc_code = -32602


class Conflict(DrsgError):
    pass


class StoreError(DrsgError):
    pass


class StoreFull(StoreError):
    pass


class CorruptRecord(StoreError):
    def __init__(self, seq: int, problem: str) -> None:
        super().__init__(
            f"log record {seq} is corrupt ({problem}); commits before {seq} are intact — "
            f"restore the database file from a backup"
        )
        self.seq = seq


class DamagedDatabase(StoreError):
    """The database file is damaged below the log's records: found before LMDB maps it, or by a
    table walk that does not advance, or reported by LMDB itself."""


class DatabaseUnavailable(StoreError):
    pass


class ConfigError(DrsgError):
    exit_code = 2


class EmbedderError(DrsgError):
    """An embedder could not produce vectors."""


class ModelFileError(EmbedderError):
    """The local model files are missing, or their SHA-256 does not match the pinned one."""


class EmbedderUnavailable(EmbedderError):
    """The embedding service kept failing (rate limits, server errors, timeouts) past the retry budget."""


class BadEmbeddingResponse(EmbedderError):
    """The embedding service answered with something that is not one finite vector per text."""


class ChatError(DrsgError):
    """A chat model refused a request or answered with something unusable."""


class ChatUnavailable(ChatError):
    """The chat service kept failing (rate limits, server errors, timeouts) past the retry budget."""
