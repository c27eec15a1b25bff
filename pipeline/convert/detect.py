"""Which format a document is: content signature first, the file extension as the fallback.

ZIP containers are told apart by what they hold: the ``mimetype`` entry of OpenDocument and EPUB
files, the main part's content type in ``[Content_Types].xml`` of Office Open XML files. OLE2
compound files (legacy Office, password-protected Office) by the names in their directory.
"""

from __future__ import annotations

import io
import re
import zipfile
from pathlib import PurePath

#: formats that ``to_markdown`` converts
SUPPORTED: tuple[str, ...] = (
    "markdown",
    "text",
    "csv",
    "docx",
    "pptx",
    "xlsx",
    "xls",
    "odt",
    "ods",
    "odp",
    "rtf",
    "epub",
    "pdf",
    "html",
)

EXTENSIONS: dict[str, str] = {
    ".md": "markdown",
    ".markdown": "markdown",
    ".txt": "text",
    ".text": "text",
    "": "text",
    ".csv": "csv",
    ".tsv": "csv",
    ".docx": "docx",
    ".docm": "docx",
    ".dotx": "docx",
    ".pptx": "pptx",
    ".xlsx": "xlsx",
    ".xlsm": "xlsx",
    ".xls": "xls",
    ".odt": "odt",
    ".ods": "ods",
    ".odp": "odp",
    ".rtf": "rtf",
    ".epub": "epub",
    ".pdf": "pdf",
    ".html": "html",
    ".htm": "html",
    ".xhtml": "html",
    # recognised so the error can say what to do, never converted
    ".doc": "doc",
    ".ppt": "ppt",
}

_OLE_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
_ZIP_MAGIC = (b"PK\x03\x04", b"PK\x05\x06")
_MIMETYPES = {
    b"application/vnd.oasis.opendocument.text": "odt",
    b"application/vnd.oasis.opendocument.spreadsheet": "ods",
    b"application/vnd.oasis.opendocument.presentation": "odp",
    b"application/epub+zip": "epub",
}
# main-part content types of Office Open XML packages: (marker, format)
_OOXML_MAIN = (
    (b"wordprocessingml", "docx"),
    (b"ms-word.", "docx"),
    (b"presentationml", "pptx"),
    (b"ms-powerpoint.", "pptx"),
    (b"spreadsheetml", "xlsx"),
    (b"ms-excel.", "xlsx"),
)
_OOXML_PARTS = ((b"word/document.xml", "docx"), (b"ppt/presentation.xml", "pptx"), (b"xl/workbook.xml", "xlsx"))
_MAIN_TYPE = re.compile(rb'ContentType\s*=\s*"([^"]*\.main\+xml)"')
# OLE2 directory entry names (UTF-16LE, NUL-terminated, at a 128-byte boundary): (name, kind)
_OLE_STREAMS = (
    ("EncryptedPackage", "encrypted"),
    ("WordDocument", "doc"),
    ("PowerPoint Document", "ppt"),
    ("Workbook", "xls"),
    ("Book", "xls"),
)


def extension(name: str) -> str:
    return PurePath(name).suffix.lower()


def by_extension(name: str) -> str | None:
    return EXTENSIONS.get(extension(name))


def sniff(data: bytes) -> str | None:
    """The kind the content's signature shows, or None when the bytes carry no known signature.

    Besides the ``SUPPORTED`` formats the answer can be ``zip`` (some other ZIP archive), ``doc``,
    ``ppt``, ``encrypted`` (a password-protected Office file) or ``ole`` (another OLE2 file).
    """
    if data.startswith(_ZIP_MAGIC):
        return _zip_kind(data)
    if data.startswith(b"%PDF-"):
        return "pdf"
    if data.lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"{\\rtf"):
        return "rtf"
    if data.startswith(_OLE_MAGIC):
        return _ole_kind(data)
    if data[:512].lstrip(b"\xef\xbb\xbf \t\r\n").lower().startswith((b"<!doctype html", b"<html")):
        return "html"
    return None


def detect_format(data_head: bytes, name: str) -> str | None:
    """The ``SUPPORTED`` format of a document from its first bytes (or all of them) and its name.

    The content signature wins over the extension; None when the content is a container that is not
    supported or neither says a supported format.
    """
    kind = sniff(data_head)
    if kind is None:
        kind = by_extension(name)
    return kind if kind in SUPPORTED else None


def _zip_kind(data: bytes) -> str:
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as zf:
            names = set(zf.namelist())
            if "mimetype" in names:
                with zf.open("mimetype") as f:
                    mimetype = f.read(100).strip()
                for mime, kind in _MIMETYPES.items():
                    if mimetype.startswith(mime):
                        return kind
            if "[Content_Types].xml" in names:
                with zf.open("[Content_Types].xml") as f:
                    types = f.read(1024 * 1024)
                for main in _MAIN_TYPE.findall(types):
                    for marker, kind in _OOXML_MAIN:
                        if marker in main:
                            return kind
            listed = "\n".join(names).encode()
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, EOFError, ValueError, NotImplementedError):
        # only the head of the file, or a damaged one: look at the raw bytes instead
        listed = data
        for mime, kind in _MIMETYPES.items():
            if mime in data[:256]:
                return kind
    for part, kind in _OOXML_PARTS:
        if part in listed:
            return kind
    return "zip"


def _ole_kind(data: bytes) -> str:
    for name, kind in _OLE_STREAMS:
        needle = name.encode("utf-16-le") + b"\x00\x00"
        start = data.find(needle)
        while start != -1:
            if start % 128 == 0:
                return kind
            start = data.find(needle, start + 1)
    return "ole"
