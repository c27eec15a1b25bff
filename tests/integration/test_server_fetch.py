"""`POST /digest/fetch` on a real `drsg serve` process: NDJSON progress, then the page list with
scores and `kept`, and the dropped list (upstream's shape); the `[fetch]` ceilings and switch."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest

from tests.support import crawl_site
from tests.support.crawl_site import FETCH_ENV
from tests.support.server import RunningServer, start_server


@pytest.fixture(scope="module")
def site() -> Iterator[crawl_site.Site]:
    with crawl_site.serving(slow=2.0) as running:
        yield running


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    workdir = tmp_path_factory.mktemp("serve-fetch")
    running = start_server(workdir / "graph.drsg", Path(workdir), env=FETCH_ENV)
    yield running
    assert running.stop() == 0


def fetch(served: RunningServer, **params: Any) -> tuple[int, list[dict[str, Any]]]:
    answer = served.post(b"", path=f"/digest/fetch?{urlencode(params)}")
    return answer.status, [json.loads(line) for line in answer.body.decode().splitlines() if line]


def test_progress_then_pages_and_dropped(served: RunningServer, site: crawl_site.Site) -> None:
    status, lines = fetch(served, url=site.url + "/", topic="transformer attention", pages=20)
    assert status == 200
    *progress, last = lines
    assert progress and all(set(line) == {"progress"} for line in progress)
    dones = [line["progress"]["done"] for line in progress]
    assert dones == list(range(1, len(dones) + 1))
    assert progress[-1]["progress"]["total"] == len(dones)
    assert set(last) == {"pages", "dropped"}
    kept = [p for p in last["pages"] if p["kept"]]
    assert kept[0]["url"] == site.url and kept[0]["score"] == 1.0 and kept[0]["depth"] == 0
    assert len(kept) == 6
    assert all(p["block"].startswith(f"<!-- drsg:source {p['url']} -->") for p in kept)
    assert set(last["pages"][0]) == {"url", "title", "block", "score", "depth", "chars", "size", "kept"}
    dropped = {d["url"].removeprefix(site.url): d["reason"] for d in last["dropped"]}
    assert "names 127.0.0.2" in dropped["/mirror/transformer-attention"]
    assert dropped["/secret/attention-notes"] == "robots.txt disallows it"


def test_ceilings_and_bad_params(served: RunningServer, site: crawl_site.Site) -> None:
    status, lines = fetch(served, url=site.url, pages=21)
    assert status == 400 and "over [fetch] max_pages = 20" in lines[0]["error"]
    status, lines = fetch(served, url=site.url, depth=4)
    assert status == 400 and "over [fetch] max_depth = 3" in lines[0]["error"]
    status, lines = fetch(served, url="")
    assert status == 400 and "url is required" in lines[0]["error"]
    status, lines = fetch(served, url=site.url, pages="many")
    assert status == 400 and "whole number" in lines[0]["error"]


def test_a_refused_root_is_an_error_line(served: RunningServer) -> None:
    status, lines = fetch(served, url="127.0.0.2/")  # bare: read as https, and refused by the guard
    assert status == 200 and lines == [{"error": lines[0]["error"]}]
    assert "https://127.0.0.2/ names 127.0.0.2" in lines[0]["error"]


def test_a_token_is_required(served: RunningServer, site: crawl_site.Site) -> None:
    answer = served.post(b"", token=None, path=f"/digest/fetch?{urlencode({'url': site.url})}")
    assert answer.status == 401


def test_fetching_can_be_turned_off(tmp_path: Path) -> None:
    running = start_server(tmp_path / "graph.drsg", tmp_path, env={"DRSG_FETCH_ENABLED": "false"})
    try:
        status, lines = fetch(running, url="https://example.com/")
        assert status == 403 and "turned off" in lines[0]["error"]
    finally:
        assert running.stop() == 0


def test_params_in_a_json_body(served: RunningServer, site: crawl_site.Site) -> None:
    answer = served.post(json.dumps({"url": site.url + "/", "depth": 0}), path="/digest/fetch")
    lines = [json.loads(line) for line in answer.body.decode().splitlines()]
    assert answer.status == 200 and [p["url"] for p in lines[-1]["pages"]] == [site.url]
    assert all("deeper than the 0-level depth budget" in d["reason"] for d in lines[-1]["dropped"])
    bad = served.post("[1, 2]", path="/digest/fetch")
    assert bad.status == 400 and "JSON object" in bad.body.decode()
