"""HTML → GitHub-flavoured Markdown: saved web pages, and the converters that go through HTML (docx, epub).

``markdownify`` (over BeautifulSoup with the standard library's ``html.parser``, which resolves no
external entities) does the work; the subclass escapes pipes inside table cells, keeps images as
their alt text only (embedded images are base64 blobs, useless as text) and drops scripts, styles
and the document head.
"""

from __future__ import annotations

from typing import Any

from bs4 import BeautifulSoup
from markdownify import ATX, BACKSLASH, MarkdownConverter

from drsg.pipeline.convert.base import Output, Source

# page furniture, not content: dropped from saved web pages
_PAGE_FURNITURE = ["nav", "footer", "aside", "form", "button", "iframe", "svg"]


class _Converter(MarkdownConverter):
    def __init__(self) -> None:
        super().__init__(
            heading_style=ATX,
            bullets="-",
            newline_style=BACKSLASH,
            table_infer_header=True,
            escape_underscores=False,
            strip=["script", "style", "head", "title", "meta", "link"],
        )
        self.images = 0

    def _cell(self, el: Any, text: str) -> str:
        colspan = el.attrs.get("colspan", "1")
        span = max(1, min(1000, int(colspan))) if str(colspan).isdigit() else 1
        body = " ".join(text.split()).replace("|", "\\|")
        return f" {body} |" + " |" * (span - 1)

    def convert_td(self, el: Any, text: str, parent_tags: Any) -> str:
        return self._cell(el, text)

    def convert_th(self, el: Any, text: str, parent_tags: Any) -> str:
        return self._cell(el, text)

    def convert_img(self, el: Any, text: str, parent_tags: Any) -> str:
        self.images += 1
        alt = " ".join(str(el.attrs.get("alt") or "").split())
        return f"[image: {alt}]" if alt else ""


def html_to_markdown(html: str | bytes) -> tuple[str, int]:
    """Markdown for an HTML document (its body, if it has one) and the number of images dropped."""
    soup = BeautifulSoup(html, "html.parser")
    for junk in soup.find_all(["script", "style", "head", "template", "noscript"]):
        junk.decompose()
    body = soup.find("body")
    converter = _Converter()
    markdown = converter.convert_soup(body if body is not None else soup)
    return markdown, converter.images


def convert_html(src: Source) -> Output:
    """A saved web page: its body as Markdown (navigation, footers, forms and scripts left out)."""
    soup = BeautifulSoup(src.data, "html.parser")  # bytes: the page's own charset declaration is honoured
    for furniture in soup.find_all(_PAGE_FURNITURE):
        furniture.decompose()
    markdown, images = html_to_markdown(str(soup))
    notes = [f"{images} image(s) left out (only their alt text is kept)"] if images else []
    return markdown, notes
