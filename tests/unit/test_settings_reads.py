"""Code reads a registered setting by its type (``settings.integer("catalog.row_limit")``), never as
``settings["catalog.row_limit"]``, whose ``Any`` hides from mypy what the value is. Checked by AST over
every module of every layer; a key computed at run time (``settings[name]``) is not a literal and
stays allowed. The check is shown to catch a planted read."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from drsg.kernel.settings import REGISTRY

ROOT = Path(__file__).resolve().parents[2]
FOLDERS = ("drsg", "kernel", "plan", "models", "store", "workers", "pipeline", "feed", "surfaces")
NAMES = frozenset(setting.name for setting in REGISTRY)


def untyped_reads(source: str) -> list[str]:
    """``<anything>["section.key"]`` for a registered key: a dict of settings read without its type."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) and node.slice.value in NAMES:
            target = node.value
            name = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", None)
            if name != "sources":  # Settings.sources: where a value came from, text by design
                found.append(f"{node.lineno}: {ast.unparse(node)}")
    return found


def test_the_check_catches_a_planted_read() -> None:
    planted = 'limit = obj.settings["catalog.row_limit"]\nseen = settings.sources["catalog.row_limit"]\n'
    assert untyped_reads("sources = settings.sources\nseen = sources['catalog.row_limit']\n") == []
    assert untyped_reads(planted) == ['1: obj.settings["catalog.row_limit"]'.replace('"', "'")]
    assert untyped_reads('limit = obj.settings.integer("catalog.row_limit")\nvalue = settings[name]\n') == []


@pytest.mark.parametrize("folder", FOLDERS)
def test_no_module_reads_a_setting_untyped(folder: str) -> None:
    offenders = [
        f"{path.relative_to(ROOT)}:{read}"
        for path in sorted((ROOT / folder).rglob("*.py"))
        for read in untyped_reads(path.read_text())
    ]
    assert offenders == [], "read these with the typed reads (Settings.integer, .text, …): " + "; ".join(offenders)
