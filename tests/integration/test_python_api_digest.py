"""``Plane.digest`` on real files: a prose preview through the real ``openai`` client against the
scripted model on loopback writes nothing, and applying it writes the saved preview without asking
the model again; a tree of code needs no model. The report is the pipeline's typed DigestReport."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import drsg
from drsg.models.chat.remote import RemoteChatModel
from tests.support.fake_openai import FakeOpenAI
from tests.support.scripted_model import ScriptedModel

PIONEERS = """Alan Turing worked at Bletchley Park with Gordon Welchman during the war on the Bombe machine.

Ada Lovelace wrote the first published algorithm for the Analytical Engine of Charles Babbage.
"""


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(dims=8) as server:
        ScriptedModel().install(server)
        yield server


def test_a_prose_preview_writes_nothing_and_its_apply_asks_no_model(tmp_path: Path, fake: FakeOpenAI) -> None:
    (tmp_path / "pioneers.md").write_text(PIONEERS)
    chat = RemoteChatModel("url", "scripted", fake.base_url, None)
    with drsg.open(tmp_path / "graph.drsg") as db:
        plane = db.create_plane("p")
        head = db.head()
        preview = plane.digest(tmp_path / "pioneers.md", chat=chat, mode="coarse")
        assert isinstance(preview, drsg.Digested) and isinstance(preview.report, drsg.DigestReport)
        assert preview.saved is not None and preview.saved.exists() and preview.applied is None
        assert db.head() == head and plane.nodes() == []
        asked = len(fake.requests_to("/chat/completions"))
        assert preview.report.usage.chat_requests == asked > 0 and preview.report.chunks > 0
        keys = {node.key for node in preview.proposal.nodes}
        assert len(keys) == preview.report.entities + preview.report.linked > 0
        done = plane.digest(tmp_path / "pioneers.md", chat=chat, mode="coarse", apply=True)
        assert len(fake.requests_to("/chat/completions")) == asked  # the saved preview, as it was
        assert done.applied is not None and done.applied.seq == db.head() and done.saved is None
        assert {node.key for node in plane.nodes()} == keys and not preview.saved.exists()


def test_a_tree_of_code_needs_no_model(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "m.py").write_text("def f():\n    return g()\n\n\ndef g():\n    return 1\n")
    with drsg.open(
        tmp_path / "graph.drsg", settings={"digest.chat": "http://127.0.0.1:9/none", "digest.model": "unreachable"}
    ) as db:
        done = db.create_plane("code").digest(tmp_path / "src", apply=True)
        assert done.applied is not None and done.applied.nodes_created == 3
        assert done.report.code is not None and done.report.code.parsed.edges == done.applied.edges_created
        with pytest.raises(drsg.UsageError, match="no such file"):
            db.plane("code").digest(tmp_path / "nowhere")
