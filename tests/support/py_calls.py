"""An independent static call finder for a Python package: the ground truth the code verbs are held to.

It shares no code with drsg.pipeline.code (it reads the files with ``ast`` on its own, with its own
scoping and naming) and resolves only what can be resolved without running anything: a name bound
by a ``def``/``class`` (in an enclosing function or the module) or a ``from``-import of the package,
``module.name`` for an imported module of the package, ``self.m()``/``cls.m()`` in a method and
``super().m()`` through the class's in-package bases, ``Class.m()``. A name that is a parameter or is
assigned in the function is the function's own and resolves to nothing. Keys are dotted module paths
(``pkg.mod.Class.method``); a call's caller is the innermost ``def``/``class`` around it, else its module.
"""

from __future__ import annotations

import ast
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class _Def:
    key: str
    kind: str  # "module", "class", "function"
    file: str
    line: int
    bases: list[ast.expr] = field(default_factory=list)
    members: dict[str, str] = field(default_factory=dict)  # name → key (a class's defs, a module's bindings)


@dataclass
class CallGraph:
    """``calls[(caller, callee)]``: the lines (in the caller's file) where caller calls callee."""

    defs: dict[str, _Def] = field(default_factory=dict)
    calls: dict[tuple[str, str], list[int]] = field(default_factory=dict)
    refs: set[tuple[str, str]] = field(default_factory=set)  # a def used as a value
    imports: set[tuple[str, str]] = field(default_factory=set)  # module → a def it from-imports
    extends: set[tuple[str, str]] = field(default_factory=set)

    def callers(self, callee: str) -> dict[str, list[int]]:
        return {src: lines for (src, dst), lines in self.calls.items() if dst == callee}

    def file_of(self, key: str) -> str:
        return self.defs[key].file

    def reverse(
        self, key: str, depth: int, kinds: tuple[str, ...] = ("calls", "refs", "imports", "extends")
    ) -> dict[str, int]:
        """Every def reaching ``key`` within ``depth`` hops against the edges of ``kinds``: key → distance."""
        into: dict[str, set[str]] = {}
        for kind in kinds:
            pairs = self.calls.keys() if kind == "calls" else getattr(self, kind)
            for src, dst in pairs:
                into.setdefault(dst, set()).add(src)
        seen = {key: 0}
        todo = deque([key])
        while todo:
            at = todo.popleft()
            if seen[at] == depth:
                continue
            for src in into.get(at, ()):
                if src not in seen:
                    seen[src] = seen[at] + 1
                    todo.append(src)
        del seen[key]
        return seen

    def shortest(self, src: str, dst: str) -> list[str] | None:
        """The shortest chain of calls ``src`` → ``dst`` (its keys), else None."""
        out: dict[str, set[str]] = {}
        for a, b in self.calls:
            out.setdefault(a, set()).add(b)
        came = {src: src}
        todo = deque([src])
        while todo:
            at = todo.popleft()
            for nxt in sorted(out.get(at, ())):
                if nxt not in came:
                    came[nxt] = at
                    if nxt == dst:
                        path = [dst]
                        while path[-1] != src:
                            path.append(came[path[-1]])
                        return path[::-1]
                    todo.append(nxt)
        return None


def find_calls(package: Path) -> CallGraph:
    """The call graph of the package in directory ``package`` (its name is the directory's)."""
    graph = CallGraph()
    trees: dict[str, tuple[ast.Module, str]] = {}
    for path in sorted(package.rglob("*.py")):
        rel = path.relative_to(package).as_posix()
        parts = [package.name, *rel[:-3].split("/")]
        if parts[-1] == "__init__":
            parts.pop()
        module = ".".join(parts)
        tree = ast.parse(path.read_text(encoding="utf-8"))
        trees[module] = (tree, rel)
        graph.defs[module] = _Def(module, "module", rel, 1)
    for module, (tree, rel) in trees.items():
        _Definitions(graph, module, rel, module in _packages(trees)).visit_body(tree.body, graph.defs[module])
    for module, (tree, _) in trees.items():
        _Calls(graph, module).run(tree)
    return graph


def _packages(trees: dict[str, tuple[ast.Module, str]]) -> set[str]:
    return {m for m, (_, rel) in trees.items() if rel.endswith("__init__.py")}


def _package_modules(graph: CallGraph) -> set[str]:
    return {d.key for d in graph.defs.values() if d.kind == "module" and d.file.endswith("__init__.py")}


class _Definitions:
    """First pass: every def and class, and each module's top-level bindings (defs and from-imports)."""

    def __init__(self, graph: CallGraph, module: str, rel: str, is_package: bool) -> None:
        self.graph, self.module, self.rel = graph, module, rel
        self.package = module if is_package else module.rpartition(".")[0]

    def visit_body(self, body: list[ast.stmt], owner: _Def) -> None:
        for stmt in body:
            if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                kind = "class" if isinstance(stmt, ast.ClassDef) else "function"
                made = _Def(f"{owner.key}.{stmt.name}", kind, self.rel, stmt.lineno)
                if isinstance(stmt, ast.ClassDef):
                    made.bases = [b.value if isinstance(b, ast.Subscript) else b for b in stmt.bases]
                made = self.graph.defs.setdefault(made.key, made)  # an overload's body joins the first def's
                owner.members.setdefault(stmt.name, made.key)
                self.visit_body(stmt.body, made)
            elif isinstance(stmt, ast.ImportFrom):  # in a function too: its own binding
                base = self.absolute(stmt)
                for alias in stmt.names:
                    if alias.name != "*" and base is not None:
                        owner.members.setdefault(alias.asname or alias.name, f"{base}.{alias.name}")
            elif isinstance(stmt, ast.Import):
                for alias in stmt.names:
                    if alias.asname:
                        owner.members.setdefault(alias.asname, alias.name)
            else:  # a def inside an if, a loop, a with or a try is still its owner's
                for block in ("body", "orelse", "finalbody"):
                    self.visit_body(getattr(stmt, block, []), owner)
                for inner in [*getattr(stmt, "handlers", []), *getattr(stmt, "cases", [])]:
                    self.visit_body(inner.body, owner)

    def absolute(self, stmt: ast.ImportFrom) -> str | None:
        if stmt.level == 0:
            return stmt.module
        parts = self.package.split(".")
        if stmt.level - 1 > len(parts) - 1:
            return None
        base = ".".join(parts[: len(parts) - (stmt.level - 1)])
        return f"{base}.{stmt.module}" if stmt.module else base


class _Calls:
    """Second pass: each call (and each def used as a value) resolved from where it is written."""

    def __init__(self, graph: CallGraph, module: str) -> None:
        self.graph, self.module = graph, module

    def run(self, tree: ast.Module) -> None:
        mod = self.graph.defs[self.module]
        for stmt in ast.walk(tree):  # every import of the file, at whatever depth it is written
            if isinstance(stmt, ast.Import):
                self.graph.imports.update((self.module, a.name) for a in stmt.names if a.name in self.graph.defs)
            if not isinstance(stmt, ast.ImportFrom):
                continue
            base = _Definitions(self.graph, self.module, "", self.module in _package_modules(self.graph)).absolute(stmt)
            named = [self.graph.defs.get(f"{base}.{a.name}") for a in stmt.names]
            submodules = [d.key for d in named if d is not None and d.kind == "module"]
            modules = submodules or ([base] if base in self.graph.defs and base != self.module else [])
            self.graph.imports.update((self.module, module) for module in modules)
            for alias in stmt.names:  # a name imported from a module: the module reaches that def
                target = self.final(f"{base}.{alias.name}")
                if target is not None and self.graph.defs[target].kind != "module":
                    self.graph.imports.add((self.module, target))
        self.body(tree.body, [mod], None)

    # ------------------------------------------------------------------ naming

    def final(self, key: str, hops: int = 0) -> str | None:
        """``key`` followed through module bindings (re-exports) to a def or module of the package."""
        if key in self.graph.defs:
            return key
        head, _, name = key.rpartition(".")
        if not head or hops > 8:
            return None
        owner = self.final(head, hops + 1)
        if owner is None:
            return None
        member = self.graph.defs[owner].members.get(name)
        return self.final(member, hops + 1) if member is not None and member != key else None

    def member(self, cls: str, name: str, skip_self: bool = False) -> str | None:
        """``name`` looked up on class ``cls`` and its in-package bases, depth first, left to right."""
        order, todo, seen = [], [cls], set()
        while todo:
            at = todo.pop(0)
            if at in seen:
                continue
            seen.add(at)
            order.append(at)
            todo[:0] = [b for b in self.bases(at)]
        for at in order[1:] if skip_self else order:
            found = self.graph.defs[at].members.get(name)
            if found is not None:
                return found
        return None

    def bases(self, cls: str) -> list[str]:
        definition = self.graph.defs[cls]
        module = cls
        while self.graph.defs[module].kind != "module":
            module = module.rpartition(".")[0]
        out = []
        for base in definition.bases:
            key = self.dotted(base, [self.graph.defs[module]])
            if key is not None and self.graph.defs[key].kind == "class":
                out.append(key)
        return out

    def dotted(self, expr: ast.expr, scopes: list[_Def], local: frozenset[str] = frozenset()) -> str | None:
        if isinstance(expr, ast.Name):
            if expr.id in local:
                return None
            for scope in reversed(scopes):
                if scope.kind == "class" and scope is not scopes[-1]:
                    continue  # a class body's names are not seen from its methods
                if expr.id in scope.members:
                    return self.final(scope.members[expr.id])
            return None
        if isinstance(expr, ast.Attribute):
            owner = self.dotted(expr.value, scopes, local)
            if owner is None:
                return None
            if self.graph.defs[owner].kind == "class":
                return self.member(owner, expr.attr)
            return self.final(f"{owner}.{expr.attr}")
        return None

    # ------------------------------------------------------------------ walking

    def body(
        self, stmts: list[ast.stmt], scopes: list[_Def], method_of: str | None, local: frozenset[str] = frozenset()
    ) -> None:
        for stmt in stmts:
            self.statement(stmt, scopes, method_of, local)

    def statement(self, stmt: ast.stmt, scopes: list[_Def], method_of: str | None, local: frozenset[str]) -> None:
        owner = scopes[-1]
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef):
            made = self.graph.defs[f"{owner.key}.{stmt.name}"]
            for expr in [*stmt.decorator_list, *stmt.args.defaults, *(d for d in stmt.args.kw_defaults if d)]:
                self.expression(expr, scopes, made.key if expr in stmt.decorator_list else owner.key, None, local)
            args = stmt.args
            params = [a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg] if a]
            assigned = {n.id for n in ast.walk(stmt) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
            is_static = any(isinstance(d, ast.Name) and d.id == "staticmethod" for d in stmt.decorator_list)
            method = owner.key if owner.kind == "class" and not is_static and params else None
            own = frozenset(params) | frozenset(assigned - set(made.members))
            self.body(stmt.body, [*scopes, made], method, own)
            return
        if isinstance(stmt, ast.ClassDef):
            made = self.graph.defs[f"{owner.key}.{stmt.name}"]
            for expr in [*stmt.decorator_list, *stmt.bases, *(k.value for k in stmt.keywords)]:
                self.expression(expr, scopes, made.key if expr in stmt.decorator_list else owner.key, None, local)
            for base in self.bases(made.key):
                self.graph.extends.add((made.key, base))
            self.body(stmt.body, [*scopes, made], None, frozenset())
            return
        for child in ast.iter_child_nodes(stmt):
            if isinstance(child, ast.stmt):
                self.statement(child, scopes, method_of, local)
            elif isinstance(child, ast.expr):
                self.expression(child, scopes, owner.key, method_of, local)
            else:
                for sub in ast.iter_child_nodes(child):
                    if isinstance(sub, ast.stmt):
                        self.statement(sub, scopes, method_of, local)
                    elif isinstance(sub, ast.expr):
                        self.expression(sub, scopes, owner.key, method_of, local)

    def expression(
        self, expr: ast.expr, scopes: list[_Def], caller: str, method_of: str | None, local: frozenset[str]
    ) -> None:
        called: set[int] = set()
        for node in ast.walk(expr):
            if isinstance(node, ast.Call):
                called.add(id(node.func))
                target = self.callee(node.func, scopes, method_of, local)
                if target is not None:
                    self.graph.calls.setdefault((caller, target), []).append(node.lineno)
            elif (
                isinstance(node, ast.Name | ast.Attribute) and isinstance(node.ctx, ast.Load) and id(node) not in called
            ):
                target = self.dotted(node, scopes, local)
                if target is not None and self.graph.defs[target].kind == "function":
                    self.graph.refs.add((caller, target))

    def callee(self, func: ast.expr, scopes: list[_Def], method_of: str | None, local: frozenset[str]) -> str | None:
        if isinstance(func, ast.Attribute) and method_of is not None:
            receiver = func.value
            if isinstance(receiver, ast.Name) and receiver.id in ("self", "cls"):
                return self.member(method_of, func.attr)
            if isinstance(receiver, ast.Call) and isinstance(receiver.func, ast.Name) and receiver.func.id == "super":
                return self.member(method_of, func.attr, skip_self=True)
        return self.dotted(func, scopes, local)
