"""Components built the standard way load, run and get nothing (issue #39, item 1).

``build/plugins/probe.wasm`` is wasi-libc C (getenv, fopen, the clocks, getentropy, printf) made a
component through jco's preview1 adapter (``make plugins``; plugins/probe/probe.c), so it imports the
``wasi:cli/io/clocks/random/filesystem@0.2.x`` interfaces such toolchains plant. It installs, runs
through a real digest, and what it reads is empty, frozen or fixed, and what it prints reaches no one
unless a call fails: then the end of its stderr ends the error, and all of the tail shows at -v.
``probe_sockets.wasm`` adds a ``wasi:sockets`` import: refused by name, nothing written.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from collections.abc import Iterator, MutableMapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import structlog

from drsg.kernel.errors import PluginError
from drsg.pipeline.code.handler import SourceTree
from drsg.pipeline.plugins import wasi
from drsg.pipeline.plugins.host import Budget
from tests.support.cli import Drsg
from tests.support.wasm_plugin import ComponentPlugin, built_plugin

PRINTED = "probe: stdout from the plugin"
#: what wasi-libc plus jco's preview1 adapter import, by family (their version: the adapter's 0.2.x)
PLANTED = {
    "cli/environment",
    "cli/exit",
    "cli/stdin",
    "cli/stdout",
    "cli/stderr",
    "cli/terminal-input",
    "cli/terminal-output",
    "cli/terminal-stdin",
    "cli/terminal-stdout",
    "cli/terminal-stderr",
    "io/error",
    "io/streams",
    "clocks/wall-clock",
    "clocks/monotonic-clock",
    "random/random",
    "filesystem/types",
    "filesystem/preopens",
}


@pytest.fixture(scope="module")
def probe() -> Path:
    return built_plugin("probe")


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "plugins"
    monkeypatch.setenv("DRSG_PLUGINS_STORE_DIR", str(path))
    monkeypatch.delenv("DRSG_PLUGINS_WASI", raising=False)
    return path


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "tree"
    root.mkdir()
    (root / "a.probe").write_text("alpha\n")
    (root / "b.probe").write_text("beta beta\n")
    return root


def test_the_adapter_plants_the_wasi_families(probe: Path) -> None:
    imports = ComponentPlugin(probe).imports()
    assert "drsg:preprocess/host@1.0.0" in imports
    families = {wasi.family(name) for name in imports if name.startswith("wasi:")}
    assert families == PLANTED


def test_it_installs_shows_its_grants_and_digests_getting_nothing(
    drsg: Drsg, store: Path, probe: Path, tree: Path, db_path: Path
) -> None:
    installed = drsg("plugin", "install", str(probe))
    assert installed.code == 0, installed.err
    first, handles, granted = installed.lines()
    assert first.startswith("installed probe@1.0.0  sha256:") and handles == "  handles: .probe"
    assert granted.startswith("  wasi:    cli/environment cli/exit ") and " @0.2." in granted
    assert granted.endswith(", granted inert (`drsg plugin show probe`)")

    card = json.loads(drsg("plugin", "show", "probe", "--json").out)
    assert card["extensions"] == ["probe"]
    grants = {item["interface"].split("@")[0]: item["grant"] for item in card["imports"]}
    assert grants["wasi:cli/environment"] == "inert: empty (no variables, arguments or working directory)"
    assert grants["wasi:filesystem/preopens"] == "inert: no directories"
    assert grants["wasi:cli/stdout"] == "inert: discarded"
    assert grants["wasi:cli/stderr"].startswith("kept: shown when a call fails")
    assert grants["wasi:clocks/wall-clock"].startswith("frozen")
    assert len(grants) == len(PLANTED) + 1  # and drsg's host
    shown = drsg("plugin", "show", "probe").out
    assert "  imports:\n" in shown and "    wasi:filesystem/preopens@0.2." in shown and "inert: no directories" in shown

    # a real `drsg digest` in its own process, its environment full: the plugin gets none of it,
    # and what it prints reaches neither of drsg's streams
    env = {**os.environ, "DRSG_PLUGINS_STORE_DIR": str(store), "HOME": str(tree), "SECRET_KEY": "s3cret"}
    command = [str(Path(sys.executable).parent / "drsg"), "--db", str(db_path), "digest", str(tree)]
    ran = subprocess.run(
        [*command, "--code-only", "--apply", "-p", "probes"], env=env, capture_output=True, text=True, timeout=120
    )
    assert ran.returncode == 0, ran.stderr
    assert PRINTED not in ran.stdout + ran.stderr and "stderr from the plugin" not in ran.stdout + ran.stderr
    got = [drsg("get", f"@{name}", "--plane", "probes", "--json") for name in ("a.probe", "b.probe")]
    assert [g.code for g in got] == [0, 0], (ran.stdout, got)
    facts = [json.loads(g.out) for g in got]
    for fact, size in zip(facts, (6, 10), strict=True):
        props = fact["properties"]
        assert props["bytes"] == size  # it still reads its file through drsg's host
        assert props["env_home"] == 0 and props["environ"] == 0  # empty environment
        assert props["open_ok"] == 0 and props["open_errno"] != 0  # no directories: open fails
        assert props["wall_s"] == 0 and props["mono_ns"] == 0  # frozen clocks
        assert props["random"] == b"drsg".hex() * 4 and props["entropy_rc"] == 0  # fixed entropy
        assert props["printed"] == len(PRINTED) + 1  # printf succeeded: the output went nowhere


def test_runs_are_deterministic_and_exit_is_a_clean_error(probe: Path, tree: Path) -> None:
    plugin = ComponentPlugin(probe, Budget(timeout_s=30))
    source = SourceTree(tree, ["a.probe", "b.probe"])
    first = plugin.parse(source, ["a.probe"])
    assert ComponentPlugin(probe).parse(source, ["a.probe"]) == first  # another instance, the same bytes
    with pytest.raises(PluginError) as caught:
        plugin.parse(source, ["a.probe"], [("exit", "3")])
    message = caught.value.message
    # exit(3) reaches the host as wasi:cli/exit's err (the preview1 adapter keeps no code): no made-up code
    assert message.startswith("plugin probe exited with an error status (") and "parse() of a.probe" in message
    assert "exit(1)" not in message and "exit(3)" not in message
    exit_import = {"wasi:cli/exit@0.2.6": frozenset({"exit", "exit-with-code"})}  # the unstable one carries it
    assert wasi.exit_carries_code(exit_import) and wasi.exited(3, True) == "called exit(3)"
    assert not wasi.exit_carries_code({"wasi:cli/exit@0.2.6": frozenset({"exit"})})
    assert "\n" not in message
    assert plugin.parse(source, ["b.probe"]) != first and plugin.parse(source, ["a.probe"]) == first  # unharmed


@contextmanager
def logged() -> Iterator[list[MutableMapping[str, Any]]]:
    """Every event logged meanwhile, at any level: opening a Database configures warning when structlog
    is unconfigured (store/database.py, a library's quiet default), and earlier tests here open one."""
    before = structlog.get_config()
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.DEBUG))
    try:
        with structlog.testing.capture_logs() as logs:
            yield logs
    finally:
        structlog.configure(**before)


def test_a_failing_call_ends_its_error_with_what_the_plugin_wrote_to_stderr(probe: Path, tree: Path) -> None:
    plugin = ComponentPlugin(probe, Budget(timeout_s=30))
    source = SourceTree(tree, ["a.probe"])
    with logged() as logs:
        plugin.parse(source, ["a.probe"])  # it writes to stderr on success too: shown nowhere
    assert [e for e in logs if e["event"] == "plugin_stderr"] == []
    for options, last in (([("fail", "3")], "probe: giving up"), ([("exit", "3")], "probe: exiting with 3")):
        with logged() as logs, pytest.raises(PluginError) as caught:
            plugin.parse(source, ["a.probe"], options)
        message = caught.value.message
        assert "\n" not in message and message.endswith(f"; its stderr ended: {last}"), message
        (shown,) = [e for e in logs if e["event"] == "plugin_stderr"]  # all of it, at -v
        assert shown["log_level"] == "info" and shown["plugin"] == "probe" and shown["where"] == "parse() of a.probe"
        assert shown["stderr"].endswith(last)
    assert shown["stderr"] == "probe: exiting with 3"  # the call's own output only, not an earlier call's
    with logged() as logs, pytest.raises(PluginError):
        plugin.parse(source, ["a.probe"], [("fail", "1000")])
    (shown,) = [e for e in logs if e["event"] == "plugin_stderr"]
    lines = shown["stderr"].splitlines()
    assert len(shown["stderr"].encode()) <= wasi.STDERR_TAIL and lines[-1] == "probe: giving up"
    assert lines[0].startswith("probe: line ") and lines[-2] == "probe: line 1000 of 1000 before failing"


def test_the_plugins_stderr_shows_at_v_when_a_digest_fails_on_it(
    drsg: Drsg, store: Path, probe: Path, tree: Path, tmp_path: Path
) -> None:
    assert drsg("plugin", "install", str(probe)).code == 0
    config = tmp_path / "drsg.toml"
    config.write_text("[plugins.probe]\nfail = 3\n")
    quiet = drsg("--config", str(config), "digest", str(tree), "--code-only", "--apply", "-p", "probes")
    assert quiet.code == 1 and quiet.err.strip().endswith("its stderr ended: probe: giving up"), quiet.err
    assert "line 1 of 3" not in quiet.err
    loud = drsg("-v", "--config", str(config), "digest", str(tree), "--code-only", "--apply", "-p", "probes")
    assert loud.code == 1 and "probe: line 1 of 3 before failing" in loud.err, loud.err
    assert drsg("plane", "list").out.count("probes") == 0  # nothing written


def test_a_sockets_import_is_refused_by_name_and_nothing_is_written(drsg: Drsg, store: Path) -> None:
    refused = drsg("plugin", "install", str(built_plugin("probe_sockets")))
    assert refused.code == 1 and len(refused.err.splitlines()) == 1
    assert "imports wasi:sockets/instance-network@0.2." in refused.err and "it would reach the network" in refused.err
    assert not (store / "registry.toml").exists() and not list(store.glob("*.wasm"))


def test_strict_mode_refuses_the_filesystem_import(
    drsg: Drsg, store: Path, probe: Path, tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DRSG_PLUGINS_WASI", "strict")
    refused = drsg("plugin", "install", str(probe))
    assert refused.code == 1 and len(refused.err.splitlines()) == 1
    assert "imports wasi:filesystem/preopens@0.2." in refused.err and '[plugins] wasi = "strict"' in refused.err
    assert not (store / "registry.toml").exists()
    # installed under inert, then loaded under strict: refused where it routes, naming the setting
    monkeypatch.setenv("DRSG_PLUGINS_WASI", "inert")
    assert drsg("plugin", "install", str(probe)).code == 0
    monkeypatch.setenv("DRSG_PLUGINS_WASI", "strict")
    digest = drsg("digest", str(tree), "--code-only")
    assert digest.code == 1 and '[plugins] wasi = "strict"' in digest.err
    bad = drsg("plugin", "list", "--json")
    assert bad.code == 0  # listing reads the registry only
    monkeypatch.setenv("DRSG_PLUGINS_WASI", "lax")
    wrong = drsg("plugin", "list")
    assert wrong.code == 2 and "plugins.wasi" in wrong.err and "inert" in wrong.err
