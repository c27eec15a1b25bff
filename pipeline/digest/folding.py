"""Name folding shared by the clean-up passes (pure).

Two names are one when they are equal after keeping only letters and digits and lowercasing
(``Person``, ``person``, ``PERSON_`` → ``person``; ``WORKS_AT``, ``works-at`` → ``worksat``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable


def fold(name: str) -> str:
    return "".join(ch for ch in name.casefold() if ch.isalnum())


def fold_names(counts: Counter[str]) -> tuple[dict[str, str], int]:
    """Map every name to its fold group's survivor: the most frequent, ties lexicographically first.

    Returns ``(renames, folded)``: ``renames`` maps each non-survivor to its survivor; ``folded``
    is how many names were folded away. Names whose fold is empty stay as they are.
    """
    groups: dict[str, list[str]] = {}
    for name in counts:
        key = fold(name)
        if key:
            groups.setdefault(key, []).append(name)
    renames: dict[str, str] = {}
    for members in groups.values():
        if len(members) < 2:
            continue
        survivor = min(members, key=lambda n: (-counts[n], n))
        renames.update({m: survivor for m in members if m != survivor})
    return renames, len(renames)


def collapse(renames: dict[str, str]) -> dict[str, str]:
    """Follow rename chains to their end (a → b → c becomes a → c) and break cycles."""
    out: dict[str, str] = {}
    for start in renames:
        seen = [start]
        current = start
        while current in renames and renames[current] not in seen:
            current = renames[current]
            seen.append(current)
        if current in renames:  # stopped on a cycle: its smallest name is everyone's survivor
            current = min(seen[seen.index(renames[current]) :])
        if current != start:
            out[start] = current
    return out


def tally(names: Iterable[str]) -> Counter[str]:
    return Counter(n for n in names if n)
