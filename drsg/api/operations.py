"""The operations a public database's intents may name (store/intents.py): the store's own table and
the library's — a Cypher write statement (drsg.api.cypher), a digest's apply, changes and forget
(drsg.pipeline.digest.ledger), an import's chunks and close (drsg.api.imports), a catalog index
run's write (drsg.pipeline.catalog.plane) and a batch of vectorize's vectors
(drsg.pipeline.vectorize). Both kinds of database are given this one table, so every process of a
Kafka topic that opens it through ``drsg.open`` decides alike. All but the store's own and the
Cypher write load their modules on first use: opening a database stays cheap."""

from __future__ import annotations

from drsg.api import cypher
from drsg.kernel.errors import BadValue
from drsg.kernel.values import Json
from drsg.store.import_intents import CHUNK, CLOSE, chunk_op
from drsg.store.intent_ops import INTENT_OPS
from drsg.store.intents import IntentOp
from drsg.store.transaction import WriteTx

#: drsg.pipeline.digest.ledger.DIGEST_OPS's names (tests/unit/test_intents.py holds the two equal)
DIGEST_OP_NAMES = ("digest.apply", "digest.apply_changes", "digest.forget")


def _digest(name: str) -> IntentOp:
    def op(tx: WriteTx, args: dict[str, Json]) -> Json:
        from drsg.pipeline.digest.ledger import DIGEST_OPS

        return DIGEST_OPS[name](tx, args)

    return op


def _import_close(tx: WriteTx, args: dict[str, Json]) -> Json:
    from drsg.api.imports import close_op

    return close_op(tx, args)


def _catalog_write(tx: WriteTx, args: dict[str, Json]) -> Json:
    from drsg.pipeline.catalog.plane import CATALOG_OPS, WRITE_OP

    return CATALOG_OPS[WRITE_OP](tx, args)


def _vectorize_write(tx: WriteTx, args: dict[str, Json]) -> Json:
    """A batch of vectorize's vectors, each node's text read by the rule it names."""
    from drsg.pipeline.vectorize import prop_text, write_op

    rule = args.get("rule")
    if rule == "node_text":
        from drsg.pipeline.vectorize_plane import node_text

        return write_op(tx, args, node_text)
    if rule == "fact_text":  # serve watch's folds
        from drsg.pipeline.digest.sync import fact_text

        return write_op(tx, args, fact_text)
    if isinstance(rule, dict) and isinstance(rule.get("prop"), str):
        return write_op(tx, args, prop_text(str(rule["prop"])))
    raise BadValue(f'{VECTORIZE_WRITE}\'s text rule is {{"prop": name}}, "node_text" or "fact_text", not {rule!r}')


#: a batch of vectorize's vectors (drsg.pipeline.vectorize; the name its WRITE_OP, held equal by a test)
VECTORIZE_WRITE = "vectorize.write"

#: a catalog index run's write (drsg.pipeline.catalog.plane; the name its WRITE_OP, held equal by a test)
CATALOG_WRITE = "catalog.write"

#: an import on a Kafka node (drsg/api/imports.py): its lines held in chunks, decided at its close
IMPORT_OPS: dict[str, IntentOp] = {CHUNK: chunk_op, CLOSE: _import_close}

API_OPS = (
    INTENT_OPS
    | {cypher.WRITE_OP: cypher.write_op}
    | {name: _digest(name) for name in DIGEST_OP_NAMES}
    | IMPORT_OPS
    | {CATALOG_WRITE: _catalog_write, VECTORIZE_WRITE: _vectorize_write}
)
