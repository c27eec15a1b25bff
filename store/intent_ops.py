"""The store's intent operations: planes, nodes and edges written by what the caller names.

Each takes the JSON arguments a surface received (properties in the JSON dialect, nodes by id or
external key) and decides on the transaction's state, so it can run wherever the intent lands in
the log (store/intents.py). Answers are small — ids and what happened — and a surface reads the
records back at the commit's seq: an answer is kept for each intent a Kafka node decides.

A node reference is an id (an integer) or an external key (a string, taken literally).
"""

from __future__ import annotations

from collections.abc import Iterable

from drsg.kernel.errors import BadValue, NotFound
from drsg.kernel.values import Json, Vector, props_from_json
from drsg.store.intents import IntentOp, IntentOps
from drsg.store.records import Node, Plane
from drsg.store.snapshot import Snapshot
from drsg.store.transaction import WriteTx


def find_node(view: Snapshot, plane: Plane, ref: int | str) -> Node | None:
    """By id (an integer) or external key (a string, taken literally)."""
    if isinstance(ref, int):
        return view.node(plane.id, ref)
    return view.node_by_key(plane.id, ref)


def need_node(view: Snapshot, plane: Plane, ref: int | str, role: str = "node") -> Node:
    """The node, else NotFound in upstream's words (``no node with key 'ada' …``)."""
    node = find_node(view, plane, ref)
    if node is None:
        what = f"id {ref}" if isinstance(ref, int) else f"key {ref!r}"
        raise NotFound(f"no {role} with {what} in plane {plane.name!r}")
    return node


def _ref(args: dict[str, Json], name: str) -> int | str:
    ref = args.get(name)
    if isinstance(ref, bool) or not isinstance(ref, int | str):
        raise BadValue(f"`{name}` names a node by id (an integer) or key (a string)")
    return ref


def _int(args: dict[str, Json], name: str) -> int:
    value = args.get(name)
    if isinstance(value, bool) or not isinstance(value, int):
        raise BadValue(f"`{name}` must be an integer")
    return value


def _str(args: dict[str, Json], name: str) -> str:
    value = args.get(name)
    if not isinstance(value, str):
        raise BadValue(f"`{name}` must be a string")
    return value


def _names(args: dict[str, Json], name: str) -> list[str] | None:
    value = args.get(name)
    if value is None:
        return None
    if not isinstance(value, list):
        raise BadValue(f"`{name}` must be a list of strings")
    names = [v for v in value if isinstance(v, str)]
    if len(names) != len(value):
        raise BadValue(f"`{name}` must be a list of strings")
    return names


def _unset(args: dict[str, Json]) -> Iterable[str]:
    return _names(args, "unset") or ()


# --------------------------------------------------------------------------- planes


def plane_create(tx: WriteTx, args: dict[str, Json]) -> Json:
    return {"plane": tx.create_plane(_str(args, "name"), props_from_json(args.get("properties"))).id}


def plane_rename(tx: WriteTx, args: dict[str, Json]) -> Json:
    return {"plane": tx.rename_plane(_str(args, "plane"), _str(args, "to")).id}


def plane_set_props(tx: WriteTx, args: dict[str, Json]) -> Json:
    plane = tx.set_plane_props(_str(args, "plane"), props_from_json(args.get("properties")), _unset(args))
    return {"plane": plane.id}


def plane_drop(tx: WriteTx, args: dict[str, Json]) -> Json:
    return {"plane": tx.drop_plane(_str(args, "plane")).id}


# --------------------------------------------------------------------------- nodes


def node_put(tx: WriteTx, args: dict[str, Json]) -> Json:
    """A node by key (``mode`` as WriteTx.put_node's, ``create`` by default), or a new one without."""
    key = args.get("key")
    if key is not None and not isinstance(key, str):
        raise BadValue("`key` must be a string")
    mode = args.get("mode", "create")
    if not isinstance(mode, str):
        raise BadValue("`mode` must be a string")
    plane = tx.plane(_str(args, "plane"))
    labels, props = _names(args, "labels") or [], props_from_json(args.get("properties"))
    done = tx.put_node(plane, key, labels, props, mode=mode)
    return {"op": done.op, "node": done.node.id}


def node_update(tx: WriteTx, args: dict[str, Json]) -> Json:
    plane = tx.plane(_str(args, "plane"))
    node = need_node(tx.view, plane, _ref(args, "node"))
    set_props = props_from_json(args.get("set"), "set")
    return {"node": tx.update_node(plane, node.id, set_props, _unset(args), _names(args, "labels")).id}


def node_delete(tx: WriteTx, args: dict[str, Json]) -> Json:
    """Deleting a node that does not exist is a no-op answered ``deleted: false``."""
    plane = tx.plane(_str(args, "plane"))
    node = find_node(tx.view, plane, _ref(args, "node"))
    if node is None:
        return {"deleted": False, "node": None}
    return {"deleted": True, "node": tx.delete_node(plane, node.id).id}


# --------------------------------------------------------------------------- edges


def edge_create(tx: WriteTx, args: dict[str, Json]) -> Json:
    plane = tx.plane(_str(args, "plane"))
    src = need_node(tx.view, plane, _ref(args, "src"), "src node")
    dst = need_node(tx.view, plane, _ref(args, "dst"), "dst node")
    props = props_from_json(args.get("properties"))
    return {"edge": tx.create_edge(plane, src.id, dst.id, _str(args, "type"), props).id}


def edge_update(tx: WriteTx, args: dict[str, Json]) -> Json:
    plane = tx.plane(_str(args, "plane"))
    edge_type = args.get("type")
    if edge_type is not None and not isinstance(edge_type, str):
        raise BadValue("`type` must be a string")
    set_props = props_from_json(args.get("set"), "set")
    return {"edge": tx.update_edge(plane, _int(args, "edge"), set_props, _unset(args), edge_type).id}


def edge_delete(tx: WriteTx, args: dict[str, Json]) -> Json:
    """Deleting an edge that does not exist is a no-op answered ``deleted: false``."""
    plane = tx.plane(_str(args, "plane"))
    edge_id = _int(args, "edge")
    if tx.view.edge(plane.id, edge_id) is None:
        return {"deleted": False, "edge": edge_id}
    tx.delete_edge(plane, edge_id)
    return {"deleted": True, "edge": edge_id}


# --------------------------------------------------------------------------- index declarations


def index_declare(tx: WriteTx, args: dict[str, Json]) -> Json:
    """Declare a search index (idempotent; WriteTx.declare_index's rules); answers its declaration."""
    options = args.get("options") or {}
    if not isinstance(options, dict):
        raise BadValue("`options` must be an object")
    plane = tx.plane(_str(args, "plane"))
    return tx.declare_index(plane, _str(args, "kind"), _str(args, "label"), _str(args, "property"), options).to_json()


def index_ensure(tx: WriteTx, args: dict[str, Json]) -> Json:
    """Declare an index on ``label``'s ``property``, or, with no label, on every label whose nodes
    hold a value of the index's kind there (a vector, or text) as the intent is decided (`drsg index
    ensure|keyword`); answers the (label, property) pairs declared. With ``if_missing``, a label that
    has that index already keeps it as it is, whatever its options (vectorize's indexes)."""
    options = args.get("options") or {}
    if not isinstance(options, dict):
        raise BadValue("`options` must be an object")
    plane, kind, prop = tx.plane(_str(args, "plane")), _str(args, "kind"), _str(args, "property")
    label = args.get("label")
    if label is None:
        labels = labels_carrying(tx.view, plane.id, prop, Vector if kind == "vector" else str)
    elif isinstance(label, str):
        labels = [label]
    else:
        raise BadValue("`label` must be a string, or left out for every label carrying the property")
    if args.get("if_missing") is True:
        labels = [each for each in labels if tx.view.index(plane.id, kind, each, prop) is None]
    for each in labels:
        tx.declare_index(plane, kind, each, prop, options)
    return {"pairs": [[each, prop] for each in labels]}


def labels_carrying(snap: Snapshot, plane: int, prop: str, want: type) -> list[str]:
    """Labels of nodes whose ``prop`` holds a ``want`` value (a declaration-time scan)."""
    found: set[str] = set()
    for node in snap.nodes(plane):
        if isinstance(node.props.get(prop), want):
            found.update(node.labels)
    return sorted(found)


def index_drop(tx: WriteTx, args: dict[str, Json]) -> Json:
    plane = tx.plane(_str(args, "plane"))
    return tx.drop_index(plane, _str(args, "kind"), _str(args, "label"), _str(args, "property")).to_json()


# --------------------------------------------------------------------------- the library's (drsg.api.Plane's)
#
# Its references are WriteTx's: an id, ``@key`` or a bare key, named as given when they name no node;
# deleting what is not there is NotFound, and a deletion answers what it deleted (read back at the
# commit before it).


def edge_link(tx: WriteTx, args: dict[str, Json]) -> Json:
    plane = tx.plane(_str(args, "plane"))
    props = props_from_json(args.get("properties"))
    return {"edge": tx.create_edge(plane, _ref(args, "src"), _ref(args, "dst"), _str(args, "type"), props).id}


def edge_unlink(tx: WriteTx, args: dict[str, Json]) -> Json:
    return {"edge": tx.delete_edge(tx.plane(_str(args, "plane")), _int(args, "edge")).id}


def node_remove(tx: WriteTx, args: dict[str, Json]) -> Json:
    """A node and every edge at it; how many edges went with it."""
    gone = tx.delete_node(tx.plane(_str(args, "plane")), _ref(args, "node"))
    return {"node": gone.id, "edges": sum(1 for m in tx.mutations if m.op == "edge.delete")}


STORE_OPS: dict[str, IntentOp] = {
    "plane.create": plane_create,
    "plane.rename": plane_rename,
    "plane.set_props": plane_set_props,
    "plane.drop": plane_drop,
    "node.put": node_put,
    "node.update": node_update,
    "node.delete": node_delete,
    "edge.create": edge_create,
    "edge.update": edge_update,
    "edge.delete": edge_delete,
    "edge.link": edge_link,
    "edge.unlink": edge_unlink,
    "node.remove": node_remove,
    "index.declare": index_declare,
    "index.ensure": index_ensure,
    "index.drop": index_drop,
}

#: Every operation an intent may name. One table for every process (see store/intents.py).
INTENT_OPS = IntentOps(STORE_OPS)
