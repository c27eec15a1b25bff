"""The plugin methods behind JSON-RPC (the conformance suite runs them through a real server): a
local path is refused, a URL passes the fetch guard, and the catalog is the empty constant."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from drsg.kernel.errors import INVALID_PARAMS, FetchError, RpcError
from drsg.kernel.settings import load
from drsg.surfaces.server import plugin_methods
from tests.support.static_server import serving

ECHO = Path(__file__).resolve().parents[1] / "data" / "plugins" / "echo.wat"


class FakeState:
    """What the methods use of ServerState: the settings, and a read pool (run inline here)."""

    def __init__(self, environ: dict[str, str]) -> None:
        self.config = type("Config", (), {"settings": load(environ=environ)})()

    async def read(self, fn: Callable[[], Any], limited: bool = True) -> Any:
        return fn()

    def check_writable(self) -> None:
        """A writable server's: nothing refused (tests/unit/test_server_read_only.py has the other)."""


def call(method: Callable[..., Any], state: FakeState, params: dict[str, Any]) -> Any:
    return asyncio.run(method(state, params))


def test_a_server_local_path_is_refused(tmp_path: Path) -> None:
    state = FakeState({"DRSG_PLUGINS_STORE_DIR": str(tmp_path)})
    for source in (str(ECHO), f"file://{ECHO}", "echo.wasm"):
        with pytest.raises(RpcError) as caught:
            call(plugin_methods.plugin_install, state, {"url": source})
        assert caught.value.rpc_code == INVALID_PARAMS and "not accepted" in caught.value.message
    assert call(plugin_methods.plugin_list, state, {}) == []


def test_install_list_remove_over_rpc(tmp_path: Path) -> None:
    with serving({"/echo.wasm": (200, {}, ECHO.read_bytes())}) as base:
        guarded = FakeState({"DRSG_PLUGINS_STORE_DIR": str(tmp_path)})
        with pytest.raises(FetchError, match=r"127\.0\.0\.1 is a private"):
            call(plugin_methods.plugin_install, guarded, {"url": f"{base}/echo.wasm"})
        state = FakeState({"DRSG_PLUGINS_STORE_DIR": str(tmp_path), "DRSG_FETCH_ALLOW_PRIVATE": "127.0.0.1"})
        first = call(plugin_methods.plugin_install, state, {"url": f"{base}/echo.wasm"})
        again = call(plugin_methods.plugin_install, state, {"url": f"{base}/echo.wasm"})
    assert first["replaced"] is None and again["replaced"] == "1.0.0"
    assert first["installed"]["name"] == "echo" and first["installed"]["source"] == f"{base}/echo.wasm"
    assert [p["name"] for p in call(plugin_methods.plugin_list, state, {})] == ["echo"]
    assert call(plugin_methods.plugin_catalog, state, {}) == []
    assert call(plugin_methods.plugin_remove, state, {"name": "echo"})["removed"]["version"] == "1.0.0"
    assert call(plugin_methods.plugin_list, state, {}) == []
