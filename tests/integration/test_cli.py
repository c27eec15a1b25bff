"""The CLI end to end (in-process): the main flows and every documented user error."""

from __future__ import annotations

import itertools
import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import click
import pytest

from drsg.surfaces.cli.main import cli
from tests.support.cli import Drsg, head_seq, seed_social

ROOT = Path(__file__).resolve().parents[2]
#: the hand-written command guide (README.md links it); every command must be described there
COMMANDS_DOC = (ROOT / "docs" / "commands.md").read_text()
#: generated from the registry by `make docs`; tests/unit/test_docs.py keeps it current
SETTINGS_DOC = (ROOT / "docs" / "reference" / "settings.md").read_text()


def test_write_read_and_time_travel(drsg: Drsg) -> None:
    seed_social(drsg)
    assert drsg("node", "put", "ada", "-p", "social", "-P", "born=1816").out.startswith("updated node #1 @ada")
    now = drsg("get", "@ada", "-p", "social", "--json").json_lines()[0]
    assert now["properties"] == {"born": 1816} and now["labels"] == ["Person"]
    before = drsg("get", "@ada", "-p", "social", "--as-of", "3", "--json").json_lines()[0]
    assert before["properties"] == {"born": 1815}
    by_id = drsg("node", "get", "1", "-p", "social", "--json").json_lines()[0]
    assert by_id == now
    hops = drsg("neighbors", "@bob", "-p", "social", "--json").json_lines()
    assert [(h["direction"], h["edge"]["type"], h["node"]["external_key"]) for h in hops] == [("in", "KNOWS", "ada")]
    assert drsg("neighbors", "@bob", "-p", "social", "--dir", "out").lines() == []
    history = drsg("node", "history", "@ada", "-p", "social", "--json").json_lines()
    assert [h["record"]["properties"]["born"] for h in history] == [1815, 1816]


def test_time_travel_by_timestamp_and_deleted_node(drsg: Drsg) -> None:
    seed_social(drsg)
    commits = drsg("log", "--json").json_lines()
    assert [c["seq"] for c in commits] == list(range(1, len(commits) + 1))
    assert all(a["ts"] <= b["ts"] for a, b in itertools.pairwise(commits))
    deleted = drsg("node", "delete", "@ada", "-p", "social")
    assert deleted.code == 0 and "and 1 edge(s)" in deleted.out
    assert drsg("get", "@ada", "-p", "social").code == 1
    ts = commits[-1]["ts"]
    again = drsg("get", "@ada", "-p", "social", "--as-of", f"TIME {ts}", "--json").json_lines()[0]
    assert again["external_key"] == "ada"
    history = drsg("node", "history", "@ada", "-p", "social", "--json").json_lines()
    assert history[-1]["deleted"] is True
    assert drsg("neighbors", "@bob", "-p", "social").lines() == []


def test_plane_lifecycle_and_stats(drsg: Drsg) -> None:
    seed_social(drsg)
    assert drsg("plane", "rename", "social", "people").code == 0
    cards = {c["name"]: c for c in drsg("plane", "list", "--json").json_lines()}
    assert cards["people"]["nodes"] == 2 and cards["people"]["edges"] == 1 and "social" not in cards
    stats = drsg("stats", "--json").json_lines()[0]
    assert (stats["planes"], stats["nodes"], stats["edges"]) == (2, 2, 1)
    dropped = drsg("plane", "drop", "people")
    assert dropped.code == 0
    assert drsg("plane", "show", "people").code == 1
    seq_before_drop = head_seq(drsg) - 1
    old = drsg("plane", "show", "people", "--as-of", str(seq_before_drop), "--json").json_lines()[0]
    assert old["nodes"] == 2 and old["labels"] == {"Person": 2}
    assert drsg("stats", "--json").json_lines()[0]["nodes"] == 0
    assert drsg("plane", "drop", "startup").code == 2


def test_import_export_round_trip(drsg: Drsg, tmp_path: Path) -> None:
    sample = Path(__file__).resolve().parents[2] / "drsg" / "data" / "sample.jsonl"
    ran = drsg("import", str(sample), "--plane", "pioneers", "--create-plane", "--json")
    assert ran.code == 0, ran.err
    report = ran.json_lines()[0]
    assert report["nodes_created"] == 21 and report["edges_created"] == 18
    exported = drsg("export", "--plane", "pioneers").out
    assert sorted(exported.splitlines()) == sorted(sample.read_text().splitlines())
    assert drsg("plane", "create", "copy").code == 0
    out = tmp_path / "copy.jsonl"
    out.write_text(exported)
    assert drsg("import", str(out), "--plane", "copy").code == 0
    assert drsg("export", "--plane", "copy").out == exported
    assert drsg("export", "--plane", "copy", "-o", str(tmp_path / "x.jsonl")).code == 0
    assert (tmp_path / "x.jsonl").read_text() == exported


def test_import_conflict_modes(drsg: Drsg, tmp_path: Path) -> None:
    seed_social(drsg)
    f = tmp_path / "in.jsonl"
    f.write_text(
        '{"labels":["Person"],"external_key":"ada","properties":{"born":1}}\n'
        '{"labels":["Person"],"external_key":"cy","properties":{}}\n'
        '{"type":"KNOWS","src_key":"cy","dst_key":"ada"}\n'
    )
    head = head_seq(drsg)
    ran = drsg("import", str(f), "-p", "social")
    assert ran.code == 1 and "'ada'" not in ran.err and "ada" in ran.err and "nothing was written" in ran.err
    assert len(ran.err.strip().splitlines()) == 1
    assert head_seq(drsg) == head and drsg("get", "@cy", "-p", "social").code == 1
    skipped = drsg("import", str(f), "-p", "social", "--on-conflict", "skip", "--json").json_lines()[0]
    assert (skipped["nodes_created"], skipped["nodes_skipped"], skipped["edges_created"]) == (1, 1, 1)
    assert drsg("get", "@ada", "-p", "social", "--json").json_lines()[0]["properties"] == {"born": 1815}
    g = tmp_path / "upd.jsonl"
    g.write_text('{"labels":["Countess"],"external_key":"ada","properties":{"born":1}}\n')
    assert drsg("import", str(g), "-p", "social", "--on-conflict", "update").code == 0
    ada = drsg("get", "@ada", "-p", "social", "--json").json_lines()[0]
    assert ada["labels"] == ["Countess"] and ada["properties"] == {"born": 1} and ada["id"] == 1
    assert len(drsg("neighbors", "@ada", "-p", "social").lines()) == 2  # its edges stayed


# ---------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ('{"labels":["A"],"external_key":"a"}\n{not json}\n', r"line 2: not valid JSON"),
        ('{"labels":["A"]}\n[1,2]\n', r"line 2: a line must be a JSON object"),
        ('{"labels":"A"}\n', r"line 1: \"labels\" must be a list"),
        ('{"labels":["A"],"external_key":"a","properties":{"x":{"$vector":[]}}}\n', r"line 1: .*\$vector"),
        ('{"labels":["A"],"colour":"red"}\n', r"line 1: unknown field"),
        (
            '{"labels":["A"],"external_key":"a"}\n{"type":"T","src_key":"a","dst_key":"zz"}\n',
            r"line 2: edge dst 'zz' is not a node",
        ),
        ('{"type":"T","src":999,"dst":998}\n', r"line 1: edge src id 999 is not a node"),
        (
            '{"labels":["A"],"external_key":"a","properties":{"n":123456789012345678901234567890}}\n',
            r"line 1: .*64 bits",
        ),
    ],
)
def test_bad_import_lines_write_nothing(drsg: Drsg, tmp_path: Path, content: str, expected: str) -> None:
    assert drsg("plane", "create", "p").code == 0
    head = head_seq(drsg)
    f = tmp_path / "bad.jsonl"
    f.write_text(content)
    ran = drsg("import", str(f), "-p", "p")
    assert ran.code == 2, ran.err
    assert re.search(expected, ran.err), ran.err
    assert len(ran.err.strip().splitlines()) == 1 and "Traceback" not in ran.err
    assert head_seq(drsg) == head
    assert drsg("stats", "--json").json_lines()[0]["nodes"] == 0


def test_bad_lines_are_all_reported_with_numbers(drsg: Drsg, tmp_path: Path, db_path: Path) -> None:
    f = tmp_path / "bad.jsonl"
    f.write_text("\n".join(['{"labels":["A"]}', "nope", '{"labels":["A"]}', "{", "[]"]) + "\n")
    ran = drsg("import", str(f))
    assert ran.code == 2
    assert "line 2" in ran.err and "line 4" in ran.err and "line 5" in ran.err and "line 1:" not in ran.err
    assert not db_path.exists()  # the import would have created the database; it left nothing


def test_unknown_plane_and_missing_nodes(drsg: Drsg) -> None:
    seed_social(drsg)
    head = head_seq(drsg)
    for args, code, text in [
        (("node", "put", "x", "-p", "nope"), 1, "no plane named 'nope'"),
        (("get", "@ada", "-p", "nope"), 1, "create it with `drsg plane create nope`"),
        (("edge", "put", "@ada", "@ghost", "KNOWS", "-p", "social"), 1, "no node '@ghost'"),
        (("edge", "put", "@ada", "77", "KNOWS", "-p", "social"), 1, "no node 77"),
        (("edge", "delete", "99", "-p", "social"), 1, "no edge 99"),
        (("node", "delete", "@ghost", "-p", "social"), 1, "no node"),
        (("plane", "create", "social"), 1, "already exists"),
        (("node", "put", "x", "-p", "social", "--props", "{bad"), 2, "--props is not valid JSON"),
        (("node", "put", "x", "-p", "social", "-P", "novalue"), 2, "is not NAME=VALUE"),
        (("node", "put", "x", "-p", "social", "-P", "n=NaN"), 2, "not a finite number"),
        (("node", "put", "a\x00b", "-p", "social"), 2, "NUL"),
        (("import", "/no/such/file.jsonl"), 2, "no such file"),
    ]:
        ran = drsg(*args)
        assert ran.code == code, (args, ran.code, ran.err)
        assert text in ran.err, (args, ran.err)
        assert len(ran.err.strip().splitlines()) == 1, ran.err
    assert head_seq(drsg) == head


@pytest.mark.parametrize(
    ("as_of", "text"),
    [
        ("99", "beyond the head of the log"),
        ("0", "must be 1 or more"),
        ("2001-01-01T00:00:00Z", "before the first commit"),
        ("2026-01-01T00:00:00", "no UTC offset"),
        ("last tuesday", "cannot read"),
    ],
)
def test_bad_as_of(drsg: Drsg, as_of: str, text: str) -> None:
    seed_social(drsg)
    ran = drsg("get", "@ada", "-p", "social", "--as-of", as_of)
    assert ran.code == 2
    assert text in ran.err


def test_missing_database_is_not_created_by_reads(drsg: Drsg, tmp_path: Path) -> None:
    missing = tmp_path / "typo.drsg"
    for args in (("stats",), ("get", "1"), ("log",), ("plane", "list"), ("export",)):
        ran = drsg(*args, db=missing)
        assert ran.code == 1 and "no database at" in ran.err
    assert not missing.exists()
    ran = drsg("plane", "create", "x", db=tmp_path / "nodir" / "g.drsg")
    assert ran.code == 1 and "does not exist" in ran.err


def test_failed_write_to_a_new_database_leaves_no_file(drsg: Drsg, tmp_path: Path) -> None:
    fresh = tmp_path / "fresh.drsg"
    ran = drsg("node", "put", "x", "-p", "nope", db=fresh)
    assert ran.code == 1
    assert not fresh.exists() and not Path(f"{fresh}-lock").exists()


def _run_unable_to_write(folder: Path, db: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`drsg --db DB ARGS…` in a real process that cannot write in ``folder``. Root (as in CI) writes
    through file modes, so for root the folder is a read-only bind mount in a private mount
    namespace (a real read-only file system); other users get the modes the caller set."""
    command = [sys.executable, "-m", "drsg.surfaces.cli", "--db", str(db), *args]
    if os.geteuid() == 0:
        where = shlex.quote(str(folder))
        script = f"mount --bind {where} {where} && mount -o remount,bind,ro {where} && exec {shlex.join(command)}"
        command = ["unshare", "-m", "--propagation", "private", "sh", "-c", script]
    return subprocess.run(command, capture_output=True, text=True, timeout=120)


def _assert_one_line_write_refusal(write: subprocess.CompletedProcess[str]) -> None:
    assert write.returncode == 1, write.stderr
    assert ("read-only file system" in write.stderr) or ("permission denied" in write.stderr), write.stderr
    assert len(write.stderr.strip().splitlines()) == 1


def test_read_only_database(drsg: Drsg, tmp_path: Path) -> None:
    """Reads work where the user may not write; writes fail with one line and change nothing."""
    seed_social(drsg)
    db = tmp_path / "graph.drsg"
    if os.geteuid() != 0:
        db.chmod(0o444)
    before = db.read_bytes()
    read = _run_unable_to_write(tmp_path, db, "get", "@ada", "-p", "social", "--json")
    assert read.returncode == 0, read.stderr
    assert json.loads(read.stdout)["external_key"] == "ada"
    _assert_one_line_write_refusal(_run_unable_to_write(tmp_path, db, "node", "put", "y", "-p", "social"))
    assert db.read_bytes() == before


def test_read_only_database_folder_as_root_too(drsg: Drsg, tmp_path: Path) -> None:
    """A database copied into a read-only folder (a mounted backup: no lock file beside it) is
    read-only for root as well: reads work, a write fails with one line, and nothing in the folder
    changes or appears — no lock file either. A file there that is not LMDB is named as such."""
    seed_social(drsg)
    folder = tmp_path / "ro"
    folder.mkdir()
    ro = folder / "graph.drsg"
    ro.write_bytes((tmp_path / "graph.drsg").read_bytes())
    not_a_db = folder / "notes.drsg"
    not_a_db.write_text("hello, I am not LMDB\n" * 100)
    before = {path.name: path.read_bytes() for path in folder.iterdir()}
    if os.geteuid() != 0:
        folder.chmod(0o555)
    try:
        read = _run_unable_to_write(folder, ro, "get", "@ada", "-p", "social", "--json")
        assert read.returncode == 0, read.stderr
        assert json.loads(read.stdout)["properties"] == {"born": 1815}
        _assert_one_line_write_refusal(_run_unable_to_write(folder, ro, "node", "put", "y", "-p", "social"))
        garbage = _run_unable_to_write(folder, not_a_db, "stats")
        assert garbage.returncode == 1 and "not a drsg database" in garbage.stderr, garbage.stderr
    finally:
        folder.chmod(0o755)
    assert {path.name: path.read_bytes() for path in folder.iterdir()} == before


def test_full_map_is_a_clean_error(drsg: Drsg, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seed_social(drsg)
    head = head_seq(drsg)
    f = tmp_path / "big.jsonl"
    text = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    with f.open("w") as fh:
        for i in range(3000):
            fh.write(json.dumps({"labels": ["Doc"], "external_key": f"d{i}", "properties": {"text": text}}) + "\n")
    monkeypatch.setenv("DRSG_STORE_MAX_MAP_SIZE", "2M")
    ran = drsg("import", str(f), "-p", "social")
    assert ran.code == 1, ran.err
    assert "size limit" in ran.err and "store.max_map_size" in ran.err
    assert len(ran.err.strip().splitlines()) == 1
    monkeypatch.delenv("DRSG_STORE_MAX_MAP_SIZE")
    assert head_seq(drsg) == head and drsg("get", "@d0", "-p", "social").code == 1
    assert drsg("import", str(f), "-p", "social").code == 0  # room to grow: the same import now works


def test_bad_config_is_a_usage_error(drsg: Drsg, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    conf = tmp_path / "drsg.toml"
    conf.write_text("[store]\nmapsize = 1\n")
    ran = drsg("--config", str(conf), "stats")
    assert ran.code == 2 and "unknown setting store.mapsize" in ran.err
    monkeypatch.setenv("DRSG_STORE_GROUP_MAX", "many")
    ran = drsg("config")
    assert ran.code == 2 and "store.group_max" in ran.err


def test_config_sources(drsg: Drsg, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    conf = tmp_path / "drsg.toml"
    conf.write_text('[store]\nmax_map_size = "8G"\n[server]\nmax_batch = 5\n')
    monkeypatch.setenv("DRSG_STORE_GROUP_MAX", "7")
    monkeypatch.setenv("DRSG_SERVER_MAX_QUERIES", "3")
    rows = {r["name"]: r for r in drsg("--config", str(conf), "config", "--json").json_lines()}
    assert rows["store.max_map_size"]["value"] == 8 << 30 and rows["store.max_map_size"]["source"].startswith("config")
    assert rows["store.group_max"]["value"] == 7 and rows["store.group_max"]["source"] == "env DRSG_STORE_GROUP_MAX"
    assert rows["store.map_size"]["source"] == "default"
    # `drsg serve`'s [server] settings are listed too, resolved the way the server resolves them
    assert rows["server.max_batch"]["value"] == 5 and rows["server.max_batch"]["source"].startswith("config")
    assert rows["server.max_queries"] == {
        "name": "server.max_queries",
        "env": "DRSG_SERVER_MAX_QUERIES",
        "value": 3,
        "source": "env DRSG_SERVER_MAX_QUERIES",
        "help": rows["server.max_queries"]["help"],
    }
    assert rows["server.addr"]["source"] == "default"
    monkeypatch.setenv("DRSG_SERVER_MAX_QUERIES", "-1")
    ran = drsg("config")
    assert ran.code == 2 and ran.out == "" and "server.max_queries" in ran.err and len(ran.err.splitlines()) == 1


def test_check_and_rebuild(drsg: Drsg) -> None:
    seed_social(drsg)
    before = drsg("export", "-p", "social").out
    assert drsg("rebuild").out.startswith("rebuilt the projection from 5 commits")
    assert drsg("export", "-p", "social").out == before
    assert drsg("check").out.startswith("ok: 5 commits verified, 2 nodes")


# ---------------------------------------------------------------------------- help and docs


def _commands(group: click.Group, prefix: str = "") -> list[tuple[str, click.Command]]:
    out = []
    for name in group.list_commands(click.Context(group)):  # drsg's loads its commands when asked
        command = group.get_command(click.Context(group), name)
        assert command is not None, f"`drsg {prefix}{name}` is listed but cannot be loaded"
        full = f"{prefix}{name}"
        out.append((full, command))
        if isinstance(command, click.Group):
            out.extend(_commands(command, full + " "))
    return out


@pytest.mark.parametrize(("name", "command"), _commands(cli))
def test_every_command_has_help_and_is_in_the_command_guide(name: str, command: click.Command) -> None:
    assert command.help and command.help.strip(), f"`drsg {name}` has no help text"
    described = f"`{name}" in COMMANDS_DOC or f"`{name.split()[-1]}" in COMMANDS_DOC
    assert described, f"`drsg {name}` is not in docs/commands.md"


def test_the_command_table_names_every_command_where_it_is() -> None:
    from drsg.surfaces.cli import main

    folder = Path(main.__file__).parent
    found = {}
    for path in sorted(folder.glob("[!_]*.py")):  # (__main__ runs the CLI)
        module = __import__(f"drsg.surfaces.cli.{path.stem}", fromlist=["COMMANDS"])
        found.update({command.name: path.stem for command in getattr(module, "COMMANDS", [])})
    assert found == main.COMMAND_MODULES


def test_a_command_imports_only_what_it_needs(db_path: Path) -> None:
    # all the commands' modules together took 0.33 s of a 0.48 s start, for every command
    probe = (
        "import sys; from drsg.surfaces.cli.main import cli; "
        f"cli(['--db', {str(db_path)!r}, 'plane', 'create', 'x'], standalone_mode=False); "
        "print(sorted(m for m in ('numpy', 'hnswlib', 'tantivy', 'wasmtime', 'openai') if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.strip().endswith("[]"), done.stdout


def test_exit_codes_through_a_real_process(db_path: Path) -> None:
    exe = [sys.executable, "-m", "drsg.surfaces.cli", "--db", str(db_path)]
    ok = subprocess.run([*exe, "plane", "list"], capture_output=True, text=True)
    assert ok.returncode == 1 and "no database" in ok.stderr  # reads never create
    made = subprocess.run([*exe, "plane", "create", "x"], capture_output=True, text=True)
    assert made.returncode == 0 and made.stdout.startswith("created plane 'x'")
    usage = subprocess.run([*exe, "get", "@a", "--as-of", "soon"], capture_output=True, text=True)
    assert usage.returncode == 2 and "Traceback" not in usage.stderr


def test_the_docs_document_every_setting() -> None:
    from drsg.kernel.settings import REGISTRY

    for setting in REGISTRY:
        env = f"`{setting.env}`" if setting.env else "—"
        assert setting.help.strip(), f"{setting.name} has no help text to document it"
        row = f"| `{setting.name}` | {env} |"
        assert row in SETTINGS_DOC, f"{setting.name} is not in docs/reference/settings.md; run `make docs`"
