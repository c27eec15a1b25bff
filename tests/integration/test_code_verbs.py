"""`drsg code …` and ``Plane.code()`` on small trees digested for real (the built-in Python handler):
how a symbol is named, the 24,000-character cap on `context`, trace's reverse, impact's bounds, what
grep and snippet read (only the plane's files, only inside its tree), the drift line once the tree
moves, the text and JSON output, and each user error as one line with its exit code, nothing written."""

from __future__ import annotations

import json
from pathlib import Path

import drsg
from drsg.kernel.errors import NotFound, UsageError
from tests.support.cli import Drsg, head_seq
from tests.support.git_tree import commit_tree

HUB_CALLERS = 700  # enough callers that their sites pass the 24,000-character cap of one context answer


def _tree(root: Path) -> dict[str, str]:
    callers = "".join(f"def caller_{i:03}():\n    hub()\n\n\n" for i in range(HUB_CALLERS))
    return {
        "pkg/__init__.py": "",
        "pkg/core.py": (
            "def hub():\n    return leaf()\n\n\ndef leaf():\n    return 1\n\n\n"
            "class Engine:\n    def start(self):\n        return self.step()\n\n"
            "    def step(self):\n        return hub()\n"
        ),
        "pkg/many.py": "from pkg.core import hub\n\n\n" + callers,
        "pkg/flow.py": "from pkg.core import Engine\n\n\ndef main():\n    engine = Engine()\n"
        "    return engine.start()\n",
    }


def _digest(drsg: Drsg, root: Path, plane: str = "code") -> None:
    ran = drsg("digest", str(root / "pkg"), "--plane", plane, "--apply")
    assert ran.code == 0, ran.err


def test_names_caps_trace_and_impact(drsg: Drsg, db_path: Path, tmp_path: Path) -> None:
    commit_tree(tmp_path / "repo", _tree(tmp_path))
    _digest(drsg, tmp_path / "repo")
    with drsg_open(db_path) as db:
        code = db.plane("code").code()
        assert code.describe("pkg.core.hub").symbol.key == "pkg.core.hub"  # the exact key
        assert code.describe("Engine.start").symbol.key == "pkg.core.Engine.start"  # the end of one
        assert code.describe("ENGINE.STA").symbol.key == "pkg.core.Engine.start"  # part of one, any case
        try:
            code.context("caller_")
            raise AssertionError("ambiguous")
        except UsageError as exc:
            assert f"names {HUB_CALLERS} symbols" in exc.message and "pkg.many.caller_000" in exc.message
            assert exc.message.count("pkg.many.caller_") == 20 and f"and {HUB_CALLERS - 20} more" in exc.message
        try:
            code.context("levf")
            raise AssertionError("unknown")
        except NotFound as exc:
            assert "nearest: pkg.core.leaf" in exc.message and "\n" not in exc.message

        hub = code.context("pkg.core.hub")
        assert len(json.dumps(hub.to_json())) <= 24_000
        assert hub.omitted > 0 and len(hub.callers) + hub.omitted >= HUB_CALLERS + 1
        assert hub.callees[0].symbol.key == "pkg.core.leaf" and hub.callees[0].at == "core.py:2"
        step = code.context("Engine.step")
        assert [(s.symbol.key, s.at) for s in step.callers] == [("pkg.core.Engine.start", "core.py:11")]

        chain = code.trace("pkg.flow.main", "leaf")
        assert [(h.caller.key, h.at) for h in chain.hops] == [
            ("pkg.flow.main", "flow.py:6"),
            ("pkg.core.Engine.start", "core.py:11"),
            ("pkg.core.Engine.step", "core.py:14"),
            ("pkg.core.hub", "core.py:2"),
        ]
        assert chain.hops[-1].callee.key == "pkg.core.leaf" and not chain.reversed
        back = code.trace("leaf", "Engine.step")
        assert back.reversed and [h.caller.key for h in back.hops] == ["pkg.core.Engine.step", "pkg.core.hub"]
        assert not code.trace("caller_001", "caller_002").found

        near = code.impact("leaf", depth=1)
        assert [r.symbol.key for r in near.levels[0]] == ["pkg.core.hub"]
        far = code.impact("leaf", depth=2)
        assert far.levels[1][0].through == "pkg.core.hub" and far.total > HUB_CALLERS
        for bad in (0, 7):
            try:
                code.impact("leaf", depth=bad)
                raise AssertionError(bad)
            except UsageError as exc:
                assert "depth must be 1 to 6" in exc.message


def drsg_open(path: Path) -> drsg.api.database.EmbeddedDatabase:
    return drsg.open(str(path))


def test_grep_and_snippet_read_only_the_planes_tree(drsg: Drsg, db_path: Path, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    commit_tree(repo, _tree(tmp_path))
    (tmp_path / "outside.py").write_text("SECRET = 'hub()'\n")
    _digest(drsg, repo)
    (repo / "pkg" / ".env").write_text("SECRET=hub()\n")  # inside the tree, but no file the walk reads
    # nodes that say their file is outside the tree, or a dotfile: data never picks a file to open
    assert drsg("node", "put", "planted", "-p", "code", "-P", "file=../outside.py", "-P", "line=1").code == 0
    assert drsg("node", "put", "dotfile", "-p", "code", "-P", "file=.env", "-P", "line=1").code == 0
    assert (
        drsg("node", "put", "stored", "-p", "code", "-P", "file=core.py", "-P", '_code="def stored():\\n    pass"').code
        == 0
    )
    with drsg_open(db_path) as db:
        code = db.plane("code").code()
        assert code.grep("SECRET").hits == []
        found = code.grep("HUB()", ignore_case=True, max_results=200)
        assert found.truncated and len(found.hits) == 200
        assert [(hit.at, hit.symbol) for hit in found.hits[:2]] == [
            ("core.py:1", "pkg.core.hub"),
            ("core.py:14", "pkg.core.Engine.step"),
        ]
        assert code.grep("return leaf()").hits[0].at == "core.py:2"
        shown = code.snippet("Engine.start", lines=2)
        assert shown.source == "file" and shown.text == "    def start(self):\n        return self.step()"
        assert code.snippet("stored").source == "stored" and code.snippet("stored").text.startswith("def stored")
    for planted in ("planted", "dotfile"):
        ran = drsg("code", "snippet", planted, "-p", "code")
        assert ran.code == 2 and "is not a file of the tree plane 'code' was read from" in ran.err


def test_cli_text_json_errors_and_drift(drsg: Drsg, db_path: Path, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    commit_tree(repo, _tree(tmp_path))
    _digest(drsg, repo)
    assert drsg("plane", "create", "notes").code == 0
    head = head_seq(drsg)

    text = drsg("code", "context", "Engine.step", "-p", "code")
    assert text.code == 0, text.err
    assert text.lines()[0].startswith("synced: commit ")
    assert "Method pkg.core.Engine.step  (core.py:13)" in text.out and "callers (1):" in text.out
    assert any(line.split() == ["core.py:11", "pkg.core.Engine.start"] for line in text.lines())
    as_json = drsg("code", "impact", "leaf", "-p", "code", "--depth", "1", "--json")
    assert as_json.code == 0 and as_json.err.startswith("synced: commit ")  # beside the JSON, on stderr
    assert json.loads(as_json.out)["levels"][0]["symbols"][0]["key"] == "pkg.core.hub"
    for verb, args in (("describe", ["leaf"]), ("grep", ["leaf"]), ("trace", ["main", "leaf"]), ("snippet", ["leaf"])):
        ran = drsg("code", verb, *args, "-p", "code", "--json")
        assert ran.code == 0 and json.loads(ran.out)["synced"].startswith("synced: commit "), (verb, ran.err)

    ambiguous = drsg("code", "context", "caller_0", "-p", "code")
    assert ambiguous.code == 2 and ambiguous.err.count("\n") == 1 and "give one's key" in ambiguous.err
    unknown = drsg("code", "describe", "nothing_like_it", "-p", "code")
    assert unknown.code == 1 and unknown.err.startswith("error: no symbol 'nothing_like_it'")
    not_code = drsg("code", "context", "x", "-p", "notes")
    assert not_code.code == 2 and "`drsg digest DIR --plane notes --apply`" in not_code.err
    assert drsg("code", "grep", "x", "-p", "code", "--max-results", "201").code == 2
    assert head_seq(drsg) == head  # the verbs only read

    (repo / "pkg" / "core.py").write_text((repo / "pkg" / "core.py").read_text() + "\n# edited\n")
    moved = drsg("code", "describe", "leaf", "-p", "code")
    assert "the tree has moved since" in moved.lines()[0] and "1 modified" in moved.lines()[0]


def test_a_tree_outside_git_is_read_from_where_it_was_digested(drsg: Drsg, db_path: Path, tmp_path: Path) -> None:
    for path, text in _tree(tmp_path).items():
        (tmp_path / "plain" / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "plain" / path).write_text(text)
    _digest(drsg, tmp_path / "plain")
    ran = drsg("code", "grep", "return leaf()", "-p", "code")
    assert ran.code == 0 and ran.lines()[0].startswith("core.py:2:"), ran.err  # no synced line: never measured
    (tmp_path / "plain" / "pkg").rename(tmp_path / "gone")
    gone = drsg("code", "snippet", "leaf", "-p", "code")
    assert gone.code == 2 and "its tree is not on this machine" in gone.err
