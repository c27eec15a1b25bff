"""ZIP containers (docx, pptx, xlsx, odt, ods, odp, epub) checked before any library parses them.

Every entry is read once, in bounded chunks, before the document library sees the file:

- the number of entries and the sum of their unpacked sizes are capped (``Limits``), so a zip bomb is
  refused before anything is inflated. Python's ``zipfile``, which every library used here reads
  through, never returns more than an entry's declared size (a lying size fails its CRC check);
- so is each XML entry of a format whose library builds the whole tree in memory (a DOM costs
  10-20 times the XML's size);
- password-protected entries are refused;
- XML entries that declare entities (``<!ENTITY``) are refused. Office Open XML, OpenDocument and
  EPUB never need them, and this is belt and braces: the XML parsers underneath (expat 2.4+,
  defusedxml, lxml with ``resolve_entities`` off or limited to internal ones) already neither fetch
  external entities nor expand entity bombs;
- a damaged container (bad CRC, truncated data) fails here, with a message that names the format.
"""

from __future__ import annotations

import io
import zipfile

from drsg.kernel.errors import ConversionError
from drsg.pipeline.convert.base import Source, human_size

_XML_SUFFIXES = (".xml", ".rels", ".opf", ".ncx", ".xhtml", ".html", ".htm", ".svg", ".vml")
_CHUNK = 1024 * 1024
_ENTITY = b"<!ENTITY"
_ZIP_ERRORS = (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, EOFError, ValueError, NotImplementedError)


def checked_zip(src: Source, label: str, *, xml_in_memory: bool = True) -> zipfile.ZipFile:
    """Open ``src`` as a ZIP container after checking it; ``label`` names the format in messages.

    ``xml_in_memory`` says the format's library parses each XML entry into a tree, so each is capped.
    """
    damaged = f"re-save it from the application that made it, or export it again as {label}"
    try:
        zf = zipfile.ZipFile(io.BytesIO(src.data))
    except _ZIP_ERRORS as exc:
        raise src.fail(f"not a valid {label} file (damaged ZIP container: {_reason(exc)})", damaged) from None
    try:
        _check(zf, src, xml_in_memory)
    except ConversionError:
        zf.close()
        raise
    except _ZIP_ERRORS as exc:
        zf.close()
        raise src.fail(f"not a valid {label} file (damaged ZIP container: {_reason(exc)})", damaged) from None
    return zf


def _check(zf: zipfile.ZipFile, src: Source, xml_in_memory: bool) -> None:
    limits = src.limits
    infos = zf.infolist()
    if len(infos) > limits.max_entries:
        raise src.fail(
            f"the container holds {len(infos)} entries, more than the limit of {limits.max_entries}",
            "this is not an ordinary document (a zip bomb?); split it or raise the entry limit",
        )
    unpacked = sum(info.file_size for info in infos)
    if unpacked > limits.max_unpacked_bytes:
        raise src.fail(
            f"unpacks to {human_size(unpacked)}, more than the limit of {human_size(limits.max_unpacked_bytes)}",
            "this is not an ordinary document (a zip bomb?); split it or raise the unpacked-size limit",
        )
    for info in infos:
        if info.flag_bits & 0x1:
            raise src.fail(
                "the document is password-protected", "remove the password in its application and save it again"
            )
        if info.is_dir():
            continue
        xml = info.filename.lower().endswith(_XML_SUFFIXES)
        if xml and xml_in_memory and info.file_size > limits.max_xml_entry_bytes:
            raise src.fail(
                f"entry {info.filename} unpacks to {human_size(info.file_size)} of XML, more than the limit of "
                f"{human_size(limits.max_xml_entry_bytes)}",
                "split the document or raise the XML-entry limit",
            )
        tail = b""
        with zf.open(info) as entry:
            while chunk := entry.read(_CHUNK):
                if xml and _ENTITY in tail + chunk:
                    raise src.fail(
                        f"entry {info.filename} declares XML entities, which documents never need",
                        "the file may be crafted to attack XML parsers; do not convert it",
                    )
                tail = chunk[-len(_ENTITY) :]


def _reason(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text[:120] or type(exc).__name__
