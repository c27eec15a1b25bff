"""Each rule once: no surface chooses an embedder itself. Building one and reading the one a plane
recorded belong to `drsg.pipeline.embedder_choice`; a module under surfaces/ that calls or imports
`get_embedder`, `recorded_embedder` or `recorded_preset` writes the rule again."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SURFACES = ROOT / "surfaces"
#: what only the rule's module may use
RULE_ONLY = frozenset({"get_embedder", "recorded_embedder", "recorded_preset"})


def uses(source: str) -> list[str]:
    """Each use of a RULE_ONLY name in ``source`` as ``line: name`` (a call, an import, or a reference)."""
    found: list[str] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom | ast.Import):
            names = [alias.name.rpartition(".")[2] for alias in node.names]
        elif isinstance(node, ast.Name):
            names = [node.id]
        elif isinstance(node, ast.Attribute):
            names = [node.attr]
        else:
            continue
        found.extend(f"{node.lineno}: {name}" for name in names if name in RULE_ONLY)
    return found


def _modules() -> list[Path]:
    return sorted(SURFACES.rglob("*.py"))


def test_the_surfaces_are_there() -> None:
    assert len(_modules()) > 40  # the scan below looks at the real tree


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_surface_chooses_an_embedder_itself(path: Path) -> None:
    assert uses(path.read_text(encoding="utf-8")) == [], f"{path}: use drsg.pipeline.embedder_choice"


@pytest.mark.parametrize(
    "planted",
    [
        "from drsg.models.embedders import get_embedder\n",
        "def f(db):\n    from drsg.pipeline import vectorize\n    return vectorize.recorded_embedder(db, 'p', 'e')\n",
        "import drsg.models.embedders.registry as r\nr.recorded_preset('local:x')\n",
        "from drsg.models.embedders.registry import recorded_preset as rebuild\n",
    ],
)
def test_a_planted_use_is_found(planted: str) -> None:
    assert uses(planted)


def test_the_rules_own_calls_are_not_counted_elsewhere() -> None:
    allowed = "from drsg.pipeline.embedder_choice import choose_embedder\nchoose_embedder(db, 'p', 'e', s)\n"
    assert uses(allowed) == []
