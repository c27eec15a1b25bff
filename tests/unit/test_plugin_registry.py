"""The plugin registry: install, upgrade, reinstall, conflicts, the name rule, remove, load's checks,
registry.toml's format, and the compile cache (a second process loads from disk, a bad cache file is
recompiled)."""

from __future__ import annotations

import hashlib
import time
import tomllib
from pathlib import Path

import pytest

from drsg.kernel.errors import NotFound, PluginError
from drsg.kernel.settings import load as load_settings
from drsg.pipeline.code.handler import SourceTree
from drsg.pipeline.plugins import sandbox
from drsg.pipeline.plugins.host import Budget
from drsg.pipeline.plugins.registry import Entry, Registry, render, store_dir

PLUGINS = Path(__file__).resolve().parents[1] / "data" / "plugins"
ECHO = (PLUGINS / "echo.wat").read_text()


def variant(old: str, new: str) -> bytes:
    """The echo plugin with its static text changed in place (same lengths: the offsets stay right)."""
    assert len(old) == len(new) and old in ECHO
    return ECHO.replace(old, new).encode()


ECHO_101 = variant('"echo1.0.0.txt', '"echo1.0.1.txt')  # an upgrade
ECH2 = variant('"echo1.0.0.txt', '"ech21.0.0.txt')  # another plugin claiming .txt
BAD_NAME = variant('"echo1.0.0.txt', '"Ech!1.0.0.txt')


@pytest.fixture
def registry(tmp_path: Path) -> Registry:
    return Registry(tmp_path / "store", Budget(timeout_s=10))


def test_install_list_show_remove(registry: Registry) -> None:
    installed = registry.install(ECHO.encode(), "/src/echo.wat")
    digest = hashlib.sha256(ECHO.encode()).hexdigest()
    assert installed.lines == [f"installed echo@1.0.0  sha256:{digest[:12]}", "  handles: .txt"]
    assert installed.replaced is None
    [entry] = registry.entries()
    cache = sandbox.cache_path(registry.cache_dir, digest)
    compiled = hashlib.sha256(cache.read_bytes()).hexdigest()  # the compile cache, pinned at install
    assert entry == Entry(
        "echo", "1.0.0", "echo-1.0.0.wasm", digest, "/src/echo.wat", ("txt",), None, cache.name, compiled
    )
    assert (registry.root / "echo-1.0.0.wasm").read_bytes() == ECHO.encode()
    table = tomllib.loads((registry.root / "registry.toml").read_text())
    assert table["plugin"] == [
        {
            "name": "echo",
            "version": "1.0.0",
            "file": "echo-1.0.0.wasm",
            "sha256": digest,
            "source": "/src/echo.wat",
            "extensions": ["txt"],  # upstream's form: without the dot (echo.wat, an older build, says ".txt")
            "compiled": cache.name,
            "compiled_sha256": compiled,
        }
    ]
    assert "compiled" not in entry.to_json() and "compiled_sha256" not in entry.to_json()
    card = registry.show("echo")
    assert card["vocabulary"] is None and "not declared" in card["vocabulary_note"]
    assert card["imports"] == [{"interface": sandbox.HOST, "grant": "drsg's tree: list, read, label"}]
    assert registry.load("echo").manifest.ident == "echo@1.0.0"
    assert registry.remove("echo") == entry
    assert registry.entries() == [] and not (registry.root / "echo-1.0.0.wasm").exists()
    with pytest.raises(NotFound, match="no plugin named 'echo' is installed"):
        registry.remove("echo")


def test_reinstall_and_upgrade(registry: Registry) -> None:
    registry.install(ECHO.encode(), "a")
    again = registry.install(ECHO.encode(), "a")
    assert again.lines[0].startswith("reinstalled echo@1.0.0  sha256:")
    upgraded = registry.install(ECHO_101, "b")
    assert upgraded.lines[0].startswith("installed echo@1.0.1 (replacing 1.0.0)  sha256:")
    assert upgraded.replaced is not None and upgraded.replaced.version == "1.0.0"
    assert [(e.name, e.version, e.source) for e in registry.entries()] == [("echo", "1.0.1", "b")]
    assert not (registry.root / "echo-1.0.0.wasm").exists() and (registry.root / "echo-1.0.1.wasm").exists()


def test_an_extension_conflict_names_both_and_changes_nothing(registry: Registry) -> None:
    registry.install(ECHO.encode(), "a")
    before = (registry.root / "registry.toml").read_bytes()
    with pytest.raises(
        PluginError, match=r"plugin ech2 claims \.txt, already claimed by installed plugin echo@1\.0\.0"
    ):
        registry.install(ECH2, "b")
    assert (registry.root / "registry.toml").read_bytes() == before
    assert not (registry.root / "ech2-1.0.0.wasm").exists()


def test_the_name_rule(registry: Registry) -> None:
    with pytest.raises(PluginError, match=r"plugin 'Ech!' .* use \[a-z0-9_-\]\+"):
        registry.install(BAD_NAME, "bad.wat")
    assert registry.entries() == []


def test_not_a_component_is_refused(registry: Registry) -> None:
    with pytest.raises(PluginError, match=r"plugin x.wasm is not a WebAssembly component"):
        registry.install(b"\0asm\x01\0\0\0", "x.wasm")  # a core module, not a component


def test_a_changed_artifact_is_refused_at_load(registry: Registry) -> None:
    registry.install(ECHO.encode(), "/src/echo.wat")
    path = registry.root / "echo-1.0.0.wasm"
    path.write_bytes(path.read_bytes() + b"\n;; one more line")
    with pytest.raises(PluginError) as caught:
        registry.load("echo")
    message = caught.value.message
    assert "changed since it was installed" in message
    assert "reinstall it with `drsg plugin install /src/echo.wat`" in message
    card = registry.show("echo")  # the card still shows; what the changed file imports is not known
    assert card["imports"] is None and "changed since it was installed" in card["imports_note"]


def test_load_re_asks_describe(registry: Registry) -> None:
    """A registry entry that no longer matches what the file describes (edited by hand) is refused."""
    registry.install(ECHO.encode(), "a")
    text = (registry.root / "registry.toml").read_text().replace('extensions = ["txt"]', 'extensions = ["md"]')
    (registry.root / "registry.toml").write_text(text)
    with pytest.raises(PluginError, match=r"now describes itself as echo@1.0.0 claiming \.txt, not as installed"):
        registry.load("echo")


def test_registry_toml_round_trips_odd_text(tmp_path: Path) -> None:
    entry = Entry("x", "1", "x-1.wasm", "ab" * 32, 'C:\\path "quoted" ünï\tcode', ("a", "b"), "logo\nline")
    registry = Registry(tmp_path)
    tmp_path.joinpath("registry.toml").write_text(render([entry, entry]))
    assert registry.entries() == [entry, entry]


def test_a_dotted_registry_is_read_without_the_dot_and_still_loads(registry: Registry) -> None:
    """A registry.toml an older drsg wrote (extensions = [".txt"]) keeps working: read as "txt", the
    plugin loads and routes as .txt, and the next write stores upstream's form."""
    registry.install(ECHO.encode(), "a")
    path = registry.root / "registry.toml"
    path.write_text(path.read_text().replace('extensions = ["txt"]', 'extensions = [".txt"]'))
    [entry] = registry.entries()
    assert entry.extensions == ("txt",) and entry.shown == ".txt" and entry.to_json()["extensions"] == ["txt"]
    assert registry.load("echo").manifest.extensions == (".txt",)
    assert [handler.manifest.extensions for handler in registry.pending()] == [(".txt",)]
    with pytest.raises(PluginError, match=r"plugin ech2 claims \.txt, already claimed"):
        registry.install(ECH2, "b")  # the conflict check matches the migrated claim
    registry.install(ECHO_101, "c")
    assert 'extensions = ["txt"]' in path.read_text()


@pytest.mark.parametrize(("claim", "shown"), [("ftxt", ".ftxt"), (".txt", ".txt")])
def test_a_claim_without_the_dot_is_upstreams_and_a_dotted_one_is_normalised(
    registry: Registry, claim: str, shown: str
) -> None:
    installed = registry.install(variant('"echo1.0.0.txt', f'"echo1.0.0{claim}'), "a")
    assert installed.lines[1] == f"  handles: {shown}"
    assert installed.entry.extensions == (shown[1:],)


@pytest.mark.parametrize("claim", [".TXT", "Ftxt", "a/bc", "a.bc", ".t x"])
def test_a_claim_that_is_not_an_extension_is_refused(registry: Registry, claim: str) -> None:
    with pytest.raises(PluginError, match=r"claims extension .*; a claim is lowercase .* without the dot \(rs"):
        registry.install(variant('"echo1.0.0.txt', f'"echo1.0.0{claim}'), "a")
    assert registry.entries() == []


def test_store_dir_defaults_to_xdg(tmp_path: Path) -> None:
    settings = load_settings(environ={})
    assert store_dir(settings, {"XDG_DATA_HOME": str(tmp_path)}) == tmp_path / "drsg" / "plugins"
    assert store_dir(settings, {}) == Path.home() / ".local" / "share" / "drsg" / "plugins"
    configured = load_settings(environ={"DRSG_PLUGINS_STORE_DIR": str(tmp_path / "mine")})
    assert store_dir(configured) == tmp_path / "mine"


def test_the_compile_cache(registry: Registry, monkeypatch: pytest.MonkeyPatch) -> None:
    """Compiled once; a new process (the in-memory table emptied) loads from disk without compiling;
    a damaged cache file is discarded and recompiled, never deserialized."""
    data = ECHO.encode()
    monkeypatch.setattr(sandbox, "_compiled", {})
    stats = sandbox.STATS
    compiled = stats.compiled
    start = time.perf_counter()
    registry.install(data, "a")
    compile_s = time.perf_counter() - start
    assert stats.compiled == compiled + 1
    cached = sandbox.cache_path(registry.cache_dir, hashlib.sha256(data).hexdigest())
    assert cached.is_file()

    monkeypatch.setattr(sandbox, "_compiled", {})  # as if a new process
    from_disk = stats.from_disk
    start = time.perf_counter()
    handler = registry.load("echo")
    load_s = time.perf_counter() - start
    assert stats.compiled == compiled + 1 and stats.from_disk == from_disk + 1
    assert load_s < compile_s  # measured, not assumed: the README quotes the figures
    tree = SourceTree(PLUGINS, ["echo.wat"])
    assert handler.parse(tree, ("echo.wat",), []).startswith(b";; echo@1.0.0")

    good = cached.read_bytes()
    raw = bytearray(good)
    raw[-100] ^= 0xFF  # damage the compiled code: no longer the file the registry pinned
    cached.write_bytes(bytes(raw))
    monkeypatch.setattr(sandbox, "_compiled", {})
    registry.load("echo")
    assert stats.compiled == compiled + 2  # recompiled instead of trusting the file
    [entry] = registry.entries()
    assert hashlib.sha256(cached.read_bytes()).hexdigest() == entry.compiled_sha256  # rewritten, and pinned


def test_a_swapped_compile_cache_never_runs(registry: Registry, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue #33 item 23: the cache is native code. One whose in-file checksum is right but which is not
    the file the registry pinned — here another plugin's compiled code, checksummed as drsg once wrote
    it — is never deserialized: the verified .wasm is compiled again, and the pin follows it."""
    data = ECHO.encode()
    registry.install(data, "a")
    cached = sandbox.cache_path(registry.cache_dir, hashlib.sha256(data).hexdigest())
    impostor = bytes(sandbox.wc.Component(sandbox.engine(), ECH2).serialize())
    cached.write_bytes(hashlib.sha256(impostor).digest() + impostor)  # what the old in-file check accepted
    monkeypatch.setattr(sandbox, "_compiled", {})  # as if a new process
    stats = sandbox.STATS
    compiled, from_disk = stats.compiled, stats.from_disk
    handler = registry.load("echo")  # the impostor would describe itself as ech2: refused as changed
    assert handler.manifest.ident == "echo@1.0.0"
    assert handler.parse(SourceTree(PLUGINS, ["echo.wat"]), ("echo.wat",), []).startswith(b";; echo@1.0.0")
    assert (stats.compiled, stats.from_disk) == (compiled + 1, from_disk)  # compiled, never read from the file
    assert hashlib.sha256(cached.read_bytes()).hexdigest() == registry.entries()[0].compiled_sha256

    cached.write_bytes(b"")  # a truncated one alike
    monkeypatch.setattr(sandbox, "_compiled", {})
    assert registry.load("echo").manifest.ident == "echo@1.0.0" and stats.compiled == compiled + 2


def test_a_registry_naming_a_path_elsewhere_is_refused(registry: Registry, tmp_path: Path) -> None:
    registry.install(ECHO.encode(), "a")
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    text = (registry.root / "registry.toml").read_text().replace('"echo-1.0.0.wasm"', '"../victim.txt"')
    (registry.root / "registry.toml").write_text(text)
    with pytest.raises(PluginError, match=r"names file '../victim.txt', which is not a file name"):
        registry.remove("echo")
    assert victim.read_text() == "keep me"
