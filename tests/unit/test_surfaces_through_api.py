"""The JSON-RPC server and the MCP tools call the public API (drsg.api) for what it owns; they do not
wire it themselves. No module under surfaces/server or surfaces/mcp imports the wiring behind
``Plane.search``, ``query``, ``hybrid``, ``ask``, catalog ``find``, ``vectorize_nodes``,
``Database.diff`` and a digest's preview — the searcher and its indexes, the plan and hybrid
runners, the embedder rule's choosers and cache, the catalog's one SELECT, the ask loop, a plane's
vectorize (either rule), the diff between two seqs, JSONL export and import, a digest's proposal and
its model calls — in any import form (``import x``, ``from x import y``, ``from package import
module``, inside a function, ``importlib.import_module``). The MCP tools run the server's methods in
process, so they are held through them. Checked on the source (AST) of the real tree, and shown to
catch planted copies."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.imports import imports_in, module_of_file

ROOT = Path(__file__).resolve().parents[2]
SURFACES = [ROOT / "surfaces" / "server", ROOT / "surfaces" / "mcp"]
#: what the API owns, as dotted names: a module (anything from it), or a module's name
API_OWNS = (
    "drsg.workers.search",  # Searcher: the API database's searcher is the one there is
    "drsg.workers.manager",  # IndexSet: opened by Database.open_searcher
    "drsg.workers.hybrid",  # Plane.hybrid
    "drsg.workers.plans",  # Plane.query
    "drsg.workers.cypher.run",  # Plane.cypher: a read on one snapshot (drsg.api.cypher)
    "drsg.workers.cypher.writes",  # a write statement's commit function (drsg.api.cypher)
    "drsg.pipeline.embedder_choice.choose_embedder",  # the one rule, applied by the API's calls
    "drsg.pipeline.embedder_choice.optional_embedder",
    "drsg.pipeline.embedder_choice.named_embedder",
    "drsg.pipeline.embedder_choice.EmbedderCache",  # the database's embedders
    "drsg.pipeline.catalog.find.find_answer",  # Plane.find on a catalog plane
    "drsg.pipeline.catalog.semantic.similar_in",
    "drsg.pipeline.ask",  # Plane.ask: the loop, its options, its tools
    "drsg.pipeline.vectorize",  # Plane.vectorize
    "drsg.pipeline.vectorize_plane",  # Plane.vectorize_nodes: upstream's whole-plane rule
    "drsg.store.diff.diff_plane",  # Database.diff
    "drsg.store.jsonl",  # Plane.export_jsonl / import_jsonl
    "drsg.pipeline.digest.run.digest",  # drsg.api.digest.preview: the proposal, its model calls and cache
    "drsg.pipeline.digest.run.refuse_shared",
    "drsg.pipeline.llm",  # model calls and the answer cache: the API's model_calls
    "drsg.workers.code_verbs",  # Plane.code(): the code verbs (drsg.api.code)
    "drsg.workers.code_source",
)
#: modules some of whose names the API owns: imported whole, those names would be reachable as attributes
PARTLY_OWNED = frozenset(
    {
        "drsg.pipeline.embedder_choice",
        "drsg.pipeline.catalog.find",
        "drsg.pipeline.catalog.semantic",
        "drsg.store.diff",
        "drsg.pipeline.digest.run",
    }
)


def wiring(source: str, here: str = "drsg.surfaces.server.planted") -> list[str]:
    """Each import of what the API owns, as ``line: name`` (``here``: the module ``source`` is, for
    its relative imports)."""
    out = []
    for line, name in imports_in(source, here):
        owned = any(name == own or name.startswith(own + ".") for own in API_OWNS)
        if owned or name in PARTLY_OWNED:
            out.append(f"{line}: {name}")
    return out


def _modules() -> list[Path]:
    return sorted(path for folder in SURFACES for path in folder.rglob("*.py"))


def test_the_surfaces_are_there() -> None:
    names = {path.name for path in _modules()}
    assert {"queries.py", "hybrid_method.py", "find_method.py", "cypher_method.py", "state.py", "tools.py"} <= names
    assert len(names) > 25  # the scan below looks at the real tree


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_server_or_mcp_module_wires_what_the_api_owns(path: Path) -> None:
    found = wiring(path.read_text(encoding="utf-8"), module_of_file(path))
    assert found == [], f"{path}: call drsg.api (Plane.search, hybrid, …)"


OLD_SEARCH = """
from drsg.workers.plans import run_plan
from drsg.workers.search import Hit

async def plane_query(ctx, p):
    return _hits(await ctx.read(lambda: run_plan(ctx.searcher, p["plane"], plan, embed)), p)
"""


@pytest.mark.parametrize(
    ("planted", "found"),
    [
        (OLD_SEARCH, ["2: drsg.workers.plans.run_plan", "3: drsg.workers.search.Hit"]),
        (
            "from drsg.workers.hybrid import HybridHit, hybrid\n",
            ["1: drsg.workers.hybrid.HybridHit", "1: drsg.workers.hybrid.hybrid"],
        ),
        ("def f():\n    from drsg.workers import manager\n", ["2: drsg.workers.manager"]),
        ("import drsg.workers.search as s\n", ["1: drsg.workers.search"]),
        (
            "from drsg.pipeline.embedder_choice import EmbedderCache, choose_embedder\n",
            [
                "1: drsg.pipeline.embedder_choice.EmbedderCache",
                "1: drsg.pipeline.embedder_choice.choose_embedder",
            ],
        ),
        ("from drsg.pipeline import embedder_choice\n", ["1: drsg.pipeline.embedder_choice"]),
        (
            "import importlib\nimportlib.import_module('drsg.pipeline.catalog.find')\n",
            ["2: drsg.pipeline.catalog.find"],
        ),
        (
            "def run():\n    from drsg.pipeline.catalog.find import find_answer\n",
            ["2: drsg.pipeline.catalog.find.find_answer"],
        ),
        ("from drsg.pipeline.ask.loop import ask\n", ["1: drsg.pipeline.ask.loop.ask"]),
        ("from drsg.store.diff import diff_plane\n", ["1: drsg.store.diff.diff_plane"]),
        ("from drsg.pipeline import vectorize\n", ["1: drsg.pipeline.vectorize"]),
        (
            "from drsg.pipeline.vectorize_plane import INTO, vectorize_plane\n",
            ["1: drsg.pipeline.vectorize_plane.INTO", "1: drsg.pipeline.vectorize_plane.vectorize_plane"],
        ),
        ("from drsg.pipeline.digest.run import digest\n", ["1: drsg.pipeline.digest.run.digest"]),
        ("from drsg.pipeline.llm.calls import ModelCalls\n", ["1: drsg.pipeline.llm.calls.ModelCalls"]),
        (
            "def plane_cypher(ctx, p):\n    from drsg.workers.cypher.run import run_read\n",
            ["2: drsg.workers.cypher.run.run_read"],
        ),
        ("from drsg.workers.cypher.writes import run_write\n", ["1: drsg.workers.cypher.writes.run_write"]),
        ("from drsg.workers.code_verbs import CodePlane\n", ["1: drsg.workers.code_verbs.CodePlane"]),
    ],
)
def test_a_planted_copy_is_caught(planted: str, found: list[str]) -> None:
    assert wiring(planted) == found


def test_what_stays_the_servers_is_not_counted() -> None:
    allowed = (
        "from drsg.pipeline.embedder_choice import configured_choice\n"  # the operator's choice: server config
        "from drsg.pipeline.catalog.find import run_sql\n"  # catalog.sql: no API call owns it
        "from drsg.workers.find import find_text\n"  # plane.find's text mode
        "from drsg.api.catalog import find_for\n"
        "from drsg.pipeline.digest.run import DigestOptions\n"  # digest.run's params, parsed by the server
    )
    assert wiring(allowed) == []
