"""`drsg export --canonical`: the lines in the order the graph alone decides, and a round trip
through `import` into a new plane that exports the same bytes again."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.support.cli import Drsg


def _ok(drsg: Drsg, *args: str) -> dict[str, Any]:
    ran = drsg(*args, "--plane", "p", "--json")
    assert ran.code == 0, ran.err
    return ran.json_lines()[0]


def _seed(drsg: Drsg) -> int:
    """Keys written out of order (and across UTF-8 widths), a keyless node, parallel edges, a
    self-loop, nested maps written with unsorted keys. Returns the keyless node's id."""
    assert drsg("plane", "create", "p").code == 0
    for key in ("b", "\U0001f600", "a", "ｱ", "é", "Z", "ab"):
        _ok(drsg, "node", "put", key, "-l", "T", "-l", "S")
    _ok(drsg, "node", "put", "a", "--props", '{"z": 1, "m": {"y": [{"d": 1, "c": 2}], "x": 0}}')
    keyless = _ok(drsg, "node", "put", "-l", "Anon", "-P", "n=1")["id"]
    for src, dst, edge_type, props in (
        ("@b", "@a", "R", '{"w": 2}'),
        ("@a", "@b", "S", "{}"),
        ("@a", "@b", "R", '{"w": 2, "v": 1}'),
        ("@a", "@Z", "R", "{}"),
        ("@a", "@b", "R", '{"v": 0}'),
        ("@a", str(keyless), "R", "{}"),
        (str(keyless), "@a", "R", "{}"),
        ("@a", "@a", "R", "{}"),
        ("@b", "@a", "R", '{"w": 2}'),  # parallel, the same in every way
    ):
        assert drsg("edge", "put", src, dst, edge_type, "--props", props, "--plane", "p").code == 0
    return int(keyless)


def test_canonical_export_order(drsg: Drsg) -> None:
    keyless = _seed(drsg)
    ran = drsg("export", "--plane", "p", "--canonical")
    assert ran.code == 0, ran.err
    assert ran.lines() == [
        '{"labels":["S","T"],"external_key":"Z","properties":{}}',
        '{"labels":["S","T"],"external_key":"a","properties":{"m":{"x":0,"y":[{"c":2,"d":1}]},"z":1}}',
        '{"labels":["S","T"],"external_key":"ab","properties":{}}',
        '{"labels":["S","T"],"external_key":"b","properties":{}}',
        '{"labels":["S","T"],"external_key":"é","properties":{}}',
        '{"labels":["S","T"],"external_key":"ｱ","properties":{}}',  # U+FF71: before U+1F600 by code point
        '{"labels":["S","T"],"external_key":"\U0001f600","properties":{}}',
        f'{{"id":{keyless},"labels":["Anon"],"properties":{{"n":1}}}}',
        '{"type":"R","src_key":"a","dst_key":"Z","properties":{}}',
        '{"type":"R","src_key":"a","dst_key":"a","properties":{}}',
        '{"type":"R","src_key":"a","dst_key":"b","properties":{"v":0}}',
        '{"type":"R","src_key":"a","dst_key":"b","properties":{"v":1,"w":2}}',
        f'{{"type":"R","src_key":"a","dst":{keyless},"properties":{{}}}}',
        '{"type":"S","src_key":"a","dst_key":"b","properties":{}}',
        '{"type":"R","src_key":"b","dst_key":"a","properties":{"w":2}}',
        '{"type":"R","src_key":"b","dst_key":"a","properties":{"w":2}}',
        f'{{"type":"R","src":{keyless},"dst_key":"a","properties":{{}}}}',
    ]
    default = drsg("export", "--plane", "p")
    assert default.lines() != ran.lines() and sorted(map(_normal, default.lines())) == sorted(map(_normal, ran.lines()))


def test_canonical_export_import_export_is_byte_identical(drsg: Drsg, tmp_path: Path) -> None:
    _seed(drsg)
    keyless = [n for n in drsg("export", "--plane", "p").json_lines() if "labels" in n and "external_key" not in n]
    # A keyless node gets a new id in the copy, so its lines would differ: the round trip is of keyed nodes.
    assert drsg("node", "delete", str(keyless[0]["id"]), "--plane", "p").code == 0
    out = tmp_path / "p.jsonl"
    assert drsg("export", "--plane", "p", "--canonical", "-o", str(out)).code == 0
    exported = out.read_text(encoding="utf-8")
    assert exported == drsg("export", "--plane", "p", "--canonical").out
    assert drsg("import", str(out), "--plane", "copy", "--create-plane").code == 0
    assert drsg("export", "--plane", "copy", "--canonical").out == exported


def _normal(line: str) -> str:
    return json.dumps(json.loads(line), sort_keys=True)
