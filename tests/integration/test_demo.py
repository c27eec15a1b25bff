"""The README's first command, `make demo`, runs end to end (CI runs `make test` only, so this is
what keeps the main job working): import, as-of reads, keyword, vector and hybrid search."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "drsg" / "data" / "sample.jsonl"


def test_make_demo_runs_the_main_job() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DRSG_")}
    ran = subprocess.run(["make", "-s", "demo"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert ran.returncode == 0, ran.stderr[-2000:]
    out = ran.stdout
    lines = out.splitlines()
    sample = {r.get("external_key"): r for r in map(json.loads, SAMPLE.read_text().splitlines())}

    # ada now (updated), and as of commit 2: the record the sample imported
    ada = lines.index("--- ada now, and as of commit 2 (before the update):")
    now, then = json.loads(lines[ada + 1]), json.loads(lines[ada + 2])
    assert now["properties"] == {**sample["ada"]["properties"], "title": "Countess of Lovelace"}
    assert then["properties"] == sample["ada"]["properties"]

    # dijkstra: `get` fails now with its one error line (and prints nothing), yet as of commit 3 it
    # prints the deleted node's record exactly as imported
    gone = lines.index("(as expected: deleted now)")
    assert lines[gone - 1] == "--- dijkstra is gone now, but still there as of commit 3:"
    errors = [line for line in ran.stderr.splitlines() if line.startswith("error:")]
    assert errors == ["error: no node @dijkstra in plane 'pioneers' at seq 4; check the id or @key"]
    dijkstra = json.loads(lines[gone + 1])
    assert dijkstra["external_key"] == "dijkstra" and dijkstra["labels"] == sample["dijkstra"]["labels"]
    assert dijkstra["properties"] == sample["dijkstra"]["properties"]

    assert re.search(r"^\s+\d\.\d{4}\tturing\t\[Person\]$", out, re.M), "the meaning search lost turing"
    explained = re.findall(r"^\s+(\d\.\d{4}) = 1×v\(norm\) ", out, re.M)
    assert len(explained) == 3, "the hybrid query's three explained hits"
    assert "embedded 7 node(s)" in out
