"""Which columns are sensitive: their values come back as ``[REDACTED]`` unless the connection says
``sensitive_columns = "show"``. Pure: the policy only; each backend has the database enforce it
(SQLite's authorizer; the statement's plan on PostgreSQL, its optimizer trace on MySQL/MariaDB),
never by matching the SQL's text."""

from __future__ import annotations

import functools
import itertools
from collections.abc import Iterable

from drsg.pipeline.catalog.naming import split_identifier

REDACTED = "[REDACTED]"
#: words that make a column sensitive wherever they appear in its name (``user_pwd``, ``apiKey``)
SENSITIVE_WORDS = frozenset({"password", "passwd", "pwd", "secret", "token", "salt", "credential", "passphrase"})
#: word sequences that do (``id_card``, ``api_key``, ``private_key``, ``access_key``)
SENSITIVE_PAIRS = frozenset(
    {("id", "card"), ("api", "key"), ("private", "key"), ("access", "key"), ("secret", "key"), ("card", "no")}
)
SENSITIVE_WHOLE = frozenset({"ssn", "cvv", "otp", "idcard", "apikey", "密码", "口令", "身份证", "身份证号"})


def is_sensitive(column: str, extra: Iterable[str] = ()) -> bool:
    """True for a column name the policy masks; ``extra`` adds exact names (case-insensitive)."""
    lowered = column.lower()
    return lowered in {name.lower() for name in extra} or _built_in(column)


@functools.lru_cache(maxsize=65536)
def _built_in(column: str) -> bool:
    if column.lower() in SENSITIVE_WHOLE:
        return True
    words = split_identifier(column)
    if any(word in SENSITIVE_WORDS for word in words):
        return True
    return any(pair in SENSITIVE_PAIRS for pair in itertools.pairwise(words))
