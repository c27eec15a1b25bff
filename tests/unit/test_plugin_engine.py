"""The plugin engine is an object with a start and a close: making it (as importing the sandbox makes the
process's) starts nothing, start() builds the engine and its epoch watchdog (which really interrupts a
runaway call), close() stops the thread."""

from __future__ import annotations

from pathlib import Path

import pytest
import wasmtime

from drsg.pipeline.plugins import sandbox
from drsg.pipeline.plugins.host import Budget, PluginHandler
from drsg.pipeline.plugins.sandbox import PluginEngine

PLUGINS = Path(__file__).resolve().parents[1] / "data" / "plugins"

#: a core module that never returns: only the epoch deadline (the watchdog's ticks) stops it
SPIN = '(module (func (export "spin") (loop (br 0))))'


def test_start_runs_a_watchdog_that_interrupts_and_close_stops_it() -> None:
    owned = PluginEngine()
    assert owned.watchdog is None
    engine = owned.start()
    assert owned.start() is engine  # idempotent: one engine, one thread
    watchdog = owned.watchdog
    assert watchdog is not None and watchdog.is_alive() and watchdog.name == "drsg-plugin-epoch"
    try:
        store = wasmtime.Store(engine)
        store.set_fuel(1 << 62)
        store.set_epoch_deadline(2)  # two ticks of the watchdog
        spin = wasmtime.Instance(store, wasmtime.Module(engine, SPIN), []).exports(store)["spin"]
        assert isinstance(spin, wasmtime.Func)
        with pytest.raises(wasmtime.Trap, match="interrupt"):
            spin(store)
    finally:
        owned.close()
    assert not watchdog.is_alive() and owned.watchdog is None
    again = owned.start()  # a closed engine starts afresh
    try:
        assert again is not engine and owned.watchdog is not None and owned.watchdog.is_alive()
    finally:
        owned.close()
    owned.close()  # closing twice is harmless


def test_closing_the_process_engine_drops_its_components(monkeypatch: pytest.MonkeyPatch) -> None:
    """sandbox.close() stops the process's watchdog and forgets what was compiled for that engine: the
    next plugin is compiled for a fresh engine, and runs. (A private engine stands in for the process's.)"""
    monkeypatch.setattr(sandbox, "ENGINE", PluginEngine())
    monkeypatch.setattr(sandbox, "_compiled", {})
    data = (PLUGINS / "echo.wat").read_bytes()
    try:
        first = PluginHandler(sandbox.compile_component(data, "echo", None), "echo", Budget(timeout_s=10))
        watchdog = sandbox.ENGINE.watchdog
        assert watchdog is not None and watchdog.is_alive()
        sandbox.close()
        assert not watchdog.is_alive() and sandbox.ENGINE.watchdog is None
        compiled = sandbox.STATS.compiled
        again = PluginHandler(sandbox.compile_component(data, "echo", None), "echo", Budget(timeout_s=10))
        assert sandbox.STATS.compiled == compiled + 1  # not the component of the closed engine
        assert again.manifest == first.manifest
    finally:
        sandbox.ENGINE.close()
