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
    change from the location printed before."""
    if isinstance(node, dict):
        named: tuple[str | None, int | None] = (None, None)
        for key, value in list(node.items()):
            if key in ("loc", "range"):
                parts = [value.get("begin"), value.get("end")] if key == "range" else [value]
                for loc in parts:
                    if not isinstance(loc, dict):
                        continue
                    for plain, counts in _plain(loc):
                        if "file" in plain:
                            state["file"] = plain["file"]
                        if "line" in plain:
                            state["line"] = plain["line"]
                        if key == "loc" and counts:
                            named = (state["file"], state["line"])
            elif key == "inner":
                for child in value:
                    _walk(child, state, out)
        if node.get("kind") == "FunctionDecl":
            out.append((node, *named))


def _plain(loc: dict[str, Any]) -> Iterator[tuple[dict[str, Any], bool]]:
    """A location's plain parts in print order, each with whether it is the one that counts: a macro's
    expansion site stands for it (its spelling may sit in another file)."""
    if "spellingLoc" in loc or "expansionLoc" in loc:
        yield loc.get("spellingLoc", {}), False
        yield loc.get("expansionLoc", {}), True
    else:
        yield loc, True


def definitions(
    root: Path, sources: Sequence[str], include_dirs: Sequence[str] = (), extra_flags: Sequence[str] = ()
) -> set[Definition]:
    """Every function definition clang finds in files under root, from compiling each of sources."""
    root = root.resolve()
    found: set[Definition] = set()
    for source in sources:
        cmd = ["clang", "-fsyntax-only", "-Xclang", "-ast-dump=json", "-w", *extra_flags]
        cmd += [f"-I{root / d}" for d in include_dirs]
        cmd.append(str(root / source))
        dumped = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if not dumped.stdout:
            raise RuntimeError(f"clang read nothing from {source}: {dumped.stderr[-2000:]}")
        tree = json.loads(dumped.stdout)
        decls: list[tuple[dict[str, Any], str | None, int | None]] = []
        _walk(tree, {"file": None, "line": None}, decls)
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
            found.add(Definition(rel, node["name"], line, node.get("storageClass") == "static", macro))
    return found
