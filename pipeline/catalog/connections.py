"""Named connections, kept in ``<db>.catalog/connections.json`` beside the database.

A connection holds a DSN without a password and, when the database needs one, a reference to it:
``password_env`` (an environment variable) or ``keyring`` (a keyring entry: service ``drsg``, that
name). The secret is looked up on each operation and never written, logged or put in an answer."""

from __future__ import annotations

import json
import os
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlsplit

from drsg.kernel.errors import ConfigError, NotFound, UsageError
from drsg.kernel.files import write_atomic
from drsg.kernel.values import check_name

if TYPE_CHECKING:
    from drsg.kernel.settings import Settings

ENGINES = ("sqlite", "postgresql", "mysql")
_SCHEMES = {
    "sqlite": "sqlite",
    "postgres": "postgresql",
    "postgresql": "postgresql",
    "mysql": "mysql",
    "mariadb": "mysql",
}
KEYRING_SERVICE = "drsg"


@dataclass
class Connection:
    name: str
    dsn: str
    engine: str
    password_env: str | None = None
    keyring: str | None = None
    sensitive_columns: str = "mask"  # "mask" or "show"
    sensitive_extra: list[str] = field(default_factory=list)

    @property
    def plane(self) -> str:
        """The plane the catalog is written to."""
        return f"catalog_{self.name}"

    def password(self) -> str | None:
        """The secret the reference names, looked up now (never cached, never stored)."""
        if self.password_env:
            value = os.environ.get(self.password_env)
            if value is None:
                raise ConfigError(
                    f"connection {self.name!r} reads its password from ${self.password_env}, which is not set; "
                    f"export it"
                )
            return value
        if self.keyring:
            import keyring
            from keyring.errors import KeyringError

            try:
                value = keyring.get_password(KEYRING_SERVICE, self.keyring)
            except KeyringError as exc:
                raise ConfigError(
                    f"connection {self.name!r}: the keyring cannot be read ({exc}); unlock it, or use --password-env"
                ) from None
            if value is None:
                raise ConfigError(
                    f"no keyring entry {self.keyring!r} (service {KEYRING_SERVICE!r}) for connection {self.name!r}; "
                    f"store it with `keyring set {KEYRING_SERVICE} {self.keyring}`"
                )
            return str(value)
        return None

    def public(self) -> dict[str, Any]:
        """The connection as it is shown and stored: references, never the secret."""
        return asdict(self)


def sensitive_names(conn: Connection, settings: Settings | None) -> list[str]:
    """Every column name ``conn`` masks beside the built-in policy: its own (``catalog add
    --sensitive``) and the configured ``[catalog] sensitive`` (``DRSG_CATALOG_SENSITIVE``). The one
    place the list is made: indexing, sampling, the digest and queries all ask here."""
    configured = settings.strings("catalog.sensitive") if settings is not None else ()
    return list(dict.fromkeys([*conn.sensitive_extra, *configured]))


def engine_of(dsn: str) -> str:
    """The engine a DSN names: a URL scheme, else a path to an SQLite file."""
    if "://" not in dsn:
        return "sqlite"
    scheme = dsn.split("://", 1)[0].lower()
    if scheme not in _SCHEMES:
        raise UsageError(
            f"unknown DSN scheme {scheme!r}; use a path (SQLite), postgresql://USER@HOST:PORT/DB "
            f"or mysql://USER@HOST:PORT/DB"
        )
    return _SCHEMES[scheme]


def check_dsn(dsn: str) -> str:
    """Refuses a DSN that carries a password (``user:pw@``, ``?password=``): name a reference instead."""
    if "://" in dsn and not dsn.lower().startswith("sqlite"):
        parts = urlsplit(dsn)
        if parts.password is not None or re.search(r"(?i)(^|&)password=", parts.query):
            raise UsageError(
                "the DSN carries a password; drsg never stores one: remove it and name where it is kept, "
                "with --password-env VAR or --keyring NAME"
            )
    return dsn


def sqlite_path(dsn: str) -> Path:
    if dsn.startswith("sqlite:///"):
        return Path(unquote(dsn[len("sqlite:///") :]))
    if dsn.startswith("sqlite://"):
        return Path(unquote(dsn[len("sqlite://") :]))
    return Path(dsn)


def catalog_folder(db: str | os.PathLike[str]) -> Path:
    path = Path(db)
    return path.with_name(path.name + ".catalog")


class Connections:
    """The connections file of one database."""

    def __init__(self, db: str | os.PathLike[str]) -> None:
        self.path = catalog_folder(db) / "connections.json"

    def load(self) -> dict[str, Connection]:
        if not self.path.exists():
            return {}
        try:
            raw = json.loads(self.path.read_text(encoding="utf-8"))
            return {name: Connection(**item) for name, item in raw.items()}
        except (ValueError, TypeError) as exc:
            raise ConfigError(f"{self.path} is not a connections file ({exc}); fix or remove it") from None

    def get(self, name: str) -> Connection:
        found = self.load().get(name)
        if found is None:
            raise NotFound(f"no catalog connection {name!r}; add it with `drsg catalog add {name} DSN`")
        return found

    def add(self, conn: Connection, *, replace: bool = False) -> None:
        check_name("a connection name", conn.name)
        if not re.fullmatch(r"[A-Za-z0-9_]+", conn.name):
            raise UsageError(f"connection name {conn.name!r}: use letters, digits and _ only")
        if conn.sensitive_columns not in ("mask", "show"):
            raise UsageError(f"sensitive_columns is 'mask' or 'show', not {conn.sensitive_columns!r}")
        check_dsn(conn.dsn)
        if conn.engine == "sqlite":  # resolved now: a relative path would mean another file from another folder
            conn = Connection(**{**conn.public(), "dsn": str(sqlite_path(conn.dsn).expanduser().resolve())})
        everything = self.load()
        if conn.name in everything and not replace:
            raise UsageError(f"connection {conn.name!r} exists; remove it first or pass --replace")
        everything[conn.name] = conn
        self._save(everything)

    def remove(self, name: str) -> Connection:
        everything = self.load()
        if name not in everything:
            raise NotFound(f"no catalog connection {name!r}; `drsg catalog list` shows them")
        gone = everything.pop(name)
        self._save(everything)
        return gone

    def _save(self, everything: dict[str, Connection]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        data = {name: conn.public() for name, conn in sorted(everything.items())}
        write_atomic(self.path, json.dumps(data, ensure_ascii=False, indent=2).encode(), 0o600)
