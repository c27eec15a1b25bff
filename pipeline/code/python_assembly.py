"""The Python handler's assemble step: every file's partial (python_reading.py) resolved into
facts — definitions first, then the edges between them (imports, bases, calls, references), then
stand-ins for what the tree uses from outside. It sees all partials at once, so where the chunk
boundaries fell cannot change the answer."""

from __future__ import annotations

from typing import Any

from drsg.pipeline.code.handler import FactEdge, FactNode, Output, Report
from drsg.pipeline.code.python_reading import BUILTINS


class Assembly:
    """All files' partials resolved into facts: definitions first, then edges, then stand-ins."""

    def __init__(self, files: list[dict[str, Any]], generated_by: str) -> None:
        self.files = files
        self.generated_by = generated_by  # the handler's ident, stamped on every fact
        self.nodes: dict[str, FactNode] = {}
        self.edges: list[FactEdge] = []
        self.edge_seen: set[tuple[str, str, str]] = set()
        self.external: dict[str, str] = {}  # stand-in key -> label
        self.bindings: dict[str, dict[str, str]] = {}  # module -> its import bindings
        self.stars: dict[str, list[str]] = {}
        self.bases: dict[str, list[str]] = {}  # class key -> base class keys in this tree
        self.self_attrs: dict[str, dict[str, list[Any]]] = {}
        self.notes: list[str] = []
        self.counts = {"external": 0, "receiver": 0, "ambiguous": 0, "duplicates": 0, "skipped": 0}
        self.modules: set[str] = set()

    def output(self) -> Output:
        stamp = {"_generated_by": self.generated_by}
        claimed: list[str] = []
        for record in self.files:
            if "skipped" in record:
                self.counts["skipped"] += 1
                self.notes.append(f"skipped {record['skipped']}")
                continue
            if record["module"] in self.modules:
                claimed.append(f"{record['module']} ({record['path']})")
                continue
            self.modules.add(record["module"])
            self.bindings[record["module"]] = record["bindings"]
            self.stars[record["module"]] = record["stars"]
            self.counts["duplicates"] += len(record["duplicates"])
            for definition in record["defs"]:
                if definition["key"] in self.nodes:
                    claimed.append(definition["key"])
                    continue
                self.nodes[definition["key"]] = FactNode(
                    definition["key"], definition["label"], (), {**definition["props"], **stamp}
                )
                if "self_attrs" in definition:
                    self.self_attrs[definition["key"]] = definition["self_attrs"]
        active = [r for r in self.files if "skipped" not in r and r["module"] in self.modules]
        for record in active:
            for definition in record["defs"]:
                if definition["parent"] is not None and definition["key"] in self.nodes:
                    self._edge(definition["parent"], definition["key"], "CONTAINS", definition["line"])
        for record in active:
            for definition in record["defs"]:
                for written, line, local in definition.get("bases", ()):
                    self._extends(definition["key"], written, local, line)
        for record in active:
            self._imports(record)
        for record in active:
            for site in record["sites"]:
                self._resolve_site(site)
        for key in sorted(self.external):
            self.nodes.setdefault(key, FactNode(key, self.external[key], ("External",), dict(stamp)))
        for edge in self.edges:
            edge.properties.update(stamp)
        self._write_notes(claimed)
        report = Report(facts=len(self.nodes) + len(self.edges), skipped=self.counts["skipped"], notes=self.notes)
        return Output(list(self.nodes.values()), self.edges, "", report)

    # -- edges

    def _edge(self, src: str, dst: str, kind: str, line: int, **props: Any) -> None:
        """One edge per (src, type, dst), at its first line: a graph edge is a fact, not an occurrence."""
        marker = (src, kind, dst)
        if (src == dst and kind != "CALLS") or marker in self.edge_seen:
            return
        self.edge_seen.add(marker)
        self.edges.append(FactEdge(src, dst, kind, {"line": line, **props}))

    def _imports(self, record: dict[str, Any]) -> None:
        module = record["module"]
        for entry in record["imports"]:
            target, line = entry[0], entry[1]
            names = entry[2] if len(entry) > 2 else []
            found = False
            for name in names:  # `from pkg import mod`: an edge to each submodule named
                if f"{target}.{name}" in self.modules:
                    self._edge(module, f"{target}.{name}", "IMPORTS", line)
                    found = True
            if found:
                continue
            if target == module:
                continue  # `from . import name` in a package's own __init__
            if target in self.modules:
                self._edge(module, target, "IMPORTS", line)
            elif target:
                self.external.setdefault(target, "Package")
                self._edge(module, target, "IMPORTS", line)

    def _extends(self, key: str, written: str, local: str | None, line: int) -> None:
        target = self._definition(local) if local is not None else None
        if target is not None and self.nodes[target].label == "Class":
            self.bases.setdefault(key, []).append(target)
            self._edge(key, target, "EXTENDS", line, _resolved_by="name" if "." not in written else "chain")
            return
        outside = local if local is not None else (f"builtins.{written}" if written in BUILTINS else None)
        if outside is not None and not self._in_tree(outside):
            self.external.setdefault(outside, "Class")
            self._edge(key, outside, "EXTENDS", line)

    def _in_tree(self, dotted: str) -> bool:
        parts = dotted.split(".")
        return any(".".join(parts[:cut]) in self.modules for cut in range(1, len(parts) + 1))

    def _definition(self, dotted: str, depth: int = 0) -> str | None:
        """The key of the definition a dotted path names, following re-exports (``from .x import f``)."""
        if dotted in self.nodes and self.nodes[dotted].label != "Package":
            return dotted
        if depth > 8:
            return None
        parts = dotted.split(".")
        for cut in range(len(parts) - 1, 0, -1):  # the longest module prefix
            module = ".".join(parts[:cut])
            if module not in self.modules:
                continue
            bound = self.bindings.get(module, {}).get(parts[cut])
            if bound is not None:
                return self._definition(".".join([bound, *parts[cut + 1 :]]), depth + 1)
            return None
        return None

    def _resolve_site(self, site: dict[str, Any]) -> None:
        """A call site (or a function used as a value) becomes an edge when its target is proven."""
        kind, caller = site["kind"], site["caller"]
        if caller not in self.nodes:
            return
        target, how, confidence, miss = self._target(site)
        if target is None:
            if kind == "CALLS" and miss is not None:
                self.counts[miss] += 1
            return
        label = self.nodes[target].label
        if kind == "REFERENCES":
            if label in ("Function", "Method"):  # a class named as a value is a type, not a reference
                self._edge(
                    caller,
                    target,
                    "REFERENCES",
                    site["line"],
                    _resolved_by="fn-ref",
                    _confidence=confidence,
                    _ref=site["ref"],
                )
            return
        if label not in ("Function", "Method", "Class"):
            self.counts["external"] += 1  # a call of a variable's value: what it holds is not known
            return
        how = "class" if label == "Class" and how in ("name", "chain") else how
        self._edge(caller, target, "CALLS", site["line"], _resolved_by=how, _confidence=confidence, _ref=site["ref"])

    def _target(self, site: dict[str, Any]) -> tuple[str | None, str, str, str | None]:
        """(target key, how, confidence, what to count when there is none)."""
        form = site.get("form")
        if form in ("name", "chain"):
            return self._definition(site["target"]), form, "high", "external"
        if form in ("self", "super"):
            start: list[str | None] = [site["cls"]] if form == "self" else list(self.bases.get(site["cls"], []))
            return self._method(start, site["name"]), "self-class" if form == "self" else "super", "high", "receiver"
        if form in ("self-attr", "receiver"):
            if form == "self-attr":
                held = self.self_attrs.get(site["cls"], {}).get(site["attr"])
                cls = self._definition(held[1]) if held is not None and held[1] is not None else None
            else:
                cls = self._definition(site["type_target"]) if site.get("type_target") else None
            proven = cls is not None and self.nodes[cls].label == "Class"
            return (self._method([cls], site["name"]) if proven else None), form, "medium", "receiver"
        if form == "star":
            found = {t for star in site["stars"] if (t := self._definition(f"{star}.{site['name']}")) is not None}
            if len(found) == 1:
                return found.pop(), "star", "medium", None
            return None, "star", "none", "ambiguous" if found else "external"
        if form == "unknown-receiver":
            return None, "", "none", "receiver"
        return None, "", "none", "external"  # builtins, other packages, names bound nowhere here

    def _method(self, classes: list[str | None], name: str) -> str | None:
        """``name`` looked up along the classes' bases in this tree, depth first, left to right."""
        seen: set[str] = set()
        todo = [c for c in classes if c is not None]
        while todo:
            cls = todo.pop(0)
            if cls in seen:
                continue
            seen.add(cls)
            candidate = f"{cls}.{name}"
            if candidate in self.nodes and self.nodes[candidate].label == "Method":
                return candidate
            todo[0:0] = self.bases.get(cls, [])
        return None

    def _write_notes(self, claimed: list[str]) -> None:
        counts = self.counts
        if counts["external"]:
            self.notes.append(
                f"{counts['external']} call(s) named nothing defined here — calls into other packages and the "
                "standard library are not edges"
            )
        if counts["receiver"]:
            self.notes.append(
                f"{counts['receiver']} method call(s) on a receiver whose class is not known here were left "
                "unresolved (never matched by name alone)"
            )
        if counts["ambiguous"]:
            self.notes.append(
                f"{counts['ambiguous']} call(s) matched definitions in two star imports equally — left alone"
            )
        if claimed or counts["duplicates"]:
            shown = ", ".join(claimed[:5]) + (f" and {len(claimed) - 5} more" if len(claimed) > 5 else "")
            total = len(claimed) + counts["duplicates"]
            self.notes.append(
                f"{total} name(s) defined twice: the first definition is the node" + (f" ({shown})" if shown else "")
            )
