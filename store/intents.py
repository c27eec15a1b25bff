"""Intents: a write as what its caller asked for, decided where it lands in the log.

An intent names an operation and its JSON arguments — ``node.put {"plane": "p", "key": "ada", …}``
— never the ids it will get or checks made on some copy of the graph. The embedded store runs it
through its group-commit writer as a commit function. A Kafka node produces it to the topic and
every node's materialiser runs it on its copy in log order, so each decides it the same way: ids
allocated in log order, a create whose key exists or an update of a node that is gone refused alike
everywhere. An applied intent is the commit it made; a refused one is an empty commit whose origin
says why, and its caller gets the error the embedded store raises. Nothing is computed on a stale
copy, so nothing is retried or refused for contention (store/kafka/materialiser.py).

The operations an intent may name are one table (:class:`IntentOps`), the same in every process
of a topic: a node that knew an operation another does not would decide differently. So a node
never produces an operation it does not know (the caller's UsageError names the ones it does), and
a node that meets one in the topic — written by a newer drsg — decides nothing: its materialiser
stops there and says so (``drsg stats``, ``/health``) until it is upgraded.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from drsg.kernel.errors import (
    BadValue,
    Conflict,
    CorruptRecord,
    DrsgError,
    NotFound,
    QueryError,
    QueryLimit,
    QuerySyntaxError,
    UsageError,
)
from drsg.kernel.values import Json, pack, unpack
from drsg.store.transaction import WriteTx
from drsg.store.writer import CommitResult

#: An operation: the commit function an intent's arguments make, returning its answer as JSON.
IntentOp = Callable[[WriteTx, dict[str, Json]], Json]

#: The first byte of an intent's record: a commit record's is store/log.py's FORMAT (1).
INTENT_FORMAT = 0x49
_HEADER = struct.Struct(">BIQ")  # format, crc32 of ts + body, ts (ms), as a commit record's

#: The argument bounding an operation's run in seconds, which it may honour. A decision never hangs
#: on a clock: where every node decides an intent, it runs without it (:meth:`Intent.unbounded`),
#: and a Kafka node rehearses an intent carrying one on its copy before producing it without.
TIME_LIMIT = "time_limit"

#: The errors an operation decides by (the caller's input against the state in log order): a
#: refusal names one of these and its caller gets it back. Any other failure is the record's
#: fault (a poison record), never a decision. A QueryLimit is a count's (``[query] max_rows``,
#: given in the arguments), since a decision runs without its time limit.
_DECISIONS: dict[str, type[DrsgError]] = {
    cls.__name__: cls for cls in (UsageError, BadValue, QuerySyntaxError, QueryError, QueryLimit, NotFound, Conflict)
}


@dataclass(frozen=True)
class Intent:
    op: str
    args: dict[str, Json]

    def unbounded(self) -> Intent:
        """This intent without its time limit (:data:`TIME_LIMIT`), as every node decides it."""
        if TIME_LIMIT not in self.args:
            return self
        return Intent(self.op, {name: value for name, value in self.args.items() if name != TIME_LIMIT})


@dataclass(frozen=True)
class Refusal:
    """Why an intent was not applied: the error class's name and its message."""

    error: str
    message: str

    @classmethod
    def of(cls, exc: BaseException) -> Refusal | None:
        """The refusal ``exc`` is, if it is a decision (see ``_DECISIONS``); else None."""
        for klass in type(exc).__mro__:
            if klass.__name__ in _DECISIONS and _DECISIONS[klass.__name__] is klass:
                return cls(klass.__name__, exc.message if isinstance(exc, DrsgError) else str(exc))
        return None

    def to_json(self) -> dict[str, Json]:
        return {"error": self.error, "message": self.message}

    @classmethod
    def from_json(cls, data: Json) -> Refusal:
        error, message = (data.get("error"), data.get("message")) if isinstance(data, dict) else (None, None)
        if not isinstance(error, str) or not isinstance(message, str):
            raise ValueError(f"not a refusal: {data!r}")
        return cls(error, message)

    def exception(self) -> DrsgError:
        """The error the embedded store raised, for the caller (a name this version does not know
        comes back as a UsageError with the message)."""
        return _DECISIONS.get(self.error, UsageError)(self.message)


#: The one operation every table knows: several intents decided as one commit, all or nothing.
BATCH = "batch"


def batch(intents: Sequence[Intent]) -> Intent:
    """``intents`` as one intent, decided as one commit, all or nothing: answered
    ``{"answers": [each one's answer, in order]}``; the first one refused refuses them all, with
    its error saying which it was (``write 3 of 10 (node.put): …``). A batch does not nest."""
    return Intent(BATCH, {"writes": [[intent.op, intent.args] for intent in intents]})


class IntentOps:
    """The operations intents may name, by name (and :data:`BATCH`, which every table knows)."""

    def __init__(self, ops: Mapping[str, IntentOp]) -> None:
        if BATCH in ops:
            raise ValueError(f"{BATCH!r} is every table's own operation")
        self.ops = dict(ops)

    def __or__(self, more: Mapping[str, IntentOp]) -> IntentOps:
        clash = self.ops.keys() & more.keys()
        if clash:
            raise ValueError(f"intent operations named twice: {', '.join(sorted(clash))}")
        return IntentOps({**self.ops, **more})

    def unknown(self, intent: Intent) -> str | None:
        """The first operation ``intent`` names (a batch's included) that this table does not know."""
        if intent.op != BATCH:
            return None if intent.op in self.ops else intent.op
        return next((item.op for item in _items(intent) if item.op not in self.ops), None)

    def check(self, intent: Intent) -> None:
        """UsageError naming what is known, unless every operation ``intent`` names is known (and
        a batch is well formed)."""
        name = self.unknown(intent)
        if name is not None:
            raise UsageError(f"unknown write {name!r}; this drsg knows {', '.join(sorted(self.ops))}")

    def run(self, tx: WriteTx, intent: Intent) -> Json:
        self.check(intent)
        if intent.op != BATCH:
            return self.ops[intent.op](tx, intent.args)
        items = _items(intent)
        answers: list[Json] = []
        for n, item in enumerate(items, 1):
            try:
                answers.append(self.ops[item.op](tx, item.args))
            except DrsgError as exc:
                if Refusal.of(exc) is None:
                    raise
                raise type(exc)(f"write {n} of {len(items)} ({item.op}): {exc.message}") from None
        return {"answers": answers}

    def commit_function(self, intent: Intent) -> Callable[[WriteTx], Json]:
        return lambda tx: self.run(tx, intent)


def _items(intent: Intent) -> list[Intent]:
    """A batch's intents; a UsageError (a decision: the same everywhere) for any other shape."""
    writes = intent.args.get("writes")
    if not isinstance(writes, list) or len(intent.args) != 1:
        raise UsageError(f'a {BATCH} is {{"writes": [[operation, arguments], ...]}}')
    items = []
    for item in writes:
        if not (isinstance(item, list) and len(item) == 2 and isinstance(item[0], str) and isinstance(item[1], dict)):
            raise UsageError(f"a {BATCH}'s write is [operation, arguments], not {item!r}")
        if item[0] == BATCH:
            raise UsageError(f"a {BATCH} does not nest; put its writes in the outer one")
        items.append(Intent(item[0], item[1]))
    return items


def answered(done: CommitResult[Json], name: str) -> Any:
    """A field of an intent's answer (store/intent_ops.py says each operation's)."""
    value = done.value
    if not isinstance(value, dict) or name not in value:
        raise TypeError(f"an intent's answer has no {name!r}: {value!r}")
    return value[name]


def encode_intent(ts: int, origin: dict[str, Json], intent: Intent) -> bytes:
    body = pack([origin, intent.op, intent.args])
    ts_bytes = struct.pack(">Q", ts)
    return _HEADER.pack(INTENT_FORMAT, zlib.crc32(body, zlib.crc32(ts_bytes)), ts) + body


def is_intent(record: bytes | None) -> bool:
    return record is not None and record[:1] == bytes([INTENT_FORMAT])


def decode_intent(seq: int, record: bytes) -> tuple[int, dict[str, Json], Intent]:
    """``(ts, origin, intent)`` of the intent record at ``seq``; CorruptRecord if it is not one."""
    if len(record) < _HEADER.size:
        raise CorruptRecord(seq, "truncated header")
    fmt, crc, ts = _HEADER.unpack_from(record)
    body = record[_HEADER.size :]
    if fmt != INTENT_FORMAT:
        raise CorruptRecord(seq, f"unknown format {fmt}")
    if zlib.crc32(body, zlib.crc32(record[5:13])) != crc:
        raise CorruptRecord(seq, "checksum mismatch")
    try:
        origin, op, args = unpack(body)
    except Exception as exc:
        raise CorruptRecord(seq, f"undecodable intent ({type(exc).__name__})") from None
    if not (isinstance(origin, dict) and isinstance(op, str) and isinstance(args, dict)):
        raise CorruptRecord(seq, "an intent is [origin, op, args]")
    return int(ts), origin, Intent(op, args)
