"""Which client the Kafka log produces through (store/kafka/producer.py): the setting
``log.kafka_client`` (drsg.toml ``[log] kafka_client``, ``DRSG_LOG_KAFKA_CLIENT`` or its older name
``DRSG_KAFKA_CLIENT``, ``drsg.open(settings=…)``), given to the log by ``open_log``'s ``client``;
``auto``: confluent-kafka when it is installed. What each client does against a broker:
test_kafka_log.py and the Log contract suite, once per client."""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import drsg
from drsg.api.kafka import KafkaDatabase
from drsg.kernel.errors import ConfigError
from drsg.kernel.setting_parsers import KAFKA_CLIENTS
from drsg.kernel.settings import REGISTRY
from drsg.store.backends import open_log
from drsg.store.kafka import log as kafka_log
from drsg.store.kafka.log import KafkaLog
from drsg.store.kafka.producer import (
    AUTO,
    CLIENTS,
    CONFLUENT,
    KAFKA_PYTHON,
    ConfluentProducer,
    KafkaPythonProducer,
    Producer,
    ProducerError,
    ProducerSettings,
    chosen_client,
    kafka_python_error,
)
from tests.support.cli import Drsg
from tests.support.kafka_broker import Broker

SETTING_ENV, OLD_ENV = "DRSG_LOG_KAFKA_CLIENT", "DRSG_KAFKA_CLIENT"
KINDS = {CONFLUENT: ConfluentProducer, KAFKA_PYTHON: KafkaPythonProducer}


def without_confluent(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec

    def find_spec(name: str, *args: Any) -> Any:
        return None if name == "confluent_kafka" else real(name, *args)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)


@pytest.fixture
def clean(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A directory without drsg.toml, and neither name of the setting's variable set."""
    monkeypatch.chdir(tmp_path)
    for var in ("DRSG_CONFIG", SETTING_ENV, OLD_ENV):
        monkeypatch.delenv(var, raising=False)
    return tmp_path


@pytest.fixture
def made(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The client of every producer a Kafka log of this process makes, in order."""
    clients: list[str] = []
    real = kafka_log.new_producer

    def spy(client: str, settings: ProducerSettings) -> Producer:
        clients.append(client)
        return real(client, settings)

    monkeypatch.setattr(kafka_log, "new_producer", spy)
    yield clients


# ------------------------------------------------------------------------------ the rule


@pytest.mark.parametrize(("named", "client"), [(AUTO, CONFLUENT), (KAFKA_PYTHON, KAFKA_PYTHON), (CONFLUENT, CONFLUENT)])
def test_the_setting_names_the_client_and_auto_is_confluent_kafka(named: str, client: str) -> None:
    assert chosen_client(named) == client


def test_the_setting_and_the_store_know_the_same_clients() -> None:
    (setting,) = (s for s in REGISTRY if s.name == "log.kafka_client")
    assert setting.default == AUTO and set(KAFKA_CLIENTS) == {AUTO, *CLIENTS}
    assert [setting.parse(name) for name in KAFKA_CLIENTS] == list(KAFKA_CLIENTS)


def test_without_confluent_kafka_auto_is_kafka_python_and_naming_it_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    without_confluent(monkeypatch)
    assert chosen_client(AUTO) == KAFKA_PYTHON
    with pytest.raises(ConfigError, match=r"^log\.kafka_client is confluent-kafka but it is not installed"):
        chosen_client(CONFLUENT)


def test_a_client_that_is_not_one_is_refused_when_the_log_is_made() -> None:
    with pytest.raises(ConfigError) as refused:
        open_log("kafka://127.0.0.1:9/drsg", client="librdkafka")  # refused before anything connects
    assert str(refused.value) == "log.kafka_client 'librdkafka' is not auto, confluent-kafka or kafka-python"


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
    log = open_log(kafka_broker.url("drsg-client-config"), client=KAFKA_PYTHON)
    try:
        assert isinstance(log, KafkaLog)
        (config,) = given
        assert config.items() >= log.client_config().items()
    finally:
        log.close()


# ------------------------------------------------------------------------------ the setting's ways in


def node_url(broker: Broker, name: str) -> str:
    return broker.url(f"drsg-client-{name}")


@pytest.mark.parametrize("client", CLIENTS)
def test_the_python_api_gives_the_setting_to_the_producer(
    clean: Path, kafka_broker: Broker, made: list[str], client: str
) -> None:
    db = drsg.open(clean / "n.drsg", log=node_url(kafka_broker, "api"), settings={"log.kafka_client": client})
    try:
        assert isinstance(db, KafkaDatabase) and db.settings.text("log.kafka_client") == client
        assert made == [client] and type(db.kafka._producer) is KINDS[client]
    finally:
        db.close()


@pytest.mark.parametrize("var", [SETTING_ENV, OLD_ENV])
def test_the_variable_gives_the_setting_to_the_producer(
    clean: Path, kafka_broker: Broker, made: list[str], monkeypatch: pytest.MonkeyPatch, var: str
) -> None:
    monkeypatch.setenv(var, KAFKA_PYTHON)
    with drsg.open(clean / "n.drsg", log=node_url(kafka_broker, "env")) as db:
        assert db.settings.sources["log.kafka_client"] == f"env {var}"
    assert made == [KAFKA_PYTHON]


def test_drsg_toml_gives_the_setting_to_the_producer_and_the_variable_wins(
    clean: Path, kafka_broker: Broker, made: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    (clean / "drsg.toml").write_text(f'[log]\nkafka_client = "{KAFKA_PYTHON}"\n')
    drsg.open(clean / "a.drsg", log=node_url(kafka_broker, "toml")).close()
    monkeypatch.setenv(OLD_ENV, KAFKA_PYTHON)
    monkeypatch.setenv(SETTING_ENV, CONFLUENT)  # the current name over the older one, both over the file
    drsg.open(clean / "b.drsg", log=node_url(kafka_broker, "toml")).close()
    assert made == [KAFKA_PYTHON, CONFLUENT]


def test_the_cli_gives_the_setting_to_the_producer(
    clean: Path, kafka_broker: Broker, made: list[str], drsg: Drsg, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`drsg` (and so `drsg serve` and `drsg workers`: the same Context.open) with the variable set."""
    monkeypatch.setenv(SETTING_ENV, KAFKA_PYTHON)
    ran = drsg("--log", node_url(kafka_broker, "cli"), "stats", "--json", db=clean / "n.drsg")
    assert ran.code == 0, ran.err
    assert made == [KAFKA_PYTHON]
    listed = {row["name"]: row for row in drsg("config", "--json").json_lines()}
    assert (listed["log.kafka_client"]["value"], listed["log.kafka_client"]["source"]) == (
        KAFKA_PYTHON,
        f"env {SETTING_ENV}",
    )


@pytest.mark.parametrize(
    ("var", "toml", "source"),
    [
        (SETTING_ENV, "", f"env {SETTING_ENV}"),
        (OLD_ENV, "", f"env {OLD_ENV}"),
        (None, '[log]\nkafka_client = "librdkafka"\n', "config drsg.toml"),
    ],
)
def test_a_bad_client_is_one_line_naming_the_setting_and_its_values(
    clean: Path, drsg: Drsg, made: list[str], monkeypatch: pytest.MonkeyPatch, var: str | None, toml: str, source: str
) -> None:
    if var:
        monkeypatch.setenv(var, "librdkafka")
    (clean / "drsg.toml").write_text(toml)
    ran = drsg("--log", "kafka://127.0.0.1:9/drsg", "stats", db=clean / "n.drsg")
    assert (ran.code, ran.out) == (2, "")  # ConfigError's exit code (docs/reference/cli.md)
    assert ran.err == (
        f"error: setting log.kafka_client ({source}) is invalid: "
        "'librdkafka' is not auto, confluent-kafka or kafka-python\n"
    )
    with pytest.raises(ConfigError, match=r"^setting log\.kafka_client .* is invalid: 'librdkafka' is not auto"):
        drsg_open(clean)
    assert made == [] and not (clean / "n.drsg").exists()


def drsg_open(folder: Path) -> None:
    drsg.open(folder / "n.drsg", log="kafka://127.0.0.1:9/drsg").close()
