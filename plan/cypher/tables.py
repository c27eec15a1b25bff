"""The Cypher grammar's parser, from its LALR tables built ahead (``grammar.tables``).

Building lark's LALR parser for ``grammar.lark`` takes ~1 s, so the tables are built once and
shipped. Loaded by lark's own ``Lark.load``, they still cost ~40 ms of every one-shot read (issue
#37): lark rebuilds the 20,000 actions of 770 parser states through its generic deserializer, and
makes a lexer for each of the 178 sets of tokens a state accepts. Here the tables keep each action
once and each state's row as the indices of its tokens and actions (made into lark's row by one
``dict(zip(…))``), and a state's lexer is made when a parse first reaches the state (a statement
visits a dozen). Both go to lark through its plugin option (``_plugins``), as lark's own cythonised
parser does; lark is pinned (pyproject.toml), the tables' key names its version and this format,
and tests/unit/test_cypher_tables.py holds every row and every state's lexer to lark's own.

The file: the key, a line break, then a pickle of plain values (dicts, lists, tuples, strings,
numbers: any class named in it is refused), zlib-compressed.
"""

from __future__ import annotations

import hashlib
import io
import pickle
import zlib
from collections.abc import Callable, Collection
from copy import copy
from pathlib import Path
from typing import Any, NoReturn

import lark
from lark import Lark
from lark.common import LexerConf
from lark.grammar import Rule
from lark.lexer import AbstractBasicLexer, BasicLexer, ContextualLexer, TerminalDef
from lark.parsers.lalr_analysis import IntParseTable, Reduce, Shift
from lark.parsers.lalr_parser import LALR_Parser, _Parser

GRAMMAR = Path(__file__).with_name("grammar.lark")
TABLES = Path(__file__).with_name("grammar.tables")
OPTIONS: dict[str, object] = {"parser": "lalr", "lexer": "contextual", "propagate_positions": True}
#: what the file's parse table looks like: 2, actions and rows by index (1 was lark's own layout)
FORMAT = 2


def tables_key(grammar: str) -> str:
    """What the tables were built from: lark's version, this format, the options and the grammar."""
    made = f"{lark.__version__}\n{FORMAT}\n{sorted(OPTIONS.items())}\n{grammar}"
    return hashlib.sha256(made.encode()).hexdigest()


def write_tables() -> Path:
    """Build the grammar's tables and write them beside it (``python -m drsg.plan.cypher.parser``)."""
    grammar = GRAMMAR.read_text(encoding="utf-8")
    body = pickle.dumps(saved(Lark(grammar, **OPTIONS)), protocol=4)
    TABLES.write_bytes(zlib.compress(tables_key(grammar).encode() + b"\n" + body, 9))
    return TABLES


def saved(reader: Lark) -> dict[str, Any]:
    """What the file keeps of a parser lark built: its own serialized form, the parse table indexed."""
    data, memo = reader.memo_serialize([TerminalDef, Rule])
    data["parser"]["parser"] = _compact(data["parser"]["parser"])
    return {"data": data, "memo": memo}


def _compact(table: dict[str, Any]) -> dict[str, Any]:
    """lark's serialized parse table (each state a dict: token index → (0, state) to shift or (1,
    {"@": rule}) to reduce) with each action kept once and each distinct row once, by index."""
    actions: dict[tuple[int, int], int] = {}
    rows: dict[tuple[tuple[int, ...], tuple[int, ...]], int] = {}
    states: list[int] = []
    for state in range(len(table["states"])):  # lark numbers its states 0..n-1
        row = table["states"][state]
        tokens = tuple(row)
        taken = []
        for kind, arg in row.values():
            action = (kind, arg["@"] if kind else arg)
            taken.append(actions.setdefault(action, len(actions)))
        states.append(rows.setdefault((tokens, tuple(taken)), len(rows)))
    return {
        "tokens": [table["tokens"][i] for i in range(len(table["tokens"]))],
        "actions": list(actions),
        "rows": list(rows),
        "states": states,
        "start_states": table["start_states"],
        "end_states": table["end_states"],
    }


class _PlainValues(pickle.Unpickler):
    """The tables hold dicts, lists, tuples, strings and numbers: any class named in them is refused."""

    def find_class(self, module: str, name: str) -> NoReturn:
        raise pickle.UnpicklingError(f"grammar.tables names {module}.{name}; only plain values belong there")


def load(grammar: str) -> Lark | None:
    """The parser from the shipped tables; None when they are missing, damaged or not this grammar's."""
    try:
        key, _, body = zlib.decompress(TABLES.read_bytes()).partition(b"\n")
        if key.decode() != tables_key(grammar):
            return None
        return from_saved(_PlainValues(io.BytesIO(body)).load())
    except (OSError, zlib.error, pickle.UnpicklingError, UnicodeDecodeError, EOFError):
        return None


def from_saved(kept: dict[str, Any]) -> Lark:
    """The parser from :func:`saved`'s form, through lark's load with the two classes below."""
    plugins = {"LALR_Parser": _IndexedParser, "ContextualLexer": _StateLexer}
    return Lark.__new__(Lark)._load(kept, _plugins=plugins)  # what Lark.load does, with lark's load options


class _IndexedParser(LALR_Parser):
    """lark's LALR parser, its table read from the indexed layout (:func:`_compact`)."""

    @classmethod
    def deserialize(  # type: ignore[override]  # as LALR_Parser's own, which lark calls with its callbacks
        cls, data: dict[str, Any], memo: dict[int, Any], callbacks: Any, debug: bool = False
    ) -> _IndexedParser:
        tokens = data["tokens"]
        actions = [(Reduce, memo[arg]) if kind else (Shift, arg) for kind, arg in data["actions"]]
        rows = [
            dict(zip(map(tokens.__getitem__, t), map(actions.__getitem__, a), strict=True)) for t, a in data["rows"]
        ]
        states = dict(enumerate(map(rows.__getitem__, data["states"])))
        table = IntParseTable(states, data["start_states"], data["end_states"])  # type: ignore[no-untyped-call]  # lark's, untyped
        inst = cls.__new__(cls)
        inst._parse_table = table  # type: ignore[assignment]  # lark's own deserialize keeps an IntParseTable here too
        inst.parser = _Parser(table, callbacks, debug)
        return inst


class _StateLexer(ContextualLexer):
    """lark's contextual lexer with each state's lexer made when a parse first reaches the state
    (as lark makes them all at once: one per set of accepted tokens, shared by the states accepting
    it) and the lexer of every token, which only an error consults, when one does."""

    def __init__(
        self, conf: LexerConf, states: dict[int, Collection[str]], always_accept: Collection[str] = ()
    ) -> None:
        self._conf = conf
        self._extra = {*conf.ignore, *always_accept}
        self._by_tokens: dict[frozenset[str], BasicLexer] = {}
        self._accepts = states
        self.lexers = _Lexers(self._lexer_of)
        self._root: AbstractBasicLexer | None = None

    def _lexer_of(self, state: int) -> BasicLexer:
        key = frozenset(self._accepts[state])
        lexer = self._by_tokens.get(key)
        if lexer is None:
            conf = copy(self._conf)
            by_name = conf.terminals_by_name
            conf.terminals = [by_name[n] for n in {*key, *self._extra} if n in by_name]
            lexer = self._by_tokens[key] = BasicLexer(conf)
        return lexer

    @property
    def root_lexer(self) -> AbstractBasicLexer:
        if self._root is None:
            conf = copy(self._conf)
            conf.terminals = list(conf.terminals)
            conf.skip_validation = True
            self._root = BasicLexer(conf)
        return self._root

    @root_lexer.setter
    def root_lexer(self, lexer: AbstractBasicLexer) -> None:
        self._root = lexer


class _Lexers(dict[int, AbstractBasicLexer]):
    """State → its lexer, each made on first use."""

    def __init__(self, make: Callable[[int], AbstractBasicLexer]) -> None:
        super().__init__()
        self._make = make

    def __missing__(self, state: int) -> AbstractBasicLexer:
        lexer = self[state] = self._make(state)
        return lexer
