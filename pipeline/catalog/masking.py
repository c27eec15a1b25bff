"""Which columns are sensitive: their values come back as ``[REDACTED]`` unless the connection says
``sensitive_columns = "show"``. Pure: the policy only. ``catalog sql`` enforces it by parsing each
statement and allowing only known-safe SELECTs over the live schema (``statement.py``), with the
database's own layer beneath (SQLite's authorizer; the plan on PostgreSQL, the optimizer trace on
MySQL/MariaDB); ``drsg catalog grants`` has the engine enforce it for a read role.

The rule, erring on the side of masking: a name is sensitive when a run of its words (split at
separators and case humps, ``PassWord`` → ``pass word``), joined and with a plural ``s`` dropped,
is a sensitive term (``user_passwords``, ``apiKeys``, ``pass_word``); when it holds one of the long
English terms anywhere in a word (``userpassword``, ``APIKEYHASH``); or when it holds a Chinese secret or
identity-number term anywhere (``登录密码``, ``身份证号码``). Short terms (``token``, ``salt``,
``otp``) count only as whole words, so ``tokenizer``, ``secretary`` and ``classname`` stay clear.
Metadata named after a secret is masked with it (``password_changed_at``, ``token_count``): the
rule does not guess which words after a secret make it harmless."""

from __future__ import annotations

import functools
from collections.abc import Iterable

from drsg.pipeline.catalog.naming import split_identifier

REDACTED = "[REDACTED]"
#: terms (words joined, singular) a run of an identifier's words may spell: ``user_pwd``, ``apiKey``, ``id_card``
SENSITIVE_TERMS = frozenset(
    {
        "password", "passwd", "pwd", "secret", "token", "salt", "credential", "passphrase",
        "idcard", "apikey", "privatekey", "accesskey", "secretkey", "cardno", "ssn", "cvv", "otp",
    }
)  # fmt: skip
#: long terms no ordinary word contains, so they count anywhere in a word (``userpassword``)
SENSITIVE_ANYWHERE = frozenset({"password", "passwd", "passphrase", "credential", "apikey", "privatekey"})
#: Chinese secret and identity-number terms, matched anywhere (word segmentation is not reliable enough)
SENSITIVE_CHINESE = ("密码", "口令", "密钥", "身份证", "银行卡号", "令牌")
#: longest run of words joined into one term (``private key`` is two, ``pass phrase s`` three)
_RUN = 3


def is_sensitive(column: str, extra: Iterable[str] = ()) -> bool:
    """True for a column name the policy masks; ``extra`` adds exact names (case-insensitive)."""
    lowered = column.lower()
    return lowered in {name.lower() for name in extra} or _built_in(column)


@functools.lru_cache(maxsize=65536)
def _built_in(column: str) -> bool:
    lowered = column.lower()
    if any(term in lowered for term in SENSITIVE_CHINESE):
        return True
    words = split_identifier(column)
    if any(term in word for word in words for term in SENSITIVE_ANYWHERE):
        return True
    for start in range(len(words)):
        for end in range(start + 1, min(start + _RUN, len(words)) + 1):
            if _is_term("".join(words[start:end])):
                return True
    return False


def _is_term(joined: str) -> bool:
    """A sensitive term, or its plural (``tokens``, ``api_keys``)."""
    return joined in SENSITIVE_TERMS or (joined.endswith("s") and joined[:-1] in SENSITIVE_TERMS)
