"""An import's lines read by the C scanner (store/_bulkscan.c) come out as msgspec's dicts of them do.

The scanner reads a line of the common shapes without a dict; any other line it leaves to msgspec
and the dict path. Random files are written as text, token by token — fields in any order, JSON's
whitespace between tokens, and near-misses of every rule the scanner keeps: escapes and unicode in
names and values, integers either side of 18 digits and of 64 bits, numbers JSON refuses, floats
spelled every way JSON allows (and past a double's range), fields twice, unknown fields, nested
values, a vector's line (its flush mid-commit) — and each is imported with the scanner and without
it (``use_scan(False)``): the same report or refusal, every table entry for entry.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import drsg
from drsg.kernel.errors import DrsgError
from drsg.store import bulkwrite
from drsg.store.database import Database
from drsg.store.environment import DB_NAMES
from drsg.store.jsonl import import_jsonl

WS = st.sampled_from(["", "", "", " ", "  ", "\t", "\r", " \t"])
NAMES = ["k0", "k1", "n9", "A", "B", "x", "y", "", "p" * 401, "a" * 400]
NEAR_NAMES = ["k\\u0030", "ключ", "k\\\\", 'k\\"', "k\\n", "\u00e9", "k\x01"]  # escapes, unicode, a control byte
any_name = st.one_of(*[st.sampled_from(NAMES)] * 4, st.sampled_from(NEAR_NAMES))
plain_name = st.sampled_from(["k0", "k1", "n9", "A", "B", "x"])


def _str(text: str) -> str:
    return f'"{text}"'


digits = st.text("0123456789", min_size=1, max_size=21)
integer = st.one_of(
    st.integers(-(10**18), 10**18).map(str),
    st.integers(-(2**63) - 2, 2**64 + 2).map(str),
    st.sampled_from(["0", "-0", "999999999999999999", "-999999999999999999", "1000000000000000000"]),
    st.tuples(st.sampled_from(["", "-"]), digits).map("".join),  # leading zeros: no JSON
)
decimal = st.tuples(
    st.sampled_from(["", "-"]),
    st.one_of(st.just("0"), digits),
    st.one_of(st.just(""), digits.map(lambda d: "." + d), st.just(".")),
    st.one_of(
        st.just(""),
        st.tuples(st.sampled_from("eE"), st.sampled_from(["", "+", "-"]), st.integers(0, 400).map(str)).map("".join),
        st.just("e"),
    ),
).map("".join)
number = st.one_of(
    integer,
    decimal,
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
    st.sampled_from(["1e400", "-1e400", "1e-400", "5e-324", "1.7976931348623157e308", "0.1", "1E5", "-0.0", ".5"]),
)
plain_scalar = st.one_of(
    plain_name.map(_str),
    st.integers(-(10**18), 10**18).map(str),
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
    st.sampled_from(["true", "false", "null", '"a b"', "-0", "-0.0", "0.1", "1E5", "5e-324", "1e-400"]),
)
any_scalar = st.one_of(
    any_name.map(_str),
    number,
    number,
    st.sampled_from(["true", "false", "null", '"a b"', '"a b"']),
    st.sampled_from(["tru", "nul", '"\\ud800"', '"\U0001f600"', "[1]", "{}"]),
)


@st.composite
def _object(draw: st.DrawFn, fields: list[tuple[str, str]]) -> str:
    ws = draw(WS)
    items = [f"{draw(WS)}{_str(field)}{draw(WS)}:{draw(WS)}{value}{draw(WS)}" for field, value in fields]
    return "{" + ws + ",".join(items) + "}" + draw(WS) if items else "{" + ws + "}" + draw(WS)


@st.composite
def _props(draw: st.DrawFn, names: st.SearchStrategy[str], values: st.SearchStrategy[str]) -> str:
    pairs = draw(st.lists(st.tuples(st.sampled_from(["x", "y", "z"]) | names, values), max_size=4))
    if draw(st.integers(0, 9)) == 0:
        return "null"
    return draw(_object(pairs))


@st.composite
def _line(draw: st.DrawFn) -> str:
    """A line of the scanner's shapes — clean, or with near-misses anywhere."""
    clean = draw(st.booleans())
    name, scalar = (plain_name, plain_scalar) if clean else (any_name, any_scalar)
    fields: list[tuple[str, str]] = []
    edge = draw(st.booleans())
    if edge:
        fields += [("type", _str(draw(st.sampled_from(["R", "S"]) | name))), ("src_key", _str(draw(name)))]
        fields += [("dst_key", _str(draw(name)))]
    else:
        labels = draw(st.lists(st.sampled_from(["A", "B", "C"]) | name, max_size=3))
        if draw(st.integers(0, 2)):
            labels = sorted(set(labels))  # as a record keeps them, mostly
        if draw(st.integers(0, 5)):
            fields.append(("labels", "[" + ",".join(draw(WS) + _str(label) + draw(WS) for label in labels) + "]"))
        key = draw(st.one_of(name.map(_str), st.just("null"), st.just("")))
        if key:
            fields.append(("external_key", key))
    if draw(st.integers(0, 2)):
        fields.append(("properties", draw(_props(name, scalar))))
    extra = draw(st.integers(0, 12)) if not clean else -1
    if extra == 0:
        fields.append(("id", "1"))
    elif extra == 1:
        fields.append(("colour", "1"))
    elif extra == 2 and fields:
        fields.append(draw(st.sampled_from(fields)))  # a field twice: the last one counts
    return draw(_object(draw(st.permutations(fields))))


VECTOR = '{"labels": ["A"], "external_key": "n9", "properties": {"v": {"$vector": [0.5, 0.5]}}}'
UNICODE_K1 = '{"labels": ["A"], "external_key": "k1", "properties": {"s": "é"}}'
lines = st.lists(
    st.one_of(_line(), _line(), _line(), st.sampled_from([VECTOR, UNICODE_K1, "", "{bad", '{"type": "R"}'])),
    min_size=1,
    max_size=16,
)


def _dump(db: Database) -> dict[str, list[tuple[bytes, bytes]]]:
    """Every table's entries, the clock's readings masked (a log record's timestamp and checksum,
    the head's timestamp) and the file's own uuid left out."""
    with db.env.read() as txn:
        tables = {table: list(txn.cursor(db=db.env.dbs[table])) for table in DB_NAMES}
    tables["log"] = [(seq, record[:1] + bytes(12) + record[13:]) for seq, record in tables["log"]]
    meta = [(k, v[:8] + bytes(8) + v[16:] if k == b"state" else v) for k, v in tables["meta"]]
    tables["meta"] = [(k, v) for k, v in meta if k != b"uuid"]
    return tables


@contextmanager
def _scanning(on: bool) -> Iterator[None]:
    bulkwrite.use_scan(on)
    try:
        yield
    finally:
        bulkwrite.use_scan(True)


def _import(path: Path, data: Path, commit_lines: int, scan: bool) -> tuple[Any, dict[str, Any]]:
    with drsg.open(path) as db, _scanning(scan):
        try:
            outcome: Any = import_jsonl(db, data, "p", commit_lines=commit_lines, create_plane=True)
        except DrsgError as exc:
            outcome = (type(exc).__name__, str(exc))
        return outcome, _dump(db)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(body=lines, commit_lines=st.sampled_from([3, 1000]))
@example(  # a key the Python path gave out, then a vector's flush mid-commit: the scan's answers are stale
    body=[UNICODE_K1, VECTOR, '{"labels": ["A"], "external_key": "k1"}'], commit_lines=1000
)
@example(body=['{"labels":["A"],"external_key":"k0","properties":{"x":1,"x":2}}'], commit_lines=1000)
@example(body=['{"external_key":"k0","labels":["A"],"external_key":"k1"}'], commit_lines=1000)
@example(body=['{"properties":{"f":1.0e+2,"g":-0.0,"i":-0,"h":123456789012345678,"j":0.1}}'], commit_lines=1000)
def test_the_scanned_lines_make_the_database_msgspecs_dicts_make(
    tmp_path_factory: pytest.TempPathFactory, body: list[str], commit_lines: int
) -> None:
    root = tmp_path_factory.mktemp("scan")
    data = root / "in.jsonl"
    data.write_text("\n".join(body) + "\n", encoding="utf-8")
    scanned = _import(root / "scanned.drsg", data, commit_lines, scan=True)
    reference = _import(root / "reference.drsg", data, commit_lines, scan=False)
    assert scanned[0] == reference[0]
    for table in DB_NAMES:
        assert scanned[1][table] == reference[1][table], table


def test_the_scanner_reads_the_common_shapes_and_leaves_the_rest() -> None:
    """What it takes (so the test above compares the scanner's reading, not two dict paths)."""
    assert bulkwrite._native is not None
    taken = [
        b'{"labels": ["L"], "external_key": "n0", "properties": {"x": 331, "g": "g0"}}\n',
        b'{"src_key": "n51811", "dst_key": "n24924", "type": "E"}\n',
        b' {\t"properties" : null ,"external_key":null}\r\n',
        b'{"type":"E","src_key":"a","dst_key":"b","properties":{"w":-1.5e-3,"t":true,"n":null}}',
        b"{}\n",
    ]
    left = [
        b'{"labels": ["L"], "external_key": "n\\u0030"}\n',  # an escape
        b'{"labels": ["L"], "external_key": "\xc3\xa9"}\n',  # not ASCII
        b'{"labels": ["L"], "id": 3}\n',  # another field
        b'{"labels": ["L"], "labels": ["M"]}\n',  # a field twice
        b'{"properties": {"x": 1234567890123456789}}\n',  # 19 digits
        b'{"properties": {"x": 01}}\n',  # no JSON
        b'{"properties": {"x": [1]}}\n',  # nested
        b'{"type": "E", "src_key": "a"}\n',  # no dst_key
        b'{"src_key": "a", "labels": []}\n',  # a node naming an end
        b'{"labels": []} x\n',
        b"\n",
    ]
    kinds = bulkwrite._native.Scan(taken + left).kinds()
    assert list(kinds) == [1, 2, 1, 2, 1] + [0] * len(left)
