"""What the store decides, seen through the surfaces: `drsg stats`, `node put`, `node history`, import."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def test_stats_json_counts_the_declared_indexes(drsg: Callable[..., Any]) -> None:
    assert drsg("plane", "create", "docs").code == 0
    assert drsg("stats", "--json").json_lines()[0]["indexes"] == 0
    assert drsg("index", "keyword", "Doc", "body", "-p", "docs").code == 0
    assert drsg("index", "ensure", "Doc", "embedding", "-p", "docs").code == 0
    assert drsg("stats", "--json").json_lines()[0]["indexes"] == 2
