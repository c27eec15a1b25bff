"""The sandbox a parser plugin runs in: one engine, its epoch watchdog, the compile cache, what may be imported.

A plugin is a WebAssembly component of the ``drsg:preprocess@1.0.0`` world. It gets what the world
imports (``drsg:preprocess/host``) plus the WASI 0.2.x interfaces standard toolchains plant, each
linked to an inert grant (``wasi.py``: empty environment, no directories, discarded output, frozen
clocks, the fixed bytes ``drsg`` as randomness, upstream's). :func:`check_imports` refuses, in one
line naming it, ``wasi:sockets`` (and, when ``[plugins] wasi = "strict"``, ``wasi:filesystem``) and
any import outside that allow-list.

Compiling is the slow part (seconds for a real parser), so a component is compiled once per process
and its compiled form cached on disk, keyed by the artifact's SHA-256 and the wasmtime version.
``deserialize`` trusts its input completely (it is native code), so a cached file is used only when
its SHA-256 is the one pinned *outside* it — in ``registry.toml``, written when the file was made
(:func:`compile_pinned`). A file anyone altered, replaced or truncated, or one nothing pinned, is
never deserialized: the verified ``.wasm`` is compiled again and the cache rewritten.

Nothing starts at import: the process's engine and its watchdog thread (:data:`ENGINE`) start with
the first plugin compiled or run, and :func:`close` stops the thread and drops the engine.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

import wasmtime
from wasmtime import component as wc

from drsg.kernel.errors import PluginError
from drsg.kernel.files import write_atomic
from drsg.pipeline.plugins import fastbytes, memory, wasi

HOST = "drsg:preprocess/host@1.0.0"
PREPROCESSOR = "drsg:preprocess/preprocessor@1.0.0"
HOST_FUNCS = frozenset({"list", "read", "label"})
EXPORTS = ("describe", "parse", "assemble")

#: the watchdog's tick: an over-long call traps within about one tick of its timeout
TICK_S = 0.02
#: what the frozen clocks answer (the epoch, with a 1 ns resolution) and the fixed entropy
FROZEN_SECONDS = 0
ENTROPY = b"drsg"
#: most fixed bytes one random call answers (a plugin cannot hold more than its memory anyway)
MAX_RANDOM_BYTES = 64 << 20


# ------------------------------------------------------------------------------------- the engine


class PluginEngine:
    """A wasmtime engine (fuel metering and epoch interruption on) and the watchdog thread that ticks
    its epoch. Nothing starts when it is made: :meth:`start` builds the engine and starts the thread
    (idempotent); :meth:`close` stops the thread and drops the engine, so a later :meth:`start` begins
    afresh. A component compiled for one engine is useless to the next: the process's engine is closed
    with :func:`close`, which drops them too. Close only when no plugin call is running."""

    def __init__(self) -> None:
        self._engine: wasmtime.Engine | None = None
        self._watchdog: threading.Thread | None = None
        self._stop = threading.Event()
        self._lock = threading.Lock()
        #: whether the engine allocates linear memory through drsg.pipeline.plugins.memory (set by start)
        self.memory_watched = False

    @property
    def watchdog(self) -> threading.Thread | None:
        return self._watchdog

    def start(self) -> wasmtime.Engine:
        """The engine, built and its watchdog started on the first call."""
        running = self._engine
        if running is not None:
            return running
        with self._lock:
            if self._engine is None:
                fastbytes.install()
                config = wasmtime.Config()
                config.wasm_component_model = True
                config.consume_fuel = True
                config.epoch_interruption = True
                self.memory_watched = memory.install(config)
                built = wasmtime.Engine(config)
                self._stop = threading.Event()
                self._watchdog = threading.Thread(
                    target=_tick, args=(built, self._stop), name="drsg-plugin-epoch", daemon=True
                )
                self._watchdog.start()
                self._engine = built
            return self._engine

    def close(self) -> None:
        """Stop the watchdog (joined) and forget the engine and what was compiled for it."""
        with self._lock:
            watchdog, self._engine, self._watchdog = self._watchdog, None, None
            self._stop.set()
        if watchdog is not None:
            watchdog.join()


def _tick(engine: wasmtime.Engine, stop: threading.Event) -> None:
    while not stop.wait(TICK_S):
        engine.increment_epoch()


#: the process's one engine: started by the first plugin compiled or run (``engine()``), never at import
ENGINE = PluginEngine()


def engine() -> wasmtime.Engine:
    """The process's one engine, started on first use."""
    return ENGINE.start()


def __getattr__(name: str) -> bool:
    if name == "memory_watched":  # the process engine's, read as a module attribute (tests)
        return ENGINE.memory_watched
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def deadline_ticks(timeout_s: float | None) -> int:
    """The epoch deadline for a call of ``timeout_s`` seconds (None: one that never comes)."""
    if timeout_s is None:
        return 1 << 62
    return max(1, int(timeout_s / TICK_S + 0.999)) + 1  # +1: the tick under way when the call starts


WASMTIME_VERSION = metadata.version("wasmtime")
#: bumped when the engine's configuration changes, so old compiled files are not reused
ENGINE_TAG = "fuel-epoch-hostmem-2"  # 2: no checksum header, pinned in registry.toml


# ---------------------------------------------------------------------------------- compile cache


@dataclass
class CompileStats:
    """How components were obtained in this process (tests and ``plugin show`` read it)."""

    compiled: int = 0
    from_disk: int = 0
    from_memory: int = 0


STATS = CompileStats()
_compiled: dict[str, wc.Component] = {}
#: a cache file -> its SHA-256 as this process wrote or verified it
_pins: dict[Path, str] = {}
_compile_lock = threading.Lock()


def compile_component(data: bytes, name: str, cache_dir: Path | None) -> wc.Component:
    """The compiled component for ``data``: from this process, else compiled now (and cached, unpinned)."""
    return compile_pinned(data, name, cache_dir, None)[0]


def compile_pinned(
    data: bytes, name: str, cache_dir: Path | None, pinned: str | None
) -> tuple[wc.Component, str | None]:
    """The compiled component for ``data`` and the SHA-256 of its cache file now on disk (None: no
    cache). From this process, else from the disk cache when that file's SHA-256 is ``pinned`` (the
    registry's record), else compiled now and the cache written: the caller records what it answers."""
    digest = hashlib.sha256(data).hexdigest()
    path = None if cache_dir is None else cache_path(cache_dir, digest)
    with _compile_lock:
        cached = _compiled.get(digest)
        if cached is not None and (path is None or path in _pins):
            STATS.from_memory += 1
            return cached, None if path is None else _pins[path]
        component = cached
        if component is None and path is not None and pinned is not None:
            component = _from_disk(path, pinned)
            if component is not None:
                STATS.from_disk += 1
                _pins[path] = pinned
                _compiled[digest] = component
                return component, pinned
        if component is None:
            try:
                component = wc.Component(engine(), data)
            except wasmtime.WasmtimeError as exc:
                raise PluginError(f"plugin {name} is not a WebAssembly component: {_first(exc)}") from None
            STATS.compiled += 1
        _compiled[digest] = component
        if path is None:
            return component, None
        written = _to_disk(path, component)
        if written is None:
            _pins.pop(path, None)
        else:
            _pins[path] = written
        return component, written


def close() -> None:
    """Stop the process's engine and its watchdog, and forget what was compiled for it (:class:`PluginEngine`)."""
    with _compile_lock:
        ENGINE.close()
        _compiled.clear()


def cache_path(cache_dir: Path, digest: str) -> Path:
    return cache_dir / cache_name(digest)


def drop_cache(cache_dir: Path, digest: str) -> None:
    """Delete the compile cache of the artifact ``digest`` (a plugin removed), and forget its pin."""
    path = cache_path(cache_dir, digest)
    with _compile_lock:
        _pins.pop(path, None)
        path.unlink(missing_ok=True)


def cache_name(digest: str) -> str:
    """The compile cache's file name for the artifact of SHA-256 ``digest``, under this wasmtime."""
    return f"{digest}-wasmtime-{WASMTIME_VERSION}-{ENGINE_TAG}.cwasm"


def _from_disk(path: Path, pinned: str) -> wc.Component | None:
    try:
        raw = path.read_bytes()
    except OSError:
        return None
    if hashlib.sha256(raw).hexdigest() != pinned:
        return None  # not the file the registry pinned: never handed to deserialize (it is rewritten)
    try:
        return wc.Component.deserialize(engine(), raw)
    except wasmtime.WasmtimeError:
        return None  # pinned, yet refused (another engine's): recompile


def _to_disk(path: Path, component: wc.Component) -> str | None:
    """Best effort: the SHA-256 of the file written, or None when it could not be (the next process
    then compiles again)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        body = bytes(component.serialize())
        write_atomic(path, body)
    except OSError:
        return None
    return hashlib.sha256(body).hexdigest()


def _first(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


# --------------------------------------------------------------------------------- import policy


def imported_functions(component: wc.Component) -> dict[str, frozenset[str]]:
    """Each imported interface with the functions the component imports from it."""
    out: dict[str, frozenset[str]] = {}
    for name, item in component.type.imports(engine()).items():
        ty = item.ty
        exports = ty.exports(engine()) if isinstance(ty, wc.ComponentInstanceType) else {}
        # types (a record the functions use) need no definition; resources would, and are refused below
        out[name] = frozenset(n for n, e in exports.items() if not _is_plain_type(e))
    return out


def _is_plain_type(item: Any) -> bool:  # a wasmtime.component ComponentExtern
    return isinstance(item.ty, wc.ValType)


def check_imports(component: wc.Component, name: str, mode: wasi.WasiMode = "inert") -> dict[str, frozenset[str]]:
    """The component's imports, if the host provides every one; else a PluginError naming the first."""
    imports = imported_functions(component)
    for interface, funcs in sorted(imports.items()):
        why = wasi.refusal(interface, mode)
        if why is not None:
            raise PluginError(f"plugin {name} imports {interface}, which is refused: {why}")
        grant = wasi.grant(interface)
        if interface == HOST:
            known = HOST_FUNCS
            instance = component.type.imports(engine())[HOST].ty
            if not isinstance(instance, wc.ComponentInstanceType):
                raise PluginError(f"plugin {name} imports {HOST} as something other than an interface")
            for func, item in instance.exports(engine()).items():
                if func in HOST_SIGNATURES:
                    _check_signature(name, f"import {HOST}/{func}", item.ty, HOST_SIGNATURES[func])
        elif grant is not None:
            known = funcs - grant.refused if grant.functions is None else grant.functions
        else:
            raise PluginError(
                f"plugin {name} imports {interface}, which this host does not provide (it offers {HOST} and "
                "inert WASI 0.2.x: wasi:cli, wasi:io, wasi:clocks, wasi:random, wasi:filesystem)"
            )
        unknown = sorted(funcs - known)
        if unknown:
            why = wasi.FROZEN_WHY if grant is not None and unknown[0] in grant.refused else "not provided"
            raise PluginError(f"plugin {name} imports {interface}/{unknown[0]}, which is refused: {why}")
    return imports


def grants(imports: dict[str, frozenset[str]]) -> list[tuple[str, str]]:
    """Each import (checked) with what it is granted, in name order: what ``plugin show`` lists."""
    out = []
    for interface in sorted(imports):
        grant = wasi.grant(interface)
        out.append((interface, "drsg's tree: list, read, label" if grant is None else grant.shown))
    return out


def check_exports(component: wc.Component, name: str) -> None:
    """The preprocessor interface with the contract's three functions, each of the contract's type."""
    exports = component.type.exports(engine())
    item = exports.get(PREPROCESSOR)
    funcs = item.ty.exports(engine()) if item is not None and isinstance(item.ty, wc.ComponentInstanceType) else {}
    missing = [func for func in EXPORTS if func not in funcs]
    if missing:
        raise PluginError(f"plugin {name} does not export {PREPROCESSOR} with {', '.join(missing)} (wrong world?)")
    for func in EXPORTS:
        _check_signature(name, f"{PREPROCESSOR}/{func}", funcs[func].ty, EXPORT_SIGNATURES[func])


def _check_signature(name: str, where: str, ty: Any, expected: str) -> None:
    got = signature(ty) if isinstance(ty, wc.FuncType) else type(ty).__name__
    if got != expected:
        shown = got if len(got) <= 200 else got[:197] + "..."
        raise PluginError(f"plugin {name}'s {where} has type {shown}, not the one preprocess.wit gives it")


def signature(ty: Any) -> str:
    """A component type as WIT-like text (record fields by name), to compare with the contract."""
    if isinstance(ty, wc.FuncType):
        params = ", ".join(f"{pname}: {signature(pty)}" for pname, pty in ty.params)
        result = "" if ty.result is None else f" -> {signature(ty.result)}"
        return f"func({params}){result}"
    if isinstance(ty, wc.ListType):
        return f"list<{signature(ty.element)}>"
    if isinstance(ty, wc.RecordType):
        return "record{" + ", ".join(f"{fname}: {signature(fty)}" for fname, fty in ty.fields) + "}"
    if isinstance(ty, wc.TupleType):
        return "tuple<" + ", ".join(signature(item) for item in ty.elements) + ">"
    if isinstance(ty, wc.VariantType):
        cases = (f"{case}({signature(cty)})" if cty is not None else case for case, cty in ty.cases)
        return "variant{" + ", ".join(cases) + "}"
    if isinstance(ty, wc.OptionType):
        return f"option<{signature(ty.payload)}>"
    if isinstance(ty, wc.ResultType):
        ok = "_" if ty.ok is None else signature(ty.ok)
        err = "_" if ty.err is None else signature(ty.err)
        return f"result<{ok}, {err}>"
    return type(ty).__name__.lower()  # the primitives: string, u8, u32, u64, …


_LIST_STRING = "list<string>"
_OPTIONS = "list<tuple<string, string>>"
_NODE = f"record{{key: string, label: string, extra-labels: {_LIST_STRING}, properties: string}}"
_EDGE = "record{src: string, dst: string, type: string, properties: string}"
_REPORT = f"record{{facts: u32, prose-chars: u32, skipped: u32, notes: {_LIST_STRING}}}"
_OUTPUT = f"record{{nodes: list<{_NODE}>, edges: list<{_EDGE}>, prose: string, report: {_REPORT}}}"
_INPUT = f"variant{{document(record{{name: string, bytes: list<u8>}}), files({_LIST_STRING})}}"
#: preprocess.wit's functions, as :func:`signature` writes them
EXPORT_SIGNATURES = {
    "describe": f"func() -> record{{name: string, version: string, extensions: {_LIST_STRING}, logo: option<string>}}",
    "parse": f"func(subject: {_INPUT}, options: {_OPTIONS}) -> result<list<u8>, string>",
    "assemble": f"func(partials: list<list<u8>>, options: {_OPTIONS}) -> result<{_OUTPUT}, string>",
}
HOST_SIGNATURES = {
    "list": f"func(suffix: string) -> result<{_LIST_STRING}, string>",
    "read": "func(path: string) -> result<list<u8>, string>",
    "label": "func() -> option<string>",
}


# --------------------------------------------------------------------------------------- linking


class HostCalls:
    """What the host functions answer during one call; set by the caller, per thread (see host.py)."""

    def list(self, suffix: str) -> list[str] | str:
        raise NotImplementedError

    def read(self, path: str) -> bytes | str:
        raise NotImplementedError

    def label(self) -> str | None:
        raise NotImplementedError

    def random(self, length: int) -> bytes:
        raise NotImplementedError


def _fixed(length: int) -> bytes:
    return (ENTROPY * (length // len(ENTROPY) + 1))[:length]


def fixed_bytes(length: int) -> bytes:
    if length > MAX_RANDOM_BYTES:
        raise PluginError(f"asked for {length} random bytes, over the {MAX_RANDOM_BYTES}-byte limit")
    return _fixed(length)


FIXED_U64 = int.from_bytes(_fixed(8), "little")


def linker(imports: dict[str, frozenset[str]], current: Callable[[], HostCalls]) -> wc.Linker:
    """A linker defining the interfaces ``imports`` names (already checked): wasmtime's WASI when one
    of its interfaces is imported (a store then needs :func:`wasi.inert_config`), and drsg's host,
    clocks and random over it, each function answering through ``current()``: the host calls of the
    call running on this thread."""
    link = wc.Linker(engine())
    if wasi.needs_wasmtime(imports):
        link.add_wasip2()
        link.allow_shadowing = True  # drsg's clocks and random over wasmtime's, by the name imported
    with link.root() as root:
        for interface in sorted(imports):
            bodies = _bodies(interface, current)
            if bodies is None:
                continue
            with root.add_instance(interface) as instance:
                for func, body in bodies.items():
                    instance.add_func(func, body)
    return link


def _bodies(interface: str, current: Callable[[], HostCalls]) -> dict[str, Callable[..., Any]] | None:
    """drsg's own functions of ``interface`` (None: wasmtime's WASI defines it)."""

    def instant(seconds: int, nanoseconds: int) -> wc.Record:  # wall-clock's datetime record
        record = wc.Record()
        vars(record).update(seconds=seconds, nanoseconds=nanoseconds)
        return record

    if interface == HOST:
        return {
            "list": lambda _store, suffix: current().list(suffix),
            "read": lambda _store, path: current().read(path),
            "label": lambda _store: current().label(),
        }
    bodies: dict[str, dict[str, Callable[..., Any]]] = {
        "clocks/wall-clock": {
            "now": lambda _store: instant(FROZEN_SECONDS, 0),
            "resolution": lambda _store: instant(0, 1),
        },
        "clocks/monotonic-clock": {"now": lambda _store: 0, "resolution": lambda _store: 1},
        "random/random": {
            "get-random-bytes": lambda _store, length: current().random(length),
            "get-random-u64": lambda _store: FIXED_U64,
        },
        "random/insecure": {
            "get-insecure-random-bytes": lambda _store, length: current().random(length),
            "get-insecure-random-u64": lambda _store: FIXED_U64,
        },
        "random/insecure-seed": {"insecure-seed": lambda _store: (FIXED_U64, FIXED_U64)},
    }
    return bodies.get(wasi.family(interface) or "")
