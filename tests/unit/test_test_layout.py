"""Tests share helpers through tests/support/ only: no test module imports another test module
(``tests/**/test_*.py``) or a conftest (which holds fixtures only). A helper two modules need moves
to tests/support/, where it can be found and changed in one place."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TESTS = ROOT / "tests"
# a cheap first look: only a file that mentions a test module or a conftest after "tests" is parsed
MENTIONS = re.compile(r"\btests\b[\w. ]*(\.test_|\.conftest\b|import[^\n]*\b(test_\w+|conftest)\b)")

# Imports of test modules still to move to tests/support/ (each pair: importer, imported module):
# none are left; the list only shrinks.
NOT_YET_MOVED = {}


def imported_test_modules(source: str) -> set[str]:
    """The test modules and conftests that ``source`` imports, at any depth (inside functions too)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
        for name in names:
            parts = name.split(".")
            if parts[0] != "tests" or len(parts) < 2:
                continue
            for i, part in enumerate(parts[1:], start=1):
                if part == "conftest" or (part.startswith("test_") and i >= 2):
                    found.add(".".join(parts[: i + 1]))
                    break
    return found


def test_the_check_sees_every_form_of_import() -> None:
    planted = """
import tests.integration.test_server
from tests.conftest import Ran
from tests.integration import test_cli
def later() -> None:
    from tests.unit.test_architecture import ROOT
from tests.support.server import start_server
from tests import conftest
"""
    assert MENTIONS.search(planted) and not MENTIONS.search("from tests.support.server import start_server")
    assert imported_test_modules(planted) == {
        "tests.integration.test_server",
        "tests.conftest",
        "tests.integration.test_cli",
        "tests.unit.test_architecture",
    }


def test_no_test_module_imports_another_or_a_conftest() -> None:
    found = set()
    for path in sorted(TESTS.rglob("*.py")):
        if "bench" in path.relative_to(TESTS).parts:  # benchmark scripts: a package of their own
            continue
        source = path.read_text()
        if MENTIONS.search(source):
            where = path.relative_to(ROOT).as_posix()
            found |= {(where, module) for module in imported_test_modules(source)}
    assert found == set(), "move the helper to tests/support/ and import it from there"
