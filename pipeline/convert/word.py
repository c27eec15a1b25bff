"""Word ``.docx`` (also ``.docm``/``.dotx``; macros are never run) through ``mammoth``.

mammoth reads the document's semantic structure — heading styles, numbered and bulleted lists (also
numbering inherited from list styles), tables, bold/italic, links, footnotes — into clean HTML, which
``html.py`` turns into Markdown. It never fetches external files or images here
(``external_file_access=False``), images become their alt text, and its XML goes through
``xml.dom.minidom`` (expat: no external entities, entity-expansion limits).
"""

from __future__ import annotations

import io
from typing import Any

import mammoth

from drsg.pipeline.convert.base import Output, Source
from drsg.pipeline.convert.container import checked_zip
from drsg.pipeline.convert.html import html_to_markdown

_STYLE_MAP = """
p[style-name='Title'] => h1:fresh
p[style-name='Subtitle'] => p:fresh
p[style-name='Quote'] => blockquote > p:fresh
p[style-name='Intense Quote'] => blockquote > p:fresh
"""


def _image_alt_only(image: Any) -> dict[str, str]:
    return {}


def convert_docx(src: Source) -> Output:
    checked_zip(src, ".docx").close()
    result = mammoth.convert_to_html(
        io.BytesIO(src.data),
        style_map=_STYLE_MAP,
        include_embedded_style_map=False,
        external_file_access=False,
        convert_image=mammoth.images.img_element(_image_alt_only),
    )
    markdown, images = html_to_markdown(result.value)
    notes = [
        " ".join(str(m.message).split()) for m in result.messages if not str(m.message).startswith("Unrecognised")
    ][:10]
    if images:
        notes.append(f"{images} image(s) left out (only their alt text is kept)")
    return markdown, notes
