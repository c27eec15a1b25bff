"""What a model may answer during `ask`, read as data (pure: no I/O).

Each turn the model answers with one JSON object (upstream's protocol)::

    {"asks": ["sub-question", …]}                     a decomposition: one plan per sub-question
    {"tool": "find_edge", "query": "…"}                edge types by similarity
    {"tool": "find_entity", "query": "…", "label": "L" | null}
    {"plan": <plan>}   {"plans": [<plan>, …]}   <plan>  the answer
    {"cypher": "MATCH … RETURN …"}                     the answer as one read-only Cypher statement

Anything else — prose, an unknown tool, an object with other keys, a plan list that is not a list —
is :class:`Refused` with the reason; the loop counts it and says so to the model, and never acts
on it. Plans are only *shaped* here; :mod:`drsg.plan` checks them. A Cypher answer carries no
``params``: the model writes its values into the statement, so the statement the trace shows is
the whole answer, and nothing outside it (a parameter's AS OF, a value) can change what runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from drsg.pipeline.llm.answers import MalformedAnswer, json_object

TOOLS = ("find_edge", "find_entity")
MAX_ASKS = 8
MAX_PLANS = 8
MAX_QUERY_CHARS = 500
MAX_CYPHER_CHARS = 4000


@dataclass(frozen=True)
class Decompose:
    asks: list[str]


@dataclass(frozen=True)
class ToolCall:
    tool: str
    query: str
    label: str | None = None


@dataclass(frozen=True)
class Plans:
    plans: list[Any]


@dataclass(frozen=True)
class Statement:
    """A Cypher statement's text, as the model wrote it (checked by the loop before it runs)."""

    text: str


@dataclass(frozen=True)
class Refused:
    reason: str


Answer = Decompose | ToolCall | Plans | Statement | Refused


def parse_answer(text: str) -> Answer:
    try:
        found = json_object(text)
    except MalformedAnswer as exc:
        return Refused(f"the answer is not one JSON object ({exc})")
    if "source" in found:
        return Plans([found])
    keys = set(found)
    if keys == {"asks"}:
        return _asks(found["asks"])
    if "tool" in found:
        return _tool(found)
    if keys == {"plan"}:
        return Plans([found["plan"]])
    if "cypher" in keys:
        return _cypher(found)
    if keys == {"plans"}:
        plans = found["plans"]
        if not isinstance(plans, list) or not plans:
            return Refused('"plans" must be a non-empty list of plans')
        if len(plans) > MAX_PLANS:
            return Refused(f"at most {MAX_PLANS} plans, not {len(plans)}")
        return Plans(plans)
    shown = ", ".join(sorted(map(str, keys)))[:80]
    return Refused(f"an answer has asks, tool, plan, plans or source, not {shown}")


def _asks(asks: Any) -> Answer:
    if not isinstance(asks, list) or not asks or not all(isinstance(a, str) and a.strip() for a in asks):
        return Refused('"asks" must be a non-empty list of sub-questions (strings)')
    if len(asks) > MAX_ASKS:
        return Refused(f"at most {MAX_ASKS} sub-questions, not {len(asks)}")
    return Decompose([" ".join(a.split())[:MAX_QUERY_CHARS] for a in asks])


def _cypher(found: dict[str, Any]) -> Answer:
    text = found["cypher"]
    if set(found) != {"cypher"}:
        return Refused('a Cypher answer is {"cypher": "<statement>"} alone; write values into the statement')
    if not isinstance(text, str) or not text.strip():
        return Refused('"cypher" must be one statement as a string')
    if len(text) > MAX_CYPHER_CHARS:
        return Refused(f"the statement has {len(text)} characters; keep it under {MAX_CYPHER_CHARS}")
    return Statement(text.strip())


def _tool(found: dict[str, Any]) -> Answer:
    tool, query, label = found.get("tool"), found.get("query"), found.get("label")
    if tool not in TOOLS:
        return Refused(f"there is no tool {str(tool)[:40]!r}; the tools are {', '.join(TOOLS)}")
    allowed = {"tool", "query"} | ({"label"} if tool == "find_entity" else set())
    if set(found) - allowed:
        return Refused(f"{tool} takes only {', '.join(sorted(allowed))}")
    if not isinstance(query, str) or not query.strip():
        return Refused(f'{tool} needs a "query" string')
    if label is not None and not isinstance(label, str):
        return Refused('find_entity\'s "label" is a label name or null')
    return ToolCall(str(tool), " ".join(query.split())[:MAX_QUERY_CHARS], label or None)
