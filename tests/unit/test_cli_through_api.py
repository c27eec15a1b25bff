"""The CLI's commands that have a Python API call (drsg.api) parse their flags, call it and render
its answer: none builds a Searcher, opens the indexes, runs a plan, a hybrid query, a vectorize, an
ask, a find or a feed, chooses an embedder or a chat model, or writes and reads the store itself
(``db.write``, ``db.snapshot``, ``db.read``). Checked on the source (AST): each command calls its API
method and uses none of that wiring, and no module of the CLI imports the wiring's modules — shown
to catch the old code."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.support.imports import imports_in

ROOT = Path(__file__).resolve().parents[2]
CLI = ROOT / "surfaces" / "cli"
#: what only the API may do for these commands: its wiring, named as the CLI used to import it
WIRING = frozenset(
    {
        "Searcher",
        "IndexSet",
        "open_indexes",
        "run_plan",
        "run_hybrid",
        "query_embedder",
        "make_embedder",
        "named_embedder",
        "choose_embedder",
        "optional_embedder",
        "embedded",
        "run_read",  # Plane.cypher's: a read on one snapshot, a write in one commit
        "run_write",
        "vectorize",
        "ensure_vector_indexes",
        "run_ask",
        "AskOptions",
        "ModelCalls",
        "find_answer",
        "similar_in",
        "backend_for",
        "sensitive_names",
        "Subscription",
        "subscribe",
        "diff_plane",
        "resolve_point",
        "import_jsonl",
        "export_jsonl",
        "WriteTx",
        "Snapshot",
        "DigestOptions",
        "decided_by",
        "refuse_shared",
        "read_source",
        "ParseMemo",
        "AnswerCache",
        "PreviewStore",
        "digest",  # the pipeline's, called bare; the API's is db.digest(…)
        "CodePlane",  # the code verbs on a snapshot: Plane.code()'s
    }
)
#: the store's own reads and writes, which the API's calls make for these commands
STORE_CALLS = frozenset({"write", "snapshot", "read"})
#: module → {command function: the API calls it makes (each at least once)}
COMMANDS: dict[str, dict[str, set[str]]] = {
    "search.py": {"_run": {"query"}, "vectorize_cmd": {"plane", "vectorize"}},
    "hybrid.py": {"hybrid": {"hybrid"}},
    "ask.py": {"ask": {"plane", "ask"}},
    "cypher.py": {"cypher": {"plane", "cypher"}},
    "records.py": {
        "get": {"plane", "get"},
        "node_put": {"plane", "put"},
        "node_delete": {"plane", "delete"},
        "node_history": {"plane", "history"},
        "edge_put": {"plane", "link"},
        "edge_delete": {"plane", "unlink"},
        "neighbors": {"plane", "get", "neighbours"},
    },
    "diff.py": {"diff": {"diff"}},
    "bulk.py": {"import_cmd": {"import_jsonl"}, "export_cmd": {"plane", "export_jsonl"}},
    "feed.py": {"feed": {"feed"}},
    "planes.py": {
        "plane_list": {"planes", "counts"},
        "plane_create": {"create_plane"},
        "plane_show": {"plane", "summary"},
        "plane_rename": {"plane", "rename"},
        "plane_drop": {"plane", "drop"},
        "plane_set_props": {"plane", "set_props"},
    },
    "catalog.py": {"_run_find": {"find_for"}},
    "digest.py": {"run_digest": {"digest"}},  # `drsg digest` and `init`'s digest: Database.digest
    "code.py": {"_run": {"plane", "code"}},  # `drsg code …`: Plane.code()
}
#: modules whose work the API does: no module of the CLI imports them
WIRING_MODULES = frozenset(
    {
        "drsg.workers.search",
        "drsg.workers.plans",
        "drsg.pipeline.vectorize",
        "drsg.pipeline.ask.loop",
        "drsg.pipeline.catalog.find",
        "drsg.feed.subscription",
        "drsg.workers.cypher.run",
        "drsg.workers.cypher.writes",
        "drsg.workers.code_verbs",
        "drsg.workers.code_source",
    }
)
#: what still imports a wiring module, and why: commands the API has no call for
STILL_WIRED = {
    ("catalog.py", "drsg.workers.search"): "catalog search: a catalog's fused search, no API call yet",
    ("catalog.py", "drsg.pipeline.catalog.find"): "catalog sql: a checked SELECT, no API call",
    ("evaluate.py", "drsg.workers.search"): "evaluate: scores a search set, no API call",
}


#: what Database.digest does for `drsg digest` and `init` (reading, model calls, embedder, previews,
#: apply), as dotted names: a module, or a module's name; neither module imports any of it
DIGEST_WIRING = (
    "drsg.pipeline.digest.run.digest",
    "drsg.pipeline.digest.run.DigestOptions",
    "drsg.pipeline.digest.run.decided_by",
    "drsg.pipeline.digest.run.refuse_shared",
    "drsg.pipeline.digest.ledger.apply",
    "drsg.pipeline.digest.sources.read_source",
    "drsg.pipeline.code.parsed",
    "drsg.pipeline.llm",
    "drsg.pipeline.embedder_choice",
    "drsg.surfaces.cli.search.query_embedder",
)
#: modules the digest's CLI takes pure names from (check_mode, NO_PROSE, forget, …): never imported whole
DIGEST_PARTLY = frozenset({"drsg.pipeline.digest.run", "drsg.pipeline.digest.ledger", "drsg.pipeline.digest.sources"})


def digest_wiring(source: str, here: str) -> list[str]:
    """Each import of the digest's wiring in ``source`` (read as the module ``here``), as ``line: name``."""
    out = []
    for line, name in imports_in(source, here):
        if name in DIGEST_PARTLY or any(name == own or name.startswith(own + ".") for own in DIGEST_WIRING):
            out.append(f"{line}: {name}")
    return out


def function(source: str, name: str) -> ast.FunctionDef:
    found = [n for n in ast.walk(ast.parse(source)) if isinstance(n, ast.FunctionDef) and n.name == name]
    assert len(found) == 1, name
    return found[0]


def problems(source: str, name: str, api_calls: set[str]) -> list[str]:
    """What in function ``name`` wires the work itself, and which of ``.api_calls(…)`` it never makes."""
    body = function(source, name)
    names = {n.id for n in ast.walk(body) if isinstance(n, ast.Name)}
    out = [f"{name} uses {used}" for used in sorted(names & WIRING)]
    calls = {n.func.attr for n in ast.walk(body) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)}
    calls |= {n.func.id for n in ast.walk(body) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
    out += [f"{name} calls .{used}(…) on the store" for used in sorted(calls & STORE_CALLS)]
    out += [f"{name} never calls .{call}(…)" for call in sorted(api_calls - calls)]
    return out


def wiring_imports(source: str) -> set[str]:
    """The wiring modules ``source`` imports (at its top or inside a function)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return found & WIRING_MODULES


def test_the_commands_call_the_api() -> None:
    for module, commands in COMMANDS.items():
        source = (CLI / module).read_text()
        for name, api_calls in commands.items():
            assert problems(source, name, api_calls) == [], f"{module}:{name}"


def test_digest_and_init_import_none_of_the_digests_wiring() -> None:
    for module in ("digest", "init"):
        source = (CLI / f"{module}.py").read_text()
        assert digest_wiring(source, f"drsg.surfaces.cli.{module}") == [], module


def test_no_cli_module_imports_what_the_api_wires() -> None:
    found = {(path.name, module) for path in sorted(CLI.glob("*.py")) for module in wiring_imports(path.read_text())}
    assert found == set(STILL_WIRED)


OLD_RUN = """
def _run(obj, plane, plan, embed, as_json):
    with obj.open(write=False) as db, open_indexes(db) as indexes:
        embedder = query_embedder(obj, db, plane, "embedding", embed)
        hits = run_plan(Searcher(db, indexes), plane, plan, lambda text: embedder.embed([text])[0])
    _print_hits(hits, as_json)
"""

OLD_GET = """
def get(obj, ref, plane, as_of, as_json):
    with obj.open(write=False) as db, db.snapshot(as_of) as snap:
        node = _find(snap, plane, ref)
        _show_node(node, as_json)
"""

OLD_ASK = """
def ask(obj, question, plane, **flags):
    from drsg.pipeline.ask.loop import AskOptions
    from drsg.pipeline.ask.loop import ask as run_ask
    from drsg.workers.search import Searcher

    calls = ModelCalls.for_chat(flags["chat"], flags["model"], flags["chat_url"], flags["chat_key_env"])
    with obj.open(write=False) as db, open_indexes(db) as indexes:
        result = run_ask(db, Searcher(db, indexes), plane, question, calls, None, AskOptions())
"""


OLD_CYPHER = """
def cypher(obj, statement, plane, params, as_of, as_json):
    from drsg.workers.cypher.run import run_read
    from drsg.workers.cypher.writes import run_write

    prepared = prepare(statement)
    with obj.open(write=prepared.writes) as db, open_indexes(db) as indexes:
        if prepared.writes:
            result = db.write(lambda tx: run_write(tx, plane, prepared, params)).value
        else:
            result = run_read(Searcher(db, indexes), plane, prepared, params, as_of=as_of)
"""


PLANTED_CODE = """
def _run(obj, plane, as_of, as_json, verb):
    from drsg.workers.code_verbs import CodePlane

    with obj.open(write=False) as db, db.snapshot(as_of) as snap:
        answer = verb(CodePlane(snap, snap.plane(plane)))
"""


def test_code_verbs_wired_in_the_cli_are_caught() -> None:
    assert problems(PLANTED_CODE, "_run", {"plane", "code"}) == [
        "_run uses CodePlane",
        "_run calls .snapshot(…) on the store",
        "_run never calls .code(…)",
    ]
    assert wiring_imports(PLANTED_CODE) == {"drsg.workers.code_verbs"}


def test_the_old_wiring_is_caught() -> None:
    assert problems(OLD_RUN, "_run", {"query"}) == [
        "_run uses Searcher",
        "_run uses open_indexes",
        "_run uses query_embedder",
        "_run uses run_plan",
        "_run never calls .query(…)",
    ]
    assert problems(OLD_GET, "get", {"plane", "get"}) == [
        "get calls .snapshot(…) on the store",
        "get never calls .get(…)",
        "get never calls .plane(…)",
    ]
    assert problems(OLD_ASK, "ask", {"plane", "ask"}) == [
        "ask uses AskOptions",
        "ask uses ModelCalls",
        "ask uses Searcher",
        "ask uses open_indexes",
        "ask uses run_ask",
        "ask never calls .ask(…)",
        "ask never calls .plane(…)",
    ]
    assert wiring_imports(OLD_ASK) == {"drsg.pipeline.ask.loop", "drsg.workers.search"}
    assert problems(OLD_CYPHER, "cypher", {"plane", "cypher"}) == [
        "cypher uses Searcher",
        "cypher uses open_indexes",
        "cypher uses run_read",
        "cypher uses run_write",
        "cypher calls .write(…) on the store",
        "cypher never calls .cypher(…)",
        "cypher never calls .plane(…)",
    ]
    assert wiring_imports(OLD_CYPHER) == {"drsg.workers.cypher.run", "drsg.workers.cypher.writes"}


OLD_RUN_DIGEST = """
def run_digest(obj, source, plane, flags, read=None, doc=None):
    from drsg.pipeline.digest.ledger import apply
    from drsg.pipeline.digest.proposal import PreviewStore
    from drsg.pipeline.digest.run import DigestOptions, decided_by, digest, refuse_shared
    from drsg.pipeline.digest.sources import read_source
    from drsg.pipeline.llm.cache import AnswerCache
    from drsg.pipeline.llm.calls import ModelCalls
    from drsg.surfaces.cli.search import query_embedder

    options = DigestOptions(flags["mode"], flags["chunk_chars"], flags["concurrency"])
    doc = doc or read_source(source, None, obj.settings)
    calls = ModelCalls.for_chat(flags["chat"], flags["model"], settings=obj.settings, cache=AnswerCache(".c"))
    with obj.open(write=True) as db:
        embedder = query_embedder(obj, db, plane, "embedding", None, "write")
        proposal = PreviewStore(".p").load(plane, doc.name, decided_by(doc, options, calls.model, embedder))
        refuse_shared(db, doc, plane)
        proposal = proposal or digest(db, doc, plane, options, calls, embedder)
        return apply(db, proposal)
"""


def test_the_old_digest_wiring_is_caught() -> None:
    assert problems(OLD_RUN_DIGEST, "run_digest", {"digest"}) == [
        "run_digest uses AnswerCache",
        "run_digest uses DigestOptions",
        "run_digest uses ModelCalls",
        "run_digest uses PreviewStore",
        "run_digest uses decided_by",
        "run_digest uses digest",
        "run_digest uses query_embedder",
        "run_digest uses read_source",
        "run_digest uses refuse_shared",
    ]
    assert digest_wiring(OLD_RUN_DIGEST, "drsg.surfaces.cli.digest") == [
        "3: drsg.pipeline.digest.ledger.apply",
        "5: drsg.pipeline.digest.run.DigestOptions",
        "5: drsg.pipeline.digest.run.decided_by",
        "5: drsg.pipeline.digest.run.digest",
        "5: drsg.pipeline.digest.run.refuse_shared",
        "6: drsg.pipeline.digest.sources.read_source",
        "7: drsg.pipeline.llm.cache.AnswerCache",
        "8: drsg.pipeline.llm.calls.ModelCalls",
        "9: drsg.surfaces.cli.search.query_embedder",
    ]
    assert digest_wiring("import drsg.pipeline.digest.run\n", "drsg.surfaces.cli.init") == [
        "1: drsg.pipeline.digest.run"
    ]
