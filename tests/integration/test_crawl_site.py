"""The crawler against a real local site (tests/support/crawl_site.py), reachable only through the
test's permit for 127.0.0.1/32: exactly the pages expected are kept, each drop has its reason, and
every budget bites — pages, depth, bytes per response, total bytes, total time, concurrency and
the host's spacing (its Crawl-delay, capped)."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
from collections.abc import AsyncIterator, Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from drsg.kernel.errors import FetchError
from drsg.pipeline.fetch.base import Exchange
from drsg.pipeline.fetch.client import USER_AGENT, Client
from drsg.pipeline.fetch.crawl import Budget, Crawl, crawl
from drsg.pipeline.fetch.guard import networks
from tests.support import crawl_site
from tests.support.cli import Drsg, Ran
from tests.support.fake_openai import FakeOpenAI, Reply, Request, chat_completion
from tests.support.scripted_model import ScriptedModel

PERMIT = networks(["127.0.0.1/32"])
TOPIC = "transformer attention"
BUDGET = Budget(
    pages=20, depth=1, page_bytes=1 << 20, spacing=0.0, max_crawl_delay=0.05, request_timeout=1.0, seconds=30
)


@pytest.fixture(scope="module")
def site() -> Iterator[crawl_site.Site]:
    with crawl_site.serving(slow=2.0) as running:
        yield running


def run(site: crawl_site.Site, budget: Budget = BUDGET, topic: str = TOPIC) -> Crawl:
    site.hits.clear()

    async def go() -> Crawl:
        async with Client(PERMIT, timeout=budget.request_timeout) as client:
            return await crawl(site.url + "/", client, budget, topic)

    return asyncio.run(go())


def path(site: crawl_site.Site, url: str) -> str:
    return url.removeprefix(site.url) or "/"


def reasons(site: crawl_site.Site, result: Crawl) -> dict[str, str]:
    return {path(site, d.url): d.reason for d in result.dropped}


def test_kept_and_dropped_are_exactly_the_expected(site: crawl_site.Site) -> None:
    result = run(site)
    kept = [path(site, p.url) for p in result.kept]
    assert kept[0] == "/"
    assert sorted(kept[1:]) == [
        "/notes/attention",
        "/papers/attention-is-all-you-need",
        "/papers/attention.pdf",  # through the PDF converter
        "/papers/efficient-transformers",  # "transformers" matched "Transformer"
        "/papers/p3",  # only its title attribute says what it is
    ]
    scores = [p.score for p in result.kept[1:]]
    assert scores == sorted(scores, reverse=True)
    dropped = reasons(site, result)
    expected = {
        "/about": "shares no term",  # navigation
        "/login": "shares no term",
        "/cookies": "shares no term",  # the cookie banner
        "/privacy": "shares no term",
        "/terms": "shares no term",  # the footer
        "/contact": "shares no term",
        "/r?topic=transformer+attention": "shares no term",  # the query string says nothing
        "/mirror/transformer-attention": "names 127.0.0.2",  # a redirect into private space
        "/secret/attention-notes": "robots.txt disallows it",
        "/slow/transformer-attention": "took longer than 1 s",
        "/huge/transformer-attention": "over the 1048576-byte limit",
        "/trickle/transformer-attention": "took longer than 1 s",  # the timeout covers the body too
        "/bomb/transformer-attention": "sent more than the 1048576-byte limit",  # 64 MiB inflated: stopped
        "/figures/attention-heads.png": "its type image/png is not read",
        "/papers/attention-economy": "is below the floor",  # its link looked relevant, its text is not
        "/recipes/banana-bread": "is below the floor",
        "/papers/multi-head-attention": "deeper than the 1-level depth budget",
    }
    assert set(dropped) == set(expected)
    for where, why in expected.items():
        assert why in dropped[where], (where, dropped[where])
    assert site.paths().count("/robots.txt") == 1  # once per host
    assert {hit.user_agent for hit in site.hits} == {USER_AGENT}
    assert USER_AGENT == "drsg-fetch/0.1.0"  # no contact configured: it names nobody else's
    # links the page only mentions in its text are never followed
    assert not any("never-linked" in p or "latest" in p for p in site.paths())


def test_the_crawl_delay_spaces_requests_and_is_capped(site: crawl_site.Site) -> None:
    result = run(site, replace(BUDGET, max_crawl_delay=0.15))
    starts = [hit.at for hit in site.hits]
    gaps = [b - a for a, b in itertools.pairwise(starts)]
    assert min(gaps) >= 0.13  # raised to Crawl-delay: 100, capped at 0.15 s
    assert result.seconds < 10  # not 100 s per request


def test_the_page_budget_bites(site: crawl_site.Site) -> None:
    result = run(site, replace(BUDGET, pages=3))
    assert len(result.pages) == 3  # the root and the two best links that could be read
    lower = [d for d in result.dropped if "the 3-page budget" in d.reason]
    unread = [d for d in result.dropped if "shares no term" not in d.reason and d not in lower]
    assert unread  # the best-ranked links include some that cannot be read: each gave its slot to the next
    ranked = result.candidates - sum("shares no term" in d.reason for d in result.dropped)
    assert len(lower) == ranked - 2 - len(unread) > 0


def test_the_depth_budget_bites(site: crawl_site.Site) -> None:
    deeper = run(site, replace(BUDGET, depth=2))
    two = {path(site, p.url): p.depth for p in deeper.kept}
    assert two["/papers/multi-head-attention"] == 2
    root_only = run(site, replace(BUDGET, depth=0))
    assert [p.url for p in root_only.pages] == [site.url]
    assert all("deeper than the 0-level depth budget" in d.reason for d in root_only.dropped)
    assert [p for p in site.paths() if p != "/robots.txt"] == ["/"]


def test_the_total_byte_budget_bites(site: crawl_site.Site) -> None:
    root = run(site, replace(BUDGET, depth=0)).pages[0].size
    result = run(site, replace(BUDGET, total_bytes=root + 600))
    assert sum(p.size for p in result.pages) <= root + 600  # concurrent responses share one meter
    assert any("-byte total budget" in d.reason for d in result.dropped)
    assert 1 <= len(result.kept) < 4


def test_the_time_budget_bites(site: crawl_site.Site) -> None:
    result = run(site, replace(BUDGET, seconds=1.0, request_timeout=20.0))
    assert result.seconds < 1.8
    dropped = reasons(site, result)
    assert "time budget ran out" in dropped["/slow/transformer-attention"]


class CountingClient(Client):
    """The real client, counting the requests (each redirect hop one) it has open at once."""

    open_now = 0
    most = 0

    @contextlib.asynccontextmanager
    async def exchange(self, url: str, timeout: float | None) -> AsyncIterator[Exchange]:
        CountingClient.open_now += 1
        CountingClient.most = max(CountingClient.most, CountingClient.open_now)
        try:
            async with super().exchange(url, timeout) as response:
                yield response
        finally:
            CountingClient.open_now -= 1


@pytest.mark.parametrize("concurrency", [1, 2, 4])
def test_the_concurrency_budget_bites(concurrency: int) -> None:
    with crawl_site.serving(robots="User-agent: *\nDisallow: /secret/\n", slow=0.3) as fast:
        CountingClient.most = 0

        async def go() -> Crawl:
            async with CountingClient(PERMIT, timeout=1.0) as client:
                return await crawl(fast.url + "/", client, replace(BUDGET, concurrency=concurrency), TOPIC)

        asyncio.run(go())
        assert CountingClient.most == concurrency


def test_robots_txt_missing_allows_all_and_a_server_error_disallows_all() -> None:
    """RFC 9309 §2.3.1.3–4: 4xx means no rules; 5xx means the host is disallowed."""
    with crawl_site.serving(robots_status=404) as missing:
        result = run(missing, replace(BUDGET, depth=1))
        assert "/secret/attention-notes" not in reasons(missing, result)  # read, as nothing forbids it
        assert "/secret/attention-notes" in missing.paths()
    with crawl_site.serving(robots_status=503) as failing:
        with pytest.raises(FetchError, match=r"robots\.txt answered HTTP 503, so the host counts as disallowed"):
            run(failing)
        assert failing.paths() == ["/robots.txt"]


def test_an_empty_target_keeps_every_page_read(site: crawl_site.Site) -> None:
    result = run(site, replace(BUDGET, depth=0), topic="")
    assert result.pages[0].score == 1.0


# ------------------------------------------------------------------- the CLI, and a hostile page


KEY = "sk-crawl-test"


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeOpenAI]:
    monkeypatch.setenv("CRAWL_CHAT_KEY", KEY)
    with FakeOpenAI(dims=8, api_key=KEY) as server:
        yield server


@pytest.fixture
def configured(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    config = tmp_path / "drsg.toml"
    config.write_text(
        '[fetch]\nallow_private = ["127.0.0.1/32"]\nmax_pages = 20\nhost_spacing_ms = 0\n'
        'max_crawl_delay_secs = 0\nrequest_timeout_secs = 1\nmax_page_bytes = "1M"\n'
    )
    monkeypatch.setenv("DRSG_CONFIG", str(config))
    return config


def digest(drsg: Drsg, fake: FakeOpenAI, *args: str) -> Ran:
    chat = ("--chat", fake.base_url, "--model", "fake-chat", "--chat-key-env", "CRAWL_CHAT_KEY")
    return drsg("digest", *args, *chat, "--no-embed", "--mode", "coarse")


def test_cli_preview_lists_kept_and_discarded(
    drsg: Drsg, fake: FakeOpenAI, configured: Path, site: crawl_site.Site
) -> None:
    ScriptedModel().install(fake)
    configured.write_text(configured.read_text() + 'contact = "https://example.org/crawler"\n')
    before = len(site.hits)
    ran = digest(drsg, fake, site.url + "/", "--plane", "web", "--topic", TOPIC, "--pages", "20")
    assert ran.code == 0, ran.err
    assert {hit.user_agent for hit in site.hits[before:]} == {f"{USER_AGENT} (+https://example.org/crawler)"}
    lines = ran.out.splitlines()
    assert lines[0].startswith("kept 6 page(s)")
    assert any(line.strip().startswith("1.000  depth 0") and line.endswith(site.url) for line in lines)
    assert any("/recipes/banana-bread  (relevance" in line for line in lines)
    assert "dry run — re-run with --apply to write" in ran.out
    assert "fetched 1/1 " in ran.err  # progress on stderr
    assert drsg("plane", "show", "web").code != 0  # a preview writes nothing


def test_a_page_with_a_prompt_injection_changes_nothing_else(
    drsg: Drsg, fake: FakeOpenAI, configured: Path, site: crawl_site.Site, db_path: Path
) -> None:
    model = ScriptedModel().install(fake)

    def obey(request: Request) -> Reply | None:  # a model that falls for the page
        if "IGNORE ALL PREVIOUS" not in request.json["messages"][1]["content"]:
            return None
        answer = {
            "entities": [
                {"key": "Transformer", "label": "Admin", "properties": {"_source": "root", "embedding": [1, 2]}},
                {"key": "x" * 5000, "label": "Admin"},
            ],
            "relations": [{"src": "Transformer", "dst": "nobody", "type": "OWNS"}],
            "follow": [site.url + "/never-linked", "http://169.254.169.254/latest"],
            "delete_plane": "keep",
        }
        return Reply(json=chat_completion(json.dumps(answer)))

    model.override["extract"] = obey
    assert drsg("plane", "create", "keep").code == 0
    root = site.url + "/"
    ran = digest(drsg, fake, root, "--plane", "web", "--topic", TOPIC, "--pages", "20", "--apply", "--json")
    assert ran.code == 0, ran.err
    out = ran.json_lines()[0]
    assert {p["url"] for p in out["crawl"]["pages"] if p["kept"]} >= {site.url + "/notes/attention"}
    assert not any("never-linked" in p or "latest" in p for p in site.paths())  # links the model named
    nodes = {r["external_key"]: r for r in drsg("export", "--plane", "web").json_lines() if "external_key" in r}
    assert "Transformer" in nodes and not any(len(key) > 1000 for key in nodes)  # the 5000-char key is refused
    for node in nodes.values():  # schema-valid entities only; provenance is drsg's, not the page's or model's
        assert node["properties"]["_source"]["$value"] == root
        assert "embedding" not in node["properties"]
    assert drsg("plane", "show", "keep").code == 0  # the other plane is untouched
    forgot = drsg("digest", root, "--forget", "--plane", "web")
    assert forgot.code == 0 and forgot.out.startswith(f"forgot {root}:")


def test_apply_after_a_preview_reuses_it_with_no_model_call(
    drsg: Drsg, fake: FakeOpenAI, configured: Path, site: crawl_site.Site
) -> None:
    ScriptedModel().install(fake)
    root = site.url + "/"
    args = ("--plane", "web", "--topic", TOPIC, "--pages", "4")
    assert digest(drsg, fake, root, *args).code == 0
    calls = len(fake.requests_to("/chat/completions"))
    applied = digest(drsg, fake, root, *args, "--apply")
    assert applied.code == 0, applied.err
    assert "applied the saved preview: no model call" in applied.out
    assert len(fake.requests_to("/chat/completions")) == calls
    listed = drsg("digest", "--list", "--plane", "web").out
    assert listed.startswith(f"{root}  (commits ")  # the ledger knows the crawl by its root URL


def test_a_missing_key_is_refused_before_any_page_is_fetched(
    drsg: Drsg,
    fake: FakeOpenAI,
    configured: Path,
    site: crawl_site.Site,
    db_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("CRAWL_CHAT_KEY")
    hits = len(site.hits)
    ran = digest(drsg, fake, site.url + "/", "--plane", "web")
    assert ran.code == 2 and len(ran.err.splitlines()) == 1, ran.err
    assert "needs CRAWL_CHAT_KEY; export it" in ran.err and "nothing was read" in ran.err
    assert len(site.hits) == hits and fake.requests == [] and not db_path.exists()  # the crawl used to run first


def test_cli_user_errors_are_one_line_and_write_nothing(
    drsg: Drsg,
    fake: FakeOpenAI,
    configured: Path,
    site: crawl_site.Site,
    db_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ScriptedModel().install(fake)
    missing = digest(drsg, fake, site.url + "/no-such-page", "--plane", "web")
    assert missing.code == 1 and "answered HTTP 404" in missing.err
    monkeypatch.delenv("DRSG_CONFIG")  # no permit: the loopback site is refused, before any connection
    hits = len(site.hits)
    refused = digest(drsg, fake, site.url + "/", "--plane", "web")
    assert refused.code == 1 and "list its block in [fetch] allow_private" in refused.err
    assert len(site.hits) == hits
    deep = digest(drsg, fake, site.url + "/", "--plane", "web", "--depth", "4")
    assert deep.code == 2 and "--depth 4 is over [fetch] max_depth = 3; ask for less or raise it" in deep.err
    assert "cannot read the root page: " in missing.err
    monkeypatch.setenv("DRSG_FETCH_CONTACT", "me\r\nX-Injected: 1")  # a header of its own: refused
    injected = digest(drsg, fake, site.url + "/", "--plane", "web")
    assert injected.code == 2 and "cannot go in a User-Agent header" in injected.err, injected.err
    assert len(site.hits) == hits
    for ran in (missing, refused, deep, injected):  # progress lines aside, one line saying what is wrong
        said = [line for line in ran.err.splitlines() if not line.startswith("fetched ")]
        assert len(said) == 1 and said[0].startswith("error: ") and "Traceback" not in ran.err
    assert fake.requests == [] and not db_path.exists()
