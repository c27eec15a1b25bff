"""The rough edges a newcomer hit in their first hour with the CLI (issue #35), one test each."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from drsg.kernel import settings
from tests.support.cli import Drsg
from tests.support.damage import delete_record, tamper
from tests.support.fake_openai import FakeOpenAI
from tests.support.mcp import call, over_stdio, refused
from tests.support.sample import SAMPLE


def test_as_of_before_a_plane_or_index_existed_says_when_it_was_made(drsg: Drsg) -> None:
    assert drsg("plane", "create", "docs").code == 0  # seq 2 (seq 1 is the bootstrap)
    assert drsg("node", "put", "d1", "-p", "docs", "-l", "Doc", "-P", 'body="hybrid retrieval"').code == 0  # 3
    assert drsg("index", "keyword", "Doc", "body", "-p", "docs").code == 0  # 4
    query = 'SEARCH (d:Doc) ON body MATCHING "hybrid"'
    before_index = drsg("search", f"{query} AS OF 3", "-p", "docs")
    assert before_index.code == 1
    assert before_index.err.strip() == (
        "error: no keyword index on Doc.body at seq 3: it was declared at seq 4; search as of seq 4 or later"
    )
    before_plane = drsg("search", f"{query} AS OF 1", "-p", "docs")
    assert before_plane.code == 1
    assert before_plane.err.strip() == (
        "error: no plane named 'docs' at seq 1: it was created at seq 2; read as of seq 2 or later"
    )
    assert drsg("get", "@d1", "-p", "docs", "--as-of", "1").err == before_plane.err  # every as-of read
    # at the head, a missing one still names the fix
    missing = drsg("search", 'SEARCH (d:Doc) ON title MATCHING "x"', "-p", "docs")
    assert missing.code == 1 and "declare one with `drsg index keyword Doc title --plane docs`" in missing.err
    assert "create it with `drsg plane create nowhere`" in drsg("search", query, "-p", "nowhere").err


def test_a_value_meant_as_json_that_falls_back_to_a_string_says_so(drsg: Drsg) -> None:
    assert drsg("plane", "create", "p").code == 0
    args = ["-P", 'name="unterminated', "-P", "tags=[1,2", "-P", "born=18x15", "-P", "nick=Ada", "-P", "n=5"]
    ran = drsg("node", "put", "x", "-p", "p", *args)
    assert ran.code == 0  # stored as before (upstream's JSON dialect keeps the text), but not silently
    notes = ran.err.splitlines()
    assert notes == [
        'note: --prop name: "unterminated is not valid JSON, so it is stored as a string; '
        'write --prop \'name="\\"unterminated"\' to mean the string, or fix the JSON',
        "note: --prop tags: [1,2 is not valid JSON, so it is stored as a string; "
        "write --prop 'tags=\"[1,2\"' to mean the string, or fix the JSON",
        "note: --prop born: 18x15 is not valid JSON, so it is stored as a string; "
        "write --prop 'born=\"18x15\"' to mean the string, or fix the JSON",
    ]  # a plain word (nick=Ada) is a string by design: no note
    props = drsg("get", "@x", "-p", "p", "--json").json_lines()[0]["properties"]
    assert props == {"name": '"unterminated', "tags": "[1,2", "born": "18x15", "nick": "Ada", "n": 5}


def test_check_takes_json_like_every_read_command(drsg: Drsg, db_path: Path) -> None:
    assert drsg("plane", "create", "p").code == 0
    assert drsg("node", "put", "a", "-p", "p").code == 0
    ran = drsg("check", "--json")
    assert ran.code == 0, ran.err
    [report] = ran.json_lines()
    assert report["ok"] is True and report["commits"] == 3 and report["nodes"] == 1
    assert report["records"]["nodes"] == 1 and report["problems"] == [] and report["notes"] == []
    tamper(db_path, "nodes", delete_record, pick=0)
    damaged = drsg("check", "--json")
    assert damaged.code == 1
    [report] = damaged.json_lines()
    assert report["ok"] is False and report["nodes"] is None
    assert any("table nodes: the projection differs" in p for p in report["problems"])
    assert "damaged: table nodes" in damaged.err  # the one-line report stays on stderr


def test_feed_takes_from_0_and_says_where_it_starts_without_from(drsg: Drsg) -> None:
    assert drsg("plane", "create", "p").code == 0  # seq 2
    assert drsg("node", "put", "a", "-p", "p").code == 0  # seq 3
    everything = drsg("feed", "-p", "p", "--from", "0", "--no-follow", "--json")
    assert everything.code == 0, everything.err
    assert [m["seq"] for m in everything.json_lines()] == [3] and everything.err == ""
    assert drsg("feed", "-p", "p", "--from", "1", "--no-follow", "--json").out == everything.out
    idle = drsg("feed", "-p", "p", "--no-follow")
    assert idle.code == 0 and idle.out == ""
    assert idle.err == (
        "nothing to show: without --from the feed starts after the head (seq 3); --from 0 shows every commit\n"
    )
    assert drsg("feed", "-p", "p", "--from", "-1").code == 2  # below 0 is still a usage error


def test_hybrid_explain_shows_similarity_as_search_does_and_what_the_graph_gave(drsg: Drsg) -> None:
    assert drsg("import", str(SAMPLE), "--plane", "pioneers", "--create-plane").code == 0
    assert drsg("index", "keyword", "Person", "note", "--plane", "pioneers").code == 0
    assert drsg("vectorize", "--plane", "pioneers", "--label", "Person", "--from", "note").code == 0
    text = "breaking enemy codes in wartime"
    near = drsg("search", f'SEARCH (p:Person) ON embedding NEAR "{text}" TOPK 20', "-p", "pioneers", "--json")
    similarity = {h["external_key"]: h["score"] for h in near.json_lines()}
    args = ["--label", "Person", "--vector", "embedding", "--keyword", "note", "--graph-hops", "1", "--k", "10"]
    ran = drsg("hybrid", text, "-p", "pioneers", *args, "--explain")
    assert ran.code == 0, ran.err
    lines = ran.lines()
    assert lines[1].startswith("  g: 1 for a seed (the top 10 vector and top 10 keyword hits), 0.5^hops")
    hits = [(line, explained) for line, explained in zip(lines[2::2], lines[3::2], strict=True)]
    seen_seed = seen_neighbour = False
    for line, explained in hits:
        key, raw = line.split("\t")[1], line.split("\t")[2]
        v = raw.split()[0].removeprefix("[v=")
        if v != "-":  # the vector channel's score is the similarity `search NEAR` prints, not a distance
            assert float(v) == round(similarity[key], 3), (key, v, similarity[key])
        if raw.endswith("g=1.000]"):
            assert explained.endswith("(g: a seed)")
            seen_seed = True
        elif raw.endswith("g=0.500]"):
            assert explained.endswith("(g: 1 hop from a seed)")
            seen_neighbour = True
    assert seen_seed and seen_neighbour  # the graph channel's two kinds of contribution, each named
    as_json = drsg("hybrid", text, "-p", "pioneers", *args, "--json").json_lines()
    top = as_json[0]  # JSON keeps upstream's raw channel: the cosine distance
    assert top["channels"]["vector"] == pytest.approx(1 - similarity[top["external_key"]], abs=1e-6)


def test_config_shows_values_as_drsg_toml_takes_them(drsg: Drsg, tmp_path: Path) -> None:
    mine = tmp_path / "mine.toml"
    mine.write_text(
        '[store]\nmap_size = "128M"\n[digest]\nignore_files = ["gitignore", "dockerignore"]\n'
        '[server]\nmax_queries = 4\nallowed_origins = ["https://a.example"]\n'
    )
    ran = drsg("--config", str(mine), "config")
    assert ran.code == 0, ran.err
    shown = dict(line.split("\t", 1)[0].split(" = ", 1) for line in ran.lines())
    assert shown["store.map_size"] == '"128MiB"' and shown["store.max_map_size"] == '"1TiB"'
    assert shown["digest.ignore_files"] == '["gitignore", "dockerignore"]' and shown["ask.masked"] == "[]"
    assert shown["fetch.enabled"] == "true" and shown["log.url"] == '""' and shown["server.tls"] == "{}"
    assert shown["server.max_queries"] == "4" and shown["store.group_max"] == "1000"
    # what it shows, pasted into a drsg.toml, reads back as the same settings
    sections: dict[str, list[str]] = {}
    for name, value in shown.items():
        section, key = name.split(".", 1)
        sections.setdefault(section, []).append(f"{key} = {value}")
    pasted = tmp_path / "pasted.toml"
    pasted.write_text("".join(f"[{s}]\n" + "\n".join(lines) + "\n" for s, lines in sections.items()))
    assert settings.load(str(pasted), environ={}).values == settings.load(str(mine), environ={}).values


def test_a_mistyped_command_is_offered_the_nearest_one(drsg: Drsg) -> None:
    ran = drsg("nod", "put", "x")
    assert ran.code == 2
    assert ran.err.startswith("error: No such command 'nod'. Did you mean 'node'? See `")


def test_global_options_work_after_the_command_too(drsg: Drsg, db_path: Path, tmp_path: Path) -> None:
    other = tmp_path / "other.drsg"
    assert drsg("plane", "create", "p", "--db", str(other)).code == 0  # the fixture's --db comes first: last wins
    assert drsg("node", "put", "a", "-p", "p", f"--db={other}", "-v").code == 0
    [stats] = drsg("stats", "--json", "-d", str(other)).json_lines()
    assert stats["nodes"] == 1 and not db_path.exists()  # the fixture's --db was never written
    config = tmp_path / "c.toml"
    config.write_text("[store]\ngroup_max = 7\n")
    shown = {r["name"]: r["value"] for r in drsg("config", "--json", "--config", str(config)).json_lines()}
    assert shown["store.group_max"] == 7
    missing = drsg("stats", "--db")
    assert missing.code == 2 and "Option '--db' requires an argument" in missing.err


def test_near_on_a_plane_without_vectors_names_the_fix(drsg: Drsg) -> None:
    assert drsg("plane", "create", "docs").code == 0
    assert drsg("node", "put", "d1", "-p", "docs", "-l", "Doc", "-P", 'body="time travel"').code == 0
    ran = drsg("search", "SEARCH (d:Doc) ON embedding NEAR [0.1, 0.2] TOPK 3", "-p", "docs")
    assert ran.code == 0 and ran.out == "0 result(s)\n"  # still an empty answer, as upstream's
    assert ran.err == (
        "hint: no Doc node in plane 'docs' holds a vector in 'embedding'; embed a text property first: "
        "`drsg vectorize --plane docs --label Doc --from TEXT_PROPERTY --into embedding`\n"
    )
    assert drsg("vectorize", "--plane", "docs", "--label", "Doc", "--from", "body").code == 0
    found = drsg("search", 'SEARCH (d:Doc) ON embedding NEAR "time travel" TOPK 3', "-p", "docs")
    assert found.code == 0 and found.lines()[0] == "1 result(s)" and found.err == ""


def test_mcp_get_node_of_a_missing_node_says_what_was_not_found(drsg: Drsg, db_path: Path, tmp_path: Path) -> None:
    assert drsg("plane", "create", "p").code == 0  # seq 2
    assert drsg("node", "put", "a", "-p", "p").code == 0  # seq 3

    async def run() -> list[str]:
        with FakeOpenAI() as fake:  # the stdio helper names a chat service; no tool here calls it
            async with over_stdio(db_path, fake, tmp_path) as session:
                assert (await call(session, "get_node", {"plane": "p", "key": "a"}))["external_key"] == "a"
                return [
                    await refused(session, "get_node", {"plane": "p", "key": "nobody"}),
                    await refused(session, "get_node", {"plane": "p", "id": 99}),
                    await refused(session, "get_node", {"plane": "p", "key": "a", "as_of": 2}),
                ]

    tail = "; search or describe_plane finds nodes"
    assert anyio.run(run) == [
        f"Error executing tool get_node: error -32602: no node with key 'nobody' in plane 'p'{tail}",
        f"Error executing tool get_node: error -32602: no node with id 99 in plane 'p'{tail}",
        f"Error executing tool get_node: error -32602: no node with key 'a' in plane 'p' at seq 2{tail}",
    ]
