"""One commit sink (store/sink.py): no other store module seals a commit.

Sealing is flushing a commit's tallies, encoding and appending its record to the ``log`` table and
writing the head to ``meta``. The rule is read off the source: outside store/sink.py, no store module
calls the record encoder (``encode(ts, origin, mutations)``), ``write_state``, a tally ``flush(txn,
dbs)`` or a ``put`` into the ``log`` table, except where ``ALLOWED`` says why. The sinks themselves
are held by their effects: what a LogSink seals reads back, and a DryRun writes nothing.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from drsg.store.database import Database
from drsg.store.environment import Txn
from drsg.store.meta import read_state
from drsg.store.sink import DryRun, LogSink
from drsg.store.staging import in_write

ROOT = Path(__file__).resolve().parents[2]
SINK = "store/sink.py"

#: (module, what it calls) -> why that is not a second seal
ALLOWED: dict[tuple[str, str], str] = {
    ("store/projection.py", "flush"): "rebuild() replays the log into a new projection; it appends no record",
    ("store/verify.py", "log put"): "`drsg check` copies the log into a scratch file to replay it",
    ("store/kafka/log.py", "encode"): "the Kafka topic's own record: the Log port's append, not the file's",
}


def _names_log_table(node: ast.expr) -> bool:
    """``dbs["log"]``, ``log_db``, ``self.env.dbs["log"]``: an expression naming the log table."""
    text = ast.unparse(node)
    return '"log"' in text or "'log'" in text or text.endswith("log_db")


def seals(path: Path) -> list[tuple[int, str]]:
    """Where a module does part of sealing a commit, as (line, what)."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module in ("drsg.store.log", "drsg.store.meta"):
            for alias in node.names:
                if alias.name in ("encode", "write_state"):
                    found.append((node.lineno, alias.name))
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        if name == "write_state":
            found.append((node.lineno, "write_state"))
        elif name == "encode" and len(node.args) == 3:  # the record's (ts, origin, mutations); not str.encode
            found.append((node.lineno, "encode"))
        elif name == "flush" and len(node.args) == 2:  # Tallies.flush(txn, dbs)
            found.append((node.lineno, "flush"))
        elif name == "put" and any(kw.arg == "db" and _names_log_table(kw.value) for kw in node.keywords):
            found.append((node.lineno, "log put"))
    return found


def violations(root: Path) -> list[str]:
    out = []
    for path in sorted((root / "store").rglob("*.py")):
        module = path.relative_to(root).as_posix()
        if module == SINK:
            continue
        for line, what in seals(path):
            if (module, what) not in ALLOWED:
                out.append(f"{module}:{line}: {what} (a commit is sealed by store/sink.py only)")
    return sorted(set(out))


def test_only_the_sink_seals_a_commit() -> None:
    assert violations(ROOT) == []


def test_every_exception_is_still_needed() -> None:
    """An allowance nothing uses any more is dropped, so the list stays the real exceptions."""
    for module, what in ALLOWED:
        assert what in {w for _, w in seals(ROOT / module)}, (module, what)


PLANTED = [
    "from drsg.store.meta import write_state\n",
    "from drsg.store.log import encode\n",
    "def seal(state, txn, dbs, meta):\n    write_state(txn, meta, state)\n",
    "def seal(tx, txn, dbs):\n    tx.tallies.flush(txn, dbs)\n",
    "def seal(txn, dbs, seq, record):\n    txn.put(seq, record, db=dbs['log'], append=True)\n",
    "def seal(txn, log_db, seq, record):\n    txn.put(seq, record, db=log_db)\n",
    "def seal(log):\n    return log.encode(1, {}, [])\n",
]


@pytest.mark.parametrize("source", PLANTED)
def test_a_planted_second_seal_is_caught(tmp_path: Path, source: str) -> None:
    store = tmp_path / "store" / "kafka"
    store.mkdir(parents=True)
    (tmp_path / "store" / "sink.py").write_text(source)  # the sink itself may
    assert violations(tmp_path) == []
    (store / "probe.py").write_text(source)
    assert len(violations(tmp_path)) >= 1


def test_text_encoding_and_other_flushes_are_not_seals(tmp_path: Path) -> None:
    (tmp_path / "store").mkdir()
    (tmp_path / "store" / "probe.py").write_text(
        "def f(name, fh, txn, dbs, key):\n"
        "    fh.flush()\n"
        "    txn.put(key, name.encode(), db=dbs['meta'])\n"
        "    return name.encode('utf-8')\n"
    )
    assert violations(tmp_path) == []


def test_a_log_sink_seals_record_and_head_and_a_dry_run_nothing(tmp_path: Path) -> None:
    db = Database(tmp_path / "g.drsg")
    try:
        env = db.env
        before = db.head()

        def dry(txn: Txn) -> list[list[str]]:
            sink = DryRun(txn, env.dbs, read_state(txn, env.dbs["meta"]))
            tx = sink.begin()
            tx.create_plane("p")
            tx.commit_point()
            tx.create_plane("q")
            sink.seal(tx)
            return [[m.op for m in commit] for commit in sink.commits]

        assert in_write(env, dry, keep=False) == [["plane.create"], ["plane.create"]]
        assert db.head() == before
        with db.snapshot() as snap:
            assert snap.find_plane("p") is None

        def sealed(txn: Txn) -> LogSink:
            sink = LogSink(txn, env.dbs, read_state(txn, env.dbs["meta"]), {"via": "test"}, clock=lambda: 1.0)
            tx = sink.begin()
            tx.create_node(tx.create_plane("p"), "a", ["A"], {})
            sink.seal(tx)
            assert sink.advance() == before + 1
            return sink

        sink = in_write(env, sealed)
        assert sink.seqs == [before + 1] == [db.head()]
        (commit,) = db.commits(before + 1)
        assert commit.origin == {"via": "test"} and commit.ts == sink.ts == max(1000, commit.ts)
        assert [m.op for m in commit.mutations] == ["plane.create", "node.put"]
        with db.snapshot() as snap:
            plane = snap.plane("p")
            assert snap.counts(plane.id) == (1, 0)  # the commit's tallies were flushed with it
    finally:
        db.close()
