"""What can be checked of a database file before LMDB maps it.

LMDB trusts its file: a page it needs past the end of a truncated file is a SIGBUS, and a damaged
header can send it anywhere. So before opening, we read the two meta pages ourselves (LMDB 0.9's
layout, 64-bit) and refuse, with one line naming the file and the fix, a file that is empty, too
short, not LMDB, of another format version, of an impossible page size, or shorter than the pages
its newest header says it uses.

    page header (16 bytes) | meta: magic u32, version u32, address u64, mapsize u64,
                                   free db (48 bytes: pad=page size u32, …, root u64), main db (48),
                                   last page u64, txnid u64
"""

from __future__ import annotations

import os
import struct
import time
from dataclasses import dataclass
from pathlib import Path

from drsg.kernel.errors import DamagedDatabase, DatabaseUnavailable

MAGIC = 0xBEEFC0DE
DATA_VERSION = 1
_PAGE_HEADER = 16
_META = struct.Struct("<IIQQ")  # magic, version, address, mapsize
_DB = struct.Struct("<IHHQQQQQ")  # pad (page size in the free db), flags, depth, branch, leaf, overflow, entries, root
_TAIL = struct.Struct("<QQ")  # last page, txnid
_META_SIZE = _META.size + 2 * _DB.size + _TAIL.size
_NO_PAGE = (1 << 64) - 1  # an empty tree's root
_FIX = "restore it from a backup"


@dataclass(frozen=True)
class Meta:
    page: int
    page_size: int
    last_page: int
    txnid: int
    roots: tuple[int, int]


def check_file(path: Path) -> None:
    """Refuse a file LMDB could crash on; a missing file is not this function's business. A file
    that fails is read once more: another process's commit can rewrite a meta page under our read."""
    try:
        _check(path)
    except DamagedDatabase:
        time.sleep(0.05)
        _check(path)


def _check(path: Path) -> None:
    try:
        with path.open("rb") as f:
            head = f.read(2 * 65536 + _PAGE_HEADER + _META_SIZE)
            # The size after the header: another process may commit meanwhile, and LMDB writes a
            # commit's pages before the meta page naming them, so a size read later covers them.
            size = os.fstat(f.fileno()).st_size
    except FileNotFoundError:
        return
    except OSError as exc:
        reason = exc.strerror or exc
        raise DatabaseUnavailable(f"cannot read {path}: {reason}; check the path and its permissions") from None
    if size == 0:
        raise DamagedDatabase(f"{path} is empty (0 bytes), not a drsg database; delete it to start a new one there")
    first = _meta(path, head, 0, None)
    if size < 2 * first.page_size:
        raise DamagedDatabase(f"{path} is {size} bytes, too short for a drsg database: it is truncated; {_FIX}")
    second = _meta(path, head, 1, first.page_size)
    newest = max(first, second, key=lambda m: m.txnid)
    needed = (newest.last_page + 1) * newest.page_size
    if size < needed and not _only_free_pages_missing(path, newest, size):
        raise DamagedDatabase(
            f"{path} is truncated: it holds {size} bytes but its header says it uses {needed} "
            f"({newest.last_page + 1} pages); {_FIX}"
        )
    for meta in (first, second):
        for root in meta.roots:
            if root != _NO_PAGE and root > meta.last_page:
                raise DamagedDatabase(f"{path}: header page {meta.page} points past the file's last page; {_FIX}")


# LMDB 0.9 pages (64-bit, little-endian): pgno u64, pad u16, flags u16, lower u16, upper u16, then
# the u16 offsets of its nodes. A node: lo u16, hi u16, flags u16, key size u16, key, data.
_PAGE = struct.Struct("<QHHHH")
_NODE = struct.Struct("<HHHH")
_BRANCH, _LEAF, _OVERFLOW = 0x01, 0x02, 0x04
_BIGDATA = 0x01
_MAX_FREE_PAGES = 1 << 16  # a free-page tree walk this long is not worth making before an open


def _only_free_pages_missing(path: Path, meta: Meta, size: int) -> bool:
    """Whether every page past the end of the file is a free one. LMDB counts a page it allocated
    and freed within one transaction (a "loose" page) in the header's last page, and puts it on the
    free list without ever writing it: the file is then shorter than the header says, and healthy.
    Walks the free-page tree (its root is in the header); any page of it that is missing or does
    not parse means the file is damaged after all."""
    psize, root = meta.page_size, meta.roots[0]
    missing = set(range(size // psize, meta.last_page + 1))
    if root == _NO_PAGE or len(missing) > _MAX_FREE_PAGES:
        return False
    try:
        with path.open("rb") as f:

            def page(pgno: int) -> bytes:
                if pgno * psize + psize > size:
                    raise ValueError("a page of the free list is past the end")
                f.seek(pgno * psize)
                return f.read(psize)

            todo, walked = [root], 0
            while todo and missing:
                walked += 1
                if walked > _MAX_FREE_PAGES:
                    return False
                data = page(todo.pop())
                _pgno, _pad, flags, lower, _upper = _PAGE.unpack_from(data)
                for i in range((lower - _PAGE.size) // 2):
                    (at,) = struct.unpack_from("<H", data, _PAGE.size + 2 * i)
                    lo, hi, node_flags, ksize = _NODE.unpack_from(data, at)
                    if flags & _BRANCH:
                        todo.append(lo | hi << 16 | node_flags << 32)
                        continue
                    if not flags & _LEAF:
                        return False
                    body = at + _NODE.size + ksize
                    if node_flags & _BIGDATA:  # the page list is in overflow pages of its own
                        (first,) = struct.unpack_from("<Q", data, body)
                        _, _, overflow, low, high = _PAGE.unpack_from(page(first))
                        if not overflow & _OVERFLOW:
                            return False
                        pages = low | high << 16  # an overflow page's count of pages
                        f.seek(first * psize + _PAGE.size)
                        ids = f.read(min(pages * psize, size - first * psize) - _PAGE.size)
                    else:
                        ids = data[body : body + (lo | hi << 16)]
                    (count,) = struct.unpack_from("<Q", ids)
                    missing.difference_update(struct.unpack_from(f"<{count}Q", ids, 8))
    except (ValueError, struct.error, OSError):
        return False
    return not missing


def _meta(path: Path, head: bytes, page: int, page_size: int | None) -> Meta:
    offset = (page_size or 0) * page + _PAGE_HEADER
    if len(head) < offset + _META_SIZE:
        raise DamagedDatabase(f"{path} is {len(head)} bytes, too short for a drsg database: it is truncated; {_FIX}")
    magic, version, _address, _mapsize = _META.unpack_from(head, offset)
    if magic != MAGIC:
        if page == 0:
            raise DamagedDatabase(f"{path} is not a drsg database (not an LMDB file); check --db")
        raise DamagedDatabase(f"{path}: header page 1 is damaged; {_FIX}")
    if version != DATA_VERSION:
        raise DamagedDatabase(f"{path} has LMDB format {version}; this drsg reads format {DATA_VERSION}")
    free = _DB.unpack_from(head, offset + _META.size)
    main = _DB.unpack_from(head, offset + _META.size + _DB.size)
    last_page, txnid = _TAIL.unpack_from(head, offset + _META.size + 2 * _DB.size)
    size = free[0]
    if size < 512 or size > 65536 or size & (size - 1) or (page_size is not None and size != page_size):
        raise DamagedDatabase(f"{path}: header page {page} gives an impossible page size ({size}); {_FIX}")
    return Meta(page, size, last_page, txnid, (free[-1], main[-1]))
