"""A Kafka log's location: ``HOST:PORT/TOPIC``, the part of a ``kafka://`` URL after the scheme."""

from __future__ import annotations

import re

from drsg.kernel.errors import ConfigError

DEFAULT_PORT = 9092
_TOPIC = re.compile(r"[A-Za-z0-9._-]{1,249}")
_LOCATION = re.compile(r"(\[[0-9A-Fa-f:.]+\]|[^/:\[\]]+)(?::(\d{1,5}))?/(.*)", re.DOTALL)


def parse_location(location: str) -> tuple[str, int, str]:
    """``(host, port, topic)`` of ``HOST:PORT/TOPIC`` (the part of the URL after ``kafka://``)."""
    url = f"kafka://{location}"
    match = _LOCATION.fullmatch(location)
    if match is None:
        raise ConfigError(f"{url!r} is not a Kafka log URL; write kafka://HOST:PORT/TOPIC")
    host, port_text, topic = match.group(1), match.group(2), match.group(3)
    port = DEFAULT_PORT if port_text is None else int(port_text)
    if not 0 < port < 65536:
        raise ConfigError(f"{url!r}: port {port} is out of range")
    if not _TOPIC.fullmatch(topic) or topic in (".", ".."):
        raise ConfigError(
            f"{url!r}: {topic!r} is not a topic name; use 1-249 letters, digits, '.', '_' or '-' (kafka://HOST:PORT/TOPIC)"
        )
    return host, port, topic
