"""The README's first command, `make demo`, runs end to end (CI runs `make test` only, so this is
what keeps the main job working): import, as-of reads, keyword, vector and hybrid search."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_make_demo_runs_the_main_job() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DRSG_")}
    ran = subprocess.run(["make", "-s", "demo"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert ran.returncode == 0, ran.stderr[-2000:]
    out = ran.stdout
    assert '"title": "Countess of Lovelace"' in out or '"title":"Countess of Lovelace"' in out  # ada now
    assert "dijkstra" in out and "(as expected: deleted now)" in out  # gone now, there as of commit 3
    assert re.search(r"^\s+\d\.\d{4}\tturing\t\[Person\]$", out, re.M), "the meaning search lost turing"
    explained = re.findall(r"^\s+(\d\.\d{4}) = 1×v\(norm\) ", out, re.M)
    assert len(explained) == 3, "the hybrid query's three explained hits"
    assert "embedded 7 node(s)" in out
