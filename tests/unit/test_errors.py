"""The error tree drawn in ``kernel/errors.py`` is the tree the code has.

Every drsg module is imported (so an error class defined anywhere is seen), then every subclass of
``DrsgError`` is held to the drawing: drawn, under its real parent, with its exit code and JSON-RPC
code. A drawn class that no longer exists fails too, so the drawing cannot go stale either way.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
from dataclasses import dataclass

import pytest

import drsg
from drsg.kernel import errors
from drsg.kernel.errors import DrsgError
from tests.support.imports import FOLDERS, SOURCES, module_of_file

# One drawn class: the tree's prefix (4 characters a level), its name, exit code, and JSON-RPC code
# (a number, or "given": the instance carries the code it is raised with). Continuation lines and
# the header start with lower-case text, so they do not match.
_ROW = re.compile(r"^ {4}(?P<tree>(?:[│ ] {3})*(?:[├└]── )?)(?P<name>[A-Z]\w*)\s+(?P<exit>\d)\s+(?P<rpc>-\d+|given)\s")


@dataclass(frozen=True)
class Drawn:
    name: str
    parent: str | None
    exit_code: int
    rpc_code: int | None  # None: "given"


def parse_drawing(doc: str) -> dict[str, Drawn]:
    """The classes a drawing names, each with its parent (by indentation) and codes."""
    drawn: dict[str, Drawn] = {}
    path: list[str] = []  # the names on the way down to the current depth
    for line in doc.splitlines():
        row = _ROW.match(line)
        if row is None:
            continue
        depth = len(row["tree"]) // 4
        del path[depth:]
        name = row["name"]
        assert name not in drawn, f"{name} is drawn twice"
        rpc = None if row["rpc"] == "given" else int(row["rpc"])
        drawn[name] = Drawn(name, path[-1] if path else None, int(row["exit"]), rpc)
        path.append(name)
    return drawn


def import_every_module() -> list[str]:
    """Import every module of drsg (an error class defined anywhere registers then). Each layer is a
    folder of its own mapped to ``drsg.<folder>`` (so ``drsg.__path__`` holds none of them): walk each."""
    names = ["drsg"]
    for package in [drsg, *(importlib.import_module(f"drsg.{folder}") for folder in FOLDERS)]:
        names += [package.__name__] if package is not drsg else []
        names += [m.name for m in pkgutil.walk_packages(package.__path__, f"{package.__name__}.")]
    names = [name for name in names if not name.endswith(".__main__")]  # `python -m` entry points run the CLI
    for name in names:
        importlib.import_module(name)
    return names


def subclasses(cls: type) -> list[type]:
    """Every subclass of ``cls`` drsg defines, at any depth (tests' own planted ones left out)."""
    found: list[type] = []
    for sub in cls.__subclasses__():
        found += [sub, *subclasses(sub)]
    return [c for c in dict.fromkeys(found) if c.__module__.split(".")[0] == "drsg"]


def problems(drawn: dict[str, Drawn], classes: list[type]) -> list[str]:
    """Where the drawing and the classes disagree, one line each."""
    out = []
    for cls in classes:
        where = f"{cls.__module__}.{cls.__qualname__}"
        d = drawn.get(cls.__name__)
        if d is None:
            out.append(f"{where} is not in the drawing in kernel/errors.py")
            continue
        parents = [base.__name__ for base in cls.__bases__ if issubclass(base, DrsgError)]
        if cls is not DrsgError and parents != [d.parent]:
            out.append(f"{where} is drawn under {d.parent}, but its parent is {', '.join(parents)}")
        if cls.exit_code != d.exit_code:
            out.append(f"{where} is drawn with exit {d.exit_code}, but its exit_code is {cls.exit_code}")
        if d.rpc_code is None:
            if "code" not in inspect.signature(cls).parameters:
                out.append(f"{where} is drawn with a given rpc code, but takes no code")
        elif cls.rpc_code != d.rpc_code:
            out.append(f"{where} is drawn with rpc {d.rpc_code}, but its rpc_code is {cls.rpc_code}")
    return out


def stale(drawn: dict[str, Drawn], classes: list[type]) -> list[str]:
    """The drawn names no class has."""
    gone = sorted(set(drawn) - {cls.__name__ for cls in classes})
    return [f"{name} is drawn in kernel/errors.py, but no such DrsgError exists" for name in gone]


def test_every_drsg_module_is_imported() -> None:
    """The walk reaches every Python source file of the package (so a class defined in any of them is
    seen); it also finds the compiled module, which has no source file."""
    sources = {module_of_file(path) for path in SOURCES}
    assert {name for name in sources if not name.endswith(".__main__")} <= set(import_every_module())


def test_the_drawing_is_the_tree() -> None:
    import_every_module()
    drawn, classes = parse_drawing(errors.__doc__ or ""), [DrsgError, *subclasses(DrsgError)]
    assert problems(drawn, classes) == []
    assert stale(drawn, classes) == []
    names = [cls.__name__ for cls in classes]
    assert len(names) == len(set(names)), "two error classes share a name: the drawing cannot tell them apart"


def test_the_drawing_is_read_whole() -> None:
    """Guards the parser: it finds every class the module defines, nested at the right depth."""
    drawn = parse_drawing(errors.__doc__ or "")
    defined = {name for name, obj in vars(errors).items() if isinstance(obj, type) and issubclass(obj, DrsgError)}
    assert set(drawn) == defined
    assert drawn["DrsgError"].parent is None
    assert drawn["BadValue"].parent == "UsageError"
    assert drawn["ChatUnavailable"].parent == "ChatError"
    assert drawn["RpcError"].rpc_code is None
    assert drawn["WriteTimeout"].rpc_code == -32002


class _Undrawn(errors.UsageError):
    pass


class _Miscoded(errors.NotFound):
    rpc_code = -32000


@pytest.mark.parametrize(
    ("cls", "expected"),
    [
        (_Undrawn, "is not in the drawing"),
        (_Miscoded, "is drawn with rpc -32602, but its rpc_code is -32000"),
    ],
    ids=["undrawn", "miscoded"],
)
def test_a_planted_disagreement_is_caught(cls: type, expected: str) -> None:
    drawn = parse_drawing(errors.__doc__ or "")
    if cls is _Miscoded:  # draw it as its parent is drawn, so only the code differs
        drawn = {**drawn, "_Miscoded": Drawn("_Miscoded", "NotFound", 1, -32602)}
    found = problems(drawn, [cls])
    assert len(found) == 1 and expected in found[0]


def test_a_class_drawn_under_the_wrong_parent_is_caught() -> None:
    drawn = parse_drawing(errors.__doc__ or "")
    wrong = {**drawn, "BadValue": Drawn("BadValue", "NotFound", 2, -32602)}
    assert problems(wrong, [errors.BadValue]) == [
        "drsg.kernel.errors.BadValue is drawn under NotFound, but its parent is UsageError"
    ]


def test_a_stale_drawing_is_caught() -> None:
    import_every_module()
    drawn = {**parse_drawing(errors.__doc__ or ""), "Gone": Drawn("Gone", "DrsgError", 1, -32000)}
    classes = [DrsgError, *subclasses(DrsgError)]
    assert stale(drawn, classes) == ["Gone is drawn in kernel/errors.py, but no such DrsgError exists"]


def test_rpc_error_carries_the_code_it_is_raised_with() -> None:
    error = errors.RpcError(errors.METHOD_NOT_FOUND, "method not found: 'x'", {"hint": 1})
    assert isinstance(error, DrsgError)
    assert (error.rpc_code, error.message, error.data) == (-32601, "method not found: 'x'", {"hint": 1})
