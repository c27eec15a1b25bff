"""`drsg plugin …` through the CLI: install (file and URL), list, show, remove, their output lines,
and one-line errors with the documented exit codes."""

from __future__ import annotations

import json
import os
import tomllib
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.support.cli import Ran
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
    assert "built in: py@1.0.0  handles: .py .pyi .pyw" in drsg("plugin", "list").out
    ran = drsg("plugin", "install", str(ECHO))
    assert ran.code == 0
    first, handles = ran.lines()
    assert first.startswith("installed echo@1.0.0  sha256:") and len(first.split("sha256:")[1]) == 12
    assert handles == "  handles: .txt"
    assert drsg("plugin", "install", str(ECHO)).lines()[0].startswith("reinstalled echo@1.0.0")

    header, row, builtin = drsg("plugin", "list").lines()
    assert builtin.startswith("built in: py@1.0.0")
    assert header.split() == ["NAME", "VERSION", "EXTENSIONS", "SHA256", "SOURCE"]
    assert row.split()[:3] == ["echo", "1.0.0", ".txt"] and row.split()[4] == str(ECHO.resolve())
    [record] = drsg("plugin", "list", "--json").json_lines()
    assert record["name"] == "echo" and record["file"] == "echo-1.0.0.wasm" and len(record["sha256"]) == 64

    card = json.loads(drsg("plugin", "show", "echo", "--json").out)
    assert card["extensions"] == ["txt"] and card["vocabulary"] is None  # stored without the dot, upstream's
    assert "vocabulary: not declared" in drsg("plugin", "show", "echo").out

    assert drsg("plugin", "remove", "echo").out == "removed echo@1.0.0\n"
    gone = drsg("plugin", "remove", "echo")
    assert gone.code == 1 and gone.err == "error: no plugin named 'echo' is installed (installed: none are installed)\n"


def test_refusals_are_one_line(drsg: Callable[..., Ran], store: Path, tmp_path: Path) -> None:
    refused = drsg("plugin", "install", str(PLUGINS / "sockets.wat"))
    assert refused.code == 1 and len(refused.err.splitlines()) == 1
    assert "imports wasi:sockets/tcp@0.2.0, which is refused" in refused.err
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


def test_a_built_in_handler_shows_its_vocabulary(drsg: Callable[..., Ran], store: Path) -> None:
    shown = drsg("plugin", "show", "py")
    assert shown.code == 0 and shown.lines()[0] == "py@1.0.0 (built in)"
    assert "  edge types: CONTAINS, IMPORTS, EXTENDS, CALLS, REFERENCES" in shown.lines()
    card = json.loads(drsg("plugin", "show", "py", "--json").out)
    assert card["builtin"] is True and "Method" in card["vocabulary"]["labels"]


def test_digest_routes_to_an_installed_plugin_and_refuses_a_tampered_one(
    drsg: Callable[..., Ran], store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.support.fake_openai import FakeOpenAI
    from tests.support.scripted_model import ScriptedModel

    root = tmp_path / "tree"
    root.mkdir()
    (root / "note.txt").write_text("Hello")
    (root / "mod.py").write_text("def f():\n    pass\n")
    assert drsg("plugin", "install", str(ECHO)).code == 0
    with FakeOpenAI(dims=8, api_key="k") as fake:
        ScriptedModel().install(fake)
        chat = ("--chat", fake.base_url, "--model", "m", "--chat-key-env", "ECHO_KEY", "--no-embed")
        monkeypatch.setenv("ECHO_KEY", "k")
        ran = drsg("digest", str(root), "-vvv", *chat)
    assert ran.code == 0, ran.err
    assert any(line.startswith("preprocessed by echo@1.0.0 (") for line in ran.lines())
    assert any(line.startswith("preprocessed by py@1.0.0 (") for line in ran.lines())
    assert "  read note.txt  (echo@1.0.0)" in ran.lines() and "  read mod.py  (py@1.0.0)" in ran.lines()
    installed = store / "echo-1.0.0.wasm"
    installed.write_bytes(installed.read_bytes() + b" ")
    refused = drsg("digest", str(root), "--code-only")
    assert refused.code == 1 and "plugin echo's file" in refused.err and "changed since it was installed" in refused.err


def test_a_tampered_plugin_blocks_only_the_trees_that_hold_its_files(
    drsg: Callable[..., Ran], store: Path, tmp_path: Path
) -> None:
    """Issue #33 item 5: a plugin is verified when a file routes to it, not before every digest."""
    assert drsg("plugin", "install", str(ECHO)).code == 0
    installed = store / "echo-1.0.0.wasm"
    installed.write_bytes(installed.read_bytes() + b" ")
    code = tmp_path / "code"
    code.mkdir()
    (code / "mod.py").write_text("def f():\n    pass\n")
    ran = drsg("digest", str(code), "--code-only", "--apply")
    assert ran.code == 0, ran.err  # no .txt here: the tampered echo is never opened
    assert any(line.startswith("preprocessed by py@1.0.0 (") for line in ran.lines())
    (code / "note.txt").write_text("Hello")
    refused = drsg("digest", str(code), "--code-only", "--apply")
    assert refused.code == 1 and len(refused.err.splitlines()) == 1
    assert "plugin echo's file" in refused.err and "changed since it was installed" in refused.err


def test_a_local_file_has_the_download_cap_and_must_be_regular(
    drsg: Callable[..., Ran], store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue #33 item 24: `plugin install /dev/zero` read until memory ran out (internal error)."""
    from drsg.pipeline.plugins import registry

    fifo = tmp_path / "fifo.wasm"
    os.mkfifo(fifo)  # nobody writes to it: opening it must not wait
    for special in ("/dev/zero", str(fifo)):
        refused = drsg("plugin", "install", special)
        assert (
            refused.code == 1
            and refused.err
            == f"error: {special} is not a regular file; install a plugin from a .wasm file or an http(s) URL\n"
        )
    monkeypatch.setattr(registry, "MAX_DOWNLOAD", ECHO.stat().st_size - 1)  # the cap, made small enough to test
    big = drsg("plugin", "install", str(ECHO))
    assert big.code == 1 and len(big.err.splitlines()) == 1 and "over the" in big.err and "-byte limit" in big.err
    assert not (store / "registry.toml").exists()


def _ipv6_loopback() -> bool:
    import socket

    if not socket.has_ipv6:
        return False
    try:
        with socket.socket(socket.AF_INET6) as probe:
            probe.bind(("::1", 0))
    except OSError:
        return False
    return True


@pytest.mark.skipif(not _ipv6_loopback(), reason="this machine has no IPv6 loopback (::1)")
def test_install_from_an_ipv6_literal_url(
    drsg: Callable[..., Ran], store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue #33 item 24: `http://[::1]/x.wasm` was read as host "::" port 1 ("cannot resolve ::")."""
    import errno

    monkeypatch.setenv("DRSG_FETCH_ALLOW_PRIVATE", "::1/128")
    routes = {"/echo.wasm": (200, {}, ECHO.read_bytes())}
    with serving(routes, host="::1") as base:
        assert base.startswith("http://[::1]:")
        ran = drsg("plugin", "install", f"{base}/echo.wasm")
    assert ran.code == 0, ran.err
    assert drsg("plugin", "list", "--json").json_lines()[0]["source"] == f"{base}/echo.wasm"
    # with no port in the URL, the scheme's: a server on [::1]:80 when it can be had, else the refusal says where
    try:
        with serving(routes, host="::1", port=80):
            ran = drsg("plugin", "install", "http://[::1]/echo.wasm")
        assert ran.code == 0, ran.err
    except OSError as exc:
        assert exc.errno in (errno.EADDRINUSE, errno.EACCES)
        ran = drsg("plugin", "install", "http://[::1]/echo.wasm")
        assert "cannot resolve" not in ran.err and "::1" in ran.err


def test_a_patched_compile_cache_is_recompiled_not_run(
    drsg: Callable[..., Ran], store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue #33 item 23: bytes patched in the compiled code (its old in-file checksum made right) are
    never run — the digest compiles the verified .wasm again and reads the tree as ever."""
    import hashlib

    from tests.support.fake_openai import FakeOpenAI
    from tests.support.scripted_model import ScriptedModel

    assert drsg("plugin", "install", str(ECHO)).code == 0
    [cached] = (store / "cache").iterdir()
    body = bytearray(cached.read_bytes())
    for at in range(len(body) // 3, len(body) // 3 + 64):
        body[at] = 0xCC  # int3 over whatever was there: run, it would stop the process with SIGTRAP
    cached.write_bytes(hashlib.sha256(body[32:]).digest() + bytes(body[32:]))
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "note.txt").write_text("Hello")
    from drsg.pipeline.plugins import sandbox

    monkeypatch.setattr(sandbox, "_compiled", {})  # the digest runs as a new process would: nothing compiled
    with FakeOpenAI(dims=8, api_key="k") as fake:  # the echo plugin leaves prose: a scripted model reads it
        ScriptedModel().install(fake)
        monkeypatch.setenv("ECHO_KEY", "k")
        ran = drsg("digest", str(tree), "--chat", fake.base_url, "--model", "m", "--chat-key-env", "ECHO_KEY")
    assert ran.code == 0, ran.err
    assert ran.lines()[0].startswith("preprocessed by echo@1.0.0 (")
    [entry] = drsg("plugin", "list", "--json").json_lines()
    assert "compiled_sha256" not in entry  # the pin is drsg's bookkeeping, not part of the record
    pinned = tomllib.loads((store / "registry.toml").read_text())["plugin"][0]["compiled_sha256"]
    assert hashlib.sha256(cached.read_bytes()).hexdigest() == pinned  # rewritten, and pinned again
