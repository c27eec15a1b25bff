"""Parsing a statement that holds a vector: inline (one NUMBERS token) beside the old path and ``$v``.

For D numbers in ``SEARCH (d:Doc) ON v NEAR [x1, …, xD] TOPK 5``, the median ms of an uncached
parse (lark, then the syntax tree) three ways in one process, rounds interleaved so the machine's
load falls on each alike: this grammar (the numbers read as one token); the old path, lark's parser
for the same grammar with the NUMBERS lines taken out (each number a token and a dozen parser
steps, as before the token); and the statement with ``$v`` in the vector's place (what ``--param``
parses). Results are appended to RESULTS.md.

    .venv/bin/python -m tests.bench.bench_cypher_parse [--dims 4 128 768] [--rounds 30] [--no-record]
"""

from __future__ import annotations

import argparse
import datetime as dt
import random
import statistics
import time
from collections.abc import Callable

from lark import Lark

from drsg.plan.cypher import parser, tables
from tests.bench import common


def old_path() -> Lark:
    """The grammar without NUMBERS: every list literal read number by number, as before."""
    grammar = tables.GRAMMAR.read_text(encoding="utf-8")
    kept = [line for line in grammar.splitlines() if "NUMBERS" not in line.split("//")[0]]
    return Lark("\n".join(kept), **tables.OPTIONS)  # type: ignore[arg-type]  # lark's own options


def main() -> None:
    opts = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    opts.add_argument("--dims", type=int, nargs="+", default=[4, 128, 768])
    opts.add_argument("--rounds", type=int, default=30)
    opts.add_argument("--no-record", action="store_true")
    args = opts.parse_args()
    started = dt.datetime.now(dt.UTC)
    rng = random.Random(7)
    new, old = parser._lark(), old_path()
    ways: dict[str, Callable[[str], object]] = {
        "inline, one NUMBERS token": lambda text: parser.parse_by(new, text),
        "inline, the old path": lambda text: parser.parse_by(old, text),
    }
    param = "SEARCH (d:Doc) ON v NEAR $v TOPK 5"
    rows = ["| numbers | " + " | ".join(ways) + " | `NEAR $v` | old / NUMBERS |", "|---|---|---|---|---|"]
    for dims in args.dims:
        vector = "[" + ", ".join(f"{rng.uniform(-1, 1):.6f}" for _ in range(dims)) + "]"
        text = f"SEARCH (d:Doc) ON v NEAR {vector} TOPK 5"
        assert parser.parse_by(new, text) == parser.parse_by(old, text)  # the same tree, before timing
        spent: dict[str, list[float]] = {name: [] for name in [*ways, "param"]}
        for _ in range(args.rounds):
            for name, way in [*ways.items(), ("param", lambda _text: parser.parse_by(new, param))]:
                begun = time.perf_counter()
                way(text)
                spent[name].append((time.perf_counter() - begun) * 1e3)
        ms = {name: statistics.median(times) for name, times in spent.items()}
        cells = " | ".join(f"{ms[name]:.2f} ms" for name in [*ways, "param"])
        rows.append(f"| {dims} | {cells} | {ms['inline, the old path'] / ms['inline, one NUMBERS token']:.1f}× |")
    lines = [f"Median of {args.rounds} uncached parses each, interleaved, in one process.", "", *rows]
    common.append_section("Parsing a statement holding a vector (#37 item 5)", started, lines, not args.no_record)


if __name__ == "__main__":
    main()
