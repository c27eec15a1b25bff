"""Folding a changing working tree into a plane: after every step the plane is what a fresh full
digest of the tree would make (byte-identical canonical export), while a fold writes only what
changed.

The folds run in-process (``TreeSync``, the daemon's engine); the daemon itself, its notifications,
signals and kill -9 are in test_watch_daemon.py.
"""

from __future__ import annotations

import itertools
import json
import os
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from drsg.kernel.errors import DrsgError
from drsg.kernel.values import Vector
from drsg.models.chat.providers import chat_identity, get_chat
from drsg.models.embedders.registry import get_embedder
from drsg.pipeline.code.handlers import builtin_handlers
from drsg.pipeline.code.parsed import ParseMemo
from drsg.pipeline.digest.run import DigestOptions
from drsg.pipeline.digest.sources import TreeOptions
from drsg.pipeline.digest.sync import FoldReport, TreeSync
from drsg.pipeline.llm.cache import AnswerCache
from drsg.pipeline.llm.calls import ModelCalls
from drsg.store.database import Database
from drsg.store.mutations import EdgePut, NodeDelete, NodePut
from tests.support.code_planes import canonical, fresh_export
from tests.support.fake_openai import FakeOpenAI, error
from tests.support.git_tree import commit_tree, git
from tests.support.scripted_model import ScriptedModel

PLANE = "proj"

BASE = {
    "pkg/__init__.py": "from .core import Engine\n\n__all__ = ['Engine']\n",
    "pkg/core.py": (
        "from .util import helper\n\n\nclass Engine:\n    def run(self):\n        return helper(self.step())\n\n"
        "    def step(self):\n        return 1\n"
    ),
    "pkg/util.py": "def helper(x):\n    return x + 1\n\n\nLIMIT = 3\n",
    "README.md": "# proj\n\nprose the daemon leaves for a model\n",
}


def _sync(db: Database, root: Path, memo: ParseMemo | None = None) -> TreeSync:
    return TreeSync(
        db, root, PLANE, TreeOptions(), handlers=builtin_handlers(), memo=memo or ParseMemo(), ident=uuid.uuid4().hex
    )


def _converged(db: Database, root: Path, scratch: Path) -> None:
    expected = fresh_export(root, PLANE, scratch)
    got = canonical(db, PLANE)
    assert got == expected, _difference(got, expected)


def _difference(got: list[str], expected: list[str]) -> str:
    extra = sorted(set(got) - set(expected))[:3]
    missing = sorted(set(expected) - set(got))[:3]
    return f"the folded plane differs from a fresh digest: extra {extra}, missing {missing}"


def _written(db: Database, report: FoldReport) -> int:
    """How many node and edge records the fold's commit wrote."""
    if not report.seq:
        return 0
    [commit] = list(db.commits(report.seq, report.seq))
    return sum(isinstance(m, NodePut | NodeDelete | EdgePut) for m in commit.mutations)


def test_a_scripted_history_converges_after_every_step(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    first = commit_tree(root, BASE)
    steps = [
        ("edit", lambda: (root / "pkg/util.py").write_text("def helper(x):\n    return x + 2\n\n\nLIMIT = 4\n")),
        (
            "new file",
            lambda: (root / "pkg/extra.py").write_text("from .util import helper\n\ndef go():\n    return helper(1)\n"),
        ),
        ("label change", lambda: (root / "pkg/extra.py").write_text("class go:\n    pass\n")),
        ("delete", lambda: (root / "pkg/extra.py").unlink()),
        ("rename", lambda: git(root, "mv", "pkg/util.py", "pkg/tools.py")),
        ("fix the import", lambda: _replace(root / "pkg/core.py", ".util", ".tools")),
        ("commit", lambda: git(root, "commit", "-qam", "rename util")),
        ("branch switch", lambda: git(root, "checkout", "-q", first)),
        ("back", lambda: git(root, "checkout", "-q", "-")),
        ("diverge", lambda: _commit_on_branch(root, first)),
        ("rebase", lambda: git(root, "rebase", "-q", "main")),
        ("package gone", lambda: (root / "pkg/__init__.py").unlink()),
        ("binary and big", lambda: _awkward_files(root)),
    ]
    git(root, "branch", "-M", "main")
    with Database(tmp_path / "w.drsg") as db:
        sync = _sync(db, root)
        start = sync.fold()
        assert start.full and start.nodes_created > 5
        _converged(db, root, tmp_path)
        again = sync.fold()
        assert again.seq == 0, "an unchanged tree writes nothing"
        assert again.parsed == 0 and again.reused == 3
        for name, step in steps:
            step()
            report = sync.fold()
            _converged(db, root, tmp_path)
            assert not report.full, f"{name}: a fold of a change writes the change, not the tree"
        plane = db.plane(PLANE)
        assert plane.props["synced_commit"] == git(root, "rev-parse", "HEAD").strip()


def test_a_one_file_edit_writes_only_that_files_records(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    files = {
        f"pkg/m{i}.py": f"def f{i}():\n    return {i}\n\n\nclass C{i}:\n    def m(self):\n        return f{i}()\n"
        for i in range(40)
    }
    commit_tree(root, {**files, "pkg/__init__.py": ""})
    with Database(tmp_path / "w.drsg") as db:
        sync = _sync(db, root)
        full = sync.fold()
        (root / "pkg/m7.py").write_text(
            "def f7(x=0):\n    return x\n\n\nclass C7:\n    def m(self):\n        return f7()\n"
        )
        report = sync.fold()
        assert (report.parsed, report.reused) == (1, 40)
        assert _written(db, report) == 1, "one signature changed: one record is written, not the file's or the plane's"
        assert _written(db, full) > 200
        _converged(db, root, tmp_path)


def test_another_writer_on_the_plane_is_folded_over(tmp_path: Path) -> None:
    """A node a parser owns edited or deleted by someone else: the next fold states the whole tree
    again (it cannot trust what it remembers), and the plane converges."""
    root = tmp_path / "proj"
    commit_tree(root, BASE)
    with Database(tmp_path / "w.drsg") as db:
        sync = _sync(db, root)
        sync.fold()

        def vandalise(tx) -> None:  # type: ignore[no-untyped-def]
            plane = tx.plane(PLANE)
            tx.delete_node(plane, tx.view.node_id_by_key(plane.id, "pkg.util.helper"))
            tx.update_node(plane, tx.view.node_id_by_key(plane.id, "pkg.core.Engine"), {"line": 99})

        db.write(vandalise, {"via": "cli"})
        report = sync.fold()
        assert report.full and report.seq
        _converged(db, root, tmp_path)


def test_a_restarted_daemon_reuses_the_parses_on_disk_and_converges(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    commit_tree(root, BASE)
    cache = tmp_path / "parsed"
    with Database(tmp_path / "w.drsg") as db:
        _sync(db, root, ParseMemo(cache)).fold()
        (root / "pkg/util.py").write_text("def helper(x):\n    return x * 2\n")  # while nobody watched
        restarted = _sync(db, root, ParseMemo(cache))
        report = restarted.fold()
        assert report.full and (report.parsed, report.reused) == (1, 2)
        _converged(db, root, tmp_path)


def test_trees_that_fight_back_never_stop_a_fold(tmp_path: Path) -> None:
    """A symlink loop, a binary with a code extension, a sparse 1 GiB file, a file that is not
    UTF-8, and a file deleted between the walk and its read: each is logged as a note or skipped,
    and the fold goes on and converges."""
    root = tmp_path / "proj"
    commit_tree(root, BASE)
    (root / "loop").symlink_to(root)
    (root / "pkg/blob.py").write_bytes(b"\x00\x01\x02" * 1000)
    with open(root / "pkg/huge.py", "wb") as out:
        out.truncate(1 << 30)
    (root / "pkg/latin.py").write_bytes("x = 'caf\xe9'\n".encode("latin-1"))
    with Database(tmp_path / "w.drsg") as db:
        sync = _sync(db, root)
        report = sync.fold()
        assert report.seq
        _converged(db, root, tmp_path)
        vanishing = root / "pkg/vanishing.py"
        vanishing.write_text("def v():\n    pass\n")
        original = sync.handlers[0].parse

        def parse_after_delete(tree, subject, options):  # type: ignore[no-untyped-def]
            vanishing.unlink(missing_ok=True)  # gone between the walk and the read
            return original(tree, subject, options)

        sync.handlers[0].parse = parse_after_delete  # type: ignore[method-assign]
        sync.fold()  # must not raise
        sync.handlers[0].parse = original  # type: ignore[method-assign]
        sync.fold()
        _converged(db, root, tmp_path)


# ----------------------------------------------------------------------------- random histories

MODULES = ("a", "b", "c", "d")
BODIES = st.sampled_from(
    [
        "def f():\n    return 1\n",
        "from .{other} import f as g\n\ndef f():\n    return g()\n",
        "from .{other} import *\n\nclass K:\n    def m(self):\n        return f()\n",
        "class f:\n    def __init__(self):\n        self.x = 1\n",
        "import os\n\nCONST = 1\n\ndef h(x: int) -> int:\n    return os.sep * x\n",
        "def f(:\n",  # a syntax error: the file is skipped and counted
    ]
)
OPS = st.one_of(
    st.tuples(st.just("write"), st.sampled_from(MODULES), BODIES, st.sampled_from(MODULES)),
    st.tuples(st.just("delete"), st.sampled_from(MODULES)),
    st.tuples(st.just("rename"), st.sampled_from(MODULES), st.sampled_from(MODULES)),
    st.tuples(st.just("init"), st.booleans()),
    st.tuples(st.just("commit")),
    st.tuples(st.just("checkout")),
)
_runs = itertools.count()


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(OPS, min_size=1, max_size=8))
def test_any_edit_sequence_converges(tmp_path: Path, ops: list[tuple]) -> None:  # type: ignore[type-arg]
    run = tmp_path / f"run{next(_runs)}"
    root = run / "proj"
    first = commit_tree(root, {"pkg/__init__.py": "", "pkg/a.py": "def f():\n    return 0\n"})
    with Database(run / "w.drsg") as db:
        sync = _sync(db, root)
        sync.fold()
        for op in ops:
            _apply(root, op, first)
            sync.fold()
            _converged(db, root, run)
    shutil.rmtree(run)


def _apply(root: Path, op: tuple, first: str) -> None:  # type: ignore[type-arg]
    pkg = root / "pkg"
    if op[0] == "write":
        (pkg / f"{op[1]}.py").write_text(op[2].format(other=op[3]))
    elif op[0] == "delete":
        (pkg / f"{op[1]}.py").unlink(missing_ok=True)
    elif op[0] == "rename" and (pkg / f"{op[1]}.py").exists():
        os.replace(pkg / f"{op[1]}.py", pkg / f"{op[2]}.py")
    elif op[0] == "init":
        if op[1]:
            (pkg / "__init__.py").write_text("")
        else:
            (pkg / "__init__.py").unlink(missing_ok=True)
    elif op[0] == "commit":
        git(root, "add", "-A")
        git(root, "commit", "-qm", "step", "--allow-empty")
    elif op[0] == "checkout":
        git(root, "stash", "-u", "-q")  # a branch switch with a dirty tree: what the edits were goes with it
        git(root, "checkout", "-q", first)


def _replace(path: Path, old: str, new: str) -> None:
    path.write_text(path.read_text().replace(old, new))


def _commit_on_branch(root: Path, base: str) -> None:
    git(root, "checkout", "-q", "-b", "side", base)
    (root / "pkg/side.py").write_text("from .core import Engine\n\ndef side():\n    return Engine().run()\n")
    git(root, "add", "pkg/side.py")
    git(root, "commit", "-qm", "side")


def _awkward_files(root: Path) -> None:
    (root / "pkg/blob.py").write_bytes(bytes(range(256)) * 64)
    with open(root / "data.bin", "wb") as out:
        out.truncate(1 << 30)  # sparse: a 1 GiB file that costs nothing to make


@pytest.fixture(autouse=True)
def _no_config(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DRSG_CONFIG", raising=False)


# ------------------------------------------------------------------ prose and vectors: only what changed


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(dims=8) as server:  # loopback; no api key: the `url` providers send none
        yield server


def test_prose_goes_to_a_model_only_when_one_is_configured_and_only_when_it_changed(tmp_path, fake) -> None:  # type: ignore[no-untyped-def]
    ScriptedModel().install(fake)
    root = tmp_path / "proj"
    commit_tree(root, BASE)
    with Database(tmp_path / "w.drsg") as db:
        code_only = _sync(db, root)
        code_only.fold()
        assert not fake.requests_to("/chat/completions"), "no model configured: prose is never sent"

    calls = ModelCalls(
        chat_identity(fake.base_url, "fake-chat"),
        lambda: get_chat(fake.base_url, "fake-chat"),
        AnswerCache(tmp_path / "cache"),
    )
    with Database(tmp_path / "p.drsg") as db:
        sync = TreeSync(
            db,
            root,
            PLANE,
            TreeOptions(),
            handlers=builtin_handlers(),
            memo=ParseMemo(),
            ident="p",
            calls=calls,
            digest_options=DigestOptions(mode="coarse", embed=False, link=False),
        )
        sync.fold()
        extracted = _extractions(fake)
        assert extracted == 1, "the README is one chunk"
        (root / "pkg/util.py").write_text("def helper(x):\n    return x - 1\n")
        sync.fold()
        assert _extractions(fake) == extracted, "a code edit asks the model nothing"
        (root / "README.md").write_text("# proj\n\nNow Grace Hopper reads the prose too.\n")
        sync.fold()
        assert _extractions(fake) == extracted + 1, "changed prose is read again"
        with db.snapshot() as snap:
            keys = [node.key for node in snap.nodes(snap.plane(PLANE).id)]
            assert any("Grace Hopper" in str(key) for key in keys), keys


def _extractions(fake: FakeOpenAI) -> int:
    return sum(b"<document>" in r.body for r in fake.requests_to("/chat/completions"))


def test_only_changed_nodes_are_embedded_again_and_only_with_an_embedder(tmp_path, fake) -> None:  # type: ignore[no-untyped-def]
    root = tmp_path / "proj"
    commit_tree(root, BASE)
    embedder = get_embedder("url", "fake-embed", fake.base_url)
    with Database(tmp_path / "w.drsg") as db:
        sync = TreeSync(
            db, root, PLANE, TreeOptions(), handlers=builtin_handlers(), memo=ParseMemo(), ident="e", embedder=embedder
        )
        first = sync.fold()
        texts = _embedded_texts(fake)
        assert first.embedded == len(texts) == first.nodes_created
        (root / "pkg/util.py").write_text('def helper(x):\n    """Add two."""\n    return x + 2\n\n\nLIMIT = 3\n')
        report = sync.fold()
        again = _embedded_texts(fake)[len(texts) :]
        assert report.embedded == len(again) == 1 and again[0].startswith("pkg.util.helper (Function)")
        assert sync.fold().embedded == 0
        fake.script("/embeddings", error(400, "scripted refusal"))  # the embedder fails once
        (root / "pkg/util.py").write_text('def helper(x):\n    """Add three."""\n    return x + 3\n\n\nLIMIT = 3\n')
        with pytest.raises(DrsgError):
            sync.fold()  # the fold's commit is written; its embedding is not
        retried = sync.fold()
        assert retried.seq == 0 and retried.embedded == 1, "the next fold embeds what the failed one could not"
        with db.snapshot() as snap:
            helper = snap.node_by_key(snap.plane(PLANE).id, "pkg.util.helper")
        assert helper is not None and isinstance(helper.props["embedding"], Vector)
        _converged_but_vectors(db, root, tmp_path)
    fake.reset()
    with Database(tmp_path / "n.drsg") as db:
        _sync(db, root).fold()
    assert not fake.requests_to("/embeddings"), "no embedder configured: nothing is embedded"


def _embedded_texts(fake: FakeOpenAI) -> list[str]:
    return [text for request in fake.requests_to("/embeddings") for text in request.inputs]


def _converged_but_vectors(db: Database, root: Path, scratch: Path) -> None:
    """Vectors and their stamps aside (a fresh digest embeds nothing), the plane is a fresh digest's."""
    vector_props = ("embedding", "_embedded_from", "_embedded_by")
    stripped = []
    for line in canonical(db, PLANE):
        record = json.loads(line)
        for name in vector_props:
            record.get("properties", {}).pop(name, None)
        stripped.append(json.dumps(record, ensure_ascii=False, separators=(",", ":")))
    assert stripped == fresh_export(root, PLANE, scratch)
