"""``drsg``'s public names: ``__all__`` is exactly what docs/python-api.md lists, each resolves, and
``import drsg`` stays cheap (the names load on first use)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

import drsg

PAGE = Path(__file__).resolve().parents[2] / "docs" / "python-api.md"


def documented_names() -> set[str]:
    section = PAGE.read_text().split("## Public names", 1)[1].split("\n## ", 1)[0]
    return set(re.findall(r"`([A-Za-z_]+)`", section)) - {"__all__"}


def test_all_is_exactly_the_documented_names() -> None:
    assert sorted(drsg.__all__) == sorted(documented_names())
    assert len(drsg.__all__) == len(set(drsg.__all__))


def test_each_public_name_resolves_and_is_listed() -> None:
    for name in drsg.__all__:
        assert getattr(drsg, name) is not None, name
        assert name in dir(drsg)
    assert drsg.Plane.__module__ == "drsg.api.plane" and drsg.Hit.__module__ == "drsg.api.results"


def test_an_unknown_name_is_an_attribute_error() -> None:
    assert not hasattr(drsg, "Nothing")
    with pytest.raises(AttributeError, match="Nothing"):
        drsg.__getattr__("Nothing")


def _loaded(code: str, modules: tuple[str, ...]) -> list[str]:
    probe = f"import sys\n{code}\nprint(sorted(m for m in {modules!r} if m in sys.modules))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60)
    return eval(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]  # a list literal we print


HEAVY = ("numpy", "hnswlib", "tantivy", "onnxruntime", "openai", "kafka", "wasmtime")


def test_import_drsg_loads_no_layer_below_the_kernel() -> None:
    assert _loaded("import drsg", ("drsg.store", "drsg.api.database", "drsg.workers", "drsg.pipeline", *HEAVY)) == []


def test_opening_and_reading_loads_no_search_or_model_library(tmp_path: Path) -> None:
    code = f"import drsg\ndb = drsg.open({str(tmp_path / 'g.drsg')!r})\ndb.plane('startup').put('a')\ndb.close()"
    assert _loaded(code, HEAVY) == []
