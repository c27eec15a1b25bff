"""drsg.store — the commit log (the Log port, store/logport.py, and its LMDB backend; the Kafka one
and a node's database on it in store/kafka/), group commit, a database's write path (writepath.py),
the one commit sink (sink.py), the one commit notification, the write semantics (WriteTx), the
versioned graph projection and its reading API (Database.read, Snapshot), time travel, JSONL
import/export.

Imports nothing above the kernel (drsg.kernel.errors, drsg.kernel.values, drsg.kernel.settings).
Other layers use its public modules (database, reader, snapshot, records, transaction, writer's
CommitResult, log, logport, mutations, gate, jsonl); keys, environment, projection and notify are
its own.
"""
