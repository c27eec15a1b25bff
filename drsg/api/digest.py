"""``Database.digest`` and ``Plane.digest``: a document, a folder, a tree of code or a crawl's pages
read into a plane — previewed first (the proposal saved beside the database, nothing written), then
applied in one commit. ``drsg digest`` and ``drsg init`` call it; the JSON-RPC ``digest.run`` calls
:func:`preview`.

The reading, the model calls and the ledger are drsg.pipeline.digest's; this is their wiring, once:
the chat model (given, named, or the ``digest.chat``/``digest.model`` settings'), the embedder by
the one rule (drsg.pipeline.embedder_choice), the answer cache and the saved previews in the
database's ``.digest`` folder.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from drsg.api.results import Digested
from drsg.models.providers import ChatChoice, EmbedderChoice
from drsg.pipeline.embedder_choice import choose_embedder

if TYPE_CHECKING:
    from drsg.api.host import Host
    from drsg.kernel.settings import Settings
    from drsg.models.chat.base import ChatModel
    from drsg.models.embedders.base import Embedder
    from drsg.pipeline.digest.proposal import Proposal
    from drsg.pipeline.digest.run import DigestOptions, Progress
    from drsg.pipeline.digest.sources import Document, TreeOptions


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


def tree_options(
    settings: Settings,
    db_path: str | Path,
    *,
    ignore_files: str | None = None,
    tracked_only: bool | None = None,
    code_only: bool | None = None,
    handler: str | None = None,
) -> TreeOptions:
    """How a directory is read into the database at ``db_path``: each option given overrides its
    ``[digest]`` setting (parsed and checked as drsg.toml's values are); None leaves the setting's word."""
    from drsg.pipeline.digest.sources import TreeOptions

    given = {"digest.ignore_files": ignore_files, "digest.tracked_only": tracked_only, "digest.code_only": code_only}
    return TreeOptions.of(settings.with_flags(given), db_path, handler)


def digest(
    db: Host,
    plane: str,
    source: str | Path,
    *,
    apply: bool = False,
    chat: ChatModel | ChatChoice | None = None,
    embed: EmbedderChoice | None = None,
    mode: str | None = None,
    chunk_chars: int | None = None,
    concurrency: int | None = None,
    embed_entities: bool = True,
    link: bool = True,
    cache: bool = True,
    ignore_files: str | None = None,
    tracked_only: bool | None = None,
    code_only: bool | None = None,
    handler: str | None = None,
    document: Document | None = None,
    on_read: Callable[[Document], None] | None = None,
    read_progress: Progress | None = None,
    progress: Progress | None = None,
    key_hint: str = "",
) -> Digested:
    """Read ``source`` (or take ``document``, already read) and digest it into the plane called
    ``plane`` (made by the apply when it does not exist): the proposal saved as a preview, nothing
    written — or, with ``apply``, the saved preview that matches (no model call) or a new digest
    written in one commit. See :meth:`drsg.api.database.Database.digest` for the options."""
    from drsg.api.retrieval import model_calls
    from drsg.pipeline.code.parsed import ParseMemo
    from drsg.pipeline.code.walk import digest_folder
    from drsg.pipeline.digest.ledger import apply as apply_proposal
    from drsg.pipeline.digest.proposal import PreviewStore
    from drsg.pipeline.digest.run import DigestOptions, decided_by, refuse_shared
    from drsg.pipeline.digest.run import digest as run_digest
    from drsg.pipeline.digest.sources import read_source
    from drsg.pipeline.llm.cache import AnswerCache
    from drsg.pipeline.llm.calls import ModelCalls

    settings, store = db.settings, db.store
    options = DigestOptions(
        settings.text("digest.mode") if mode is None else mode,
        settings.integer("digest.chunk_chars") if chunk_chars is None else chunk_chars,
        settings.integer("digest.concurrency") if concurrency is None else concurrency,
        embed_entities,
        link,
    )
    folder = digest_folder(db.path)

    def tree() -> TreeOptions:
        return tree_options(
            settings,
            db.path,
            ignore_files=ignore_files,
            tracked_only=tracked_only,
            code_only=code_only,
            handler=handler,
        )

    doc = document
    if doc is None:
        doc = read_source(str(source), tree(), settings, read_progress, ParseMemo(folder / "parsed"))
    if on_read is not None:
        on_read(doc)
    answers = AnswerCache(folder / "cache") if cache else None
    # the hint names another way round a missing key: only a tree with prose read has one
    hint = "" if doc.reading is None or tree().code_only else key_hint
    if isinstance(chat, ChatChoice):  # connects on the first call the cache cannot answer
        calls = ModelCalls.for_chat(chat.name, chat.model, chat.url, chat.key_env, settings, answers, hint)
    else:
        calls = model_calls(chat, settings, answers)
    embedder = None
    if options.embed or options.link:  # neither: no embedder loaded, and the preview's identity names none
        embedder = choose_embedder(
            store,
            plane,
            "embedding",
            settings,
            named=embed,
            configured=db.configured_embedder,
            purpose="write",
            cache=db.embedders,
        )
    previews = PreviewStore(folder / "previews")
    proposal = previews.load(plane, doc.name, decided_by(doc, options, calls.model, embedder)) if apply else None
    if proposal is not None:
        proposal.notes.append("applied the saved preview: no model call this time (its cost is shown)")
    refuse_shared(store, doc, plane)  # another tree's keys: refused before a model call is spent
    if proposal is None:
        proposal = run_digest(store, doc, plane, options, calls, embedder, progress)
    if not apply:
        return Digested(proposal, proposal.report, saved=previews.save(proposal))
    applied, created = apply_proposal(store, proposal)
    previews.discard(plane, doc.name)
    return Digested(proposal, proposal.report, applied=applied, created=created)
