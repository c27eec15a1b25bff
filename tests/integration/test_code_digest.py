"""Reading a codebase with the built-in Python handler, checked against an independent ``ast`` walk.

Ground truth: this repository's own ``store/`` and a real third-party package installed from PyPI
by the test. Every module, class, function and method the oracle finds must be a node with the
right key, label and line; every edge's ends must exist; a second run must export byte for byte the
same graph; ``--code-only`` of a pure-code tree makes no chat call and needs no key.
"""

from __future__ import annotations

import ast
import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import drsg as drsg_api
from tests.support.cli import Drsg
from tests.support.fake_openai import FakeOpenAI
from tests.support.git_tree import commit_tree

REPO = Path(__file__).resolve().parents[2]
KEY = "sk-code-test"


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeOpenAI]:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with FakeOpenAI(dims=8, api_key=KEY) as server:
        yield server


# ------------------------------------------------------------------------------- the oracle


def oracle(root: Path) -> dict[str, tuple[str, int]]:
    """key -> (label, line) of every module, class, function and method, by a walk of its own.

    Keys follow the import system: climb while the folder holds an __init__.py; a root that is a
    package is named after the root (its parent when the root is called src). The first definition
    of a key in source order is the one that counts."""
    found: dict[str, tuple[str, int]] = {}
    label = root.parent.name if root.name == "src" else root.name
    for file in sorted(root.rglob("*.py")):
        relative = file.relative_to(root)
        if any(part.startswith(".") or part == "__pycache__" for part in relative.parts):
            continue
        parts = [] if file.stem == "__init__" else [file.stem]
        folder = file.parent
        while (folder / "__init__.py").exists() and folder.is_relative_to(root):
            parts.append(label if folder == root else folder.name)
            if folder == root:
                break
            folder = folder.parent
        module = ".".join(reversed(parts))
        if module in found:
            continue
        found[module] = ("Module", 1)
        tree = ast.parse(file.read_bytes())

        def visit(body: list[ast.stmt], prefix: str, in_class: bool) -> None:
            for node in body:
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                    key = f"{prefix}.{node.name}"
                    kind = "Class" if isinstance(node, ast.ClassDef) else ("Method" if in_class else "Function")
                    found.setdefault(key, (kind, node.lineno))
                    visit(node.body, key, isinstance(node, ast.ClassDef))
                else:  # definitions inside if / try / with / for / while / match blocks count
                    for name in ("body", "orelse", "finalbody"):
                        visit(getattr(node, name, []), prefix, in_class)
                    for name in ("handlers", "cases"):
                        for part in getattr(node, name, []):
                            visit(part.body, prefix, in_class)

        visit(tree.body, module, False)
    return found


def export(drsg: Drsg, plane: str) -> list[dict[str, Any]]:
    ran = drsg("export", "--plane", plane)
    assert ran.code == 0, ran.err
    return [json.loads(line) for line in ran.out.splitlines()]


def check_against_oracle(records: list[dict[str, Any]], root: Path) -> None:
    nodes = {r["external_key"]: r for r in records if "external_key" in r}
    expected = oracle(root)
    assert len(expected) > 20
    for key, (label, line) in expected.items():
        assert key in nodes, f"{key} ({label}) is not a node"
        assert label in nodes[key]["labels"], (key, nodes[key]["labels"])
        assert nodes[key]["properties"]["line"] == line, key
        assert nodes[key]["properties"]["_generated_by"] == "py@1.0.0"
    edges = [r for r in records if "src_key" in r]
    assert edges
    for edge in edges:
        assert edge["src_key"] in nodes and edge["dst_key"] in nodes, edge
        assert isinstance(edge["properties"]["line"], int)
        assert edge["properties"]["_generated_by"] == "py@1.0.0"


def test_this_repository_store_layer_digests_to_what_ast_finds(drsg: Drsg, fake: FakeOpenAI, tmp_path: Path) -> None:
    root = tmp_path / "store"
    shutil.copytree(REPO / "store", root, ignore=shutil.ignore_patterns("__pycache__"))
    ran = drsg(
        "digest", str(root), "--code-only", "--apply", "--chat-url", fake.base_url, "--chat-key-env", "NO_SUCH_KEY"
    )
    assert ran.code == 0, ran.err
    assert any(line.startswith("preprocessed by py@1.0.0 (") for line in ran.lines())
    assert "no prose left to read — digested without a model call" in ran.lines()
    assert "  0 chat request(s); tokens 0 in / 0 out / 0 embed" in ran.lines()
    assert fake.requests == []
    first = export(drsg, "store")
    check_against_oracle(first, root)
    again = drsg("digest", str(root), "--code-only", "--apply")
    assert again.code == 0, again.err
    assert "applied: wrote 0 nodes, 0 edges" in again.lines()
    assert export(drsg, "store") == first


def test_a_package_from_pypi_digests_to_what_ast_finds(drsg: Drsg, fake: FakeOpenAI, tmp_path: Path) -> None:
    from importlib.metadata import version

    target = tmp_path / "site"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-deps",
            "--target",
            str(target),
            f"click=={version('click')}",
        ],
        check=True,
        timeout=300,
    )
    root = target / "click"
    ran = drsg("digest", str(root), "--code-only", "--apply", "-p", "click")
    assert ran.code == 0, ran.err
    assert fake.requests == []
    records = export(drsg, "click")
    check_against_oracle(records, root)
    nodes = {r["external_key"]: r for r in records if "external_key" in r}
    # a few facts of click's that a reader can check by eye
    assert nodes["click.core.Command.main"]["labels"] == ["Method"]
    assert "External" in nodes["typing"]["labels"] or "External" in nodes["collections.abc"]["labels"]
    calls = [r for r in records if r.get("type") == "CALLS"]
    by = {c["properties"]["_resolved_by"] for c in calls}
    assert {"name", "self-class", "class"} <= by
    assert all(c["properties"]["_confidence"] in ("high", "medium") for c in calls)
    assert any(
        line.endswith("calls into other packages and the standard library are not edges") for line in ran.lines()
    )


def test_a_mixed_tree_parses_the_code_and_reads_the_rest_as_prose(drsg: Drsg, fake: FakeOpenAI, tmp_path: Path) -> None:
    root = tmp_path / "proj"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "core.py").write_text("def run():\n    return 1\n")
    (root / "README.md").write_text("# proj\n\nIt runs things.\n")
    ran = drsg("digest", str(root), "--code-only", "-v")
    assert ran.code == 0, ran.err
    assert "read 2 of 3 files (66.7%)" in ran.lines()
    assert "  1 not claimed by any handler, left out by --code-only" in ran.lines()
    assert fake.requests == []
    as_json = json.loads(drsg("digest", str(root), "--code-only", "--json").out)
    assert as_json["report"]["files"] == {"seen": 3, "read": 2, "withheld": 0, "not_claimed": 1, "skipped": 0}
    assert as_json["report"]["preprocessed"] == [
        {"handler": "py@1.0.0", "facts": as_json["report"]["facts"], "files": 2}
    ]
    prose = drsg("digest", str(root), "--chat-url", fake.base_url, "--chat-key-env", "NO_SUCH_KEY", "--no-embed")
    assert prose.code == 2 and "NO_SUCH_KEY" in prose.err  # the README is prose: it needs the model and a key


def test_a_code_digest_counts_what_it_parsed_says_each_note_once_and_names_no_model(
    drsg: Drsg, fake: FakeOpenAI, tmp_path: Path, db_path: Path
) -> None:
    root = tmp_path / "proj"
    root.mkdir()
    (root / "a.py").write_text("def f():\n    undefined_call()\n\nclass K:\n    def m(self):\n        pass\n")
    (root / "README.md").write_text("# proj\n\nIt runs things.\n")
    ran = drsg("digest", str(root), "--code-only")
    assert ran.code == 0, ran.err
    notes = [line for line in ran.lines() if line.startswith("  note:")]
    assert len(notes) == 1 and "named nothing defined here" in notes[0]  # was printed twice
    preview = json.loads(drsg("digest", str(root), "--code-only", "--json").out)
    nodes, edges = len(preview["nodes"]), len(preview["edges"])
    assert nodes == 4 and edges == 3
    assert "digest: 4 parsed nodes (4 new), 3 parsed edges from 1 file(s)" in ran.lines()
    assert not any("0 chunks" in line for line in ran.lines())  # was "0 chunks → 0 new entities" over 4 nodes
    assert preview["model"] is None and preview["embedder"] is None  # no model was asked
    assert preview["report"]["parsed"] == {"nodes": 4, "new": 4, "edges": 3}
    applied = drsg("digest", str(root), "--code-only", "--apply")
    assert applied.code == 0 and "applied: wrote 4 nodes, 3 edges" in applied.lines()
    again = drsg("digest", str(root), "--code-only")
    assert "digest: 4 parsed nodes (0 new), 3 parsed edges from 1 file(s)" in again.lines()
    assert drsg("log", "--json").json_lines()[-1]["origin"]["model"] is None
    # without a key, the README (prose) needs the model: the error offers --code-only
    nokey = drsg("digest", str(root), "-p", "other")
    assert nokey.code == 2 and len(nokey.err.splitlines()) == 1, nokey.err
    assert "needs OPENAI_API_KEY" in nokey.err and "--code-only" in nokey.err
    assert fake.requests == []


def test_a_code_file_is_parsed_with_its_directory_as_context(drsg: Drsg, fake: FakeOpenAI, tmp_path: Path) -> None:
    root = tmp_path / "proj"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "core.py").write_text("def helper():\n    return 1\n")
    ran = drsg("digest", str(root / "pkg" / "core.py"), "-p", "one", "--apply")
    assert ran.code == 0, ran.err  # was: unsupported format '.py'
    assert {r["external_key"] for r in export(drsg, "one") if "external_key" in r} == {"pkg.core", "pkg.core.helper"}
    assert fake.requests == []
    note = drsg("digest", str(root / "notes.xyz"))
    assert note.code == 2 and "no such file" in note.err


def test_src_layout_and_handler_flag(drsg: Drsg, tmp_path: Path) -> None:
    root = tmp_path / "mylib" / "src"
    (root / "mylib").mkdir(parents=True)
    (root / "mylib" / "__init__.py").write_text("from .a import f\n")
    (root / "mylib" / "a.py").write_text("def f():\n    pass\n")
    (root / "tool").mkdir()
    (root / "tool" / "script").write_text("def main():\n    pass\n")  # no extension: only --handler reads it
    ran = drsg("digest", str(root), "--code-only", "--apply", "-p", "lib")
    assert ran.code == 0, ran.err
    keys = {r["external_key"] for r in export(drsg, "lib") if "external_key" in r}
    assert {"mylib", "mylib.a", "mylib.a.f"} <= keys and "script.main" not in keys
    forced = drsg("digest", str(root), "--code-only", "--apply", "-p", "forced", "--handler", "py")
    assert forced.code == 0, forced.err
    assert "script.main" in {r["external_key"] for r in export(drsg, "forced") if "external_key" in r}
    unknown = drsg("digest", str(root), "--handler", "cobol")
    assert unknown.code == 2 and "no handler named 'cobol'; the known handlers are: py" in unknown.err


def test_the_plane_records_its_commit_and_drift(drsg: Drsg, tmp_path: Path, db_path: Path) -> None:
    root = tmp_path / "repo"
    head = commit_tree(root, {"a.py": "def a():\n    pass\n", "b.py": "def b():\n    a()\n"})
    assert drsg("digest", str(root), "--code-only", "--apply", "-p", "r").code == 0
    with drsg_api.open(db_path) as db, db.snapshot() as snap:
        props = snap.plane("r").props
    assert props["synced_commit"] == head and props["synced_modified"] == 0 and props["synced_untracked"] == 0
    (root / "a.py").write_text("def a():\n    return 2\n")
    (root / "c.py").write_text("X = 1\n")
    assert drsg("digest", str(root), "--code-only", "--apply", "-p", "r").code == 0
    from drsg.pipeline.code.drift import synced_line

    with drsg_api.open(db_path) as db, db.snapshot() as snap:
        props = snap.plane("r").props
    assert synced_line(props) == (
        f"synced: commit {head[:12]} — parsed from a working tree with 1 modified and 1 untracked, so the graph "
        "holds what that commit does not"
    )
    assert synced_line({}) is None  # a plane that never measured says nothing


def test_tracked_only_outside_git_is_refused_and_nothing_is_written(drsg: Drsg, tmp_path: Path, db_path: Path) -> None:
    root = tmp_path / "loose"
    root.mkdir()
    (root / "a.py").write_text("x = 1\n")
    ran = drsg("digest", str(root), "--tracked-only", "--apply")
    assert ran.code == 2
    assert "--tracked-only reads what git tracks, but" in ran.err and "is not inside a git repository" in ran.err
    assert not db_path.exists()


def test_every_answer_from_a_measured_plane_says_what_it_was_read_from(
    drsg: Drsg, tmp_path: Path, db_path: Path
) -> None:
    root = tmp_path / "repo"
    head = commit_tree(root, {"a.py": "def a():\n    pass\n\ndef b():\n    a()\n"})
    (root / "new.py").write_text("Y = 2\n")
    assert drsg("digest", str(root), "--code-only", "--apply", "-p", "r").code == 0
    line = (
        f"synced: commit {head[:12]} — parsed from a working tree with 0 modified and 1 untracked, so the graph "
        "holds what that commit does not"
    )
    for args in (("get", "@a.b"), ("neighbors", "@a.b"), ("plane", "show", "r"), ("node", "history", "@a.a")):
        ran = drsg(*args, *(("-p", "r") if args[0] != "plane" else ()))
        assert ran.code == 0, (args, ran.err)
        assert ran.out.splitlines()[0] == line, args
        as_json = drsg(*args, *(("-p", "r") if args[0] != "plane" else ()), "--json")
        assert line in as_json.err.splitlines() and line not in as_json.out, args
    assert drsg("node", "put", "n").code == 0
    quiet = drsg("get", "@n")
    assert "synced" not in quiet.out + quiet.err  # a plane that never measured says nothing


# ------------------------------------------------------------------ every flag combination


def _accounting_tree(tmp_path: Path) -> Path:
    root = tmp_path / "acct"
    files = {
        "app/main.py": "def main():\n    pass\n",
        "app/gen.py": "X = 1\n",  # .gitignore
        "web/index.py": "Y = 2\n",  # .dockerignore
        "docs/guide.md": "# Guide\n\nHow to run it.\n",
        "notes.txt": "loose notes\n",  # untracked
        "tools/new.py": "Z = 3\n",  # untracked
    }
    files[".gitignore"] = "app/gen.py\n"
    files[".dockerignore"] = "web\n"
    commit_tree(root, files, [".gitignore", ".dockerignore", "app/main.py", "web/index.py", "docs/guide.md"])
    return root


ALL = {"app/main.py", "app/gen.py", "web/index.py", "docs/guide.md", "notes.txt", "tools/new.py"}
CODE = {"app/main.py", "app/gen.py", "web/index.py", "tools/new.py"}
TRACKED = {"app/main.py", "web/index.py", "docs/guide.md"}


@pytest.mark.parametrize("ignore", [None, "gitignore,dockerignore", "dockerignore", ""])
@pytest.mark.parametrize("tracked_only", [False, True])
@pytest.mark.parametrize("code_only", [False, True])
def test_every_flag_combination_reads_what_the_rules_say(
    drsg: Drsg, tmp_path: Path, ignore: str | None, tracked_only: bool, code_only: bool
) -> None:
    root = _accounting_tree(tmp_path)
    args = ["digest", str(root), "-vvv", "--chat-key-env", "NO_SUCH_KEY", "--no-embed"]
    if ignore is not None:
        args += ["--ignore-files", ignore]
    args += ["--tracked-only"] * tracked_only + ["--code-only"] * code_only
    chosen = {"gitignore"} if ignore is None else {n for n in ignore.split(",") if n}
    admitted = set(ALL)
    if "gitignore" in chosen:
        admitted -= {"app/gen.py"}
    if "dockerignore" in chosen:
        admitted -= {"web/index.py"}
    seen = len(ALL)  # what the floor left is the denominator: every file here
    if tracked_only:
        admitted &= TRACKED
    expected = admitted & CODE if code_only else admitted
    ran = drsg(*args)
    read = {line.split()[1] for line in ran.lines() if line.startswith("  read ")}
    assert read == expected, (ran.out, ran.err)
    share = f"{100 * len(expected) / seen:.1f}%"
    assert f"read {len(expected)} of {seen} files ({share})" in ran.lines()
    withheld = {line.split()[1] for line in ran.lines() if line.startswith("  withheld ")}
    assert withheld == ALL - expected
    prose = expected - CODE
    if prose:  # prose needs the model, whose key is not set: refused before any call, nothing written
        assert ran.code == 2 and "NO_SUCH_KEY" in ran.err
    else:
        assert ran.code == 0, ran.err


def test_a_dockerignore_withholding_most_of_the_tree_warns_and_config_sets_the_flags(
    drsg: Drsg, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "front"
    for i in range(5):
        (root / "src").mkdir(parents=True, exist_ok=True)
        (root / "src" / f"m{i}.py").write_text(f"V{i} = {i}\n")
    (root / "main.py").write_text("def main():\n    pass\n")
    (root / "setup.py").write_text("NAME = 'front'\n")
    (root / ".dockerignore").write_text("src\n")
    quiet = drsg("digest", str(root), "--code-only")
    assert quiet.code == 0 and "warning" not in quiet.err  # .gitignore alone, the default
    warned = drsg("digest", str(root), "--code-only", "--ignore-files", "gitignore,dockerignore")
    assert warned.code == 0, warned.err
    assert (
        "warning: 5 of 7 files were withheld by ignore rules — .dockerignore (5). If that is not what you meant, "
        "`--ignore-files` chooses which of them apply." in warned.err
    )
    config = tmp_path / "drsg.toml"
    config.write_text('[digest]\nignore_files = ["dockerignore"]\ncode_only = true\n')
    monkeypatch.setenv("DRSG_CONFIG", str(config))
    from_file = drsg("digest", str(root), "-v")
    assert from_file.code == 0, from_file.err
    assert "read 2 of 7 files (28.6%)" in from_file.lines() and "withheld by ignore rules" in from_file.err
    bad = drsg("digest", str(root), "--ignore-files", "npmignore")
    assert bad.code == 2 and "'npmignore' is not gitignore or dockerignore" in bad.err


def test_where_a_parser_and_the_model_claim_one_key_the_parser_wins(
    drsg: Drsg, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.support.scripted_model import ScriptedModel, World, WorldEntity, WorldRelation

    root = tmp_path / "proj"
    (root / "app").mkdir(parents=True)
    (root / "app" / "__init__.py").write_text("")
    (root / "app" / "core.py").write_text("class Engine:\n    def run(self):\n        pass\n")
    (root / "README.md").write_text("# proj\n\nThe app.core.Engine class was first run at Bletchley Park.\n")
    world = World(
        entities=[WorldEntity(["app.core.Engine"], ["Component"]), WorldEntity(["Bletchley Park"], ["Place"])],
        relations=[WorldRelation("app.core.Engine", "Bletchley Park", ["FIRST_RUN_AT"])],
    )
    monkeypatch.setenv("MY_CHAT_KEY", KEY)
    with FakeOpenAI(dims=8, api_key=KEY) as fake:
        ScriptedModel(world).install(fake)
        chat = ("--chat", fake.base_url, "--model", "fake-chat", "--chat-key-env", "MY_CHAT_KEY", "--no-embed")
        ran = drsg("digest", str(root), "-p", "proj", "--apply", *chat)
        assert ran.code == 0, ran.err
        assert fake.requests_to("/chat/completions")  # the README is prose: the model read it
    assert "  note: 1 model entity dropped for a parsed fact of the same key" in ran.lines()
    records = export(drsg, "proj")
    nodes = {r["external_key"]: r for r in records if "external_key" in r}
    engine = nodes["app.core.Engine"]
    assert engine["labels"] == ["Class"] and engine["properties"]["_generated_by"] == "py@1.0.0"
    assert "_model" not in engine["properties"]
    assert nodes["Bletchley Park"]["labels"] == ["Place"] and "_model" in nodes["Bletchley Park"]["properties"]
    edges = {(r["src_key"], r["type"], r["dst_key"]) for r in records if "src_key" in r}
    assert ("app.core.Engine", "FIRST_RUN_AT", "Bletchley Park") in edges  # the model's edge, at the parsed node
    assert ("app.core.Engine", "CONTAINS", "app.core.Engine.run") in edges


def test_unclaimed_text_over_256_kib_is_skipped_with_a_note(drsg: Drsg, tmp_path: Path) -> None:
    root = tmp_path / "gen"
    root.mkdir()
    (root / "a.py").write_text("X = 1\n")
    (root / "small.cfg").write_text("name = small\n")
    (root / "dump.sql").write_text("INSERT INTO t VALUES (1);\n" * 12_000)  # 300 KB of text no handler claims
    ran = drsg("digest", str(root), "-vv", "--chat-key-env", "NO_SUCH_KEY", "--no-embed")
    assert "  note: 1 file(s) skipped: dump.sql (over 256 KiB)" in ran.lines()
    assert "  skipped dump.sql  (over 256 KiB)" in ran.lines()
    assert ran.code == 2 and "NO_SUCH_KEY" in ran.err  # small.cfg is still prose for the model


def test_two_trees_never_share_a_parsed_key_in_one_plane(drsg: Drsg, tmp_path: Path) -> None:
    """Issue #33 item 2: crateB/src's `util` and `util.helper` silently took over crateA/src's. The second
    tree is refused in one line naming both fixes, and nothing is written; in a plane of its own it
    reads; the first tree digested again still updates in place; a tree that only imports another's
    module (an External stand-in) shares the plane without relabelling the definition."""
    for crate, body in (("crateA", "def helper():\n    return 1\n"), ("crateB", "def helper(x):\n    return x\n")):
        (tmp_path / crate / "src").mkdir(parents=True)
        (tmp_path / crate / "src" / "util.py").write_text(body + "import os\n")
    a, b = tmp_path / "crateA" / "src", tmp_path / "crateB" / "src"
    assert drsg("digest", str(a), "--plane", "p", "--code-only", "--apply").code == 0
    before = drsg("export", "--plane", "p").out

    refused = drsg("digest", str(b), "--plane", "p", "--code-only", "--apply")
    assert refused.code == 1 and len(refused.err.splitlines()) == 1, refused.err
    assert f"{b} defines 2 key(s) that {a} already defines in plane 'p' (util, util.helper)" in refused.err
    assert "(--plane crateB)" in refused.err and f"drsg digest {a} --forget --plane p" in refused.err
    assert drsg("export", "--plane", "p").out == before  # nothing written
    (b / "NOTES.md").write_text("# Notes\n\nProse a model would read.\n")
    closed = ("--chat", "http://127.0.0.1:9/v1", "--model", "m", "--chat-key-env", "NO_SUCH_KEY_SET")  # no one there
    preview = drsg("digest", str(b), "--plane", "p", *closed)  # refused before any model call, preview too
    assert preview.code == 1 and "already defines in plane 'p' (util, util.helper)" in preview.err, preview.err
    (b / "NOTES.md").unlink()

    assert drsg("digest", str(b), "--plane", "crateB", "--code-only", "--apply").code == 0
    (a / "util.py").write_text("def helper():\n    return 2\n\ndef more():\n    pass\n")
    again = drsg("digest", str(a), "--plane", "p", "--code-only", "--apply")  # the same tree: drift, in place
    assert again.code == 0, again.err
    keys = {line["external_key"] for line in drsg("export", "--plane", "p").json_lines() if "labels" in line}
    assert {"util", "util.helper", "util.more"} <= keys and "os" not in keys  # os: no longer imported

    user = tmp_path / "user"
    user.mkdir()
    (user / "main.py").write_text("import util\n\ndef run():\n    return 0\n")
    shared = drsg("digest", str(user), "--plane", "p", "--code-only", "--apply")
    assert shared.code == 0, shared.err
    nodes = {line["external_key"]: line for line in drsg("export", "--plane", "p").json_lines() if "labels" in line}
    assert nodes["util"]["labels"] == ["Module"]  # crateA's module, not user's stand-in for it
    assert nodes["main.run"]["labels"] == ["Function"]
