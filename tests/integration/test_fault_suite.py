"""The fault suite: seeded random damage of a database file, and what every command makes of it.

A real database (several commits of nodes with real prose, edges, a deletion, a rename) is damaged
in ``VARIANTS`` seeded ways — truncation (whole pages or at any byte), flipped bytes, zeroed pages,
runs of random bytes — and five commands run on each damaged copy through the real entry point:
``check``, ``stats``, ``export``, a read (``get``) and a write (``node put``). For every variant:

* no command dies by a signal (a crash inside LMDB is contained by the CLI's supervisor and
  reported in one line; the suite counts those separately), and none hangs past ``TIME_BOUND``;
* every exit code is a documented one (0, 1, 2), and a failure is one line with no traceback and
  no ``internal error``;
* whenever ``check`` says ok, ``export`` is byte-identical to the undamaged export (no silent loss).

The figures (variants, signal deaths, contained crashes, hangs, silent losses, what check found) are
printed at the end; run with ``-s`` to see them.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

import drsg

ROOT = Path(__file__).resolve().parents[2]
RUNNER = ROOT / "tests" / "support" / "fault_runner.py"
VARIANTS = int(os.environ.get("DRSG_FAULT_VARIANTS", "240"))
TIME_BOUND = 60.0  # seconds per command: generous for a loaded CI machine; healthy runs take < 1 s
PLANE = "fault"
PAGE = 4096
_LMDB_ASSERT = "/project/build/lib/mdb.c:"  # how py-lmdb's bundled LMDB prints a failed assertion


def _prose() -> list[str]:
    text = " ".join((ROOT / "tests" / "data" / name).read_text() for name in ("ai_native_en.txt", "dbgraph_readme.txt"))
    words = text.split()
    return [" ".join(words[i : i + 40]) for i in range(0, len(words) - 40, 17)]


def _build(path: Path) -> None:
    """Several commits, so the file has history, free pages and a few hundred pages in all."""
    db = drsg.open(path)
    prose = _prose()
    plane = db.write(lambda tx: tx.create_plane(PLANE)).value

    def nodes(tx, start: int, count: int) -> None:  # type: ignore[no-untyped-def]
        for i in range(start, start + count):
            labels = ["Doc", "Even" if i % 2 == 0 else "Odd"]
            tx.create_node(plane, f"n{i}", labels, {"i": i, "text": prose[i % len(prose)]})

    def edges(tx, count: int) -> None:  # type: ignore[no-untyped-def]
        for i in range(count - 1):
            tx.create_edge(plane, f"@n{i}", f"@n{(i * 7 + 1) % count}", "CITES", {"w": i % 5})

    for start in range(0, 600, 150):
        db.write(lambda tx, start=start: nodes(tx, start, 150))
    db.write(lambda tx: edges(tx, 600))
    db.write(lambda tx: tx.delete_node(plane, "@n7"))
    db.write(lambda tx: nodes(tx, 600, 50))
    db.close()


def _damage(original: bytes, rng: random.Random, kind: str) -> tuple[bytes, str]:
    data = bytearray(original)
    pages = len(data) // PAGE
    if kind == "truncate":
        if rng.random() < 0.5:
            cut = rng.randint(1, pages - 1) * PAGE
            return bytes(data[: len(data) - cut]), f"truncate {cut // PAGE} pages"
        at = rng.randrange(0, len(data))
        return bytes(data[:at]), f"truncate at byte {at}"
    if kind == "flip":
        spots = sorted(rng.randrange(0, len(data)) for _ in range(rng.choice((1, 2, 8, 64))))
        for at in spots:
            data[at] ^= rng.randint(1, 255)
        return bytes(data), f"flip {len(spots)} bytes from {spots[0]}"
    if kind == "zero":
        chosen = sorted(rng.sample(range(pages), rng.choice((1, 1, 2, 3))))
        for page in chosen:
            data[page * PAGE : (page + 1) * PAGE] = bytes(PAGE)
        return bytes(data), f"zero pages {chosen}"
    runs = [rng.randrange(0, len(data) - 16) for _ in range(4)]
    for at in runs:
        data[at : at + 16] = rng.randbytes(16)
    return bytes(data), f"4x16 random bytes at {runs}"


class Runner:
    def __init__(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, str(RUNNER)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )

    def __call__(self, *argv: str) -> dict[str, object]:
        assert self.proc.stdin and self.proc.stdout
        self.proc.stdin.write(json.dumps({"argv": list(argv), "timeout": TIME_BOUND}) + "\n")
        self.proc.stdin.flush()
        return json.loads(self.proc.stdout.readline())

    def close(self) -> None:
        if self.proc.stdin:
            self.proc.stdin.close()
        self.proc.wait(30)


@pytest.mark.slow
def test_random_damage_never_kills_hangs_or_silently_loses(tmp_path: Path) -> None:
    base = tmp_path / "base.drsg"
    _build(base)
    original = base.read_bytes()
    run = Runner()
    try:
        undamaged = tmp_path / "undamaged.jsonl"
        assert run("--db", str(base), "export", "--plane", PLANE, "-o", str(undamaged))["code"] == 0
        assert run("--db", str(base), "check")["code"] == 0
        rng = random.Random(20261201)
        kinds = ("truncate", "flip", "zero", "runs")
        figures: Counter[str] = Counter()
        failures: list[str] = []
        for variant in range(VARIANTS):
            kind = kinds[variant % len(kinds)]
            damaged, how = _damage(original, rng, kind)
            folder = tmp_path / f"v{variant}"
            folder.mkdir()
            path = folder / "g.drsg"
            path.write_bytes(damaged)
            exported = folder / "export.jsonl"
            commands = {
                "check": ("check",),
                "stats": ("stats",),
                "export": ("export", "--plane", PLANE, "-o", str(exported)),
                "read": ("get", "@n300", "--plane", PLANE, "--json"),
                "write": ("node", "put", "added", "--plane", PLANE, "-P", "x=1"),
            }
            results = {name: run("--db", str(path), *argv) for name, argv in commands.items()}
            figures["commands"] += len(results)
            for name, r in results.items():
                where = f"variant {variant} ({how}), {name}"
                err = str(r["err"]).strip()
                if r["signal"] is not None:
                    failures.append(f"{where}: died by {r['signal']}")
                    figures["signal deaths"] += 1
                if r["hung"]:
                    failures.append(f"{where}: still running after {TIME_BOUND} s")
                    figures["hangs"] += 1
                if r["code"] not in (None, 0, 1, 2):
                    failures.append(f"{where}: exit {r['code']}")
                if "drsg crashed (" in err:
                    figures["crashes contained by the supervisor"] += 1
                # drsg's own words are one line (check: one `damaged:` line per problem); LMDB may print
                # its failed assertion before aborting, and the supervisor's line follows it
                ours = [line for line in err.splitlines() if not line.startswith(_LMDB_ASSERT)]
                one_line = len(ours) == 1 or (name == "check" and all(line.startswith("damaged: ") for line in ours))
                if r["code"] and ("Traceback" in err or "internal error" in err or not one_line):
                    failures.append(f"{where}: not a one-line error: {err[-600:]!r}")
            check = results["check"]
            figures[f"check {'ok' if check['code'] == 0 else 'found damage'}"] += 1
            if check["code"] == 0 and results["export"]["code"] == 0:
                if exported.read_bytes() != undamaged.read_bytes():
                    failures.append(f"variant {variant} ({how}): check said ok but the export differs")
                    figures["silent losses"] += 1
            elif check["code"] == 0:
                export_err = results["export"]["err"]
                failures.append(f"variant {variant} ({how}): check said ok but export failed: {export_err!r}")
                figures["silent losses"] += 1
            shutil.rmtree(folder)
        figures["variants"] = VARIANTS
        print("\nfault suite:", json.dumps(dict(sorted(figures.items()))))
        assert not failures, "\n".join(failures[:40]) + f"\n… {len(failures)} failures in all"
    finally:
        run.close()
