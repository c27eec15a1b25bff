"""An import's lines held in a Kafka node's copy until its closing record lands.

``drsg import`` on a Kafka node (drsg/api/imports.py) sends the file's lines as they are,
``commit_lines`` lines (at most :data:`CHUNK_BYTES`) to an ``import.chunk`` record, then one
``import.close`` record naming how many chunks it had and how to import them. Every node holds each
chunk in its copy — the meta table, written in the transaction that decided the chunk's record, so
a restart keeps them and a copy made from the topic holds the same — and decides the whole import
where its closing record lands (:func:`held_lines` gives its lines back), then drops them
(:func:`release`, applied or refused). Other writers' records between the chunks change nothing.

A writer that dies between its chunks leaves an import that never closes. Nothing waits for it: its
chunks are dropped (:func:`_sweep`) once :data:`HELD_FOR` commits have landed after its newest one,
when another chunk or closing record is decided — by seq, so every node drops them at the same one.
"""

from __future__ import annotations

from typing import IO

from drsg.kernel.errors import BadValue, UsageError
from drsg.kernel.values import Json, pack, unpack
from drsg.store import keys
from drsg.store.environment import Dbs, Txn
from drsg.store.intents import Intent
from drsg.store.transaction import WriteTx

CHUNK = "import.chunk"
CLOSE = "import.close"
#: A chunk's lines at most, in bytes of the file: a record holds them as latin-1 text, which packs
#: each byte in at most two, well inside the topic's 16 MiB records (deploy/README.md).
CHUNK_BYTES = 6 << 20
#: Commits an import's held chunks wait for its next record before they are dropped.
HELD_FOR = 100_000
_HELD = b"import_held:"  # + id: [seq of its newest chunk, chunks held]
_LINES = b"import_lines:"  # + id + u32 n: chunk n's lines


# --------------------------------------------------------------------------- deciding (every node)


def chunk_op(tx: WriteTx, args: dict[str, Json]) -> Json:
    """Hold chunk ``n`` of import ``import`` in the copy; answers how many it holds now."""
    import_id, n, lines = _id(args), args.get("n"), args.get("lines")
    if isinstance(n, bool) or not isinstance(n, int) or not isinstance(lines, str):
        raise BadValue(f'an {CHUNK} is {{"import": id, "n": its number, "lines": text}}')
    meta = tx.dbs["meta"]
    _sweep(tx.txn, tx.dbs, tx.seq)
    held = _held(tx.txn, tx.dbs, import_id)
    count = 0 if held is None else held[1]
    if n != count:
        raise UsageError(f"import {import_id.decode()}: chunk {n} landed after {count} of its chunks; run it again")
    tx.txn.put(_LINES + import_id + keys.u32(n), lines.encode("latin-1"), db=meta)
    tx.txn.put(_HELD + import_id, pack([tx.seq, count + 1]), db=meta)
    return {"held": count + 1}


def held_lines(tx: WriteTx, args: dict[str, Json], into: IO[bytes]) -> None:
    """Write the lines held for the import ``args`` closes into ``into``; UsageError, the same on
    every node, unless every chunk it names is held."""
    import_id, chunks, source = _id(args), args.get("chunks"), args.get("source")
    if isinstance(chunks, bool) or not isinstance(chunks, int) or not isinstance(source, str):
        raise BadValue(f"an {CLOSE} names its chunks (a count) and source (the file as its caller named it)")
    _sweep(tx.txn, tx.dbs, tx.seq)
    held = _held(tx.txn, tx.dbs, import_id)
    have = 0 if held is None else held[1]
    if have != chunks:
        raise UsageError(
            f"{source}: {have} of the import's {chunks} chunk(s) are in the log (its writer stopped, or "
            f"{HELD_FOR:,} commits landed between two of them); nothing was written — run it again"
        )
    for n in range(chunks):
        into.write(bytes(tx.txn.get(_LINES + import_id + keys.u32(n), db=tx.dbs["meta"]) or b""))


def release(txn: Txn, dbs: Dbs, intent: Intent) -> None:
    """Drop what ``intent`` held once it is decided: an import's chunks (an applied close drops its
    own, in its transaction; a refused one's transaction is undone, so its decider calls this)."""
    import_id = intent.args.get("import")
    if intent.op == CLOSE and isinstance(import_id, str):
        _drop(txn, dbs, import_id.encode())


def _id(args: dict[str, Json]) -> bytes:
    import_id = args.get("import")
    if not isinstance(import_id, str) or not import_id:
        raise BadValue("an import's records name it by `import` (a string)")
    return import_id.encode()


def _held(txn: Txn, dbs: Dbs, import_id: bytes) -> tuple[int, int] | None:
    raw = txn.get(_HELD + import_id, db=dbs["meta"])
    if raw is None:
        return None
    seq, count = unpack(bytes(raw))
    return int(seq), int(count)


def _drop(txn: Txn, dbs: Dbs, import_id: bytes) -> None:
    meta = dbs["meta"]
    held = _held(txn, dbs, import_id)
    if held is None:
        return
    for n in range(held[1]):
        txn.delete(_LINES + import_id + keys.u32(n), db=meta)
    txn.delete(_HELD + import_id, db=meta)


def _sweep(txn: Txn, dbs: Dbs, seq: int) -> None:
    """Drop the chunks of every import whose newest one is more than :data:`HELD_FOR` commits old."""
    stale = []
    cursor = txn.cursor(db=dbs["meta"])
    found = cursor.set_range(_HELD)
    while found and bytes(cursor.key()).startswith(_HELD):
        last, _ = unpack(bytes(cursor.value()))
        if seq - int(last) > HELD_FOR:
            stale.append(bytes(cursor.key())[len(_HELD) :])
        found = cursor.next()
    for import_id in stale:
        _drop(txn, dbs, import_id)
