"""Words → catalog objects, offline: the scorer behind ``find`` and ``catalog search``. Pure.

Each question word, with its aliases, is looked for in an object's name (whole or split: 3 for the
word itself, 2 for an alias) and in its comment (1). A question of several words sums them."""

from __future__ import annotations

from dataclasses import dataclass

from drsg.pipeline.catalog.model import Catalog, Column, Table
from drsg.pipeline.catalog.naming import expand, name_terms, query_words, words_of


@dataclass
class Match:
    table: str
    column: str | None
    score: float
    why: str

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {"table": self.table, "score": round(self.score, 3), "matched": self.why}
        if self.column is not None:
            out["column"] = self.column
        return out


def score(query: str, name: str, comment: str | None) -> tuple[float, str]:
    """How well ``query`` names an object called ``name`` with ``comment``; (0, "") when not at all."""
    words = query_words(query) or [query.lower()]
    own = set(words_of(name)) | {name.lower(), "".join(words_of(name))}
    aliased = name_terms(name)
    commented = expand(words_of(comment or ""))
    total, why = 0.0, []
    for word in words:
        if word in own:
            total += 3
            why.append(f"name:{word}")
        elif expand([word]) & aliased:
            total += 2
            why.append(f"alias:{word}")
        elif expand([word]) & commented:
            total += 1
            why.append(f"comment:{word}")
    if name.lower() == query.lower():
        total += 1  # the exact name beats a name that merely contains the words
    return total / len(words), ",".join(why)


def search(catalog: Catalog, query: str, limit: int = 10) -> list[Match]:
    """Tables, views and columns ranked for ``query``, best first."""
    found: list[Match] = []
    for t in catalog.tables:
        s, why = score(query, t.name, t.comment)
        if s > 0:
            found.append(Match(t.name, None, s, why))
        for c in t.columns:
            s, why = score(query, c.name, c.comment)
            if s > 0:
                found.append(Match(t.name, c.name, s * 0.9, why))  # a table outranks its column on a tie
    found.sort(key=lambda m: (-m.score, m.table, m.column or ""))
    return found[:limit]


def best_column(table: Table, word: str) -> tuple[Column | None, float]:
    """The column of ``table`` that ``word`` names best (exact name first)."""
    exact = next((c for c in table.columns if c.name.lower() == word.lower()), None)
    if exact is not None:
        return exact, 4.0
    ranked = sorted(
        ((score(word, c.name, c.comment)[0], -c.ordinal, c) for c in table.columns), key=lambda r: (r[0], r[1])
    )
    if not ranked or ranked[-1][0] == 0:
        return None, 0.0
    return ranked[-1][2], ranked[-1][0]


def rank_tables(catalog: Catalog, entity: str, words: list[str]) -> list[tuple[float, Table, str]]:
    """Tables for ``entity``, each also scored by how many of ``words`` (fields, filters) it has."""
    ranked = []
    for t in catalog.tables:
        s, why = score(entity, t.name, t.comment)
        if s == 0:
            continue
        fit = sum(1 for w in words if best_column(t, w)[0] is not None)
        ranked.append((s * 2 + fit, t, why))
    ranked.sort(key=lambda r: (-r[0], r[1].kind != "table", r[1].name))
    return ranked
