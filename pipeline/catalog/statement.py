"""What ``catalog sql`` may run: a statement is parsed (sqlglot, in the engine's dialect) and allowed
only when it is known safe, then rewritten so no sensitive value is ever read into an answer. Pure.

Allowed: one ``SELECT`` (with CTEs, subqueries, joins and set operations) built from the node kinds
in ``_NODES``, calling only functions on ``functions.ALLOWED``, over tables and columns resolved
against the LIVE schema (``LiveSchema``, read by the backend in the session that runs the
statement). A column is sensitive by its name (``masking.is_sensitive``), as a generated column
whose expression reads a sensitive one, or as a view's column whose lineage reaches one; an output
of a CTE or subquery is sensitive when its expression reads a sensitive column. A sensitive column
in the outermost projection — bare, aliased or inside an expression — is replaced by the literal
``[REDACTED]``; anywhere else (``WHERE``, ``ON``, ``GROUP BY``, ``ORDER BY``, ``HAVING``, a
subquery in a condition) the statement is refused. What is run is the checked tree printed back
(tables qualified by their schema), never the text as given."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

import sqlglot
from sqlglot import exp
from sqlglot.errors import OptimizeError, ParseError, SqlglotError
from sqlglot.optimizer.qualify import qualify
from sqlglot.optimizer.scope import Scope, traverse_scope
from sqlglot.schema import MappingSchema

from drsg.kernel.errors import UsageError
from drsg.pipeline.catalog.functions import allowed_function, allowed_type
from drsg.pipeline.catalog.masking import REDACTED, is_sensitive

#: sqlglot's dialect per engine. SQLite and MySQL/MariaDB compare column names case-insensitively,
#: quoted (`Mixed Col`) or not, so every name is resolved lowercased there and spelled back as the
#: database holds it (``_Checker._respell``); PostgreSQL's quoted names keep their case.
DIALECTS = {"sqlite": "sqlite", "postgresql": "postgres", "mysql": "mysql, normalization_strategy=case_insensitive"}
_CASE_INSENSITIVE = {"sqlite", "mysql"}
#: the node kinds a statement may hold (functions are checked by name, not here)
_NODES: tuple[type[exp.Expr], ...] = (
    exp.Select, exp.Union, exp.Intersect, exp.Except, exp.From, exp.Join, exp.Table, exp.TableAlias,
    exp.Column, exp.Identifier, exp.Star, exp.Alias, exp.Literal, exp.Boolean, exp.Null, exp.Where,
    exp.Group, exp.Having, exp.Order, exp.Ordered, exp.Limit, exp.Offset, exp.Fetch, exp.With, exp.CTE,
    exp.Subquery, exp.Paren, exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE, exp.NullSafeEQ,
    exp.NullSafeNEQ, exp.And, exp.Or, exp.Not, exp.Add, exp.Sub, exp.Mul, exp.Div, exp.IntDiv, exp.Mod,
    exp.Neg, exp.DPipe, exp.Like, exp.ILike, exp.In, exp.Between, exp.Is, exp.Distinct, exp.Window,
    exp.WindowSpec, exp.Tuple, exp.Exists, exp.DataType, exp.DataTypeParam, exp.Var, exp.Interval,
    exp.HexString, exp.Escape, exp.Bracket, exp.Any, exp.All, exp.If,
)  # fmt: skip


@dataclass
class LiveTable:
    """One table or view as the database holds it now (``columns`` in order)."""

    schema: str
    name: str
    kind: str = "table"  # "table", "view" (a view or materialized view: lineage by ``definition``)
    columns: list[str] = field(default_factory=list)
    generated: dict[str, str] = field(default_factory=dict)  # column -> its generation expression
    definition: str | None = None  # a view's SELECT
    refused: str | None = None  # why the table is never read (an FTS index's shadow table)


@dataclass
class LiveSchema:
    engine: str
    default: str  # the schema an unqualified name is in
    tables: dict[tuple[str, str], LiveTable] = field(default_factory=dict)  # by :meth:`key`

    def key(self, schema: str, name: str) -> tuple[str, str]:
        """A table's key: lowercased where the engine resolves names so; PostgreSQL's as spelled
        (``"Orders"`` and ``orders`` are two tables there)."""
        return (schema.lower(), name.lower()) if self.engine in _CASE_INSENSITIVE else (schema, name)

    def add(self, table: LiveTable) -> None:
        self.tables[self.key(table.schema, table.name)] = table


@dataclass
class Checked:
    sql: str  # what is run
    masked: list[str]  # output names answered [REDACTED]
    redacted: list[str]  # "table.column" the statement would have read, masked
    sensitive: set[tuple[str, str]]  # every sensitive (table, column) of the tables: the database's own layer


def check(sql: str, live: LiveSchema, extra: Iterable[str] = (), *, mask: bool = True) -> Checked:
    """The statement to run in place of ``sql``, or a ``UsageError`` saying what is not allowed."""
    return _Checker(live, list(extra), mask).statement(sql)


def refuse(what: str) -> UsageError:
    return UsageError(f"sql: {what}")


@dataclass
class Lineage:
    """What of one table or view is sensitive, worked out as :func:`check` does."""

    sensitive: set[str]  # its sensitive columns, lowercased
    reads: set[tuple[str, str]]  # the sensitive (table, column) a view's definition reads anywhere
    unknown: str | None = None  # why a view's lineage cannot be worked out (then nothing of it is known safe)


def lineage(live: LiveSchema, extra: Iterable[str] = ()) -> dict[tuple[str, str], Lineage]:
    """Every table's and view's :class:`Lineage`, keyed as ``live.tables`` (``catalog grants``, the
    role warning). A view gets a checker of its own, so ``reads`` holds what it reads, nested views included."""
    names = list(extra)
    shared = _Checker(live, names, True)
    out: dict[tuple[str, str], Lineage] = {}
    for key, table in live.tables.items():
        checker = _Checker(live, names, True) if table.kind == "view" else shared
        try:
            sensitive = checker._sensitive(table)
        except UsageError as exc:
            out[key] = Lineage(set(), set(), str(exc).removeprefix("sql: "))
            continue
        out[key] = Lineage(sensitive, set(checker.read) if table.kind == "view" else set())
    return out


class _Checker:
    def __init__(self, live: LiveSchema, extra: list[str], mask: bool) -> None:
        self.live, self.extra, self.mask = live, extra, mask
        self.dialect = DIALECTS[live.engine]
        self.views: dict[tuple[str, str], set[str]] = {}  # a view's sensitive columns, once worked out
        self.read: set[tuple[str, str]] = set()  # (table, column) of sensitive columns the statement reads
        self.depth = 0

    # ------------------------------------------------------------------ parsing and resolving

    def statement(self, sql: str) -> Checked:
        tree = self._parse(sql)
        if isinstance(tree, exp.Select):
            for item in tree.expressions:
                if not isinstance(item, exp.Alias | exp.Column | exp.Star):
                    item.meta["drsg_bare"] = item.sql(self.dialect)  # the name the engine would give it
        for select in _branches(tree):
            for item in select.expressions:
                if isinstance(item, exp.Alias | exp.Column):
                    item.meta["drsg_name"] = item.alias_or_name  # as written: the resolver may lowercase it
        scopes = self._resolve(tree)
        self._respell(tree, scopes)
        outputs = self._lineage(scopes, strict=True)
        _name_outputs(tree)
        masked, redacted = self._mask(tree, scopes[-1], outputs) if self.mask else ([], [])
        return Checked(tree.sql(self.dialect), masked, redacted, self._pairs())

    def _pairs(self) -> set[tuple[str, str]]:
        """Every sensitive (table, column) of the live schema's tables, for the database's own layer."""
        if not self.mask:
            return set()
        return {
            (table.name.lower(), column)
            for table in self.live.tables.values()
            if table.kind == "table" and not table.refused
            for column in self._sensitive(table)
        }

    def _parse(self, sql: str) -> exp.Query:
        try:
            trees = [t for t in sqlglot.parse(sql, read=self.dialect) if t is not None]
        except ParseError as exc:
            error = exc.errors[0] if exc.errors else {}
            where = f" at line {error.get('line')}, column {error.get('col')}" if error.get("line") else ""
            raise refuse(f"cannot parse the statement{where}; write one SELECT in {self.live.engine}'s SQL") from None
        except SqlglotError:
            raise refuse(f"cannot parse the statement; write one SELECT in {self.live.engine}'s SQL") from None
        if len(trees) != 1:
            raise refuse("one statement at a time; remove everything after the first ';'")
        tree = trees[0]
        if not isinstance(tree, exp.Select | exp.SetOperation):
            raise refuse("only a read-only SELECT is allowed (no writes, DDL, SET, PRAGMA or EXPLAIN)")
        self._allowed(tree)
        return tree

    def _allowed(self, tree: exp.Expr) -> None:
        """Every node a kind on the allow-list, every function and type on theirs."""
        for node in tree.walk():
            if isinstance(node, _NODES):  # structure and operators (some are functions to sqlglot: AND, OR)
                pass
            elif isinstance(node, exp.Func):
                name = node.name if isinstance(node, exp.Anonymous) else node.sql_name()
                if not allowed_function(self.live.engine, node):
                    raise refuse(
                        f"{name.lower()}() is not on the functions `catalog sql` allows (they compute on the row "
                        f"and read nothing else); leave it out or use `drsg catalog find`"
                    )
            elif isinstance(node, exp.DataType):
                if not allowed_type(node):
                    raise refuse(f"a cast to {node.sql(self.dialect)} is not allowed; cast to a plain type")
            elif isinstance(node, exp.TableColumn):
                raise refuse(
                    f"{node.name} as a value reads the whole row, masked columns too; name the columns instead"
                )
            else:
                raise refuse(
                    f"{node.key.upper()} is not allowed in `catalog sql` (one SELECT over tables and columns, "
                    f"simple expressions); rewrite without it"
                )
            if isinstance(node, exp.Select) and node.args.get("into"):
                raise refuse("SELECT … INTO writes; leave the INTO out")

    def _schema(self) -> MappingSchema:
        nested: dict[str, object] = {}  # schema -> table -> column -> type
        for table in self.live.tables.values():
            columns = {c: "text" for c in table.columns}  # folded by the dialect (SQLite: ASCII only)
            tables = nested.setdefault(table.schema, {})
            assert isinstance(tables, dict)
            tables[table.name] = columns
        return MappingSchema(nested, dialect=self.dialect, normalize=self.live.engine in _CASE_INSENSITIVE)

    def _resolve(self, tree: exp.Expr) -> list[Scope]:
        """Qualify every table and column against the live schema; the scopes, innermost first."""
        try:
            qualify(
                tree,
                dialect=self.dialect,
                db=self.live.default,
                schema=self._schema(),
                validate_qualify_columns=True,
            )
        except (OptimizeError, SqlglotError) as exc:
            for node in tree.find_all(exp.Table):
                if node.db:  # qualified by the resolver: a name the schema has, or not
                    self._table(node)
            message = str(exc).split(". Line")[0].strip().rstrip(".")
            raise refuse(f"{message}; `drsg catalog schema` lists the tables and their columns") from None
        self._allowed(tree)  # again: resolving turns some names into nodes of their own (a whole-row reference)
        scopes = traverse_scope(tree)
        for scope in scopes:
            for source in scope.sources.values():
                if isinstance(source, exp.Table):
                    self._table(source)
        return scopes

    def _respell(self, tree: exp.Query, scopes: list[Scope]) -> None:
        """Names as the database spells them where the resolver lowercased them: each table and its
        columns (MariaDB's table names are case-sensitive), and each output as the statement wrote it."""
        for scope in scopes:
            for column in scope.columns:
                source, _ = _source(scope, column.table)
                if isinstance(source, exp.Table):
                    spelled = {c.lower(): c for c in self._table(source).columns}.get(column.name.lower())
                    if spelled is not None:
                        column.set("this", exp.to_identifier(spelled, quoted=True))
            for source in scope.sources.values():
                if isinstance(source, exp.Table):
                    table = self._table(source)
                    source.set("this", exp.to_identifier(table.name, quoted=True))
                    source.set("db", exp.to_identifier(table.schema, quoted=True))
        for select in _branches(tree):
            for item in select.expressions:
                if not isinstance(item, exp.Alias):
                    continue
                name = item.meta.get("drsg_name") or item.this.meta.get("drsg_name")
                if name is None and isinstance(item.this, exp.Column):
                    name = item.this.name  # a column ``*`` stood for: its own spelling
                if name and name.lower() == item.alias.lower():
                    item.set("alias", exp.to_identifier(name, quoted=True))

    def _table(self, node: exp.Table) -> LiveTable:
        key = self.live.key(node.db, node.name)
        table = self.live.tables.get(key)
        if table is None or node.catalog or not isinstance(node.this, exp.Identifier):
            raise refuse(
                f"{node.db + '.' if node.db else ''}{node.name} is not a table or view of this database (system "
                f"catalogs and statistics are not read); `drsg catalog schema` lists them"
            )
        if table.refused:
            raise refuse(f"{table.name} is not read: {table.refused}")
        return table

    # ------------------------------------------------------------------ which columns are sensitive

    def _sensitive(self, table: LiveTable) -> set[str]:
        """The table's sensitive columns, lowercased."""
        if table.kind == "view":
            return self._view(table)
        by_name = {c.lower() for c in table.columns if is_sensitive(c, self.extra)}
        for column, expression in table.generated.items():
            if column.lower() not in by_name and self._generated_reads(expression, by_name):
                by_name.add(column.lower())
        return by_name

    def _generated_reads(self, expression: str, sensitive: set[str]) -> bool:
        """Whether a generated column's expression reads a sensitive column (or cannot be read)."""
        try:
            tree = sqlglot.parse_one(expression, read=self.dialect)
        except SqlglotError:
            return True
        return any(column.name.lower() in sensitive for column in tree.find_all(exp.Column))

    def _view(self, table: LiveTable) -> set[str]:
        """A view's sensitive columns by lineage: its definition checked like a statement (allowed
        nodes and functions only), each output sensitive when its expression reads a sensitive
        column. A view whose lineage cannot be worked out is refused."""
        key = self.live.key(table.schema, table.name)
        if key in self.views:
            return self.views[key]
        if self.depth > 16 or not table.definition:
            raise refuse(f"view {table.name}: which columns it reads cannot be checked; query its tables")
        self.views[key] = {c.lower() for c in table.columns}  # a view reading itself: all masked
        self.depth += 1
        try:
            tree = self._parse(table.definition)
            scopes = self._resolve(tree)  # a view's names resolve as the session's do
            flags = self._lineage(scopes, strict=False)[id(scopes[-1].expression)]
        except UsageError as exc:
            raise refuse(
                f"view {table.name}: which columns it reads cannot be checked ({str(exc).removeprefix('sql: ')}); "
                f"query its tables"
            ) from None
        finally:
            self.depth -= 1
        if len(flags) != len(table.columns):
            raise refuse(f"view {table.name}: which columns it reads cannot be checked; query its tables")
        self.views[key] = {c.lower() for c, hit in zip(table.columns, flags, strict=True) if hit}
        return self.views[key]

    def _lineage(self, scopes: list[Scope], *, strict: bool) -> dict[int, list[bool]]:
        """Per scope (by its expression's id: a recursive CTE's self-reference is a scope of its own),
        which of its outputs carry a sensitive value. ``strict``: refuse a
        sensitive read anywhere but a projection (the statement's own check; a view's definition
        may filter on one)."""
        outputs: dict[int, list[bool]] = {}
        for _ in range(8):  # a recursive CTE feeds itself: repeat until nothing changes
            before = {k: list(v) for k, v in outputs.items()}
            for scope in scopes:
                outputs[id(scope.expression)] = self._outputs(scope, outputs, strict=False)
            if before == outputs:
                break
        if strict:
            for scope in scopes:
                self._outputs(scope, outputs, strict=True)
        return outputs

    def _outputs(self, scope: Scope, outputs: dict[int, list[bool]], *, strict: bool) -> list[bool]:
        node = scope.expression
        if isinstance(node, exp.SetOperation):
            branches = [outputs.get(id(s.expression), []) for s in scope.set_operation_scopes]
            width = max((len(b) for b in branches), default=0)
            return [any(b[i] for b in branches if i < len(b)) for i in range(width)]
        if not isinstance(node, exp.Select):
            return []
        flags = [False] * len(node.expressions)
        for column, place in self._reads(scope, outputs):
            index = _projection_index(node, column)
            if index is None:
                if strict:
                    raise refuse(
                        f"the statement reads {place}, a masked column, outside the selected columns (a filter, "
                        f"join, grouping, ordering or subquery); leave it out, or add the connection with "
                        f"--show-sensitive"
                    )
                continue
            flags[index] = True
        return flags

    def _reads(self, scope: Scope, outputs: dict[int, list[bool]]) -> list[tuple[exp.Expr, str]]:
        """The nodes of ``scope`` that carry a sensitive value: columns and nested subqueries."""
        hits: list[tuple[exp.Expr, str]] = []
        for column in scope.columns:
            place = self._column(scope, column, outputs)
            if place:
                hits.append((column, place))
        for sub in scope.subquery_scopes:
            if any(outputs.get(id(sub.expression), [])):
                parent = sub.expression.parent
                hits.append((parent if parent is not None else sub.expression, "a subquery's masked output"))
        for column in scope.expression.find_all(exp.Column):
            if column not in scope.columns and not column.table and _in_this_scope(scope, column):
                _alias_ref(scope.expression, column)  # ORDER BY an output's name: allowed, others refused
        return hits

    def _column(self, scope: Scope, column: exp.Column, outputs: dict[int, list[bool]]) -> str | None:
        """The "table.column" when the column carries a sensitive value, else None."""
        source, _ = _source(scope, column.table)
        if source is None:
            raise refuse(f"cannot tell which table {column.sql(self.dialect)} is in; qualify it")
        if isinstance(source, exp.Table):
            table = self._table(source)
            if not self.mask or column.name.lower() not in self._sensitive(table):
                return None
            self.read.add((table.name.lower(), column.name.lower()))
            return f"{table.name}.{column.name}"
        query = source.expression
        assert isinstance(query, exp.Query)  # a scope's non-table source is a subquery or CTE body
        names = [n.lower() for n in query.named_selects]
        flags = outputs.get(id(source.expression), [])
        index = names.index(column.name.lower()) if column.name.lower() in names else -1
        if 0 <= index < len(flags) and flags[index]:
            return f"{column.table}.{column.name}"
        return None

    # ------------------------------------------------------------------ the rewrite

    def _mask(self, tree: exp.Query, root: Scope, outputs: dict[int, list[bool]]) -> tuple[list[str], list[str]]:
        """Replace every sensitive projection of the outermost SELECT(s) by ``[REDACTED]``."""
        masked: list[str] = []
        branches = [tree] if isinstance(tree, exp.Select) else list(_branches(tree))
        scopes = [root] if isinstance(tree, exp.Select) else [s for s in _leaf_scopes(root)]
        top = outputs.get(id(root.expression), [])
        for select, scope in zip(branches, scopes, strict=True):
            flags = outputs.get(id(scope.expression), [])
            for index, item in enumerate(list(select.expressions)):
                if not (index < len(flags) and flags[index]) and not (index < len(top) and top[index]):
                    continue
                name = item.alias_or_name
                value: exp.Expr = exp.Literal.string(REDACTED)
                if any(not isinstance(agg.parent, exp.Window) for agg in item.find_all(exp.AggFunc)):
                    value = exp.Min(this=value)  # an aggregate stays one: the row count does not change
                item.replace(exp.alias_(value, name, quoted=True))
                if select is branches[0]:
                    masked.append(name)
        redacted = sorted(f"{t}.{c}" for t, c in self.read)
        return masked, redacted


def _name_outputs(tree: exp.Expr) -> None:
    """Give the outputs the resolver named ``_col_N`` the expression's own text, as engines do."""
    if not isinstance(tree, exp.Select):
        return
    renamed: dict[str, str] = {}
    for item in tree.expressions:
        if isinstance(item, exp.Alias) and "drsg_bare" in item.this.meta and item.alias.startswith("_col_"):
            renamed[item.alias] = item.this.meta["drsg_bare"]
            item.set("alias", exp.to_identifier(renamed[item.alias], quoted=True))
    for column in tree.find_all(exp.Column):
        if not column.table and column.name in renamed and column.find_ancestor(exp.Order) is not None:
            column.set("this", exp.to_identifier(renamed[column.name], quoted=True))


def _source(scope: Scope | None, name: str) -> tuple[exp.Table | Scope | None, Scope | None]:
    """The source a column's qualifier names, in this scope or one it is nested in (a correlated one)."""
    while scope is not None:
        if name in scope.sources:
            return scope.sources[name], scope
        scope = scope.parent
    return None, None


def _in_this_scope(scope: Scope, node: exp.Expr) -> bool:
    """Whether ``node`` belongs to ``scope``'s own SELECT, not a subquery nested in it."""
    parent = node.parent
    while parent is not None and parent is not scope.expression:
        if isinstance(parent, exp.Query):
            return False
        parent = parent.parent
    return parent is scope.expression


def _alias_ref(select: exp.Expr, column: exp.Column) -> None:
    """An unqualified name left by the resolver: only an ``ORDER BY`` naming one of the outputs."""
    outputs = {n.lower() for n in getattr(select, "named_selects", [])}
    if column.find_ancestor(exp.Order) is not None and column.name.lower() in outputs:
        return
    raise refuse(f"cannot tell what {column.name} reads; qualify it with its table")


def _projection_index(select: exp.Select, node: exp.Expr) -> int | None:
    """Which projection item ``node`` sits in, or None when it is in another clause."""
    child: exp.Expr = node
    parent = node.parent
    while parent is not None and parent is not select:
        child, parent = parent, parent.parent
    if parent is None or child.arg_key != "expressions":
        return None
    return child.index


def _branches(tree: exp.Expr) -> Iterable[exp.Select]:
    if isinstance(tree, exp.SetOperation):
        yield from _branches(tree.left)
        yield from _branches(tree.right)
    elif isinstance(tree, exp.Subquery):
        yield from _branches(tree.this)
    elif isinstance(tree, exp.Select):
        yield tree
    else:
        raise refuse("a set operation's branches must be SELECTs")


def _leaf_scopes(scope: Scope) -> Iterable[Scope]:
    if isinstance(scope.expression, exp.SetOperation):
        for sub in scope.set_operation_scopes:
            yield from _leaf_scopes(sub)
    else:
        yield scope
