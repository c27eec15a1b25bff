"""The dashboard's chat choices come from the server's one preset list (`drsg.models.providers`,
as `rpc.discover` describes `digest.run`'s `chat`), not from a list of the page's own. A real
`drsg serve` and Debian's headless Chromium; the schema the page reads is altered on its way in
to show that the page offers what the server says."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from drsg.models.providers import PRESETS
from tests.support.browser import launch, needs_chromium, sign_in
from tests.support.server import RunningServer, start_server

APP_JS = Path(__file__).resolve().parents[2] / "surfaces" / "web" / "static" / "app.js"

pytestmark = needs_chromium


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    workdir = tmp_path_factory.mktemp("web-presets")
    running = start_server(workdir / "graph.drsg", workdir)
    yield running
    assert running.stop() == 0


@pytest.fixture
def page(served: RunningServer) -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = launch(pw)
        page = browser.new_page()
        sign_in(page, served)
        yield page
        browser.close()


def _chat_options(page: Any) -> list[str]:
    page.wait_for_selector("#chat option:nth-child(2)", state="attached")  # the server's answer is in
    return list(page.eval_on_selector_all("#chat option", "options => options.map(o => o.value)"))


def test_the_chat_choices_are_the_servers_presets(page: Any, served: RunningServer) -> None:
    page.goto(f"http://127.0.0.1:{served.port}/#digest")
    offered = _chat_options(page)
    assert offered == ["", *(name for name in PRESETS if name != "url")]  # "": the server's own chat model


def test_the_page_offers_what_the_server_says(page: Any, served: RunningServer) -> None:
    def altered(route: Any) -> None:
        if json.loads(route.request.post_data or "{}").get("method") != "rpc.discover":
            route.continue_()
            return
        answer = route.fetch().json()
        for method in answer["result"]["methods"]:
            for param in method["params"] if method["name"] == "digest.run" else []:
                if param["name"] == "chat":
                    param["schema"]["enum"] = ["alpha", "beta"]
        route.fulfill(json=answer)

    page.route("**/rpc", altered)
    page.goto(f"http://127.0.0.1:{served.port}/#digest")
    assert _chat_options(page) == ["", "alpha", "beta"]


def test_the_page_names_no_preset_itself() -> None:
    source = APP_JS.read_text(encoding="utf-8")
    named = [name for name in PRESETS if name != "url" and re.search(rf"[\"']{name}[\"']", source)]
    assert named == []
