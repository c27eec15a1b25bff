"""A bulk copy for ``list<u8>`` values crossing wasmtime-py's component boundary.

wasmtime-py 50 converts a ``list<u8>`` one element at a time in Python, each byte a 32-byte
``wasmtime_component_val_t``: about 1 µs a byte, so a 1 MiB file read by a plugin cost a second.
:func:`install` replaces the conversion of ``list<u8>`` lists only (every other type keeps
wasmtime-py's own code) with one numpy pass over the same C array, once it has checked that the
struct layout is the one this code assumes; if it is not (another wasmtime-py), nothing is replaced.
"""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np
from wasmtime import _ffi as ffi
from wasmtime.component import _types

_VAL = ffi.wasmtime_component_val_t
_SIZE = ctypes.sizeof(_VAL)
_U8_KIND = ffi.WASMTIME_COMPONENT_U8.value
_installed = False


def _layout_ok() -> bool:
    return (
        _SIZE == 32
        and _VAL.kind.offset == 0
        and _VAL.of.offset == 8
        and ctypes.sizeof(ffi.wasmtime_component_valkind_t) == 1
        and hasattr(_types.ListType, "_is_bytes")
    )


def _to_c(self: Any, store: Any, val: Any, ptr: Any) -> None:
    if not self._is_bytes():
        return _slow_to_c(self, store, val, ptr)
    if not isinstance(val, bytes | bytearray):
        raise TypeError("expected bytes value")
    raw = ffi.wasmtime_component_vallist_t()
    ffi.wasmtime_component_vallist_new_uninit(raw, len(val))
    if val:
        cells = np.zeros((len(val), _SIZE), dtype=np.uint8)
        cells[:, 0] = _U8_KIND
        cells[:, 8] = np.frombuffer(bytes(val), dtype=np.uint8)
        ctypes.memmove(raw.data, cells.ctypes.data, cells.nbytes)
    ptr.contents.kind = ffi.WASMTIME_COMPONENT_LIST
    ptr.contents.of.list = raw
    return None


def _from_c(self: Any, c: Any) -> Any:
    if not self._is_bytes():
        return _slow_from_c(self, c)
    assert c.kind == ffi.WASMTIME_COMPONENT_LIST.value
    try:
        size = c.of.list.size
        if not size:
            return b""
        cells = np.frombuffer(ctypes.string_at(c.of.list.data, size * _SIZE), dtype=np.uint8)
        return cells[8::_SIZE].tobytes()
    finally:
        ffi.wasmtime_component_vallist_delete(ctypes.byref(c.of.list))  # u8 cells own nothing


_slow_to_c = _types.ListType.convert_to_c
_slow_from_c = _types.ListType.convert_from_c


def install() -> bool:
    """Use the bulk copy for ``list<u8>`` (idempotent); False when the layout is not the expected one."""
    global _installed
    if not _installed and _layout_ok():
        _types.ListType.convert_to_c = _to_c  # type: ignore[method-assign]
        _types.ListType.convert_from_c = _from_c  # type: ignore[method-assign]
        _installed = True
    return _installed
