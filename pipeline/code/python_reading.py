"""The Python handler's parse step: one module read with ``ast`` into a partial record — its
definitions, its import bindings and its call sites as written. Nothing is resolved here (calls
cross files: python_assembly.py resolves them over every partial), so a file's record depends on
that file alone and on which directories are packages."""

from __future__ import annotations

import ast
import builtins
import inspect
import io
import tokenize
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, cast

from drsg.pipeline.code.handler import SourceTree

MAX_VALUE_CHARS = 200  # a Var's value as written, cut here: it names the value, it is not a copy
MAX_DOC_CHARS = 2000
BUILTINS = frozenset(dir(builtins))


def module_key(path: str, packages: frozenset[str], label: str | None) -> tuple[str, bool]:
    """The dotted module path of a root-relative file, and whether it is a package's ``__init__``."""
    folder, _, name = path.rpartition("/")
    stem = name.split(".", 1)[0]
    is_package = stem == "__init__"
    parts = [] if is_package else [stem]
    while folder in packages:
        if folder == "":
            parts.append(label or stem)
            break
        folder, _, part = folder.rpartition("/")
        parts.append(part)
    if not parts:  # an __init__.py whose folder is not a package of this tree cannot happen; be safe
        parts.append(stem)
    return ".".join(reversed(parts)), is_package


def _decode(data: bytes) -> str:
    encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    return data.decode("utf-8-sig" if encoding == "utf-8-sig" else encoding)


def read_module(tree: SourceTree, path: str, packages: frozenset[str], include_source: bool) -> dict[str, Any]:
    key, is_package = module_key(path, packages, tree.label())
    record: dict[str, Any] = {"path": path, "module": key, "package": is_package}
    try:
        text = _decode(tree.read(path))
        module = ast.parse(text, filename=path, type_comments=False)
    except (ValueError, SyntaxError, UnicodeDecodeError, LookupError, RecursionError, MemoryError) as exc:
        reason = exc.msg if isinstance(exc, SyntaxError) else str(exc)
        record["skipped"] = f"{path}: {reason}".replace("\n", " ")[:300]
        return record
    reader = _ModuleReader(key, is_package, path, text, include_source)
    reader.read(module)
    record.update(reader.result())
    return record


@dataclass
class _Scope:
    key: str  # the def's key ("" for none)
    kind: str  # Module, Class, Function, Method
    names: dict[str, str] = field(default_factory=dict)  # local name -> key of a def in this file
    types: dict[str, str] = field(default_factory=dict)  # local variable -> callee as written (x = Foo())
    locals: set[str] = field(default_factory=set)  # parameters and assigned names of a function


class _ModuleReader:
    """One file's facts as written: definitions, bindings, bases and call sites (nothing resolved)."""

    def __init__(self, key: str, is_package: bool, path: str, text: str, include_source: bool) -> None:
        self.key, self.is_package, self.path, self.text = key, is_package, path, text
        self.lines = text.splitlines(keepends=True)
        self.include_source = include_source
        self.defs: list[dict[str, Any]] = []
        self.defined: dict[str, dict[str, Any]] = {}  # key -> its record in defs (the first binding)
        self.duplicates: list[str] = []
        self.imports: dict[str, str] = {}  # module-level name -> absolute dotted target
        self.import_edges: list[list[Any]] = []  # [target module, line]
        self.stars: list[str] = []  # modules imported with *
        self.sites: list[dict[str, Any]] = []
        self.exported: set[str] | None = None

    # -- the walk

    def read(self, module: ast.Module) -> None:
        self.exported = _dunder_all(module)
        doc = _doc(module)
        props: dict[str, Any] = {"path": self.path, "file": self.path, "line": 1}
        if doc:
            props["doc_comment"] = doc
        self.defs.append({"key": self.key, "label": "Module", "parent": None, "line": 1, "props": props})
        self.defined[self.key] = self.defs[-1]
        scope = _Scope(self.key, "Module")
        self._bind_module_names(module, scope)
        self._body(module.body, [scope])
        self.defs[0]["props"]["imports"] = sorted(set(self.imports.values()) | set(self.stars))

    def _bind_module_names(self, module: ast.Module, scope: _Scope) -> None:
        """Module names are bound before the walk: a function may call one defined below it."""
        for statement in _flat(module.body):
            if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                scope.names.setdefault(statement.name, f"{self.key}.{statement.name}")
            elif isinstance(statement, ast.Import | ast.ImportFrom):
                self._import(statement)

    def _body(self, body: list[ast.stmt], scopes: list[_Scope]) -> None:
        for statement in body:
            self._statement(statement, scopes)

    def _statement(self, node: ast.stmt, scopes: list[_Scope]) -> None:
        scope = scopes[-1]
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            self._function(node, scopes)
        elif isinstance(node, ast.ClassDef):
            self._class(node, scopes)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            if scope.kind != "Module":
                self._import(node, local=scope)
        else:
            if isinstance(node, ast.Assign | ast.AnnAssign) and scope.kind in ("Module", "Function", "Method"):
                self._assignment(node, scopes)
            self._children(node, scopes)

    def _children(self, node: ast.AST, scopes: list[_Scope]) -> None:
        """A statement's parts: statements are walked as such (an except block, a match case)."""
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.stmt):
                self._statement(child, scopes)
            elif isinstance(child, ast.expr):
                self._expression(child, scopes)
            else:
                self._children(child, scopes)

    def _function(self, node: ast.FunctionDef | ast.AsyncFunctionDef, scopes: list[_Scope]) -> None:
        parent = scopes[-1]
        key = f"{parent.key}.{node.name}"
        label = "Method" if parent.kind == "Class" else "Function"
        parent.names.setdefault(node.name, key)
        prefix = "async def" if isinstance(node, ast.AsyncFunctionDef) else "def"
        signature = f"{prefix} {node.name}({ast.unparse(node.args)})"
        if node.returns is not None:
            signature += f" -> {ast.unparse(node.returns)}"
        props = {"signature": signature, "is_async": isinstance(node, ast.AsyncFunctionDef)}
        self._define(key, label, parent.key, node, props)
        scope = _Scope(key, label)
        arguments = node.args
        every = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs, arguments.vararg, arguments.kwarg]
        scope.locals.update(arg.arg for arg in every if arg is not None)
        for decorator in node.decorator_list:
            self._expression(decorator, scopes, caller=key, decorator=True)
        for default in [*node.args.defaults, *(d for d in node.args.kw_defaults if d is not None)]:
            self._expression(default, scopes)
        for statement in _flat(node.body):  # local defs are visible throughout the body
            if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                scope.names.setdefault(statement.name, f"{key}.{statement.name}")
        self._body(node.body, [*scopes, scope])

    def _class(self, node: ast.ClassDef, scopes: list[_Scope]) -> None:
        parent = scopes[-1]
        key = f"{parent.key}.{node.name}"
        parent.names.setdefault(node.name, key)
        fields: list[str] = []
        for statement in node.body:
            if isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name):
                fields.append(statement.target.id)
            elif isinstance(statement, ast.Assign):
                fields.extend(t.id for t in statement.targets if isinstance(t, ast.Name))
        bases = []
        for base in node.bases:
            written = _dotted(base.value if isinstance(base, ast.Subscript) else base)
            if written is not None:
                bases.append([written, base.lineno, self._local_target(written, scopes)])
        self._define(key, "Class", parent.key, node, {"fields": list(dict.fromkeys(fields))}, bases=bases)
        for decorator in node.decorator_list:
            self._expression(decorator, scopes, caller=key, decorator=True)
        for keyword in node.keywords:
            self._expression(keyword.value, scopes)
        scope = _Scope(key, "Class")
        for statement in node.body:
            if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                scope.names.setdefault(statement.name, f"{key}.{statement.name}")
        # Class-body names are not visible inside its methods (Python's scoping): methods see the
        # enclosing scopes, so the class scope is pushed for the body's own statements only.
        for statement in node.body:
            if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef):
                self._function(statement, [*scopes, scope])
                if statement.name == "__init__":
                    self._self_attributes(statement, key, [*scopes, scope])
            else:
                self._statement(statement, [*scopes, scope])

    def _self_attributes(
        self, init: ast.FunctionDef | ast.AsyncFunctionDef, class_key: str, scopes: list[_Scope]
    ) -> None:
        """``self.x = Foo(...)`` in ``__init__``: x's class, as written, for ``self.x.m()`` calls."""
        for node in ast.walk(init):
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
                callee = _dotted(node.value.func)
                for target in node.targets:
                    if (
                        callee is not None
                        and isinstance(target, ast.Attribute)
                        and isinstance(target.value, ast.Name)
                        and target.value.id == "self"
                    ):
                        self.defined[class_key].setdefault("self_attrs", {}).setdefault(
                            target.attr, [callee, self._local_target(callee, scopes)]
                        )

    def _assignment(self, node: ast.Assign | ast.AnnAssign, scopes: list[_Scope]) -> None:
        scope = scopes[-1]
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        names = [n for t in targets for n in _target_names(t)]
        if scope.kind != "Module":  # a local: remember what class it holds, for x.method() calls
            callee = _dotted(node.value.func) if isinstance(node.value, ast.Call) else None
            scope.locals.update(names)
            for name in names:
                if callee is not None:
                    scope.types[name] = callee
                else:
                    scope.types.pop(name, None)
            return
        for name in names:
            if name == "__all__" or (name.startswith("__") and name.endswith("__")):
                continue
            key = f"{self.key}.{name}"
            if key in self.defined or name in scope.names:
                continue  # a rebinding, or a placeholder for a def elsewhere in the module: not a Var
            annotation = node.annotation if isinstance(node, ast.AnnAssign) else None
            alias = annotation is not None and _dotted(annotation) in ("TypeAlias", "typing.TypeAlias")
            label = "TypeAlias" if alias else ("Const" if name.isupper() else "Var")
            props: dict[str, Any] = {}
            if annotation is not None and not alias:
                props["signature"] = ast.unparse(annotation)
            if node.value is not None:
                props["value"] = _cut(self._segment(node.value) or ast.unparse(node.value))
            self._define(key, label, self.key, node, props)

    def _import(self, node: ast.Import | ast.ImportFrom, local: _Scope | None = None) -> None:
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    bound, target = alias.asname, alias.name
                else:  # `import a.b` binds a; a.b.f() is then read as a chain from a
                    bound = target = alias.name.split(".", 1)[0]
                self._bind(bound, target, local)
                self.import_edges.append([alias.name, node.lineno])
            return
        base = self._absolute(node.module, node.level)
        if base is None:
            return  # a relative import climbing past the tree's root: nothing here to point at
        for alias in node.names:
            if alias.name == "*":
                self.stars.append(base)
                continue
            self._bind(alias.asname or alias.name, f"{base}.{alias.name}" if base else alias.name, local)
        self.import_edges.append([base, node.lineno, [a.name for a in node.names]])

    def _bind(self, name: str, target: str, local: _Scope | None) -> None:
        if local is not None:
            local.types.pop(name, None)
            local.names[name] = "@" + target  # an import binding, resolved when assembling
        else:
            self.imports.setdefault(name, target)

    def _absolute(self, module: str | None, level: int) -> str | None:
        if level == 0:
            return module
        parts = self.key.split(".")
        keep = len(parts) - level + (1 if self.is_package else 0)
        if keep < 1:
            return None
        return ".".join(parts[:keep] + ([module] if module else []))

    def _define(self, key: str, label: str, parent: str, node: ast.AST, props: dict[str, Any], **extra: Any) -> None:
        if key in self.defined:
            self.duplicates.append(key)
            return
        line = getattr(node, "lineno", 1)
        props = {**props, "file": self.path, "line": line}
        name = key.rsplit(".", 1)[-1]
        props["visibility"] = "exported" if _exported(name, parent == self.key, self.exported) else "private"
        doc = _doc(node) if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) else None
        if doc:
            props["doc_comment"] = doc
        if self.include_source and isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            first = min([line, *(d.lineno for d in node.decorator_list)])
            props["_code"] = "".join(self.lines[first - 1 : node.end_lineno])
        self.defs.append({"key": key, "label": label, "parent": parent, "line": line, "props": props, **extra})
        self.defined[key] = self.defs[-1]

    # -- call sites and references

    def _expression(
        self, node: ast.AST, scopes: list[_Scope], caller: str | None = None, decorator: bool = False
    ) -> None:
        caller = caller or _caller(scopes)
        if decorator:
            func = node.func if isinstance(node, ast.Call) else node
            self._site("CALLS", func, scopes, caller)
            if isinstance(node, ast.Call):
                for argument in [*node.args, *(k.value for k in node.keywords)]:
                    self._expression(argument, scopes, caller)
            return
        # One pass, in source order: a call's callee is one site, a dotted name is read as one
        # name (not also as each of its parts), a lambda's or a comprehension's body is read with
        # the enclosing definition (its calls are that definition's calls).
        stack: list[ast.AST] = [node]
        while stack:
            current = stack.pop()
            kind = type(current)
            if kind is ast.Call:
                call = cast(ast.Call, current)
                self._site("CALLS", call.func, scopes, caller)
                children: list[ast.AST] = [*call.args, *(k.value for k in call.keywords)]
                if _dotted(call.func) is None:
                    children.insert(0, call.func)  # f()(x), a[0](), (lambda: g())(): read inside
                stack.extend(reversed(children))
            elif kind is ast.Name:
                if type(cast(ast.Name, current).ctx) is ast.Load:
                    self._site("REFERENCES", current, scopes, caller)
            elif kind is ast.Attribute and _dotted(current) is not None:
                if type(cast(ast.Attribute, current).ctx) is ast.Load:
                    self._site("REFERENCES", current, scopes, caller)
            else:
                stack.extend(reversed(list(ast.iter_child_nodes(current))))

    def _site(self, kind: str, func: ast.AST, scopes: list[_Scope], caller: str) -> None:
        dotted = _dotted(func)
        if kind == "REFERENCES" and dotted is not None:
            head = dotted.partition(".")[0]
            if dotted == "self" or (head != "self" and any(head in s.locals or head in s.types for s in scopes)):
                return  # a local's value: most names read are these, and none names a definition
        line = getattr(func, "lineno", 0)
        site: dict[str, Any] = {"kind": kind, "caller": caller, "line": line, "ref": ""}
        method_scope = next((s for s in reversed(scopes) if s.kind == "Method"), None)
        class_key = method_scope.key.rsplit(".", 1)[0] if method_scope is not None else None
        if isinstance(func, ast.Attribute) and _is_super_call(func.value):
            if class_key is None:
                return
            site.update(form="super", name=func.attr, cls=class_key)
        elif dotted is None:
            return  # a call of a call's result, a subscript, a lambda: nothing written to resolve
        elif dotted.startswith("self.") and class_key is not None and method_scope is not None:
            after_self = dotted.split(".")[1:]
            if len(after_self) == 1:
                site.update(form="self", name=after_self[0], cls=class_key)
            elif len(after_self) == 2:
                site.update(form="self-attr", attr=after_self[0], name=after_self[1], cls=class_key)
            else:
                site.update(form="unknown-receiver")
        else:
            head, _, rest = dotted.partition(".")
            local_type = next((s.types[head] for s in reversed(scopes) if head in s.types), None)
            if local_type is not None and rest and "." not in rest:
                site.update(
                    form="receiver", type=local_type, type_target=self._local_target(local_type, scopes), name=rest
                )
            elif local_type is not None or (rest and any(head in s.locals for s in scopes)):
                site.update(form="unknown-receiver")  # a parameter's or a local's method: its class is not known
            else:
                target = self._local_target(dotted, scopes)
                if target is None:
                    if kind == "REFERENCES":
                        return  # a plain variable read, not a reference to anything defined
                    site.update(form="external" if head in BUILTINS or head in self.imports else "unbound", name=dotted)
                    if self.stars and head not in BUILTINS:
                        site.update(form="star", name=dotted, stars=list(self.stars))
                else:
                    site.update(form="name" if not rest else "chain", target=target)
        site["ref"] = _cut(self._segment(func) or ast.unparse(func))
        self.sites.append(site)

    def _local_target(self, dotted: str, scopes: list[_Scope]) -> str | None:
        """What a dotted name written here refers to, as an absolute dotted path (None: unbound)."""
        head, _, rest = dotted.partition(".")
        for scope in reversed(scopes):
            if scope.kind == "Class" and scope is not scopes[-1]:
                continue  # an enclosing class's names are not in scope for nested code
            bound = scope.names.get(head)
            if bound is not None:
                base = bound[1:] if bound.startswith("@") else bound
                return f"{base}.{rest}" if rest else base
        target = self.imports.get(head)
        if target is not None:
            return f"{target}.{rest}" if rest else target
        return None

    def _segment(self, node: ast.AST) -> str | None:
        """The node's source as written (``ast.get_source_segment`` re-splits the whole file per call)."""
        first, last = getattr(node, "lineno", None), getattr(node, "end_lineno", None)
        start, end = getattr(node, "col_offset", None), getattr(node, "end_col_offset", None)
        if first is None or last is None or start is None or end is None or last - first > 20:
            return None
        lines = [line.encode() for line in self.lines[first - 1 : last]]  # offsets count UTF-8 bytes
        if not lines:
            return None
        if len(lines) == 1:
            return lines[0][start:end].decode(errors="replace")
        return b"".join([lines[0][start:], *lines[1:-1], lines[-1][:end]]).decode(errors="replace")

    def result(self) -> dict[str, Any]:
        return {
            "defs": self.defs,
            "imports": self.import_edges,
            "bindings": self.imports,
            "stars": self.stars,
            "sites": self.sites,
            "duplicates": self.duplicates,
        }


def _caller(scopes: list[_Scope]) -> str:
    """The innermost def whose code this is (a class body's calls belong to the class)."""
    return scopes[-1].key


def _flat(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """Statements of a body, looking into if/try/with blocks (conditional definitions count)."""
    for statement in body:
        yield statement
        if isinstance(statement, ast.If | ast.Try | ast.With | ast.AsyncWith | ast.For | ast.While):
            for name in ("body", "orelse", "finalbody"):
                yield from _flat(getattr(statement, name, []))
            for handler in getattr(statement, "handlers", []):
                yield from _flat(handler.body)


def _target_names(target: ast.expr) -> Iterator[str]:
    if isinstance(target, ast.Name):
        yield target.id
    elif isinstance(target, ast.Tuple | ast.List):
        for element in target.elts:
            yield from _target_names(element)


def _dotted(node: ast.AST) -> str | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))


def _is_super_call(node: ast.AST) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "super"


def _dunder_all(module: ast.Module) -> set[str] | None:
    for statement in module.body:
        if isinstance(statement, ast.Assign | ast.AnnAssign):
            targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
            if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets) and isinstance(
                statement.value, ast.List | ast.Tuple
            ):
                return {
                    e.value for e in statement.value.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)
                }
    return None


def _exported(name: str, top_level: bool, exported: set[str] | None) -> bool:
    if top_level and exported is not None:
        return name in exported
    return not name.startswith("_") or (name.startswith("__") and name.endswith("__"))


def _doc(node: ast.AST) -> str | None:
    try:
        doc = ast.get_docstring(node, clean=False)  # type: ignore[arg-type]
    except TypeError:
        return None
    return _cut(inspect.cleandoc(doc), MAX_DOC_CHARS) if doc else None


def _cut(text: str, limit: int = MAX_VALUE_CHARS) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


# --------------------------------------------------------------------------------------- assemble
