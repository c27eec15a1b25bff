"""`[server]` settings: max_queries (how many searches `drsg serve` runs at once)."""

from __future__ import annotations

from pathlib import Path

import pytest

import drsg
from drsg.kernel.errors import ConfigError
from drsg.kernel.settings import load
from drsg.surfaces.server.config import ServerConfig, server_config
from drsg.surfaces.server.state import ServerState
from drsg.workers.search import cores


def served(environ: dict[str, str]) -> ServerConfig:
    return server_config(load(environ=environ))


def test_max_queries_from_the_environment_with_zero_meaning_one_per_core() -> None:
    assert served({}).max_queries is None
    assert served({"DRSG_SERVER_MAX_QUERIES": "0"}).max_queries is None
    assert served({"DRSG_SERVER_MAX_QUERIES": "3"}).max_queries == 3
    with pytest.raises(ConfigError, match=r"server.max_queries \(env DRSG_SERVER_MAX_QUERIES\) is invalid: must be 0"):
        served({"DRSG_SERVER_MAX_QUERIES": "-1"})


def test_the_server_searcher_runs_that_many(tmp_path: Path) -> None:
    db = drsg.open(tmp_path / "g.drsg")
    try:
        for setting, limit in (("2", 2), ("0", cores())):
            state = ServerState(db, served({"DRSG_SERVER_MAX_QUERIES": setting}))
            assert state.searcher._running._limit == limit
            state.reads.shutdown()
    finally:
        db.close()


def test_code_roots_from_the_environment_default_none(tmp_path: Path) -> None:
    """Where a served plane's tree may be read (tests/integration/test_code_roots.py): nothing unless named."""
    assert served({}).code_roots == ()
    both = served({"DRSG_SERVER_CODE_ROOTS": f"{tmp_path / 'a'}, {tmp_path / 'b'}"}).code_roots
    assert both == (tmp_path / "a", tmp_path / "b")
    (tmp_path / "drsg.toml").write_text(f'[server]\ncode_roots = ["{tmp_path / "c"}"]\n')
    assert server_config(load(str(tmp_path / "drsg.toml"), environ={})).code_roots == (tmp_path / "c",)
