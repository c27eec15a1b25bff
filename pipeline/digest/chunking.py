"""Splitting prose into chunks for extraction (pure; no I/O).

Upstream's rules: split on blank lines, trim, drop empty paragraphs; a paragraph that starts with
``<!-- drsg:source`` always starts a new chunk, so no chunk mixes two sources; a paragraph longer
than the size is split at whitespace (a word longer than the size is cut); paragraphs are packed
while ``len(chunk) + len(piece) + 2 <= size``. Unlike upstream, packing and splitting both count
characters (upstream packs by bytes and splits by characters, so CJK chunks came out a third the
size). ``size = max(chunk_chars, 200)``.
"""

from __future__ import annotations

import re

from drsg.pipeline.convert.base import SOURCE_MARKER

MIN_CHUNK_CHARS = 200
_BLANK_LINE = re.compile(r"\n[ \t]*\n")


def chunk_text(text: str, chunk_chars: int = 4000) -> list[str]:
    size = max(chunk_chars, MIN_CHUNK_CHARS)
    chunks: list[str] = []
    current = ""
    for paragraph in _paragraphs(text):
        if paragraph.startswith(SOURCE_MARKER) and current:
            chunks.append(current)
            current = ""
        for piece in _split_long(paragraph, size):
            if current and len(current) + len(piece) + 2 > size:
                chunks.append(current)
                current = ""
            current = f"{current}\n\n{piece}" if current else piece
    if current:
        chunks.append(current)
    return chunks


def split_in_half(text: str) -> tuple[str, str]:
    """Two halves at the whitespace nearest the middle (for an answer the token limit cut off)."""
    middle = len(text) // 2
    left = text.rfind("\n", 0, middle + 1)
    if left <= 0:
        left = text.rfind(" ", 0, middle + 1)
    cut = left if left > 0 else middle
    return text[:cut].strip(), text[cut:].strip()


def _paragraphs(text: str) -> list[str]:
    normalised = text.replace("\r\n", "\n").replace("\r", "\n")
    return [p.strip() for p in _BLANK_LINE.split(normalised) if p.strip()]


def _split_long(paragraph: str, size: int) -> list[str]:
    if len(paragraph) <= size:
        return [paragraph]
    pieces: list[str] = []
    current = ""
    for word in paragraph.split():
        while len(word) > size:  # one word longer than a chunk: cut it
            if current:
                pieces.append(current)
                current = ""
            pieces.append(word[:size])
            word = word[size:]
        if current and len(current) + 1 + len(word) > size:
            pieces.append(current)
            current = ""
        current = f"{current} {word}" if current else word
    if current:
        pieces.append(current)
    return pieces
