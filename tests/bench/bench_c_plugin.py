"""The C parser plugin (build/plugins/c.wasm) over a real C tree of more than 1,000 files.

The tree: seven pinned PyPI sdists that carry C sources (Brotli, gevent with libev/libuv/c-ares, lz4,
pycares with c-ares, pycryptodome, uvloop with libuv, zstandard), downloaded once with pip into
build/bench/c-tree. The plugin is driven the way the host drives it: one file per parse call, each
in a fresh store and instance, then one assemble. Printed beside it, from the same run: the same plugin
code and tree-sitter sources compiled natively (tests/bench/c_plugin_native.c), and the ratio.
Also: what a call costs before any work (a fresh store + instantiate + describe), beside a direct
Python call of the built-in handler's parse for the same file.

    .venv/bin/python -m tests.bench.bench_c_plugin [--files N] [--no-record]

Results are printed and appended to tests/bench/RESULTS.md (``--no-record``, or DRSG_BENCH_NO_RECORD=1: printed only).
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import statistics
import subprocess
import sys
import tarfile
import time
from pathlib import Path

from drsg.pipeline.code.handler import SourceTree
from tests.bench import common
from tests.support.wasm_plugin import BUILD, REPO, ComponentPlugin, built_plugin

WORK = REPO / "build" / "bench" / "c-tree"
SDISTS = {  # name==version: sha256 of the sdist
    "brotli==1.1.0": ("Brotli-1.1.0.tar.gz", "81de08ac11bcb85841e440c13611c00b67d3bf82698314928d0b676362546724"),
    "gevent==24.11.1": ("gevent-24.11.1.tar.gz", "8bd1419114e9e4a3ed33a5bad766afff9a3cf765cb440a582a1b3a9bc80c1aca"),
    "lz4==4.3.3": ("lz4-4.3.3.tar.gz", "01fe674ef2889dbb9899d8a67361e0c4a2c833af5aeb37dd505727cf5d2a131e"),
    "pycares==4.4.0": ("pycares-4.4.0.tar.gz", "f47579d508f2f56eddd16ce72045782ad3b1b3b678098699e2b6a1b30733e1c2"),
    "pycryptodome==3.21.0": (
        "pycryptodome-3.21.0.tar.gz",
        "f7787e0d469bdae763b876174cf2e6c0f7be79808af26b1da96f1a64bcf47297",
    ),
    "uvloop==0.21.0": ("uvloop-0.21.0.tar.gz", "3bf12b0fda68447806a7ad847bfa591613177275d35b6724b1ee573faa3704e3"),
    "zstandard==0.23.0": (
        "zstandard-0.23.0.tar.gz",
        "b2d8c62d08e7255f68f7a740bae85b3c9b8e5466baa9cbf7f57f1cde0ac6bc09",
    ),
}


def c_tree() -> Path:
    """build/bench/c-tree/tree: the sdists' contents, each checked against its pinned hash."""
    sdists, tree = WORK / "sdists", WORK / "tree"
    sdists.mkdir(parents=True, exist_ok=True)
    for spec, (filename, sha256) in SDISTS.items():
        archive = sdists / filename
        if not archive.exists():
            pip = [sys.executable, "-m", "pip", "download", "-q", "--no-binary", ":all:", "--no-deps", spec]
            subprocess.run([*pip, "-d", str(sdists)], check=True)
        digest = hashlib.sha256(archive.read_bytes()).hexdigest()
        if digest != sha256:
            raise SystemExit(f"{archive} has sha256 {digest}, expected {sha256}")
        target = tree / filename.removesuffix(".tar.gz")
        if not target.exists():
            with tarfile.open(archive) as tar:
                tar.extractall(tree, filter="data")
    return tree


def native_binary() -> Path:
    """The plugin's code compiled natively (-O2, the same flags but for the target)."""
    out = WORK / "c_plugin_native"
    ts = BUILD / "src" / "tree-sitter-0.23.2" / "tree_sitter" / "core" / "lib"
    grammar = BUILD / "src" / "tree_sitter_c-0.23.4" / "src" / "parser.c"
    guest, plugin = REPO / "plugins" / "guest", REPO / "plugins" / "c"
    sources = [
        REPO / "tests" / "bench" / "c_plugin_native.c",
        guest / "runtime.c",
        guest / "json.c",
        guest / "lz.c",
        plugin / "c_parse.c",
        plugin / "c_assemble.c",
        plugin / "c_cond.c",
        ts / "src" / "lib.c",
        grammar,
    ]
    if out.exists() and all(out.stat().st_mtime > s.stat().st_mtime for s in sources):
        return out
    cmd = ["clang", "-O2", "-DNDEBUG", "-w", f"-I{guest}", f"-I{ts / 'include'}", f"-I{ts / 'src'}"]
    cmd += [f"-I{BUILD / 'include'}", *map(str, sources), "-o", str(out)]
    subprocess.run(cmd, check=True)
    return out


def wasm_run(
    plugin: ComponentPlugin, tree: SourceTree, files: list[str], mib: float, title: str, lines: list[str]
) -> tuple:
    """One pass the host's way; adds its figures to ``lines`` and returns (seconds, facts, parse seconds, notes)."""
    started = time.perf_counter()
    partials = [plugin.parse(tree, [f]) for f in files]
    parse_s = time.perf_counter() - started
    started = time.perf_counter()
    out = plugin.assemble(tree, partials)
    assemble_s = time.perf_counter() - started
    facts = len(out.nodes) + len(out.edges)
    total = parse_s + assemble_s
    lines.append(f"{title}:")
    lines.append(
        f"  parse {parse_s:.2f} s ({len(files)} calls, each a fresh store and instance), assemble {assemble_s:.2f} s "
        f"(the output lifted and checked); partials {sum(map(len, partials)) / (1 << 20):.2f} MiB"
    )
    lines.append(
        f"  {len(files) / total:,.0f} files/s, {mib / total:.2f} MiB/s, {facts / total:,.0f} facts/s "
        f"({len(out.nodes):,} nodes, {len(out.edges):,} edges)"
    )
    return total, facts, parse_s, out.report.notes


def _direct_call_floor() -> float:
    """The median time of the built-in Python handler's parse of an empty file: no sandbox at all."""
    import tempfile

    from drsg.pipeline.code.python_handler import PythonHandler

    handler = PythonHandler()
    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "empty.py").write_text("")
        tree = SourceTree(Path(folder), ["empty.py"])
        times = []
        for _ in range(200):
            started = time.perf_counter()
            handler.parse(tree, ("empty.py",), ())
            times.append(time.perf_counter() - started)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=0, help="use only the first N files (0: all)")
    parser.add_argument("--no-record", action="store_true", help="print only; do not append to RESULTS.md")
    args = parser.parse_args()
    began = dt.datetime.now(dt.UTC)
    out: list[str] = []

    wasm = built_plugin("c")
    tree_root = c_tree()
    files = sorted(p.relative_to(tree_root).as_posix() for p in tree_root.rglob("*") if p.suffix in (".c", ".h"))
    if args.files:
        files = files[: args.files]
    size = sum((tree_root / f).stat().st_size for f in files)
    mib = size / (1 << 20)
    out.append(f"tree: {len(files)} files, {mib:.1f} MiB of C ({', '.join(SDISTS)})")

    plugin = ComponentPlugin(wasm)
    # what one call costs with no work: a fresh store, instantiate, describe
    overhead = []
    for _ in range(50):
        started = time.perf_counter()
        plugin.describe()
        overhead.append(time.perf_counter() - started)
    direct = _direct_call_floor()
    floor = statistics.median(overhead)
    out.append(
        f"per call, before any work (store + instantiate + describe): median {floor * 1e3:.2f} ms; "
        f"a direct Python call of the built-in handler's parse on an empty file: {direct * 1e3:.3f} ms "
        f"({floor / direct:.0f}x)"
    )

    tree = SourceTree(tree_root, files)
    total, facts, parse_s, notes = wasm_run(plugin, tree, files, mib, "wasm, through drsg's plugin host", out)

    native = native_binary()
    ran = subprocess.run([str(native), str(tree_root)], input="\n".join(files) + "\n", capture_output=True, text=True)
    figures = json.loads(ran.stdout)
    native_s = figures["parse_s"] + figures["assemble_s"]
    native_facts = figures["nodes"] + figures["edges"]
    out.append(
        f"native: parse {figures['parse_s']:.2f} s, assemble {figures['assemble_s']:.2f} s: "
        f"{len(files) / native_s:,.0f} files/s, {mib / native_s:.2f} MiB/s, {native_facts / native_s:,.0f} facts/s"
    )
    same = "equal" if native_facts == facts else "DIFFERENT, though it is the same code"
    out.append(f"native facts {native_facts:,} vs wasm {facts:,}: {same}")
    out.append(
        f"largest partial (native, compressed): {figures['largest_partial']:,} bytes, {figures['largest_partial_file']}"
    )
    out.append(
        f"ratio wasm/native time: {total / native_s:.2f}x (parse calls alone, store and instance included: "
        f"{parse_s / figures['parse_s']:.2f}x)"
    )
    for note in notes:
        out.append(f"  note: {note}")
    common.append_section("The C parser plugin on a real C tree", began, ["```", *out, "```"], not args.no_record)


if __name__ == "__main__":
    main()
