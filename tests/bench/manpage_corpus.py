"""A second real judged corpus, from another source than WordNet: the section-1 manual pages
installed on this machine (``/usr/share/man/man1``; Debian's ``man-db`` + the packages' pages).

Nodes are pages (key ``name.1``, label ``Page``) whose ``text`` is the start of the page's
DESCRIPTION (roff markup stripped, at most ``DESCRIPTION_WORDS`` words); edges are the SEE ALSO
references between two picked pages (``SEE_ALSO``). A query is the page's NAME line summary
("list directory contents") with every word of the page's own names removed, so BM25 cannot match
the page by its name (the known-item task `apropos` answers); relevance 2 = the page, 1 = the pages
its SEE ALSO names within the pick. Alias pages (``.so``) and pages too short to describe are left
out. The pick is deterministic: the pages sorted by name, every ``step``-th kept.
"""

from __future__ import annotations

import gzip
import re
from dataclasses import dataclass, field
from pathlib import Path

MAN1 = Path("/usr/share/man/man1")
DESCRIPTION_WORDS = 80
_SECTION = re.compile(r'^\.SH\s+"?([^"\n]+)"?\s*$', re.M)
_FONT = re.compile(r"\\f(\[[^\]]*\]|\(..|.)")
_ESCAPE = re.compile(r"\\(\(..|\[[^\]]*\]|[-&|^%e0 ]|.)")
_REF = re.compile(r"([A-Za-z0-9_.+-]+)\s*\(1\)")
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9']+")


@dataclass
class Page:
    name: str
    names: list[str]
    summary: str
    description: str
    see_also: list[str] = field(default_factory=list)

    @property
    def key(self) -> str:
        return f"{self.name}.1"


@dataclass
class Corpus:
    pages: dict[str, Page]
    edges: list[tuple[str, str]]  # (page key, referenced page key)
    queries: list[tuple[str, str]]  # (query id, text)
    qrels: dict[str, dict[str, int]]

    def qrels_lines(self) -> list[str]:
        return [f"{q} 0 {doc} {grade}" for q, judged in self.qrels.items() for doc, grade in judged.items()]


def available() -> bool:
    return MAN1.is_dir() and any(MAN1.glob("*.1.gz"))


def _plain(roff: str) -> str:
    lines = []
    for line in roff.splitlines():
        if line.startswith(('.\\"', "'\\\"")):
            continue
        if line.startswith("."):
            parts = line.split(None, 1)
            if parts[0] in (".B", ".I", ".BR", ".BI", ".IB", ".RB", ".IR", ".RI", ".SM", ".SB") and len(parts) > 1:
                line = parts[1].replace('"', "")
            else:
                continue
        lines.append(line)
    text = _ESCAPE.sub(lambda m: "-" if m.group(1) == "-" else " ", _FONT.sub("", " ".join(lines)))
    return " ".join(text.split())


def read_page(path: Path) -> Page | None:
    try:
        roff = gzip.decompress(path.read_bytes()).decode("utf-8", errors="replace")
    except (OSError, EOFError):
        return None
    if roff.lstrip().startswith(".so "):
        return None  # an alias of another page
    heads = list(_SECTION.finditer(roff))
    sections = {m.group(1).strip().upper(): roff[m.end() : (heads[i + 1].start() if i + 1 < len(heads) else None)]
                for i, m in enumerate(heads)}  # fmt: skip
    name_line = _plain(sections.get("NAME", ""))
    if " - " not in name_line:
        return None
    names_part, summary = name_line.split(" - ", 1)
    names = [n.strip() for n in names_part.split(",") if n.strip()]
    description = " ".join(_plain(sections.get("DESCRIPTION", "")).split()[:DESCRIPTION_WORDS])
    if not names or len(description.split()) < 20 or len(summary.split()) < 3:
        return None
    refs = _REF.findall(_plain(sections.get("SEE ALSO", "")))
    return Page(path.name[: -len(".1.gz")], names, summary, description, refs)


def build(size: int = 3000, queries: int = 500) -> Corpus:
    paths = sorted(MAN1.glob("*.1.gz"))
    pages: dict[str, Page] = {}
    for path in paths:
        page = read_page(path)
        if page is not None:
            pages[page.name] = page
    step = max(1, len(pages) // size)
    picked = {name: pages[name] for name in sorted(pages)[::step][:size]}
    edges = sorted(
        {
            (page.key, picked[ref].key)
            for page in picked.values()
            for ref in page.see_also
            if ref in picked and ref != page.name
        }
    )
    asked: list[tuple[str, str]] = []
    qrels: dict[str, dict[str, int]] = {}
    neighbours: dict[str, set[str]] = {}
    for a, b in edges:
        neighbours.setdefault(a, set()).add(b)
        neighbours.setdefault(b, set()).add(a)
    own = {name: {w.lower() for n in page.names for w in _WORD.findall(n)} for name, page in picked.items()}
    q_step = max(1, len(picked) // queries)
    for name in sorted(picked)[::q_step]:
        page = picked[name]
        words = [w for w in page.summary.split() if not ({x.lower() for x in _WORD.findall(w)} & own[name])]
        if len(words) < 3:
            continue
        qid = f"m{len(asked):04d}"
        asked.append((qid, " ".join(words)))
        qrels[qid] = {page.key: 2, **dict.fromkeys(sorted(neighbours.get(page.key, ())), 1)}
        if len(asked) == queries:
            break
    return Corpus(picked, edges, asked, qrels)
