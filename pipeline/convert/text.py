"""Plain text and Markdown: passed through, with only leading and trailing blank lines trimmed."""

from __future__ import annotations

import codecs

from drsg.pipeline.convert.base import Output, Source

_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)
# C0 controls other than tab, line feed, form feed and carriage return: a few are tolerated (old
# files carry the odd escape or SUB), many mean the bytes are not text
_CONTROLS = {c for c in range(32) if c not in (9, 10, 12, 13)} | {127}


def decode_text(src: Source) -> str:
    """The document's bytes as text: UTF-8 (BOM optional) or UTF-16/32 with a BOM; never binary."""
    data = src.data
    for bom, encoding in _BOMS:
        if data.startswith(bom):
            body, label = data[len(bom) :], encoding.upper()
            break
    else:
        body, encoding, label = data, "utf-8", "UTF-8"
        if b"\x00" in data[:8192]:
            raise src.fail("binary data, not text", "convert the document it came from, or check the file name")
    try:
        text = body.decode(encoding)
    except UnicodeDecodeError as exc:
        raise src.fail(
            f"not valid {label} text (byte {exc.object[exc.start]:#04x} at offset {exc.start})",
            "re-save it as UTF-8 text, or convert the document it came from",
        ) from None
    sample = text[:8192]
    if sample and sum(ord(ch) in _CONTROLS for ch in sample) > max(8, len(sample) // 100):
        raise src.fail("binary data, not text", "convert the document it came from, or check the file name")
    return text.replace("\r\n", "\n").replace("\r", "\n")


def trim_blank_lines(text: str) -> str:
    """Remove blank lines at the start and the end only; the text ends with a single newline."""
    lines = text.split("\n")
    start = 0
    while start < len(lines) and not lines[start].strip():
        start += 1
    end = len(lines)
    while end > start and not lines[end - 1].strip():
        end -= 1
    return "\n".join(lines[start:end]) + "\n" if end > start else ""


def convert_text(src: Source) -> Output:
    return trim_blank_lines(decode_text(src)), []
