"""The store against a pure-Python model, at every seq (DESIGN.md §1: "a property test holds it equal
to a replay").

A hypothesis state machine drives random plane / node / edge operations (single-op commits,
multi-op commits, commits that fail part-way, empty commits, a clock that jumps back and forth,
reopening the file, rebuilding the projection). After every step it checks three things:

1. the current reads of the store (planes, nodes per plane and per label, key lookups, edges,
   neighbours out/in/both and per type, lookups by id, histories, stats, tallies) equal the
   *operation model* (the semantics of the WriteTx API, written independently of the store);
2. the log (``db.commits()``) replayed into a dict-based model equals the operation model at the
   head, and the store's as-of reads at **every** earlier seq equal the replay of that log prefix;
3. log-level integrity: seqs gap-free, timestamps non-decreasing, ids never reused, every
   mutation refers to live records (so it can be replayed on its own).

``db.rebuild_projection()`` runs as a rule and at teardown: the full dump at every seq must be
identical before and after.

Size: ``HYPOTHESIS_PROFILE`` = ``dev`` (10 examples x 20 steps), ``default``/``ci`` (50 x 50,
~15 s) or ``thorough`` (300 x 60). A failure is shrunk for up to hypothesis' 5-minute limit, so the
test carries its own 900 s timeout.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

import hypothesis.strategies as st
import pytest
from hypothesis import HealthCheck, settings
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

import drsg
from drsg.kernel.asof import AsOf, format_ms
from drsg.kernel.errors import BadAsOf, Conflict, NotFound, UsageError
from drsg.kernel.values import Described, Vector
from drsg.store.mutations import (
    EdgeDelete,
    EdgePut,
    NodeDelete,
    NodePut,
    PlaneCreate,
    PlaneDrop,
    PlaneRename,
    PlaneSetProps,
)
from drsg.store.transaction import PUT_MODES
from tests.support.values import values

STARTUP = "startup"
PLANE_NAMES = ["alpha", "beta", "gamma", "δέλτα", "e f"]
ALL_PLANE_NAMES = [STARTUP, *PLANE_NAMES]
KEYS = ["ada", "bob", "cy", "dé", "e\tf", "ファ"]
LABELS = ["Person", "Pers", "Org", "Ünï"]
TYPES = ["KNOWS", "KNOWS_2", "owns it"]
PROP_NAMES = ["a", "b", "_src", "vec", "Ω"]
MISSING_NODE = 999_999_999
MISSING_EDGE = 888_888_888

# --------------------------------------------------------------------------- values

props_st = st.dictionaries(st.sampled_from(PROP_NAMES), values, max_size=3)
labels_st = st.lists(st.sampled_from(LABELS), max_size=3)  # duplicates on purpose


def canon(v: Any) -> Any:
    """A type-tagged form, so True != 1, 0.0 != -0.0 and b'' != '' when comparing."""
    t = type(v)
    if t is str or t is int or t is bool or t is bytes:
        return (t.__name__, v)
    if v is None:
        return ("null",)
    if t is float:
        return ("float", v.hex())
    if t is dict:
        return ("map", tuple(sorted((k, canon(x)) for k, x in v.items())))  # keys are unique
    if t is list:
        return ("list", tuple(map(canon, v)))
    if t is Vector:
        return ("vector", v.data)
    if t is Described:
        return ("desc", v.description, canon(v.value))
    raise TypeError(f"not a model value: {v!r}")


# --------------------------------------------------------------------------- the model


@dataclass
class State:
    """Graph state as plain dicts: what both the operation model and the log replay produce."""

    planes: dict[int, tuple[str, dict[str, Any]]] = field(default_factory=dict)
    nodes: dict[tuple[int, int], tuple[str | None, tuple[str, ...], dict[str, Any]]] = field(default_factory=dict)
    edges: dict[tuple[int, int], tuple[int, int, str, dict[str, Any]]] = field(default_factory=dict)

    def copy(self) -> State:
        # Records are replaced, never mutated in place, so shallow copies suffice.
        return State(dict(self.planes), dict(self.nodes), dict(self.edges))

    def plane_id(self, name: str) -> int | None:
        for pid, (n, _) in self.planes.items():
            if n == name:
                return pid
        return None

    def need_plane(self, name: str) -> int:
        pid = self.plane_id(name)
        if pid is None:
            raise NotFound(f"model: no plane {name!r}")
        return pid

    def key_owner(self, pid: int, key: str) -> int | None:
        for (p, nid), (k, _, _) in self.nodes.items():
            if p == pid and k == key:
                return nid
        return None

    def resolve(self, pid: int, ref: int | str) -> int:
        if isinstance(ref, int):
            if (pid, ref) in self.nodes:
                return ref
        else:
            nid = self.key_owner(pid, ref[1:] if ref.startswith("@") else ref)
            if nid is not None:
                return nid
        raise NotFound(f"model: no node {ref!r}")

    def drop_plane(self, pid: int) -> None:
        del self.planes[pid]
        self.nodes = {k: v for k, v in self.nodes.items() if k[0] != pid}
        self.edges = {k: v for k, v in self.edges.items() if k[0] != pid}


def _labels(labels: list[str]) -> tuple[str, ...]:
    return tuple(sorted(set(labels)))


PUT_OUTCOMES = {"update": "updated", "replace": "replaced", "skip": "skipped"}


def put_outcome(s: State, op: tuple[Any, ...]) -> str:
    """What ``WriteTx.put_node`` does: a free (or no) key makes a node; a taken one what the mode says."""
    _, pname, key, _labels, _props, mode = op
    owner = None if key is None else s.key_owner(s.need_plane(pname), key)
    if owner is None:
        return "created"
    if mode == "create":
        raise Conflict("model: key exists")
    return PUT_OUTCOMES[mode]


def apply_op(s: State, op: tuple[Any, ...], new_id: int | None) -> bool:
    """Apply one WriteTx call to the model; raise what the store should raise.

    ``new_id`` is the id the store assigned (creations). Returns whether a mutation is emitted.
    """
    kind = op[0]
    if kind == "create_plane":
        _, name, props = op
        if s.plane_id(name) is not None:
            raise Conflict("model: plane exists")
        assert new_id is not None
        s.planes[new_id] = (name, dict(props))
        return True
    if kind == "rename_plane":
        _, name, to = op
        pid = s.need_plane(name)
        if to == name:
            return False
        if s.plane_id(to) is not None:
            raise Conflict("model: plane exists")
        s.planes[pid] = (to, s.planes[pid][1])
        return True
    if kind == "set_plane_props":
        _, name, props = op
        pid = s.need_plane(name)
        s.planes[pid] = (name, {**s.planes[pid][1], **props})
        return True
    if kind == "drop_plane":
        _, name = op
        pid = s.need_plane(name)
        if name == STARTUP:
            raise UsageError("model: startup cannot be dropped")
        s.drop_plane(pid)
        return True
    if kind == "create_node":
        _, pname, key, labels, props = op
        pid = s.need_plane(pname)
        if key is not None and s.key_owner(pid, key) is not None:
            raise Conflict("model: key exists")
        assert new_id is not None
        s.nodes[(pid, new_id)] = (key, _labels(labels), dict(props))
        return True
    if kind == "put_node":
        _, pname, key, labels, props, _mode = op
        outcome, pid = put_outcome(s, op), s.need_plane(pname)
        if outcome == "created":
            assert new_id is not None
            s.nodes[(pid, new_id)] = (key, _labels(labels), dict(props))
            return True
        nid = s.key_owner(pid, key)
        assert nid is not None
        old_key, old_labels, old_props = s.nodes[(pid, nid)]
        if outcome == "updated":
            s.nodes[(pid, nid)] = (old_key, _labels([*old_labels, *labels]), {**old_props, **props})
        elif outcome == "replaced":
            s.nodes[(pid, nid)] = (old_key, _labels(labels), dict(props))
        return outcome != "skipped"
    if kind == "update_node":
        _, pname, ref, set_props, unset, labels = op
        pid = s.need_plane(pname)
        nid = s.resolve(pid, ref)
        key, old_labels, old_props = s.nodes[(pid, nid)]
        props = {**old_props, **set_props}
        for name in unset:
            props.pop(name, None)
        s.nodes[(pid, nid)] = (key, old_labels if labels is None else _labels(labels), props)
        return True
    if kind == "delete_node":
        _, pname, ref = op
        pid = s.need_plane(pname)
        nid = s.resolve(pid, ref)
        del s.nodes[(pid, nid)]
        s.edges = {k: e for k, e in s.edges.items() if not (k[0] == pid and (e[0] == nid or e[1] == nid))}
        return True
    if kind == "create_edge":
        _, pname, src, dst, etype, props = op
        pid = s.need_plane(pname)
        src_id, dst_id = s.resolve(pid, src), s.resolve(pid, dst)
        assert new_id is not None
        s.edges[(pid, new_id)] = (src_id, dst_id, etype, dict(props))
        return True
    if kind == "update_edge":
        _, pname, eid, set_props, unset, etype = op
        pid = s.need_plane(pname)
        if (pid, eid) not in s.edges:
            raise NotFound("model: no edge")
        src, dst, old_type, old_props = s.edges[(pid, eid)]
        props = {**old_props, **set_props}
        for name in unset:
            props.pop(name, None)
        s.edges[(pid, eid)] = (src, dst, old_type if etype is None else etype, props)
        return True
    if kind == "delete_edge":
        _, pname, eid = op
        pid = s.need_plane(pname)
        if (pid, eid) not in s.edges:
            raise NotFound("model: no edge")
        del s.edges[(pid, eid)]
        return True
    raise AssertionError(kind)


def run_store(tx: Any, op: tuple[Any, ...]) -> Any:
    """The same call against the real WriteTx."""
    kind, *a = op
    if kind == "create_plane":
        return tx.create_plane(a[0], a[1])
    if kind == "rename_plane":
        return tx.rename_plane(a[0], a[1])
    if kind == "set_plane_props":
        return tx.set_plane_props(a[0], a[1])
    if kind == "drop_plane":
        return tx.drop_plane(a[0])
    plane = tx.plane(a[0])
    if kind == "create_node":
        return tx.create_node(plane, a[1], a[2], a[3])
    if kind == "put_node":
        return tx.put_node(plane, a[1], a[2], a[3], mode=a[4])
    if kind == "update_node":
        return tx.update_node(plane, a[1], a[2], a[3], a[4])
    if kind == "delete_node":
        return tx.delete_node(plane, a[1])
    if kind == "create_edge":
        return tx.create_edge(plane, a[1], a[2], a[3], a[4])
    if kind == "update_edge":
        return tx.update_edge(plane, a[1], a[2], a[3], a[4])
    if kind == "delete_edge":
        return tx.delete_edge(plane, a[1])
    raise AssertionError(kind)


# --------------------------------------------------------------------------- replaying the log


class Replay:
    """Applies ``commit.mutations`` to a State, checking the log's own integrity as it goes."""

    def __init__(self) -> None:
        self.state = State()
        self.commits: list[Any] = []
        self.at: dict[int, State] = {}  # seq -> state after that commit
        self.ts: dict[int, int] = {}
        self.node_plane: dict[int, int] = {}  # node id -> its plane (ids are never reused)
        self.edge_plane: dict[int, int] = {}
        self.plane_ids: set[int] = set()
        self.history: dict[tuple[str, int, int], dict[int, Any]] = defaultdict(dict)
        self._dumps: dict[tuple[int, int, int], dict[str, Any]] = {}

    def feed(self, commits: list[Any]) -> None:
        known = len(self.commits)
        assert commits[:known] == self.commits, "the log prefix changed"
        for commit in commits[known:]:
            assert commit.seq == len(self.commits) + 1, "the log has a gap"
            assert commit.mutations, "a commit without mutations consumed a seq"
            if self.commits:
                assert commit.ts >= self.commits[-1].ts, "timestamps decreased"
            for m in commit.mutations:
                self._apply(m, commit.seq)
            self.commits.append(commit)
            self.at[commit.seq] = self.state.copy()
            self.ts[commit.seq] = commit.ts

    def _apply(self, m: Any, seq: int) -> None:
        s = self.state
        if isinstance(m, PlaneCreate):
            assert m.plane not in self.plane_ids, "plane id reused"
            assert s.plane_id(m.name) is None
            self.plane_ids.add(m.plane)
            s.planes[m.plane] = (m.name, m.props)
        elif isinstance(m, PlaneRename):
            assert m.plane in s.planes
            assert s.plane_id(m.name) in (None, m.plane)
            s.planes[m.plane] = (m.name, s.planes[m.plane][1])
        elif isinstance(m, PlaneSetProps):
            assert m.plane in s.planes
            s.planes[m.plane] = (s.planes[m.plane][0], m.props)
        elif isinstance(m, PlaneDrop):
            assert m.plane in s.planes
            s.drop_plane(m.plane)
        elif isinstance(m, NodePut):
            assert m.plane in s.planes, "node.put into a plane that is not live"
            assert self.node_plane.setdefault(m.id, m.plane) == m.plane, "node id reused across planes"
            if m.key is not None:
                assert s.key_owner(m.plane, m.key) in (None, m.id), "duplicate key"
            assert list(m.labels) == sorted(set(m.labels))
            s.nodes[(m.plane, m.id)] = (m.key, tuple(m.labels), m.props)
            self.history[("node", m.plane, m.id)][seq] = (m.id, m.key, tuple(m.labels), canon(m.props))
        elif isinstance(m, NodeDelete):
            assert (m.plane, m.id) in s.nodes
            assert not any(p == m.plane and m.id in (e[0], e[1]) for (p, _), e in s.edges.items()), (
                "node.delete while edges still touch it"
            )
            del s.nodes[(m.plane, m.id)]
            self.history[("node", m.plane, m.id)][seq] = None
        elif isinstance(m, EdgePut):
            assert m.plane in s.planes
            assert (m.plane, m.src) in s.nodes and (m.plane, m.dst) in s.nodes, "dangling edge"
            assert self.edge_plane.setdefault(m.id, m.plane) == m.plane, "edge id reused across planes"
            old = s.edges.get((m.plane, m.id))
            if old is not None:
                assert old[:2] == (m.src, m.dst), "an edge changed its ends"
            else:
                assert ("edge", m.plane, m.id) not in self.history, "edge id reused"
            s.edges[(m.plane, m.id)] = (m.src, m.dst, m.type, m.props)
            self.history[("edge", m.plane, m.id)][seq] = (m.id, m.src, m.dst, m.type, canon(m.props))
        elif isinstance(m, EdgeDelete):
            assert (m.plane, m.id) in s.edges
            del s.edges[(m.plane, m.id)]
            self.history[("edge", m.plane, m.id)][seq] = None
        else:
            raise AssertionError(f"unknown mutation {m!r}")

    def expected_dump(self, seq: int, probes: Probes) -> dict[str, Any]:
        """dump_model of the state after ``seq``, cached until new ids widen the probes."""
        key = (seq, len(self.node_plane), len(self.edge_plane))
        cached = self._dumps.get(key)
        if cached is None:
            cached = self._dumps[key] = dump_model(self.at[seq], probes)
        return cached

    def probes(self) -> tuple[dict[int, list[int]], dict[int, list[int]]]:
        nodes: dict[int, list[int]] = defaultdict(list)
        edges: dict[int, list[int]] = defaultdict(list)
        for nid, pid in sorted(self.node_plane.items()):
            nodes[pid].append(nid)
        for eid, pid in sorted(self.edge_plane.items()):
            edges[pid].append(eid)
        return nodes, edges

    def expected_seq_at_ms(self, ms: int) -> int:
        return max((seq for seq, ts in self.ts.items() if ts <= ms), default=0)


# --------------------------------------------------------------------------- dumps


Probes = tuple[dict[int, list[int]], dict[int, list[int]]]


def _node(n: Any) -> Any:
    return None if n is None else (n.id, n.key, tuple(n.labels), canon(n.props))


def _edge(e: Any) -> Any:
    return None if e is None else (e.id, e.src, e.dst, e.type, canon(e.props))


def _nb(nb: Any) -> Any:
    return (nb.edge.id, nb.edge.src, nb.edge.dst, nb.edge.type, nb.node, nb.direction)


def dump_store(snap: Any, probes: Probes, typed: set[int]) -> dict[str, Any]:
    """Everything a reader can ask a snapshot, in comparable form.

    ``typed``: planes whose neighbour lists are also asked per edge type (those with edges).
    """
    node_probe, edge_probe = probes
    out: dict[str, Any] = {
        "planes": [(p.id, p.name, canon(p.props)) for p in snap.planes()],
        "names": {n: (p.id if (p := snap.find_plane(n)) else None) for n in ALL_PLANE_NAMES},
    }
    for pid, _, _ in out["planes"]:
        nodes = [_node(n) for n in snap.nodes(pid)]
        adj = {}
        for rec in nodes:
            nid = rec[0]
            adj[nid] = {d: sorted(_nb(x) for x in snap.neighbors(pid, nid, d)) for d in ("out", "in", "both")}
            adj[nid]["ids"] = sorted(snap.neighbor_ids(pid, nid, "both"))
            if pid in typed:
                for t in TYPES:
                    adj[nid][t] = sorted(_nb(x) for x in snap.neighbors(pid, nid, "both", t))
        out[f"plane {pid}"] = {
            "nodes": nodes,
            "labels": {lb: [n.id for n in snap.nodes(pid, label=lb)] for lb in LABELS},
            "keys": {k: (n.id, n.key) if (n := snap.node_by_key(pid, k)) else None for k in KEYS},
            "edges": [_edge(e) for e in snap.edges(pid)],
            "node_by_id": {i: _node(snap.node(pid, i)) for i in node_probe.get(pid, [])},
            "edge_by_id": {i: _edge(snap.edge(pid, i)) for i in edge_probe.get(pid, [])},
            "adjacency": adj,
        }
    return out


def typed_planes(s: State) -> set[int]:
    return {pid for (pid, _) in s.edges}


def dump_model(s: State, probes: Probes) -> dict[str, Any]:
    """The same dump computed from a model State."""
    node_probe, edge_probe = probes
    out: dict[str, Any] = {
        "planes": [(pid, name, canon(props)) for pid, (name, props) in sorted(s.planes.items())],
        "names": {n: s.plane_id(n) for n in ALL_PLANE_NAMES},
    }

    def node(pid: int, nid: int | None) -> Any:
        if nid is None or (pid, nid) not in s.nodes:
            return None
        key, labels, props = s.nodes[(pid, nid)]
        return (nid, key, labels, canon(props))

    def edge(pid: int, eid: int) -> Any:
        if (pid, eid) not in s.edges:
            return None
        src, dst, etype, props = s.edges[(pid, eid)]
        return (eid, src, dst, etype, canon(props))

    for pid in sorted(s.planes):
        ids = sorted(nid for (p, nid) in s.nodes if p == pid)
        plane_edges = sorted((eid, e) for (p, eid), e in s.edges.items() if p == pid)
        adj = {}
        for nid in ids:
            outs = [(eid, e[0], e[1], e[2], e[1], "out") for eid, e in plane_edges if e[0] == nid]
            ins = [(eid, e[0], e[1], e[2], e[0], "in") for eid, e in plane_edges if e[1] == nid]
            adj[nid] = {"out": sorted(outs), "in": sorted(ins), "both": sorted(outs + ins)}
            adj[nid]["ids"] = sorted(x[4] for x in outs + ins)
            if plane_edges:
                for t in TYPES:
                    adj[nid][t] = sorted(x for x in outs + ins if x[3] == t)
        out[f"plane {pid}"] = {
            "nodes": [node(pid, nid) for nid in ids],
            "labels": {lb: [nid for nid in ids if lb in s.nodes[(pid, nid)][1]] for lb in LABELS},
            "keys": {k: (owner, k) if (owner := s.key_owner(pid, k)) is not None else None for k in KEYS},
            "edges": [edge(pid, eid) for eid, _ in plane_edges],
            "node_by_id": {i: node(pid, i) for i in node_probe.get(pid, [])},
            "edge_by_id": {i: edge(pid, i) for i in edge_probe.get(pid, [])},
            "adjacency": adj,
        }
    return out


def model_stats(s: State, head: int) -> tuple[int, ...]:
    labels = {lb for (_, _), (_, lbs, _) in s.nodes.items() for lb in lbs}
    types = {e[2] for e in s.edges.values()}
    return (len(s.planes), len(s.nodes), len(s.edges), len(labels), len(types), head)


def store_stats(db: Any) -> tuple[int, ...]:
    st_ = db.stats()
    return (st_.planes, st_.nodes, st_.edges, st_.labels, st_.edge_types, st_.commit_seq)


def model_tallies(s: State) -> dict[int, Any]:
    out = {}
    for pid in s.planes:
        labels: dict[str, int] = defaultdict(int)
        types: dict[str, int] = defaultdict(int)
        for (p, _), (_, lbs, _) in s.nodes.items():
            for lb in lbs if p == pid else ():
                labels[lb] += 1
        for (p, _), e in s.edges.items():
            if p == pid:
                types[e[2]] += 1
        counts = (sum(1 for k in s.nodes if k[0] == pid), sum(1 for k in s.edges if k[0] == pid))
        out[pid] = (dict(labels), dict(types), counts)
    return out


def store_tallies(snap: Any, s: State) -> dict[int, Any]:
    return {pid: (snap.tally(pid, b"L"), snap.tally(pid, b"T"), tuple(snap.counts(pid))) for pid in s.planes}


class Boom(Exception):
    """Raised by a commit function on purpose."""


# --------------------------------------------------------------------------- the machine


class StoreMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.dir = tempfile.mkdtemp(prefix="drsg-model-")
        self.path = os.path.join(self.dir, "graph.drsg")
        self.db = drsg.open(self.path)
        self.clock_ms = int(time.time() * 1000) + 60_000
        self._install_clock()
        self.model = State(planes={0: (STARTUP, {})})
        self.replay = Replay()
        self.used_nodes: set[int] = set()
        self.used_edges: set[int] = set()
        self.used_planes: set[int] = {0}
        self.clean = False  # True only right after every check passed

    def _install_clock(self) -> None:
        self.db.writer.clock = lambda: self.clock_ms / 1000

    def teardown(self) -> None:
        try:
            if self.clean:
                self._check_rebuild()
        finally:
            self.db.close()
            shutil.rmtree(self.dir, ignore_errors=True)

    # ------------------------------------------------------------------ drawing operations

    def _plane_name(self, data: Any, having: str | None = None, movable: bool = False) -> str:
        """Mostly a live plane (one with nodes / edges when ``having`` says so); now and then any name."""
        live = sorted(
            name
            for pid, (name, _) in self.model.planes.items()
            if not (movable and name == STARTUP)
            and (having is None or any(k[0] == pid for k in getattr(self.model, having)))
        )
        if not live or data.draw(st.integers(0, 9), label="any plane?") == 0:
            return data.draw(st.sampled_from(ALL_PLANE_NAMES), label="plane")  # may or may not exist
        return data.draw(st.sampled_from(live), label="plane")

    def _node_ref(self, data: Any, pid: int | None) -> int | str:
        choices: list[int | str] = []
        for (p, nid), (key, _, _) in sorted(self.model.nodes.items(), key=lambda kv: kv[0]):
            if p == pid:
                choices.append(nid)
                if key is not None:
                    choices += ["@" + key, key]
        if not choices or data.draw(st.integers(0, 19), label="missing?") == 0:
            return data.draw(st.sampled_from([MISSING_NODE, "@nobody", "nobody"]), label="ref")
        return data.draw(st.sampled_from(choices), label="ref")

    def _edge_id(self, data: Any, pid: int | None) -> int:
        ids = sorted(eid for (p, eid) in self.model.edges if p == pid)
        if not ids or data.draw(st.integers(0, 19), label="missing?") == 0:
            return MISSING_EDGE
        return data.draw(st.sampled_from(ids), label="edge")

    def _draw_op(self, data: Any, kind: str) -> tuple[Any, ...]:
        if kind == "create_plane":
            return (kind, data.draw(st.sampled_from(PLANE_NAMES)), data.draw(props_st))
        if kind == "rename_plane":
            # The startup plane is neither renamed nor a rename target here; see test_writer.py.
            source = self._plane_name(data, movable=True)
            if source == STARTUP:
                source = data.draw(st.sampled_from(PLANE_NAMES))
            return (kind, source, data.draw(st.sampled_from(PLANE_NAMES)))
        if kind == "set_plane_props":
            return (kind, self._plane_name(data), data.draw(props_st))
        if kind == "drop_plane":
            return (kind, self._plane_name(data, movable=True))
        having = "edges" if kind in ("update_edge", "delete_edge") else None
        having = "nodes" if kind in ("update_node", "delete_node", "create_edge") else having
        pname = self._plane_name(data, having)
        pid = self.model.plane_id(pname)
        if kind == "create_node":
            key = data.draw(st.sampled_from([None, None, None, *KEYS]), label="key")
            return (kind, pname, key, data.draw(labels_st), data.draw(props_st))
        if kind == "put_node":
            key = data.draw(st.sampled_from([None, *KEYS]), label="key")
            mode = data.draw(st.sampled_from(PUT_MODES), label="mode")
            return (kind, pname, key, data.draw(labels_st), data.draw(props_st), mode)
        if kind == "update_node":
            ref = self._node_ref(data, pid)
            unset = data.draw(st.lists(st.sampled_from([*PROP_NAMES, "absent"]), max_size=2))
            labels = data.draw(st.one_of(st.none(), labels_st), label="labels")
            return (kind, pname, ref, data.draw(props_st), unset, labels)
        if kind == "delete_node":
            return (kind, pname, self._node_ref(data, pid))
        if kind == "create_edge":
            src, dst = self._node_ref(data, pid), self._node_ref(data, pid)
            return (kind, pname, src, dst, data.draw(st.sampled_from(TYPES)), data.draw(props_st))
        if kind == "update_edge":
            eid = self._edge_id(data, pid)
            unset = data.draw(st.lists(st.sampled_from(PROP_NAMES), max_size=2))
            etype = data.draw(st.one_of(st.none(), st.sampled_from(TYPES)), label="type")
            return (kind, pname, eid, data.draw(props_st), unset, etype)
        if kind == "delete_edge":
            return (kind, pname, self._edge_id(data, pid))
        raise AssertionError(kind)

    # ------------------------------------------------------------------ executing a commit

    def _execute(self, ops: list[tuple[Any, ...]], fail: bool = False) -> None:
        self.clean = False
        self._sync_replay()
        head_before = self.db.head()
        last_ts = self.replay.ts[head_before]

        def commit_fn(tx: Any) -> list[Any]:
            out = [run_store(tx, op) for op in ops]
            if fail:
                raise Boom("on purpose")
            return out

        try:
            result = self.db.write(commit_fn, {"via": "model-test"})
        except Exception as exc:
            scratch = self.model.copy()
            expected: BaseException | None = None
            try:
                for i, op in enumerate(ops):
                    apply_op(scratch, op, -1 - i)
            except (Conflict, NotFound, UsageError) as model_exc:
                expected = model_exc
            if expected is None:
                assert fail, f"store raised {exc!r} but the model accepts {ops}"
                assert isinstance(exc, Boom), f"expected Boom, store raised {exc!r}"
            else:
                assert type(exc) is type(expected), f"{ops}: store raised {exc!r}, model {expected!r}"
            assert self.db.head() == head_before, "a failed commit consumed a seq"
            return

        assert not fail, "a commit function that raised was reported as committed"
        new = self.model.copy()
        emitted = False
        for op, res in zip(ops, result.value, strict=True):
            if op[0] == "put_node":
                assert res.op == put_outcome(new, op), f"{op}: the store {res.op} the node"
                created, record = res.op == "created", res.node
            else:
                created, record = op[0] in ("create_plane", "create_node", "create_edge"), res
            if created:
                used = {"create_plane": self.used_planes, "create_edge": self.used_edges}.get(op[0], self.used_nodes)
                assert record.id not in used, f"{op[0]} reused id {record.id}"
                used.add(record.id)
            emitted |= apply_op(new, op, record.id if created else None)
            self._check_returned(new, op, record)
        self.model = new
        if emitted:
            assert result.seqs == (head_before + 1,), (result.seqs, head_before)
            ts_now = int(self.clock_ms / 1000 * 1000)
            assert result.ts == max(ts_now, last_ts), "timestamp is not max(clock, previous)"
        else:
            assert result.seqs == () and result.seq is None, "a commit without mutations took a seq"
        assert self.db.head() == (head_before + 1 if emitted else head_before)

    def _check_returned(self, s: State, op: tuple[Any, ...], res: Any) -> None:
        kind = op[0]
        if kind in ("create_node", "put_node", "update_node"):
            key, labels, props = s.nodes[(res.plane, res.id)]
            assert (res.key, tuple(res.labels), canon(res.props)) == (key, labels, canon(props))
        elif kind in ("create_edge", "update_edge"):
            src, dst, etype, props = s.edges[(res.plane, res.id)]
            assert (res.src, res.dst, res.type, canon(res.props)) == (src, dst, etype, canon(props))
        elif kind in ("create_plane", "rename_plane", "set_plane_props"):
            name, props = s.planes[res.id]
            assert (res.name, canon(res.props)) == (name, canon(props))

    # ------------------------------------------------------------------ rules

    @initialize(data=st.data())
    def seed(self, data: Any) -> None:
        """One commit that builds a small graph, its edges naming nodes created in the same commit."""
        n = data.draw(st.integers(0, len(KEYS)), label="seed nodes")
        ops: list[tuple[Any, ...]] = [
            ("create_node", STARTUP, KEYS[i], data.draw(labels_st), data.draw(props_st)) for i in range(n)
        ]
        for _ in range(data.draw(st.integers(0, 2 * n), label="seed edges")):
            src, dst = data.draw(st.sampled_from(KEYS[:n])), data.draw(st.sampled_from(KEYS[:n]))
            ops.append(("create_edge", STARTUP, "@" + src, "@" + dst, data.draw(st.sampled_from(TYPES)), {}))
        if ops:
            self._execute(ops)

    @rule(data=st.data())
    def create_plane(self, data: Any) -> None:
        self._execute([self._draw_op(data, "create_plane")])

    @rule(data=st.data())
    def create_plane_again(self, data: Any) -> None:
        self._execute([self._draw_op(data, "create_plane")])

    @rule(data=st.data())
    def rename_plane(self, data: Any) -> None:
        self._execute([self._draw_op(data, "rename_plane")])

    @rule(data=st.data())
    def set_plane_props(self, data: Any) -> None:
        self._execute([self._draw_op(data, "set_plane_props")])

    @rule(data=st.data())
    def drop_plane(self, data: Any) -> None:
        self._execute([self._draw_op(data, "drop_plane")])

    @rule(data=st.data())
    def create_node(self, data: Any) -> None:
        self._execute([self._draw_op(data, "create_node")])

    @rule(data=st.data())
    def create_node_again(self, data: Any) -> None:  # nodes are the bulk of a graph: weight them
        self._execute([self._draw_op(data, "create_node")])

    @rule(data=st.data())
    def put_node(self, data: Any) -> None:
        self._execute([self._draw_op(data, "put_node")])

    @rule(data=st.data())
    def update_node(self, data: Any) -> None:
        self._execute([self._draw_op(data, "update_node")])

    @rule(data=st.data())
    def delete_node(self, data: Any) -> None:
        self._execute([self._draw_op(data, "delete_node")])

    @rule(data=st.data())
    def create_edge(self, data: Any) -> None:
        self._execute([self._draw_op(data, "create_edge")])

    @rule(data=st.data())
    def create_edge_again(self, data: Any) -> None:
        self._execute([self._draw_op(data, "create_edge")])

    @rule(data=st.data())
    def update_edge(self, data: Any) -> None:
        self._execute([self._draw_op(data, "update_edge")])

    @rule(data=st.data())
    def delete_edge(self, data: Any) -> None:
        self._execute([self._draw_op(data, "delete_edge")])

    _KINDS = (
        "create_plane",
        "rename_plane",
        "set_plane_props",
        "drop_plane",
        "create_node",
        "create_node",
        "put_node",
        "update_node",
        "delete_node",
        "create_edge",
        "update_edge",
        "delete_edge",
    )

    @rule(data=st.data())
    def multi_op_commit(self, data: Any) -> None:
        """Several operations in one commit: later ones read the earlier ones' writes."""
        kinds = data.draw(st.lists(st.sampled_from(self._KINDS), min_size=2, max_size=4))
        self._execute([self._draw_op(data, k) for k in kinds])

    @rule(data=st.data())
    def failing_commit(self, data: Any) -> None:
        """Operations, then an exception: nothing of the commit may remain."""
        kinds = data.draw(st.lists(st.sampled_from(self._KINDS), min_size=1, max_size=3))
        self._execute([self._draw_op(data, k) for k in kinds], fail=True)

    @rule()
    def read_only_commit(self) -> None:
        self.clean = False
        head = self.db.head()
        result = self.db.write(lambda tx: len(list(tx.view.planes())))
        assert result.value == len(self.model.planes)
        assert result.seqs == () and self.db.head() == head

    @rule(delta=st.integers(-5_000, 5_000))
    def move_clock(self, delta: int) -> None:
        """Wall clocks step backwards too; commit timestamps must not."""
        self.clean = False
        self.clock_ms += delta

    @rule()
    def reopen(self) -> None:
        self.clean = False
        self.db.close()
        self.db = drsg.open(self.path)
        self._install_clock()

    @rule()
    def rebuild(self) -> None:
        self.clean = False
        self._check_rebuild()

    @rule(data=st.data())
    def read_log_range(self, data: Any) -> None:
        self.clean = False
        head = self.db.head()
        lo = data.draw(st.integers(0, head + 1))
        hi = data.draw(st.one_of(st.none(), st.integers(0, head + 2)))
        got = [c.seq for c in self.db.commits(lo, hi)]
        top = head if hi is None else min(hi, head)
        assert got == list(range(max(lo, 1), top + 1))

    @rule(data=st.data())
    def history_as_of(self, data: Any) -> None:
        """node_history / edge_history at an earlier seq show only the versions up to it."""
        self.clean = False
        self._sync_replay()
        at = data.draw(st.integers(1, self.db.head()))
        with self.db.snapshot(as_of=at) as snap:
            self._check_histories(snap, at)

    # ------------------------------------------------------------------ checks

    def _sync_replay(self) -> None:
        self.replay.feed(list(self.db.commits()))

    def _check_histories(self, snap: Any, at: int) -> None:
        ts = self.replay.ts
        for (kind, pid, rid), versions in sorted(self.replay.history.items()):
            if pid not in self.replay.at[at].planes:
                continue
            expected = [(seq, ts[seq], rec) for seq, rec in sorted(versions.items()) if seq <= at]
            if kind == "node":
                got = [(v.seq, v.ts, _node(v.record)) for v in snap.node_history(pid, rid)]
            else:
                got = [(v.seq, v.ts, _edge(v.record)) for v in snap.edge_history(pid, rid)]
            assert got == expected, f"{kind} {rid} history as of {at}"

    @invariant()
    def everything_agrees(self) -> None:
        self._sync_replay()
        head = self.db.head()
        assert head == len(self.replay.commits)
        probes = self.replay.probes()

        # 1. current reads == the operation model == the replay of the whole log
        expected_now = dump_model(self.model, probes)
        assert dump_model(self.replay.state, probes) == expected_now, "log replay != operation model"
        with self.db.snapshot() as snap:
            assert snap.at == head
            assert dump_store(snap, probes, typed_planes(self.model)) == expected_now, "current reads != model"
            self._check_histories(snap, head)
        assert store_stats(self.db) == model_stats(self.model, head), "stats"
        with self.db.snapshot() as snap:
            assert store_tallies(snap, self.model) == model_tallies(self.model), "label/type tallies, counts"

        # 2. as-of reads at every seq == replay of the log prefix
        for seq in range(1, head + 1):
            expected = self.replay.expected_dump(seq, probes)
            with self.db.snapshot(as_of=seq) as snap:
                assert snap.at == seq
                got = dump_store(snap, probes, typed_planes(self.replay.at[seq]))
            assert got == expected, f"as-of {seq} (head {head})"

        # 3. time travel by timestamp resolves to the last commit at or before the time
        for seq in range(1, head + 1):
            ms = self.replay.ts[seq]
            want = self.replay.expected_seq_at_ms(ms)
            assert want >= seq
            assert self.db.resolve_as_of(AsOf(ms=ms)) == want
            assert self.db.resolve_as_of(f"TIME {ms}") == want
            assert self.db.resolve_as_of(format_ms(ms)) == want, f"RFC 3339 {format_ms(ms)}"
            before = self.replay.expected_seq_at_ms(ms - 1)
            if before == 0:
                with pytest.raises(BadAsOf):
                    self.db.resolve_as_of(AsOf(ms=ms - 1))
            else:
                assert self.db.resolve_as_of(AsOf(ms=ms - 1)) == before
        with pytest.raises(BadAsOf):
            self.db.resolve_as_of(head + 1)
        self.clean = True

    def _full_dump(self) -> dict[Any, Any]:
        self._sync_replay()
        probes = self.replay.probes()
        head = self.db.head()
        out: dict[Any, Any] = {"stats": store_stats(self.db)}
        for seq in range(1, head + 1):
            with self.db.snapshot(as_of=seq) as snap:
                out[seq] = dump_store(snap, probes, set(self.replay.plane_ids))
        with self.db.snapshot() as snap:
            for kind, pid, rid in sorted(self.replay.history):
                fn = snap.node_history if kind == "node" else snap.edge_history
                out[kind, pid, rid] = [
                    (v.seq, v.ts, _node(v.record) if kind == "node" else _edge(v.record)) for v in fn(pid, rid)
                ]
        return out

    def _check_rebuild(self) -> None:
        head = self.db.head()
        before = self._full_dump()
        assert self.db.rebuild_projection() == head
        assert self.db.head() == head, "rebuilding the projection consumed a seq"
        after = self._full_dump()
        assert after == before, "rebuild_projection changed what readers see"


_PROFILES = {  # HYPOTHESIS_PROFILE -> (max_examples, stateful_step_count)
    "dev": (10, 20),
    "default": (50, 50),
    "ci": (50, 50),
    "thorough": (300, 60),
}
_EXAMPLES, _STEPS = _PROFILES.get(os.environ.get("HYPOTHESIS_PROFILE", "default"), _PROFILES["default"])


@pytest.mark.timeout(900)  # a failure is shrunk for up to 5 minutes (hypothesis' own limit)
class TestStoreModel(StoreMachine.TestCase):  # type: ignore[misc,valid-type]
    settings = settings(
        max_examples=_EXAMPLES,
        stateful_step_count=_STEPS,
        deadline=None,
        report_multiple_bugs=False,  # shrink one failure well rather than several slowly
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
