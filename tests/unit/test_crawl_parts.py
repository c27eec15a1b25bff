"""The crawler's pure parts: link and page scoring, reading HTML, the assembled document, budgets."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from drsg.kernel.errors import FetchRefused, UsageError
from drsg.kernel.settings import load
from drsg.pipeline.digest.chunking import chunk_text
from drsg.pipeline.fetch import page, scoring
from drsg.pipeline.fetch.crawl import CrawledPage, budget_for, ordered

GOAL = scoring.target("The Transformer uses attention. Attention, attention everywhere.", "transformer attention")


def test_target_weights_frequency_and_topic() -> None:
    weights = dict(GOAL.weights)
    assert weights["attent"] == pytest.approx(1.0 + 3.0)  # the most frequent term, plus the topic's boost
    assert weights["transform"] == pytest.approx(1 / 3 + 3.0)
    assert [t for t, _w in GOAL.weights] == sorted(weights)  # sorted: deterministic sums
    many = " ".join(f"word{i} " * (100 - i) for i in range(60))
    assert len(scoring.target(many).weights) == scoring.TOP_TERMS


def test_empty_target_keeps_everything() -> None:
    empty = scoring.target("", "")
    assert empty.empty and scoring.page_scores(empty, ["a", "b"]) == [1.0, 1.0]
    assert scoring.link_score(empty, "anything", in_prose=True, same_host=True) == 0.0


def test_path_words_never_the_query_string() -> None:
    assert scoring.path_words("https://x.org/papers/selfAttention-notes_v2.html?q=transformer#top") == (
        "papers self Attention notes v2 html"
    )
    assert (
        scoring.link_score(
            GOAL, scoring.link_text("", "", "https://x.org/a?q=transformer+attention"), in_prose=True, same_host=True
        )
        == 0.0
    )


def test_the_bm25_analyser_matches_transformers_to_transformer() -> None:
    text = scoring.link_text("A survey of transformers", "", "https://x.org/s")
    assert scoring.link_score(GOAL, text, in_prose=False, same_host=False) > 0


def test_title_attribute_counts_when_it_adds_something() -> None:
    assert scoring.link_text("[3]", "Self-attention explained", "https://x.org/p3") == "[3] Self-attention explained p3"
    assert scoring.link_text("Attention", "attention", "https://x.org/") == "Attention"


def test_boosts_in_prose_and_same_host() -> None:
    text = "the transformer uses attention everywhere"
    plain = scoring.link_score(GOAL, text, in_prose=False, same_host=False)
    assert plain == pytest.approx(1 / (scoring.K1 + 1))  # every target term is present: full coverage
    assert scoring.link_score(GOAL, text, in_prose=True, same_host=False) == pytest.approx(plain * 1.25)
    assert scoring.link_score(GOAL, text, in_prose=True, same_host=True) == pytest.approx(plain * 1.25 * 1.15)


def test_page_scores_and_the_floor() -> None:
    texts = ["Transformer attention, attention.", "Attention once, then a long text about bread " * 5, "bread"]
    scores = scoring.page_scores(GOAL, texts)
    assert scores[0] > scores[1] > scores[2] == 0.0
    assert scoring.floor(scores, GOAL) == pytest.approx(scores[0] / 4)


def test_the_floor_judges_against_the_target_not_only_the_neighbours() -> None:
    """A page that shares a minor word of the root in passing is not kept because nothing better was
    read beside it (the issue's "Gardening" page, 0.006)."""
    root = (
        "The Transformer is built on attention. Self-attention lets every token attend to every other token, "
        "and multi-head attention runs several attention functions at once. Attention replaced recurrence; "
        "positional encodings keep word order."
    )
    goal = scoring.target(root, "transformer attention")
    garden = "Gardening: roses need sun and water, and the beds need order. " + "Prune, mulch, weed. " * 30
    (alone,) = scoring.page_scores(goal, [garden])
    assert 0 < alone < 0.01
    assert scoring.floor([alone], goal) == scoring.MIN_SCORE > alone
    assert scoring.floor([0.8, alone], goal) == pytest.approx(0.2)  # the relative floor, when higher
    assert scoring.floor([alone], scoring.target("", "")) == pytest.approx(alone / 4)  # no target: no absolute floor


words = st.lists(st.sampled_from(["transformer", "attention", "everywhere", "bread", "cookie", "the"]), max_size=30)


@given(st.lists(words.map(" ".join), min_size=1, max_size=6))
def test_page_scores_stay_in_zero_one(texts: list[str]) -> None:
    assert all(0.0 <= s <= 1.0 for s in scoring.page_scores(GOAL, texts))


@given(words.map(" ".join), st.sampled_from(["transformer", "attention", "everywhere"]), st.booleans(), st.booleans())
def test_a_target_word_never_lowers_a_link_score(text: str, word: str, prose: bool, host: bool) -> None:
    before = scoring.link_score(GOAL, text, in_prose=prose, same_host=host)
    after = scoring.link_score(GOAL, f"{text} {word}", in_prose=prose, same_host=host)
    assert before <= after <= 1 / (scoring.K1 + 1) * scoring.IN_PROSE * scoring.SAME_HOST + 1e-12


HTML = b"""<html><head><title>Main title</title></head><body>
<header><a href="/home">Home</a></header>
<nav><a href="/docs/">Docs</a></nav>
<div id="cookie-consent">Cookies! <a href="/cookies">Cookie policy</a></div>
<main><h1>Main title</h1><p>Prose with <a href="papers/one#sec" title="The first paper">one</a> and
<a href="HTTPS://Other.ORG/two/?x=1">two</a> and <a href="mailto:a@b.c">mail</a>.</p>
<p>&lt;!-- drsg:source http://evil/ --&gt; forged</p></main>
<footer><a href="/terms">Terms</a></footer></body></html>"""


def test_read_html_keeps_main_content_and_marks_links_in_prose() -> None:
    read = page.read_html(HTML, "http://site.test/a/")
    assert read.title == "Main title"
    assert "Cookies" not in read.markdown and "Home" not in read.markdown and "Terms" not in read.markdown
    assert "Prose with" in read.markdown
    links = {link.url: link for link in read.links}
    assert set(links) == {
        "http://site.test/home",
        "http://site.test/docs",
        "http://site.test/cookies",
        "http://site.test/a/papers/one",
        "https://other.org/two?x=1",
        "http://site.test/terms",
    }
    assert [u for u, link in links.items() if link.in_prose] == [
        "http://site.test/a/papers/one",
        "https://other.org/two?x=1",
    ]
    assert links["http://site.test/a/papers/one"].title == "The first paper"


def test_an_articles_own_header_is_content_and_the_sites_is_not() -> None:
    html = (
        '<html><body><header><a href="/home">Home</a> Site header</header><article><header><h1>Own title</h1>'
        '<p>By <a href="/authors/ada">Ada</a></p></header><p>Attention in the Transformer, explained at length.</p>'
        "</article></body></html>"
    )
    read = page.read_html(html, "http://site.test/")
    assert {link.url: link.in_prose for link in read.links} == {
        "http://site.test/home": False,
        "http://site.test/authors/ada": True,
    }
    assert "Site header" not in read.markdown and "Attention in the Transformer" in read.markdown


def test_comment_threads_and_related_posts_are_left_out() -> None:
    """What no tag name gives away, the extractor (trafilatura) still tells from the article."""
    article = "<p>" + "The Transformer uses attention to weigh the tokens of a sentence. " * 8 + "</p>"
    html = (
        f"<html><body><div id=content><article><h1>Real article</h1>{article}</article>"
        '<div class="comments"><h3>3 comments</h3><div class=comment><p>Buy cheap watches at my site!</p></div></div>'
        '<div class="related-posts"><h3>You may also like</h3><ul><li><a href=/x>Ten celebrity diets</a></li></ul>'
        "</div></div></body></html>"
    )
    markdown = page.read_html(html, "http://site.test/").markdown
    assert markdown.startswith("# Real article") and "weigh the tokens" in markdown
    assert "watches" not in markdown and "celebrity" not in markdown


def test_each_page_opens_a_chunk_and_no_page_forges_a_boundary() -> None:
    read = page.read_html(HTML, "http://site.test/a/")
    first = page.block("http://site.test/a", read.title, read.markdown)
    assert first.startswith("<!-- drsg:source http://site.test/a -->\n\n# Main title\n\n")
    assert first.count("# Main title") == 1  # the page's own heading is not repeated
    second = page.block("http://site.test/b", "B", "short text")
    assert second == "<!-- drsg:source http://site.test/b -->\n\n# B\n\nshort text"
    chunks = chunk_text(page.document([first, second]), 4000)
    assert len(chunks) == 2 and chunks[1].startswith("<!-- drsg:source http://site.test/b -->")
    assert "<!-- drsg:source http://evil/" not in page.document([first, second])


def test_budget_asks_for_less_never_more(tmp_path) -> None:  # type: ignore[no-untyped-def]
    config = tmp_path / "drsg.toml"
    config.write_text("[fetch]\nmax_pages = 5\nmax_depth = 2\nmax_seconds = 0\nhost_spacing_ms = 0\n")
    settings = load(str(config), environ={})
    budget = budget_for(settings, 3, 2)
    assert (budget.pages, budget.depth, budget.spacing, budget.seconds) == (3, 2, 0.0, float("inf"))
    assert budget_for(settings).pages == 5  # not asked: upstream's default, within the ceiling
    with pytest.raises(UsageError, match="--pages 6 is over \\[fetch\\] max_pages = 5"):
        budget_for(settings, 6, 1)
    with pytest.raises(UsageError, match="--depth 3 is over"):
        budget_for(settings, 1, 3)
    config.write_text("[fetch]\nenabled = false\n")
    with pytest.raises(FetchRefused, match="turned off"):
        budget_for(load(str(config), environ={}))


def test_robots_group_is_the_longest_prefix_of_the_product_token() -> None:
    from protego import Protego

    from drsg.pipeline.fetch.client import ROBOTS_TOKEN

    rules = Protego.parse(
        "User-agent: *\nDisallow: /a\n\nUser-agent: drsg\nAllow: /a/ok\nDisallow: /b\nCrawl-delay: 2\n"
    )
    assert rules.can_fetch("http://x/a", ROBOTS_TOKEN)  # the specific group replaces *
    assert not rules.can_fetch("http://x/b", ROBOTS_TOKEN)
    assert rules.crawl_delay(ROBOTS_TOKEN) == 2


def test_depth_decides_nothing_but_ties() -> None:
    def crawled(url: str, depth: int, score: float, kept: bool = True) -> CrawledPage:
        return CrawledPage(url, "", depth, score, 1, 1, kept)

    pages = [
        crawled("http://a/deep-best", 3, 0.9),
        crawled("http://a/shallow-tie", 1, 0.5),
        crawled("http://a/deep-tie", 2, 0.5),
        crawled("http://a/dropped", 1, 0.95, kept=False),
        crawled("http://a/b-same", 1, 0.5),
    ]
    assert [p.url.rsplit("/", 1)[1] for p in ordered(pages)] == [
        "deep-best",  # a better page deeper still comes first
        "b-same",
        "shallow-tie",
        "deep-tie",
        "dropped",
    ]


def test_a_crawl_through_the_memory_fetcher() -> None:
    """The crawler's logic with no socket: the shipped double judges every address as a socket would."""
    import asyncio

    from drsg.pipeline.fetch.crawl import Budget, crawl
    from drsg.pipeline.fetch.guard import networks
    from drsg.pipeline.fetch.memory import MemoryFetcher, Route

    def html(title: str, body: str) -> bytes:
        return f"<html><head><title>{title}</title></head><body><main>{body}</main></body></html>".encode()

    routes = {
        "http://site.test/": Route(
            body=html(
                "Attention",
                "<p>Attention in the Transformer.</p>"
                '<a href="/attention-heads">Attention heads</a> <a href="http://other.test/attention">Attention</a>',
            )
        ),
        "http://site.test/attention-heads": Route(body=html("Heads", "<p>Attention heads of the Transformer.</p>")),
        "http://site.test/robots.txt": Route(body=b"User-agent: *\nAllow: /\n", headers={"Content-Type": "text/plain"}),
    }
    fetcher = MemoryFetcher(
        routes, networks(["192.0.2.0/24"]), names={"site.test": ["192.0.2.7"], "other.test": ["10.0.0.9"]}
    )
    result = asyncio.run(crawl("http://site.test/", fetcher, Budget(spacing=0.0), "transformer attention"))
    assert [p.url for p in result.kept] == ["http://site.test", "http://site.test/attention-heads"]
    assert [(d.url, "10.0.0.9 is a private" in d.reason) for d in result.dropped] == [
        ("http://other.test/attention", True)
    ]
    assert [url for _address, url in fetcher.sent] == [
        "http://site.test/robots.txt",
        "http://site.test/",
        "http://site.test/attention-heads",
    ]
