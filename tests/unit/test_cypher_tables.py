"""The Cypher parser loaded from grammar.tables is lark's own parser for the grammar, row for row and
lexer for lexer, and it makes a parser state's lexer only when a parse reaches the state.

plan/cypher/tables.py reads the shipped tables in its own layout (each action once, each state's
row by index) and hands lark a contextual lexer whose per-state lexers are made on first use: a
one-shot read paid ~40 ms for lark's own load of 770 rows and 178 lexers, of which a statement
uses a dozen. These tests hold that what it builds is what lark builds from grammar.lark itself.
"""

from __future__ import annotations

import io
import pickle
import zlib
from pathlib import Path

import pytest
from lark import Lark
from lark.lexer import BasicLexer, ContextualLexer

from drsg.plan.cypher import parser, tables
from tests.bench.cypher_parsers import STATEMENTS


@pytest.fixture(scope="module")
def built() -> tuple[Lark, bytes]:
    """lark's parser built from the grammar, as lark builds it (~1 s), and the tables written of it
    (lark numbers its states differently in each build: the two are compared within one)."""
    own = Lark(tables.GRAMMAR.read_text(encoding="utf-8"), **tables.OPTIONS)  # type: ignore[arg-type]
    return own, pickle.dumps(tables.saved(own), protocol=4)


@pytest.fixture(scope="module")
def lark_own(built: tuple[Lark, bytes]) -> Lark:
    return built[0]


def _load(built: tuple[Lark, bytes]) -> Lark:
    """A fresh parser loaded from those tables, through the file's unpickler."""
    return tables.from_saved(tables._PlainValues(io.BytesIO(built[1])).load())


@pytest.fixture(scope="module")
def loaded(built: tuple[Lark, bytes]) -> Lark:
    return _load(built)


def test_the_shipped_tables_load_through_the_indexed_layout() -> None:
    reader = tables.load(tables.GRAMMAR.read_text(encoding="utf-8"))
    assert reader is not None, "grammar.tables is stale: python -m drsg.plan.cypher.parser"
    assert isinstance(reader.parser.parser, tables._IndexedParser)
    assert isinstance(reader.parser.lexer, tables._StateLexer)
    assert parser._lark().parser.parser.__class__ is tables._IndexedParser


def _rows(reader: Lark) -> dict[int, dict[str, tuple[str, object]]]:
    """Each state's actions: token → ("Shift", state) or ("Reduce", the rule's origin and expansion)."""
    states = reader.parser.parser._parse_table.states
    return {
        state: {
            token: (str(action), (arg.origin, tuple(arg.expansion), arg.alias) if str(action) == "Reduce" else arg)
            for token, (action, arg) in row.items()
        }
        for state, row in states.items()
    }


def _lexer_tokens(lexer: BasicLexer) -> list[str]:
    return [t.name for t in lexer.terminals]


def test_every_state_acts_as_in_larks_own_parser(lark_own: Lark, loaded: Lark) -> None:
    own, ours = lark_own.parser.parser._parse_table, loaded.parser.parser._parse_table
    assert _rows(loaded) == _rows(lark_own) and len(ours.states) == len(own.states) > 700
    assert (ours.start_states, ours.end_states) == (own.start_states, own.end_states)
    # a reduction names the very rule the tree builder's callbacks are keyed by
    rules = {id(rule) for rule in loaded.rules}
    assert all(
        id(arg) in rules for row in ours.states.values() for action, arg in row.values() if str(action) == "Reduce"
    )


def test_every_states_lexer_matches_the_same_tokens_in_the_same_order(lark_own: Lark, loaded: Lark) -> None:
    own, ours = lark_own.parser.lexer, loaded.parser.lexer
    assert isinstance(own, ContextualLexer) and isinstance(ours, tables._StateLexer)
    assert own.lexers and all(_lexer_tokens(ours.lexers[s]) == _lexer_tokens(own.lexers[s]) for s in own.lexers)
    same = {frozenset(map(id, own.lexers.values())).__len__(), len(set(map(id, ours.lexers.values())))}
    assert len(same) == 1  # shared by the states accepting the same tokens, as lark shares them
    assert _lexer_tokens(ours.root_lexer) == _lexer_tokens(own.root_lexer)


def test_a_state_gets_its_lexer_when_a_parse_first_reaches_it(built: tuple[Lark, bytes]) -> None:
    fresh = _load(built)
    lexers = fresh.parser.lexer.lexers
    assert len(lexers) == 0  # lark's own load makes all 770 (178 distinct) before any parse
    fresh.parse("MATCH (n:Doc) RETURN n.name")
    reached = len(lexers)
    assert 0 < reached < 30


def test_statements_parse_to_the_same_trees(lark_own: Lark, loaded: Lark) -> None:
    assert [parser.parse_by(loaded, text) for text in STATEMENTS] == [parser.parse_by(lark_own, t) for t in STATEMENTS]


@pytest.mark.parametrize(
    "text",
    ["MATCH (n RETURN n", "MATCH (n) RETURN n.", "SEARCH (d:Doc) ON v NEAR [1, 0", "RETURN 'x", "MATCH (n) RETURN ¤"],
)
def test_a_syntax_error_says_the_same_as_through_larks_own_parser(lark_own: Lark, loaded: Lark, text: str) -> None:
    said = []
    for reader in (loaded, lark_own):
        with pytest.raises(Exception) as caught:
            parser.parse_by(reader, text)
        said.append((type(caught.value), str(caught.value)))
    assert said[0] == said[1]


def test_damaged_or_foreign_tables_are_not_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    grammar = tables.GRAMMAR.read_text(encoding="utf-8")
    key, _, body = zlib.decompress(tables.TABLES.read_bytes()).partition(b"\n")
    planted = tmp_path / "grammar.tables"
    monkeypatch.setattr(tables, "TABLES", planted)
    planted.write_bytes(b"not zlib")
    assert tables.load(grammar) is None
    planted.write_bytes(zlib.compress(key + b"\n" + pickle.dumps(io.BytesIO(b"a class"))))
    assert tables.load(grammar) is None  # a pickle naming a class is refused
    planted.write_bytes(zlib.compress(key + b"\n" + body))
    assert tables.load(grammar) is not None and tables.load(grammar + "\n") is None  # another grammar's key
