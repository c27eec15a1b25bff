"""The shared text analyser (workers/analysis.py): languages, stopwords, stemming, Chinese."""

from __future__ import annotations

import threading

import pytest

from drsg.kernel.errors import UsageError
from drsg.workers.analysis import LANGUAGES, analyze, canonical_language, language_tag

SNOWBALL = [
    "english", "arabic", "danish", "dutch", "finnish", "french", "german", "greek", "hungarian", "italian",
    "norwegian", "portuguese", "romanian", "russian", "spanish", "swedish", "tamil", "turkish",
]  # fmt: skip


def test_languages_are_upstreams_in_upstreams_order() -> None:
    assert list(LANGUAGES) == [*SNOWBALL, "chinese"]
    assert [language_tag(name) for name in LANGUAGES] == list(range(19))
    assert LANGUAGES["chinese"] == ("zh", "zh-cn", "zh-tw")


@pytest.mark.parametrize(
    ("name", "canonical"),
    [("en", "english"), ("English", "english"), (" de ", "german"), ("el", "greek"), ("no", "norwegian"),
     ("zh-CN", "chinese"), ("zh_tw", "chinese"), ("zh", "chinese"), ("ta", "tamil")],
)  # fmt: skip
def test_aliases(name: str, canonical: str) -> None:
    assert canonical_language(name) == canonical


def test_unknown_language_is_a_one_line_usage_error_listing_the_valid_names() -> None:
    with pytest.raises(UsageError) as caught:
        canonical_language("klingon")
    message = str(caught.value)
    assert "\n" not in message
    assert "'klingon'" in message
    for name in ("english (en)", "tamil (ta)", "chinese (zh/zh-cn/zh-tw)"):
        assert name in message
    with pytest.raises(UsageError):
        analyze("text", "xx")


def test_english_lowercases_splits_drops_stopwords_and_stems() -> None:
    assert analyze("running", "english") == ["run"]
    assert analyze("The runners were RUNNING to the station, and it is raining.", "en") == [
        "runner", "were", "run", "station", "rain",
    ]  # fmt: skip
    assert analyze("the a an and of to is it", "english") == []
    assert analyze("", "english") == []
    assert analyze("  ... !!! ", "english") == []


def test_split_is_unicode_aware() -> None:
    assert analyze("snake_case-and.dots/2024", "english") == ["snake", "case", "dot", "2024"]
    assert analyze("ＰＹＴＨＯＮ ﬁles", "english") == ["python", "file"]  # NFKC: full width, ligature
    # Combining marks stay inside words: Tamil vowel signs and virama, Arabic harakat.
    assert analyze("தமிழ் மொழி", "tamil") == ["தமிழ்", "மொழி"]
    assert analyze("كَتَبَ", "arabic") == analyze("كتب", "arabic")
    assert len(analyze("كَتَبَ الوَلَدُ", "arabic")) == 2


def test_french_german_russian_stems() -> None:
    assert analyze("Les chevaux mangeons le pain", "french") == ["cheval", "mangeon", "pain"]
    assert analyze("continuation continuer", "fr") == ["continu", "continu"]
    assert analyze("Die Häuser und die Kategorien", "german") == ["haus", "kategori"]
    assert analyze("Книгами и в России", "russian") == ["книг", "росс"]


@pytest.mark.parametrize(
    ("language", "stopword", "word"),
    [("english", "the", "graph"), ("french", "les", "graphe"), ("german", "und", "graph"),
     ("russian", "и", "граф"), ("spanish", "los", "grafo"), ("greek", "και", "γράφος"),
     ("turkish", "ve", "grafik"), ("romanian", "și", "graf"), ("tamil", "மற்றும்", "வரைபடம்"),
     ("arabic", "في", "رسم")],
)  # fmt: skip
def test_each_language_drops_its_own_stopwords(language: str, stopword: str, word: str) -> None:
    assert analyze(stopword, language) == []
    assert analyze(f"{stopword} {word}", language) == analyze(word, language) != []


@pytest.mark.parametrize("language", SNOWBALL)
def test_every_snowball_language_stems(language: str) -> None:
    sample = {
        "english": "connections connected", "arabic": "المكتبات", "danish": "bilerne", "dutch": "fietsen",
        "finnish": "taloissa", "french": "connexions", "german": "verbindungen", "greek": "ανθρώπων",
        "hungarian": "házakban", "italian": "connessioni", "norwegian": "bilene", "portuguese": "conexões",
        "romanian": "copiilor", "russian": "соединения", "spanish": "conexiones", "swedish": "bilarna",
        "tamil": "தமிழ்நாட்டில்", "turkish": "kitaplar",
    }[language]  # fmt: skip
    terms = analyze(sample, language)
    words = sample.split()
    assert len(terms) == len(words)
    assert any(term != word.lower() for term, word in zip(terms, words, strict=True))  # something was stemmed


def test_chinese_is_segmented_so_a_word_finds_a_compound() -> None:
    doc = analyze("广告点击", "zh")
    assert "广告" in doc
    assert set(analyze("广告", "chinese")) <= set(doc)
    # search mode also yields the sub-words of a long word
    assert {"中华", "人民", "共和国", "中华人民共和国"} <= set(analyze("中华人民共和国", "zh-cn"))


def test_chinese_lowercases_latin_drops_punctuation_and_stopwords_and_does_not_stem() -> None:
    terms = analyze("我的Python程序，运行 Running！", "zh")
    assert "python" in terms and "running" in terms
    assert "的" not in terms
    assert not any(term in "，！ " for term in terms)


def test_same_answer_from_many_threads() -> None:
    texts = [f"the connections {i} were running and jumping over generously" for i in range(200)]
    expected = [analyze(text, "english") for text in texts]
    results: list[list[list[str]]] = []

    def work() -> None:
        results.append([analyze(text, "english") for text in texts])

    threads = [threading.Thread(target=work) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == [expected] * 4
