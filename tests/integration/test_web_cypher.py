"""The Explore view's Cypher box end to end: a real `drsg serve` with a token, Debian's headless
chromium driving the dashboard, `plane.cypher` answering.

A MATCH run with Ctrl+Enter fills the table (the columns as headers, a node `(#id:Label) {…}`, a
relationship `[#id:TYPE]`) and draws its subgraph on the canvas; a syntax error shows the server's
message, caret and all, in a monospace block; a hostile property and a hostile statement stay
text; the time-travel slider pins the statement (a node created after the pinned commit is absent;
the statement's own AS OF wins; a write is refused and nothing is written); a write at the head
shows its counts and moves the slider to the new commit. One page load serves every check."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.browser import launch, needs_chromium, sign_in
from tests.support.server import RunningServer, start_server

pytestmark = needs_chromium

PLANE = "people"
XSS = "<img src=x onerror=window.__xss=1>"
XSS_STATEMENT = "<img src=x onerror=window.__xss=2>"
ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    workdir = tmp_path_factory.mktemp("web-cypher")
    running = start_server(workdir / "graph.drsg", workdir)
    yield running
    assert running.stop() == 0


@pytest.fixture(scope="module")
def graph(served: RunningServer) -> dict[str, dict[str, Any]]:
    """ada KNOWS babbage, mallory (a hostile name) KNOWS ada; then, in the plane's last commit, late."""
    served.call("plane.create", {"name": PLANE})
    made: dict[str, dict[str, Any]] = {}
    for key, name in (("ada", "Ada Lovelace"), ("babbage", "Charles Babbage"), ("mallory", XSS)):
        made[key] = served.call(
            "node.create", {"plane": PLANE, "key": key, "labels": ["Person"], "properties": {"name": name}}
        )
    for src, dst in (("ada", "babbage"), ("mallory", "ada")):
        edge = {"plane": PLANE, "src": made[src]["id"], "dst": made[dst]["id"], "type": "KNOWS"}
        made[f"{src}>{dst}"] = served.call("edge.create", edge)
    made["late"] = served.call(
        "node.create", {"plane": PLANE, "key": "late", "labels": ["Person"], "properties": {"name": "Late Comer"}}
    )
    return made


@pytest.fixture(scope="module")
def page(served: RunningServer, graph: dict[str, dict[str, Any]]) -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = launch(pw)
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        sign_in(page, served)
        page.evaluate("p => sessionStorage.setItem('drsg-plane', p)", PLANE)
        page.goto(f"http://127.0.0.1:{served.port}/#explore")
        page.wait_for_selector("#seeds li")
        yield page
        browser.close()
    assert not errors, errors


def run(page: Any, statement: str, params: str = "") -> None:
    """Type a statement (and its params), run it with Ctrl+Enter, wait for the answer or the error."""
    page.evaluate("['cypher-out', 'cypher-note'].forEach((id) => document.getElementById(id).replaceChildren())")
    page.fill("#cypher", statement)
    page.fill("#cypher-params", params)
    page.press("#cypher", "Control+Enter")
    page.wait_for_selector("#cypher-ran, #cypher-error")


def table(page: Any) -> list[list[str]]:
    return list(
        page.eval_on_selector_all("#cypher-rows tr", "rows => rows.map(r => [...r.cells].map(c => c.textContent))")
    )


def slide(page: Any, stop: int) -> None:
    page.eval_on_selector("#slider", "(s, v) => { s.value = v; s.dispatchEvent(new Event('input')); }", str(stop))


def shot(page: Any, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)


def person(node: dict[str, Any], name: str) -> str:
    """How the table shows a Person node with one property."""
    return f'(#{node["id"]}:Person) {{name: "{name}"}}'


def test_a_match_fills_the_table_and_the_canvas(page: Any, served: RunningServer, graph: dict[str, Any]) -> None:
    statement = "MATCH (p:Person)-[k:KNOWS]->(q:Person) RETURN p, k, q.name AS friend ORDER BY friend"
    run(page, statement)
    assert table(page) == [
        ["p", "k", "friend"],
        [person(graph["mallory"], XSS), f"[#{graph['mallory>ada']['id']}:KNOWS]", "Ada Lovelace"],
        [person(graph["ada"], "Ada Lovelace"), f"[#{graph['ada>babbage']['id']}:KNOWS]", "Charles Babbage"],
    ]
    assert page.inner_text("#cypher-ran").startswith("2 rows read at the head")
    # the subgraph on the canvas: its nodes said in its label, the first one at the centre
    label = page.get_attribute("#graph", "aria-label")
    assert label.startswith("3 nodes: ") and "Ada Lovelace" in label and "Charles Babbage" in label, label
    assert page.evaluate("window.__xss") is None and page.locator("img").count() == 0  # the hostile name is text
    shot(page, "cypher-match")
    first = served.call("plane.cypher", {"plane": PLANE, "query": statement})["nodes"][0]
    page.click("#graph")  # the centre: a click moves Explore there, as on any canvas
    page.wait_for_selector("#around")
    assert page.input_value("#node") == "@" + first["external_key"]


def test_a_syntax_error_shows_the_servers_message_and_caret(page: Any, served: RunningServer) -> None:
    statement = f"MATCH (n:Person)\nWHERE n.name = '{XSS_STATEMENT}'\nRETURN n LIMT 2"
    run(page, statement)
    error = served.error("plane.cypher", {"plane": PLANE, "query": statement})
    message = error["message"] + "\n" + error["data"]["excerpt"]  # one line, then the line with its caret
    *_, source, caret = message.split("\n")
    assert message.startswith("line 3, column 10: ") and caret.index("^") == source.index("LIMT"), message
    assert page.text_content("#cypher-error") == message
    style = page.eval_on_selector(
        "#cypher-error", "e => [e.tagName, getComputedStyle(e).whiteSpace, getComputedStyle(e).fontFamily]"
    )
    assert style[0] == "PRE" and style[1] == "pre" and "monospace" in style[2], (
        style
    )  # the caret stays under its column
    assert page.evaluate("window.__xss") is None and page.locator("img").count() == 0
    shot(page, "cypher-syntax-error")
    run(page, "MATCH (n) RETURN n", '{"name": ')
    assert "The params are not JSON" in page.text_content("#cypher-error")


def test_the_slider_pins_the_statement(page: Any, served: RunningServer, graph: dict[str, Any]) -> None:
    from playwright.sync_api import expect

    seqs = [c["seq"] for c in served.call("plane.changes", {"plane": PLANE, "after": 0})["commits"]]
    head = int(page.get_attribute("#slider", "max"))
    assert head == len(seqs) - 1 and "runs at the head" in page.inner_text("#cypher-pin")
    names = "MATCH (n:Person) RETURN n.name AS name ORDER BY name"
    run(page, names)
    everyone = sorted(["Ada Lovelace", "Charles Babbage", XSS, "Late Comer"])
    assert table(page) == [["name"], *([n] for n in everyone)]
    assert "Late Comer" in page.get_attribute("#graph", "aria-label")  # the matched subgraph, drawn
    slide(page, head - 1)  # the commit before late was created: the read runs again, pinned there
    pinned = seqs[head - 1]
    expect(page.locator("#cypher-pin")).to_contain_text(f"AS OF {pinned}")
    expect(page.locator("#cypher-ran")).to_contain_text(f"as of commit {pinned} (the slider)")
    assert table(page) == [["name"], *([n] for n in everyone if n != "Late Comer")]
    assert f"as of commit {pinned} (the slider)" in page.inner_text("#cypher-ran")
    assert "Late Comer" not in page.get_attribute("#graph", "aria-label")  # the canvas follows too
    run(page, names)  # run by hand while pinned: the same
    assert ["Late Comer"] not in table(page) and len(table(page)) == 4
    run(page, f"{names} AS OF {seqs[-1]}")  # the statement's own AS OF wins over the slider
    assert ["Late Comer"] in table(page)
    assert f"as of commit {seqs[-1]} (the statement's own AS OF)" in page.inner_text("#cypher-ran")
    shot(page, "cypher-pinned")
    # a write while pinned: refused by the server, its message shown, nothing written
    before = served.head()
    create = 'CREATE (n:Person {name: "Never"})'
    run(page, create)
    refused = served.error("plane.cypher", {"plane": PLANE, "query": f"{create}\nAS OF {pinned}"})["message"]
    assert page.text_content("#cypher-error") == refused
    assert served.head() == before
    slide(page, head)
    expect(page.locator("#cypher-pin")).to_have_text("runs at the head")  # (polled without eval: the CSP)


COUNTED = {
    "nodes_created": ("node", "created"),
    "nodes_deleted": ("node", "deleted"),
    "edges_created": ("relationship", "created"),
    "edges_deleted": ("relationship", "deleted"),
    "labels_added": ("label", "added"),
    "labels_removed": ("label", "removed"),
    "props_set": ("property", "set"),
    "props_removed": ("property", "removed"),
}


def test_a_write_shows_its_counts_and_moves_the_slider(page: Any, served: RunningServer) -> None:
    before, stops = served.head(), int(page.get_attribute("#slider", "max"))

    def sent(response: Any) -> bool:
        call = response.request.post_data_json
        return bool(call.get("method") == "plane.cypher" and call["params"]["query"].startswith("CREATE"))

    with page.expect_response(sent) as answered:
        run(page, "CREATE (n:Person {name: $name}) RETURN n", '{"name": "Zed"}')
    answer = answered.value.json()["result"]
    assert answer["write"] is True and answer["nodes_created"] == 1
    assert served.head() == before + 1
    from playwright.sync_api import expect

    # the answer is in; the page shows it once its handler has run (polled: the CI once read it before)
    expect(page.locator("#cypher-ran")).to_contain_text("A write at the head: 1 row returned")
    assert page.inner_text("#cypher-ran").startswith("A write at the head: 1 row returned")
    said = page.inner_text("#cypher-counts")
    assert said.startswith("1 node created")
    for field, (one, what) in COUNTED.items():
        n = answer[field]
        thing = one if n == 1 else ("properties" if one == "property" else one + "s")
        assert (f"{n} {thing} {what}" in said) == (n > 0), (field, said)
    (made,) = answer["nodes"]
    assert table(page) == [["n"], [person(made, "Zed")]]
    assert page.get_attribute("#slider", "max") == str(stops + 1) == page.input_value("#slider")  # at the new head
    assert "Zed" in page.get_attribute("#graph", "aria-label")
    shot(page, "cypher-write")


def test_a_statement_is_pinned_unless_it_names_its_own_as_of(page: Any, served: RunningServer) -> None:
    seq = served.call("plane.changes", {"plane": PLANE, "after": 0})["commits"][0]["seq"]
    cases = {
        "MATCH (n) RETURN n": f"MATCH (n) RETURN n\nAS OF {seq}",
        "MATCH (n) RETURN n;": f"MATCH (n) RETURN n\nAS OF {seq}",  # before the semicolon
        "MATCH (n) RETURN n // last": f"MATCH (n) RETURN n // last\nAS OF {seq}",  # after the comment
        "MATCH (n) WHERE n.x = 'AS OF 3' RETURN n": f"MATCH (n) WHERE n.x = 'AS OF 3' RETURN n\nAS OF {seq}",
        "MATCH (n) RETURN n /* AS OF 4 */": f"MATCH (n) RETURN n /* AS OF 4 */\nAS OF {seq}",
        f"MATCH (n) RETURN n AS OF {seq}": None,
        "MATCH (n) RETURN n as of TIME 1767323045000": None,
        'MATCH (n) RETURN n AS OF "2026-01-02T03:04:05Z"': None,
        "MATCH (n) RETURN n AS OF $when": None,
    }
    pinned = page.evaluate(
        "async ([cases, seq]) => { const m = await import('/static/cypher.js'); "
        "return cases.map((c) => m.pin(c, seq)); }",
        [list(cases), seq],
    )
    for (statement, want), got in zip(cases.items(), pinned, strict=True):
        assert got["statement"] == (want or statement), (statement, got)
        assert (got["pinned"] == seq) == (want is not None) and (got["own"] is None) == (want is not None), got
        if want is not None:  # what the box sends is a statement the server runs
            served.call("plane.cypher", {"plane": PLANE, "query": want})


def test_numbers_show_as_the_server_wrote_them(page: Any, served: RunningServer) -> None:
    statement = "RETURN 1.0 AS f, 1 AS i, 9007199254740993 AS big, [0.5, 2.0, 3] AS l, {n: 2.0} AS m"
    answer = served.rpc("plane.cypher", {"plane": PLANE, "query": statement})
    assert '"rows":[[1.0,1,9007199254740993,[0.5,2.0,3],{"n":2.0}]]' in json.dumps(answer, separators=(",", ":"))
    run(page, statement)
    # 1.0 is a float, not the integer 1; an integer past 2^53 keeps its digits
    assert table(page) == [["f", "i", "big", "l", "m"], ["1.0", "1", "9007199254740993", "[0.5, 2.0, 3]", '{"n": 2.0}']]


def test_a_path_shows_each_step_in_its_direction(page: Any, graph: dict[str, Any]) -> None:
    ada, babbage, mallory = (graph[k]["id"] for k in ("ada", "babbage", "mallory"))
    out, into = graph["ada>babbage"]["id"], graph["mallory>ada"]["id"]
    run(page, "MATCH p = (b)<-[:KNOWS]-(:Person {name: 'Ada Lovelace'})<-[:KNOWS]-() RETURN p, [b.name, b.born] AS l")
    path = f"(#{babbage}:Person)<-[#{out}:KNOWS]-(#{ada}:Person)<-[#{into}:KNOWS]-(#{mallory}:Person)"
    assert table(page) == [["p", "l"], [path, '["Charles Babbage", null]']]
