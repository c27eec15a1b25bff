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


def fixtures(source: str) -> dict[str, str]:
    """Each pytest fixture ``source`` defines, by name: its body as code (its docstring aside)."""
    found = {}
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.FunctionDef) or not any("fixture" in ast.dump(d) for d in node.decorator_list):
            continue
        body = node.body[1:] if ast.get_docstring(node) is not None else node.body
        found[node.name] = ast.dump(ast.Module(body=body, type_ignores=[]))
    return found


def repeated_fixtures(conftest: str, module: str) -> set[str]:
    shared = fixtures(conftest)
    return {name for name, body in fixtures(module).items() if shared.get(name) == body}


def test_the_check_sees_a_shared_fixture_written_again() -> None:
    conftest = '@pytest.fixture(scope="module")\ndef fake():\n    """Shared."""\n    with F() as f:\n        yield f\n'
    again = '@pytest.fixture(scope="module")\ndef fake():\n    with F() as f:  # a copy\n        yield f\n'
    other = "@pytest.fixture\ndef fake():\n    with F(dims=8) as f:\n        yield f\n"
    assert repeated_fixtures(conftest, again) == {"fake"} and repeated_fixtures(conftest, other) == set()


def test_no_test_module_writes_again_a_fixture_its_conftest_shares() -> None:
    """A module below a conftest uses the fixture the conftest shares, not a copy of it (a module
    that needs another kind defines its own, differently, under the same name)."""
    found = set()
    for conftest in sorted(TESTS.rglob("conftest.py")):
        shared = conftest.read_text()
        defines = re.compile("|".join(rf"\bdef {name}\(" for name in fixtures(shared)) or "$^")
        for path in sorted(conftest.parent.rglob("test_*.py")):
            source = path.read_text()
            if defines.search(source):  # a cheap first look: only a module defining a shared name is parsed
                found |= {(path.relative_to(ROOT).as_posix(), name) for name in repeated_fixtures(shared, source)}
    assert found == set(), "use the conftest's fixture instead of a copy"
