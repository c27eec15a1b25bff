"""The server's state is the public API's database: one searcher and one embedder rule for both.

The searcher the server opens (with its own max_queries) is the one ``db.plane(…)``'s calls search
through, and the operator's embedder (``serve --embed``) is the rule's configured step for them.
``plane.hybrid`` runs the API's hybrid with ``strict=False``: a channel with no index is empty, as
upstream answers, where the library's default refuses it. A text query is never embedded empty.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import drsg
from drsg.api.database import Database
from drsg.kernel.errors import NotFound, UsageError
from drsg.kernel.settings import load
from drsg.models.providers import EmbedderChoice
from drsg.surfaces.server.config import server_config
from drsg.surfaces.server.hybrid_method import plane_hybrid
from drsg.surfaces.server.queries import plane_query, plane_search
from drsg.surfaces.server.state import ServerState


@pytest.fixture
def db(tmp_path: Path) -> Iterator[Database]:
    opened = drsg.open(tmp_path / "g.drsg")
    people = opened.create_plane("people")
    people.put("ada", ["Person"], {"bio": "wrote the first program"})
    yield opened
    opened.close()


@pytest.fixture
def state(db: Database) -> Iterator[ServerState]:
    config = server_config(load(environ={"DRSG_SERVER_MAX_QUERIES": "3"}), embed=EmbedderChoice("openai", "m-1"))
    made = ServerState(db, config)
    yield made
    made.reads.shutdown()


def test_the_api_searches_through_the_servers_searcher_and_embeds_by_its_rule(db: Database, state: ServerState) -> None:
    assert db.searcher is state.searcher  # not a second set of indexes
    assert state.searcher._running._limit == 3  # with the server's options
    assert state.indexes is db.searcher.indexes
    assert db.configured_embedder == EmbedderChoice("openai", "m-1")  # serve --embed: the rule's third step
    plane = state.plane("people")
    assert plane.db is db and plane.name == "people"


def test_hybrid_without_an_index_is_empty_on_the_server_and_refused_by_the_library(
    db: Database, state: ServerState
) -> None:
    params = {"plane": "people", "q": "program", "label": "Person", "keyword_prop": "bio"}
    assert asyncio.run(plane_hybrid(state, params)) == {"results": [], "count": 0}
    people = db.plane("people")
    assert people.hybrid("program", label="Person", keyword="bio", strict=False) == []
    with pytest.raises(NotFound):
        people.hybrid("program", label="Person", keyword="bio")


@pytest.mark.parametrize(
    ("method", "params"),
    [
        (plane_search, {"plane": "people", "property": "embedding", "query": "  "}),
        (plane_hybrid, {"plane": "people", "q": "", "vector_prop": "embedding"}),
        (plane_query, {"plane": "people", "plan": {"source": {"VectorTopK": {"query_text": " ", "k": 3}}}}),
    ],
)
def test_an_empty_text_query_is_refused_before_anything_is_embedded(
    state: ServerState, method: Any, params: dict[str, Any]
) -> None:
    with pytest.raises(UsageError, match=r"^the query text is empty$"):
        asyncio.run(method(state, params))
    assert len(state.api.embedders) == 0  # no embedder was even built
