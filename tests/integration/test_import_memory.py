"""A JSONL import's memory stays flat whatever the file's size (#14): what it keeps from one chunk
to the next does not grow with the lines it has read.

Counted as the interpreter's allocated blocks (``sys.getallocatedblocks``), which is exact and
repeatable: a run of this file ends each phase within 150 blocks of where it began it. Resident
memory (``RssAnon``) was tried first and is not a fit: it also holds LMDB's dirty pages, which grow
with the trees until a chunk's random inserts stop sharing leaves (bounded by the chunk, not the
file, but 2-4 MiB over this file, from run to run). The benchmark measures resident memory, and the
import under a hard memory limit (tests/bench/bench_import.py, ``--memory-limit``)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import drsg
from drsg.store.jsonl import import_jsonl
from tests.bench.common import text_lines

NODES = 60_000  # then two edges a node: 180,000 lines
CHUNK = 1_000  # lines a chunk
WARM = 2  # chunks into each phase (nodes, then edges) before its baseline
GROWTH_BLOCKS = 10_000  # a leak of one block in 12 lines shows (a cache of every key: two blocks a key)


def _words_file(path: Path) -> Path:
    prose = text_lines(5_000)
    with path.open("w") as fh:
        for i in range(NODES):
            text = prose[i % len(prose)]
            fh.write(json.dumps({"labels": ["Word"], "external_key": f"w{i}", "properties": {"text": text}}) + "\n")
        for i in range(2 * NODES):  # ends far apart, as in the benchmark's SEE_ALSO links
            src, dst = i % NODES, (i * 7919 + 13) % NODES
            fh.write(json.dumps({"src_key": f"w{src}", "dst_key": f"w{dst}", "type": "SEE"}) + "\n")
    return path


def test_an_import_holds_no_more_after_many_chunks_than_after_a_few(tmp_path: Path) -> None:
    """Within each phase (node lines, then edge lines) what the interpreter holds after a chunk
    stays where it was a few chunks in."""
    data = _words_file(tmp_path / "words.jsonl")
    after_chunk: list[int] = []
    with drsg.open(tmp_path / "graph.drsg") as db:
        report = import_jsonl(
            db, data, "startup", commit_lines=CHUNK, progress=lambda _read: after_chunk.append(sys.getallocatedblocks())
        )
        assert (report.nodes_created, report.edges_created) == (NODES, 2 * NODES)
    node_chunks = NODES // CHUNK
    assert len(after_chunk) >= 3 * node_chunks
    every_tenth = after_chunk[::10]  # for the message
    for phase, samples in (("nodes", after_chunk[WARM:node_chunks]), ("edges", after_chunk[node_chunks + WARM :])):
        growth = max(samples) - samples[0]
        assert growth < GROWTH_BLOCKS, f"{growth} more blocks held over the {phase} (every 10th chunk: {every_tenth})"
