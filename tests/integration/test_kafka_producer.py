"""Which client the Kafka log produces through (store/kafka/producer.py): ``DRSG_KAFKA_CLIENT``, else
confluent-kafka when it is installed. What each client does against a broker: test_kafka_log.py and
the Log contract suite, once per client."""

from __future__ import annotations

import importlib.util
from typing import Any

import pytest

from drsg.kernel import settings
from drsg.kernel.errors import ConfigError
from drsg.store.backends import open_log
from drsg.store.kafka.log import KafkaLog
from drsg.store.kafka.producer import (
    CLIENT_ENV,
    CONFLUENT,
    KAFKA_PYTHON,
    ProducerError,
    chosen_client,
    kafka_python_error,
)
from tests.support.kafka_broker import Broker


def without_confluent(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec

    def find_spec(name: str, *args: Any) -> Any:
        return None if name == "confluent_kafka" else real(name, *args)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)


@pytest.mark.parametrize(
    ("named", "client"),
    [(None, CONFLUENT), ("", CONFLUENT), (" ", CONFLUENT), (KAFKA_PYTHON, KAFKA_PYTHON), (CONFLUENT, CONFLUENT)],
)
def test_the_variable_names_the_client_else_confluent_kafka(named: str | None, client: str) -> None:
    assert chosen_client({} if named is None else {CLIENT_ENV: named}) == client


def test_without_confluent_kafka_the_log_produces_through_kafka_python(monkeypatch: pytest.MonkeyPatch) -> None:
    without_confluent(monkeypatch)
    assert chosen_client({}) == KAFKA_PYTHON
    with pytest.raises(ConfigError, match="DRSG_KAFKA_CLIENT=confluent-kafka but confluent-kafka is not installed"):
        chosen_client({CLIENT_ENV: CONFLUENT})


def test_a_client_that_is_not_one_is_refused_when_the_log_is_made(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CLIENT_ENV, "librdkafka")
    with pytest.raises(ConfigError) as refused:
        KafkaLog("127.0.0.1:9/drsg")  # nothing connects before start()
    assert str(refused.value) == (
        "DRSG_KAFKA_CLIENT='librdkafka' names no Kafka client; use confluent-kafka or kafka-python"
    )


def test_the_variable_is_not_taken_for_a_setting() -> None:
    """The settings loader refuses a DRSG_<SECTION>_ variable naming no setting; [kafka] is no section."""
    assert settings.load(environ={CLIENT_ENV: KAFKA_PYTHON}) is not None


def test_kafka_python_errors_are_classified_by_one_rule() -> None:
    """The producer's failures and the log's refusals both come from kafka_python_error."""
    import kafka.errors

    for error, failure in (
        (kafka.errors.KafkaTimeoutError("late"), "timeout"),
        (kafka.errors.KafkaConnectionError("down"), "unreachable"),
        (kafka.errors.TopicAuthorizationFailedError("no"), "refused"),
    ):
        assert isinstance(error, Exception)
        classified = kafka_python_error(error)
        assert isinstance(classified, ProducerError) and classified.failure == failure
        assert classified.detail == f"{type(error).__name__}: {error}"
    log = KafkaLog("127.0.0.1:9/drsg")
    assert "no Kafka broker answered" in log._unavailable(kafka.errors.KafkaTimeoutError("late")).message
    refused = log._unavailable(kafka.errors.TopicAuthorizationFailedError("no")).message
    assert refused == (
        "kafka://127.0.0.1:9/drsg: the Kafka broker refused "
        "(TopicAuthorizationFailedError: [Error 29] TopicAuthorizationFailedError: no)"
    )


def test_the_kafka_python_producer_is_given_the_logs_client_config(
    kafka_broker: Broker, monkeypatch: pytest.MonkeyPatch
) -> None:
    import kafka

    given: list[dict[str, Any]] = []
    real = kafka.KafkaProducer

    def producer(**config: Any) -> Any:
        given.append(config)
        return real(**config)

    monkeypatch.setattr(kafka, "KafkaProducer", producer)
    monkeypatch.setenv(CLIENT_ENV, KAFKA_PYTHON)
    log = open_log(kafka_broker.url("drsg-client-config"))
    try:
        assert isinstance(log, KafkaLog)
        (config,) = given
        assert config.items() >= log.client_config().items()
    finally:
        log.close()
