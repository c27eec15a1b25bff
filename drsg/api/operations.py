"""The operations a public database's intents may name (store/intents.py): the store's own table and
the library's — a Cypher write statement (drsg.api.cypher). Both kinds of database are given this one
table, so every process of a Kafka topic that opens it through ``drsg.open`` decides alike."""

from __future__ import annotations

from drsg.api import cypher
from drsg.store.intent_ops import INTENT_OPS

API_OPS = INTENT_OPS | {cypher.WRITE_OP: cypher.write_op}
