"""PDF through ``pypdf`` (pure Python; ``cryptography`` for AES-encrypted files).

Each page with text becomes ``## Page N`` and its text, line by line as pypdf lays it out; pages
without extractable text (scans, pictures) get a note, and a PDF with no text at all is an error
that points at OCR. PDFs encrypted with an empty user password (only "permissions" set) are opened;
real passwords are refused. pypdf caps the output of every decompression filter (75 MB by default),
and what it logs about damaged structure becomes notes rather than stderr noise. Headings and tables
are not recovered: PDF keeps neither, only positioned text.
"""

from __future__ import annotations

import io

from pypdf import PasswordType, PdfReader

from drsg.pipeline.convert.base import Output, Source
from drsg.pipeline.convert.markdown import blocks, heading, tidy

_OCR = "run OCR on it first (for example `ocrmypdf in.pdf out.pdf`) and convert the result"


def convert_pdf(src: Source) -> Output:
    reader = PdfReader(io.BytesIO(src.data), strict=False)
    if reader.is_encrypted and reader.decrypt("") == PasswordType.NOT_DECRYPTED:
        raise src.fail("the PDF is password-protected", "save an unprotected copy (print to PDF) and convert that")
    parts: list[str] = []
    notes: list[str] = []
    empty: list[int] = []
    total = len(reader.pages)
    for number, page in enumerate(reader.pages, 1):
        try:
            text = tidy(page.extract_text())
        except Exception as exc:  # one damaged page must not lose the others
            notes.append(f"page {number} could not be read ({' '.join(str(exc).split())[:100]})")
            continue
        if text:
            parts += [heading(2, f"Page {number}"), text]
        else:
            empty.append(number)
    if total and not parts:
        raise src.fail(f"no extractable text on any of its {total} page(s) (a scan?)", _OCR)
    if empty:
        shown = ", ".join(str(n) for n in empty[:20]) + (" …" if len(empty) > 20 else "")
        which = f"page {shown} has" if len(empty) == 1 else f"pages {shown} have"
        notes.append(f"{which} no extractable text (scanned images?); {_OCR}")
    return blocks(parts), notes
