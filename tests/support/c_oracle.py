"""An independent reading of a C project: clang's own AST (``clang -Xclang -ast-dump=json``), the
function definitions it finds in the project's files, each with its file, line and whether it is static.

clang sees one configuration (the #if branches its target takes), so every definition it finds whose
name is written in the text must be one the plugin finds; the plugin may find more (it reads every
branch). A name made by a macro (``FN(Histogram)``) is marked: no parser without a preprocessor sees it.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Definition:
    path: str  # root-relative, /-separated
    name: str
    line: int  # where its name is written (clang's loc; for a macro-made name, the expansion's line)
    static: bool
    macro: bool = False  # its name comes out of a macro expansion (FN(name), DEFINE(x)): not in the text


def _walk(node: Any, state: dict[str, Any], out: list[tuple[dict[str, Any], str | None, int | None]]) -> None:
    """Visit nodes in print order, tracking the file and line, which clang's JSON names only when they
    change from the location printed before. Collects FunctionDecls (with where their names are) and,
    in state["calls"], each direct call written in a function's text: (the FunctionDecl, callee name)."""
    if isinstance(node, dict):
        named: tuple[str | None, int | None] = (None, None)
        in_macro = False
        for key, value in list(node.items()):
            if key in ("loc", "range"):
                parts = [value.get("begin"), value.get("end")] if key == "range" else [value]
                for loc in parts:
                    if not isinstance(loc, dict):
                        continue
                    in_macro = in_macro or "expansionLoc" in loc
                    for plain, counts in _plain(loc):
                        if "file" in plain:
                            state["file"] = plain["file"]
                        if "line" in plain:
                            state["line"] = plain["line"]
                        if key == "loc" and counts:
                            named = (state["file"], state["line"])
            elif key == "inner":
                outer = state.get("function")
                if node.get("kind") == "FunctionDecl":
                    state["function"] = node
                for child in value:
                    _walk(child, state, out)
                state["function"] = outer
        if node.get("kind") == "FunctionDecl":
            out.append((node, *named))
        elif node.get("kind") == "CallExpr" and not in_macro and state.get("function") is not None:
            callee = _callee(node.get("inner", [None])[0])
            if callee:
                state["calls"].append((state["function"], callee))


def _callee(node: Any) -> str | None:
    """The function a call's callee expression names directly (f(...), not p->f(...) or (*p)(...))."""
    while isinstance(node, dict) and node.get("kind") in ("ImplicitCastExpr", "ParenExpr"):
        node = (node.get("inner") or [None])[0]
    if isinstance(node, dict) and node.get("kind") == "DeclRefExpr":
        ref = node.get("referencedDecl", {})
        if ref.get("kind") == "FunctionDecl":
            return str(ref.get("name"))
    return None


def _plain(loc: dict[str, Any]) -> Iterator[tuple[dict[str, Any], bool]]:
    """A location's plain parts in print order, each with whether it is the one that counts: a macro's
    expansion site stands for it (its spelling may sit in another file)."""
    if "spellingLoc" in loc or "expansionLoc" in loc:
        yield loc.get("spellingLoc", {}), False
        yield loc.get("expansionLoc", {}), True
    else:
        yield loc, True


@dataclass(frozen=True)
class Call:
    caller: Definition
    callee: str
    target: Definition | None  # the callee's definition in the caller's translation unit, if it has one


@dataclass
class Reading:
    definitions: set[Definition]
    calls: set[Call]


def read(
    root: Path, sources: Sequence[str], include_dirs: Sequence[str] = (), extra_flags: Sequence[str] = ()
) -> Reading:
    """Every function definition clang finds in files under root, from compiling each of sources, and
    every direct call written (not made by a macro) in one of them."""
    root = root.resolve()
    found: set[Definition] = set()
    calls: set[Call] = set()
    for source in sources:
        cmd = ["clang", "-fsyntax-only", "-Xclang", "-ast-dump=json", "-w", *extra_flags]
        cmd += [f"-I{root / d}" for d in include_dirs]
        cmd.append(str(root / source))
        dumped = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if not dumped.stdout:
            raise RuntimeError(f"clang read nothing from {source}: {dumped.stderr[-2000:]}")
        tree = json.loads(dumped.stdout)
        decls: list[tuple[dict[str, Any], str | None, int | None]] = []
        state: dict[str, Any] = {"file": None, "line": None, "function": None, "calls": []}
        _walk(tree, state, decls)
        static_names = {node["name"] for node, _, _ in decls if node.get("storageClass") == "static"}
        unit: dict[int, Definition] = {}  # id(FunctionDecl node) → its definition
        by_name: dict[str, Definition] = {}
        for node, file, line in decls:
            has_body = any(child.get("kind") == "CompoundStmt" for child in node.get("inner", ()))
            if not has_body or file is None or line is None:
                continue
            path = Path(file)
            path = path if path.is_absolute() else (root / source).parent / path
            try:
                rel = path.resolve().relative_to(root).as_posix()
            except ValueError:
                continue  # a system header
            loc = node.get("loc", {})
            macro = "spellingLoc" in loc or "expansionLoc" in loc
            definition = Definition(rel, node["name"], line, node["name"] in static_names, macro)
            found.add(definition)
            unit[id(node)] = by_name[node["name"]] = definition
        for function, callee in state["calls"]:
            caller = unit.get(id(function))
            if caller is not None:
                calls.add(Call(caller, callee, by_name.get(callee)))
    return Reading(found, calls)


def definitions(
    root: Path, sources: Sequence[str], include_dirs: Sequence[str] = (), extra_flags: Sequence[str] = ()
) -> set[Definition]:
    """Every function definition clang finds in files under root, from compiling each of sources."""
    return read(root, sources, include_dirs, extra_flags).definitions
