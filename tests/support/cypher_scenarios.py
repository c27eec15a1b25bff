"""The openCypher conformance scenarios (tests/conformance/cypher/*.yaml): reading them, and
comparing an answer's rows with the rows a scenario expects.

A scenario file is a YAML list; each scenario a map::

    - name: a node by its label            # unique in its file; the test id is FILE::name
      tck: Match1                          # optional: the openCypher TCK feature it follows
      setup: |                             # optional: statements run first (each ending `;` at
        CREATE (:A {name: 'a'})            # the end of a line, but the last)
      query: |                             # the statement under test
        MATCH (n:A) RETURN n
      params: {x: 1}                       # optional
      result: |                            # the header names the columns as written, then one
        | n                |               # row per line, each cell a value in the TCK's notation
        | (:A {name: 'a'}) |
      ordered: true                        # optional: the rows in this order (default: any order)
      effects: {nodes_created: 1}          # a write: its counts (every count not named is 0);
                                           # without a result, it answers no columns and no rows
      check: {query: …, result: …}         # optional: a read run afterwards, and what it answers
                                           # (setup, query and check are block scalars: `|`)
      error: {class: QueryError, message: "fragment", phase: compile}   # instead of result

Values in a cell: ``null``, ``true``, ``1``, ``1.5``, ``NaN``, ``Infinity``, ``'text'`` (single
quotes, backslash escapes), ``[1, 'a']``, ``{k: 1}``, a node ``(:A:B {k: 1})`` (matched by its
labels and properties, never its id), a relationship ``[:T {k: 1}]``, a path
``<(:A)-[:T]->(:B)<-[:U]-()>``. An integer and a float are different values (``1`` is not ``1.0``).

Both sides are turned into one canonical form (a hashable tree tagged with each value's type), so
rows compare as lists (ordered) or as multisets (any order).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1] / "conformance" / "cypher"
KEYS = {"name", "tck", "setup", "query", "params", "result", "ordered", "effects", "check", "error"}
ERROR_KEYS = {"class", "message", "phase"}
ERROR_CLASSES = {"QuerySyntaxError", "QueryError", "QueryLimit", "Conflict"}  # Conflict: a key already held
COUNTS = (
    "nodes_created", "nodes_deleted", "edges_created", "edges_deleted",
    "labels_added", "labels_removed", "props_set", "props_removed",
)  # fmt: skip

Canon = Any  # a hashable tree: ("int", 1), ("list", (…)), ("node", labels, props), …


@dataclass(frozen=True)
class Expected:
    """A result table: its columns as written and its rows in canonical form."""

    columns: tuple[str, ...]
    rows: tuple[tuple[Canon, ...], ...]
    ordered: bool = False


@dataclass(frozen=True)
class ExpectedError:
    cls: str
    message: str = ""
    phase: str | None = None


@dataclass(frozen=True)
class Scenario:
    file: str
    name: str
    query: str
    setup: tuple[str, ...] = ()
    params: dict[str, Any] = field(default_factory=dict)
    result: Expected | None = None
    effects: dict[str, int] | None = None
    check: tuple[str, Expected] | None = None
    error: ExpectedError | None = None
    tck: str = ""

    @property
    def id(self) -> str:
        return f"{self.file}::{self.name}"


class ScenarioFileError(ValueError):
    """A scenario file that does not say what a scenario must."""


# ----------------------------------------------------------------------------- loading


def load_all(root: Path = ROOT) -> list[Scenario]:
    scenarios: list[Scenario] = []
    for path in sorted(root.glob("*.yaml")):
        scenarios += load_file(path)
    return scenarios


def load_file(path: Path) -> list[Scenario]:
    items = yaml.safe_load(path.read_text())
    if not isinstance(items, list):
        raise ScenarioFileError(f"{path.name}: a scenario file is a YAML list of scenarios")
    scenarios = [_scenario(path.stem, item) for item in items]
    names = Counter(s.name for s in scenarios)
    if twice := [name for name, n in names.items() if n > 1]:
        raise ScenarioFileError(f"{path.name}: scenario names given twice: {twice}")
    return scenarios


def _scenario(file: str, item: Any) -> Scenario:
    if not isinstance(item, dict) or not isinstance(item.get("name"), str):
        raise ScenarioFileError(f"{file}: every scenario is a map with a name: {item!r}")
    where = f"{file}::{item['name']}"
    if unknown := set(item) - KEYS:
        raise ScenarioFileError(f"{where}: unknown keys {sorted(unknown)}")
    if not isinstance(item.get("query"), str):
        raise ScenarioFileError(f"{where}: no query")
    if ("result" in item or "effects" in item) == ("error" in item):
        raise ScenarioFileError(f"{where}: give a result (or a write's effects) or an error, not both or neither")
    setup = [s for s in re.split(r";[ \t]*$", item.get("setup", ""), flags=re.MULTILINE) if s.strip()]
    error = None
    if "error" in item:
        spec = item["error"]
        if not isinstance(spec, dict) or set(spec) - ERROR_KEYS or spec.get("class") not in ERROR_CLASSES:
            raise ScenarioFileError(f"{where}: error is {{class: one of {sorted(ERROR_CLASSES)}, message, phase}}")
        if spec.get("phase") not in (None, "compile", "runtime"):
            raise ScenarioFileError(f"{where}: error phase is compile or runtime")
        error = ExpectedError(spec["class"], spec.get("message", ""), spec.get("phase"))
    effects = item.get("effects")
    if effects is not None and (not isinstance(effects, dict) or set(effects) - set(COUNTS)):
        raise ScenarioFileError(f"{where}: effects name counts among {COUNTS}")
    check = None
    if "check" in item:
        check = (item["check"]["query"], parse_table(item["check"]["result"], item["check"].get("ordered", False)))
    result = parse_table(item["result"], bool(item.get("ordered", False))) if "result" in item else None
    if result is None and effects is not None:
        result = Expected((), ())  # a write without RETURN answers no columns and no rows
    return Scenario(
        file=file,
        name=item["name"],
        query=item["query"].strip(),
        setup=tuple(s.strip() for s in setup),
        params=item.get("params") or {},
        result=result,
        effects=effects,
        check=check,
        error=error,
        tck=item.get("tck", ""),
    )


def parse_table(text: str, ordered: bool = False) -> Expected:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    if not lines or not lines[0].startswith("|") or not lines[0].endswith("|"):
        raise ScenarioFileError(f"a result table starts with a | header |: {text!r}")
    columns = tuple(cell.strip() for cell in lines[0][1:-1].split("|"))
    if not all(columns):
        raise ScenarioFileError(f"a column without a name in {lines[0]!r}")
    rows = []
    for line in lines[1:]:
        row = parse_row(line)
        if len(row) != len(columns):
            raise ScenarioFileError(f"row {line!r} has {len(row)} cells for {len(columns)} columns")
        rows.append(row)
    return Expected(columns, tuple(rows), ordered)


# ----------------------------------------------------------------------------- the value notation

_TOKEN = re.compile(
    r"""\s*(?:
      (?P<num>-?(?:\d+\.\d*(?:[eE][-+]?\d+)?|\d+[eE][-+]?\d+|\d+))
    | (?P<str>'(?:[^'\\]|\\.)*')
    | (?P<word>-?[A-Za-z_][A-Za-z_0-9]*)
    | (?P<arrow><-|->)
    | (?P<punct>[\[\]{}(),:|<>-])
    )""",
    re.VERBOSE,
)
_ESCAPES = {"n": "\n", "t": "\t", "\\": "\\", "'": "'", '"': '"'}


class _Reader:
    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens: list[tuple[str, str]] = []
        pos = 0
        while pos < len(text):
            if not text[pos:].strip():
                break
            m = _TOKEN.match(text, pos)
            if m is None:
                raise ScenarioFileError(f"cannot read {text[pos:]!r} in {text!r}")
            kind = m.lastgroup or ""
            self.tokens.append((kind, m.group(kind)))
            pos = m.end()
        self.i = 0

    def peek(self) -> str:
        return self.tokens[self.i][1] if self.i < len(self.tokens) else ""

    def take(self, want: str | None = None) -> tuple[str, str]:
        if self.i >= len(self.tokens):
            raise ScenarioFileError(f"{self.text!r} ends early")
        token = self.tokens[self.i]
        if want is not None and token[1] != want:
            raise ScenarioFileError(f"expected {want!r}, found {token[1]!r} in {self.text!r}")
        self.i += 1
        return token

    def value(self) -> Canon:
        kind, text = self.take()
        if kind == "num":
            return ("float", float(text)) if any(c in text for c in ".eE") else ("int", int(text))
        if kind == "str":
            return ("str", re.sub(r"\\(.)", lambda m: _ESCAPES.get(m.group(1), m.group(1)), text[1:-1]))
        if kind == "word":
            words: dict[str, Canon] = {"null": None, "true": ("bool", True), "false": ("bool", False)}
            words |= {"NaN": ("float", "nan"), "Infinity": ("float", math.inf), "-Infinity": ("float", -math.inf)}
            if text not in words:
                raise ScenarioFileError(f"unknown word {text!r} in {self.text!r}")
            return words[text]
        if text == "[" and self.peek() == ":":
            return self.rel_body()
        if text == "[":
            return ("list", tuple(self.items("]")))
        if text == "{":
            return self.map_body()
        if text == "(":
            return self.node_body()
        if text == "<":
            return self.path_body()
        raise ScenarioFileError(f"unexpected {text!r} in {self.text!r}")

    def items(self, close: str) -> list[Canon]:
        out: list[Canon] = []
        while self.peek() != close:
            out.append(self.value())
            if self.peek() == ",":
                self.take(",")
        self.take(close)
        return out

    def map_body(self) -> Canon:
        entries: dict[str, Canon] = {}
        while self.peek() != "}":
            key = self.take()[1].strip("'")
            self.take(":")
            entries[key] = self.value()
            if self.peek() == ",":
                self.take(",")
        self.take("}")
        return _map(entries)

    def labels_and_props(self, close: str) -> tuple[list[str], Canon]:
        labels: list[str] = []
        while self.peek() == ":":
            self.take(":")
            labels.append(self.take()[1])
        props = _map({})
        if self.peek() == "{":
            self.take("{")
            props = self.map_body()
        self.take(close)
        return labels, props

    def node_body(self) -> Canon:
        labels, props = self.labels_and_props(")")
        return ("node", tuple(sorted(labels)), props)

    def rel_body(self) -> Canon:
        types, props = self.labels_and_props("]")
        if len(types) != 1:
            raise ScenarioFileError(f"a relationship has one type in {self.text!r}")
        return ("rel", types[0], props)

    def path_body(self) -> Canon:
        self.take("(")
        steps: list[Canon] = [self.node_body()]
        while self.peek() != ">":
            left = self.take()[1]  # "-" or "<-"
            self.take("[")
            rel = self.rel_body()
            right = self.take()[1]  # "->" or "-"
            if (left, right) not in (("-", "->"), ("<-", "-")):
                raise ScenarioFileError(f"a path's relationship is -[…]-> or <-[…]- in {self.text!r}")
            self.take("(")
            steps += [(rel, "->" if right == "->" else "<-"), self.node_body()]
        self.take(">")
        return ("path", tuple(steps))


def parse_value(text: str) -> Canon:
    reader = _Reader(text)
    value = reader.value()
    if reader.i != len(reader.tokens):
        raise ScenarioFileError(f"left over after the value in {text!r}")
    return value


def parse_row(line: str) -> tuple[Canon, ...]:
    reader = _Reader(line)
    reader.take("|")
    cells = []
    while reader.i < len(reader.tokens):
        cells.append(reader.value())
        reader.take("|")
    return tuple(cells)


# ----------------------------------------------------------------------------- answers


def _map(entries: dict[str, Canon]) -> Canon:
    return ("map", tuple(sorted(entries.items())))


def canonical(value: Any) -> Canon:
    """An answer's value (``CypherResult.to_json()``'s form) in the canonical form."""
    if value is None:
        return None
    if isinstance(value, bool):
        return ("bool", value)
    if isinstance(value, int):
        return ("int", value)
    if isinstance(value, float):
        return ("float", "nan" if math.isnan(value) else value)
    if isinstance(value, str):
        return ("str", value)
    if isinstance(value, list):
        return ("list", tuple(canonical(v) for v in value))
    if isinstance(value, dict):
        if set(value) == {"$float"}:  # the wire form of a float JSON has no number for
            return ("float", {"NaN": "nan", "Infinity": math.inf, "-Infinity": -math.inf}[value["$float"]])
        if set(value) == {"id", "labels", "properties"}:
            return _node(value)
        if set(value) == {"id", "type", "src", "dst", "properties"}:
            return ("rel", value["type"], canonical(value["properties"]))
        if set(value) == {"nodes", "edges"}:
            return _path(value)
        return _map({k: canonical(v) for k, v in value.items()})
    raise TypeError(f"not a value of an answer: {value!r}")


def _node(value: dict[str, Any]) -> Canon:
    return ("node", tuple(sorted(value["labels"])), canonical(value["properties"]))


def _path(value: dict[str, Any]) -> Canon:
    nodes, edges = value["nodes"], value["edges"]
    steps: list[Canon] = [_node(nodes[0])]
    for i, edge in enumerate(edges):
        forward = edge["src"] == nodes[i]["id"] and edge["dst"] == nodes[i + 1]["id"]
        steps += [(canonical(edge), "->" if forward else "<-"), _node(nodes[i + 1])]
    return ("path", tuple(steps))


def render(value: Canon) -> str:
    """A canonical value written back in the notation (for a readable failure)."""
    if value is None:
        return "null"
    tag = value[0]
    if tag == "bool":
        return "true" if value[1] else "false"
    if tag == "float" and value[1] == "nan":
        return "NaN"
    if tag in ("int", "float"):
        return repr(value[1]).replace("inf", "Infinity")
    if tag == "str":
        return "'" + value[1].replace("\\", "\\\\").replace("'", "\\'") + "'"
    if tag == "list":
        return "[" + ", ".join(render(v) for v in value[1]) + "]"
    if tag == "map":
        return "{" + ", ".join(f"{k}: {render(v)}" for k, v in value[1]) + "}"
    if tag == "node":
        props = "" if not value[2][1] else " " + render(value[2])
        return "(" + "".join(f":{label}" for label in value[1]) + props + ")"
    if tag == "rel":
        props = "" if not value[2][1] else " " + render(value[2])
        return f"[:{value[1]}{props}]"
    parts = [render(value[1][0])]
    for (rel, way), node in zip(value[1][1::2], value[1][2::2], strict=True):
        parts.append(("-" + render(rel) + "->" if way == "->" else "<-" + render(rel) + "-") + render(node))
    return "<" + "".join(parts) + ">"


def compare(expected: Expected, columns: object, rows: object) -> str | None:
    """None when the answer's columns and rows (its JSON form's) are the expected table; else
    what differs, readably."""
    if not isinstance(columns, list) or not isinstance(rows, list) or not all(isinstance(r, list) for r in rows):
        return f"an answer's columns and rows are lists, not {columns!r} and {rows!r}"
    if tuple(columns) != expected.columns:
        return f"columns {columns} != expected {list(expected.columns)}"
    got = [tuple(canonical(v) for v in row) for row in rows]
    same = got == list(expected.rows) if expected.ordered else Counter(got) == Counter(expected.rows)
    if same:
        return None

    def table(rows: Any) -> str:
        return "\n".join("  | " + " | ".join(render(v) for v in row) + " |" for row in rows) or "  (no rows)"

    order = "in order" if expected.ordered else "in any order"
    return f"rows differ ({order})\nexpected:\n{table(expected.rows)}\ngot:\n{table(got)}"
