"""The import rule (DESIGN.md §2): data flows one way, so no layer imports one above it.

kernel (drsg/*.py) ← store ← workers, pipeline ← feed ← surfaces (drsg.cli, drsg.server)
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
KERNEL_FILES = {"errors", "settings", "values", "asof", "logs"}
# layer -> the drsg subpackages it may import (besides itself and the kernel)
ALLOWED: dict[str, set[str]] = {
    "kernel": set(),
    "store": set(),
    "workers": {"store"},
    "pipeline": {"store", "workers"},
    "feed": {"store", "workers", "pipeline"},
    "surface": {"store", "workers", "pipeline", "feed", "cli", "server"},
}
_SUBPACKAGES = {"store", "workers", "pipeline", "feed", "cli", "server"}


def _layer(path: Path) -> str:
    rel = path.relative_to(ROOT)
    top = rel.parts[0]
    if top in ("store", "workers", "pipeline", "feed"):
        return top
    if top == "drsg" and len(rel.parts) == 2 and rel.stem in KERNEL_FILES:
        return "kernel"
    return "surface"  # drsg/cli, drsg/server, and drsg/__init__ (whose `open` imports lazily)


def _imported_layers(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(), filename=str(path))
    found = []
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
        for name in names:
            parts = name.split(".")
            if parts[0] == "drsg" and len(parts) > 1 and parts[1] in _SUBPACKAGES:
                found.append((node.lineno, parts[1]))
            elif parts[0] in ("store", "workers", "pipeline", "feed"):
                found.append((node.lineno, f"bare:{parts[0]}"))
    return found


SOURCES = sorted(
    p for folder in ("drsg", "store", "workers", "pipeline", "feed") for p in (ROOT / folder).rglob("*.py")
)


def _violations(path: Path, layer: str) -> list[str]:
    out = []
    for line, target in _imported_layers(path):
        if target.startswith("bare:"):
            out.append(f"{path.name}:{line} imports `{target[5:]}`; import it as `drsg.{target[5:]}`")
        elif target != layer and target not in ALLOWED[layer]:
            out.append(f"{path.name}:{line} ({layer}) imports drsg.{target}, a layer above it")
    return out


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_module_imports_a_layer_above_it(path: Path) -> None:
    assert _violations(path, _layer(path)) == []


def test_the_rule_catches_a_violation(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text("from drsg.feed import subscriptions\n\ndef f():\n    import drsg.cli.main\n")
    assert len(_violations(probe, "store")) == 2
    assert _violations(probe, "surface") == []
    probe.write_text("from store import keys\n")
    assert "import it as `drsg.store`" in _violations(probe, "workers")[0]
