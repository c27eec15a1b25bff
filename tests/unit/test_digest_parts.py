"""The digest's pure parts: chunking, reading model answers, folding, the passes' bookkeeping."""

from __future__ import annotations

import json
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from drsg.pipeline.convert.base import SOURCE_MARKER, source_marker
from drsg.pipeline.digest.chunking import MIN_CHUNK_CHARS, chunk_text, split_in_half
from drsg.pipeline.digest.draft import Draft
from drsg.pipeline.digest.folding import collapse, fold, fold_names
from drsg.pipeline.digest.identity import candidate_pairs
from drsg.pipeline.digest.schema import (
    MAX_ITEMS,
    ExtractedEntity,
    ExtractedRelation,
    Extraction,
    clean_label,
    clean_type,
    parse_extraction,
)
from drsg.pipeline.digest.vocabulary import _groups
from drsg.pipeline.llm.answers import MalformedAnswer, json_object

# --------------------------------------------------------------------------- chunking


def test_paragraphs_pack_up_to_the_size_and_sources_never_mix() -> None:
    text = "\n\n".join(["a" * 90, "b" * 90, "c" * 90, source_marker("two.md"), "d" * 10])
    chunks = chunk_text(text, 200)
    assert chunks == ["a" * 90 + "\n\n" + "b" * 90, "c" * 90, f"{SOURCE_MARKER} two.md -->\n\n" + "d" * 10]


def test_a_long_paragraph_splits_at_whitespace_and_a_long_word_is_cut() -> None:
    words = " ".join(["word"] * 100)  # 499 characters
    chunks = chunk_text(words + "\n\n" + "x" * 450, 200)
    assert all(len(c) <= 200 for c in chunks)
    assert " ".join(chunks[:3]).split() == words.split()
    assert "".join(chunks[3:]) == "x" * 450


def test_size_has_a_floor_and_characters_not_bytes_are_counted() -> None:
    assert chunk_text("广" * 190, 10) == ["广" * 190]  # 190 characters (570 bytes) fit the 200 floor
    assert MIN_CHUNK_CHARS == 200


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.text(alphabet=st.sampled_from("ab 广\n"), max_size=500), st.sampled_from([source_marker("x"), ""])
        ),
        max_size=12,
    ),
    st.integers(min_value=1, max_value=600),
)
def test_chunking_keeps_every_word_in_order_within_the_size(parts: list[str], size: int) -> None:
    text = "\n\n".join(parts)
    chunks = chunk_text(text, size)
    limit = max(size, MIN_CHUNK_CHARS)
    assert all(0 < len(c) <= limit for c in chunks)
    assert "".join("".join(chunks).split()) == "".join(text.split())
    for chunk in chunks:  # a source marker only ever opens a chunk
        assert SOURCE_MARKER not in chunk[1:]


def test_split_in_half_cuts_near_the_middle_at_whitespace() -> None:
    left, right = split_in_half("one two three four five six")
    assert left and right and f"{left} {right}" == "one two three four five six"


# --------------------------------------------------------------------------- reading answers


def test_json_is_found_inside_fences_and_prose_and_trailing_commas_are_repaired() -> None:
    text = 'Sure! ```json\n{"entities": [{"key": "Ada", "label": "Person",}],}\n``` Hope this helps.'
    assert json_object(text) == {"entities": [{"key": "Ada", "label": "Person"}]}
    for bad in ("no json here", '{"entities": [', "[1, 2]"):
        with pytest.raises(MalformedAnswer):
            json_object(bad)


def test_only_what_fits_the_schema_is_kept() -> None:
    answer = {
        "entities": [
            {"key": "  Ada   Lovelace ", "label": "programming language", "properties": {"born": 1815}},
            {
                "key": "Evil",
                "label": "X",
                "properties": {
                    "_source": "forged",
                    "embedding": [1, 2],
                    "description": "sneaky",
                    "nested": {"a": 1},
                    "ok": "fine",
                    "nan": float("inf"),
                },
            },
            {"key": "bad\x07key"},
            {"key": ""},
            "not an object",
            {"label": "NoKey"},
        ],
        "relations": [
            {"src": "Ada", "dst": "Evil", "type": "works at"},
            {"src": "Ada", "dst": "Evil", "type": "!!!"},
            {"src": "Ada", "type": "X"},
        ],
        "instructions": "drop the plane",
    }
    found = parse_extraction(json.dumps(answer).replace("Infinity", "1e999"))
    assert found.entities[0] == ExtractedEntity("Ada Lovelace", "ProgrammingLanguage", {"born": 1815}, "")
    assert found.entities[1].props == {"ok": "fine"}  # no provenance, vectors, objects or non-finite numbers
    assert found.relations == [ExtractedRelation("Ada", "Evil", "WORKS_AT", {}, "")]
    assert found.dropped == 4 + 2


def test_labels_and_types_are_normalised() -> None:
    assert clean_label("person") == "Person" and clean_label("Research lab") == "ResearchLab"
    assert clean_type("used in") == "USED_IN" and clean_type("USES") == "USES" and clean_type(" - ") == ""


# --------------------------------------------------------------------------- folding and the passes


def test_fold_survivor_is_the_most_frequent_then_the_first() -> None:
    assert fold("Works-At") == fold("WORKS_AT") == "worksat"
    renames, folded = fold_names(Counter({"person": 1, "Person": 3, "PERSON": 3, "Place": 1}))
    assert renames == {"person": "PERSON", "Person": "PERSON"} and folded == 2


def test_rename_chains_collapse_and_cycles_break() -> None:
    assert collapse({"a": "b", "b": "c"}) == {"a": "c", "b": "c"}
    assert collapse({"a": "b", "b": "a"}) == {"b": "a"}
    assert collapse({"x": "y", "y": "z", "z": "y"}) == {"x": "y", "z": "y"}


def test_vocabulary_groups_use_only_given_names_and_never_reclaim() -> None:
    reply = {"groups": [["Person", "Human", "Ghost"], ["Human", "Scientist"], ["Place"], "junk", ["Org", "Org"]]}
    assert _groups(reply, {"Person", "Human", "Scientist", "Place", "Org"}) == {"Human": "Person"}
    assert _groups(None, {"a"}) == {} and _groups({"groups": "no"}, {"a"}) == {}


def _draft(*entities: tuple[str, str]) -> Draft:
    found = Extraction([ExtractedEntity(k, label, {}, "") for k, label in entities])
    return Draft.merge([(0, found)])


def test_identity_pairs_are_containments_with_compatible_labels() -> None:
    draft = _draft(("Turing", "Person"), ("Alan Turing", "Person"), ("Turing Award", "Prize"), ("Ada", ""))
    assert candidate_pairs(draft) == [("Turing", "Alan Turing")]


def test_merging_an_entity_fills_gaps_repoints_edges_and_drops_self_loops() -> None:
    found = Extraction(
        [
            ExtractedEntity("Turing", "Person", {"born": 1912, "x": 1}, "d"),
            ExtractedEntity("Alan Turing", "", {"x": 2}, ""),
        ],
        [ExtractedRelation("Turing", "Alan Turing", "SAME", {}, ""), ExtractedRelation("Turing", "B", "KNOWS", {}, "")],
    )
    draft = Draft.merge([(0, found), (3, Extraction([ExtractedEntity("B", "Person", {}, "")]))])
    draft.merge_entity("Turing", "Alan Turing")
    assert draft.dedupe_relations() == 1
    survivor = draft.entities["Alan Turing"]
    assert survivor.props == {"x": 2, "born": 1912} and survivor.label == "Person" and survivor.description == "d"
    assert survivor.as_written == {"_key_as_written": "Turing"}
    assert [(r.src, r.type, r.dst) for r in draft.relations] == [("Alan Turing", "KNOWS", "B")]


def test_a_runaway_answer_is_cut_and_counted() -> None:
    answer = {"entities": [{"key": f"e{i}", "label": "X"} for i in range(MAX_ITEMS + 7)], "relations": []}
    found = parse_extraction(json.dumps(answer))
    assert len(found.entities) == MAX_ITEMS and found.dropped == 7


def test_the_planes_spelling_wins_the_fold_without_asking_the_model() -> None:
    from drsg.pipeline.digest.vocabulary import _reconcile
    from drsg.pipeline.llm.calls import ModelCalls

    no_model = ModelCalls("none:none", None, None)  # any model call would raise
    report, renames = _reconcile("labels", Counter({"person": 2, "Person": 1}), no_model, ["PERSON", "Place"])
    assert renames == {"person": "PERSON", "Person": "PERSON"}
    assert (report.before, report.after, report.folded) == (2, 1, 2)
    _, untouched = _reconcile("labels", Counter({"Person": 3}), no_model, ["Place"])
    assert untouched == {}


@pytest.mark.parametrize("depth", [101, 900, 100_000])
def test_an_answer_nested_past_any_schema_is_malformed(depth: int) -> None:
    """100,000 deep is past Python's JSON reader (RecursionError before); 900 reads, but what walks it
    recursively would not; 101 is past the deepest value drsg stores."""
    deep = '{"entities": ' + "[" * depth + "]" * depth + "}"
    with pytest.raises(MalformedAnswer, match="nests deeper than 100 levels"):
        parse_extraction(deep)
    with pytest.raises(MalformedAnswer, match="nests deeper"):
        json_object("Here it is: " + deep)
    assert json_object('{"entities": ' + "[" * 99 + "]" * 99 + "}")  # as deep as a stored value may be
