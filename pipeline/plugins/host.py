"""A WebAssembly parser plugin as a :class:`~drsg.pipeline.code.handler.Handler`.

Every call (``describe``, each ``parse``, ``assemble``) runs in a fresh ``Store`` and instance, so
a trap never leaves a half-run instance behind and parallel parse calls share nothing. Each store has
the call's budgets (``[plugins]`` settings):

- ``fuel`` instructions (0 = off): machine-independent, so a plugin stops at the same place everywhere;
- ``memory_mb`` of linear memory: a ``memory.grow`` past it fails (-1, as wasm says) and is noted
  (``memory.py`` allocates plugin memory), so the trap that follows — an allocator aborting — is
  reported as the budget it hit (``PluginBudget`` naming ``[plugins] memory_mb``);
- ``timeout_s`` of wall-clock time (0 = off), host calls included: the epoch watchdog traps the wasm,
  and a host call (a slow ``read``) waits at most for what is left of the call, then ends it;
- ``wasi``: the WASI imports it may have (``wasi.py``); a call to ``exit`` ends the call with an error.

What a plugin writes to stderr is kept (its last ``wasi.STDERR_TAIL`` bytes) and shown only when the
call fails: its last line in the error, all of it at ``-v`` (the event ``plugin_stderr``). It is the
plugin's own output: the plugin sees no environment, no file but the tree's, no secret of drsg's.

What the plugin answers is data to check (``output_from_wire``). A ``list<u8>`` the plugin hands
back (a partial) is bounded by :data:`MAX_PARTIAL`, below wasmtime's own limit on what it lifts out of
a component in one call (its "hostcall fuel": about 3 MiB of ``list<u8>`` through wasmtime-py's
dynamic values); past it the error names the limit. What the host hands in (a file ``read`` answers,
a document, every partial ``assemble`` gets) is not lifted and has no such limit: measured, 16.8 MiB
of partials go into one ``assemble`` (tests/bench/bench_c_plugin.py passes 3.2 MiB of them).
"""

from __future__ import annotations

import dataclasses
import queue
import re
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar, cast

import structlog
import wasmtime
from wasmtime import component as wc

from drsg.kernel.errors import PluginBudget, PluginError
from drsg.kernel.settings import Settings
from drsg.pipeline.code.handler import Doc, Handler, Manifest, Options, Output, SourceTree, Subject, output_from_wire
from drsg.pipeline.plugins import memory, sandbox, wasi

#: the most bytes of one partial a plugin may answer: wasmtime refuses to lift more than about 3 MiB of
#: list<u8> out of a component in one call, so this stays below it
MAX_PARTIAL = 2 << 20
#: bounds on what describe() may answer (it goes into registry.toml)
MAX_EXTENSIONS = 64
MAX_LOGO = 64 << 10
#: a wasm32 memory cannot exceed 4 GiB whatever memory_mb says
WASM32_MAX_MB = 4096
U64_MAX = (1 << 64) - 1
#: a claimed extension without its dot: lowercase ASCII letters, digits, _ + - (never a path, never two parts)
_EXTENSION = re.compile(r"[a-z0-9_+-]{1,32}")

T = TypeVar("T")
log = structlog.get_logger("drsg.plugins")


@dataclass(frozen=True)
class Budget:
    """One call's limits; ``fuel`` 0 and ``timeout_s`` None mean off; ``wasi`` what WASI imports pass."""

    fuel: int = 200_000_000_000
    memory_mb: int = 3072
    timeout_s: float | None = 60.0
    wasi: wasi.WasiMode = "inert"

    @classmethod
    def from_settings(cls, settings: Settings) -> Budget:
        return cls(
            settings.integer("plugins.fuel"),
            settings.integer("plugins.memory_mb"),
            settings.optional_number("plugins.timeout_s"),
            "strict" if settings.text("plugins.wasi") == "strict" else "inert",
        )


def plugin_options(settings: Settings | None, name: str) -> list[tuple[str, str]]:
    """``[plugins.<name>]`` as the string pairs the plugin receives (none without settings): text as
    is, numbers as written, booleans ``true``/``false``; anything else (a list, a table, a date) is
    refused, naming the key."""
    pairs: list[tuple[str, str]] = []
    tables = settings.plugin_tables if settings is not None else {}
    for key, value in tables.get(name, {}).items():
        if isinstance(value, bool):
            text = "true" if value else "false"
        elif isinstance(value, int | float | str):
            text = str(value)
        else:
            raise PluginError(
                f"[plugins.{name}] {key} is a {type(value).__name__}; a plugin option is text, a number or true/false"
            )
        pairs.append((key, text))
    return pairs


class _Call(sandbox.HostCalls):
    """One call's host side: the tree it may read, its deadline, and a failure the host raised."""

    def __init__(self, tree: SourceTree | None, name: str, budget: Budget) -> None:
        self.tree, self.name, self.budget = tree, name, budget
        self.deadline = None if budget.timeout_s is None else time.monotonic() + budget.timeout_s
        self.failure: PluginError | None = None
        self.stderr = wasi.Tail()
        self.limit = memory.Limit(budget.memory_mb << 20)

    def _fail(self, error: PluginError) -> Exception:
        self.failure = error
        return error

    def _bounded(self, what: str, fn: Callable[[], T]) -> T:
        """``fn()`` given at most what is left of the call's time; past it the call ends (raises)."""
        if self.deadline is None:
            return fn()
        left = self.deadline - time.monotonic()
        done, value = _HOST_WORKERS.run(fn, left) if left > 0 else (False, None)
        if not done:  # still blocked (a FIFO, a hung mount): its worker is left to it, the call ends
            raise self._fail(_timed_out(self.name, self.budget, f"host {what}"))
        if isinstance(value, _Raised):
            raise value.error
        return cast(T, value)

    def _tree(self) -> SourceTree:
        if self.tree is None:
            raise self._fail(PluginError(f"plugin {self.name} called the host during describe(), which has no tree"))
        return self.tree

    def list(self, suffix: str) -> list[str] | str:
        tree = self._tree()
        try:
            return self._bounded("list", lambda: tree.list(suffix))
        except ValueError as exc:
            return str(exc)

    def read(self, path: str) -> bytes | str:
        tree = self._tree()
        try:
            data = self._bounded("read", lambda: tree.read(path))
        except ValueError as exc:  # outside the root, not admitted, too big, unreadable: the WIT's error string
            return str(exc)
        return data

    def label(self) -> str | None:
        tree = self._tree()
        return self._bounded("label", tree.label)

    def random(self, length: int) -> bytes:
        try:
            return sandbox.fixed_bytes(length)
        except PluginError as exc:
            raise self._fail(PluginError(f"plugin {self.name} {exc.message}")) from None


@dataclass
class _Raised:
    error: BaseException


class _Workers:
    """Daemon threads that run host calls for calls with a deadline, so a call can stop waiting.

    A thread per host call cost 2–3 ms inside a wasm callback; handing the call to a waiting worker
    costs about 0.3 ms. A worker stuck for good (a FIFO nobody writes) is left behind: with all of
    them stuck, later host calls wait in the queue and time out — bounded, never hung. Daemon
    threads, so a stuck one never holds up the process's exit.
    """

    def __init__(self, size: int) -> None:
        self.size = size
        self.tasks: queue.SimpleQueue[tuple[Callable[[], Any], list[Any], threading.Event]] = queue.SimpleQueue()
        self.started = 0
        self.lock = threading.Lock()

    def run(self, fn: Callable[[], Any], timeout: float) -> tuple[bool, Any]:
        with self.lock:
            while self.started < self.size:
                threading.Thread(target=self._work, name="drsg-plugin-host-call", daemon=True).start()
                self.started += 1
        box: list[Any] = []
        finished = threading.Event()
        self.tasks.put((fn, box, finished))
        if not finished.wait(timeout):
            return False, None
        return True, box[0]

    def _work(self) -> None:
        while True:
            fn, box, finished = self.tasks.get()
            try:
                box.append(fn())
            except BaseException as exc:  # handed back to the calling thread
                box.append(_Raised(exc))
            finished.set()


_HOST_WORKERS = _Workers(8)


def _timed_out(name: str, budget: Budget, where: str) -> PluginBudget:
    return PluginBudget(
        f"plugin {name} ran past its {budget.timeout_s:g} s (in {where}); raise [plugins] timeout_s "
        "(DRSG_PLUGINS_TIMEOUT_S; 0 = no limit) if the input is that large"
    )


_current = threading.local()


def _current_call() -> sandbox.HostCalls:
    call = getattr(_current, "call", None)
    if call is None:  # a host function outside a call: cannot happen through PluginHandler
        raise RuntimeError("plugin host function called outside a plugin call")
    return call  # type: ignore[no-any-return]


class PluginHandler(Handler):
    """One compiled component, driven through fresh stores; ``describe()`` is asked once, at construction."""

    concurrent = True  # every call has its own store and instance: parse calls can run at once

    def __init__(self, component: wc.Component, name: str, budget: Budget, sha256: str = "") -> None:
        """``name`` is what errors call it until describe answers (the registry's name, or the file);
        ``sha256`` is the component file's, so a rebuilt plugin of the same version is told apart."""
        self.component = component
        self.sha256 = sha256
        self.name = name
        self.budget = budget
        imports = sandbox.check_imports(component, name, budget.wasi)
        sandbox.check_exports(component, name)
        #: each import with what it is granted (``plugin show``)
        self.grants = sandbox.grants(imports)
        self._wasi = wasi.needs_wasmtime(imports)
        self._exit_code = wasi.exit_carries_code(imports)
        self._linker = sandbox.linker(imports, _current_call)
        self._manifest = self._describe()
        self.name = self._manifest.name

    # ---------------------------------------------------------------------------------- the port

    @property
    def manifest(self) -> Manifest:
        return self._manifest

    @property
    def fingerprint(self) -> str:
        return f"{self._manifest.ident}#{self.sha256[:16]}"

    def parse(self, tree: SourceTree, subject: Subject, options: Options) -> bytes:
        if isinstance(subject, Doc):
            wire: Any = wc.Record()
            wire.name, wire.bytes = subject.name, bytes(subject.data)
        else:
            wire = list(subject)
        # every failure names what was parsed: a trap in a 10,000-file digest is no use without it
        where = f"parse() of {_subject_name(subject)}"
        partial = self._call("parse", tree, wire, [tuple(pair) for pair in options], where=where)
        if not isinstance(partial, bytes):
            raise PluginError(f"plugin {self.name} answered {where} with {type(partial).__name__}, not bytes")
        if len(partial) > MAX_PARTIAL:
            raise PluginError(
                f"plugin {self.name} answered a {len(partial)}-byte partial, over the {MAX_PARTIAL}-byte limit per "
                f"parse call, for {where}; a plugin should keep partials compact"
            )
        return partial

    def assemble(self, tree: SourceTree, partials: Sequence[bytes], options: Options) -> Output:
        output = self._call("assemble", tree, [bytes(p) for p in partials], [tuple(pair) for pair in options])
        try:
            wire = _plain(output)
            return output_from_wire(wire, self.name)
        except (KeyError, TypeError, AttributeError) as exc:
            raise PluginError(f"plugin {self.name} answered an output that breaks the contract ({exc})") from None

    # ------------------------------------------------------------------------------- the calling

    def _describe(self) -> Manifest:
        raw = self._call("describe", None)
        try:
            manifest = Manifest(
                str(raw.name),
                str(raw.version),
                tuple(str(ext) for ext in raw.extensions),
                None if raw.logo is None else str(raw.logo),
            )
        except AttributeError as exc:
            raise PluginError(f"plugin {self.name} answered describe() with no manifest ({exc})") from None
        if len(manifest.extensions) > MAX_EXTENSIONS or len(manifest.logo or "") > MAX_LOGO:
            raise PluginError(
                f"plugin {manifest.name} describes itself with more than {MAX_EXTENSIONS} extensions or a logo over "
                f"{MAX_LOGO} characters"
            )
        claims = []
        for ext in manifest.extensions:
            bare = bare_extension(ext)
            if bare is None:
                raise PluginError(
                    f"plugin {manifest.name} claims extension {ext!r}; a claim is lowercase letters, digits, _ + - "
                    "without the dot (rs, shown as .rs)"
                )
            claims.append(bare)
        return dataclasses.replace(manifest, extensions=shown_extensions(claims))

    def _call(self, func: str, tree: SourceTree | None, *args: Any, where: str = "") -> Any:
        """One call in a fresh store and instance, its traps mapped to the budget they hit and its
        err(string) raised (``where`` says what was being done in the message, ``func()`` by
        default), with what the plugin wrote to stderr when it fails."""
        where = where or f"{func}()"
        call = _Call(tree, self.name, self.budget)
        try:
            answer = self._run(call, func, args, where)
            if isinstance(answer, str):  # the plugin's err(string): its own one line
                line = answer.strip().splitlines()[0] if answer.strip() else "(no message)"
                raise PluginError(f"plugin {self.name} failed in {where}: {line[:500]}")
        except PluginError as exc:
            raise self._with_stderr(exc, call.stderr, where) from None
        return answer

    def _with_stderr(self, exc: PluginError, stderr: wasi.Tail, where: str) -> PluginError:
        """``exc`` ending with the last line the plugin wrote to stderr (the whole tail at -v)."""
        text = stderr.text()
        if not text:
            return exc
        log.info("plugin_stderr", plugin=self.name, where=where, stderr=text)
        return type(exc)(f"{exc.message}; its stderr ended: {text.splitlines()[-1].strip()[:300]}")

    def _run(self, call: _Call, func: str, args: tuple[Any, ...], where: str) -> Any:
        store = wasmtime.Store(sandbox.engine())
        store.set_fuel(self.budget.fuel or U64_MAX)
        call.limit = memory.Limit(min(self.budget.memory_mb, WASM32_MAX_MB) << 20)
        if not sandbox.ENGINE.memory_watched:  # wasmtime's limiter then: the limit holds, unseen
            store.set_limits(memory_size=call.limit.max_bytes)
        store.set_epoch_deadline(sandbox.deadline_ticks(self.budget.timeout_s))
        if self._wasi:
            store.set_wasi(wasi.inert_config(call.stderr))
        previous, previous_limit = getattr(_current, "call", None), getattr(memory.current, "limit", None)
        _current.call, memory.current.limit = call, call.limit
        try:
            try:
                instance = self._linker.instantiate(store, self.component)
            except wasmtime.WasmtimeError as exc:
                raise self._trap(exc, call, store, "instantiating it") from None
            interface = instance.get_export_index(store, sandbox.PREPROCESSOR)
            index = instance.get_export_index(store, func, interface) if interface is not None else None
            function = instance.get_func(store, index) if index is not None else None
            if function is None:
                raise PluginError(f"plugin {self.name} does not export {sandbox.PREPROCESSOR}/{func}")
            try:
                answer = function(store, *args)
            except Exception as exc:  # a trap (WasmtimeError), or what a host function raised
                raise self._trap(exc, call, store, where) from None
            if call.failure is not None:
                raise call.failure
            return answer  # the store (and instance) go with it: no post_return needed
        finally:
            _current.call, memory.current.limit = previous, previous_limit

    def _trap(self, exc: BaseException, call: _Call, store: wasmtime.Store, where: str) -> PluginError:
        if call.failure is not None:
            return call.failure
        if isinstance(exc, PluginError):
            return exc
        if isinstance(exc, wasmtime.ExitTrap):
            return PluginError(
                f"plugin {self.name} {wasi.exited(exc.code, self._exit_code)} in {where}; a plugin answers "
                "through its result (an error is err(string)), not by exiting"
            )
        text = str(exc)
        code = _trap_code(exc)
        if code == wasmtime.TrapCode.OUT_OF_FUEL or "all fuel consumed" in text:
            return PluginBudget(
                f"plugin {self.name} used all its fuel ({self.budget.fuel} instructions) in {where}; raise "
                "[plugins] fuel (DRSG_PLUGINS_FUEL; 0 = no limit) if the input is that large"
            )
        if code == wasmtime.TrapCode.INTERRUPT or "wasm trap: interrupt" in text:
            return _timed_out(self.name, self.budget, where)
        if call.limit.hit or "exceeds memory limits" in text or "memory minimum size" in text:
            return self._memory(where)
        if "has the wrong type" in text:  # at instantiation: an import typed unlike the interface drsg links
            return PluginError(
                f"plugin {self.name} cannot be linked: {_first_line(text)} (its import differs from the interface "
                "the host defines; WASI imports must be 0.2.x's own types)"
            )
        if "too much data is being copied" in text:
            return PluginError(
                f"plugin {self.name} passed more data across the host boundary in {where} than wasmtime copies in "
                f"one call (about 3 MiB of list<u8>); drsg takes at most {MAX_PARTIAL} bytes per partial"
            )
        if isinstance(exc, wasmtime.WasmtimeError | wasmtime.Trap):
            return PluginError(f"plugin {self.name} trapped in {where}: {_first_line(text)}")
        return PluginError(f"plugin {self.name} failed in {where}: {type(exc).__name__}: {_first_line(text)}")

    def _memory(self, where: str) -> PluginBudget:
        return PluginBudget(
            f"plugin {self.name} needed more than its {self.budget.memory_mb} MiB of memory in {where}; raise "
            "[plugins] memory_mb (DRSG_PLUGINS_MEMORY_MB; wasm32 stops at 4096)"
        )


def bare_extension(ext: str) -> str | None:
    """A claimed extension as upstream's contract stores and matches it: without the dot (``rs``). An
    older build's (or registry's) dotted ``.rs`` is the same claim; None: not a claim at all."""
    bare = ext[1:] if ext.startswith(".") else ext
    return bare if _EXTENSION.fullmatch(bare) else None


def shown_extensions(bare: Sequence[str]) -> tuple[str, ...]:
    """Claims as they are shown and as the Handler port routes them: with the dot (``.rs``)."""
    return tuple(f".{ext}" for ext in bare)


def _subject_name(subject: Subject) -> str:
    """The file(s) a parse call reads, for its errors (a chunk of many: the first and how many more)."""
    if isinstance(subject, Doc):
        return subject.name
    if not subject:
        return "no files"
    more = f" and {len(subject) - 1} more file(s)" if len(subject) > 1 else ""
    return f"{subject[0]}{more}"


def _trap_code(exc: BaseException) -> wasmtime.TrapCode | None:
    code = getattr(exc, "trap_code", None)
    return code if isinstance(code, wasmtime.TrapCode) else None


def _first_line(text: str) -> str:
    """The trap's own line: wasmtime puts the backtrace first and the cause after ``Caused by:``."""
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    if "Caused by:" in lines and lines.index("Caused by:") + 1 < len(lines):
        return lines[lines.index("Caused by:") + 1][:300]
    return (lines[0] if lines else "(no message)")[:300]


def _plain(value: Any) -> Any:
    """wasmtime's Records and lists as plain dicts and lists (the WIT field names as keys)."""
    if isinstance(value, wc.Record):
        return {key: _plain(item) for key, item in vars(value).items()}
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    return value
