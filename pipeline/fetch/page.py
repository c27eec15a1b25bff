"""A fetched page as the crawler needs it, and the assembled document (pure; no I/O).

HTML keeps its main content: what is surely furniture is removed first (navigation, headers,
footers, asides, forms, cookie or consent banners), then ``trafilatura`` (a maintained boilerplate
remover; it never touches the network when given the text) finds the main content as Markdown. A
page it finds nothing in (very short pages) falls back to ``<main>``/``<article>`` through the
converter saved pages use (``drsg.pipeline.convert.html``). Links are gathered from the page
itself, each with its anchor text, ``title`` and whether it sat in the prose (not inside
navigation, a header, a footer, an aside or a cookie/consent banner). Fetched text is untrusted data:
nothing in it is read as an instruction, and a page cannot forge a source boundary (a
``<!-- drsg:source`` of its own is defused).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import urljoin, urlsplit, urlunsplit

from bs4 import BeautifulSoup, Tag

from drsg.pipeline.convert.base import SOURCE_MARKER, source_marker
from drsg.pipeline.convert.html import html_to_markdown

_FURNITURE_TAGS = ("nav", "aside", "form", "button", "iframe", "svg", "dialog")
_FURNITURE_ROLES = {"navigation", "banner", "contentinfo", "complementary", "search", "dialog", "alertdialog"}
_FURNITURE_NAMES = re.compile(r"cookie|consent|gdpr|banner|navbar|menu|sidebar|footer|breadcrumb", re.I)
HTML_TYPES = ("text/html", "application/xhtml+xml")
TEXT_TYPES = ("text/markdown", "text/x-markdown", "text/plain")
PDF_TYPES = ("application/pdf",)


@dataclass(frozen=True)
class Link:
    url: str  # absolute and normalised
    anchor: str
    title: str
    in_prose: bool


@dataclass(frozen=True)
class Reading:
    title: str
    markdown: str
    links: tuple[Link, ...] = ()


def normalise(url: str) -> str:
    """One spelling per page: lowercase scheme and host, no fragment, no trailing slash; query kept."""
    parts = urlsplit(url)
    path = parts.path.rstrip("/")
    return urlunsplit((parts.scheme.lower(), parts.netloc.lower(), path, parts.query, ""))


def same_host(a: str, b: str) -> bool:
    return (urlsplit(a).hostname or "") == (urlsplit(b).hostname or "")


def media_type(content_type: str) -> str:
    return content_type.split(";", 1)[0].strip().lower()


def read_html(body: bytes | str, base: str) -> Reading:
    soup = BeautifulSoup(body, "html.parser")
    for junk in soup.find_all(["script", "style", "template", "noscript"]):
        junk.decompose()
    title = _title(soup)
    base_tag = soup.find("base", href=True)
    if isinstance(base_tag, Tag):
        base = urljoin(base, str(base_tag["href"]))
    links = _links(soup, base)
    for tag in [t for t in soup.find_all(True) if _is_furniture(t)]:  # what is surely furniture, first
        if not tag.decomposed:
            tag.decompose()
    markdown = _main_content(str(soup))
    if not markdown:
        root = soup.find("main") or soup.find("article") or soup.find(True, role="main") or soup.find("body") or soup
        markdown, _images = html_to_markdown(str(root))
    return Reading(title or "", markdown.strip(), links)


def _main_content(html: str) -> str:
    import trafilatura

    extracted = trafilatura.extract(
        html,
        output_format="markdown",
        include_links=False,  # link targets are the crawler's business, not the digest's
        include_images=False,
        include_tables=True,
        include_comments=False,
        favor_recall=True,
        deduplicate=False,
        with_metadata=False,
    )
    return (extracted or "").strip()


def read_text(text: str) -> Reading:
    first = next((line for line in text.splitlines() if line.strip()), "")
    title = first[2:].strip() if first.startswith("# ") else ""
    return Reading(title, text.strip())


def block(url: str, title: str, markdown: str) -> str:
    """One page of the assembled document: its source marker, ``# Title`` unless it opens with it."""
    body = _defused(markdown)
    first = next((line for line in body.splitlines() if line.strip()), "")
    heading = f"# {title or url}"
    head = "" if first.strip() == heading else f"{heading}\n\n"
    return f"{source_marker(url)}\n\n{head}{body}".rstrip()


def document(blocks: Sequence[str]) -> str:
    return "\n\n".join(blocks)


def _defused(markdown: str) -> str:
    """A page's own ``<!-- drsg:source`` becomes visible text, so it opens no chunk and names no source."""
    return markdown.replace(SOURCE_MARKER, "&lt;!-- drsg:source")


def _title(soup: BeautifulSoup) -> str:
    for candidate in (soup.find("title"), soup.find("h1")):
        if candidate is not None:
            text = " ".join(candidate.get_text(" ").split())
            if text:
                return text
    return ""


def _is_furniture(tag: Tag) -> bool:
    if tag.name in ("header", "footer"):  # an article's own header (its title, byline) is content
        return tag.find_parent(["article", "main"]) is None
    if tag.name in _FURNITURE_TAGS:
        return True
    if tag.attrs is None:
        return False
    if str(tag.get("role", "")).lower() in _FURNITURE_ROLES:
        return True
    if tag.name in ("html", "body", "main", "article"):
        return False
    names = " ".join([str(tag.get("id", "")), *[str(c) for c in tag.get_attribute_list("class")]])
    return bool(_FURNITURE_NAMES.search(names))


def _links(soup: BeautifulSoup, base: str) -> tuple[Link, ...]:
    found: list[Link] = []
    for a in soup.find_all("a", href=True):
        href = str(a["href"]).strip()
        target = urljoin(base, href)
        if urlsplit(target).scheme not in ("http", "https"):
            continue  # mailto:, javascript:, tel: …
        in_prose = not any(_is_furniture(parent) for parent in a.parents if isinstance(parent, Tag))
        anchor = " ".join(a.get_text(" ").split())
        found.append(Link(normalise(target), anchor, " ".join(str(a.get("title", "")).split()), in_prose))
    return tuple(found)
