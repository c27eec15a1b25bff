"""Documents → GitHub-flavoured Markdown: the "convert" step of ``drsg digest``.

``to_markdown(path)`` / ``to_markdown_bytes(data, name)`` return a ``Converted`` (the Markdown, the
format read, notes for the user) or raise ``ConversionError`` with a one-line message naming the
file and the fix — never a library traceback: whatever a document library raises is converted here.

Formats (``SUPPORTED``): Markdown and text pass through (leading/trailing blank lines trimmed);
csv/tsv, docx, pptx, xlsx, xls, odt, ods, odp, rtf, epub, pdf and saved web pages (html) are
converted — headings as ``#``, lists, tables as pipe tables, slides/sheets/pages as ``##``
sections. Legacy ``.doc``/``.ppt`` are refused with "save it as .docx/.pptx". The format comes
from the content's signature first (``detect.py``), the file extension second.

Dependencies, one small well-kept library per family, chosen over ``markitdown``: markitdown 0.1.x
pulls ``magika`` (an ONNX file-type model), ``requests`` and, for its xlsx/xls support, ``pandas``;
it has no OpenDocument, RTF or EPUB-table support worth the weight, and its PDF path is pdfminer
text without structure either. What markitdown itself uses underneath (mammoth, python-pptx,
openpyxl, markdownify) is used here directly:

==================  =======================================================================
mammoth             docx → semantic HTML (headings, lists from numbering, tables); pure Python
markdownify + bs4   that HTML (and EPUB's XHTML) → Markdown
python-pptx         pptx (lxml; pulls Pillow and XlsxWriter, which are not used here)
openpyxl            xlsx, read-only streaming mode; parses through defusedxml
xlrd                legacy xls; pure Python, no dependencies
odfpy               odt/ods/odp; parses through defusedxml
striprtf            rtf; pure Python (its regexes are defused in ``rtf.py``)
pypdf[crypto]       pdf; pure Python, caps decompression; ``cryptography`` opens AES-encrypted
                    PDFs that have only an owner password, which is most "protected" PDFs
defusedxml          EPUB's container and package files (EPUB itself needs no library)
==================  =======================================================================

Hostile documents: size caps (``Limits``), ZIP containers checked before parsing (entry count,
unpacked size, encryption, XML entity declarations — ``container.py``), no network or external
file access anywhere, macros never run (no library here executes them).
"""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import cast

from drsg.kernel.errors import ConversionError
from drsg.pipeline.convert.base import DEFAULT_LIMITS, Limits, Output, Source, human_size, library_warnings
from drsg.pipeline.convert.detect import EXTENSIONS, SUPPORTED, by_extension, detect_format, extension, sniff
from drsg.pipeline.convert.markdown import tidy

__all__ = [
    "DEFAULT_LIMITS",
    "SUPPORTED",
    "ConversionError",
    "Converted",
    "Limits",
    "detect_format",
    "to_markdown",
    "to_markdown_bytes",
]


@dataclass(frozen=True)
class Converted:
    """A document as Markdown: the text, the format it was read as, and one-line notes for the user."""

    markdown: str
    format: str
    notes: list[str] = field(default_factory=list)


# format -> (module, function); modules are imported on first use, so importing this package is cheap
_CONVERTERS: dict[str, tuple[str, str]] = {
    "markdown": ("text", "convert_text"),
    "text": ("text", "convert_text"),
    "csv": ("sheets", "convert_csv"),
    "docx": ("word", "convert_docx"),
    "pptx": ("slides", "convert_pptx"),
    "xlsx": ("sheets", "convert_xlsx"),
    "xls": ("sheets", "convert_xls"),
    "odt": ("opendocument", "convert_odt"),
    "ods": ("opendocument", "convert_ods"),
    "odp": ("opendocument", "convert_odp"),
    "rtf": ("rtf", "convert_rtf"),
    "epub": ("epub", "convert_epub"),
    "pdf": ("pdf", "convert_pdf"),
    "html": ("html", "convert_html"),
}
assert set(_CONVERTERS) == set(SUPPORTED)

_LABELS = {
    "markdown": "Markdown",
    "text": "text",
    "csv": "CSV",
    "epub": "EPUB",
    "pdf": "PDF",
    "rtf": "RTF",
    "html": "HTML",
}
_DAMAGED = "check that the file is complete, or open it in its application and save it again"


def to_markdown(path: Path, *, limits: Limits = DEFAULT_LIMITS) -> Converted:
    """Read the document at ``path`` and convert it to Markdown."""
    path = Path(path)
    try:
        size = path.stat().st_size
        if size > limits.max_bytes:
            raise _too_big(path.name, size, limits)
        with path.open("rb") as f:
            data = f.read(limits.max_bytes + 1)
    except OSError as exc:
        raise ConversionError(
            f"{path}: cannot read it ({exc.strerror or exc}); check the path and permissions"
        ) from None
    return to_markdown_bytes(data, path.name, limits=limits)


def to_markdown_bytes(data: bytes, name: str, *, limits: Limits = DEFAULT_LIMITS) -> Converted:
    """Convert a document held in memory; ``name`` (a file name) gives the fallback format and the messages."""
    if len(data) > limits.max_bytes:
        raise _too_big(name, len(data), limits)
    src = Source(bytes(data), name, limits)
    if not data:
        raise src.fail("the file is empty (0 bytes)", "check that it was saved or copied completely")
    fmt, notes = _resolve(src)
    module, function = _CONVERTERS[fmt]
    convert = cast(Callable[[Source], Output], getattr(importlib.import_module(f"{__name__}.{module}"), function))
    # Library warnings become notes. catch_warnings swaps process-wide state: conversions running in
    # parallel threads may swap notes between them, nothing worse.
    with warnings.catch_warnings(record=True) as caught, library_warnings() as logged:
        warnings.simplefilter("always")
        try:
            markdown, more = convert(src)
        except ConversionError:
            raise
        except RecursionError:
            raise src.fail(f"cannot read it as {_label(fmt)} (nested too deeply)", _DAMAGED) from None
        except MemoryError:
            raise src.fail(f"cannot read it as {_label(fmt)} (out of memory)", "split it into smaller files") from None
        except Exception as exc:  # every library's own exceptions stop here
            raise src.fail(f"cannot read it as {_label(fmt)} ({_reason(exc)})", _DAMAGED) from None
    notes += more + [f"{w.category.__name__}: {_reason(w.message)}" for w in caught[:10]] + logged[:10]
    markdown = markdown if fmt in ("markdown", "text") else tidy(markdown)
    if not markdown.strip():
        raise src.fail(
            f"the {_label(fmt)} document has no text to convert",
            "check it is not empty or only images (scans need OCR first)",
        )
    return Converted(markdown=markdown, format=fmt, notes=_dedupe(notes))


def _resolve(src: Source) -> tuple[str, list[str]]:
    """The format to read ``src`` as, and a note when content and extension disagree."""
    ext = extension(src.name)
    named = by_extension(src.name)
    kind = sniff(src.data)
    if kind in ("doc", "ppt") or (kind == "ole" and named in ("doc", "ppt")):
        legacy = kind if kind != "ole" else named
        modern = {"doc": ".docx", "ppt": ".pptx"}[cast(str, legacy)]
        raise src.fail(
            f"a legacy binary .{legacy} file, which drsg cannot read",
            f"open it in its application (or LibreOffice) and save it as {modern}, then convert that",
        )
    if kind == "encrypted":
        raise src.fail("the Office document is password-protected", "remove the password and save it again")
    if kind == "zip":
        raise src.fail(
            "a ZIP archive that is not a docx, pptx, xlsx, odt, ods, odp or epub document",
            "unpack it and convert the documents inside",
        )
    if kind == "ole":
        raise src.fail(
            "an OLE2 compound file that is not a Word, Excel or PowerPoint document",
            "save it as .docx, .xlsx, .pptx or .pdf and convert that",
        )
    if kind is not None:
        return kind, ([] if named == kind else [f"read as {kind} (from its content, whatever the name says)"])
    if named is None:
        known = ", ".join(sorted({e for e in EXTENSIONS if e and EXTENSIONS[e] in SUPPORTED}))
        raise src.fail(f"unsupported format {ext!r}", f"save it as one of {known} and convert that")
    if named in ("doc", "ppt"):
        raise src.fail(f"not a valid .{named} file (no OLE2 signature)", "check the file, or save it as .docx/.pptx")
    return named, []


def _label(fmt: str) -> str:
    return _LABELS.get(fmt, f".{fmt}")


def _too_big(name: str, size: int, limits: Limits) -> ConversionError:
    return ConversionError(
        f"{name}: {human_size(size)} is over the {human_size(limits.max_bytes)} limit for documents; "
        "split it or raise the limit"
    )


def _reason(exc: object) -> str:
    text = " ".join(str(exc).split())[:160]
    return text or type(exc).__name__


def _dedupe(notes: list[str]) -> list[str]:
    return list(dict.fromkeys(n for n in notes if n))
