"""A minimal host for one drsg:preprocess@1.0.0 component, for tests and benchmarks of the plugins
built under ``plugins/`` (``make plugins``).

It is deliberately small: the three host functions over a :class:`drsg.pipeline.code.handler.SourceTree`,
a fresh ``Store`` for every call (so a trap or a leak cannot outlive it), and the answers checked through
``output_from_wire`` as the real handler checks them. It stands in for the plugin host
(``drsg.pipeline.plugins``) until that lands; swap it for the real one then.
"""

from __future__ import annotations

import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import wasmtime
from wasmtime import component as cm

from drsg.pipeline.code.handler import Manifest, Output, SourceTree, output_from_wire

REPO = Path(__file__).resolve().parents[2]
BUILD = REPO / "build" / "plugins"
HOST_INTERFACE = "drsg:preprocess/host@1.0.0"
PREPROCESSOR = "drsg:preprocess/preprocessor@1.0.0"


def built_plugin(name: str) -> Path:
    """``build/plugins/<name>.wasm``, built first with ``make plugins`` (incremental: quick when current)."""
    result = subprocess.run(["make", "-s", "plugins"], cwd=REPO, capture_output=True, text=True)
    path = BUILD / f"{name}.wasm"
    if result.returncode != 0 or not path.exists():
        raise RuntimeError(f"`make plugins` failed; run it to see why:\n{result.stdout[-2000:]}{result.stderr[-4000:]}")
    return path


@dataclass
class CallStats:
    """Seconds spent making a store and instantiating, and in the calls themselves."""

    instantiate_s: float = 0.0
    call_s: float = 0.0
    calls: int = 0
    reads: list[str] = field(default_factory=list)


class ComponentPlugin:
    """One compiled component; every call runs in a fresh store and instance."""

    def __init__(self, wasm: Path, fuel: int | None = None) -> None:
        config = wasmtime.Config()
        if fuel is not None:
            config.consume_fuel = True
        self.fuel = fuel
        self.engine = wasmtime.Engine(config)
        self.component = cm.Component.from_file(self.engine, str(wasm))
        self.stats = CallStats()

    def imports(self) -> list[str]:
        return sorted(self.component.type.imports(self.engine))

    def _instance(self, tree: SourceTree | None) -> tuple[wasmtime.Store, cm.Instance]:
        import time

        started = time.perf_counter()
        store = wasmtime.Store(self.engine)
        if self.fuel is not None:
            store.set_fuel(self.fuel)
        linker = cm.Linker(self.engine)
        stats = self.stats

        def host_list(_store: Any, suffix: str) -> list[str] | str:
            if tree is None:
                return "no tree"
            return tree.list(suffix)

        def host_read(_store: Any, path: str) -> bytes | str:
            if tree is None:
                return "no tree"
            stats.reads.append(path)
            try:
                return tree.read(path)
            except (ValueError, OSError) as exc:
                return str(exc)

        def host_label(_store: Any) -> str | None:
            return tree.label() if tree is not None else None

        with linker.root() as root, root.add_instance(HOST_INTERFACE) as host:
            host.add_func("list", host_list)
            host.add_func("read", host_read)
            host.add_func("label", host_label)
        instance = linker.instantiate(store, self.component)
        self.stats.instantiate_s += time.perf_counter() - started
        return store, instance

    def _call(self, tree: SourceTree | None, name: str, *args: Any) -> Any:
        import time

        store, instance = self._instance(tree)
        index = instance.get_export_index(store, PREPROCESSOR)
        func_index = instance.get_export_index(store, name, index)
        func = instance.get_func(store, func_index)
        assert func is not None, name
        started = time.perf_counter()
        result = func(store, *args)
        func.post_return(store)
        self.stats.call_s += time.perf_counter() - started
        self.stats.calls += 1
        return result

    def describe(self) -> Manifest:
        raw = self._call(None, "describe")
        return Manifest(raw.name, raw.version, tuple(raw.extensions), raw.logo)

    def parse(self, tree: SourceTree, files: Sequence[str], options: Sequence[tuple[str, str]] = ()) -> bytes:
        result = self._call(tree, "parse", list(files), list(options))
        if isinstance(result, str):
            raise RuntimeError(f"parse failed: {result}")
        return bytes(result)

    def parse_document(
        self, tree: SourceTree | None, name: str, data: bytes, options: Sequence[tuple[str, str]] = ()
    ) -> bytes:
        """parse with ``input.document(doc)`` rather than ``input.files``."""
        doc = cm.Record()
        doc.name, doc.bytes = name, data
        result = self._call(tree, "parse", doc, list(options))
        if isinstance(result, str):
            raise RuntimeError(f"parse failed: {result}")
        return bytes(result)

    def assemble(self, tree: SourceTree, partials: Sequence[bytes], options: Sequence[tuple[str, str]] = ()) -> Any:
        """The raw ``output`` record (WIT field names)."""
        result = self._call(tree, "assemble", list(partials), list(options))
        if isinstance(result, str):
            raise RuntimeError(f"assemble failed: {result}")
        return result

    def run(self, root: Path, options: Sequence[tuple[str, str]] = (), chunk: int = 1) -> tuple[Output, Any]:
        """The host's flow over every file under root that the plugin claims: parse per chunk, then assemble.

        Returns the checked Output and the raw record (for byte-level comparisons)."""
        manifest = self.describe()
        files = sorted(
            path.relative_to(root).as_posix()
            for path in root.rglob("*")
            if path.is_file() and path.suffix.lower() in manifest.extensions
        )
        tree = SourceTree(root, files)
        partials = [self.parse(tree, files[i : i + chunk], options) for i in range(0, len(files), chunk)]
        raw = self.assemble(tree, partials, options)
        return output_from_wire(wire_dict(raw), manifest.name), raw


def wire_dict(raw: Any) -> dict[str, Any]:
    """The output record as plain data with the WIT's field names."""

    def node(n: Any) -> dict[str, Any]:
        return {
            "key": n.key,
            "label": n.label,
            "extra-labels": list(getattr(n, "extra-labels")),
            "properties": n.properties,
        }

    def edge(e: Any) -> dict[str, Any]:
        return {"src": e.src, "dst": e.dst, "type": e.type, "properties": e.properties}

    report = raw.report
    return {
        "nodes": [node(n) for n in raw.nodes],
        "edges": [edge(e) for e in raw.edges],
        "prose": raw.prose,
        "report": {
            "facts": report.facts,
            "prose-chars": getattr(report, "prose-chars"),
            "skipped": report.skipped,
            "notes": list(report.notes),
        },
    }
