"""What `drsg serve` and a one-shot CLI read load before they answer: none of the heavy libraries.

The issue measured `drsg serve` at 8–28 s to its first connection under load, importing ``openai``
alone 7 s. Each probe runs the real command in a fresh interpreter (the `drsg` group's own entry,
without the crash supervisor's fork) and lists which of the heavy modules are loaded: for a read,
when it has printed its answer; for `serve`, at the moment it announces it is listening (the MCP
SDK loads after that, in the background; a model client when a call needs one).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

#: what a read or the server's start needs none of: model clients, the local model, the keyword index,
#: the plugin host, the MCP SDK, rich (structlog's pretty tracebacks: kernel/logs.py loads it on the
#: first console traceback), Prometheus' client (/metrics writes its text format itself)
HEAVY = ("openai", "onnxruntime", "tokenizers", "tantivy", "wasmtime", "mcp", "rich", "prometheus_client")
#: a read of records needs no vectors either (a Cypher MATCH builds a Searcher, which loads numpy and
#: hnswlib only for a search), nor the source-tree walk (pathspec: a digest's, not a `synced:` line's)
RECORDS = (*HEAVY, "numpy", "hnswlib", "pathspec")
#: and a read that is not Cypher parses none (lark), nor loads the plan language (its types: ~0.02 s)
NOT_CYPHER = (*RECORDS, "lark", "drsg.plan.logical")
#: a one-shot command runs no event loop: asyncio (≈0.02 s; structlog binds it, kernel/imports.py defers
#: it; the store imports it where a coroutine runs) and ssl with it; structlog's greenlet support is
#: for a context drsg never keeps (≈5 ms); lark reads drsg's grammar with the stdlib's re, not `regex`
#: (≈8 ms); a read that embeds no text (a search NEAR a vector included) loads no embedder (≈0.02 s); and
#: settings without a config file or a size with a fraction load neither tomllib nor fractions (≈3 ms)
ONE_SHOT = ("asyncio", "ssl", "greenlet", "regex", "drsg.models.embedders", "fractions", "tomllib")
#: a read that writes no file (no sidecar saved, no scratch file for the C walk's check: `get` and
#: `stats` make one) loads no tempfile, shutil (with bz2, lzma) or socket: ≈6 ms
NO_FILES = ("tempfile", "shutil", "socket")
#: a SEARCH statement's hits are plain ones: the hybrid query's module and fusion (with its C part,
#: ≈3 ms) load for a HYBRID statement alone
NOT_HYBRID = ("drsg.workers.hybrid", "drsg.workers.fusion")
#: a SEARCH, HYBRID or CALL statement with no tail is its plan's source: the Cypher compiler (row
#: plans, function table, aggregates, values: ≈0.01 s) loads for `drsg cypher` and a tail alone
NOT_COMPILED = ("drsg.plan.cypher.compile", "drsg.plan.cypher.rows", "drsg.plan.cypher.functions")

_PROBE = """
import sys
from drsg.surfaces.cli.main import cli
try:
    cli.main({args!r}, prog_name="drsg")
except SystemExit as exc:
    assert not exc.code, exc.code
print(sorted(m for m in {heavy!r} if m in sys.modules))
"""

# `drsg serve`: list the modules when the listening line is announced, then stop as SIGTERM would
_SERVE_PROBE = """
import os, signal, sys, click
from drsg.surfaces.cli.main import cli
plain = click.echo
def echo(message=None, *args, **kwargs):
    plain(message, *args, **kwargs)
    if isinstance(message, str) and message.startswith("serving "):
        print("LOADED", sorted(m for m in {heavy!r} if m in sys.modules), flush=True)
        os.kill(os.getpid(), signal.SIGTERM)
click.echo = echo
cli.main({args!r}, prog_name="drsg")
"""


def _run(probe: str) -> list[str]:
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    line = [ln for ln in done.stdout.splitlines() if ln.startswith(("[", "LOADED"))][-1]
    return eval(line.removeprefix("LOADED "))  # type: ignore[no-any-return]  # a list literal we print


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = str(tmp_path_factory.mktemp("startup") / "g.drsg")
    vector = ["-P", 'e={"$vector":[1,0,0,0]}']
    for args in (
        ["plane", "create", "p"],
        ["node", "put", "-p", "p", "-l", "Doc", "-P", "name=Ada", "a"],
        ["plane", "create", "v"],
        ["index", "ensure", "-p", "v", "Doc", "e"],  # saves the index's sidecar, which the search loads
        ["node", "put", "-p", "v", "-l", "Doc", *vector, "a"],
        ["search", "-p", "v", "SEARCH (d:Doc) ON e NEAR [1, 0, 0, 0] TOPK 1"],  # saves it holding the node
    ):
        assert _run(_PROBE.format(args=["--db", path, *args], heavy=())) == []
    return path


@pytest.mark.parametrize(
    ("args", "unwanted"),
    [
        (["get", "-p", "p", "@a"], NOT_CYPHER),
        (["plane", "list"], (*NOT_CYPHER, *NO_FILES)),
        (["stats"], NOT_CYPHER),
        (["cypher", "-p", "p", "MATCH (n:Doc) RETURN n.name"], (*RECORDS, *NO_FILES)),
        # a vector search needs numpy and hnswlib; not the keyword analyser (tantivy, snowballstemmer)
        (
            ["search", "-p", "p", "SEARCH (d:Doc) ON v NEAR [1, 0] TOPK 1"],
            (*HEAVY, "snowballstemmer", "pathspec", *NO_FILES, *NOT_COMPILED),
        ),
        # a search finding hits in a vector index loaded from its sidecar (plane v; plane p has no
        # index: its search finds nothing, and the hint that says why reads vectors as hybrid does)
        (
            ["search", "-p", "v", "SEARCH (d:Doc) ON e NEAR [1, 0, 0, 0] TOPK 1"],
            (*HEAVY, "snowballstemmer", "pathspec", *NOT_HYBRID, *NOT_COMPILED),
        ),
    ],
    ids=["get", "plane-list", "stats", "cypher", "search", "vector-search"],
)
def test_a_one_shot_read_loads_no_heavy_library(db: str, args: list[str], unwanted: tuple[str, ...]) -> None:
    assert _run(_PROBE.format(args=["--db", db, *args], heavy=(*unwanted, *ONE_SHOT))) == []


def test_serve_listens_before_loading_any_heavy_library(tmp_path: Path) -> None:
    empty = str(tmp_path / "empty.drsg")
    assert _run(_PROBE.format(args=["--db", empty, "plane", "create", "p"], heavy=())) == []
    # the MCP SDK starts loading in the background as the server starts: not checked here
    # (the server's methods are typed in the plan language: it loads, the parser does not)
    unwanted = tuple(m for m in (*RECORDS, "lark") if m != "mcp")
    args = ["--db", empty, "serve", "--addr", "127.0.0.1:0"]
    assert _run(_SERVE_PROBE.format(args=args, heavy=unwanted)) == []


def test_mcp_tools_are_not_imported_by_the_server_application() -> None:
    """`/mcp` is installed without the SDK: it loads after the socket listens (surfaces/mcp/http.py)."""
    probe = "import drsg.surfaces.app\nprint(sorted(m for m in ('mcp', 'drsg.surfaces.mcp.tools') if m in sys.modules))"
    assert _run("import sys\n" + probe) == []
