"""Components built the standard way load, run and get nothing (issue #39, item 1).

``build/plugins/probe.wasm`` is wasi-libc C (getenv, fopen, the clocks, getentropy, printf) made a
component through jco's preview1 adapter (``make plugins``; plugins/probe/probe.c), so it imports the
``wasi:cli/io/clocks/random/filesystem@0.2.x`` interfaces such toolchains plant. It installs, runs
through a real digest, and what it reads is empty, frozen or fixed, and what it prints reaches no one.
``probe_sockets.wasm`` adds a ``wasi:sockets`` import: refused by name, nothing written.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

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
    assert message.startswith("plugin probe called exit(") and "parse() of a.probe" in message
    assert "\n" not in message
    assert plugin.parse(source, ["b.probe"]) != first and plugin.parse(source, ["a.probe"]) == first  # unharmed


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
