"""The docs hold to what they promise: the generated reference pages are current."""

from __future__ import annotations

from pathlib import Path

import pytest

from drsg.surfaces.cli import reference

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"


@pytest.mark.parametrize("name", sorted(reference.PAGES))
def test_the_reference_pages_are_generated_from_the_code(name: str) -> None:
    committed = DOCS / "reference" / name
    assert committed.is_file(), f"docs/reference/{name} is missing; run `make docs`"
    assert committed.read_text(encoding="utf-8") == reference.PAGES[name](), (
        f"docs/reference/{name} is stale (the code changed); run `make docs` and commit the result"
    )


def test_the_settings_reference_states_every_default_as_drsg_toml_takes_it() -> None:
    page = reference.settings_page()
    assert '| `store.map_size` | `DRSG_STORE_MAP_SIZE` | `"64MiB"` |' in page
    assert '| `digest.ignore_files` | `DRSG_DIGEST_IGNORE_FILES` | `["gitignore"]` |' in page
    assert "| `server.tls` | — | (empty) |" in page  # a file-only setting has no variable
