"""An import's chunks made ahead of their transactions (store/importahead.py), counted as the
writer thread writes them."""

from __future__ import annotations

import pytest

from drsg.store import importahead
from drsg.store.transaction import WriteTx


def chunks_written(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """A list that gets how many commits each chunk the writer writes holds, in order."""
    made: list[int] = []
    write = importahead.Chunk.write

    def counted(chunk: importahead.Chunk, tx: WriteTx, held: tuple[str, ...] = ()) -> None:
        made.append(len(chunk.commits))
        write(chunk, tx, held)

    monkeypatch.setattr(importahead.Chunk, "write", counted)
    return made
