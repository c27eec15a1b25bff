"""A served plane's tree is read from disk only where the operator allowed it: `drsg serve` with
``[server] code_roots`` (here DRSG_SERVER_CODE_ROOTS). A client with the token points planes at a
directory outside it holding a secret — by ``plane.create``'s properties and by ``plane.set_props``,
directly and through a symlink inside the allowed directory — and a node's ``file`` at the secret:
JSON-RPC ``code.grep``/``code.snippet`` and the MCP ``grep``/``snippet`` tools at /mcp are refused in
one line naming the setting, and the secret appears in no answer (nor, through the drift line, the
outside tree's commit). The plane under the allowed root answers; the other verbs and a stored
``_code`` still answer without the disk; the CLI, a local user, reads the same file as before."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio

from tests.support.git_tree import commit_tree
from tests.support.mcp import call, over_http, refused
from tests.support.server import TOKEN, RunningServer, cli, start_server

SECRET = "hunter2-never-for-clients"
REFUSED = "which this server may not read; add it to [server] code_roots (DRSG_SERVER_CODE_ROOTS)"


def _plant(server: RunningServer, plane: str, root: Path, *, by_set_props: bool) -> None:
    """A plane claiming it was read from ``root``, with a node whose file is the secret."""
    props: dict[str, Any] = {"synced_root": str(root), "synced_commit": "0" * 40}
    if by_set_props:
        server.call("plane.create", {"name": plane})
        server.call("plane.set_props", {"plane": plane, "properties": props})
    else:
        server.call("plane.create", {"name": plane, "properties": props})
    server.call("node.create", {"plane": plane, "key": "leak", "properties": {"file": "secret.py", "line": 1}})
    server.call("node.create", {"plane": plane, "key": "mod"})  # a CONTAINS edge makes it a code plane
    server.call("edge.create", {"plane": plane, "src": "mod", "dst": "leak", "type": "CONTAINS"})


async def _over_mcp(server: RunningServer, planted: dict[str, Path]) -> None:
    async with over_http(f"http://127.0.0.1:{server.port}/mcp", TOKEN) as session:
        for plane, root in planted.items():
            for tool, args in (("grep", {"pattern": "hunter2"}), ("snippet", {"symbol": "leak"})):
                text = await refused(session, tool, {"plane": plane, **args})
                assert f"plane {plane!r} was read from {root}, {REFUSED}" in text and SECRET not in text, text
        found = await call(session, "grep", {"plane": "code", "pattern": "return 1"})
        assert [hit["at"] for hit in found["hits"]] == ["core.py:2"]


def test_served_grep_and_snippet_read_only_inside_code_roots(tmp_path: Path) -> None:
    allowed, outside = tmp_path / "allowed", tmp_path / "outside"
    commit_tree(allowed / "repo", {"pkg/__init__.py": "", "pkg/core.py": "def hub():\n    return 1\n"})
    outside_commit = commit_tree(outside, {"secret.py": f"TOKEN = {SECRET!r}\n"})
    (allowed / "link").symlink_to(outside)  # inside the allowed directory by name, outside by where it points
    db = tmp_path / "graph.drsg"
    digested = cli(db, "digest", str(allowed / "repo" / "pkg"), "--plane", "code", "--apply")
    assert digested.returncode == 0, digested.stderr
    planted = {"evil": outside, "linked": allowed / "link"}
    server = start_server(db, tmp_path, env={"DRSG_SERVER_CODE_ROOTS": str(allowed)})
    try:
        _plant(server, "evil", outside, by_set_props=False)
        _plant(server, "linked", allowed / "link", by_set_props=True)
        for plane, root in planted.items():
            for method, params in (("code.grep", {"pattern": "hunter2"}), ("code.snippet", {"symbol": "leak"})):
                error = server.error(method, {"plane": plane, **params})
                assert error["code"] == -32602 and "\n" not in error["message"], error
                assert f"plane {plane!r} was read from {root}, {REFUSED}" in error["message"], error
                assert SECRET not in json.dumps(error)
            # the verbs that read only the plane answer, and the drift line tells nothing of the outside tree
            described = server.call("code.describe", {"plane": plane, "symbol": "leak"})
            assert described["props"]["file"] == "secret.py"
            assert described["synced"] == "synced: commit 000000000000", described["synced"]
            assert outside_commit[:12] not in json.dumps(described)
        _plant(server, "odd", Path("/x\x00\ny"), by_set_props=False)  # no path at all: refused in one line too
        odd = server.error("code.grep", {"plane": "odd", "pattern": "x"})
        assert odd["code"] == -32602 and f"was read from '/x\\x00\\ny', {REFUSED}" in odd["message"], odd
        server.call("node.create", {"plane": "evil", "key": "kept", "properties": {"_code": "def kept():\n    pass"}})
        stored = server.call("code.snippet", {"plane": "evil", "symbol": "kept"})
        assert stored["source"] == "stored" and stored["text"] == "def kept():\n    pass"

        nul = {"file": "core\x00.py", "line": 1}  # a file no path can name: passed over, not an internal error
        server.call("node.create", {"plane": "code", "key": "nul", "properties": nul})
        hit = server.call("code.grep", {"plane": "code", "pattern": "return 1"})
        assert [(h["at"], h["in"]) for h in hit["hits"]] == [("core.py:2", "pkg.core.hub")]
        shown = server.call("code.snippet", {"plane": "code", "symbol": "hub", "lines": 2})
        assert shown["source"] == "file" and shown["text"] == "def hub():\n    return 1"
        anyio.run(_over_mcp, server, planted)
    finally:
        assert server.stop() == 0
    for plane in planted:  # a local user, who can read the file anyway: as before
        ran = cli(db, "code", "grep", "hunter2", "-p", plane)
        assert ran.returncode == 0 and f"secret.py:1: TOKEN = {SECRET!r}" in ran.stdout, ran.stderr
