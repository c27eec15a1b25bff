"""Plugin linear memory allocated by the host, so a ``memory.grow`` past ``memory_mb`` is *seen*.

wasmtime's store limiter (``Store.set_limits``) makes such a grow return -1 and says nothing, and a
plugin's allocator then aborts with an ``unreachable`` trap that looks like any other bug. So the
engine gets a memory creator (wasmtime's ``host_memory_creator``) that maps each linear memory
itself — the reservation wasmtime asks for, ``PROT_NONE`` but for the accessible part, then the guard
region, exactly the layout wasmtime's own allocator uses — enforces the call's limit on growth, and
marks the call whose memory was refused (:class:`Limit`). The call's trap is then reported as the
memory budget it hit.

Each call's limit is read when its instance's memories are created, from :data:`current` (set by
the host around instantiation, on the calling thread).
"""

from __future__ import annotations

import ctypes
import mmap
import threading
from dataclasses import dataclass
from typing import Any

import wasmtime
from wasmtime import _ffi as ffi

PROT_NONE, PROT_READ_WRITE = 0, 3
MAP_PRIVATE, MAP_ANONYMOUS, MAP_NORESERVE = 0x02, 0x20, 0x4000
WASM32_MAX = 4 << 30
_PAGE = mmap.PAGESIZE


@dataclass
class Limit:
    """One call's memory budget and whether a memory of that call was refused growth."""

    max_bytes: int
    hit: bool = False
    asked: int = 0  # the largest size refused


#: the call being instantiated on this thread (its memories take its limit)
current = threading.local()


@dataclass
class _Memory:
    base: int
    size: int
    maximum: int
    reserved: int
    mapped: int
    limit: Limit


_memories: dict[int, _Memory] = {}
_lock = threading.Lock()
_next_id = [1]

_libc = ctypes.CDLL(None, use_errno=True)
_libc.mmap.restype = ctypes.c_void_p
_libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
_libc.mprotect.restype = ctypes.c_int
_libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
_libc.munmap.restype = ctypes.c_int
_libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
_MAP_FAILED = ctypes.c_void_p(-1).value


def _error(message: str) -> int:
    """A wasmtime_error_t* for wasmtime to own (it makes the grow fail, or the instantiation)."""
    return ctypes.cast(ffi.wasmtime_error_new(message.encode()), ctypes.c_void_p).value or 0


def _rounded(size: int) -> int:
    return (size + _PAGE - 1) // _PAGE * _PAGE


@ffi.wasmtime_memory_get_callback_t  # type: ignore[misc]
def _get(env: int, size: Any, maximum: Any) -> int:
    memory = _memories[env]
    size[0], maximum[0] = memory.size, memory.maximum
    return memory.base


@ffi.wasmtime_memory_grow_callback_t  # type: ignore[misc]
def _grow(env: int, new_size: int) -> int:
    memory = _memories[env]
    if new_size > memory.limit.max_bytes:
        memory.limit.hit = True
        memory.limit.asked = max(memory.limit.asked, new_size)
        return _error(f"linear memory of {new_size} bytes is over the plugin's {memory.limit.max_bytes}-byte limit")
    if new_size > memory.reserved:
        return _error("linear memory cannot grow past its reservation")
    if new_size > memory.size and _libc.mprotect(memory.base, _rounded(new_size), PROT_READ_WRITE) != 0:
        return _error(f"mprotect failed (errno {ctypes.get_errno()})")
    memory.size = new_size
    return 0


@ctypes.CFUNCTYPE(None, ctypes.c_void_p)  # type: ignore[misc]
def _free(env: int) -> None:
    with _lock:
        memory = _memories.pop(env, None)
    if memory is not None:
        _libc.munmap(memory.base, memory.mapped)


@ffi.wasmtime_new_memory_callback_t  # type: ignore[misc]
def _new(_env: Any, _ty: Any, minimum: int, maximum: int, reserved: int, guard: int, out: Any) -> int:
    limit = getattr(current, "limit", None) or Limit(WASM32_MAX)
    if minimum > limit.max_bytes:
        limit.hit, limit.asked = True, max(limit.asked, minimum)
        return _error(f"linear memory of {minimum} bytes at start is over the plugin's {limit.max_bytes}-byte limit")
    # wasmtime asks for a reservation it compiled bounds checks against (0: the memory may move, but
    # never moving is also correct); never less than what the call may use
    span = max(reserved, min(maximum, WASM32_MAX) if maximum else WASM32_MAX, minimum)
    mapped = _rounded(span) + _rounded(guard)
    base = _libc.mmap(None, mapped, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0)
    if not base or base == _MAP_FAILED:
        return _error(f"cannot reserve {mapped} bytes for a linear memory (errno {ctypes.get_errno()})")
    if minimum and _libc.mprotect(base, _rounded(minimum), PROT_READ_WRITE) != 0:
        _libc.munmap(base, mapped)
        return _error(f"mprotect failed (errno {ctypes.get_errno()})")
    with _lock:
        key = _next_id[0]
        _next_id[0] += 1
        _memories[key] = _Memory(base, minimum, maximum, _rounded(span), mapped, limit)
    out[0].env = key
    out[0].get_memory = _get
    out[0].grow_memory = _grow
    out[0].finalizer = _free
    return 0


@ctypes.CFUNCTYPE(None, ctypes.c_void_p)  # type: ignore[misc]
def _creator_free(_env: Any) -> None:
    return None


_creator: Any = ffi.wasmtime_memory_creator_t()  # ctypes fields: the stubs type them as pointers
_creator.env = None
_creator.new_memory = _new
_creator.finalizer = _creator_free


def install(config: wasmtime.Config) -> bool:
    """Make ``config``'s engine allocate linear memory here; False if this wasmtime-py cannot."""
    if not hasattr(ffi, "wasmtime_config_host_memory_creator_set") or not hasattr(
        ffi, "wasmtime_config_memory_init_cow_set"
    ):
        return False
    ffi.wasmtime_config_memory_init_cow_set(config.ptr(), False)  # copy-on-write images need wasmtime's mmap
    ffi.wasmtime_config_host_memory_creator_set(config.ptr(), ctypes.byref(_creator))
    return True


def live() -> int:
    """Linear memories not yet freed (tests: stores release theirs)."""
    return len(_memories)
