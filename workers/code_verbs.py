"""An agent's code questions answered from a code plane (``drsg digest DIR --apply``'s) on one snapshot.

Upstream's verbs: ``context`` (definition, signature, doc, callers with their sites, callees, other
edges), ``describe`` (a symbol's properties), ``trace`` (the shortest recorded CALLS path between two
symbols, tried in reverse when there is none forward) and ``impact`` (what reaches a symbol through
incoming CALLS/REFERENCES/INSTANTIATES/IMPORTS/EXTENDS/IMPLEMENTS, by distance); ``grep`` and
``snippet`` read the tree itself (workers/code_source.py). Every answer names places as
``file:line`` receipts: a definition's own, and an edge's site — its ``line`` in its source's file,
since a call is written in its caller.

A symbol is named as upstream resolves it: its exact key, else a key ending in ``.name`` or
``::name``, else a key containing ``name`` (case-insensitive); several hits at the first step that
has any is an error listing them (at most :data:`MAX_CANDIDATES`), none an error naming the nearest.
"""

from __future__ import annotations

import difflib
import json
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from drsg.kernel.errors import NotFound, UsageError
from drsg.kernel.values import Described, Json, Value, Vector, to_json
from drsg.store.records import Edge, Node, Plane
from drsg.store.snapshot import Snapshot

CALLS = "CALLS"
IMPORTS = "IMPORTS"
#: what makes a plane a code plane: a handler's structure edges (the Python handler's, a plugin's)
CODE_EDGES = ("CALLS", "CONTAINS")
IMPACT_TYPES = frozenset({"CALLS", "REFERENCES", "INSTANTIATES", "IMPORTS", "EXTENDS", "IMPLEMENTS"})
MAX_CANDIDATES = 20
CONTEXT_CHARS = 24_000  # upstream's cap on one context answer
ANSWER_RESERVE = 512  # of the cap, kept for what is added after the sites: the drift line, `omitted`
IMPACT_DEPTH, IMPACT_MAX_DEPTH = 3, 6
TRACE_MAX_HOPS = 12  # a recorded call chain longer than this is no answer an agent can use


def _text(props: dict[str, Value], name: str) -> str | None:
    value = props.get(name)
    return value if isinstance(value, str) else None


def _int(props: dict[str, Value], name: str) -> int | None:
    value = props.get(name)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


@dataclass(frozen=True)
class Symbol:
    """A node of the plane as an answer names it: its key, labels and where it is defined."""

    id: int
    key: str
    labels: tuple[str, ...]
    file: str | None
    line: int | None

    @property
    def receipt(self) -> str | None:
        """``file:line`` where it is defined (None for what stands in for outside code)."""
        if self.file is None:
            return None
        return f"{self.file}:{self.line}" if self.line is not None else self.file

    def to_json(self) -> dict[str, Json]:
        return {"key": self.key, "labels": list(self.labels), "at": self.receipt}


@dataclass(frozen=True)
class Site:
    """One edge seen from a symbol: the symbol at its other end, the edge's type and direction, and
    where it is written (``at``: its source's file at the edge's line)."""

    symbol: Symbol
    type: str
    direction: str  # "in": the other symbol points here; "out": here points there
    at: str | None

    def to_json(self) -> dict[str, Json]:
        return {"type": self.type, "direction": self.direction, "key": self.symbol.key, "at": self.at}


@dataclass(frozen=True)
class Context:
    """``context``'s answer. ``omitted`` counts edges left out to keep it under :data:`CONTEXT_CHARS`."""

    symbol: Symbol
    signature: str | None
    doc: str | None
    callers: list[Site]
    callees: list[Site]
    other: list[Site]
    omitted: int = 0
    synced: str | None = None

    def to_json(self) -> dict[str, Json]:
        return {
            **self.symbol.to_json(),
            "signature": self.signature,
            "doc": self.doc,
            "callers": [site.to_json() for site in self.callers],
            "callees": [site.to_json() for site in self.callees],
            "other": [site.to_json() for site in self.other],
            "omitted": self.omitted,
            "synced": self.synced,
        }


@dataclass(frozen=True)
class Description:
    """``describe``'s answer: the symbol and its properties as ``prop: value`` text (vectors elided,
    ``_`` provenance left out)."""

    symbol: Symbol
    props: list[tuple[str, str]]
    synced: str | None = None

    def to_json(self) -> dict[str, Json]:
        return {**self.symbol.to_json(), "props": dict(self.props), "synced": self.synced}


@dataclass(frozen=True)
class Hop:
    """One recorded call of a trace: ``caller`` calls ``callee`` at ``at``."""

    caller: Symbol
    callee: Symbol
    at: str | None

    def to_json(self) -> dict[str, Json]:
        return {"caller": self.caller.key, "callee": self.callee.key, "at": self.at}


@dataclass(frozen=True)
class Trace:
    """``trace``'s answer: the shortest CALLS path ``src`` → ``dst``; when there is none, the one
    ``dst`` → ``src`` with ``reversed`` set; ``hops`` empty when neither is recorded."""

    src: Symbol
    dst: Symbol
    hops: list[Hop]
    reversed: bool = False
    synced: str | None = None

    @property
    def found(self) -> bool:
        return bool(self.hops) or self.src.id == self.dst.id

    def to_json(self) -> dict[str, Json]:
        return {
            "from": self.src.key,
            "to": self.dst.key,
            "found": self.found,
            "reversed": self.reversed,
            "hops": [hop.to_json() for hop in self.hops],
            "synced": self.synced,
        }


@dataclass(frozen=True)
class Reach:
    """A symbol that reaches the one asked about: through ``type`` into ``through`` at ``at``."""

    symbol: Symbol
    type: str
    through: str
    at: str | None

    def to_json(self) -> dict[str, Json]:
        return {"key": self.symbol.key, "type": self.type, "through": self.through, "at": self.at}


@dataclass(frozen=True)
class Impact:
    """``impact``'s answer: ``levels[0]`` reaches the symbol directly, ``levels[1]`` through one of
    those, and so on up to ``depth``; each symbol once, at its shortest distance."""

    symbol: Symbol
    depth: int
    levels: list[list[Reach]] = field(default_factory=list)
    synced: str | None = None

    @property
    def total(self) -> int:
        return sum(len(level) for level in self.levels)

    def to_json(self) -> dict[str, Json]:
        levels: list[Json] = [
            {"distance": i + 1, "symbols": [reach.to_json() for reach in level]} for i, level in enumerate(self.levels)
        ]
        return {
            **self.symbol.to_json(),
            "depth": self.depth,
            "total": self.total,
            "levels": levels,
            "synced": self.synced,
        }


def symbol_of(node: Node) -> Symbol:
    return Symbol(
        node.id, node.key or f"#{node.id}", tuple(node.labels), _text(node.props, "file"), _int(node.props, "line")
    )


class CodePlane:
    """A code plane on one snapshot: the verbs (see the module docstring)."""

    def __init__(self, snap: Snapshot, plane: Plane) -> None:
        _, types = snap.labels_and_types(plane.id)
        if not any(types.get(kind) for kind in CODE_EDGES):
            raise UsageError(
                f"plane {plane.name!r} holds no code (no CALLS or CONTAINS edges); read a tree into it first: "
                f"`drsg digest DIR --plane {plane.name} --apply`"
            )
        self.snap = snap
        self.plane = plane
        self._nodes: dict[int, Node | None] = {}
        self._importers: dict[str, list[Node]] | None = None

    # ------------------------------------------------------------------ naming symbols

    def resolve(self, name: str) -> Node:
        """The node ``name`` names (see the module docstring); NotFound or UsageError saying why not."""
        wanted = name.strip().removeprefix("@")
        if not wanted:
            raise UsageError("name a symbol: its key (e.g. pkg.mod.func) or the end of it (func, Class.method)")
        node = self.snap.node_by_key(self.plane.id, wanted)
        if node is not None:
            return node
        keys = [key for key, _ in self.snap.keyed_node_ids(self.plane.id)]
        folded = wanted.casefold()
        for hits in (
            [k for k in keys if k.endswith(("." + wanted, "::" + wanted))],
            [k for k in keys if folded in k.casefold()],
        ):
            if len(hits) == 1:
                return self._by_key(hits[0])
            if hits:
                raise UsageError(
                    f"{wanted!r} names {len(hits)} symbols in plane {self.plane.name!r}; give one's key: "
                    + _listed(hits)
                )
        raise NotFound(f"no symbol {wanted!r} in plane {self.plane.name!r}; {self._nearest(wanted, keys)}")

    def _by_key(self, key: str) -> Node:
        node = self.snap.node_by_key(self.plane.id, key)
        if node is None:  # the key index and the nodes are one snapshot: cannot happen
            raise NotFound(f"no symbol {key!r} in plane {self.plane.name!r}")
        return node

    def _nearest(self, wanted: str, keys: list[str]) -> str:
        last = {key: key.rsplit(".", 1)[-1].rsplit("::", 1)[-1] for key in keys}
        tail = wanted.rsplit(".", 1)[-1]
        close = difflib.get_close_matches(tail, sorted(set(last.values())), n=5, cutoff=0.6)
        near = [key for name in close for key in keys if last[key] == name][:5]
        return "nearest: " + ", ".join(near) if near else "`drsg plane show` lists what the plane holds"

    def node(self, node_id: int) -> Node | None:
        if node_id not in self._nodes:
            self._nodes[node_id] = self.snap.node(self.plane.id, node_id)
        return self._nodes[node_id]

    def _site(self, edge: Edge, other: Node, direction: str, here: Node) -> Site:
        return Site(symbol_of(other), edge.type, direction, self._at(edge, here if direction == "out" else other))

    @staticmethod
    def _at(edge: Edge, src: Node) -> str | None:
        """An edge's site: its line in its source's file (a call is written in its caller)."""
        file, line = _text(src.props, "file"), _int(edge.props, "line")
        if file is None:
            return None
        return f"{file}:{line}" if line is not None else file

    def _edges(self, node: Node, direction: str) -> Iterator[tuple[Edge, Node, str]]:
        for hop in self.snap.neighbors(self.plane.id, node.id, direction):
            other = self.node(hop.node)
            if other is not None:
                yield hop.edge, other, hop.direction
        if direction != "out" and node.key is not None:
            for module in self.importers(node.key):
                line = self._import_line(module, node.key)
                yield (
                    Edge(self.plane.id, 0, module.id, node.id, IMPORTS, {} if line is None else {"line": line}),
                    module,
                    "in",
                )

    def _import_line(self, module: Node, key: str) -> int | None:
        """Where ``module`` imports ``key``: the line of its IMPORTS edge to the module ``key`` is in."""
        best: tuple[int, int] | None = None
        for hop in self.snap.neighbors(self.plane.id, module.id, "out", IMPORTS):
            target, line = self.node(hop.node), _int(hop.edge.props, "line")
            if target is None or target.key is None or line is None:
                continue
            if key.startswith(target.key + ".") and (best is None or len(target.key) > best[0]):
                best = (len(target.key), line)
        return best[1] if best is not None else None

    def importers(self, key: str) -> list[Node]:
        """The modules that import ``key`` by name: the Python handler keeps a module's imports of
        names as its ``imports`` property (its IMPORTS edges join modules), so they are read there."""
        if self._importers is None:
            self._importers = {}
            for module in self.snap.nodes(self.plane.id, "Module"):
                names = module.props.get("imports")
                for name in names if isinstance(names, list) else ():
                    if isinstance(name, str) and name != module.key:
                        self._importers.setdefault(name, []).append(module)
        return self._importers.get(key, [])

    # ------------------------------------------------------------------ the verbs

    def context(self, name: str, max_chars: int = CONTEXT_CHARS) -> Context:
        node = self.resolve(name)
        callers: list[Site] = []
        callees: list[Site] = []
        other: list[Site] = []
        for edge, neighbour, direction in self._edges(node, "both"):
            site = self._site(edge, neighbour, direction, node)
            if edge.type == CALLS and edge.src != edge.dst:
                (callers if direction == "in" else callees).append(site)
            elif not (edge.type == CALLS and direction == "in"):  # a recursion is one site, not two
                other.append(site)
        for sites in (callers, callees, other):
            sites.sort(key=_site_order)
        doc = _text(node.props, "doc_comment")
        base = Context(symbol_of(node), _text(node.props, "signature"), doc, [], [], [])
        budget = max_chars - len(json.dumps(base.to_json())) - ANSWER_RESERVE
        kept, omitted = _fit((callers, callees, other), budget)
        return Context(base.symbol, base.signature, doc, kept[0], kept[1], kept[2], omitted)

    def describe(self, name: str) -> Description:
        node = self.resolve(name)
        props = [(prop, _shown(value)) for prop, value in sorted(node.props.items()) if not prop.startswith("_")]
        return Description(symbol_of(node), props)

    def trace(self, src_name: str, dst_name: str) -> Trace:
        src, dst = self.resolve(src_name), self.resolve(dst_name)
        hops = self._path(src, dst)
        if hops is not None:
            return Trace(symbol_of(src), symbol_of(dst), hops)
        back = self._path(dst, src)
        return Trace(symbol_of(src), symbol_of(dst), back or [], reversed=back is not None)

    def _path(self, src: Node, dst: Node) -> list[Hop] | None:
        """The shortest chain of recorded calls from ``src`` to ``dst`` (breadth first), else None."""
        if src.id == dst.id:
            return []
        came: dict[int, tuple[int, Edge]] = {src.id: (src.id, _NO_EDGE)}
        frontier = deque([(src.id, 0)])
        while frontier:
            at, hops = frontier.popleft()
            if hops >= TRACE_MAX_HOPS:
                continue
            for hop in self.snap.neighbors(self.plane.id, at, "out", CALLS):
                if hop.node in came:
                    continue
                came[hop.node] = (at, hop.edge)
                if hop.node == dst.id:
                    return self._chain(came, dst.id)
                frontier.append((hop.node, hops + 1))
        return None

    def _chain(self, came: dict[int, tuple[int, Edge]], end: int) -> list[Hop]:
        hops: list[Hop] = []
        while True:
            prev, edge = came[end]
            if prev == end:
                return hops[::-1]
            caller, callee = self.node(prev), self.node(end)
            if caller is None or callee is None:  # one snapshot: its edges' ends are there
                raise NotFound(f"an edge of plane {self.plane.name!r} ends at no node")
            hops.append(Hop(symbol_of(caller), symbol_of(callee), self._at(edge, caller)))
            end = prev

    def impact(self, name: str, depth: int = IMPACT_DEPTH) -> Impact:
        if not 1 <= depth <= IMPACT_MAX_DEPTH:
            raise UsageError(f"depth must be 1 to {IMPACT_MAX_DEPTH}, not {depth}")
        node = self.resolve(name)
        seen = {node.id}
        frontier = [node]
        levels: list[list[Reach]] = []
        for _ in range(depth):
            level: list[Reach] = []
            for target in frontier:
                for edge, other, _direction in self._edges(target, "in"):
                    if edge.type in IMPACT_TYPES and other.id not in seen:
                        seen.add(other.id)
                        level.append(Reach(symbol_of(other), edge.type, target.key or "", self._at(edge, other)))
            if not level:
                break
            level.sort(key=lambda reach: (reach.at or "~", reach.symbol.key))
            levels.append(level)
            frontier = [n for n in (self.node(reach.symbol.id) for reach in level) if n is not None]
        return Impact(symbol_of(node), depth, levels)


_NO_EDGE = Edge(0, 0, 0, 0, "", {})


def _site_order(site: Site) -> tuple[str, int, str]:
    file, _, line = (site.at or "~").rpartition(":")
    return (file, int(line) if line.isdigit() else 0, site.symbol.key)


def _fit(groups: Iterable[list[Site]], budget: int) -> tuple[list[list[Site]], int]:
    """Each group's sites, in order, while their JSON fits ``budget`` characters, taken a site from
    each group in turn so that a symbol with thousands of callers still shows its callees; the count
    left out."""
    lists = list(groups)
    kept: list[list[Site]] = [[] for _ in lists]
    total = sum(len(sites) for sites in lists)
    for at in range(max((len(sites) for sites in lists), default=0)):
        for sites, taken in zip(lists, kept, strict=True):
            if at < len(sites):
                cost = len(json.dumps(sites[at].to_json())) + 2  # and its ", " in the list
                if cost > budget:
                    return kept, total - sum(len(t) for t in kept)
                taken.append(sites[at])
                budget -= cost
    return kept, 0


def _shown(value: Value) -> str:
    if isinstance(value, Vector):
        return f"$vector({len(value.tolist())} dims, omitted)"
    if isinstance(value, Described):
        return _shown(value.value)
    if isinstance(value, str):
        return value
    shown: Any = to_json(value)
    return json.dumps(shown, ensure_ascii=False)


def _listed(keys: list[str]) -> str:
    shown = ", ".join(sorted(keys)[:MAX_CANDIDATES])
    return shown + (f" (… and {len(keys) - MAX_CANDIDATES} more)" if len(keys) > MAX_CANDIDATES else "")
