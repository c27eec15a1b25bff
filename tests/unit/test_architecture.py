"""The import rule (ARCHITECTURE.md): data flows one way, so no layer imports one above it.

Each folder at the repository root is one layer and the subpackage ``drsg.<folder>``; ``drsg/``
itself is the public API. ``LAYERS`` is the one table of what each layer may import. Every import
form is checked: ``import drsg.x``, ``from drsg.x import y``, ``from drsg import x``, relative
imports, imports inside functions, and ``importlib.import_module("drsg.x")`` / ``__import__``.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

#: layer -> the layers it may import (besides itself). "api" is the package root, drsg/ (drsg.api/…).
LAYERS: dict[str, frozenset[str]] = {
    "kernel": frozenset(),
    "plan": frozenset({"kernel"}),
    "models": frozenset({"kernel"}),
    "store": frozenset({"kernel"}),
    "workers": frozenset({"kernel", "plan", "store"}),
    "pipeline": frozenset({"kernel", "plan", "models", "store", "workers"}),
    "feed": frozenset({"kernel", "store", "pipeline"}),
    "surfaces": frozenset({"api", "kernel", "plan", "models", "store", "workers", "pipeline", "feed"}),
    "api": frozenset({"kernel", "plan", "models", "store", "workers", "pipeline", "feed"}),
}
FOLDERS = sorted(set(LAYERS) - {"api"})


def layer_of_file(path: Path, root: Path = ROOT) -> str:
    top = path.relative_to(root).parts[0]
    return "api" if top == "drsg" else top


def module_of_file(path: Path, root: Path = ROOT) -> str:
    """The dotted module a file is installed as (``store/log.py`` -> ``drsg.store.log``)."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[0] != "drsg":
        parts.insert(0, "drsg")
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _layer_of_module(name: str) -> str | None:
    """The layer a ``drsg…`` module belongs to; None for modules outside drsg."""
    parts = name.split(".")
    if parts[0] != "drsg":
        return None
    if len(parts) > 1 and parts[1] in FOLDERS:
        return parts[1]
    return "api"


def _resolve_relative(module: str | None, level: int, here: str, is_package: bool) -> str:
    package = here.split(".") if is_package else here.split(".")[:-1]
    base = package[: len(package) - (level - 1)] if level > 1 else package
    return ".".join([*base, module] if module else base)


def imported_modules(path: Path, root: Path = ROOT) -> list[tuple[int, str]]:
    """Every module a file imports, as absolute dotted names, with the line it is imported on."""
    tree = ast.parse(path.read_text(), filename=str(path))
    here = module_of_file(path, root)
    is_package = path.name == "__init__.py"
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = _resolve_relative(node.module, node.level, here, is_package)
            # each name may be a submodule (`from drsg import store`, `from . import keys`)
            found += [(node.lineno, base if alias.name == "*" else f"{base}.{alias.name}") for alias in node.names]
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
            if name in ("import_module", "__import__") and isinstance(node.args[0].value, str):
                found.append((node.lineno, node.args[0].value))
    return found


def violations(path: Path, layer: str, root: Path = ROOT) -> list[str]:
    out = []
    rel = path.relative_to(root)
    for line, name in imported_modules(path, root):
        top = name.split(".")[0]
        if top in FOLDERS:
            out.append(f"{rel}:{line} imports `{name}`; import it as `drsg.{name}`")
            continue
        target = _layer_of_module(name)
        if target is None or target == layer:
            continue
        if target not in LAYERS[layer]:
            out.append(f"{rel}:{line} ({layer}) imports {name} ({target}), which {layer} may not import")
    return out


def used_layers(path: Path, root: Path = ROOT) -> set[str]:
    layers = {_layer_of_module(name) for _, name in imported_modules(path, root)}
    return {layer for layer in layers if layer is not None}


SOURCES = sorted(p for folder in ["drsg", *FOLDERS] for p in (ROOT / folder).rglob("*.py"))


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_module_imports_a_layer_it_may_not(path: Path) -> None:
    assert violations(path, layer_of_file(path)) == []


def test_every_root_folder_with_code_is_a_layer() -> None:
    folders = {p.relative_to(ROOT).parts[0] for p in ROOT.glob("*/**/*.py")} - {"tests", ".venv", "build"}
    assert folders == {"drsg", *FOLDERS}


def test_the_table_is_tight_and_acyclic() -> None:
    """Each permission is used somewhere (the table says what is true), and no two layers may import
    each other, directly or round a longer circle."""
    used: dict[str, set[str]] = {layer: set() for layer in LAYERS}
    for path in SOURCES:
        layer = layer_of_file(path)
        used[layer] |= used_layers(path) - {layer}
    for layer, allowed in LAYERS.items():
        assert allowed <= used[layer], f"{layer} may import {sorted(allowed - used[layer])} but never does"

    def reaches(start: str, goal: str, seen: frozenset[str] = frozenset()) -> bool:
        return any(nxt == goal or (nxt not in seen and reaches(nxt, goal, seen | {nxt})) for nxt in LAYERS[start])

    assert not [layer for layer in LAYERS if reaches(layer, layer)]


PLANTED = {
    "absolute import": "import drsg.feed.subscription\n",
    "absolute from": "from drsg.feed.subscription import Subscription\n",
    "from the package root": "from drsg import feed\n",
    "relative, one level up": "from ..feed import subscription\n",
    "relative, by name": "from .. import feed\n",
    "inside a function": "def f():\n    from drsg.surfaces.cli import main\n",
    "import_module": "import importlib\nMOD = importlib.import_module('drsg.feed.subscription')\n",
    "__import__": "MOD = __import__('drsg.feed')\n",
    "a folder name as a top-level module": "from feed import subscription\n",
}


@pytest.mark.parametrize("source", PLANTED.values(), ids=list(PLANTED))
def test_the_rule_catches_a_planted_violation_of_each_form(tmp_path: Path, source: str) -> None:
    planted = tmp_path / "store" / "probe.py"
    planted.parent.mkdir()
    planted.write_text(source)
    assert layer_of_file(planted, tmp_path) == "store"
    assert len(violations(planted, "store", tmp_path)) == 1
    # the same lines are fine where the table allows them
    if not source.startswith("from feed"):
        assert violations(planted, "surfaces", tmp_path) == []


def test_allowed_relative_and_root_imports_pass(tmp_path: Path) -> None:
    probe = tmp_path / "store" / "deep" / "probe.py"
    probe.parent.mkdir(parents=True)
    probe.write_text(
        "from . import sibling\nfrom .. import keys\nfrom ...kernel import errors\nimport drsg.kernel.values\n"
    )
    assert violations(probe, "store", tmp_path) == []
    assert [name for _, name in imported_modules(probe, tmp_path)] == [
        "drsg.store.deep.sibling",
        "drsg.store.keys",
        "drsg.kernel.errors",
        "drsg.kernel.values",
    ]
