"""Every error drsg raises on purpose, in one tree.

Each class with its exit code (``drsg`` exits 1 on a runtime error, 2 on a usage error) and the
JSON-RPC code it answers with when it crosses the RPC boundary (upstream's codes: -32602 bad
params, -32000 application error, -32002 write timed out, -32603 internal error)::

    class                        exit   rpc     raised when
    DrsgError                     1   -32000   base of every deliberate drsg error
    ├── UsageError                2   -32602   the caller asked for something malformed
    │   ├── BadValue              2   -32602   a value outside the data model (NaN, NUL in a key, huge int, …)
    │   ├── BadAsOf               2   -32602   an AS OF that names no commit (future seq, time before the log)
    │   ├── BadImportLine         2   -32602   a JSONL line that cannot be imported (carries the line number)
    │   ├── QuerySyntaxError      2   -32602   a statement (Cypher, SEARCH, HYBRID, CALL) that does not parse
    │   ├── QueryError            2   -32602   a statement that parses but cannot run: a construct drsg does not
    │   │                                      support (named), an unknown function, a value of the wrong type,
    │   │                                      an integer overflow, a division by zero
    │   └── ConversionError       2   -32602   a document that cannot be turned into Markdown (unsupported,
    │                                          damaged, encrypted, empty or too big; the message names the file)
    ├── NotFound                  1   -32602   a plane, node or edge that does not exist
    ├── Conflict                  1   -32000   a write that collides with existing state (duplicate key, …)
    ├── StoreError                1   -32000   the database itself cannot do what was asked
    │   ├── StoreFull             1   -32000   the map reached its configured ceiling, or the disk is full
    │   ├── CorruptRecord         1   -32000   a log record whose checksum or format is wrong (carries its seq)
    │   ├── DamagedDatabase       1   -32000   the file itself is damaged (truncated, a bad header, a table out
    │                                          of order, a record that does not decode)
    │   └── DatabaseUnavailable   1   -32000   missing file, read-only path, lock trouble
    ├── ConfigError               2   -32000   drsg.toml or DRSG_* settings are invalid, a key is missing
    ├── EmbedderError             1   -32000   an embedder could not produce vectors
    │   ├── ModelFileError        1   -32000   the local model files are missing or fail their SHA-256 check
    │   ├── EmbedderUnavailable   1   -32000   the service kept failing (429/5xx/timeouts) past the retry budget
    │   └── BadEmbeddingResponse  1   -32000   the service answered, but not with one finite vector per text
    ├── ChatError                 1   -32000   a chat model could not answer
    │   ├── ChatUnavailable       1   -32000   the service kept failing (429/5xx/timeouts) past the retry budget
    │   └── AskFailed             1   -32000   `ask` got no runnable plan within its attempts (says why)
    ├── PluginError               1   -32000   a parser plugin was refused (a forbidden import, a bad name, a
    │   │                                      changed artifact) or failed (a trap, output that breaks the contract)
    │   └── PluginBudget          1   -32000   a plugin call ran out of fuel, memory or time (names the setting)
    ├── FetchError                1   -32000   a URL could not be fetched, or was refused: not http(s), an address
    │   │                                      outside [fetch] allow_private, too many redirects, too big
    │   └── FetchRefused          1   -32000   the fetch guard refused the URL or the address it would connect to
    │                                          (always before a byte is sent)
    ├── CatalogError              1   -32000   a catalog connection's live database could not be reached, or
    │                                          failed a query (the message names the connection, never a secret)
    ├── ServeError                1   -32000   `drsg serve` could not start (the address is taken, a TLS file
    │                                          is unreadable, …)
    ├── WriteTimeout              1   -32002   an RPC write waited out write_timeout_secs for the writer;
    │                                          nothing was written (the one error worth retrying unchanged)
    ├── QueryTimeout              1   -32000   an RPC read ran past query_timeout_secs
    ├── QueryLimit                1   -32000   a statement made more rows than [query] max_rows, or ran past
    │                                          [query] timeout_secs (nothing written)
    └── RpcError                  1   given    a JSON-RPC error answered as-is, with the code it is raised with
                                               (-32700 parse, -32600 request, -32601 method, -32602 params,
                                               -32603 internal), a one-line message and optional data

Library errors (lmdb, msgpack, json, converters' libraries) are converted at the boundary where
they occur, so callers only ever catch ``DrsgError``. Messages are one line and say how to fix the
problem. ``tests/unit/test_errors.py`` holds this drawing to the classes: every subclass of
``DrsgError`` anywhere in drsg is drawn, under its parent, with its codes.

Two exceptions are internal signals, not errors, and stay out of the tree: ``MalformedAnswer``
(``drsg.pipeline.llm.answers``: a chat answer that is not the JSON asked for; the caller asks
again or notes it) and ``SidecarInvalid`` (``drsg.workers.sidecar``: an index sidecar that cannot
be trusted; the worker rebuilds from the log). Both are caught where they are raised and never
reach a user.
"""

from __future__ import annotations

from typing import Any

# JSON-RPC 2.0 error codes (upstream's; ``openrpc.json`` ``x-error-codes``)
PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
APP_ERROR = -32000
UNAUTHORIZED = -32001
TIMEOUT = -32002


class DrsgError(Exception):
    """Base of every deliberate drsg error."""

    exit_code = 1
    #: JSON-RPC error code used when this error crosses the RPC boundary.
    rpc_code = APP_ERROR

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message


class UsageError(DrsgError):
    exit_code = 2
    rpc_code = INVALID_PARAMS


class BadValue(UsageError):
    pass


class BadAsOf(UsageError):
    pass


class BadImportLine(UsageError):
    def __init__(self, line_no: int, problem: str, what: str = "line") -> None:
        super().__init__(f"{what} {line_no}: {problem}")  # (what: "record" for records in memory)
        self.line_no = line_no
        self.problem = problem


class QuerySyntaxError(UsageError):
    """A statement that does not parse; the message points at the problem (line, column, what was expected)."""


class QueryError(UsageError):
    """A statement that parses but cannot run (an unsupported construct by name, a type error, …)."""


class ConversionError(UsageError):
    """A document could not be converted to Markdown; the message names the file, says why and how to fix it."""


class NotFound(DrsgError):
    rpc_code = INVALID_PARAMS


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
        self.problem = problem


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


class AskFailed(ChatError):
    """`ask` got no plan that parsed, validated and ran within its attempts; the message is upstream's
    ``couldn't produce a runnable plan after N steps: <reason>``, ``trace`` what each turn did."""

    def __init__(self, message: str, trace: list[str] | None = None) -> None:
        super().__init__(message)
        self.trace = list(trace or [])


class PluginError(DrsgError):
    """A parser plugin was refused at install or load, or failed while it ran; the message names it."""


class PluginBudget(PluginError):
    """A plugin call exhausted a budget (fuel, memory or time); the message names the setting to raise."""


class FetchError(DrsgError):
    """A URL could not be fetched or was refused by the fetch guard; the message names the URL and why."""


class FetchRefused(FetchError):
    """The fetch guard refused a URL or the address a socket was about to connect to; nothing was sent."""


class CatalogError(DrsgError):
    """A catalog connection's database could not be reached or failed a query (never carries a secret)."""


class ServeError(DrsgError):
    """The server could not start (the address is taken, a TLS file is unreadable, …)."""


class WriteTimeout(DrsgError):
    """A write waited out ``write_timeout_secs`` for the writer; nothing was written (retry it)."""

    rpc_code = TIMEOUT


class QueryTimeout(DrsgError):
    """A read ran past ``query_timeout_secs``."""


class QueryLimit(DrsgError):
    """A statement ran past ``[query] max_rows`` or ``[query] timeout_secs``; a write wrote nothing."""


class RpcError(DrsgError):
    """A JSON-RPC error answered as-is: the code it is raised with, a one-line message, optional data.

    The server raises it where the JSON-RPC code is the point (-32602 naming a bad param, -32601 an
    unknown method); every other DrsgError is answered with its class's ``rpc_code``."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.rpc_code = code
        self.data = data
