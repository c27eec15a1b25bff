"""The plugins built under ``plugins/`` (``make plugins``), driven through drsg's own plugin host.

``ComponentPlugin`` is :class:`drsg.pipeline.plugins.host.PluginHandler` — the sandbox, the budgets,
a fresh store per call, the answers checked by ``output_from_wire`` — with the few conveniences the
plugin's tests and benchmark want: a file list or a document instead of a ``Subject``, a whole tree
in one call, and the time spent in calls.
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from drsg.pipeline.code.handler import Doc, Manifest, Output, SourceTree
from drsg.pipeline.plugins import sandbox
from drsg.pipeline.plugins.host import Budget, PluginHandler

REPO = Path(__file__).resolve().parents[2]
BUILD = REPO / "build" / "plugins"


def built_plugin(name: str) -> Path:
    """``build/plugins/<name>.wasm``, built first with ``make plugins`` (incremental: quick when current)."""
    result = subprocess.run(["make", "-s", "plugins"], cwd=REPO, capture_output=True, text=True)
    path = BUILD / f"{name}.wasm"
    if result.returncode != 0 or not path.exists():
        raise RuntimeError(f"`make plugins` failed; run it to see why:\n{result.stdout[-2000:]}{result.stderr[-4000:]}")
    return path


@dataclass
class CallStats:
    call_s: float = 0.0  # wall time of parse and assemble calls, store and instance included
    calls: int = 0


class ComponentPlugin:
    """One built plugin behind the real host; every call runs in a fresh store and instance."""

    def __init__(self, wasm: Path, budget: Budget | None = None) -> None:
        component = sandbox.compile_component(wasm.read_bytes(), wasm.stem, None)
        self.handler = PluginHandler(component, wasm.stem, budget or Budget())
        self.stats = CallStats()

    def imports(self) -> list[str]:
        return sorted(self.handler.component.type.imports(sandbox.engine()))

    def describe(self) -> Manifest:
        return self.handler._describe()  # a fresh store, instantiate, describe: the per-call floor

    def parse(self, tree: SourceTree, files: Sequence[str], options: Sequence[tuple[str, str]] = ()) -> bytes:
        return self._timed(lambda: self.handler.parse(tree, tuple(files), options))

    def parse_document(
        self, tree: SourceTree, name: str, data: bytes, options: Sequence[tuple[str, str]] = ()
    ) -> bytes:
        """parse with ``input.document(doc)`` rather than ``input.files``."""
        return self._timed(lambda: self.handler.parse(tree, Doc(name, data), options))

    def assemble(self, tree: SourceTree, partials: Sequence[bytes], options: Sequence[tuple[str, str]] = ()) -> Output:
        return self._timed(lambda: self.handler.assemble(tree, partials, options))

    def run(self, root: Path, options: Sequence[tuple[str, str]] = (), chunk: int = 1) -> Output:
        """The host's flow over every file under ``root`` the plugin claims: parse per chunk, then assemble."""
        extensions = self.handler.manifest.extensions
        files = sorted(
            path.relative_to(root).as_posix()
            for path in root.rglob("*")
            if path.is_file() and path.suffix.lower() in extensions
        )
        tree = SourceTree(root, files)
        partials = [self.parse(tree, files[i : i + chunk], options) for i in range(0, len(files), chunk)]
        return self.assemble(tree, partials, options)

    def _timed(self, call):  # type: ignore[no-untyped-def]
        started = time.perf_counter()
        try:
            return call()
        finally:
            self.stats.call_s += time.perf_counter() - started
            self.stats.calls += 1


def output_bytes(out: Output) -> bytes:
    """An answer as bytes, for checking two answers are the same to the byte."""
    return json.dumps(dataclasses.asdict(out), ensure_ascii=False).encode()
