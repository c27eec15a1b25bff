"""The installed plugins: ``registry.toml`` and the ``<name>-<version>.wasm`` files beside it.

Upstream's layout and flow (``drsg plugin install``): the artifact is compiled, its imports checked,
``describe()`` asked; the name must match ``[a-z0-9_-]+`` and no other installed plugin may claim one
of its extensions (an error naming both: nothing is asked, nothing is replaced); the same name is an
upgrade. The file is stored via a temporary file and a rename, then ``registry.toml`` the same way::

    [[plugin]]
    name = "rust"
    version = "2"
    file = "rust-2.wasm"
    sha256 = "…"
    source = "https://…/rust.wasm"
    extensions = ["rs"]                     # without the dot, as upstream's manifest; shown as .rs
    logo = "…"            # only when the plugin gives one
    compiled = "<cache file name>"          # drsg's own: the compile cache and its pin
    compiled_sha256 = "…"

Loading re-hashes the file (a changed file is refused) and asks ``describe()`` again, which must still
answer the recorded name, version and extensions. A registry an older drsg wrote (``[".rs"]``) is
read as ``["rs"]`` and written so at the next change. The compiled form cached under ``cache/`` is native
code, trusted by wasmtime: it is used only when its SHA-256 is the ``compiled_sha256`` recorded here
when drsg wrote it; otherwise the verified ``.wasm`` is compiled again and the pin rewritten. A lock
file serialises installs and removals across processes.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import hashlib
import json
import os
import re
import stat
import threading
import tomllib
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from drsg.kernel.errors import NotFound, PluginError
from drsg.kernel.files import write_atomic
from drsg.kernel.settings import Settings
from drsg.pipeline.code.handler import Handler, Manifest, Options, Output, SourceTree, Subject
from drsg.pipeline.fetch.guard import Network, download
from drsg.pipeline.plugins import sandbox
from drsg.pipeline.plugins.host import Budget, PluginHandler, bare_extension, shown_extensions

REGISTRY_FILE = "registry.toml"
#: the largest plugin artifact downloaded (upstream's cap)
MAX_DOWNLOAD = 256 << 20
CACHE_DIR = "cache"
NAME = re.compile(r"[a-z0-9_-]+")
VERSION = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]{0,63}")  # it becomes part of a file name
FILE = re.compile(r"[a-z0-9_-]+-[A-Za-z0-9][A-Za-z0-9._+-]{0,63}\.wasm")
#: what ``plugin show`` can say of the labels and edge types a plugin emits: a component declares none
VOCABULARY_NOTE = (
    "not declared: a WebAssembly plugin's labels, edge types and properties are known only from what it "
    "emits when it runs (see the plugin's own documentation)"
)


def store_dir(settings: Settings, environ: dict[str, str] | None = None) -> Path:
    """``[plugins] store_dir``, else ``$XDG_DATA_HOME/drsg/plugins``, else ``~/.local/share/drsg/plugins``."""
    configured = settings.text("plugins.store_dir")
    if configured:
        return Path(configured).expanduser()
    env = os.environ if environ is None else environ
    base = env.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "drsg" / "plugins"


def is_url(source: str) -> bool:
    return source.startswith(("http://", "https://"))


@dataclass(frozen=True)
class Entry:
    """One ``[[plugin]]`` of ``registry.toml``; :meth:`to_json` is the record ``plugin.list`` answers."""

    name: str
    version: str
    file: str
    sha256: str
    source: str
    extensions: tuple[str, ...]  # without the dot: "rs"
    logo: str | None = None
    compiled: str | None = None  # the compile cache's file name, and the SHA-256 it had when drsg wrote it
    compiled_sha256: str | None = None

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["extensions"] = list(self.extensions)
        if self.logo is None:
            del out["logo"]
        del out["compiled"], out["compiled_sha256"]  # drsg's own bookkeeping, not upstream's record
        return out

    @property
    def shown(self) -> str:
        """The extensions as a user reads them: ``.rs .ron``."""
        return " ".join(shown_extensions(self.extensions))

    def pin(self, digest: str) -> str | None:
        """The compile cache's pinned SHA-256, when it is for this wasmtime and this artifact."""
        return self.compiled_sha256 if self.compiled == sandbox.cache_name(digest) else None


@dataclass
class Installed:
    """What an install did: the entry, the one it replaced (if any), and the lines to print."""

    entry: Entry
    replaced: Entry | None
    lines: list[str] = field(default_factory=list)


class Registry:
    """The plugin store at ``root``; nothing is created until something is installed."""

    def __init__(self, root: Path, budget: Budget | None = None) -> None:
        self.root = root
        self.budget = budget or Budget()

    @classmethod
    def from_settings(cls, settings: Settings) -> Registry:
        return cls(store_dir(settings), Budget.from_settings(settings))

    @property
    def cache_dir(self) -> Path:
        return self.root / CACHE_DIR

    # ------------------------------------------------------------------------------------ reading

    def entries(self) -> list[Entry]:
        path = self.root / REGISTRY_FILE
        try:
            table = tomllib.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return []
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
            raise PluginError(f"cannot read the plugin registry {path}: {exc}") from None
        out = []
        for i, raw in enumerate(table.get("plugin", [])):
            try:
                out.append(
                    Entry(
                        str(raw["name"]),
                        str(raw["version"]),
                        str(raw["file"]),
                        str(raw["sha256"]),
                        str(raw.get("source", "")),
                        tuple(_stored(str(ext)) for ext in raw.get("extensions", [])),
                        None if raw.get("logo") is None else str(raw["logo"]),
                        None if raw.get("compiled") is None else str(raw["compiled"]),
                        None if raw.get("compiled_sha256") is None else str(raw["compiled_sha256"]),
                    )
                )
            except (KeyError, TypeError) as exc:
                raise PluginError(f"the plugin registry {path} has a [[plugin]] #{i + 1} without {exc}") from None
            if not FILE.fullmatch(out[-1].file):  # it is read, and unlinked on remove: never a path elsewhere
                raise PluginError(f"the plugin registry {path} names file {out[-1].file!r}, which is not a file name")
        return out

    def get(self, name: str) -> Entry:
        for entry in self.entries():
            if entry.name == name:
                return entry
        known = ", ".join(entry.name for entry in self.entries()) or "none are installed"
        raise NotFound(f"no plugin named {name!r} is installed (installed: {known})")

    def show(self, name: str) -> dict[str, Any]:
        entry = self.get(name)
        out = entry.to_json()
        out["path"] = str(self.root / entry.file)
        try:
            grants = self.load(name).grants
        except PluginError as exc:  # the card still shows; what it imports is not known
            out["imports"], out["imports_note"] = None, exc.message
        else:
            out["imports"] = [{"interface": interface, "grant": grant} for interface, grant in grants]
        out["vocabulary"] = None
        out["vocabulary_note"] = VOCABULARY_NOTE
        return out

    def pending(self) -> list[Handler]:
        """Every installed plugin as a handler that routes by what the registry recorded and is
        loaded (verified) only when a file routes to it: a tampered plugin blocks only its own files."""
        return [_Pending(self, entry) for entry in self.entries()]

    def load(self, name: str) -> PluginHandler:
        """The installed plugin, re-hashed and re-described; refused if either no longer matches."""
        entry = self.get(name)
        path = self.root / entry.file
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise PluginError(
                f"plugin {name}'s file {path} cannot be read ({exc.strerror or exc}); "
                f"reinstall it with `drsg plugin install {entry.source}`"
            ) from None
        digest = hashlib.sha256(data).hexdigest()
        if digest != entry.sha256:
            raise PluginError(
                f"plugin {name}'s file {path} changed since it was installed (sha256 {digest[:12]}, "
                f"installed {entry.sha256[:12]}); reinstall it with `drsg plugin install {entry.source}`"
            )
        pinned = entry.pin(digest)
        component, now = sandbox.compile_pinned(data, name, self.cache_dir, pinned)
        if now is not None and now != pinned:
            self._pin(name, digest, now)
        handler = PluginHandler(component, name, self.budget, digest)
        manifest = handler.manifest
        described = (manifest.name, manifest.version, manifest.extensions)
        if described != (entry.name, entry.version, shown_extensions(entry.extensions)):
            raise PluginError(
                f"plugin {name} now describes itself as {manifest.ident} claiming {' '.join(manifest.extensions)}, "
                f"not as installed ({entry.name}@{entry.version} claiming {entry.shown}); "
                f"reinstall it with `drsg plugin install {entry.source}`"
            )
        return handler

    # ------------------------------------------------------------------------------------ writing

    def install(self, data: bytes, source: str) -> Installed:
        """Check, store and record the component ``data`` (from ``source``: a path or a URL)."""
        label = Path(source).name or source
        self.root.mkdir(parents=True, exist_ok=True, mode=0o700)
        component, compiled = sandbox.compile_pinned(data, label, self.cache_dir, None)
        checked = PluginHandler(component, label, self.budget)  # imports, exports, describe()
        manifest = checked.manifest
        name, version = manifest.name, manifest.version
        if not NAME.fullmatch(name):
            raise PluginError(f"plugin {name!r} ({source}) has a name drsg does not take: use [a-z0-9_-]+")
        if not VERSION.fullmatch(version):
            raise PluginError(f"plugin {name} has version {version!r}; a version is letters, digits and . _ + -")
        if not manifest.extensions:
            raise PluginError(f"plugin {name} claims no extensions, so it would never be used")
        digest = hashlib.sha256(data).hexdigest()
        claims = tuple(_stored(ext) for ext in manifest.extensions)
        with self._locked():
            entries = self.entries()
            old = next((entry for entry in entries if entry.name == name), None)
            for other in entries:
                shared = sorted(set(other.extensions) & set(claims))
                if other.name != name and shared:
                    raise PluginError(
                        f"plugin {name} claims {' '.join(shown_extensions(shared))}, already claimed by installed "
                        f"plugin {other.name}@{other.version}; remove it first with `drsg plugin remove {other.name}`"
                    )
            entry = Entry(
                name,
                version,
                f"{name}-{version}.wasm",
                digest,
                source,
                claims,
                manifest.logo,
                None if compiled is None else sandbox.cache_name(digest),
                compiled,
            )
            write_atomic(self.root / entry.file, data)
            self._write([entry if e.name == name else e for e in entries] if old else [*entries, entry])
            if old is not None and old.file != entry.file:
                (self.root / old.file).unlink(missing_ok=True)
        short = f"sha256:{digest[:12]}"
        if old is None:
            first = f"installed {manifest.ident}  {short}"
        elif old.sha256 == digest and old.version == version:
            first = f"reinstalled {manifest.ident}  {short}"
        else:
            first = f"installed {manifest.ident} (replacing {old.version})  {short}"
        lines = [first, f"  handles: {' '.join(manifest.extensions)}"]
        granted = [interface.removeprefix("wasi:") for interface, _ in checked.grants if interface.startswith("wasi:")]
        versions = {interface.rpartition("@")[2] for interface in granted}
        if len(versions) == 1:  # one toolchain's family: its version said once
            granted = [interface.rpartition("@")[0] for interface in granted]
        if granted:
            at = f" @{versions.pop()}" if len(versions) == 1 else ""
            lines.append(f"  wasi:    {' '.join(granted)}{at}, granted inert (`drsg plugin show {name}`)")
        return Installed(entry, old, lines)

    def install_file(self, path: Path) -> Installed:
        """Install the component in the local file ``path``, read under the same cap as a download."""
        return self.install(read_artifact(path), str(path.resolve()))

    def install_url(self, url: str, allow_private: tuple[Network, ...] = ()) -> Installed:
        """Download ``url`` through the fetch guard (http(s), the address policy, the size cap), then install."""
        return self.install(download(url, max_bytes=MAX_DOWNLOAD, allow_private=allow_private).body, url)

    def remove(self, name: str) -> Entry:
        with self._locked():
            entry = self.get(name)
            self._write([e for e in self.entries() if e.name != name])
            (self.root / entry.file).unlink(missing_ok=True)
            sandbox.drop_cache(self.cache_dir, entry.sha256)
        return entry

    def _pin(self, name: str, digest: str, compiled: str) -> None:
        """Record the compile cache just written for plugin ``name`` (best effort: unrecorded, the next
        process compiles again rather than trust the file)."""
        with contextlib.suppress(OSError), self._locked():
            entries = self.entries()
            self._write(
                [
                    dataclasses.replace(e, compiled=sandbox.cache_name(digest), compiled_sha256=compiled)
                    if e.name == name and e.sha256 == digest
                    else e
                    for e in entries
                ]
            )

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        self.root.mkdir(parents=True, exist_ok=True, mode=0o700)
        with open(self.root / ".lock", "a+b") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def _write(self, entries: list[Entry]) -> None:
        write_atomic(self.root / REGISTRY_FILE, render(entries).encode("utf-8"))


def read_artifact(path: Path) -> bytes:
    """A local plugin file's bytes: a regular file of at most :data:`MAX_DOWNLOAD` bytes (the cap a
    URL has), so ``/dev/zero``, a FIFO or a huge file is refused in one line, not read until memory ends."""
    try:
        # O_NONBLOCK: opening a FIFO no one writes to returns at once (fstat then refuses it) instead of waiting
        with os.fdopen(os.open(path, os.O_RDONLY | os.O_NONBLOCK), "rb") as file:
            info = os.fstat(file.fileno())
            if not stat.S_ISREG(info.st_mode):
                raise PluginError(f"{path} is not a regular file; install a plugin from a .wasm file or an http(s) URL")
            data = file.read(MAX_DOWNLOAD + 1)  # the size stat gave can change while it is read
    except OSError as exc:
        raise PluginError(f"cannot read {path}: {exc.strerror or exc}") from None
    if len(data) > MAX_DOWNLOAD:
        raise PluginError(f"{path} is over the {MAX_DOWNLOAD}-byte limit for a plugin; is it the right file?")
    return data


def _stored(ext: str) -> str:
    """An extension as the registry keeps it: without the dot (a dotted one, an older drsg's, loses it)."""
    return bare_extension(ext) or ext.lstrip(".")


def _toml_string(text: str) -> str:
    # a JSON string without ASCII escaping is a valid TOML basic string (same escapes, no surrogates)
    return json.dumps(text, ensure_ascii=False)


def render(entries: list[Entry]) -> str:
    """``registry.toml`` for ``entries`` (read back by :meth:`Registry.entries`)."""
    blocks = ["# drsg's installed parser plugins; written by `drsg plugin install` and `drsg plugin remove`\n"]
    for entry in entries:
        lines = ["[[plugin]]"]
        for key in ("name", "version", "file", "sha256", "source"):
            lines.append(f"{key} = {_toml_string(getattr(entry, key))}")
        lines.append(f"extensions = [{', '.join(_toml_string(ext) for ext in entry.extensions)}]")
        if entry.logo is not None:
            lines.append(f"logo = {_toml_string(entry.logo)}")
        if entry.compiled is not None and entry.compiled_sha256 is not None:
            lines.append(f"compiled = {_toml_string(entry.compiled)}")
            lines.append(f"compiled_sha256 = {_toml_string(entry.compiled_sha256)}")
        blocks.append("\n".join(lines) + "\n")
    return "\n".join(blocks)


class _Pending(Handler):
    """An installed plugin known by its registry entry; :meth:`Registry.load` runs at its first real use
    (a parse, an assemble, its fingerprint), so its checks — the file's hash, ``describe()`` — still
    stand before it reads a byte, and a plugin no file routes to is never opened."""

    concurrent = True  # what PluginHandler says: every call has its own store

    def __init__(self, registry: Registry, entry: Entry) -> None:
        self._registry, self._entry = registry, entry
        self._manifest = Manifest(entry.name, entry.version, shown_extensions(entry.extensions), entry.logo)
        self._loaded: PluginHandler | None = None
        self._lock = threading.Lock()  # parse calls run in threads: load once

    @property
    def manifest(self) -> Manifest:
        return self._manifest

    def _handler(self) -> PluginHandler:
        with self._lock:
            if self._loaded is None:
                self._loaded = self._registry.load(self._entry.name)
            return self._loaded

    @property
    def fingerprint(self) -> str:
        return self._handler().fingerprint

    def parse(self, tree: SourceTree, subject: Subject, options: Options) -> bytes:
        return self._handler().parse(tree, subject, options)

    def assemble(self, tree: SourceTree, partials: Sequence[bytes], options: Options) -> Output:
        return self._handler().assemble(tree, partials, options)

    def close(self) -> None:
        if self._loaded is not None:
            self._loaded.close()
