"""The CLI's search commands call the public API (drsg.api) rather than wiring the search themselves:
``search``/``query`` (surfaces/cli/search.py ``_run``) run ``plane.query``, ``hybrid`` runs
``plane.hybrid``; neither builds a Searcher, opens the indexes, runs a plan or a hybrid query, or
chooses an embedder. Checked on the source (AST), and shown to catch the old wiring."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: what only the API may do for these commands: its wiring, named as the CLI used to import it
WIRING = frozenset(
    {"Searcher", "IndexSet", "open_indexes", "run_plan", "run_hybrid", "query_embedder", "make_embedder", "embedded"}
)
COMMANDS = {"surfaces/cli/search.py": ("_run", "query"), "surfaces/cli/hybrid.py": ("hybrid", "hybrid")}


def function(source: str, name: str) -> ast.FunctionDef:
    found = [n for n in ast.walk(ast.parse(source)) if isinstance(n, ast.FunctionDef) and n.name == name]
    assert len(found) == 1, name
    return found[0]


def problems(source: str, name: str, api_call: str) -> list[str]:
    """What in function ``name`` wires the search itself, or that it never calls ``.api_call(…)``."""
    body = function(source, name)
    names = {n.id for n in ast.walk(body) if isinstance(n, ast.Name)}
    out = [f"{name} uses {used}" for used in sorted(names & WIRING)]
    calls = {n.func.attr for n in ast.walk(body) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)}
    if api_call not in calls:
        out.append(f"{name} never calls .{api_call}(…)")
    return out


def test_the_search_commands_call_the_api() -> None:
    for path, (name, api_call) in COMMANDS.items():
        assert problems((ROOT / path).read_text(), name, api_call) == [], path


OLD_RUN = """
def _run(obj, plane, plan, embed, as_json):
    with obj.open(write=False) as db, open_indexes(db) as indexes:
        embedder = query_embedder(obj, db, plane, "embedding", embed)
        hits = run_plan(Searcher(db, indexes), plane, plan, lambda text: embedder.embed([text])[0])
    _print_hits(hits, as_json)
"""


def test_the_old_wiring_is_caught() -> None:
    assert problems(OLD_RUN, "_run", "query") == [
        "_run uses Searcher",
        "_run uses open_indexes",
        "_run uses query_embedder",
        "_run uses run_plan",
        "_run never calls .query(…)",
    ]
