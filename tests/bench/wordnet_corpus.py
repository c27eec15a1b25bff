"""A real corpus with judged queries, built offline from WordNet 3.0's nouns (Debian ``wordnet-base``).

Nodes are noun synsets: key = the synset's 8-digit offset in ``data.noun``, label ``Synset``,
properties ``lemmas`` (the synonyms, comma separated) and ``gloss`` (the definition, then the example
sentences). Edges are the hypernym pointers (``@`` and instance ``@i``) as ``IS_A`` from the
hyponym to the hypernym, kept when both ends were picked.

The pick is deterministic: a breadth-first walk down the hyponym pointers from the most frequent
sense of a few root words, taking an equal share of the wanted size under each root (a connected
region per root), in pointer order.

Judged queries: the query text is one of the synset's example sentences (the first one long
enough), else its definition, with every word of every lemma removed (so BM25 cannot match the
synset by its name). Relevance 2 = that synset; 1 = its direct hypernyms and hyponyms within the
pick (its graph neighbours). A query keeps at least three words after the removal.

Needs ``apt-get install -y wordnet-base`` (files under /usr/share/wordnet); nothing is downloaded.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

WORDNET = Path("/usr/share/wordnet")
#: the roots of the evaluation corpus: varied domains, each a few hundred to thousands of synsets
EVAL_ROOTS = (
    "musical_instrument",
    "vehicle",
    "dog",
    "bird",
    "fish",
    "tree",
    "food",
    "disease",
    "sport",
    "building",
)
HYPERNYMS = ("@", "@i")
HYPONYMS = ("~", "~i")
_WORD = re.compile(r"[A-Za-z0-9']+")


@dataclass
class Synset:
    offset: str
    lemmas: list[str]
    definition: str
    examples: list[str]
    hypernyms: list[str] = field(default_factory=list)
    hyponyms: list[str] = field(default_factory=list)

    @property
    def gloss(self) -> str:
        return "; ".join([self.definition, *self.examples])

    @property
    def lemma_text(self) -> str:
        return ", ".join(lemma.replace("_", " ") for lemma in self.lemmas)


def available(root: Path = WORDNET) -> bool:
    return (root / "data.noun").is_file() and (root / "index.noun").is_file()


def _split_gloss(text: str) -> tuple[str, list[str]]:
    """``definition; "example"; "example"`` → (definition, examples)."""
    examples = [m.strip() for m in re.findall(r'"([^"]+)"', text)]
    definition = text.split('"', 1)[0].strip().rstrip(";").strip()
    return definition, [e for e in examples if e]


def parse_data(lines: Iterable[str]) -> dict[str, Synset]:
    """``data.noun`` → offset → Synset (the license header lines start with two spaces)."""
    out: dict[str, Synset] = {}
    for line in lines:
        if line.startswith("  ") or not line.strip():
            continue
        head, _, gloss = line.partition(" | ")
        fields = head.split()
        offset, w_cnt = fields[0], int(fields[3], 16)
        lemmas = [fields[4 + 2 * i] for i in range(w_cnt)]
        at = 4 + 2 * w_cnt
        p_cnt = int(fields[at])
        definition, examples = _split_gloss(gloss.strip())
        syn = Synset(offset, lemmas, definition, examples)
        for i in range(p_cnt):
            symbol, target, pos = fields[at + 1 + 4 * i : at + 4 + 4 * i]
            if pos != "n":
                continue
            if symbol in HYPERNYMS:
                syn.hypernyms.append(target)
            elif symbol in HYPONYMS:
                syn.hyponyms.append(target)
        out[offset] = syn
    return out


def first_senses(lines: Iterable[str]) -> dict[str, str]:
    """``index.noun`` → lemma → the offset of its most frequent sense."""
    out: dict[str, str] = {}
    for line in lines:
        if line.startswith("  ") or not line.strip():
            continue
        fields = line.split()
        lemma, synset_cnt, p_cnt = fields[0], int(fields[2]), int(fields[3])
        offsets = fields[4 + p_cnt + 2 :]
        assert len(offsets) == synset_cnt, line
        out[lemma] = offsets[0]
    return out


def load(root: Path = WORDNET) -> tuple[dict[str, Synset], dict[str, str]]:
    with (root / "data.noun").open(encoding="utf-8", errors="replace") as fh:
        synsets = parse_data(fh)
    with (root / "index.noun").open(encoding="utf-8", errors="replace") as fh:
        senses = first_senses(fh)
    return synsets, senses


def pick(synsets: dict[str, Synset], roots: list[str], size: int) -> list[str]:
    """A breadth-first walk down the hyponyms from each root offset, ``size / len(roots)`` synsets
    under each (a root with fewer descendants leaves its share unused); offsets in pick order."""
    share = max(1, size // len(roots))
    chosen: dict[str, None] = {}
    for root in roots:
        taken = 0
        queue, seen = [root], {root}
        while queue and taken < share and len(chosen) < size:
            node = queue.pop(0)
            if node not in chosen:
                chosen[node] = None
                taken += 1
            for child in synsets[node].hyponyms:
                if child not in seen and child in synsets:
                    seen.add(child)
                    queue.append(child)
    return list(chosen)


def strip_lemmas(text: str, lemmas: list[str]) -> str:
    """``text`` without any word of any lemma (case-insensitive; also their plural in -s/-es)."""
    banned: set[str] = set()
    for lemma in lemmas:
        for word in _WORD.findall(lemma.replace("_", " ").replace("-", " ")):
            w = word.lower()
            banned.update({w, w + "s", w + "es", w[:-1] + "ies" if w.endswith("y") else w})
    words = []
    for token in text.split():
        core = "".join(_WORD.findall(token)).lower()
        parts = {p.lower() for p in re.split(r"[-/]", token) if p}
        if core in banned or any("".join(_WORD.findall(p)) in banned for p in parts):
            continue
        words.append(token)
    return " ".join(words)


@dataclass(frozen=True)
class Corpus:
    synsets: dict[str, Synset]  # the picked ones, in pick order
    edges: list[tuple[str, str]]  # (hyponym, hypernym) offsets, both picked
    queries: list[tuple[str, str]]  # (query id, text)
    qrels: dict[str, dict[str, int]]  # query id → offset → grade

    def qrels_lines(self) -> list[str]:
        return [f"{qid} 0 {doc} {grade}" for qid, judged in self.qrels.items() for doc, grade in judged.items()]


def build(size: int, roots: Iterable[str] = EVAL_ROOTS, queries: int = 500, root: Path = WORDNET) -> Corpus:
    """The corpus of ``size`` synsets under ``roots`` (lemmas), and up to ``queries`` judged queries
    spread evenly over the picked synsets that yield a query of ≥ 3 words."""
    synsets, senses = load(root)
    offsets = pick(synsets, [senses[r] for r in roots], size)
    picked = {o: synsets[o] for o in offsets}
    edges = [(o, h) for o in offsets for h in synsets[o].hypernyms if h in picked]
    candidates: list[tuple[str, str]] = []
    for o in offsets:
        syn = picked[o]
        text = ""
        for source in [*syn.examples, syn.definition]:
            text = strip_lemmas(source, syn.lemmas)
            if len(text.split()) >= 3:
                break
        if len(text.split()) >= 3:
            candidates.append((o, text))
    step = max(1, len(candidates) / max(1, queries))
    chosen = [candidates[int(i * step)] for i in range(min(queries, len(candidates)))]
    qlist: list[tuple[str, str]] = []
    qrels: dict[str, dict[str, int]] = {}
    for i, (o, text) in enumerate(chosen):
        qid = f"q{i + 1}"
        qlist.append((qid, text))
        judged = {n: 1 for n in [*synsets[o].hypernyms, *synsets[o].hyponyms] if n in picked}
        judged[o] = 2
        qrels[qid] = judged
    return Corpus(picked, edges, qlist, qrels)
