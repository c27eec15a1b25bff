"""Reading the package's imports: every file of drsg's code, the module it is installed as, and
every module it imports in any form (absolute, ``from drsg import x``, relative, inside functions,
``importlib.import_module`` / ``__import__``). The architecture, import-cycle, error-tree and
dependency tests all read the code through this one walker."""

from __future__ import annotations

import ast
import functools
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

#: the folders at the root that hold the package's code besides drsg/ (each one layer, drsg.<folder>)
FOLDERS = sorted({p.relative_to(ROOT).parts[0] for p in ROOT.glob("*/**/*.py")} - {"drsg", "tests", ".venv", "build"})
SOURCES = sorted(p for folder in ["drsg", *FOLDERS] for p in (ROOT / folder).rglob("*.py"))


def module_of_file(path: Path, root: Path = ROOT) -> str:
    """The dotted module a file is installed as (``store/log.py`` -> ``drsg.store.log``)."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[0] != "drsg":
        parts.insert(0, "drsg")
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _resolve_relative(module: str | None, level: int, here: str, is_package: bool) -> str:
    package = here.split(".") if is_package else here.split(".")[:-1]
    base = package[: len(package) - (level - 1)] if level > 1 else package
    return ".".join([*base, module] if module else base)


def imported_modules(path: Path, root: Path = ROOT) -> list[tuple[int, str]]:
    """Every module a file imports, as absolute dotted names, with the line it is imported on."""
    return list(imports_in(path.read_text(), module_of_file(path, root), path.name == "__init__.py"))


@functools.cache  # each file is read by several tests (the layer table's, the inner tables'): parsed once
def imports_in(source: str, here: str, is_package: bool = False) -> tuple[tuple[int, str], ...]:
    """Every module ``source`` imports, as :func:`imported_modules` says, read as the module ``here``."""
    tree = ast.parse(source)
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
    return tuple(found)
