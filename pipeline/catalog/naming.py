"""Words out of identifiers and comments, the same way for the catalog and for a question.

An identifier is split at ``_``/``-``/``.``/spaces, camelCase humps (``HTTPServer`` → ``http server``)
and letter/digit boundaries (``user2fa`` → ``user 2 fa``); Chinese runs go through the keyword
analyser (jieba's search mode, so ``广告`` finds ``广告点击``). Aliases join words that mean one
thing (user/用户/member/账号): a column's terms carry every alias of every word in it, so a
question in either language finds it. Pure: no I/O.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable

from drsg.workers.analysis import analyze

#: groups of words that name one thing; a word in a group stands for all of them
ALIAS_GROUPS: tuple[frozenset[str], ...] = tuple(
    frozenset(group.split())
    for group in (
        "user users 用户 member members 会员 账号 账户 account accounts usr",
        "password passwd pwd 密码 口令 pass",
        "name 名字 名称 姓名 nickname 昵称 username",
        "phone mobile tel telephone 手机 电话 手机号",
        "email mail 邮箱 邮件",
        "order orders 订单",
        "status state 状态",
        "amount price 金额 价格 money",
        "created createtime ctime 创建 创建时间",
        "updated updatetime mtime 更新 更新时间",
        "address addr 地址",
        "product goods item 商品 产品",
        "ad ads advert 广告",
        "click clicks 点击",
        "role roles 角色",
        "department dept 部门",
        "id 编号 标识",
        "token 令牌",
        "secret 密钥",
    )
)
_ALIASES: dict[str, frozenset[str]] = {}
for _group in ALIAS_GROUPS:
    for _word in _group:
        _ALIASES[_word] = _ALIASES.get(_word, frozenset()) | _group

_HUMP = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+|[^\W\d_A-Za-z]+")


def split_identifier(name: str) -> list[str]:
    """``sysUser_2fa`` → ``["sys", "user", "2", "fa"]``: the words of an identifier, lowercased, in order.

    ASCII letters split at case humps and digits; any other letters (Chinese, Cyrillic, …) stay one
    run for the analyser to segment."""
    words: list[str] = []
    for part in re.split(r"[\W_]+", name):
        words.extend(piece.lower() for piece in _HUMP.findall(part))
    return words


def words_of(text: str) -> list[str]:
    """The analysed words of an identifier or a comment: identifier pieces, Chinese segmented."""
    out: list[str] = []
    for piece in split_identifier(text):
        if piece.isascii():
            out.append(piece)
        else:
            out.extend(analyze(piece, "chinese"))
    return out


def expand(words: Iterable[str]) -> set[str]:
    """The words and every alias of each."""
    out: set[str] = set()
    for word in words:
        out.add(word)
        out |= _ALIASES.get(word, frozenset())
    return out


def name_terms(name: str) -> set[str]:
    """What a name answers to: its words, its whole lowercased form, and their aliases."""
    words = words_of(name)
    whole = name.lower()
    return expand([*words, whole, "".join(words)])


@functools.lru_cache(maxsize=65536)  # catalogs repeat names (id, status, …) across tables
def terms_text(name: str, comment: str | None) -> str:
    """The pre-tokenised stream a keyword index stores for a catalog object (terms joined by spaces)."""
    terms = name_terms(name) | expand(words_of(comment or ""))
    return " ".join(sorted(terms))


def query_words(text: str) -> list[str]:
    """A question's words, as the catalog's are made (aliases added by the scorer, not here)."""
    return words_of(text)
