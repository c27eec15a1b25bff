"""``Plane.digest``: a document, a folder or a tree of code read into a plane — previewed first (the
proposal saved beside the database, nothing written), then applied in one commit.

The reading, the model calls and the ledger are drsg.pipeline.digest's; this is the wiring
``drsg digest`` does, once: the chat model (given, or the ``digest.chat``/``digest.model``
settings'), the embedder by the one rule (drsg.pipeline.embedder_choice), the answer cache and the
saved previews in the database's ``.digest`` folder.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from drsg.api.results import Digested
from drsg.models.providers import EmbedderChoice
from drsg.pipeline.embedder_choice import choose_embedder

if TYPE_CHECKING:
    from drsg.api.host import Host, HostedPlane
    from drsg.models.chat.base import ChatModel
    from drsg.models.embedders.base import Embedder
    from drsg.models.providers import ChatChoice
    from drsg.pipeline.digest.proposal import Proposal
    from drsg.pipeline.digest.run import DigestOptions
    from drsg.pipeline.digest.sources import Document


def preview(
    db: Host,
    plane: str,
    doc: Document,
    options: DigestOptions,
    chat: ChatModel | ChatChoice | None,
    embedder: Embedder | None,
) -> Proposal:
    """A digest's proposal for a document already read (a text as sent, or a tree's parsed facts),
    nothing written and nothing saved: the chat model given, named, or the settings', its answers
    cached beside the database; another tree's keys refused before a model call is spent."""
    from drsg.api.retrieval import model_calls
    from drsg.pipeline.code.walk import digest_folder
    from drsg.pipeline.digest.run import digest as run_digest
    from drsg.pipeline.digest.run import refuse_shared
    from drsg.pipeline.llm.cache import AnswerCache

    calls = model_calls(chat, db.settings, AnswerCache(digest_folder(db.path) / "cache"))
    refuse_shared(db.store, doc, plane)
    return run_digest(db.store, doc, plane, options, calls, embedder)


def digest(
    plane: HostedPlane,
    source: str | Path,
    apply: bool,
    chat: ChatModel | None,
    embed: EmbedderChoice | None,
    mode: str | None,
    cache: bool,
) -> Digested:
    from drsg.pipeline.code.parsed import ParseMemo
    from drsg.pipeline.code.walk import digest_folder
    from drsg.pipeline.digest.ledger import apply as apply_proposal
    from drsg.pipeline.digest.proposal import PreviewStore
    from drsg.pipeline.digest.run import DigestOptions, decided_by, refuse_shared
    from drsg.pipeline.digest.run import digest as run_digest
    from drsg.pipeline.digest.sources import TreeOptions, read_source
    from drsg.pipeline.llm.cache import AnswerCache
    from drsg.pipeline.llm.calls import ModelCalls

    db, settings = plane.db, plane.db.settings
    store = db.store
    options = DigestOptions(
        settings.text("digest.mode") if mode is None else mode,
        settings.integer("digest.chunk_chars"),
        settings.integer("digest.concurrency"),
    )
    folder = digest_folder(db.path)
    doc = read_source(str(source), TreeOptions.of(settings, db.path), settings, None, ParseMemo(folder / "parsed"))
    answers = AnswerCache(folder / "cache") if cache else None
    if chat is None:
        chosen = (settings.text("digest.chat"), settings.text("digest.model") or None)
        calls = ModelCalls.for_chat(*chosen, settings=settings, cache=answers)
    else:
        model = chat
        calls = ModelCalls(model.identity(), lambda: model, answers)
    embedder = choose_embedder(
        store, plane.name, "embedding", settings, named=embed, purpose="write", cache=db.embedders
    )
    previews = PreviewStore(folder / "previews")
    proposal = previews.load(plane.name, doc.name, decided_by(doc, options, calls.model, embedder)) if apply else None
    refuse_shared(store, doc, plane.name)  # another tree's keys: refused before a model call is spent
    if proposal is None:
        proposal = run_digest(store, doc, plane.name, options, calls, embedder)
    if not apply:
        return Digested(proposal, proposal.report, saved=previews.save(proposal))
    applied, _created = apply_proposal(store, proposal)
    previews.discard(plane.name, doc.name)
    return Digested(proposal, proposal.report, applied=applied)
