"""drsg.pipeline.convert without document libraries: format detection, text pass-through, Markdown helpers."""

from __future__ import annotations

import codecs
import struct
import zlib
from pathlib import Path

import pytest

from drsg.kernel.errors import DrsgError, UsageError
from drsg.pipeline.convert import SUPPORTED, ConversionError, Limits, detect_format, to_markdown, to_markdown_bytes
from drsg.pipeline.convert.detect import sniff
from drsg.pipeline.convert.markdown import cell_text, heading, pipe_table, tidy


def _local_header(name: bytes, payload: bytes, *, deflate: bool = False) -> bytes:
    """One ZIP local file entry, as the first bytes of a container (all a head-only sniff sees)."""
    body = zlib.compress(payload)[2:-4] if deflate else payload
    header = struct.pack(
        "<4sHHHHHIIIHH",
        b"PK\x03\x04",
        20,
        0,
        8 if deflate else 0,
        0,
        0,
        zlib.crc32(payload),
        len(body),
        len(payload),
        len(name),
        0,
    )
    return header + name + body


def _ole(*stream_names: str) -> bytes:
    """An OLE2 header sector followed by one directory sector naming the given streams."""
    header = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(504)
    entries = b""
    for name in ("Root Entry", *stream_names):
        raw = name.encode("utf-16-le") + b"\x00\x00"
        entries += raw + bytes(128 - len(raw))
    return header + entries + bytes(512 - len(entries) % 512)


# -- detection -------------------------------------------------------------------------------------------------


def test_supported_formats_are_named() -> None:
    assert set(SUPPORTED) >= {"markdown", "text", "docx", "pptx", "xlsx", "odt", "ods", "odp", "rtf", "epub", "csv"}
    assert "pdf" in SUPPORTED
    assert "doc" not in SUPPORTED and "ppt" not in SUPPORTED


@pytest.mark.parametrize(
    ("mimetype", "expected"),
    [
        (b"application/vnd.oasis.opendocument.text", "odt"),
        (b"application/vnd.oasis.opendocument.spreadsheet", "ods"),
        (b"application/vnd.oasis.opendocument.presentation", "odp"),
        (b"application/epub+zip", "epub"),
    ],
)
def test_the_mimetype_entry_tells_zip_containers_apart_from_the_head_alone(mimetype: bytes, expected: str) -> None:
    head = _local_header(b"mimetype", mimetype) + _local_header(b"content.xml", b"<x/>" * 50, deflate=True)[:40]
    assert detect_format(head, "upload.bin") == expected


@pytest.mark.parametrize(
    ("part", "expected"),
    [(b"word/document.xml", "docx"), (b"ppt/presentation.xml", "pptx"), (b"xl/workbook.xml", "xlsx")],
)
def test_office_open_xml_heads_are_told_apart_by_their_part_names(part: bytes, expected: str) -> None:
    head = _local_header(b"[Content_Types].xml", b"<Types/>" * 40, deflate=True) + _local_header(part, b"<x/>")
    assert detect_format(head, "noext") == expected


def test_content_beats_the_extension() -> None:
    assert detect_format(b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj", "report.txt") == "pdf"
    assert detect_format(b"{\\rtf1\\ansi hello}", "letter.md") == "rtf"
    assert detect_format(codecs.BOM_UTF8 + b"{\\rtf1 x}", "letter") == "rtf"


def test_the_extension_is_the_fallback() -> None:
    assert detect_format(b"a,b\n1,2\n", "table.CSV") == "csv"
    assert detect_format(b"# Title\n", "README.md") == "markdown"
    assert detect_format(b"# Title\n", "notes.markdown") == "markdown"
    assert detect_format(b"hello", "notes.txt") == "text"
    assert detect_format(b"hello", "LICENSE") == "text"
    assert detect_format(b"hello", "data.tsv") == "csv"


def test_unknown_and_unsupported_containers_are_none() -> None:
    assert detect_format(b"\x89PNG\r\n\x1a\n....", "picture.png") is None
    assert detect_format(b"hello", "archive.xyz") is None
    assert detect_format(_local_header(b"photo.jpg", b"\xff\xd8\xff"), "photos.zip") is None
    assert detect_format(_ole("WordDocument"), "old.doc") is None


@pytest.mark.parametrize(
    ("streams", "expected"),
    [
        (("WordDocument", "1Table"), "doc"),
        (("PowerPoint Document",), "ppt"),
        (("Workbook",), "xls"),
        (("Book",), "xls"),
        (("EncryptionInfo", "EncryptedPackage"), "encrypted"),
        (("Something Else",), "ole"),
    ],
)
def test_ole2_files_are_told_apart_by_their_directory(streams: tuple[str, ...], expected: str) -> None:
    assert sniff(_ole(*streams)) == expected


def test_an_ole_name_off_a_directory_boundary_does_not_count() -> None:
    data = bytearray(_ole("Something Else"))
    name = "WordDocument".encode("utf-16-le") + b"\x00\x00"
    data[512 + 300 : 512 + 300 + len(name)] = name  # inside an entry, not at its start
    assert sniff(bytes(data)) == "ole"


# -- errors from detection -------------------------------------------------------------------------------------


def _error(data: bytes, name: str, **kwargs: object) -> str:
    with pytest.raises(ConversionError) as caught:
        to_markdown_bytes(data, name, **kwargs)  # type: ignore[arg-type]
    message = str(caught.value)
    assert "\n" not in message and message.startswith(name)
    return message


def test_conversion_error_is_a_usage_error() -> None:
    assert issubclass(ConversionError, UsageError) and issubclass(ConversionError, DrsgError)
    assert ConversionError.exit_code == 2


def test_legacy_word_and_powerpoint_say_how_to_fix_it() -> None:
    assert "save it as .docx" in _error(_ole("WordDocument"), "old.doc")
    assert "save it as .pptx" in _error(_ole("PowerPoint Document"), "deck.bin")


def test_password_protected_office_files_are_refused() -> None:
    assert "password-protected" in _error(_ole("EncryptionInfo", "EncryptedPackage"), "secret.docx")


def test_unsupported_extension() -> None:
    message = _error(b"hello", "diagram.xyz")
    assert "unsupported format '.xyz'" in message and ".docx" in message


def test_empty_input() -> None:
    assert "empty (0 bytes)" in _error(b"", "nothing.txt")


def test_whitespace_only_text_has_nothing_to_convert() -> None:
    assert "no text" in _error(b"\n \n\t\n", "blank.md")


def test_size_cap() -> None:
    message = _error(b"x" * 2048, "big.txt", limits=Limits(max_bytes=1024))
    assert message == "big.txt: 2,048 bytes is over the 1,024 bytes limit for documents; split it or raise the limit"


def test_size_cap_when_reading_a_path(tmp_path: Path) -> None:
    path = tmp_path / "big.txt"
    path.write_bytes(b"x" * 4096)
    with pytest.raises(ConversionError, match=r"big\.txt: .*limit"):
        to_markdown(path, limits=Limits(max_bytes=1000))


def test_missing_path(tmp_path: Path) -> None:
    with pytest.raises(ConversionError, match="cannot read it"):
        to_markdown(tmp_path / "absent.md")


# -- text and Markdown pass through ----------------------------------------------------------------------------


def test_markdown_passes_through_with_only_outer_blank_lines_trimmed(tmp_path: Path) -> None:
    body = "# Zürich\n\n  indented line\n\n\n\n| a | b |\n|---|---|\ntrailing spaces   \n"
    path = tmp_path / "notes.md"
    path.write_text("\n\n  \n" + body + "\n\n   \n", encoding="utf-8")
    converted = to_markdown(path)
    assert converted.format == "markdown"
    assert converted.markdown == body
    assert converted.notes == []


def test_text_line_endings_are_normalised() -> None:
    converted = to_markdown_bytes("first\r\nsecond\rthird 广告点击\r\n".encode(), "crlf.txt")
    assert converted.markdown == "first\nsecond\nthird 广告点击\n"
    assert converted.format == "text"


@pytest.mark.parametrize(
    ("encoded", "label"),
    [
        (codecs.BOM_UTF8 + "Zürich 广告点击".encode(), "utf-8 bom"),
        (codecs.BOM_UTF16_LE + "Zürich 广告点击".encode("utf-16-le"), "utf-16-le"),
        (codecs.BOM_UTF16_BE + "Zürich 广告点击".encode("utf-16-be"), "utf-16-be"),
        (codecs.BOM_UTF32_LE + "Zürich 广告点击".encode("utf-32-le"), "utf-32-le"),
    ],
)
def test_byte_order_marks_pick_the_encoding_and_are_dropped(encoded: bytes, label: str) -> None:
    assert to_markdown_bytes(encoded, "bom.txt").markdown == "Zürich 广告点击\n", label


def test_extensionless_text_is_text() -> None:
    assert to_markdown_bytes(b"Plain words.\n", "README").markdown == "Plain words.\n"


def test_binary_junk_named_txt_is_refused() -> None:
    junk = bytes(range(256)) * 8
    assert "binary data, not text" in _error(junk, "junk.txt")


def test_control_heavy_bytes_without_nul_are_refused() -> None:
    junk = bytes([1, 2, 3, 4, 5, 6, 7, 8, 14, 15, 16]) * 100
    assert "binary data, not text" in _error(junk, "junk.md")


def test_invalid_utf8_names_the_offset_and_the_fix() -> None:
    message = _error(b"caf\xe9 au lait\n", "latin1.txt")
    assert "not valid UTF-8 text (byte 0xe9 at offset 3)" in message and "re-save it as UTF-8" in message


# -- Markdown helpers ------------------------------------------------------------------------------------------


def test_cell_text_escapes_pipes_and_breaks_lines() -> None:
    assert cell_text("a|b\nc") == "a\\|b<br>c"
    assert cell_text(None) == ""
    assert cell_text(3.0) == "3"
    assert cell_text(2.5) == "2.5"
    assert cell_text(True) == "TRUE"


def test_pipe_table_trims_blank_rows_and_right_columns() -> None:
    rows = [["h1", "h2", ""], ["", "", ""], ["x", "", ""], ["y", "z", ""]]
    assert pipe_table(rows) == "| h1 | h2 |\n| --- | --- |\n| x |  |\n| y | z |"
    assert pipe_table([["", ""]]) == ""


def test_heading_and_tidy() -> None:
    assert heading(9, " Deep\n title ") == "###### Deep title"
    assert heading(0, "x") == "# x"
    assert heading(2, "  ") == ""
    assert tidy("\n\n# A  \r\n\r\n\r\n\r\ntext\n\n") == "# A\n\ntext\n"
