"""Which client the Kafka log produces through (store/kafka/producer.py): ``DRSG_KAFKA_CLIENT``, else
confluent-kafka when it is installed. What each client does against a broker: test_kafka_log.py and
the Log contract suite, once per client."""

from __future__ import annotations

import importlib.util
from typing import Any

import pytest

from drsg.kernel import settings
from drsg.kernel.errors import ConfigError
from drsg.store.kafka.log import KafkaLog
from drsg.store.kafka.producer import CLIENT_ENV, CONFLUENT, KAFKA_PYTHON, chosen_client


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
