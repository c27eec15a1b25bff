"""A setting (:class:`Setting`: its name, default, parser and help) and the parsers its value is
read with, one per kind of value; kernel/settings.py holds the registry of settings and the loader.

Each parser takes what the file holds or the text of a variable, and raises ValueError saying what
is wrong; the type it declares it returns is the setting's kind (:data:`KINDS`)."""

from __future__ import annotations

import contextlib
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TypeAlias

#: a setting's parsed value
Value: TypeAlias = "str | int | float | bool | tuple[str, ...] | dict[str, str] | None"
Parser: TypeAlias = Callable[[object], Value]

# ----------------------------------------------------------------------------------------- parsers
# Each takes what the file holds or the text of a variable, and raises ValueError saying what is wrong.


def _text(value: object) -> str:
    if not isinstance(value, str):
        raise ValueError(f"{value!r} is not text; write it in quotes")
    return value


def _integer(value: object) -> int:
    if isinstance(value, int | str) and not isinstance(value, bool):
        try:
            return int(value)
        except ValueError:
            pass
    raise ValueError(f"{value!r} is not a whole number")


def _at_least(low: int) -> Callable[[object], int]:
    def parse(value: object) -> int:
        number = _integer(value)
        if number < low:
            raise ValueError(f"must be {low} or more")
        return number

    return parse


_positive = _at_least(1)
_SIZE = re.compile(r"(\d+(?:\.\d+)?)\s*(?:([KMGT])I?)?B?")
_UNITS = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def _size(value: object) -> int:
    """Bytes, or a number with a K/M/G/T suffix (powers of 1024; ``64M``, ``1.5G``, ``8GiB``)."""
    if isinstance(value, int) and not isinstance(value, bool):
        number = value
    elif isinstance(value, str) and (match := _SIZE.fullmatch(value.strip().upper())):
        from fractions import Fraction

        number = int(Fraction(match[1]) * _UNITS.get(match[2] or "", 1))  # exact: no float rounding
    else:
        raise ValueError(f"{value!r} is not a size; write bytes or a number with K, M, G or T, e.g. 64M")
    if number < 1:
        raise ValueError("must be 1 byte or more")
    return number


def _seconds(value: object) -> float | None:
    """Seconds; 0 means no limit (None)."""
    seconds = math.nan
    if isinstance(value, int | float | str) and not isinstance(value, bool):
        with contextlib.suppress(ValueError):
            seconds = float(value)
    if not math.isfinite(seconds):
        raise ValueError(f"{value!r} is not a number of seconds")
    if seconds < 0:
        raise ValueError("must be 0 (no limit) or more")
    return None if seconds == 0 else seconds


def _some_seconds(value: object) -> float:
    """Seconds, more than 0: a limit that must hold."""
    seconds = _seconds(value)
    if seconds is None:
        raise ValueError("must be more than 0 seconds")
    return seconds


def _fraction(value: object) -> float:
    """A share above 0 and at most 1 (a recall)."""
    share = math.nan
    if isinstance(value, int | float | str) and not isinstance(value, bool):
        with contextlib.suppress(ValueError):
            share = float(value)
    if not 0 < share <= 1:  # NaN fails too
        raise ValueError(f"{value!r} is not a number above 0 and at most 1, e.g. 0.95")
    return share


def _count_or_auto(value: object) -> int | None:
    """A count; 0 means "one per CPU core" (None)."""
    number = _integer(value)
    if number < 0:
        raise ValueError("must be 0 (one per CPU core) or more")
    return number or None


def _bool(value: object) -> bool:
    if isinstance(value, bool):
        return value
    text = value.strip().lower() if isinstance(value, str) else ""
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off"):
        return False
    raise ValueError(f"{value!r} is not true or false")


def _choice(*options: str) -> Callable[[object], str]:
    def parse(value: object) -> str:
        text = _text(value).strip().lower()
        if text not in options:
            raise ValueError(f"{value!r} is not {', '.join(options[:-1])} or {options[-1]}")
        return text

    return parse


def _strings(value: object) -> tuple[str, ...]:
    """A list of strings (a variable: comma-separated)."""
    items = value.split(",") if isinstance(value, str) else value
    if not isinstance(items, list | tuple) or not all(isinstance(item, str) for item in items):
        raise ValueError(f"{value!r} is not a list of strings (in a variable: comma-separated)")
    return tuple(item.strip() for item in items if item.strip())


def _token(value: object) -> str:
    """A bearer token: empty (none), or a secret that can be sent in a header exactly as it is."""
    token = _text(value)
    if token and (token != token.strip() or not token.isprintable()):
        raise ValueError(
            "a token is not blank, has no spaces at its ends and no control characters; use a long random string"
        )
    return token


def _contact(value: object) -> str:
    """Who runs a crawler, as its User-Agent names them: a URL or an e-mail address, sent in a header."""
    contact = _text(value).strip()
    if not (contact.isascii() and contact.isprintable()) or any(c in contact for c in "()"):
        raise ValueError(f"{contact!r} cannot go in a User-Agent header; give a plain URL or e-mail address")
    return contact


IGNORE_FILES = ("gitignore", "dockerignore")
#: the clients a Kafka log may produce through ([log] kafka_client; store/kafka/producer.py); auto:
#: confluent-kafka when it is installed, else kafka-python
KAFKA_CLIENTS = ("auto", "confluent-kafka", "kafka-python")


def _ignore_files(value: object) -> tuple[str, ...]:
    """Which ignore files a code walk honours (an empty list or text: none)."""
    names = tuple(name.strip().lower() for name in _strings(value) if name.strip())
    for name in names:
        if name not in IGNORE_FILES:
            raise ValueError(f"{name!r} is not gitignore or dockerignore")
    return tuple(dict.fromkeys(names))


def _origins(value: object) -> tuple[str, ...]:
    return tuple(origin.rstrip("/") for origin in _strings(value))


def _networks(value: object) -> tuple[str, ...]:
    import ipaddress

    networks = _strings(value)
    for network in networks:
        try:
            ipaddress.ip_network(network, strict=False)
        except ValueError:
            raise ValueError(f"{network!r} is not a CIDR range or an IP address, e.g. 10.0.0.0/8") from None
    return networks


def _tls(value: object) -> dict[str, str]:
    """``{}`` (plain HTTP), or both PEM files: ``{cert = "…", key = "…"}``."""
    if not isinstance(value, dict) or set(value) - {"cert", "key"} or len(value) == 1:
        raise ValueError("[server.tls] takes both `cert` and `key` (PEM file paths)")
    files = {key: path for key, path in value.items() if isinstance(path, str) and path}
    if len(files) != len(value):
        raise ValueError("[server.tls] `cert` and `key` are PEM file paths, in quotes")
    return files


# ---------------------------------------------------------------------------------------- registry

_DERIVED = "DRSG_<SECTION>_<KEY>"


@dataclass(frozen=True)
class Setting:
    name: str  # "section.key"
    default: Value
    parse: Parser
    help: str
    env_name: str | None = _DERIVED  # None: the file only
    secret: bool = False  # never printed
    old_env: str | None = None  # the variable's older name, still read (the current name wins)

    @property
    def section(self) -> str:
        return self.name.split(".", 1)[0]

    @property
    def key(self) -> str:
        return self.name.split(".", 1)[1]

    @property
    def env(self) -> str | None:
        if self.env_name == _DERIVED:
            return "DRSG_" + self.name.replace(".", "_").upper()
        return self.env_name


#: the types a setting may hold, each with the :class:`Settings` method that reads it
KINDS: Mapping[str, str] = {
    "str": "text",
    "int": "integer",
    "int | None": "optional_integer",
    "float": "number",
    "float | None": "optional_number",
    "bool": "flag",
    "tuple[str, ...]": "strings",
    "dict[str, str]": "table",
}


def kind_of(parse: Callable[..., object]) -> str:
    """The return type ``parse`` declares, one of :data:`KINDS`; the registry holds no other."""
    declared = getattr(parse, "__annotations__", {}).get("return")
    if declared not in KINDS:
        name = getattr(parse, "__qualname__", repr(parse))
        raise TypeError(f"setting parser {name} declares it returns {declared!r}; declare one of {', '.join(KINDS)}")
    return str(declared)


def _log_url(value: object) -> str:
    """Empty, ``lmdb://`` (both: the --db file's own log) or a ``kafka://`` URL."""
    text = _text(value).strip()
    if text in ("", "lmdb://"):
        return ""
    if not text.lower().startswith("kafka://"):
        raise ValueError(f"{text!r} is not a log URL; write kafka://HOST:PORT/TOPIC, or leave it empty")
    return text
