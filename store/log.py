"""The commit log: record format, checksums, and reading commits back.

A record is ``[format u8][crc32 u32][ts_ms u64][msgpack body]``; the checksum covers the timestamp
and the body. The body is ``[origin, [mutation-wire, …]]``. The timestamp sits in the fixed header
so that timestamp → seq is a binary search that never decodes a body.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterator
from dataclasses import field

from drsg.kernel.errors import CorruptRecord
from drsg.kernel.frozen import frozen
from drsg.kernel.values import Json, pack, unpack, unpacker
from drsg.store import keys
from drsg.store.environment import DbHandle, Txn
from drsg.store.mutations import Mutation, from_wire

FORMAT = 1
_HEADER = struct.Struct(">BIQ")


@frozen
class Commit:
    seq: int
    ts: int  # unix milliseconds, UTC; never decreases with seq
    mutations: list[Mutation]
    origin: dict[str, Json] = field(default_factory=dict)

    def to_json(self) -> dict[str, Json]:
        return {
            "seq": self.seq,
            "ts": self.ts,
            "origin": self.origin,
            "mutations": [m.to_json() for m in self.mutations],
        }


def encode(
    ts: int, origin: dict[str, Json], mutations: list[Mutation], wires: list[bytes] | None = None, count: int = -1
) -> bytes:
    """The record of a commit; ``wires``: its mutations' ``pack(to_wire())``, made already, in
    order — ``count`` of them (-1: one an item), an item holding one or several."""
    if wires is None:
        body = pack([origin, [m.to_wire() for m in mutations]])
    else:  # the same bytes: msgpack's array of the origin and the wires' array, spelled out
        body = b"\x92" + pack(origin) + _array_header(len(wires) if count < 0 else count) + b"".join(wires)
    ts_bytes = keys.U64.pack(ts)
    crc = zlib.crc32(body, zlib.crc32(ts_bytes))
    return _HEADER.pack(FORMAT, crc, ts) + body


def _array_header(n: int) -> bytes:
    return bytes((0x90 | n,)) if n < 16 else b"\xdc" + n.to_bytes(2) if n <= 0xFFFF else b"\xdd" + n.to_bytes(4)


def header_ts(seq: int, record: bytes) -> int:
    if len(record) < _HEADER.size:
        raise CorruptRecord(seq, "truncated header")
    fmt, _crc, ts = _HEADER.unpack_from(record)
    if fmt != FORMAT:
        raise CorruptRecord(seq, f"unknown format {fmt}")
    return int(ts)


def decode(seq: int, record: bytes) -> Commit:
    if len(record) < _HEADER.size:
        raise CorruptRecord(seq, "truncated header")
    fmt, crc, ts = _HEADER.unpack_from(record)
    if fmt != FORMAT:
        raise CorruptRecord(seq, f"unknown format {fmt}")
    body = record[_HEADER.size :]
    if zlib.crc32(body, zlib.crc32(record[5:13])) != crc:
        raise CorruptRecord(seq, "checksum mismatch")
    try:
        if len(body) < STREAM_FROM:
            origin, wires = unpack(body)
            return Commit(seq, ts, [from_wire(w) for w in wires], origin)
        mutations, origin = _streamed(body)
        return Commit(seq, ts, mutations, origin)
    except Exception as exc:  # a body that passed its checksum but will not parse
        raise CorruptRecord(seq, f"undecodable body: {exc}") from None


#: bodies at least this large are decoded a mutation at a time: one ``unpackb`` of a 10,000-column
#: catalog commit (3.4 MB) held the GIL for 20-70 ms — the index workers decode it during `serve`
STREAM_FROM = 1 << 18


def _streamed(body: bytes) -> tuple[list[Mutation], dict[str, Json]]:
    reader = unpacker(body)
    if reader.read_array_header() != 2:
        raise ValueError("not [origin, mutations]")
    origin = reader.unpack()
    mutations = [from_wire(reader.unpack()) for _ in range(reader.read_array_header())]
    if reader.tell() != len(body):
        raise ValueError("bytes after the mutations")
    return mutations, origin


class LogReader:
    """Reads commits from one transaction (read or write)."""

    def __init__(self, txn: Txn, log_db: DbHandle) -> None:
        self.txn = txn
        self.db = log_db

    def get(self, seq: int) -> Commit | None:
        record = self.txn.get(keys.u64(seq), db=self.db)
        return None if record is None else decode(seq, record)

    def ts(self, seq: int) -> int | None:
        record = self.txn.get(keys.u64(seq), db=self.db)
        return None if record is None else header_ts(seq, record)

    def iter(self, from_seq: int = 1, to_seq: int | None = None) -> Iterator[Commit]:
        """Commits with ``from_seq <= seq <= to_seq``, in order; raises on a gap or corruption."""
        cursor = self.txn.cursor(db=self.db)
        expected = max(from_seq, 1)
        if not cursor.set_range(keys.u64(expected)):
            return
        for key, record in cursor:
            seq = keys.read_u64(key)
            if to_seq is not None and seq > to_seq:
                return
            if seq != expected:
                raise CorruptRecord(expected, "missing from the log (gap)")
            yield decode(seq, record)
            expected += 1

    def last_seq_at_or_before(self, ts: int, head: int, oldest: int = 1) -> int:
        """The largest seq ``oldest..head`` whose timestamp is <= ``ts`` (0 when every one is later;
        ``oldest``: where the log starts, store/retention.py)."""
        lo, hi = oldest, head
        found = 0
        while lo <= hi:
            mid = (lo + hi) // 2
            mid_ts = self.ts(mid)
            if mid_ts is None:
                raise CorruptRecord(mid, "missing from the log (gap)")
            if mid_ts <= ts:
                found = mid
                lo = mid + 1
            else:
                hi = mid - 1
        return found
