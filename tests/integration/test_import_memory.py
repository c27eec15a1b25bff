"""A JSONL import's memory stays flat whatever the file's size (#14): what it keeps from one chunk
to the next does not grow with the lines it has read.

Anonymous memory only (``RssAnon``: the heap and LMDB's dirty pages). The file-backed pages of the
LMDB map are page cache the kernel takes back under pressure; the benchmark measures them, and the
import under a hard memory limit (tests/bench/bench_import.py, ``--memory-limit``)."""

from __future__ import annotations

import json
from pathlib import Path

import drsg
from drsg.store.jsonl import import_jsonl
from tests.bench.common import text_lines

NODES = 60_000  # then two edges a node: 180,000 lines
CHUNK = 1_000  # lines a chunk: small, so a chunk's random edges soon touch as many pages as they ever will
WARM = 2  # chunks into each phase (nodes, then edges) before its baseline: the phase's pages in use
GROWTH_KIB = 3 * 1024  # a leak of 30-60 bytes a line shows (a cache of every key: ~125 bytes a key)


def _rss_anon_kib() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("RssAnon:"):
            return int(line.split()[1])
    raise AssertionError("no RssAnon in /proc/self/status")


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
    """Within each phase (node lines, then edge lines) memory after a chunk stays where it was a
    few chunks in. A chunk's dirty pages are bounded by its lines, not by the file: a chunk of edges
    dirties more than a chunk of nodes (once, at the switch), and while the trees are still small
    a chunk's random inserts share leaves (with 5,000-line chunks that took ~60,000 edges to
    settle, and showed as 6 MiB of growth)."""
    data = _words_file(tmp_path / "words.jsonl")
    after_chunk: list[int] = []
    with drsg.open(tmp_path / "graph.drsg") as db:
        report = import_jsonl(
            db, data, "startup", commit_lines=CHUNK, progress=lambda _read: after_chunk.append(_rss_anon_kib())
        )
        assert (report.nodes_created, report.edges_created) == (NODES, 2 * NODES)
    node_chunks = NODES // CHUNK
    assert len(after_chunk) >= 3 * node_chunks
    for phase, samples in (("nodes", after_chunk[WARM:node_chunks]), ("edges", after_chunk[node_chunks + WARM :])):
        growth = max(samples) - samples[0]
        every_tenth = after_chunk[::10]
        assert growth < GROWTH_KIB, f"RssAnon grew {growth} KiB over the {phase} (KiB, every 10th chunk: {every_tenth})"
