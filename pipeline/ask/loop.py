"""`ask`: a question → read-only plans → the union of their subgraphs, with a trace of every turn.

The loop (upstream's, ``reference/upstream-drsg.md`` §4b): the model sees the plan grammar and the
plane's soft schema, then answers one JSON object per turn (:mod:`.protocol`): a decomposition, a
tool call (only with an embedder, never on the last turn), or plans. Every plan is shaped
(:func:`drsg.plan.query.plan_from_json`), held to the live schema (:func:`drsg.plan.schema.check_plan`),
given ``Limit(limit)`` when it has none, and run; one that fails any of these goes back to the
model with the error, within ``max_attempts`` turns shared by tools and repairs. An answer outside
the protocol is refused and counted, never acted on. The plan language has no write step, so
nothing a model says can change the graph.

Everything is read at one seq: the schema, the tools' entities and the plans (the AS OF given, or
the head when the ask began).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from itertools import islice
from typing import Any

from drsg.kernel.asof import AsOf
from drsg.kernel.errors import AskFailed, DrsgError
from drsg.kernel.values import Vector
from drsg.models.chat.base import Message
from drsg.models.embedders.base import Embedder
from drsg.pipeline.ask import prompts
from drsg.pipeline.ask.protocol import Decompose, Plans, Refused, Statement, ToolCall, parse_answer
from drsg.pipeline.ask.statement import checked, hide_values, limited
from drsg.pipeline.ask.tools import MAX_ENTITIES, Tools
from drsg.pipeline.embedder_choice import same_space
from drsg.pipeline.llm.calls import ModelCalls
from drsg.plan.logical import Limit
from drsg.plan.query import Plan, plan_from_json
from drsg.plan.schema import SoftSchema, check_plan
from drsg.store.database import Database
from drsg.store.records import Node
from drsg.workers.cypher.result import Answer as CypherAnswer
from drsg.workers.cypher.result import CypherResult, Path, answer_json
from drsg.workers.cypher.run import run_read
from drsg.workers.plans import run_plan_subgraph
from drsg.workers.schema import missing_keys, soft_schema
from drsg.workers.search import Searcher, TextEmbedder

DEFAULT_ATTEMPTS = 20
DEFAULT_LIMIT = 100
MAX_ATTEMPTS = 100
TRACE_CHARS = 500
STATEMENT_CHARS = 200  # of a Cypher answer, in its trace line


@dataclass
class AskOptions:
    dry_run: bool = False
    max_attempts: int = DEFAULT_ATTEMPTS
    limit: int = DEFAULT_LIMIT  # appended to a plan without a Limit; 0: none
    as_of: AsOf | None = None
    masked: tuple[str, ...] = ()  # property names whose values the model never sees
    max_rows: int | None = None  # a Cypher answer's row bound while it runs ([query] max_rows)
    timeout: float | None = None  # and its time bound, in seconds


@dataclass
class AskResult:
    question: str
    plans: list[dict[str, Any]] = field(default_factory=list)
    cypher: list[str] = field(default_factory=list)  # the statement, when the answer was one
    columns: list[str] = field(default_factory=list)  # and its table: the columns and the rows
    rows: list[list[Any]] = field(default_factory=list)
    ran: bool = False
    attempts: int = 0
    results: list[dict[str, Any]] = field(default_factory=list)  # node records, answers first
    answers: list[int] = field(default_factory=list)  # ids of the nodes the plans ended at
    edges: list[dict[str, Any]] = field(default_factory=list)
    bounds: list[str] = field(default_factory=list)  # what bounded the answer
    trace: list[str] = field(default_factory=list)
    refused: int = 0
    repairs: int = 0
    tool_calls: int = 0
    at: int = 0  # the seq everything was read at

    def to_json(self, calls: ModelCalls) -> dict[str, Any]:
        chat = calls.chat
        table = {"cypher": self.cypher, "columns": self.columns, "rows": self.rows} if self.cypher else {}
        return table | {
            "plans": self.plans,
            "ran": self.ran,
            "attempts": self.attempts,
            "results": self.results,
            "edges": self.edges,
            "count": len(self.results),
            "answers": self.answers,
            "trace": self.trace,
            "bounds": self.bounds,
            "at": self.at,
            "usage": {
                "calls": chat.calls if chat else 0,
                "prompt_tokens": chat.prompt_tokens if chat else 0,
                "completion_tokens": chat.completion_tokens if chat else 0,
                "tool_calls": self.tool_calls,
                "refused": self.refused,
                "repairs": self.repairs,
            },
        }


def ask(
    db: Database,
    searcher: Searcher,
    plane: str,
    question: str,
    calls: ModelCalls,
    embedder: Embedder | None = None,
    options: AskOptions | None = None,
) -> AskResult:
    """Ask ``question`` of ``plane``; raises :class:`AskFailed` when no runnable plan came within
    ``max_attempts`` turns (the message says why), and what the model or the store raise."""
    options = options or AskOptions()
    with db.snapshot(options.as_of) as snap:
        plane_id = snap.plane(plane).id
        at = snap.at
        schema = soft_schema(snap, plane_id, options.masked)
        entities = list(islice(snap.nodes(plane_id), MAX_ENTITIES + 1)) if embedder is not None else []
    pinned = AsOf(seq=at)
    tools = None
    embed_text: TextEmbedder | None = None
    if embedder is not None:
        search = None
        if same_space(db, plane, "embedding", embedder):  # only then may its vectors be searched

            def search(query: Vector, label: str | None, k: int) -> list[Node]:
                return [hit.node for hit in searcher.vector(plane, label, "embedding", query, "cosine", k, pinned)]

            def embed_text(text: str) -> Vector:  # a Cypher answer's SEARCH … NEAR "text"
                return embedder.embed([text])[0]

        entities = [] if search is not None else entities
        tools = Tools(embedder, schema, entities, set(options.masked), search)
    return _Loop(db, searcher, plane, question, calls, tools, schema, options, pinned, embed_text).run()


class _Loop:
    def __init__(
        self,
        db: Database,
        searcher: Searcher,
        plane: str,
        question: str,
        calls: ModelCalls,
        tools: Tools | None,
        schema: SoftSchema,
        options: AskOptions,
        at: AsOf,
        embed_text: TextEmbedder | None = None,
    ) -> None:
        self.db, self.searcher, self.plane, self.calls = db, searcher, plane, calls
        self.tools, self.schema, self.options, self.at = tools, schema, options, at
        self.result = AskResult(question, at=at.seq or 0)
        self.messages: list[Message] = [
            {"role": "system", "content": prompts.system_prompt(schema, tools is not None)},
            {"role": "user", "content": prompts.question_turn(question)},
        ]
        self.asks: list[str] = []
        self.edge_lookups = 0
        self.embed_text = embed_text

    def run(self) -> AskResult:
        attempts = max(1, min(self.options.max_attempts, MAX_ATTEMPTS))
        reason = "the model gave no plan"
        for turn in range(1, attempts + 1):
            last = turn == attempts
            if last and turn > 1:
                self.messages.append({"role": "user", "content": prompts.LAST_TURN})
            before = self._tokens()
            answer = self.calls.complete(self.messages)
            self.result.attempts = turn
            spent = self._tokens()
            self.result.trace.append(f"turn {turn}: {spent[0] - before[0]}+{spent[1] - before[1]} tokens")
            self.messages.append({"role": "assistant", "content": answer.text})
            outcome = self._turn(answer.text, last, answer.cut_off)
            if outcome is None:
                return self.result
            reason = outcome
        raise AskFailed(
            f"couldn't produce a runnable plan after {self.result.attempts} steps: {reason}", self.result.trace
        )

    def _tokens(self) -> tuple[int, int]:
        chat = self.calls.chat
        return (chat.prompt_tokens, chat.completion_tokens) if chat else (0, 0)

    def _say(self, text: str) -> None:
        self.messages.append({"role": "user", "content": text})

    def _reject(self, answer: str, reason: str, *, refused: bool = False) -> str:
        if refused:
            self.result.refused += 1
            self.result.trace.append(f"answer refused: {reason}"[:TRACE_CHARS])
        else:
            self.result.trace.append(f"plan rejected: {reason}"[:TRACE_CHARS])
        self.result.repairs += 1
        self._say(prompts.repair_turn(answer, reason))
        return reason

    def _turn(self, text: str, last: bool, cut_off: bool) -> str | None:
        """One answer handled; None once plans ran (or were validated, in a dry run), else why not."""
        parsed = parse_answer(text)
        if isinstance(parsed, Refused):
            reason = parsed.reason + (" (the answer was cut off at the token limit)" if cut_off else "")
            return self._reject(text, reason, refused=True)
        if isinstance(parsed, Decompose):
            self.asks = parsed.asks
            self.result.trace.append(f"decompose → {len(parsed.asks)} ask(s): {' | '.join(parsed.asks)}"[:TRACE_CHARS])
            self._say(prompts.decompose_turn(parsed.asks, self.tools is not None and not last))
            return "the model decomposed the question but gave no plan"
        if isinstance(parsed, ToolCall):
            return self._tool(text, parsed, last)
        if isinstance(parsed, Statement):
            return self._cypher(text, parsed, last)
        return self._plans(text, parsed, last)

    def _tool(self, text: str, call: ToolCall, last: bool) -> str | None:
        if self.tools is None:
            return self._reject(
                text, "no tools are available here (ask without an embedder): answer with a plan", refused=True
            )
        if last:
            return self._reject(text, "tools are not available on the last turn", refused=True)
        self.result.tool_calls += 1
        if call.tool == "find_edge":
            self.edge_lookups += 1
            found = self.tools.find_edge(call.query)
            shown = f'find_edge("{call.query}")'
        else:
            found = self.tools.find_entity(call.query, call.label)
            label = f", {call.label!r}" if call.label else ""
            shown = f'find_entity("{call.query}"{label})'
            if self.tools.capped:
                self._bound(f"find_entity searched the first {MAX_ENTITIES} nodes of the plane only")
        body = json.dumps(found, ensure_ascii=False)
        self.result.trace.append(f"{shown} → {body[:TRACE_CHARS]}")
        self._say(prompts.tool_turn(call.tool, found))
        return "the model called tools but gave no plan"

    def _plans(self, text: str, answer: Plans, last: bool) -> str | None:
        if not last:
            if self.asks and self.tools is not None and self.edge_lookups < len(self.asks):
                return self._reject(text, f"call find_edge for each of the {len(self.asks)} sub-questions first")
            if len(answer.plans) < len(self.asks):
                return self._reject(text, f"{len(self.asks)} sub-questions need {len(self.asks)} plans")
        plans: list[Plan] = []
        i = 0
        try:
            for raw in answer.plans:
                i += 1
                plan = plan_from_json(raw, self.at)  # read once: what follows takes the typed plan
                check_plan(plan.logical, self.schema)
                if self.options.limit and not any(isinstance(s, Limit) for s in plan.logical.steps):
                    plan = Plan.of(plan.logical.then(Limit(self.options.limit)), plan.as_of)
                plans.append(plan)
        except DrsgError as exc:
            where = f"plan {i}: " if len(answer.plans) > 1 else ""
            return self._reject(text, where + exc.message)
        if self.options.dry_run:
            self._keep(plans)
            self.result.trace.append("(dry run — not executed)")
            return None
        try:
            ran = [run_plan_subgraph(self.searcher, self.plane, plan) for plan in plans]
        except DrsgError as exc:
            return self._reject(text, f"it failed to run: {exc.message}")
        self._keep(plans)
        self.result.ran = True
        self._union(plans, ran)
        return None

    def _cypher(self, text: str, answer: Statement, last: bool) -> str | None:
        """A Cypher answer: checked, run capped, its subgraph and table kept; None once it ran."""
        self.result.trace.append(f"cypher: {answer.text[:STATEMENT_CHARS]}")
        if not last and self.asks and self.tools is not None and self.edge_lookups < len(self.asks):
            return self._reject(text, f"call find_edge for each of the {len(self.asks)} sub-questions first")
        try:
            prepared = limited(checked(answer.text, self.schema), self.options.limit)
        except DrsgError as exc:
            return self._reject(text, exc.message.splitlines()[0])
        if prepared.text != answer.text:
            self.result.trace.append(f"cypher: no LIMIT; capped at {self.options.limit} rows")
        self.result.plans = [_plan_json(prepared.explain())]
        self.result.cypher = [answer.text]
        if self.options.dry_run:
            self.result.trace.append("(dry run — not executed)")
            return None
        try:
            ran = run_read(
                self.searcher,
                self.plane,
                prepared,
                as_of=self.at,
                embed=self.embed_text,
                max_rows=self.options.max_rows,
                timeout=self.options.timeout,
            )
        except DrsgError as exc:  # a run's message may quote a value: the model sees none
            self.result.plans, self.result.cypher = [], []
            return self._reject(text, f"it failed to run: {hide_values(exc.message)}")
        self.result.ran = True
        self._table(ran, prepared.text != answer.text)
        return None

    def _table(self, ran: CypherResult, capped: bool) -> None:
        self.result.trace.append(f"ran cypher: {len(ran.rows)} row(s), {len(ran.edges)} edge(s)")
        if capped and len(ran.rows) >= self.options.limit:
            self._bound(f"the statement stopped at its limit of {self.options.limit} rows")
        if not ran.rows:
            self._bound("the statement matched nothing")
        self.result.columns = list(ran.columns)
        self.result.rows = [[answer_json(value, lean=True) for value in row] for row in ran.rows]
        for value in (value for row in ran.rows for value in row):
            for node in _nodes_in(value):
                if node.id not in self.result.answers:
                    self.result.answers.append(node.id)
        self.result.results = [node.to_json(vectors="lean") for node in ran.nodes]
        self.result.edges = [edge.to_json(vectors="lean") for edge in ran.edges]

    def _keep(self, plans: list[Plan]) -> None:
        self.result.plans = [plan.to_json() for plan in plans]
        for i, ask_text in enumerate(self.asks[len(plans) :], len(plans) + 1):
            self._bound(f"sub-question {i} got no plan: {ask_text}")
        with self.db.snapshot(self.at) as snap:
            plane_id = snap.plane(self.plane).id
            for i, plan in enumerate(plans, 1):
                for key in missing_keys(snap, plane_id, plan.logical.source):
                    self._bound(f"plan {i}: key {key!r} names no node")

    def _union(self, plans: list[Plan], ran: list[Any]) -> None:
        nodes: dict[int, dict[str, Any]] = {}
        edges: dict[int, dict[str, Any]] = {}
        for i, (plan, (rows, found_nodes, found_edges)) in enumerate(zip(plans, ran, strict=True), 1):
            self.result.trace.append(f"ran plan {i}: {len(rows)} row(s), {len(found_edges)} edge(s)")
            limits = [s.count for s in plan.logical.steps if isinstance(s, Limit)]
            if limits and len(rows) >= limits[-1] > 0:
                self._bound(f"plan {i} stopped at its limit of {limits[-1]} rows")
            if not rows:
                self._bound(f"plan {i} matched nothing")
            for row in rows:
                if row.node.id not in self.result.answers:
                    self.result.answers.append(row.node.id)
            for node in found_nodes:
                nodes.setdefault(node.id, node.to_json(vectors="lean"))
            for edge in found_edges:
                edges.setdefault(edge.id, edge.to_json(vectors="lean"))
        self.result.results = list(nodes.values())
        self.result.edges = list(edges.values())

    def _bound(self, text: str) -> None:
        if text not in self.result.bounds:
            self.result.bounds.append(text)


def _plan_json(plan: Any) -> dict[str, Any]:
    return plan if isinstance(plan, dict) else {"plan": plan}


def _nodes_in(value: CypherAnswer) -> list[Node]:
    """The nodes a row's value holds, in order: itself, a path's, a list's or a map's."""
    if isinstance(value, Node):
        return [value]
    if isinstance(value, Path):
        return list(value.nodes)
    if isinstance(value, list):
        return [node for item in value for node in _nodes_in(item)]
    if isinstance(value, dict):
        return [node for item in value.values() for node in _nodes_in(item)]
    return []
