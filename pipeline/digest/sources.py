"""Reading what to digest: one file, or a directory tree, as Markdown prose.

A file is converted to Markdown (``drsg.pipeline.convert``). A directory is walked in sorted order
(hidden entries skipped); every file a converter reads joins the prose behind a
``<!-- drsg:source <path> -->`` paragraph, so no chunk mixes two files; the others are skipped
with a note. A source's name — what provenance and the contribution ledger call it — is its
canonical absolute path, so the same document is the same source from any working directory.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from drsg.kernel.errors import UsageError
from drsg.pipeline.digest.chunking import source_marker


@dataclass
class Document:
    name: str  # canonical path
    text: str
    notes: list[str] = field(default_factory=list)
    files: int = 0


def source_name(path: str) -> str:
    if path.startswith(("http://", "https://")):
        return path
    return str(Path(path).expanduser().resolve())


def read_source(path: str) -> Document:
    from drsg.pipeline.convert import ConversionError, to_markdown

    if path.startswith(("http://", "https://")):
        raise UsageError(
            "digesting a URL needs the crawler, which drsg does not have yet; "
            "save the page (e.g. as .html or .pdf) and digest the file"
        )
    root = Path(path).expanduser()
    if not root.exists():
        raise UsageError(f"{path}: no such file or directory; check the path")
    name = source_name(path)
    if root.is_file():
        converted = to_markdown(root)
        return Document(name, converted.markdown, [f"{root.name}: {n}" for n in converted.notes], 1)
    doc = Document(name, "")
    parts: list[str] = []
    skipped: list[str] = []
    for file in sorted(p for p in root.rglob("*") if p.is_file() and not _hidden(p.relative_to(root))):
        try:
            converted = to_markdown(file)
        except ConversionError as exc:
            skipped.append(f"{file.relative_to(root)} ({exc})")
            continue
        if converted.markdown.strip():
            parts.append(f"{source_marker(str(file.relative_to(root)))}\n\n{converted.markdown}")
            doc.files += 1
    if skipped:
        doc.notes.append(
            f"{len(skipped)} file(s) skipped: " + "; ".join(skipped[:5]) + (" …" if len(skipped) > 5 else "")
        )
    doc.text = "\n\n".join(parts)
    return doc


_DRSG_FILES = (".drsg", ".drsg-lock", ".drsg.hnsw", ".drsg.bm25", ".drsg.digest", ".drsg.jsonl")


def _hidden(relative: Path) -> bool:
    """Hidden entries, and drsg's own database files and sidecars (a digest of `.` skips them)."""
    return any(part.startswith(".") or part.endswith(_DRSG_FILES) for part in relative.parts)
