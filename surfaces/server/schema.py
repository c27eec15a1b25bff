"""The OpenRPC document: upstream's (``openrpc.json``, shipped beside this module) and ours.

``rpc.discover`` answers with :func:`discover`: upstream's document with only the methods this
server implements, each with the parameters it really accepts (upstream's, plus drsg's additions
marked ``"x-drsg": true``), and upstream's components unchanged, so generated SDKs keep working.

:func:`validate` checks a value against the small part of JSON Schema those documents use (``type``,
``enum``, ``items``, ``properties``, ``required``, ``oneOf``, ``anyOf``, ``minimum``, ``maximum``,
``$ref`` into ``#/components/schemas``). It checks request params here and results in the tests.
Pure: no I/O beyond reading the shipped file once.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable, Mapping
from functools import cache
from importlib import resources
from typing import Any

_TYPES: dict[str, Any] = {
    "null": lambda v: v is None,
    "boolean": lambda v: isinstance(v, bool),
    "integer": lambda v: type(v) is int or (isinstance(v, int) and not isinstance(v, bool)),
    "number": lambda v: type(v) is float or type(v) is int or (isinstance(v, int | float) and not isinstance(v, bool)),
    "string": lambda v: isinstance(v, str),
    "array": lambda v: isinstance(v, list),
    "object": lambda v: isinstance(v, dict),
}
_ARTICLE = {"integer": "an integer", "array": "an array", "object": "an object"}


@cache
def upstream() -> dict[str, Any]:
    """Upstream's OpenRPC document, as shipped (treat it as read-only; copy before changing)."""
    text = resources.files("drsg.surfaces.server").joinpath("openrpc.json").read_text(encoding="utf-8")
    return json.loads(text)  # type: ignore[no-any-return]


def upstream_method(name: str) -> dict[str, Any]:
    for method in upstream()["methods"]:
        if method["name"] == name:
            return copy.deepcopy(method)  # type: ignore[no-any-return]
    raise KeyError(f"upstream has no method {name!r}")


def components() -> dict[str, Any]:
    return upstream()["components"]  # type: ignore[no-any-return]


def discover(methods: Iterable[Mapping[str, Any]], version: str, extra_info: Mapping[str, Any] | None = None) -> dict:
    """The document this server serves: upstream's info and components, our methods."""
    base = upstream()
    info = {k: copy.deepcopy(v) for k, v in base["info"].items() if k != "x-websocket"}
    info["title"] = "drsg JSON-RPC"
    info["version"] = version
    info["x-error-codes"] = {**info["x-error-codes"], "-32603": "internal error (a bug; the server logged it)"}
    info["x-drsg"] = (
        "Served by drsg: upstream's methods and params for every feature drsg has. Parameters and methods "
        "marked `x-drsg` are drsg additions; unknown parameters are refused with -32602."
    )
    info.update(extra_info or {})
    return {
        "openrpc": base["openrpc"],
        "info": info,
        "methods": [copy.deepcopy(dict(m)) for m in methods],
        "components": copy.deepcopy(base["components"]),
    }


# --------------------------------------------------------------------------- validation


def validate(value: Any, schema: Mapping[str, Any], where: str = "value") -> str | None:
    """The first way ``value`` breaks ``schema``, as one line naming ``where``; None when it fits."""
    return _check(value, schema, where, 0)


def _resolve(schema: Mapping[str, Any]) -> Mapping[str, Any]:
    ref = schema.get("$ref")
    while ref is not None:
        prefix = "#/components/schemas/"
        if not ref.startswith(prefix):
            raise ValueError(f"unsupported $ref {ref!r}")
        schema = components()["schemas"][ref[len(prefix) :]]
        ref = schema.get("$ref")
    return schema


def _type_names(types: Any) -> str:
    names = [_ARTICLE.get(t, f"a {t}") for t in ([types] if isinstance(types, str) else types)]
    return " or ".join(names)


def _check(value: Any, schema: Mapping[str, Any], where: str, depth: int) -> str | None:
    if depth > 32:
        return f"{where} nests too deeply"
    schema = _resolve(schema)
    for key in ("oneOf", "anyOf"):
        if key in schema:
            options = schema[key]
            if not any(_check(value, option, where, depth + 1) is None for option in options):
                kinds = [_resolve(o).get("type", "value") for o in options]
                return f"{where} must be {_type_names([k for k in kinds if isinstance(k, str)])}"
    types = schema.get("type")
    if types is not None:
        fits = _TYPES[types](value) if isinstance(types, str) else any(_TYPES[t](value) for t in types)
        if not fits:
            return f"{where} must be {_type_names(types)}, not {_json_type(value)}"
    if "enum" in schema and value not in schema["enum"]:
        return f"{where} must be one of {', '.join(json.dumps(e) for e in schema['enum'])}, not {json.dumps(value)}"
    if isinstance(value, int | float) and not isinstance(value, bool):
        if "minimum" in schema and value < schema["minimum"]:
            return f"{where} must be at least {schema['minimum']}, not {value}"
        if "maximum" in schema and value > schema["maximum"]:
            return f"{where} must be at most {schema['maximum']}, not {value}"
    if isinstance(value, list) and "items" in schema:
        items = _resolve(schema["items"])
        simple = _TYPES.get(items["type"]) if set(items) <= {"type", "description"} and "type" in items else None
        if simple is not None:  # e.g. a vector: a long list of numbers, checked in one tight loop
            for i, item in enumerate(value):
                if not simple(item):
                    return f"{where}[{i}] must be {_type_names(items['type'])}, not {_json_type(item)}"
            return None
        for i, item in enumerate(value):
            problem = _check(item, items, f"{where}[{i}]", depth + 1)
            if problem:
                return problem
    if isinstance(value, dict):
        for name in schema.get("required", ()):
            if name not in value:
                return f"{where} lacks required field {name!r}"
        for name, sub in schema.get("properties", {}).items():
            if name in value:
                problem = _check(value[name], sub, f"{where}.{name}", depth + 1)
                if problem:
                    return problem
    return None


def _json_type(value: Any) -> str:
    for name in ("null", "boolean", "integer", "number", "string", "array", "object"):
        if _TYPES[name](value):
            return _ARTICLE.get(name, f"a {name}")
    return type(value).__name__
