"""The text analyser: one function turns text into index terms, for every caller that needs "the
same analyser as the BM25 index" (the keyword index, its queries, crawler link scoring, catalog search).

Pipeline, per language:

1. Unicode NFKC normalisation (full-width Latin becomes ASCII, ligatures split), then ``str.lower``;
2. split on anything that is not a letter, a digit or a combining mark (Unicode-aware; marks are kept
   so Tamil, Devanagari-style vowel signs and Arabic harakat do not cut words apart; ``_`` splits);
3. drop stopwords of the language;
4. Snowball stem (``snowballstemmer``) for the 18 Snowball languages.

Chinese (``chinese``/``zh``/``zh-cn``/``zh-tw``) is segmented with jieba's search mode (a word and
its dictionary sub-words, so a query for 广告 finds 广告点击), then each segment goes through steps
1–3 (Latin parts are lowercased, punctuation dropped); Chinese is not stemmed.

Stopwords: tantivy's built-in lists where it has one — Lucene's 33-word English list and the
Snowball lists for Danish, Dutch, Finnish, French, German, Hungarian, Italian, Norwegian, Portuguese,
Russian, Spanish and Swedish — and small lists below for Arabic, Greek, Romanian, Tamil, Turkish and
Chinese. Changing anything here changes the terms of every keyword index: bump ``ANALYZER_VERSION``
so saved indexes are rebuilt rather than queried with different terms.

Pure: no I/O, except jieba loading its bundled dictionary the first time Chinese is analysed.
"""

from __future__ import annotations

import logging
import re
import threading
import unicodedata
from collections.abc import Callable
from typing import Any

import snowballstemmer
import tantivy

from drsg.kernel.languages import LANGUAGES, canonical_language, language_tag

__all__ = ["ANALYZER_VERSION", "LANGUAGES", "analyze", "analyzer", "canonical_language", "language_tag"]

#: Bump when the analyser's output changes for any input (keyword sidecars record it).
ANALYZER_VERSION = 1

# Languages tantivy has a stop list for (its "english" is Lucene's list, the others Snowball's).
_TANTIVY_STOP = {
    "english", "danish", "dutch", "finnish", "french", "german", "hungarian", "italian", "norwegian",
    "portuguese", "russian", "spanish", "swedish",
}  # fmt: skip


def _word_set(words: str) -> frozenset[str]:
    return frozenset(words.split())


# Small hand-made lists for the languages tantivy has none for (lowercased, as tokens appear).
_OWN_STOP: dict[str, frozenset[str]] = {
    "arabic": _word_set(
        "في من على إلى الى عن مع هذا هذه ذلك تلك التي الذي الذين أن ان إن كان كانت يكون و أو او لا ما "
        "لم لن هو هي هم نحن أنا انت قد ثم كل بين أي اي حتى إذا اذا عند منذ غير بعد قبل فيه فيها منه "
        "منها به بها له لها ذات"
    ),
    "greek": _word_set(
        "ο η το οι τα του της των τον την τις στο στη στην στον στα στις στους με σε για από απο και "
        "να θα δεν μη μην που πως ως είναι ειναι ήταν ένα ενα ένας μια μία αυτό αυτο αυτή αυτός αυτά "
        "όπως ή αλλά αλλα επί κατά μετά προς χωρίς"
    ),
    "romanian": _word_set(
        "și şi în de la cu pe un o care este din pentru că ca nu se a al ale ai lui sau mai ce fi sunt "
        "au prin dar iar acest această aceste acesta aceasta fost fiind unei unui despre după dupa "
        "între sa să le li îi"
    ),
    "tamil": _word_set(
        "ஒரு மற்றும் இந்த அந்த என்று என்ற இது அது உள்ள போன்ற மேலும் ஆனால் அல்லது இருந்து ஆகும் என "
        "இதில் அதில் அவர் அவர்கள் நான் நாம் நீ இங்கு அங்கு"
    ),
    "turkish": _word_set(
        "ve bir bu şu o da de için ile mi mı mu mü ne gibi daha çok ama veya ya ki en her olan olarak "
        "kadar sonra önce ise diye göre hem hiç bazı tüm bunu şey"
    ),
    "chinese": _word_set(
        "的 了 和 是 在 也 就 都 而 及 与 與 着 著 或 之 于 於 把 被 让 讓 从 從 对 對 向 这 這 那 个 個 "
        "一个 一個 我们 我們 你们 你們 他们 他們 它们 它們 没有 沒有 并 並 又 其 等 但 如果 因为 因為 所以 "
        "可以 这个 這個 那个 那個 吗 嗎 呢 吧 啊"
    ),
}

_CACHE_LIMIT = 200_000  # cached token -> term entries per language, before the cache starts over


def analyze(text: str, language: str) -> list[str]:
    """The index terms of ``text`` in ``language`` (a name or alias), in text order, repeats kept."""
    return analyzer(language)(text)


def analyzer(language: str) -> Callable[[str], list[str]]:
    """:func:`analyze` for one language, the language looked up once: for a caller that analyses
    every query of one index (the lookup is a fifth of a short query's analysis)."""
    return _analyser(canonical_language(language)).terms


# ---------------------------------------------------------------------- internals


def _mark_class() -> str:
    """A regex character class body matching every combining mark (categories Mn, Mc, Me)."""
    ranges: list[tuple[int, int]] = []
    for lo, hi in ((0, 0x20000), (0xE0000, 0xE1000)):  # planes 0-1 and 14 hold all marks
        for cp in range(lo, hi):
            if unicodedata.category(chr(cp))[0] == "M":
                if ranges and ranges[-1][1] == cp - 1:
                    ranges[-1] = (ranges[-1][0], cp)
                else:
                    ranges.append((cp, cp))
    return "".join(f"\\U{a:08x}" if a == b else f"\\U{a:08x}-\\U{b:08x}" for a, b in ranges)


_word_re: re.Pattern[str] | None = None
_init_lock = threading.Lock()


def _normalise(text: str) -> str:
    """Step 1: NFKC, then lowercase; ``_`` becomes a separator (``\\w`` would keep it)."""
    return unicodedata.normalize("NFKC", text).lower().replace("_", " ")


def _words(normalised: str) -> list[str]:
    """Step 2: runs of letters, digits and combining marks."""
    global _word_re
    if _word_re is None:
        with _init_lock:
            if _word_re is None:
                _word_re = re.compile(f"[\\w{_mark_class()}]+")
    return _word_re.findall(normalised)


class _Analyser:
    """One language's steps 3 and 4, with a cache from token to term ("" = dropped)."""

    def __init__(self, language: str) -> None:
        self.language = language
        self.cache: dict[str, str] = {}
        self.lock = threading.Lock()  # snowball stemmers keep state: one caller at a time on a miss
        self.stop: Callable[[str], bool]
        if language in _TANTIVY_STOP:
            builder = tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.raw())
            stop_filter = builder.filter(tantivy.Filter.stopword(language)).build()
            self.stop = lambda token: not stop_filter.analyze(token)
        else:
            own = _OWN_STOP.get(language, frozenset())
            self.stop = own.__contains__
        self.stem: Callable[[str], str] = str  # Chinese is not stemmed
        if language != "chinese":
            self.stem = snowballstemmer.stemmer(language).stemWord

    def term(self, token: str) -> str:
        term = self.cache.get(token)
        if term is None:
            with self.lock:
                term = "" if self.stop(token) else self.stem(token)
                if len(self.cache) >= _CACHE_LIMIT:
                    self.cache.clear()
                self.cache[token] = term
        return term

    def terms(self, text: str) -> list[str]:
        normalised = _normalise(text)
        if self.language == "chinese":
            tokens = [word for segment in _jieba().lcut_for_search(normalised) for word in _words(segment)]
        else:
            tokens = _words(normalised)
        cache = self.cache
        out = []
        for token in tokens:
            term = cache.get(token)
            if term is None:
                term = self.term(token)
            if term:
                out.append(term)
        return out


_analysers: dict[str, _Analyser] = {}
_jieba_module: Any = None


def _analyser(language: str) -> _Analyser:
    analyser = _analysers.get(language)
    if analyser is None:
        with _init_lock:
            analyser = _analysers.get(language)
            if analyser is None:
                analyser = _analysers[language] = _Analyser(language)
    return analyser


def _jieba() -> Any:
    """jieba, imported and initialised on first use, without its log lines on stderr."""
    global _jieba_module
    if _jieba_module is None:
        with _init_lock:
            if _jieba_module is None:
                import jieba

                jieba.setLogLevel(logging.WARNING)
                jieba.initialize()
                _jieba_module = jieba
    return _jieba_module


__all__ = ["ANALYZER_VERSION", "LANGUAGES", "analyze", "analyzer", "canonical_language", "language_tag"]
