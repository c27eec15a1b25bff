"""Shared pieces of the benchmarks: real text, machine facts, percentiles, RESULTS.md.

Payloads are real prose, never random bytes: the project's seed documents (``tests/data``) when
they are beside the repository, then the docstrings and comments of Python's own standard library,
which every machine that runs drsg has.
"""

from __future__ import annotations

import ast
import datetime as dt
import os
import platform
import sys
import sysconfig
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
OUT = HERE / "out"  # scratch databases and generated files (git-ignored)
RESULTS = HERE / "RESULTS.md"

_LINES: list[str] = []  # the corpus, or as much of its start as the largest request so far needed
_whole = False  # whether _LINES is all of it


def text_lines(limit: int = 200_000) -> list[str]:
    """Distinct lines of English prose (20–200 characters), in a stable order. A request stops
    reading once it has ``limit`` lines; only a walk that read every file is cached on disk, so a
    test's small first request leaves no cut-down corpus behind for the benchmarks."""
    global _whole
    if _whole or len(_LINES) >= limit:
        return _LINES[:limit]
    cache = OUT / f"prose-{sys.version_info.major}.{sys.version_info.minor}.txt"  # (corpus-*: maybe cut down)
    if cache.exists():
        _LINES[:] = cache.read_text().splitlines()
        _whole = True
        return _LINES[:limit]
    seen: set[str] = set()
    lines: list[str] = []

    def add(text: str) -> None:
        for raw in text.splitlines():
            line = " ".join(raw.split())
            letters = sum(c.isalpha() or c == " " for c in line)
            if (
                20 <= len(line) <= 200
                and letters >= 0.85 * len(line)
                and not line.startswith((">>>", "..."))
                and line not in seen
            ):
                seen.add(line)
                lines.append(line)

    for path in sorted((REPO / "tests" / "data").glob("*.txt")):  # the seed documents, shipped in-repo
        add(path.read_text(errors="replace"))
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    for path in sorted(stdlib.rglob("*.py")):
        if "site-packages" in path.parts or len(lines) >= limit:
            continue
        try:
            source = path.read_text(encoding="utf-8")
            tree = ast.parse(source)
        except (SyntaxError, UnicodeDecodeError, ValueError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
                doc = ast.get_docstring(node)
                if doc:
                    add(doc)
        add("\n".join(ln.strip()[1:] for ln in source.splitlines() if ln.strip().startswith("# ")))
    _LINES[:] = lines
    if len(lines) < limit:  # every file was read: the whole corpus
        _whole = True
        OUT.mkdir(parents=True, exist_ok=True)
        cache.write_text("\n".join(lines) + "\n")
    return _LINES[:limit]


def words(limit: int = 50_000) -> list[str]:
    """Distinct words from the same prose, for keys and labels."""
    out: dict[str, None] = {}
    for line in text_lines():
        for w in line.split():
            w = w.strip(".,;:()[]{}'\"`!?*").lower()
            if w.isalpha() and 2 < len(w) < 20:
                out.setdefault(w, None)
                if len(out) >= limit:
                    return list(out)
    return list(out)


def command() -> str:
    """How to rerun this benchmark, as a module from the repository root (no path of this machine)."""
    script = Path(sys.argv[0])
    module = f"tests.bench.{script.stem}" if script.suffix == ".py" else script.name
    return " ".join(["python", "-m", module, *sys.argv[1:]])


def machine() -> str:
    cpu = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    import lmdb

    return (
        f"{os.cpu_count()} CPUs (nproc {len(os.sched_getaffinity(0))}), {cpu}, "
        f"Python {platform.python_version()}, py-lmdb {lmdb.__version__} (LMDB {'.'.join(map(str, lmdb.version()))}), "
        f"{platform.system()} {platform.release()}, load average {os.getloadavg()[0]:.1f} when recorded"
    )


def pct(values: list[float], p: float) -> float:
    s = sorted(values)
    if not s:
        return float("nan")
    return s[min(len(s) - 1, round(p / 100 * (len(s) - 1)))]


def ratio(engine: float, raw: float) -> float:
    return engine / raw if raw else float("nan")


def record(
    title: str, rows: list[tuple[str, str, str, str]], notes: list[str] | None = None, raw: str = "raw py-lmdb"
) -> str:
    """Print a result table and append it, dated and with the machine, to RESULTS.md; ``raw`` heads
    the column of the raw library's figures."""
    when = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        f"## {title} — {when}",
        "",
        f"Machine: {machine()}. Command: `{command()}`",
        "",
        f"| measure | drsg | {raw} | drsg / raw |",
        "|---|---|---|---|",
        *[f"| {a} | {b} | {c} | {d} |" for a, b, c, d in rows],
        "",
        *[f"- {n}" for n in notes or [] if n],  # (an empty note: a row the run skipped)
        "",
    ]
    text = "\n".join(lines)
    print(text, flush=True)
    if os.environ.get("DRSG_BENCH_NO_RECORD") != "1":
        if not RESULTS.exists():
            RESULTS.write_text(
                "# Benchmark results\n\nAppended by `tests/bench/run_all.sh` (or each `python -m "
                "tests.bench.bench_*`). Every figure beside the raw library's figure (py-lmdb, hnswlib, "
                "tantivy, …) from the same run.\n\n"
            )
        with RESULTS.open("a") as fh:
            fh.write(text + "\n")
    return text


def append_section(title: str, started: dt.datetime, lines: list[str], write: bool) -> str:
    """A section dated ``started``, with the machine and the command, before ``lines``: printed, and
    appended to RESULTS.md when ``write`` (and DRSG_BENCH_NO_RECORD is not 1)."""
    when = started.strftime("%Y-%m-%d %H:%M UTC")
    text = "\n".join([f"## {title} — {when}", "", f"Machine: {machine()}. Command: `{command()}`", "", *lines, ""])
    if write and os.environ.get("DRSG_BENCH_NO_RECORD") != "1":
        with RESULTS.open("a") as fh:
            fh.write(text + "\n")
    print("\n" + text)
    return text


def fresh_dir(name: str) -> Path:
    import shutil

    path = OUT / name
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True)
    return path


def timed_catch_ups(indexes: Any, moments: list[tuple[float, int]], clock: Callable[[], float]) -> Any:
    """Record ``(clock(), head reached)`` each time a catch-up of ``indexes`` (an IndexSet) applies
    something: what the background loops (serve's, the index group's) call is wrapped. Returns the
    unwrapped method, to put back."""
    plain = indexes.catch_up

    def catch_up(head: int | None = None) -> int:
        before = indexes.applied
        got = plain(head)
        if got != before:
            moments.append((clock(), got))
        return int(got)

    indexes.catch_up = catch_up
    return plain
