"""The README and docs/ hold to what they promise: the generated reference pages are current, the
README stays short, and every relative link (and its #anchor) leads somewhere."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from drsg.surfaces.cli import reference

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
PAGES = [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]
_LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")
_FENCE = re.compile(r"^(```|~~~).*?^\1", re.S | re.M)


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


def test_the_readme_is_short_and_starts_with_its_two_commands() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    lines = text.splitlines()
    assert len(lines) <= 150, f"README.md has {len(lines)} lines; keep it to 150 and move detail into docs/"
    first_block = text.split("```sh\n", 1)[1].split("```", 1)[0].splitlines()
    assert first_block[0].startswith("make demo") and first_block[1].startswith("make test"), first_block


def _anchors(page: Path) -> set[str]:
    """GitHub's anchor for each heading: lower case, punctuation dropped, spaces as hyphens."""
    text = _FENCE.sub("", page.read_text(encoding="utf-8"))
    found = set()
    for heading in re.findall(r"^#{1,6} (.+)$", text, re.M):
        slug = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        found.add(slug)
    return found


def _links(page: Path) -> list[str]:
    return _LINK.findall(_FENCE.sub("", page.read_text(encoding="utf-8")))


def test_the_link_finder_finds_what_a_reader_clicks(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("# A (`b`) c\n[x](other.md#a-b-c) ![img](pic.png)\n```\n[no](inside.md)\n```\n")
    assert _links(page) == ["other.md#a-b-c"] and _anchors(page) == {"a-b-c"}


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(page: Path) -> None:
    broken = []
    for target in _links(page):
        if re.match(r"[a-z]+:", target):  # https:, mailto:: not ours to check offline
            continue
        path, _, anchor = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        if not file.exists():
            broken.append(f"{target} (no file {file.relative_to(ROOT) if file.is_relative_to(ROOT) else file})")
        elif anchor and file.suffix == ".md" and anchor not in _anchors(file):
            broken.append(f"{target} (no heading #{anchor} in {file.name})")
    assert not broken, f"{page.relative_to(ROOT)} links to what is not there: {broken}"
