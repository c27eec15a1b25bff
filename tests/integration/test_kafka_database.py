"""A database on a Kafka log (store/kafka/database.py, store/kafka/materialiser.py) against a real
tansu broker: nodes racing for the same keys, records that are not what a writer made, restarts,
files paired with the wrong topic, a broker that loses its topic or dies mid-write, imports, time
travel, the feed, and the CLI's ``--log``.
"""

from __future__ import annotations

import subprocess
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

import drsg
from drsg.kernel.errors import ConfigError, Conflict, DamagedDatabase, DatabaseUnavailable, NotFound, UsageError
from drsg.store.backends import open_log
from drsg.store.database import Database
from drsg.store.intents import Intent
from drsg.store.kafka.database import KafkaDatabase
from drsg.store.kafka.log import TIMEOUT
from drsg.store.kafka.materialiser import BASE, GROUP, REST, u64_header
from drsg.store.log import encode
from drsg.store.mutations import NodePut
from drsg.surfaces.cli.main import cli
from tests.support.kafka_broker import Broker, free_port
from tests.support.kafka_nodes import keys_in, produce, tables
from tests.support.server import clean_env, drsg_argv
from tests.support.waiting import wait_until


@pytest.fixture
def url(kafka_broker: Broker) -> str:
    return kafka_broker.url(f"db-{uuid.uuid4().hex[:12]}")


@pytest.fixture
def own_broker() -> Iterator[Broker]:
    with Broker() as broker:
        yield broker


def node_of(folder: Path, name: str, url: str, **options: float) -> KafkaDatabase:
    db = drsg.open(folder / f"{name}.drsg", log=url, **options)
    assert isinstance(db, KafkaDatabase)
    return db


def skipped(db: Database) -> list[str]:
    return [str(c.origin["skipped"]) for c in db.commits() if "skipped" in c.origin]


def topic_of(url: str) -> str:
    return url.rsplit("/", 1)[1]


def test_writes_go_through_the_topic_and_every_node_reads_them(tmp_path: Path, url: str) -> None:
    a, b = node_of(tmp_path, "a", url), node_of(tmp_path, "b", url)
    try:
        made = a.write(lambda tx: tx.create_node(tx.plane("startup"), "ada", ["Person"], {"born": 1815}))
        assert made.seqs == (2,) and made.value.id == 1  # commit 1 is the startup plane
        b.catch_up(2)
        with b.snapshot() as snap:
            ada = snap.node_by_key(0, "ada")
            assert ada is not None and ada.props == {"born": 1815}
        then = b.write(lambda tx: tx.update_node(tx.plane("startup"), "@ada", {"died": 1852}))
        a.catch_up(then.seq)
        with a.snapshot(as_of=2) as before, a.snapshot() as now:  # time travel on the copy
            assert before.node(0, 1).props == {"born": 1815}  # type: ignore[union-attr]
            assert now.node(0, 1).props == {"born": 1815, "died": 1852}  # type: ignore[union-attr]
        assert tables(a) == tables(b)
        assert [c.ts for c in a.commits()] == [c.ts for c in b.commits()]
    finally:
        a.close()
        b.close()


def test_nodes_racing_for_the_same_keys_each_key_is_made_once(tmp_path: Path, url: str) -> None:
    nodes = [node_of(tmp_path, name, url) for name in ("a", "b")]
    wanted = [f"k{i}" for i in range(25)]
    made: dict[str, list[str]] = {"a": [], "b": []}
    refused: dict[str, list[str]] = {"a": [], "b": []}

    def race(db: KafkaDatabase, name: str) -> None:
        for key in wanted:
            try:
                db.write(lambda tx, key=key: tx.create_node(tx.plane("startup"), key, ["X"], {"by": name}))
                made[name].append(key)
            except Conflict as exc:
                refused[name].append(f"{key}: {exc}" if "already exists" not in str(exc) else key)
            except Exception as exc:  # shown by the assertion below, not lost in a thread
                refused[name].append(f"{key}: {type(exc).__name__}: {exc}")

    try:
        threads = [threading.Thread(target=race, args=(db, name)) for db, name in zip(nodes, made, strict=True)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(120)
        assert sorted(made["a"] + made["b"], key=lambda k: int(k[1:])) == wanted, (made, refused)  # each key once
        assert set(made["a"]).isdisjoint(made["b"])
        assert sorted(refused["a"] + refused["b"], key=lambda k: int(k[1:])) == wanted  # the other node's
        head = max(db.kafka.head() for db in nodes)
        for db in nodes:
            db.catch_up(head)
        assert tables(nodes[0]) == tables(nodes[1])
        assert keys_in(nodes[0]) == sorted(wanted)
        stale = skipped(nodes[0])
        assert stale and all(s.startswith("stale: ") for s in stale), "the race made no stale commit to retry"
        with nodes[0].snapshot() as snap:  # ids: allocated in log order, never twice
            ids = [n.id for n in snap.nodes(0)]
        assert len(set(ids)) == len(ids) == len(wanted)
        before = tables(nodes[0])
        nodes[0].rebuild_projection()  # the projection is a replay of the copy's log
        assert tables(nodes[0]) == before
    finally:
        for db in nodes:
            db.close()


def test_nodes_writing_at_once_all_the_time_each_get_every_write_in(tmp_path: Path, url: str) -> None:
    # Every write of one node lands behind the other's, stale ones included: without a jittered
    # pause before a run again the two retried in step until one gave up (CI, stop 30).
    nodes = [node_of(tmp_path, name, url) for name in ("a", "b")]
    start = threading.Barrier(len(nodes))
    refused: list[str] = []

    def write_all(db: KafkaDatabase, name: str) -> None:
        start.wait()
        for i in range(40):
            try:
                db.write(lambda tx, i=i: tx.create_node(tx.plane("startup"), f"{name}{i}", ["X"], {}))
            except Exception as exc:  # shown by the assertion below, not lost in a thread
                refused.append(f"{name}{i}: {type(exc).__name__}: {exc}")

    try:
        threads = [threading.Thread(target=write_all, args=(db, name)) for db, name in zip(nodes, "ab", strict=True)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(300)
        assert not refused
        nodes[0].catch_up(max(db.kafka.head() for db in nodes))
        assert keys_in(nodes[0]) == sorted(f"{name}{i}" for name in "ab" for i in range(40))
    finally:
        for db in nodes:
            db.close()


def test_poison_records_are_skipped_logged_counted_and_the_node_goes_on(
    tmp_path: Path, url: str, kafka_broker: Broker
) -> None:
    a = node_of(tmp_path, "a", url)
    try:
        topic = topic_of(url)
        garbage = produce(kafka_broker, topic, b"not a commit")
        good = encode(1, {}, [NodePut(0, 50, "x", ["X"], {})])
        damaged = produce(kafka_broker, topic, good[:-1] + bytes([good[-1] ^ 1]))
        unappliable = produce(kafka_broker, topic, encode(1, {}, [NodePut(0, 51, "y", 7, {})]))  # type: ignore[arg-type]
        a.catch_up(unappliable)  # else the write may be made on an older head, land stale, and run again
        made = a.write(lambda tx: tx.create_node(tx.plane("startup"), "after", [], {}))
        assert made.seq == unappliable + 1
        assert a.poison_records == 3
        reasons = dict(zip((garbage, damaged, unappliable), skipped(a), strict=True))
        assert reasons[garbage].startswith("unreadable: ")
        assert reasons[damaged] == "unreadable: checksum mismatch"
        assert reasons[unappliable].startswith("unappliable: TypeError")
        assert keys_in(a) == ["after"]
        b = node_of(tmp_path, "b", url)  # a node made later judges them the same way
        try:
            assert tables(b) == tables(a) and b.poison_records == 3
        finally:
            b.close()
    finally:
        a.close()


def test_a_stale_record_and_a_broken_group_are_empty_commits_on_every_node(
    tmp_path: Path, url: str, kafka_broker: Broker
) -> None:
    a = node_of(tmp_path, "a", url)
    try:
        topic = topic_of(url)
        stale = produce(kafka_broker, topic, encode(1, {}, [NodePut(0, 1, "s", [], {})]), {BASE: u64_header(0)})
        first = produce(
            kafka_broker,
            topic,
            encode(1, {}, [NodePut(0, 1, "g1", [], {})]),
            {BASE: u64_header(stale), GROUP: u64_header(stale), REST: u64_header(1)},
        )
        a.catch_up(stale)
        assert a.head() == stale  # the group's first record is held back, unseen
        foreign = produce(kafka_broker, topic, encode(1, {}, [NodePut(0, 2, "f", [], {})]))  # no base: a fact
        a.catch_up(foreign)
        assert keys_in(a) == ["f"]
        assert skipped(a) == [
            f"stale: made on the state at 0, landed at {stale}",
            f"its group was broken at {foreign}",
        ]
        assert first == stale + 1
    finally:
        a.close()


def test_a_group_its_writer_left_unfinished_is_broken_by_the_next_write(
    tmp_path: Path, url: str, kafka_broker: Broker
) -> None:
    a = node_of(tmp_path, "a", url)
    try:
        # a writer died after the first record of a two-record group: nothing comes to finish it
        first = produce(
            kafka_broker,
            topic_of(url),
            encode(1, {}, [NodePut(0, 1, "half", [], {})]),
            {BASE: u64_header(1), GROUP: u64_header(1), REST: u64_header(1)},
        )
        began = time.monotonic()
        made = a.write(lambda tx: tx.create_node(tx.plane("startup"), "next", [], {}))
        assert time.monotonic() - began < 5.0  # not a wait for a record that never comes
        assert made.seq == first + 2  # its first run landed after the group, broke it, and was stale
        assert keys_in(a) == ["next"]
        assert skipped(a) == [
            f"its group was broken at {first + 1}",
            f"stale: made on the state at 1, landed at {first + 1}",
        ]
    finally:
        a.close()


def test_a_node_restarted_catches_up_from_its_own_copy(tmp_path: Path, url: str) -> None:
    a, b = node_of(tmp_path, "a", url), node_of(tmp_path, "b", url)
    try:
        for i in range(3):
            a.write(lambda tx, i=i: tx.create_node(tx.plane("startup"), f"a{i}", [], {}))
        b.catch_up(a.head())
        b.close()
        for i in range(3):
            a.write(lambda tx, i=i: tx.create_node(tx.plane("startup"), f"a{i + 3}", [], {}))
        b = node_of(tmp_path, "b", url)
        assert b.head() == a.head() == 7
        assert keys_in(b) == [f"a{i}" for i in range(6)]
        assert tables(a) == tables(b)
    finally:
        a.close()
        b.close()


def test_a_cli_command_beside_a_running_node_shares_its_copy(tmp_path: Path, url: str) -> None:
    a = node_of(tmp_path, "a", url)
    try:
        a.write(lambda tx: tx.create_node(tx.plane("startup"), "first", [], {}))
        for name in ("docs", "more"):  # another process materialises into the same file meanwhile
            ran = subprocess.run(
                [*drsg_argv(), "--log", url, "--db", str(tmp_path / "a.drsg"), "plane", "create", name],
                capture_output=True, text=True, timeout=60, env=clean_env(),
            )  # fmt: skip
            assert ran.returncode == 0, ran.stderr
            a.write(lambda tx, name=name: tx.create_node(tx.plane(name), "in-" + name, [], {}))
        assert keys_in(a, "docs") == ["in-docs"] and keys_in(a, "more") == ["in-more"]
        assert a.materialiser is not None and a.materialiser.error is None
        b = node_of(tmp_path, "b", url)
        try:
            assert tables(b) == tables(a)
        finally:
            b.close()
    finally:
        a.close()


def test_a_file_paired_with_another_log_is_refused_with_the_fix(tmp_path: Path, url: str, kafka_broker: Broker) -> None:
    node_of(tmp_path, "a", url).close()
    other = kafka_broker.url(f"db-{uuid.uuid4().hex[:12]}")
    with pytest.raises(ConfigError) as refused:
        node_of(tmp_path, "a", other)
    assert (
        str(refused.value) == f"{tmp_path / 'a.drsg'} materialises {url}, not {other}; give each log its own --db file"
    )
    Database(tmp_path / "embedded.drsg").close()
    with pytest.raises(ConfigError, match=r"embedded\.drsg is an embedded database, not a materialisation of kafka://"):
        node_of(tmp_path, "embedded", url)


def test_a_topic_that_lost_its_commits_is_refused_not_mixed_in(tmp_path: Path, own_broker: Broker) -> None:
    url = own_broker.url("lost")
    a = node_of(tmp_path, "a", url, timeout=2.0)
    a.write(lambda tx: tx.create_node(tx.plane("startup"), "x", [], {}))
    a.close()
    own_broker.restart()  # memory-only: the topic is gone
    with pytest.raises(DamagedDatabase) as refused:
        node_of(tmp_path, "a", url, timeout=2.0)
    assert str(refused.value).startswith(
        f"{url} holds 0 commits but {tmp_path / 'a.drsg'} materialised 2: the topic lost"
    )
    assert "move" in str(refused.value) and "rebuilds it from the topic" in str(refused.value)
    refill = open_log(url, timeout=2.0)  # as many commits again, but not the same ones
    for i in range(3):
        refill.append([NodePut(0, 9 + i, None, [], {})])
    refill.close()
    with pytest.raises(DamagedDatabase, match=r"commit 2 is not the one .* materialised"):
        node_of(tmp_path, "a", url, timeout=2.0)
    fresh = node_of(tmp_path, "fresh", url, timeout=2.0)  # a new copy of the topic as it is now
    try:
        assert fresh.head() == 3
    finally:
        fresh.close()


def test_a_running_node_stops_at_a_topic_recreated_with_another_history(tmp_path: Path, own_broker: Broker) -> None:
    url = own_broker.url("again")
    a = node_of(tmp_path, "a", url, timeout=2.0)
    try:
        a.write(lambda tx: tx.create_node(tx.plane("startup"), "old", [], {}))
        own_broker.restart()  # memory-only: the topic is gone; a new node starts another history in it
        own_broker.one_partition("again")  # not the 4 tansu gives it if a's clients ask for it first
        b = node_of(tmp_path, "b", url, timeout=2.0)
        try:
            for key in ("new1", "new2", "new3"):  # past a's head: a's watcher reads them
                b.write(lambda tx, key=key: tx.create_node(tx.plane("startup"), key, [], {}))
        finally:
            b.close()
        assert a.materialiser is not None
        wait_until(lambda: a.materialiser is not None and a.materialiser.error, "node a to notice", timeout=30)
        assert "was made on another commit 2 than the one this copy holds" in a.materialiser.error
        assert "rebuilds it from the topic" in a.materialiser.error
        assert a.stats().to_json()["log"]["error"] == a.materialiser.error  # where an operator looks
        assert keys_in(a) == ["old"]  # nothing of the other history was taken
        with pytest.raises(DatabaseUnavailable, match="the topic is not the log this copy was made from"):
            a.catch_up(3, timeout=1.0)
    finally:
        a.close()


def test_a_broker_lost_mid_run_fails_the_write_and_writes_nothing(tmp_path: Path, own_broker: Broker) -> None:
    a = node_of(tmp_path, "a", own_broker.url("mid"), timeout=2.0)
    try:
        a.write(lambda tx: tx.create_node(tx.plane("startup"), "x", [], {}))
        before = tables(a)
        own_broker.kill()
        began = time.monotonic()
        with pytest.raises(DatabaseUnavailable, match="did not acknowledge the commit within 2 s"):
            a.write(lambda tx: tx.create_node(tx.plane("startup"), "y", [], {}))
        assert time.monotonic() - began < 10.0
        assert tables(a) == before and a.head() == 2  # nothing half-applied
        assert keys_in(a) == ["x"]  # reads go on from the copy
    finally:
        a.close()


def test_a_broker_that_is_not_there_is_one_line_naming_the_url(tmp_path: Path) -> None:
    url = f"kafka://127.0.0.1:{free_port()}/drsg"
    with pytest.raises(DatabaseUnavailable, match=rf"^{url}: no Kafka broker answered at 127\.0\.0\.1:\d+ within 1 s"):
        node_of(tmp_path, "a", url, timeout=1.0)
    assert not (tmp_path / "a.drsg").exists()  # nothing was made


def test_an_import_through_kafka_is_decided_at_its_closing_record_and_a_staged_write_all_or_nothing(
    tmp_path: Path, url: str
) -> None:
    a, b = (
        drsg.open(tmp_path / "a.drsg", log=url, settings={"store.import_commit_lines": 7}),
        node_of(tmp_path, "b", url),
    )
    try:
        source = tmp_path / "in.jsonl"
        source.write_text("".join(f'{{"external_key":"n{i}","labels":["Doc"]}}\n' for i in range(30)))
        report = a.import_jsonl("startup", source)
        assert (report.first_seq, report.last_seq) == (7, 7)  # five chunk records, then the one commit
        b.catch_up(7)
        assert keys_in(b) == sorted(f"n{i}" for i in range(30))
        with a.staged({"via": "test"}) as stage:
            stage.chunk(lambda tx: tx.create_node(tx.plane("startup"), "staged", [], {}))
            b.write(lambda tx: tx.create_node(tx.plane("startup"), "meanwhile", [], {}))
            with pytest.raises(UsageError, match="a staged write is open in this thread"):
                a.write(lambda tx: tx.create_node(tx.plane("startup"), "inside", [], {}))
            with pytest.raises(Conflict, match=r"committed while this write was staged.*pause them, or split it"):
                stage.finish()
        a.catch_up(b.head())
        for db in (a, b):
            assert "staged" not in keys_in(db) and "meanwhile" in keys_in(db)
        assert tables(a) == tables(b)
    finally:
        a.close()
        b.close()


def test_the_feed_on_one_node_follows_commits_made_on_another(tmp_path: Path, url: str) -> None:
    a, b = node_of(tmp_path, "a", url), node_of(tmp_path, "b", url)
    seen: list[int] = []

    def follow() -> None:
        for commit in b.follow(2):
            seen.append(commit.seq)
            return

    try:
        thread = threading.Thread(target=follow, daemon=True)
        thread.start()
        made = a.write(lambda tx: tx.create_node(tx.plane("startup"), "x", [], {}))
        wait_until(lambda: seen, "the follower on node b to see node a's commit", timeout=20)
        assert seen == [made.seq]
    finally:
        a.close()
        b.close()


def test_writing_to_a_missing_plane_fails_on_the_copy_and_produces_nothing(tmp_path: Path, url: str) -> None:
    a = node_of(tmp_path, "a", url)
    try:
        head = a.kafka.head()
        with pytest.raises(NotFound):
            a.write(lambda tx: tx.create_node(tx.plane("nowhere"), "x", [], {}))
        assert a.kafka.head() == head
        assert a.write(lambda tx: tx.plane("startup")).seqs == ()  # changed nothing: no commit
    finally:
        a.close()


def test_the_cli_writes_through_the_log_flag_and_the_config_file(tmp_path: Path, url: str) -> None:
    runner = CliRunner()

    def run(*args: str) -> tuple[int, str, str]:
        ran = runner.invoke(cli, list(args), catch_exceptions=False)
        return ran.exit_code, ran.stdout, ran.stderr

    a, b = str(tmp_path / "a.drsg"), str(tmp_path / "b.drsg")
    assert run("--log", url, "--db", a, "plane", "create", "docs")[0] == 0
    config = tmp_path / "drsg.toml"
    config.write_text(f'[log]\nurl = "{url}"\n')
    code, out, _ = run("--config", str(config), "--db", b, "plane", "list")
    assert code == 0 and "docs" in out
    code, _, err = run("--log", "http://x/y", "--db", b, "plane", "list")
    assert code == 2 and err.strip() == (
        "error: setting log.url (flag) is invalid: 'http://x/y' is not a log URL; "
        "write kafka://HOST:PORT/TOPIC, or leave it empty"
    )


def test_a_one_shot_command_refuses_a_broker_that_is_down_within_the_bound_it_states(tmp_path: Path) -> None:
    """The refusal says "within N s": the command, its start and imports included, ends within N s."""
    down = f"kafka://127.0.0.1:{free_port()}/t"
    began = time.monotonic()
    ran = subprocess.run(
        [*drsg_argv(), "--log", down, "--db", str(tmp_path / "c.drsg"), "plane", "list"],
        capture_output=True, text=True, env=clean_env(), timeout=60,
    )  # fmt: skip
    took = time.monotonic() - began
    stated = f"within {TIMEOUT:g} s"
    assert ran.returncode == 1 and ran.stderr.startswith(f"error: {down}: no Kafka broker answered at ")
    assert stated in ran.stderr and ran.stderr.count("\n") == 1
    assert took <= TIMEOUT, f"the refusal says {stated!r} but the command took {took:.2f} s"
    assert not (tmp_path / "c.drsg").exists()  # nothing was made


def test_an_import_chunk_bigger_than_kafka_pythons_default_request_fits(tmp_path: Path, url: str) -> None:
    a = node_of(tmp_path, "a", url)
    try:
        source = tmp_path / "big.jsonl"
        text = "the quick brown fox jumps over the lazy dog " * 10
        source.write_text("".join(f'{{"external_key":"n{i}","properties":{{"t":"{text}"}}}}\n' for i in range(4000)))
        assert source.stat().st_size > 1 << 20  # one commit past kafka-python's 1 MiB default
        report = a.import_jsonl("startup", source)
        assert (report.first_seq, report.last_seq) == (3, 3)  # its one chunk record at 2, then its commit
        assert len(keys_in(a)) == 4000
    finally:
        a.close()


def test_a_nodes_copy_commits_without_a_flush_and_a_database_file_does_not(tmp_path: Path, url: str) -> None:
    """The topic keeps the log durably, so a node's copy commits without flushing (MDB_NOSYNC; a
    system crash makes it rebuild the copy from the topic: test_kafka_copy_crash.py); a database
    file that is the log itself flushes every commit."""
    node = node_of(tmp_path, "a", url)
    embedded = drsg.open(tmp_path / "plain.drsg")
    try:
        assert node.env.env.flags()["sync"] is False
        assert embedded.env.env.flags()["sync"] is True and embedded.env.env.flags()["metasync"] is True
        node.submit(Intent("node.put", {"plane": "startup", "key": "x"}))  # commits as before
        assert node.head() == node.kafka.head()
    finally:
        node.close()
        embedded.close()
