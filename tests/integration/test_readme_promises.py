"""Promises the docs make of the CLI (docs/graph.md, docs/time-travel.md, docs/commands.md) that had
no test of their own, through the real `drsg` command:
`export --as-of`, `--as-of` an RFC 3339 time on `get`/`neighbors`/`export`, `log --from/--to`,
`log --follow` (a real process, fed by another one), `node put --replace`, `plane set-props`."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from tests.support.cli import Drsg, head_seq, seed_social
from tests.support.server import clean_env, cli, drsg_argv
from tests.support.waiting import Lines, wait_until

IST = timezone(timedelta(hours=5, minutes=30))


def _commit_ms(drsg: Drsg, seq: int) -> int:
    return int(drsg("log", "--from", str(seq), "--to", str(seq), "--json").json_lines()[0]["ts"])


def _rfc3339(ms: int, zone: timezone = UTC) -> str:
    """The instant ``ms`` written as RFC 3339 with milliseconds, in ``zone`` (UTC as ``Z``)."""
    text = datetime.fromtimestamp(ms / 1000, tz=zone).isoformat(timespec="milliseconds")
    return text.replace("+00:00", "Z")


def _after(ms: int) -> None:
    """Wait for the clock to pass ``ms``, so the next commit is stamped later and a time can name
    exactly the commits up to ``ms``."""
    wait_until(lambda: time.time_ns() // 1_000_000 > ms, f"the clock to pass {ms}")


def _times_of(ms: int) -> list[str]:
    """Every spelling docs/time-travel.md allows for one instant: RFC 3339 in UTC, with an offset, and TIME ms."""
    return [_rfc3339(ms), _rfc3339(ms, IST), f"TIME {ms}"]


def test_export_as_of_is_exactly_the_export_made_then(drsg: Drsg, tmp_path: Path) -> None:
    seed_social(drsg)
    then = head_seq(drsg)
    made_then = drsg("export", "-p", "social").out
    assert len(made_then.splitlines()) == 3  # ada, bob, and the edge between them
    then_ms = _commit_ms(drsg, then)
    _after(then_ms)
    for args in (
        ("node", "put", "ada", "-p", "social", "-P", "born=1816"),
        ("node", "put", "cy", "-p", "social", "-l", "Robot"),
        ("edge", "put", "@cy", "@ada", "BUILT", "-p", "social"),
        ("node", "delete", "@bob", "-p", "social"),
    ):
        assert drsg(*args).code == 0, args
    assert drsg("export", "-p", "social").out != made_then

    for target in [str(then), *_times_of(then_ms)]:
        ran = drsg("export", "-p", "social", "--as-of", target)
        assert ran.code == 0, (target, ran.err)
        assert ran.out == made_then, target
    out = tmp_path / "then.jsonl"
    assert drsg("export", "-p", "social", "--as-of", _rfc3339(then_ms), "-o", str(out)).code == 0
    assert out.read_text() == made_then
    # One commit later the update shows, and nothing else yet.
    later = drsg("export", "-p", "social", "--as-of", str(then + 1)).out
    assert later == made_then.replace('"born":1815', '"born":1816')


def test_get_and_neighbors_as_of_an_rfc3339_time(drsg: Drsg) -> None:
    seed_social(drsg)
    then_ms = _commit_ms(drsg, head_seq(drsg))
    _after(then_ms)
    assert drsg("node", "put", "ada", "-p", "social", "-P", "born=1816").code == 0
    assert drsg("node", "delete", "@bob", "-p", "social").code == 0
    assert drsg("get", "@bob", "-p", "social").code == 1
    assert drsg("neighbors", "@ada", "-p", "social").lines() == []

    for when in _times_of(then_ms):
        ada = drsg("get", "@ada", "-p", "social", "--as-of", when, "--json")
        assert ada.code == 0 and ada.json_lines()[0]["properties"] == {"born": 1815}, (when, ada.err)
        bob = drsg("node", "get", "@bob", "-p", "social", "--as-of", when, "--json")
        assert bob.code == 0 and bob.json_lines()[0]["external_key"] == "bob", (when, bob.err)
        hops = drsg("neighbors", "@ada", "-p", "social", "--as-of", when, "--json").json_lines()
        assert [(h["direction"], h["edge"]["type"], h["node"]["external_key"]) for h in hops] == [
            ("out", "KNOWS", "bob")
        ], when
    # A second-precision time before the database existed is refused, not read as "now".
    ran = drsg("get", "@ada", "-p", "social", "--as-of", "2001-01-01T00:00:00+01:00")
    assert ran.code == 2 and "before the first commit" in ran.err and len(ran.err.splitlines()) == 1


def test_log_from_and_to_pick_a_range_of_commits(drsg: Drsg) -> None:
    seed_social(drsg)  # commits 1 (bootstrap) … 5
    everything = drsg("log", "--json").json_lines()
    assert [c["seq"] for c in everything] == [1, 2, 3, 4, 5]
    assert drsg("log", "--from", "2", "--to", "4", "--json").json_lines() == everything[1:4]
    assert drsg("log", "--from", "4", "--json").json_lines() == everything[3:]
    assert drsg("log", "--to", "2", "--json").json_lines() == everything[:2]
    one = drsg("log", "--from", "3", "--to", "3").lines()
    assert len(one) == 1 and one[0].startswith("seq 3\t") and one[0].endswith("\tcli\tnode.put")
    assert [m["key"] for m in everything[2]["mutations"]] == ["ada"]
    beyond = drsg("log", "--from", "6")
    assert beyond.code == 0 and beyond.out == ""
    assert drsg("log", "--from", "0").code == 2


def test_log_follow_prints_a_commit_another_process_makes(drsg: Drsg, db_path: Path) -> None:
    seed_social(drsg)
    follower = subprocess.Popen(
        [*drsg_argv(), "--db", str(db_path), "log", "--follow", "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=clean_env(),
    )
    try:
        assert follower.stdout is not None
        lines = Lines(follower.stdout)
        lines.until(lambda line: json.loads(line)["seq"] == 5, "the commits made before it started")
        made = cli(db_path, "node", "put", "late", "-p", "social", "-l", "Late")  # another process
        assert made.returncode == 0, made.stderr
        late = json.loads(lines.until(lambda line: json.loads(line)["seq"] == 6, "the commit made after it started"))
        assert [(m["op"], m["key"], m["labels"]) for m in late["mutations"]] == [("node.put", "late", ["Late"])]
        assert [json.loads(line)["seq"] for line in lines.seen] == [1, 2, 3, 4, 5, 6]
        assert follower.poll() is None  # still following
        follower.send_signal(signal.SIGINT)
        assert follower.wait(30) == 0  # Ctrl-C ends it cleanly
    finally:
        if follower.poll() is None:
            follower.kill()
            follower.wait(10)


def test_node_put_replace_replaces_labels_and_properties(drsg: Drsg) -> None:
    seed_social(drsg)
    merged = drsg("node", "put", "ada", "-p", "social", "-l", "Countess", "-P", 'title="Countess"', "--json")
    assert merged.json_lines()[0]["op"] == "updated"
    assert merged.json_lines()[0]["labels"] == ["Countess", "Person"]
    assert merged.json_lines()[0]["properties"] == {"born": 1815, "title": "Countess"}

    replaced = drsg("node", "put", "ada", "-p", "social", "--replace", "-l", "Engineer", "-P", "born=1816")
    assert replaced.code == 0 and replaced.out.startswith("replaced node #1 @ada (seq ")
    ada = drsg("get", "@ada", "-p", "social", "--json").json_lines()[0]
    assert (ada["id"], ada["labels"], ada["properties"]) == (1, ["Engineer"], {"born": 1816})
    hops = drsg("neighbors", "@ada", "-p", "social", "--json").json_lines()
    assert [(h["edge"]["type"], h["node"]["external_key"]) for h in hops] == [("KNOWS", "bob")]  # its edges stay
    history = drsg("node", "history", "@ada", "-p", "social", "--json").json_lines()
    assert [(h["record"]["labels"], h["record"]["properties"]) for h in history] == [
        (["Person"], {"born": 1815}),
        (["Countess", "Person"], {"born": 1815, "title": "Countess"}),
        (["Engineer"], {"born": 1816}),
    ]
    created = drsg("node", "put", "zed", "-p", "social", "--replace", "-l", "Z", "--json").json_lines()[0]
    assert created["op"] == "created" and created["labels"] == ["Z"]


def test_plane_set_props_merges_into_the_planes_properties(drsg: Drsg) -> None:
    assert drsg("plane", "create", "social").code == 0
    ran = drsg("plane", "set-props", "social", "-P", 'owner="qa"', "-P", "version=1")
    assert ran.code == 0 and ran.out == "set 2 properties on plane 'social'\n"
    first = head_seq(drsg)
    ran = drsg("plane", "set-props", "social", "--props", '{"version": 2, "tags": ["a", "b"]}')
    assert ran.code == 0, ran.err

    def props(*extra: str) -> Any:
        return drsg("plane", "show", "social", "--json", *extra).json_lines()[0]["properties"]

    assert props() == {"owner": "qa", "version": 2, "tags": ["a", "b"]}
    assert props("--as-of", str(first)) == {"owner": "qa", "version": 1}
    cards = {c["name"]: c for c in drsg("plane", "list", "--json").json_lines()}
    assert cards["social"]["properties"] == props()

    head = head_seq(drsg)
    for args, code, text in [
        (("plane", "set-props", "nope", "-P", "a=1"), 1, "no plane named 'nope'"),
        (("plane", "set-props", "social", "-P", "novalue"), 2, "is not NAME=VALUE"),
    ]:
        ran = drsg(*args)
        assert ran.code == code and text in ran.err and len(ran.err.splitlines()) == 1, (args, ran.err)
    assert head_seq(drsg) == head
