"""EPUB (2 and 3): the spine's XHTML documents in reading order, each through ``html.py``.

The container is read with ``zipfile`` (checked by ``container.py``) and its package files with
``defusedxml``; no EPUB library is needed for reading (the usual one, EbookLib, is AGPL). Books
whose spine documents are encrypted (DRM) are refused; font obfuscation alone is fine.
"""

from __future__ import annotations

import posixpath
import zipfile
from urllib.parse import unquote

from defusedxml import ElementTree

from drsg.pipeline.convert.base import Output, Source
from drsg.pipeline.convert.container import checked_zip
from drsg.pipeline.convert.html import html_to_markdown
from drsg.pipeline.convert.markdown import blocks

_CONTAINER = "{urn:oasis:names:tc:opendocument:xmlns:container}"
_OPF = "{http://www.idpf.org/2007/opf}"
_ENC = "{http://www.w3.org/2001/04/xmlenc#}"
_HTML_TYPES = ("application/xhtml+xml", "text/html")


def _read(zf: zipfile.ZipFile, src: Source, path: str) -> bytes:
    try:
        return zf.read(path)
    except KeyError:
        raise src.fail(f"the EPUB lacks {path}", "export the book again as EPUB") from None


def convert_epub(src: Source) -> Output:
    with checked_zip(src, ".epub") as zf:
        container = ElementTree.fromstring(_read(zf, src, "META-INF/container.xml"))
        rootfile = container.find(f".//{_CONTAINER}rootfile")
        opf_path = rootfile.get("full-path") if rootfile is not None else None
        if not opf_path:
            raise src.fail("the EPUB names no package document", "export the book again as EPUB")
        opf = ElementTree.fromstring(_read(zf, src, opf_path))
        base = posixpath.dirname(opf_path)
        manifest = {
            item.get("id"): (
                posixpath.normpath(posixpath.join(base, unquote(item.get("href", "")))),
                item.get("media-type"),
            )
            for item in opf.iter(f"{_OPF}item")
        }
        spine = [manifest[ref.get("idref")] for ref in opf.iter(f"{_OPF}itemref") if ref.get("idref") in manifest]
        encrypted = _encrypted_paths(zf)
        present = set(zf.namelist())
        parts: list[str] = []
        notes: list[str] = []
        images = 0
        for path, media_type in spine:
            if media_type not in _HTML_TYPES:
                continue
            if path in encrypted:
                raise src.fail("the book is DRM-protected (its chapters are encrypted)", "use a DRM-free copy")
            if path not in present:
                notes.append(f"spine document {path} is missing from the EPUB")
                continue
            markdown, dropped = html_to_markdown(zf.read(path))
            parts.append(markdown)
            images += dropped
    if images:
        notes.append(f"{images} image(s) left out (only their alt text is kept)")
    return blocks(parts), notes


def _encrypted_paths(zf: zipfile.ZipFile) -> set[str]:
    if "META-INF/encryption.xml" not in zf.namelist():
        return set()
    root = ElementTree.fromstring(zf.read("META-INF/encryption.xml"))
    return {posixpath.normpath(unquote(ref.get("URI", ""))) for ref in root.iter(f"{_ENC}CipherReference")}
