"""`drsg digest`: LLM document ingestion — preview by default, `--apply` to write, `--forget` to undo."""

from __future__ import annotations

import sys
from collections.abc import Callable, Collection
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from drsg.models.providers import ChatChoice, EmbedderChoice
from drsg.store.transaction import DEFAULT_PLANE
from drsg.surfaces.cli.context import Context, emit_json
from drsg.surfaces.cli.options import chat_options, embed_options, json_option, tree_options

if TYPE_CHECKING:
    from drsg.api.results import Digested
    from drsg.pipeline.digest.run import Progress
    from drsg.pipeline.digest.sources import Document, TreeOptions

SHOWN_NODES = 12


@click.command("digest")
@click.argument("source", required=False, default=None)
@click.option(
    "--plane", "-p", default=None, metavar="NAME", help="Target plane (default: startup, or a directory's name)."
)
@click.option(
    "--apply", "do_apply", is_flag=True, help="Write the digest (a saved matching preview costs no model call)."
)
@click.option(
    "--mode",
    default=None,
    metavar="MODE",
    help="Clean-up passes: coarse (vocabulary), fine (+ identity resolution), super (+ per-entity refinement).",
)
@click.option("--chunk-chars", default=None, type=click.IntRange(1), help="Characters per chunk [4000].")
@click.option("--concurrency", default=None, type=click.IntRange(1, 64), help="Chat calls at once [8].")
@click.option("--no-embed", is_flag=True, help="Do not embed entities (and do not link chunks by similarity).")
@click.option("--no-link", is_flag=True, help="Do not offer similar existing entities to the model.")
@click.option("--no-cache", is_flag=True, help="Ask the model again even for answers already cached.")
@chat_options
@embed_options
@click.option(
    "--forget", is_flag=True, help="Remove exactly SOURCE's applied contribution from the plane (one commit)."
)
@click.option("--list", "list_sources", is_flag=True, help="List the sources applied to the plane.")
@click.option(
    "--topic", default=None, metavar="TEXT", help="A URL crawl: what to look for (default: the root page's subject)."
)
@click.option(
    "--pages", default=None, type=click.IntRange(1), help="A URL crawl: most pages kept, the root included [10]."
)
@click.option(
    "--depth", default=None, type=click.IntRange(0), help="A URL crawl: link levels followed (0: the root only) [1]."
)
@tree_options
@click.option(
    "-v", "--verbose", "accounting", count=True, help="-v: what was read; -vv: + each file withheld; -vvv: + each read."
)
@json_option
@click.pass_obj
def digest_cmd(obj: Context, source: str | None, plane: str | None, **flags: Any) -> None:
    """Read SOURCE (a file or a directory, default `.`: Markdown, text, Word, PowerPoint, Excel,
    OpenDocument, RTF, EPUB, CSV, PDF, saved web pages; or an http(s) URL) with a chat model into entities and typed
    relations, clean them up, and print what would be written. `--apply` writes it in one commit.

    A URL is crawled: its links scored on their words before any request and the pages on their text after
    (`--topic` sharpens the target; a page is kept at relevance 0.05 or more and at least a quarter of the
    best at its depth; a link that cannot be read gives its place to the next), under `--pages`, `--depth`
    and the `[fetch]` budgets, through the fetch guard, robots.txt checked at every redirect hop; the pages
    kept become one document, each behind `<!-- drsg:source URL -->` and `# Title`.

    A directory is walked (its .gitignore honoured; dotfiles, build and dependency folders and drsg's own
    files always skipped) and each file routed by extension: code a handler claims (Python built in; parser
    plugins from `drsg plugin install`) is parsed into facts with no model call, the rest is prose. A tree
    whose parsed keys another tree already defines in the plane is refused before any model call (digest it
    into a plane of its own, or --forget the other tree first); the same tree again updates in place.
    A code file a handler claims (`digest pkg/core.py`) is parsed with its directory as context, its
    keys those a digest of the directory gives it.
    A tree of code alone asks no model: its summary counts the parsed nodes and edges, and `--json`
    names no model. Without the chat model's key a file or URL is refused before anything is read
    (a saved preview can still be applied); a tree is read first, as it may hold no prose, and the
    error offers --code-only."""
    from drsg.pipeline.digest.run import check_mode

    if flags["list_sources"]:
        _list(obj, plane or DEFAULT_PLANE, flags["as_json"])
        return
    if flags["forget"]:
        if source is None:
            raise click.UsageError("name the SOURCE to forget (as it was digested)")
        _forget(obj, source, plane_for(source, plane), flags["as_json"])
        return
    source = source or "."  # upstream's default: the current directory
    crawl_flags = [f"--{name}" for name in ("topic", "pages", "depth") if flags[name] is not None]
    if crawl_flags and not is_url(source):
        raise click.UsageError(f"{', '.join(crawl_flags)} apply to a URL crawl; SOURCE {source} is not an http(s) URL")
    _defaults(obj, flags)
    check_mode(flags["mode"])  # before any work, as upstream
    if is_url(source):
        _digest_url(obj, source, plane_for(source, plane), flags)
        return
    check_chat_key_first(obj, source, plane_for(source, plane), flags)
    _digest(obj, source, plane_for(source, plane), flags)


def check_chat_key_first(obj: Context, source: str, plane: str, flags: dict[str, Any]) -> None:
    """A URL or a file is prose for the chat model: without its key, refuse before any crawl or read
    (unless --apply has a saved preview to apply, which needs no model). A tree may hold no prose at
    all, so its key is checked at the first call the answer cache cannot answer, --code-only offered."""
    from drsg.kernel.errors import ConfigError
    from drsg.models.chat.providers import check_chat_key
    from drsg.pipeline.code.walk import digest_folder
    from drsg.pipeline.digest.proposal import PreviewStore
    from drsg.pipeline.digest.sources import maybe_code, source_name

    if not is_url(source) and (not Path(source).expanduser().is_file() or maybe_code(Path(source))):
        return  # a tree, or a file a handler may parse: no model needed unless prose turns up
    saved = PreviewStore(digest_folder(obj.db_path) / "previews").path(plane, source_name(source))
    if flags["do_apply"] and saved.exists():
        return
    try:
        check_chat_key(flags["chat"], flags["model"], flags["chat_url"], flags["chat_key_env"], obj.settings)
    except ConfigError as exc:
        what = "a crawled page is prose" if is_url(source) else f"{Path(source).name} is read as prose"
        raise ConfigError(
            f"{exc} — {what}, for the chat model, so nothing was read (a local model takes no key: --chat ollama)"
        ) from None


def is_url(source: str) -> bool:
    return source.lower().startswith(("http://", "https://"))


def plane_for(source: str, plane: str | None) -> str:
    """--plane, else upstream's default: a directory's name, `startup` for a file."""
    if is_url(source):
        return plane or DEFAULT_PLANE
    path = Path(source).resolve()
    return plane or (path.name if path.is_dir() and path.name else DEFAULT_PLANE)


def _defaults(obj: Context, flags: dict[str, Any]) -> None:
    """Flags not given fall back to `[digest]` in drsg.toml / DRSG_DIGEST_* (see `drsg config`)."""
    settings = obj.settings
    for flag, setting in (("mode", "mode"), ("chunk_chars", "chunk_chars"), ("concurrency", "concurrency")):
        if flags[flag] is None:
            flags[flag] = settings[f"digest.{setting}"]
    if flags["chat"] is None and flags["chat_url"] is None:
        flags["chat"] = settings.text("digest.chat")
        flags["model"] = flags["model"] or settings.text("digest.model") or None


def embedder_chosen(obj: Context, flags: dict[str, Any]) -> bool:
    """Whether an embedder was chosen: --embed or --embed-url given, or `[digest] embed_provider` set
    (not left at its default). Which one embeds is the one rule's (:func:`query_embedder`)."""
    if flags["embed"] is not None or flags["embed_url"] is not None:
        return True
    return obj.settings.sources["digest.embed_provider"] != "default"


def embed_flags(flags: dict[str, Any]) -> EmbedderChoice:
    """The --embed… flags as one choice."""
    from drsg.surfaces.cli.search import embed_choice

    return embed_choice(flags["embed"], flags["embed_model"], flags["embed_url"], flags["embed_key_env"])


def digest_flags(ctx: click.Context, obj: Context, **given: Any) -> dict[str, Any]:
    """`drsg digest`'s flags as its command line gives them with only ``given`` on it: the others at
    their defaults, then ``obj``'s `[digest]` settings — for a command that digests as part of its work (`init`)."""
    from drsg.pipeline.digest.run import check_mode

    with digest_cmd.make_context("digest", [], parent=ctx) as sub:
        flags = {name: value for name, value in sub.params.items() if name not in ("source", "plane")}
    flags.update(given)
    _defaults(obj, flags)
    check_mode(flags["mode"])
    return flags


def _digest(obj: Context, source: str, plane: str, flags: dict[str, Any]) -> None:
    shown: list[str] = []  # the reading's notes, printed before any model call: not again in the summary

    def show(doc: Any) -> None:
        if not flags["as_json"]:
            _print_reading(doc, flags["accounting"] + obj.verbose)
            for note in doc.notes:
                click.echo(f"  note: {note}")
            shown.extend(doc.notes)

    done = run_digest(obj, source, plane, flags, show)
    if done.saved is not None:
        _print_preview(done.proposal, done.saved, flags["as_json"], shown=shown)
    else:
        _print_applied(done.proposal, done.applied, done.created, flags["as_json"], shown=shown)


def run_digest(
    obj: Context,
    source: str,
    plane: str,
    flags: dict[str, Any],
    read: Callable[[Document], None] | None = None,
    doc: Document | None = None,
) -> Digested:
    """`drsg digest SOURCE`'s work without its printing, through the API's ``Database.digest``: read
    SOURCE (``read`` sees the document before any model call) unless ``doc`` is it already read, digest
    it, and save the preview — or, with ``flags["do_apply"]``, apply it."""
    chat = ChatChoice(flags["chat"], flags["model"], flags["chat_url"], flags["chat_key_env"])
    bars = _Bars()
    with obj.open(write=True) as db, bars:
        return db.digest(
            source,
            plane=plane,
            apply=flags["do_apply"],
            chat=chat,
            embed=embed_flags(flags),
            mode=flags["mode"],
            chunk_chars=flags["chunk_chars"],
            concurrency=flags["concurrency"],
            embed_entities=not flags["no_embed"],
            link=not flags["no_link"],
            cache=not flags["no_cache"],
            ignore_files=flags["ignore_files"],
            tracked_only=flags["tracked_only"] or None,
            code_only=flags["code_only"] or None,
            handler=flags["handler"],
            document=doc,
            on_read=bars.after_reading(read),
            read_progress=bars.progress(),
            progress=bars.progress(),
            key_hint="or leave the tree's prose out with --code-only (its code needs no model)",
        )


def _digest_url(obj: Context, source: str, plane: str, flags: dict[str, Any]) -> None:
    """Crawl SOURCE (progress on stderr), print what was kept and discarded, then digest the document."""
    from drsg.pipeline.digest.sources import read_url
    from drsg.pipeline.fetch.crawl import budget_for

    budget = budget_for(obj.settings, flags["pages"], flags["depth"])
    check_chat_key_first(obj, source, plane, flags)  # after the budget's own refusals, before any request

    def progress(done: int, total: int, url: str) -> None:
        click.echo(f"fetched {done}/{total} {url}", err=True)

    doc, crawl = read_url(source, obj.settings, budget, flags["topic"] or "", progress)
    report = {"crawl": crawl.to_json(blocks=False)}
    if not flags["as_json"]:
        _print_crawl(crawl)
    done = run_digest(obj, source, plane, flags, doc=doc)
    if done.saved is not None:
        _print_preview(done.proposal, done.saved, flags["as_json"], report)
    else:
        _print_applied(done.proposal, done.applied, done.created, flags["as_json"], report)


def _print_crawl(crawl: Any) -> None:
    kept = crawl.kept
    click.echo(f"kept {len(kept)} page(s) ({crawl.requests} requests, {crawl.bytes} bytes, {crawl.seconds:g} s):")
    for page in kept:
        click.echo(f"  {page.score:.3f}  depth {page.depth}  {page.size:>9} B  {page.url}")
    if crawl.dropped:
        click.echo(f"discarded {len(crawl.dropped)}:")
    for dropped in crawl.dropped:
        click.echo(f"  {dropped.url}  ({dropped.reason})")


def tree_options_of(obj: Context, flags: dict[str, Any]) -> TreeOptions:
    """How a directory is read: each flag turns its setting on; not passing one leaves the file's word."""
    from drsg.api.digest import tree_options

    return tree_options(
        obj.settings,
        obj.db_path,
        ignore_files=flags["ignore_files"],
        tracked_only=flags["tracked_only"] or None,
        code_only=flags["code_only"] or None,
        handler=flags["handler"],
    )


def _print_reading(doc: Any, verbosity: int) -> None:
    """What a directory read gave: each handler's facts, the >50 % warning, and -v … -vvv accounting."""
    reading = doc.reading
    if reading is None:
        return
    for result in reading.results:
        facts = len(result.output.nodes) + len(result.output.edges)
        click.echo(f"preprocessed by {result.handler.manifest.ident} ({facts} facts)")
    walk = reading.walk
    warning = walk.warning()
    if warning:
        click.echo(f"warning: {warning}", err=True)
    if verbosity < 1:
        return
    read = len(reading.read_by)
    share = f" ({100 * read / walk.seen:.1f}%)" if walk.seen else ""
    click.echo(f"read {read} of {walk.seen} files{share}")
    if reading.not_claimed:
        click.echo(f"  {len(reading.not_claimed)} not claimed by any handler, left out by --code-only")
    if verbosity >= 2:
        for item in walk.withheld:
            click.echo(f"  withheld {item.path}  ({item.source}: {item.rule})")
        for path in reading.not_claimed:
            click.echo(f"  withheld {path}  (--code-only: no handler claims it)")
        for path, why in reading.skipped:
            click.echo(f"  skipped {path}  ({why})")
    if verbosity >= 3:
        for path, by in sorted(reading.read_by.items()):
            click.echo(f"  read {path}  ({by})")


class _Bars:
    """A bar on a terminal while a tree is read and again while chunks are extracted; nothing otherwise.
    Each opens on its first update; the reading's bar closes before the reading is shown."""

    def __init__(self) -> None:
        self._bar: Any = None

    def progress(self) -> Progress | None:
        return self._update if sys.stderr.isatty() else None

    def _update(self, phase: str, done: int, total: int) -> None:
        if self._bar is None:
            self._bar = click.progressbar(length=1, label="extracting", file=sys.stderr)
            self._bar.__enter__()
        if phase != self._bar.label:  # a new phase counts from zero
            self._bar.label, self._bar.pos = phase, 0
        self._bar.length = total
        self._bar.update(done - self._bar.pos)

    def after_reading(self, read: Callable[[Document], None] | None) -> Callable[[Document], None]:
        def done(doc: Document) -> None:
            self.close()
            if read is not None:
                read(doc)

        return done

    def close(self) -> None:
        if self._bar is not None:
            self._bar.__exit__(None, None, None)
            self._bar = None

    def __enter__(self) -> _Bars:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _summary(proposal: Any, shown: Collection[str] = ()) -> list[str]:
    """The summary: what the prose gave (when there was prose, or nothing was parsed either), what the
    code gave, the model's cost, and the notes not ``shown`` already."""
    from drsg.pipeline.digest.report import DigestReport
    from drsg.pipeline.digest.run import NO_PROSE

    r: DigestReport = proposal.report
    lines = [] if r.chunks else [NO_PROSE]
    if r.chunks or r.code is None:
        lines.append(
            f"digest: {r.chunks} chunks → {r.entities} new entities ({r.linked} linked to existing), "
            f"{r.relations} relations ({r.dropped_relations} dangling dropped)"
        )
    if r.code is not None:
        parsed = r.code.parsed
        lines.append(
            f"{'  + ' if r.chunks else 'digest: '}{parsed.nodes} parsed nodes ({parsed.new} new), "
            f"{parsed.edges} parsed edges from {r.code.files.read} file(s)"
        )
    use = r.usage
    lines.append(
        f"  {use.chat_requests} chat request(s); tokens {use.input_tokens} in / {use.output_tokens} out / "
        f"{use.embed_tokens} embed"
    )
    lines.extend(f"  note: {note}" for note in proposal.notes if note != NO_PROSE and note not in shown)
    return lines


def _print_preview(
    proposal: Any, saved: Path, as_json: bool, extra: dict[str, Any] | None = None, shown: Collection[str] = ()
) -> None:
    if as_json:
        emit_json({**proposal.to_json(lean=True), "preview": str(saved), **(extra or {})})
        return
    for line in _summary(proposal, shown):
        click.echo(line)
    _verbose_passes(proposal)
    for node in proposal.nodes[:SHOWN_NODES]:
        visible = sum(1 for name in node.props if not name.startswith("_"))
        click.echo(f"  [{node.label}] {node.key} ({visible} props)")
    if len(proposal.nodes) > SHOWN_NODES:
        click.echo(f"  … and {len(proposal.nodes) - SHOWN_NODES} more")
    click.echo("dry run — re-run with --apply to write")


def _verbose_passes(proposal: Any) -> None:
    ctx = click.get_current_context()
    if not ctx.find_root().params.get("verbose"):
        return
    for name, sub in proposal.report.passes.items():
        click.echo(f"  pass {name}: " + ", ".join(f"{k} {v}" for k, v in sub.items()))
    click.echo(f"  cache hits: {proposal.report.usage.cache_hits}")


def _print_applied(
    proposal: Any,
    applied: Any,
    created: bool,
    as_json: bool,
    extra: dict[str, Any] | None = None,
    shown: Collection[str] = (),
) -> None:
    if as_json:
        emit_json(
            {
                **proposal.to_json(lean=True),
                **(extra or {}),
                "applied": {
                    "seq": applied.seq,
                    "nodes_created": applied.nodes_created,
                    "nodes_updated": applied.nodes_updated,
                    "edges_created": applied.edges_created,
                    "untouched": applied.untouched,
                    "nodes_withdrawn": applied.nodes_withdrawn,
                    "edges_withdrawn": applied.edges_withdrawn,
                    "nodes_deleted": applied.nodes_deleted,
                    "edges_deleted": applied.edges_deleted,
                },
            }
        )
        return
    if created:
        click.echo(f"created plane '{proposal.plane}'")
    for line in _summary(proposal, shown):
        click.echo(line)
    click.echo(f"applied: wrote {applied.nodes_created} nodes, {applied.edges_created} edges")
    if applied.nodes_updated:
        click.echo(
            f"  {applied.nodes_updated} existing entit{'y' if applied.nodes_updated == 1 else 'ies'} gained properties"
        )
    if applied.nodes_withdrawn or applied.edges_withdrawn:
        click.echo(
            f"  withdrew {applied.nodes_withdrawn} nodes and {applied.edges_withdrawn} edges the source no longer "
            f"states ({applied.nodes_deleted} nodes, {applied.edges_deleted} edges deleted)"
        )
    if applied.untouched:
        n = len(applied.untouched)
        names = ", ".join(applied.untouched[:10]) + (" …" if n > 10 else "")
        click.echo(f"  {n} entit{'y' if n == 1 else 'ies'} already in the plane, left untouched: {names}")
    if proposal.embedder and applied.nodes_created and any("embedding" in n.props for n in proposal.nodes):
        labels = sorted({n.label for n in proposal.nodes if not n.linked})
        click.echo(f"  to search them by meaning: drsg index ensure {labels[0]} embedding --plane {proposal.plane}")


def _forget(obj: Context, source: str, plane: str, as_json: bool) -> None:
    from drsg.pipeline.digest.ledger import forget
    from drsg.pipeline.digest.sources import source_name

    with obj.open(write=True) as db:
        gone = forget(db, plane, source_name(source))
    if as_json:
        emit_json(gone.__dict__)
        return
    kept_nodes = gone.nodes_withdrawn - gone.nodes_deleted
    kept_edges = gone.edges_withdrawn - gone.edges_deleted
    click.echo(
        f"forgot {source_name(source)}: deleted {gone.nodes_deleted} nodes, {gone.edges_deleted} edges; "
        f"kept {kept_nodes} nodes and {kept_edges} edges other sources share (commit {gone.seq})"
    )


def _list(obj: Context, plane: str, as_json: bool) -> None:
    from drsg.pipeline.digest.ledger import digest_prop

    prefix = digest_prop("")
    with obj.open(write=False) as db, db.snapshot() as snap:
        props = snap.plane(plane).props
    sources = {  # the ledger keeps each source's commit seqs in a plane property
        name[len(prefix) :]: seqs for name, seqs in props.items() if name.startswith(prefix) and isinstance(seqs, list)
    }
    if as_json:
        for name, seqs in sorted(sources.items()):
            emit_json({"source": name, "commits": seqs})
        return
    if not sources:
        click.echo(f"no digests applied to plane '{plane}'")
    for name, seqs in sorted(sources.items()):
        click.echo(f"{name}  (commits {', '.join(str(seq) for seq in seqs)})")


COMMANDS = [digest_cmd]
