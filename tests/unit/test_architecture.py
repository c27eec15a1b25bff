"""The import rule (ARCHITECTURE.md): data flows one way, so no layer imports one above it.

Each folder at the repository root is one layer and the subpackage ``drsg.<folder>``; ``drsg/``
itself is the public API. ``LAYERS`` is the one table of what each layer may import; ``INNER`` says
the same of the parts inside ``pipeline/`` and ``surfaces/``. Every import form is checked:
``import drsg.x``, ``from drsg.x import y``, ``from drsg import x``, relative imports, imports inside
functions, and ``importlib.import_module("drsg.x")`` / ``__import__``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.imports import ROOT, SOURCES, imported_modules

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

#: inside a layer: which of its parts (a subpackage, or a module at the layer's top) may import which,
#: besides itself. Checked like LAYERS: every import form, every permission used, no circle; a part the
#: table does not name fails until it is given a row. The model-call plumbing (llm) sits below what asks
#: a model; code defines the Handler port that plugins implements; the server knows nothing of the MCP
#: tools and the dashboard mounted on it (the app module, above all three, mounts them).
INNER: dict[str, dict[str, frozenset[str]]] = {
    "pipeline": {
        "llm": frozenset(),
        "convert": frozenset(),
        "vectorize": frozenset(),
        "embedder_choice": frozenset({"vectorize"}),
        "code": frozenset({"convert"}),
        "fetch": frozenset({"convert"}),
        "plugins": frozenset({"code", "fetch"}),
        "catalog": frozenset({"vectorize"}),
        "ask": frozenset({"llm", "embedder_choice"}),
        "digest": frozenset({"llm", "code", "convert", "fetch", "plugins", "vectorize"}),
        "vectorize_plane": frozenset({"digest", "vectorize"}),
    },
    "surfaces": {
        "drift": frozenset(),
        "server": frozenset({"drift"}),
        "mcp": frozenset({"server", "drift"}),
        "web": frozenset({"server"}),
        "app": frozenset({"server", "mcp", "web"}),
        "cli": frozenset({"app", "server", "mcp", "drift"}),
    },
}


def layer_of_file(path: Path, root: Path = ROOT) -> str:
    top = path.relative_to(root).parts[0]
    return "api" if top == "drsg" else top


def _layer_of_module(name: str) -> str | None:
    """The layer a ``drsg…`` module belongs to; None for modules outside drsg."""
    parts = name.split(".")
    if parts[0] != "drsg":
        return None
    if len(parts) > 1 and parts[1] in FOLDERS:
        return parts[1]
    return "api"


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


def part_of_file(path: Path, root: Path = ROOT) -> str:
    """The part of its layer a file is in (``pipeline/digest/run.py`` -> ``digest``, ``pipeline/vectorize.py``
    -> ``vectorize``; the layer's own ``__init__.py`` -> ``__init__``)."""
    return path.relative_to(root).parts[1].removesuffix(".py")


def _part_of_module(name: str, layer: str) -> str | None:
    """The part of ``layer`` a module is in; None for a module outside it (or the layer package itself)."""
    parts = name.split(".")
    return parts[2] if parts[:2] == ["drsg", layer] and len(parts) > 2 else None


def inner_violations(path: Path, root: Path = ROOT) -> list[str]:
    layer, part = layer_of_file(path, root), part_of_file(path, root)
    if layer not in INNER:
        return []
    allowed = INNER[layer].get(part, frozenset())
    out = []
    for line, name in imported_modules(path, root):
        target = _part_of_module(name, layer)
        if target is not None and target != part and target not in allowed:
            out.append(
                f"{path.relative_to(root)}:{line} ({layer}/{part}) imports {name} ({layer}/{target}), which it may not"
            )
    return out


def parts_present(layer: str, root: Path = ROOT) -> set[str]:
    return {part_of_file(p, root) for p in (root / layer).rglob("*.py")} - {"__init__"}


INNER_SOURCES = [p for p in SOURCES if layer_of_file(p) in INNER]


@pytest.mark.parametrize("path", INNER_SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_module_imports_a_part_of_its_layer_it_may_not(path: Path) -> None:
    assert inner_violations(path) == []


@pytest.mark.parametrize("layer", sorted(INNER))
def test_every_part_is_in_its_inner_table(layer: str) -> None:
    assert parts_present(layer) == set(INNER[layer])


@pytest.mark.parametrize("layer", sorted(INNER))
def test_the_inner_table_is_tight_and_acyclic(layer: str) -> None:
    table = INNER[layer]
    used: dict[str, set[str]] = {part: set() for part in table}
    for path in INNER_SOURCES:
        if layer_of_file(path) == layer and part_of_file(path) in used:
            names = (_part_of_module(name, layer) for _, name in imported_modules(path))
            used[part_of_file(path)] |= {name for name in names if name is not None} - {part_of_file(path)}
    for part, allowed in table.items():
        assert allowed <= used[part], f"{layer}/{part} may import {sorted(allowed - used[part])} but never does"

    def reaches(start: str, goal: str, seen: frozenset[str] = frozenset()) -> bool:
        return any(nxt == goal or (nxt not in seen and reaches(nxt, goal, seen | {nxt})) for nxt in table[start])

    assert not [part for part in table if reaches(part, part)]


INNER_PLANTED = {
    "absolute import": "import drsg.pipeline.digest.run\n",
    "absolute from": "from drsg.pipeline.digest.run import digest\n",
    "from the layer": "from drsg.pipeline import digest\n",
    "relative, one level up": "from ..digest import run\n",
    "relative, by name": "from .. import digest\n",
    "inside a function": "def f():\n    from drsg.pipeline.digest.run import digest\n",
    "import_module": "import importlib\nMOD = importlib.import_module('drsg.pipeline.digest.run')\n",
    "__import__": "MOD = __import__('drsg.pipeline.digest')\n",
}


@pytest.mark.parametrize("source", INNER_PLANTED.values(), ids=list(INNER_PLANTED))
def test_the_inner_rule_catches_a_planted_violation_of_each_form(tmp_path: Path, source: str) -> None:
    """llm importing digest (what asks a model) is refused in every form; the same lines in a part the
    table lets import digest (vectorize_plane, a module at the layer's top) pass."""
    planted = tmp_path / "pipeline" / "llm" / "probe.py"
    planted.parent.mkdir(parents=True)
    planted.write_text(source)
    assert part_of_file(planted, tmp_path) == "llm"
    assert len(inner_violations(planted, tmp_path)) == 1
    allowed = tmp_path / "pipeline" / "vectorize_plane.py"
    allowed.write_text(source.replace("..", "."))  # a top-level module is one package level higher
    assert part_of_file(allowed, tmp_path) == "vectorize_plane"
    assert inner_violations(allowed, tmp_path) == []


def test_the_inner_rule_catches_the_old_circles(tmp_path: Path) -> None:
    """The deferred imports this table replaced: the server mounting the MCP tools, code loading plugins."""
    server = tmp_path / "surfaces" / "server" / "app.py"
    server.parent.mkdir(parents=True)
    server.write_text("def create_app():\n    from drsg.surfaces import web\n    from drsg.surfaces.mcp import http\n")
    code = tmp_path / "pipeline" / "code" / "handlers.py"
    code.parent.mkdir(parents=True)
    code.write_text("def load_handlers():\n    from drsg.pipeline.plugins.registry import Registry\n")
    assert len(inner_violations(server, tmp_path)) == 2
    assert len(inner_violations(code, tmp_path)) == 1


def test_a_part_the_inner_table_does_not_name_is_caught(tmp_path: Path) -> None:
    for part in INNER["pipeline"]:
        (tmp_path / "pipeline" / part).mkdir(parents=True)
        (tmp_path / "pipeline" / part / "__init__.py").write_text("")
    assert parts_present("pipeline", tmp_path) == set(INNER["pipeline"])
    (tmp_path / "pipeline" / "probe.py").write_text("")
    assert parts_present("pipeline", tmp_path) - set(INNER["pipeline"]) == {"probe"}
    # and an unnamed part may import no other part
    (tmp_path / "pipeline" / "probe.py").write_text("from drsg.pipeline import llm\n")
    assert len(inner_violations(tmp_path / "pipeline" / "probe.py", tmp_path)) == 1


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
