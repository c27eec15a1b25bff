"""Start-up: `drsg serve` to its first accepted connection and answered /health, and one-shot CLI reads.

Each figure is the median wall time of N fresh processes (the real `drsg` entry point in the venv),
on a small database made once: one plane with two nodes, each with a 4-d vector under a declared
vector index. `serve` runs on an empty database (just created), as the issue's target says; its
clock starts at exec and stops when a TCP connect succeeds, then when GET /health answers 200.

    .venv/bin/python -m tests.bench.bench_startup                 # appends to RESULTS.md
    .venv/bin/python -m tests.bench.bench_startup --runs 3 --no-record
    .venv/bin/python -m tests.bench.bench_startup --tree OLD   # beside another checkout's code, same run
    .venv/bin/python -m tests.bench.bench_startup --floors     # and what a vector search stands on

``--tree`` names a folder laid out as the package (``drsg/`` holding ``drsg/*`` and the layer
folders, as the Makefile's typecheck tree): its column runs that code, with the editable
install's finder taken off, in the same run and on the same databases, passes interleaved.
``--as-wheel`` runs this checkout's column the same way, from such a tree of links to it: an
installed wheel's modules are found without the editable finder (~0.01-0.02 s of every start here).

The processes run as an installed drsg does, from byte-compiled modules: a bytecode cache in the
run's folder (``PYTHONPYCACHEPREFIX``), filled by one untimed pass of every command per column
first. An editable install under ``PYTHONDONTWRITEBYTECODE`` (this machine's) compiles every
module's source on every start instead, ~0.06-0.14 s of each figure: ``--no-pyc`` times that.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import resource
import socket
import statistics
import subprocess
import sys
import time
import tomllib
import urllib.request
from pathlib import Path

from tests.bench import common

DRSG = [str(Path(sys.executable).parent / "drsg")]
_OTHER = """import sys
sys.meta_path[:] = [f for f in sys.meta_path if "__editable__" not in str(f)]
sys.path.insert(0, {tree!r})
sys.argv[0] = "drsg"
from drsg.surfaces.cli.main import main
main()
"""


def other(tree: str) -> list[str]:
    """The command running the code in ``tree`` instead of the installed one."""
    return [sys.executable, "-c", _OTHER.format(tree=tree)]


def link_tree(root: Path) -> str:
    """A package tree of links to this checkout (``drsg/`` and its layer folders, as the Makefile's
    typecheck tree): what ``other`` runs for ``--as-wheel``."""
    checkout = Path(__file__).resolve().parents[2]
    package = root / "tree" / "drsg"
    package.mkdir(parents=True)
    for entry in (checkout / "drsg").iterdir():
        (package / entry.name).symlink_to(entry)
    folders = tomllib.loads((checkout / "pyproject.toml").read_text())["tool"]["setuptools"]["package-dir"]
    for name, folder in folders.items():  # drsg.kernel = "kernel", …: each layer's folder
        if name.count(".") == 1 and "/" not in folder:
            (package / name.split(".")[1]).symlink_to(checkout / folder)
    return str(package.parent)


READS: list[tuple[str, list[str]]] = [
    ("drsg get @a", ["get", "-p", "p", "@a"]),
    ("drsg cypher 'MATCH (n:Doc) RETURN n.name'", ["cypher", "-p", "p", "MATCH (n:Doc) RETURN n.name"]),
    ("drsg search '… NEAR [vector]'", ["search", "-p", "p", "SEARCH (d:Doc) ON v NEAR [1, 0, 0, 0] TOPK 1"]),
    ("drsg plane list", ["plane", "list"]),
]
#: a pasted 768-number query vector (plane q's index is 768-d): what one-shot search users write
VECTOR_768 = "[" + ", ".join(f"{((i * 37) % 101 - 50) / 50:.6f}" for i in range(768)) + "]"
READS.append(
    ("drsg search '… NEAR [768 numbers]'", ["search", "-p", "q", f"SEARCH (d:Doc) ON v NEAR {VECTOR_768} TOPK 1"])
)


#: the floors a one-shot vector search stands on, with ``--floors``: the interpreter, numpy and
#: hnswlib with the search's own index (``{index}``: its sidecar file) and one query, the statement's
#: parse (the Cypher front end's imports, lark's table load and the parse)
FLOORS: list[tuple[str, str]] = [
    ("python -c pass", "pass"),
    (
        "python: numpy, hnswlib, load the index, one knn_query",
        "import numpy, hnswlib; i = hnswlib.Index(space='cosine', dim=4); i.load_index({index!r}); "
        "i.knn_query(numpy.array([[1, 0, 0, 0]], dtype=numpy.float32), k=1)",
    ),
    (
        "python: parse the SEARCH statement",
        "from drsg.plan.statements import parse_query; parse_query('SEARCH (d:Doc) ON v NEAR [1, 0, 0, 0] TOPK 1')",
    ),
    (
        "python: parse the SEARCH statement, 768 numbers",
        f"from drsg.plan.statements import parse_query; parse_query('SEARCH (d:Doc) ON v NEAR {VECTOR_768} TOPK 1')",
    ),
]

#: the timed processes' environment (``main`` sets the bytecode cache)
ENV = dict(os.environ)


def _drsg(db: Path, *args: str) -> None:
    subprocess.run([*DRSG, "--db", str(db), *args], check=True, capture_output=True, timeout=120, env=ENV)


def make_database(root: Path) -> Path:
    db = root / "reads.drsg"
    _drsg(db, "plane", "create", "p")
    _drsg(db, "index", "ensure", "-p", "p", "Doc", "v")
    # vectors in the JSON dialect (a plain list is a list): the search row finds a hit in the index
    _drsg(db, "node", "put", "-p", "p", "-l", "Doc", "-P", "name=Ada", "-P", 'v={"$vector":[1,0,0,0]}', "a")
    _drsg(db, "node", "put", "-p", "p", "-l", "Doc", "-P", "name=Bob", "-P", 'v={"$vector":[0,1,0,0]}', "b")
    _drsg(db, "plane", "create", "q")
    _drsg(db, "index", "ensure", "-p", "q", "Doc", "v")
    _drsg(db, "node", "put", "-p", "q", "-l", "Doc", "-P", f'v={{"$vector":{VECTOR_768}}}', "c")
    return db


def one_read(cmd: list[str], db: Path, args: list[str]) -> tuple[float, float]:
    """Wall seconds from exec to exit, and the CPU seconds the command's processes used (user and
    system: what the machine's other tenants move least)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run([*cmd, "--db", str(db), *args], check=True, capture_output=True, timeout=120, env=ENV)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def one_serve(cmd: list[str], root: Path, n: str) -> tuple[float, float]:
    """Seconds from exec to the first accepted connection, and to the first answered /health."""
    db = root / f"serve-{n}.drsg"  # n: the pass and the column
    _drsg(db, "plane", "create", "p")  # an empty plane: the database exists, nothing to index
    port = _free_port()
    started = time.perf_counter()
    proc = subprocess.Popen(
        [*cmd, "serve", "--addr", f"127.0.0.1:{port}", "--db", str(db)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**ENV, "DRSG_TOKEN": ""},
    )
    try:
        accepted = health = 0.0
        while time.perf_counter() - started < 60:
            if not accepted:
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=1).close()
                    accepted = time.perf_counter() - started
                except OSError:
                    time.sleep(0.005)
                    continue
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=5) as answer:
                    if answer.status == 200:
                        health = time.perf_counter() - started
                        break
            except OSError:
                time.sleep(0.005)
        if not health:
            raise RuntimeError("drsg serve did not answer /health within 60 s")
        return accepted, health
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--tree", help="a package tree to time beside the installed code (see the docstring)")
    parser.add_argument("--no-pyc", action="store_true", help="compile every module's source on every start")
    parser.add_argument("--floors", action="store_true", help="also time the floors of a vector search (FLOORS)")
    parser.add_argument("--as-wheel", action="store_true", help="run this checkout without the editable finder")
    parser.add_argument("--no-record", action="store_true")
    opts = parser.parse_args()
    started = dt.datetime.now(dt.UTC)
    root = common.fresh_dir("startup")
    ENV.pop("PYTHONPYCACHEPREFIX", None)
    if opts.no_pyc:
        ENV["PYTHONDONTWRITEBYTECODE"] = "1"
    else:
        ENV.pop("PYTHONDONTWRITEBYTECODE", None)
        ENV["PYTHONPYCACHEPREFIX"] = str(root / "pycache")
    db = make_database(root)
    cmds = [other(link_tree(root)) if opts.as_wheel else DRSG, *([other(opts.tree)] if opts.tree else [])]
    for i, cmd in enumerate(cmds):  # untimed: fills the bytecode cache (and the page cache) for every column alike
        one_serve(cmd, root, f"warm-{i}")
        for _name, args in READS:
            one_read(cmd, db, args)
    steps = ["`drsg serve` → first accepted connection", "`drsg serve` → first answered `/health`"]
    steps += [f"`{name}`" for name, _ in READS]
    # plane p's 4-d index (the first plane made: "1-Doc-v-…"), which the floor's knn_query fits
    index = next(Path(f"{db}.hnsw").glob("1-*/v*/index.hnsw"), None) if opts.floors else None
    floors = [(name, [sys.executable, "-c", code.format(index=str(index))]) for name, code in FLOORS] if index else []
    floor_times: dict[str, list[float]] = {name: [] for name, _ in floors}
    times: dict[tuple[str, int], list[float]] = {(step, i): [] for step in steps for i in range(len(cmds))}
    cpu: dict[tuple[str, int], list[float]] = {(step, i): [] for step in steps[2:] for i in range(len(cmds))}
    for n in range(opts.runs):  # passes interleaved: the machine's load falls on both columns alike
        for i, cmd in enumerate(cmds):
            accepted, health = one_serve(cmd, root, f"{n}-{i}")
            times[(steps[0], i)].append(accepted)
            times[(steps[1], i)].append(health)
            for (_name, args), step in zip(READS, steps[2:], strict=True):
                wall, used = one_read(cmd, db, args)
                times[(step, i)].append(wall)
                cpu[(step, i)].append(used)
        for name, floor in floors:  # once a pass: they run no drsg tree
            started_at = time.perf_counter()
            subprocess.run(floor, check=True, capture_output=True, timeout=120, env=ENV)
            floor_times[name].append(time.perf_counter() - started_at)
    head = "| step | this checkout |" + (" --tree |" if opts.tree else "") + " target |"
    rows = [head, "|---|---|" + ("---|" if opts.tree else "") + "---|"]
    for step in steps:
        cells = " | ".join(f"{statistics.median(times[(step, i)]):.3f} s" for i in range(len(cmds)))
        rows.append(f"| {step} | {cells} | {'≤ 1 s' if 'serve' in step else '≤ 0.3 s'} |")
    for name, spent in floor_times.items():
        other_column = " — |" if opts.tree else ""
        rows.append(f"| floor: {name} | {statistics.median(spent):.3f} s (min {min(spent):.3f} s) |{other_column} — |")
    how = "compiling every module's source (`--no-pyc`)" if opts.no_pyc else "byte-compiled modules, as installed"
    how += "; this checkout without the editable finder (`--as-wheel`)" if opts.as_wheel else ""
    lines = [f"Median of {opts.runs} fresh processes each (wall time from exec), {how}.", "", *rows]
    if opts.tree:  # the load moves both columns of a pass alike: each pass's ratio, then their median
        paired = [
            f"{step.replace('`', '')} "
            f"{statistics.median(a / b for a, b in zip(times[(step, 0)], times[(step, 1)], strict=True)):.2f}×"
            for step in steps
        ]
        lines += ["", "this checkout / --tree, the median of each pass's ratio: " + "; ".join(paired)]
    used = [  # CPU time: a read's figure that a loaded machine moves least
        f"{step.replace('`', '')} "
        + " / ".join(f"{statistics.median(cpu[(step, i)]):.3f} s" for i in range(len(cmds)))
        + (
            f" ({statistics.median(a / b for a, b in zip(cpu[(step, 0)], cpu[(step, 1)], strict=True)):.2f}×)"
            if opts.tree
            else ""
        )
        for step in steps[2:]
    ]
    whose = "this checkout / --tree, paired ratio" if opts.tree else "this checkout"
    lines += ["", f"CPU time of each read's processes, median ({whose}): " + "; ".join(used)]
    print(common.append_section("Start-up: drsg serve and one-shot CLI reads", started, lines, not opts.no_record))


if __name__ == "__main__":
    main()
