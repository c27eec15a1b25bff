"""What ``Plane.cypher`` does: a Cypher statement read on one snapshot, or written as one commit.

A statement is prepared once (parsed and compiled, cached by its text: drsg.plan.cypher.statement)
and its ``$parameters`` checked against the data model (:func:`parameters`: a value outside it is a
BadValue naming the parameter). A read runs on one snapshot — ``as_of`` (the API's forms,
drsg.api.points) or the statement's own ``AS OF``, never both. A write runs as one commit through the
database's write path, with ``origin``, at the head: an ``as_of`` with a write is refused. Both are
bounded by ``[query] max_rows`` and ``[query] timeout_secs``. A text ``NEAR "…"`` (a SEARCH's, a
HYBRID's VECTOR part) is embedded by the one embedder rule (drsg.pipeline.embedder_choice) for the
vector property it searches, as ``Plane.query`` does.

A write is an intent (:func:`write_intent`, decided by :func:`write_op`): the embedded store runs it
through its writer, and a Kafka node produces it for every node to decide where it lands, so two
nodes' writes never conflict. The server runs the same pieces apart (:func:`statement`,
:func:`read`, :func:`write_intent`, :func:`written`) so its write waits on its own deadline;
everything else calls :func:`cypher`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from drsg.kernel.errors import BadValue, UsageError
from drsg.kernel.values import check_value, from_json, to_json

if TYPE_CHECKING:
    from drsg.api.host import Host, HostedPlane
    from drsg.kernel.asof import AsOf
    from drsg.kernel.values import Json, Vector
    from drsg.models.providers import EmbedderChoice
    from drsg.plan.cypher import ast
    from drsg.plan.cypher.graph import CypherValue
    from drsg.plan.cypher.statement import Prepared
    from drsg.store.intents import Intent
    from drsg.store.transaction import WriteTx
    from drsg.store.writer import CommitResult
    from drsg.workers.cypher.result import CypherResult
    from drsg.workers.search import TextEmbedder


def prepared(text: str) -> Prepared:
    """The statement parsed and compiled (cached: a repeated statement costs neither)."""
    from drsg.plan.cypher.statement import prepare

    if not isinstance(text, str):
        raise UsageError(f"a Cypher statement is text, not {type(text).__name__}")
    return prepare(text)


def explain(text: str) -> Json:
    """The compiled plan of a statement, as JSON (``drsg cypher --explain``); nothing runs."""
    return prepared(text).explain()


def writes(text: str) -> bool:
    """Whether the statement writes (CREATE, MERGE, SET, REMOVE, DELETE)."""
    return prepared(text).writes


def explains(text: str) -> bool:
    """Whether the statement starts with ``EXPLAIN``: its answer is its plan, and nothing runs."""
    return prepared(text).explain_only


def parameters(params: Mapping[str, object] | None) -> dict[str, CypherValue]:
    """``$parameters``' values as Cypher values: what the data model holds — None, bool, int
    (64-bit), float (finite), str, bytes, lists and string-keyed maps of them, a :class:`Vector`
    (read as its list of floats). Anything else is a BadValue naming the parameter."""
    from drsg.plan.cypher.values import from_store

    if params is None:
        return {}
    if not isinstance(params, Mapping):
        raise BadValue(f"params are a mapping of name to value, not {type(params).__name__}; pass {{'name': …}}")
    out: dict[str, CypherValue] = {}
    for name, value in params.items():
        if not isinstance(name, str) or not name:
            raise BadValue(f"a parameter's name is a non-empty string, not {name!r}")
        out[name] = from_store(check_value(value, f"parameter ${name}"))
    return out


@dataclass(frozen=True, slots=True)
class Statement:
    """One call's statement: prepared, with its parameters checked."""

    prepared: Prepared
    params: dict[str, CypherValue]

    @property
    def writes(self) -> bool:
        return self.prepared.writes


def statement(text: str, params: Mapping[str, object] | None = None) -> Statement:
    return Statement(prepared(text), parameters(params))


def _limits(db: Host) -> tuple[int, float | None]:
    settings = db.settings
    return settings.integer("query.max_rows"), settings.optional_number("query.timeout_secs")


def near_properties(query: ast.Query) -> list[str]:
    """The vector properties whose text ``NEAR`` the statement may embed: each SEARCH … NEAR's and
    HYBRID … VECTOR's (``embedding`` when it names none), in the order written, each once."""
    from drsg.plan.cypher import ast

    found: dict[str, None] = {}
    for part in query.parts:
        for clause in part.clauses:
            if isinstance(clause, ast.Search) and clause.near is not None:
                found.setdefault(clause.property or "embedding")
            elif isinstance(clause, ast.HybridSearch) and clause.vector is not None:
                found.setdefault(clause.vector.property or "embedding")
    return list(found)


def _embedder(db: Host, plane: str, stmt: Statement, embed: EmbedderChoice | None) -> TextEmbedder:
    """Text → vector for the property the statement searches, by the one rule (built when a text
    is first embedded: a statement with a vector, or none, loads no model — nor the model clients'
    modules, which take seconds to import)."""
    props = near_properties(stmt.prepared.query)

    def embed_text(text: str) -> Vector:
        from drsg.api.retrieval import plane_embedder

        if len(props) != 1:  # (none: nothing asks)
            raise UsageError(
                f"the statement embeds text NEAR {', '.join(props)}: one vector property per statement; "
                "search one, or pass a vector"
            )
        return plane_embedder(db, plane, props[0], embed, "query").embed([text])[0]

    return embed_text


def read(plane: HostedPlane, stmt: Statement, as_of: AsOf | None, embed: EmbedderChoice | None) -> CypherResult:
    """A read statement on one snapshot (``as_of``, else the statement's AS OF, else the head)."""
    from drsg.workers.cypher.run import run_read

    if as_of is not None and stmt.prepared.query.as_of is not None:
        raise UsageError(
            "the statement says AS OF and the call gives as_of too; keep one (drop the clause or the argument)"
        )
    max_rows, timeout = _limits(plane.db)
    db = plane.db
    return run_read(
        db.searcher,
        plane.name,
        stmt.prepared,
        stmt.params,
        as_of=as_of,
        embed=_embedder(db, plane.name, stmt, embed),
        max_rows=max_rows,
        timeout=timeout,
    )


def write_intent(db: Host, plane: str, text: str, params: Mapping[str, object] | None) -> Intent:
    """A write statement as an intent (store/intents.py; :data:`WRITE_OP`): its text, its
    parameters in the JSON dialect and the row limit, so that every node of a Kafka topic decides it
    alike where it lands; its time limit bounds the run where one writer runs it (the embedded
    store) or a Kafka node's rehearsal. The caller has checked it with :func:`statement`."""
    from drsg.store.intents import TIME_LIMIT, Intent

    max_rows, timeout = _limits(db)
    raw = {name: to_json(check_value(value, f"parameter ${name}")) for name, value in (params or {}).items()}
    args: dict[str, Json] = {"plane": plane, "query": text, "params": raw, "max_rows": max_rows}
    return Intent(WRITE_OP, args if timeout is None else args | {TIME_LIMIT: timeout})


def write_op(tx: WriteTx, args: dict[str, Json]) -> Json:
    """The operation :func:`write_intent`'s intents name: the statement run in the write, all of it
    or nothing (a write has no SEARCH, so nothing to embed); its answer losslessly
    (CypherResult.to_outcome)."""
    from drsg.store.intents import TIME_LIMIT
    from drsg.workers.cypher.writes import run_write

    plane, text, params, max_rows, limit = (
        args.get(name) for name in ("plane", "query", "params", "max_rows", TIME_LIMIT)
    )
    if not (
        isinstance(plane, str) and isinstance(text, str) and isinstance(params, dict) and isinstance(max_rows, int)
    ):
        raise UsageError(f"{WRITE_OP} takes a plane, a query, its params and max_rows")
    if limit is not None and not isinstance(limit, int | float):
        raise UsageError(f"{WRITE_OP}'s time limit is a number of seconds")
    stmt = statement(text, {name: from_json(value, f"parameter ${name}") for name, value in params.items()})
    if not stmt.writes or stmt.prepared.explain_only:
        raise UsageError(f"{WRITE_OP} runs a write statement; run a read with plane.cypher")
    timeout = None if limit is None else float(limit)
    return run_write(tx, plane, stmt.prepared, stmt.params, max_rows=max_rows, timeout=timeout).to_outcome()


#: The operation a Cypher write statement's intent names (drsg/api/intents.py's table holds it).
WRITE_OP = "cypher.write"


def plan_answer(stmt: Statement) -> CypherResult:
    """An ``EXPLAIN …`` statement's answer: one row, its compiled plan under ``plan``; nothing ran."""
    from drsg.workers.cypher.result import CypherResult

    return CypherResult(("plan",), ((from_json(stmt.prepared.explain(), "the plan"),),))


def written(done: CommitResult[Json]) -> CypherResult:
    """A write intent's answer with the seq of the commit it made (one that changed nothing keeps
    the head it ran at)."""
    from drsg.workers.cypher.result import CypherResult

    value = CypherResult.from_outcome(done.value)
    return value if done.seq is None else replace(value, seq=done.seq)


def cypher(
    plane: HostedPlane,
    text: str,
    params: Mapping[str, object] | None,
    as_of: AsOf | None,
    embed: EmbedderChoice | None,
) -> CypherResult:
    stmt = statement(text, params)
    if stmt.prepared.explain_only:
        return plan_answer(stmt)
    if not stmt.writes:
        return read(plane, stmt, as_of, embed)
    if as_of is not None:
        raise UsageError("a write statement runs at the head, not as of a commit; drop as_of")
    db = plane.db
    return written(db.submit(write_intent(db, plane.name, text, params), db.origin))
