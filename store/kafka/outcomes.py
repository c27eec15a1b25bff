"""An intent's outcome, kept for its caller: in the copy's ``meta`` table, where any process on the
file reads it (:func:`read_outcome`), and, for a writer of the process that decided it, in memory
(:class:`Decided`, handed over by the materialiser: store/kafka/materialiser.py), so the writer
need not read it back from the copy."""

from __future__ import annotations

from dataclasses import dataclass

from drsg.kernel.values import Json, pack, unpack
from drsg.store import keys
from drsg.store.environment import Environment, Txn

META_OUTCOME = b"outcome"  # + u64 seq: an intent's outcome, for its caller
OUTCOMES_KEPT = 1 << 16  # intents whose outcomes are kept (a caller reads its own at once)


@dataclass(frozen=True)
class Decided:
    """An intent as this process decided it: its outcome (as :func:`read_outcome` reads it), its
    commit's timestamp, and whether it wrote anything."""

    outcome: dict[str, Json]
    ts: int
    applied: bool


def _outcome_key(seq: int) -> bytes:
    return META_OUTCOME + keys.u64(seq)


def write_outcome(txn: Txn, env: Environment, seq: int, outcome: dict[str, Json]) -> None:
    """Keep intent ``seq``'s outcome for its caller (another process on this file may have decided
    it), and forget the one ``OUTCOMES_KEPT`` intents older."""
    meta = env.dbs["meta"]
    txn.put(_outcome_key(seq), pack(outcome), db=meta)
    if seq > OUTCOMES_KEPT:
        txn.delete(_outcome_key(seq - OUTCOMES_KEPT), db=meta)


def read_outcome(txn: Txn, env: Environment, seq: int) -> dict[str, Json] | None:
    """Intent ``seq``'s outcome (``{"value": …}`` or ``{"refused": …}``); None if commit ``seq`` is
    not a decided intent, or one decided too long ago to be kept."""
    raw = txn.get(_outcome_key(seq), db=env.dbs["meta"])
    outcome = None if raw is None else unpack(raw)
    return outcome if isinstance(outcome, dict) else None
