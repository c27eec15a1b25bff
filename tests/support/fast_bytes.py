"""Bulk ``list<u8>`` conversion for wasmtime-py's dynamic component API (a measurement aid).

wasmtime-py 50 converts a ``list<u8>`` between Python ``bytes`` and its C value list one element at a
time, about 1 µs a byte: reading a 9 MB source file through the host's ``read`` costs 9 s there, while
the plugin parses it in under 2 s. :func:`install` replaces that loop, for byte lists only, with one
strided copy into (or out of) the value array (each ``wasmtime_component_val_t`` is 32 bytes: its kind
at offset 0, a u8 payload at offset 8). The benchmark runs with and without it to show where the time
goes; the plugin host (``drsg.pipeline.plugins``) may want the same.
"""

from __future__ import annotations

import ctypes
from typing import Any

from wasmtime import _ffi as ffi
from wasmtime.component import _types

_VAL = ctypes.sizeof(ffi.wasmtime_component_val_t)
_KIND = ffi.wasmtime_component_val_t.kind.offset
_PAYLOAD = ffi.wasmtime_component_val_t.of.offset
_U8 = ffi.WASMTIME_COMPONENT_U8.value
_original = (_types.ListType.convert_to_c, _types.ListType.convert_from_c)


def _to_c(self: Any, store: Any, val: Any, ptr: Any) -> None:
    if not self._is_bytes() or not isinstance(val, bytes):
        return _original[0](self, store, val, ptr)
    n = len(val)
    raw = ffi.wasmtime_component_vallist_t()
    ffi.wasmtime_component_vallist_new_uninit(raw, n)
    if n:
        image = bytearray(_VAL * n)
        image[_KIND::_VAL] = bytes([_U8]) * n
        image[_PAYLOAD::_VAL] = val
        ctypes.memmove(raw.data, bytes(image), len(image))
    ptr.contents.kind = ffi.WASMTIME_COMPONENT_LIST
    ptr.contents.of.list = raw
    return None


def _from_c(self: Any, c: Any) -> Any:
    if not self._is_bytes():
        return _original[1](self, c)
    assert c.kind == ffi.WASMTIME_COMPONENT_LIST.value
    try:
        n = c.of.list.size
        if not n:
            return b""
        image = ctypes.string_at(ctypes.cast(c.of.list.data, ctypes.c_void_p).value, _VAL * n)
        return image[_PAYLOAD::_VAL]
    finally:
        ffi.wasmtime_component_valtuple_delete(ctypes.byref(c.of.tuple))


def install() -> None:
    assert _VAL == 32 and _PAYLOAD == 8, "wasmtime_component_val_t is not laid out as this module assumes"
    _types.ListType.convert_to_c = _to_c  # type: ignore[method-assign]
    _types.ListType.convert_from_c = _from_c  # type: ignore[method-assign]


def uninstall() -> None:
    _types.ListType.convert_to_c, _types.ListType.convert_from_c = _original  # type: ignore[method-assign]
