"""The Kafka log's producer: one small port, two clients (issue #38).

KafkaLog (store/kafka/log.py) keeps the log's logic — the append lock, timestamps, the lost-partition
check, the headers — and sends each record through a :class:`Producer`: ``send`` hands it over and
returns a :class:`Sent` whose ``get`` waits for the broker's acknowledgement (its offset). Both
clients are idempotent, ``acks=all``, linger 0, bounded by the log's timeout (retries included),
allow records of ``max_record`` bytes and never ask the broker to create a topic. A failure is one
:class:`ProducerError` saying whether the broker timed out, could not be reached or refused.

- ``confluent-kafka`` (librdkafka): the record batches, their CRCs and the network I/O run in
  librdkafka's C threads, off the GIL; a poller thread serves the delivery reports, each resolving
  its send's :class:`Sent`. A fatal error (the idempotent producer's id unknown to a broker that
  restarted with its memory lost) makes the producer unusable (:attr:`Producer.usable`), and the log
  starts a new one. The default when confluent-kafka is installed.
- ``kafka-python``: its ``KafkaProducer`` (all of it Python, on the GIL: 0.62-0.65x of raw
  ``send().get()`` for a lone writer's node, tests/bench/RESULTS.md).

The setting ``[log] kafka_client`` (``confluent-kafka``, ``kafka-python`` or ``auto``: the default)
chooses; the log is given it (``open_log(url, client=…)``). Consumers stay kafka-python's
(store/kafka/log.py); only producing goes through here. A kafka-python error, the producer's or a
consumer's, is classified once: :func:`kafka_python_error`.
"""

from __future__ import annotations

import contextlib
import importlib.util
import logging
import threading
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import Any, Literal, NamedTuple

from drsg.kernel.errors import ConfigError
from drsg.kernel.setting_parsers import KAFKA_CLIENTS

AUTO, CONFLUENT, KAFKA_PYTHON = KAFKA_CLIENTS
CLIENTS = (CONFLUENT, KAFKA_PYTHON)
SETTING = "log.kafka_client"
POLL_SECONDS = 0.25  # the poller's wait for a delivery report: how soon it sees its stop flag

Failure = Literal["timeout", "unreachable", "refused"]

# librdkafka logs through this logger (not to stderr): its errors reach callers as DrsgErrors instead
_LIBRDKAFKA_LOG = logging.getLogger("kafka.librdkafka")
_LIBRDKAFKA_LOG.addHandler(logging.NullHandler())


class ProducerError(Exception):
    """A producer could not be made, a send was not handed over, or its acknowledgement did not come.

    ``failure``: "timeout" (no acknowledgement within the bound: the record may or may not be in the
    log), "unreachable" (no broker answered) or "refused"; ``detail``: the client's own words."""

    def __init__(self, failure: Failure, detail: str) -> None:
        super().__init__(detail)
        self.failure: Failure = failure
        self.detail = detail


class ProducerSettings(NamedTuple):
    """What both clients are given."""

    # what every kafka-python client of the log is given (KafkaLog.client_config: bootstrap_servers,
    # bootstrap_timeout_ms, reconnect_backoff_max_ms, client_id); confluent-kafka's are read from it
    client_config: Mapping[str, Any]
    timeout: float  # seconds: a send's bound, retries included; also the wait for the broker at making
    max_record: int  # bytes a record may have


class Sent(ABC):
    """A record handed to the producer."""

    @abstractmethod
    def get(self, timeout: float) -> int:
        """The record's offset once the broker acknowledged it; ProducerError if it did not."""


class Producer(ABC):
    """An idempotent producer (acks=all, linger 0) of one process (the port)."""

    @abstractmethod
    def send(self, topic: str, partition: int, value: bytes, headers: Sequence[tuple[str, bytes]]) -> Sent:
        """Hand the record over (in send order); ProducerError if it cannot be."""

    @property
    def usable(self) -> bool:
        """False once the producer can send nothing more (a fatal error): the next send needs a new one."""
        return True

    @abstractmethod
    def close(self, timeout: float) -> None:
        """Wait up to ``timeout`` seconds for the records in flight, then stop (0: at once; the
        records still in flight fail)."""


def chosen_client(named: str = AUTO) -> str:
    """The client ``named`` (one of KAFKA_CLIENTS, as the setting log.kafka_client), ``auto``:
    confluent-kafka if it is installed, else kafka-python."""
    if named not in KAFKA_CLIENTS:  # the settings loader refuses it first; a caller of open_log may not
        raise ConfigError(f"{SETTING} {named!r} is not {', '.join(KAFKA_CLIENTS[:-1])} or {KAFKA_CLIENTS[-1]}")
    installed = importlib.util.find_spec("confluent_kafka") is not None
    if named == AUTO:
        return CONFLUENT if installed else KAFKA_PYTHON
    if named == CONFLUENT and not installed:
        raise ConfigError(f"{SETTING} is {named} but it is not installed; install drsg[kafka] or use {KAFKA_PYTHON}")
    return named


def new_producer(client: str, settings: ProducerSettings) -> Producer:
    """A producer of ``client`` (one of CLIENTS); ProducerError if it cannot be made."""
    return ConfluentProducer(settings) if client == CONFLUENT else KafkaPythonProducer(settings)


def _ms(seconds: float) -> int:
    return max(1, int(seconds * 1000))


# ---------------------------------------------------------------------- kafka-python


class _KafkaPythonSent(Sent):
    __slots__ = ("_future",)

    def __init__(self, future: Any) -> None:
        self._future = future

    def get(self, timeout: float) -> int:
        import kafka.errors

        try:
            return int(self._future.get(timeout=timeout).offset)
        except kafka.errors.KafkaError as exc:
            raise kafka_python_error(exc) from None


def kafka_python_error(exc: Exception) -> ProducerError:
    """A kafka-python error (its producer's, or any client's of the log) as the port's: the one rule
    for what timed out, what could not reach a broker and what the broker refused."""
    import kafka.errors

    failure: Failure = "refused"
    if isinstance(exc, kafka.errors.KafkaTimeoutError):
        failure = "timeout"
    elif isinstance(exc, kafka.errors.KafkaConnectionError):
        failure = "unreachable"
    return ProducerError(failure, f"{type(exc).__name__}: {exc}")


class KafkaPythonProducer(Producer):
    """kafka-python's KafkaProducer (making it waits for the broker, up to the timeout)."""

    def __init__(self, settings: ProducerSettings) -> None:
        import kafka
        import kafka.errors

        timeout_ms = _ms(settings.timeout)
        try:
            self._producer = kafka.KafkaProducer(
                **settings.client_config,
                acks="all",
                enable_idempotence=True,
                linger_ms=0,
                request_timeout_ms=timeout_ms,
                delivery_timeout_ms=timeout_ms,  # retries included: the append's bound
                max_block_ms=timeout_ms,
                max_request_size=settings.max_record,
                allow_auto_create_topics=False,  # only the log's start makes the topic: with one partition
            )
        except kafka.errors.KafkaError as exc:
            raise kafka_python_error(exc) from None

    def send(self, topic: str, partition: int, value: bytes, headers: Sequence[tuple[str, bytes]]) -> Sent:
        import kafka.errors

        try:
            return _KafkaPythonSent(self._producer.send(topic, value=value, partition=partition, headers=list(headers)))
        except kafka.errors.KafkaError as exc:
            raise kafka_python_error(exc) from None

    def close(self, timeout: float) -> None:
        self._producer.close(timeout=timeout)


# ---------------------------------------------------------------------- confluent-kafka


class _Delivery(Sent):
    """One record's delivery report, set by the poller thread."""

    __slots__ = ("_done", "_error", "_offset")

    def __init__(self) -> None:
        self._done = threading.Event()
        self._offset = -1
        self._error: ProducerError | None = None

    def report(self, err: Any, msg: Any) -> None:  # confluent-kafka's on_delivery, in the poller thread
        if err is not None:
            self._error = _confluent_error(err)
        else:
            self._offset = int(msg.offset())
        self._done.set()

    def get(self, timeout: float) -> int:
        if not self._done.wait(timeout):
            raise ProducerError("timeout", f"KafkaTimeoutError: no delivery report within {timeout:g} s")
        if self._error is not None:
            raise self._error
        return self._offset


def _confluent_error(err: Any) -> ProducerError:
    """A librdkafka error (a KafkaError) as the port's."""
    from confluent_kafka import KafkaError

    code = err.code()
    failure: Failure = "refused"
    # a record purged while in flight (its producer dropped) may have been written: as a timeout
    if code in (KafkaError._MSG_TIMED_OUT, KafkaError._TIMED_OUT, KafkaError.REQUEST_TIMED_OUT) or (
        code == KafkaError._PURGE_INFLIGHT
    ):
        failure = "timeout"
    elif code in (KafkaError._ALL_BROKERS_DOWN, KafkaError._TRANSPORT):
        failure = "unreachable"
    return ProducerError(failure, f"KafkaError: {err.name()}: {err.str()}")


class ConfluentProducer(Producer):
    """confluent-kafka's Producer, with a poller thread serving its delivery reports (making it does
    not contact the broker: the first send does)."""

    def __init__(self, settings: ProducerSettings) -> None:
        from confluent_kafka import KafkaException
        from confluent_kafka import Producer as Client

        timeout_ms = _ms(settings.timeout)
        config = settings.client_config
        self._fatal: str | None = None
        try:
            self._client = Client(
                {
                    "bootstrap.servers": config["bootstrap_servers"],
                    "client.id": config["client_id"],
                    "reconnect.backoff.max.ms": config["reconnect_backoff_max_ms"],
                    "acks": "all",
                    "enable.idempotence": True,
                    "linger.ms": 0,
                    "socket.nagle.disable": True,  # as kafka-python's TCP_NODELAY: linger 0 means now
                    "request.timeout.ms": timeout_ms,
                    "message.timeout.ms": timeout_ms,  # = delivery.timeout.ms, retries included: the append's bound
                    "message.max.bytes": settings.max_record,
                    # connect to the partition's broker at once: else the idempotent producer asks for its id
                    # only when its 500 ms timer comes round again, and a log's first append waited ~0.6 s
                    "enable.sparse.connections": False,
                    "allow.auto.create.topics": False,  # librdkafka's producer default is true
                    "error_cb": self._on_error,
                    "logger": _LIBRDKAFKA_LOG,
                }
            )
        except KafkaException as exc:
            raise _confluent_error(exc.args[0]) from None
        self._stop = threading.Event()
        self._poller = threading.Thread(target=self._serve, name="drsg-kafka-delivery", daemon=True)
        self._poller.start()

    def _on_error(self, err: Any) -> None:
        # librdkafka retries whatever it can by itself; only a fatal error (the idempotent producer's
        # state lost: an unknown producer id, sequences out of order) stops this producer for good
        if err.fatal():
            self._fatal = f"KafkaError: {err.name()}: {err.str()}"

    def _serve(self) -> None:
        """Serve delivery reports until closed (each wakes its sender; librdkafka's poll waits off the
        GIL), then end the client here: no other thread may call it once it is closed."""
        while not self._stop.is_set():
            try:
                self._client.poll(POLL_SECONDS)
            except Exception as exc:  # a report's callback failed: the others must still be served
                _LIBRDKAFKA_LOG.warning("delivery report failed: %s: %s", type(exc).__name__, exc)
        # what is still queued fails now, its senders told (a dropped producer's records must not be
        # sent later, behind those of the producer that replaces it); then librdkafka's threads and
        # connections end, not whenever the garbage collector breaks this object's cycle
        with contextlib.suppress(Exception):
            self._client.purge()
            self._client.poll(0)
            self._client.close()

    @property
    def usable(self) -> bool:
        return self._fatal is None

    def send(self, topic: str, partition: int, value: bytes, headers: Sequence[tuple[str, bytes]]) -> Sent:
        from confluent_kafka import KafkaException

        if self._fatal is not None:
            raise ProducerError("refused", self._fatal)
        delivery = _Delivery()
        try:
            self._client.produce(topic, value, partition=partition, headers=list(headers), on_delivery=delivery.report)
        except KafkaException as exc:
            raise _confluent_error(exc.args[0]) from None
        except BufferError as exc:  # queue.buffering.max.messages in flight already
            raise ProducerError("refused", f"BufferError: {exc}") from None
        return delivery

    def close(self, timeout: float) -> None:
        if timeout > 0:
            self._client.flush(timeout)
        self._stop.set()  # the poller ends the client within POLL_SECONDS (_serve): no wait for it here
