"""Fixtures the server and MCP test modules share: the scripted model on loopback, and a `drsg
serve` of the sample graph whose chat model it is. A module that needs another kind defines its own
fixture of the same name, which takes precedence in that module."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.fake_openai import FakeOpenAI
from tests.support.pioneers import WORLD
from tests.support.sample import SAMPLE
from tests.support.scripted_model import ScriptedModel
from tests.support.server import RunningServer, cli, start_server


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeOpenAI]:
    """The OpenAI-compatible model on loopback, one per module: a request nothing answers (no
    script, no handler) gets a 400, so a test that forgot to script a reply fails."""
    with FakeOpenAI() as server:
        yield server


@pytest.fixture(scope="module")
def pioneers_model(fake: FakeOpenAI) -> ScriptedModel:
    """``fake``'s chat answers, when a test scripts none, from the scripted model of the pioneers'
    world (a module asks for it with ``pytestmark = pytest.mark.usefixtures("pioneers_model")``)."""
    return ScriptedModel(WORLD).install(fake)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory, fake: FakeOpenAI) -> Iterator[RunningServer]:
    """`drsg serve` on the sample graph in plane `pioneers`, with ``fake`` as its chat model."""
    workdir = tmp_path_factory.mktemp("served")
    db = workdir / "graph.drsg"
    made = cli(db, "import", str(SAMPLE), "--plane", "pioneers", "--create-plane")
    assert made.returncode == 0, made.stderr
    running = start_server(db, workdir, env={"DRSG_DIGEST_CHAT": fake.base_url, "DRSG_DIGEST_MODEL": "fake-chat"})
    yield running
    assert running.stop() == 0
