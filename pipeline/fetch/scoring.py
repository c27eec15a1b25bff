"""Relevance for the crawler, decided twice (pure; no I/O).

Upstream's rules (reference §5), with one change the seed asks for: hop count decides nothing —
depth is never a factor in a score, only the tie-break toward the root when scores are equal.

- The **target**: the root page's 40 most frequent index terms (ties by term), weight = count /
  top count; each ``--topic`` term adds 3.0. Terms come from the BM25 index's analyser
  (``drsg.workers.analysis.analyze``), so "transformers" and "Transformer" are one term.
- **Before fetching**, a link is scored on its anchor text, its ``title`` attribute and the words of
  its URL path (never the query string): coverage = Σ w·[term present] / (Σw·(k1+1)), ×1.25 when the
  link sits in the page's prose (not navigation, header, footer or a cookie banner), ×1.15 on the
  same host.
- **After fetching**, a page is scored on its text with BM25's saturation and length norm against
  the mean length of its batch, clamped to [0, 1]; it is kept when it reaches both the absolute
  floor :data:`MIN_SCORE` (judged against the target itself, so a page that barely mentions it is
  dropped even when nothing better was read beside it) and ¼ of the best score at its depth.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

from drsg.workers.analysis import analyze

K1 = 1.2
B = 0.75
TOP_TERMS = 40
TOPIC_BOOST = 3.0
IN_PROSE = 1.25
SAME_HOST = 1.15
MIN_RATIO = 0.25
#: the least relevance a page is kept with, whatever its neighbours scored: pages about the target
#: score 0.15-0.6 (tests/integration/test_crawl_site.py); one that shares only a minor word of the
#: root page (a gardening page that says "order") scores under 0.01
MIN_SCORE = 0.05

_NOT_ALNUM = re.compile(r"[^0-9A-Za-z\u00C0-\uFFFF]+")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")


@dataclass(frozen=True)
class Target:
    """What the crawl looks for: index terms and their weights, sorted by term (deterministic sums)."""

    weights: tuple[tuple[str, float], ...]
    language: str = "english"

    @property
    def empty(self) -> bool:
        return not self.weights

    @property
    def total(self) -> float:
        return sum(w for _t, w in self.weights)


def target(root_text: str, topic: str = "", language: str = "english") -> Target:
    counts = Counter(analyze(root_text, language))
    top = sorted(counts.items(), key=lambda item: (-item[1], item[0]))[:TOP_TERMS]
    weights = {term: count / top[0][1] for term, count in top} if top else {}
    for term in dict.fromkeys(analyze(topic, language)):
        weights[term] = weights.get(term, 0.0) + TOPIC_BOOST
    return Target(tuple(sorted(weights.items())), language)


def path_words(url: str) -> str:
    """The words of ``url``'s path: split on punctuation and camelCase; the query string is ignored."""
    path = unquote(urlsplit(url).path)
    return " ".join(_CAMEL.sub(" ", part) for part in _NOT_ALNUM.split(path) if part)


def link_text(anchor: str, title: str, url: str) -> str:
    """What a link says about its page before it is fetched."""
    anchor = " ".join(anchor.split())
    title = " ".join(title.split())
    extra = title if title and title.lower() not in anchor.lower() else ""
    return " ".join(part for part in (anchor, extra, path_words(url)) if part)


def link_score(goal: Target, text: str, *, in_prose: bool, same_host: bool) -> float:
    """Coverage of the target by a link's words, boosted in prose and on the same host (max ≈ 0.65)."""
    if goal.empty:
        return 0.0
    present = set(analyze(text, goal.language))
    covered = sum(w for term, w in goal.weights if term in present)
    score = covered / (goal.total * (K1 + 1))
    return score * (IN_PROSE if in_prose else 1.0) * (SAME_HOST if same_host else 1.0)


def page_scores(goal: Target, texts: Sequence[str]) -> list[float]:
    """Each text's BM25-style score against the target, normalised by the batch's mean length."""
    if goal.empty:
        return [1.0] * len(texts)
    analysed = [Counter(analyze(text, goal.language)) for text in texts]
    lengths = [sum(c.values()) for c in analysed]
    mean = (sum(lengths) / len(lengths)) if lengths and sum(lengths) else 1.0
    scores = []
    for counts, length in zip(analysed, lengths, strict=True):
        norm = K1 * (1 - B + B * length / mean)
        raw = sum(w * counts[t] * (K1 + 1) / (counts[t] + norm) for t, w in goal.weights if counts[t])
        scores.append(min(1.0, max(0.0, raw / (goal.total * (K1 + 1)))))
    return scores


def floor(scores: Sequence[float], goal: Target) -> float:
    """The keep threshold for one depth: a quarter of its best score, and never under
    :data:`MIN_SCORE` (an empty target keeps every page read)."""
    relative = max(scores, default=0.0) * MIN_RATIO
    return relative if goal.empty else max(MIN_SCORE, relative)
