"""A digest's report is one type: read by its fields, checked against what the scripted model on
loopback and the tree reader observed, its `to_json()` the wire `report` key for key, and the same
report read back from a saved preview."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from drsg.models.chat.remote import RemoteChatModel
from drsg.pipeline.digest.proposal import PreviewStore, Proposal
from drsg.pipeline.digest.report import DigestReport
from drsg.pipeline.digest.run import DigestOptions, digest
from drsg.pipeline.digest.sources import read_source
from drsg.pipeline.llm.calls import ModelCalls
from drsg.store.database import Database
from tests.support.fake_openai import FakeOpenAI
from tests.support.scripted_model import ScriptedModel

PROSE = ["chunks", "entities", "relations", "linked", "dropped_relations", "merged_relations"]
USAGE = ["chat_requests", "input_tokens", "output_tokens", "embed_tokens", "cache_hits"]
CODE = ["files", "facts", "parsed", "preprocessed"]
PIONEERS = """Alan Turing worked at Bletchley Park with Gordon Welchman during the war on the Bombe machine.

Ada Lovelace wrote the first published algorithm for the Analytical Engine of Charles Babbage.
"""


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(dims=8) as server:
        ScriptedModel().install(server)
        yield server


def run(db: Database, fake: FakeOpenAI, source: Path, mode: str = "fine") -> Proposal:
    chat = RemoteChatModel("url", "scripted", fake.base_url, None)
    calls = ModelCalls(chat.identity(), lambda: chat, None)
    return digest(db, read_source(str(source)), "p", DigestOptions(mode=mode, chunk_chars=200), calls, None)


def test_a_prose_digest_reports_what_the_model_was_asked(tmp_path: Path, fake: FakeOpenAI) -> None:
    (tmp_path / "pioneers.md").write_text(PIONEERS)
    with Database(tmp_path / "graph.drsg") as db:
        proposal = run(db, fake, tmp_path / "pioneers.md")
    report = proposal.report
    assert isinstance(report, DigestReport) and report.code is None
    asked = fake.requests_to("/chat/completions")
    assert report.usage.chat_requests == len(asked) >= report.chunks > 0 and report.usage.cache_hits == 0
    assert report.entities + report.linked == len(proposal.nodes) and report.relations == len(proposal.edges)
    assert set(report.passes) == {"labels", "edge_types", "identity"} and report.dropped_items is not None
    wire = report.to_json()
    assert list(wire) == [*PROSE, *USAGE, "passes", "dropped_items"]
    assert [wire[name] for name in USAGE] == list(dataclasses.astuple(report.usage))
    with pytest.raises(dataclasses.FrozenInstanceError):
        report.chunks = 0  # type: ignore[misc]  # a report is a record of what happened


def test_a_tree_of_code_reports_what_was_parsed_and_asks_no_model(tmp_path: Path, fake: FakeOpenAI) -> None:
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "app.py").write_text("def main() -> int:\n    return helper()\n\n\ndef helper() -> int:\n    return 1\n")
    (tree / "notes.bin").write_bytes(b"\x00\x01")
    with Database(tmp_path / "graph.drsg") as db:
        proposal = run(db, fake, tree)
    report = proposal.report
    assert report.chunks == 0 and report.usage.chat_requests == 0 == len(fake.requests)
    assert report.code is not None and report.code.parsed.nodes == len(proposal.nodes) == report.code.parsed.new
    assert report.code.parsed.edges == len(proposal.edges) and report.code.files.read == 1
    assert [(p.handler.split("@")[0], p.files) for p in report.code.preprocessed] == [("py", 1)]
    wire = report.to_json()
    assert list(wire) == [*PROSE, *USAGE, "passes", *CODE] and wire["passes"] == {}
    assert wire["parsed"] == dataclasses.asdict(report.code.parsed)


def test_a_saved_preview_gives_the_same_report_back(tmp_path: Path, fake: FakeOpenAI) -> None:
    (tmp_path / "pioneers.md").write_text(PIONEERS)
    with Database(tmp_path / "graph.drsg") as db:
        proposal = run(db, fake, tmp_path / "pioneers.md", mode="super")
    saved = PreviewStore(tmp_path / "previews").save(proposal)
    again = Proposal.from_json(json.loads(saved.read_text()))
    assert again.report == proposal.report and "refined" in again.report.passes
    assert again.to_json()["report"] == proposal.to_json()["report"] == proposal.report.to_json()
    assert DigestReport.from_json({}) == DigestReport() == Proposal("s", "p", "", "", "").report
