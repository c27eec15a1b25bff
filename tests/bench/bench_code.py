"""Reading a codebase with the built-in Python handler: files/s, MiB/s and facts/s on a real tree.

The tree is this interpreter's own standard library (some 1,900 ``.py`` files, real code every
CPython has; its ``site-packages`` falls to the walk's floor). Beside drsg's figure, from the same
run, the raw library's: reading every file and ``ast.parse``-ing it, which is the floor under any
``ast``-based reader. Then the same tree digested and applied into a fresh database (``--code-only``:
no model), which adds routing, the proposal and one commit. Upstream publishes ~21 MiB/s for its
py plugin (reference §9).

    .venv/bin/python -m tests.bench.bench_code [--tree DIR] [--no-record]
"""

from __future__ import annotations

import argparse
import ast
import datetime as dt
import shutil
import sys
import sysconfig
import time
from pathlib import Path

import drsg
from drsg.pipeline.code.python_handler import PythonHandler
from drsg.pipeline.code.read import read_tree
from drsg.pipeline.code.walk import walk
from drsg.pipeline.digest.ledger import apply
from drsg.pipeline.digest.run import DigestOptions, digest
from drsg.pipeline.digest.sources import TreeOptions, read_source
from drsg.pipeline.llm.calls import ModelCalls
from tests.bench.common import OUT, RESULTS, machine


def raw_parse(root: Path, files: list[str]) -> tuple[float, int]:
    started = time.perf_counter()
    parsed = 0
    for path in files:
        data = (root / path).read_bytes()
        try:
            ast.parse(data)
            parsed += 1
        except (SyntaxError, ValueError):
            pass
    return time.perf_counter() - started, parsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tree", type=Path, default=Path(sysconfig.get_paths()["stdlib"]))
    parser.add_argument("--no-record", action="store_true")
    args = parser.parse_args()
    root = args.tree.resolve()

    started = time.perf_counter()
    found = walk(root, ignore_files=())
    walked = time.perf_counter() - started
    handler = PythonHandler()
    files = [f for f in found.files if f.endswith(handler.manifest.extensions)]
    size = sum((root / f).stat().st_size for f in files)
    raw_s, parsed = raw_parse(root, files)

    started = time.perf_counter()
    reading = read_tree(found, [handler], code_only=True)
    read_s = time.perf_counter() - started
    facts = reading.facts

    db_path = OUT / "code" / "graph.drsg"
    shutil.rmtree(db_path.parent, ignore_errors=True)
    db_path.parent.mkdir(parents=True)
    started = time.perf_counter()
    doc = read_source(str(root), TreeOptions(ignore_files=(), code_only=True))
    with drsg.open(db_path, create=True) as db:
        calls = ModelCalls("none", lambda: None, None)  # a pure-code tree: the model is never asked
        proposal = digest(db, doc, "stdlib", DigestOptions(embed=False, link=False), calls, None)
        applied, _ = apply(db, proposal)
    digest_s = time.perf_counter() - started

    mib = size / (1 << 20)
    rows = [
        ("raw: read + ast.parse", raw_s, len(files), None),
        ("py handler: parse + assemble (facts, resolved)", read_s, len(files), facts),
        ("digest --code-only --apply (walk, read, propose, one commit)", digest_s, len(files), facts),
    ]
    lines = [
        f"tree: {root} — {len(files)} Python files ({parsed} parse), {mib:.1f} MiB; walk {walked:.2f} s "
        f"({found.seen} files the floor left)",
        "| path | s | files/s | MiB/s | facts/s | vs raw |",
        "|---|---|---|---|---|---|",
    ]
    for name, seconds, count, made in rows:
        per_fact = f"{made / seconds:,.0f}" if made else "—"
        lines.append(
            f"| {name} | {seconds:.2f} | {count / seconds:,.0f} | {mib / seconds:.2f} | {per_fact} | "
            f"{raw_s / seconds:.2f}× |"
        )
    lines.append(
        f"wrote {applied.nodes_created} nodes, {applied.edges_created} edges; "
        f"{len(reading.results[0].output.report.notes)} note(s); upstream's py plugin: ~21 MiB/s (published)"
    )
    print("\n".join(lines))
    if not args.no_record:
        with RESULTS.open("a", encoding="utf-8") as out:
            out.write(f"\n### Reading a codebase: Python handler ({dt.date.today()}, {machine()})\n\n")
            out.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    sys.exit(main())
