"""`drsg plugin …` through the CLI: install (file and URL), list, show, remove, their output lines,
and one-line errors with the documented exit codes."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import Ran
from tests.support.static_server import serving

PLUGINS = Path(__file__).resolve().parents[1] / "data" / "plugins"
ECHO = PLUGINS / "echo.wat"


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "plugins"
    monkeypatch.setenv("DRSG_PLUGINS_STORE_DIR", str(path))
    monkeypatch.delenv("DRSG_FETCH_ALLOW_PRIVATE", raising=False)
    return path


def test_install_list_show_remove(drsg: Callable[..., Ran], store: Path) -> None:
    assert drsg("plugin", "list").out.startswith("no plugins installed")
    ran = drsg("plugin", "install", str(ECHO))
    assert ran.code == 0
    first, handles = ran.lines()
    assert first.startswith("installed echo@1.0.0  sha256:") and len(first.split("sha256:")[1]) == 12
    assert handles == "  handles: .txt"
    assert drsg("plugin", "install", str(ECHO)).lines()[0].startswith("reinstalled echo@1.0.0")

    header, row = drsg("plugin", "list").lines()
    assert header.split() == ["NAME", "VERSION", "EXTENSIONS", "SHA256", "SOURCE"]
    assert row.split()[:3] == ["echo", "1.0.0", ".txt"] and row.split()[4] == str(ECHO.resolve())
    [record] = drsg("plugin", "list", "--json").json_lines()
    assert record["name"] == "echo" and record["file"] == "echo-1.0.0.wasm" and len(record["sha256"]) == 64

    card = json.loads(drsg("plugin", "show", "echo", "--json").out)
    assert card["extensions"] == [".txt"] and card["vocabulary"] is None
    assert "vocabulary: not declared" in drsg("plugin", "show", "echo").out

    assert drsg("plugin", "remove", "echo").out == "removed echo@1.0.0\n"
    gone = drsg("plugin", "remove", "echo")
    assert gone.code == 1 and gone.err == "error: no plugin named 'echo' is installed (installed: none are installed)\n"


def test_refusals_are_one_line(drsg: Callable[..., Ran], store: Path, tmp_path: Path) -> None:
    refused = drsg("plugin", "install", str(PLUGINS / "fs.wat"))
    assert refused.code == 1 and len(refused.err.splitlines()) == 1
    assert "imports wasi:filesystem/preopens@0.2.0, which is refused" in refused.err
    missing = drsg("plugin", "install", str(tmp_path / "nope.wasm"))
    assert missing.code == 1 and missing.err.startswith("error: cannot read") and "Traceback" not in missing.err
    usage = drsg("plugin", "install")
    assert usage.code == 2 and "plugin install --help" in usage.err
    assert not (store / "registry.toml").exists()


def test_install_from_a_url(drsg: Callable[..., Ran], store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with serving({"/echo.wasm": (200, {}, ECHO.read_bytes())}) as base:
        refused = drsg("plugin", "install", f"{base}/echo.wasm")
        assert refused.code == 1 and "127.0.0.1 is a private, loopback" in refused.err
        monkeypatch.setenv("DRSG_FETCH_ALLOW_PRIVATE", "127.0.0.1/32")
        ran = drsg("plugin", "install", f"{base}/echo.wasm")
    assert ran.code == 0 and ran.lines()[0].startswith("installed echo@1.0.0")
    assert drsg("plugin", "list", "--json").json_lines()[0]["source"] == f"{base}/echo.wasm"


def test_every_plugin_command_has_help(drsg: Callable[..., Ran]) -> None:
    for command in ("install", "list", "show", "remove"):
        ran = drsg("plugin", command, "--help")
        assert ran.code == 0 and len(ran.out.splitlines()) > 3, command
