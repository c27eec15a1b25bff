"""The Handler port's contract (pipeline/code/handler.py), held by every handler.

``HandlerContract`` is the abstract suite: a subclass provides ``handler`` (a fresh handler) and
``sample`` (a small tree of files in its language, one of them not valid source). What it holds:
a manifest upstream's host accepts, facts whose edges end at nodes, ``line`` on every edge,
answers that do not depend on chunk boundaries or on the run, and a broken file that is skipped
and reported rather than failing the tree.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from drsg.pipeline.code.handler import Handler, Output, SourceTree
from drsg.pipeline.code.python_handler import PythonHandler


def read(handler: Handler, root: Path, files: list[str], per_chunk: int = 1) -> Output:
    tree = SourceTree(root, files)
    chunks = [tuple(files[i : i + per_chunk]) for i in range(0, len(files), per_chunk)]
    return handler.assemble(tree, [handler.parse(tree, chunk, ()) for chunk in chunks], ())


def write_tree(root: Path, files: dict[str, str]) -> list[str]:
    for path, text in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    return sorted(files)


class HandlerContract:
    broken: str  # the sample's file that is not valid source
    broken_note: str  # what the report says of it: its name (skipped) or the syntax error recovered from
    kept: str  # a key of the sample's valid files, which the broken one must not take down

    @pytest.fixture
    def handler(self) -> Handler:
        raise NotImplementedError

    @pytest.fixture
    def sample(self) -> dict[str, str]:
        raise NotImplementedError

    def test_the_manifest_is_one_the_host_accepts(self, handler: Handler) -> None:
        manifest = handler.manifest
        assert re.fullmatch(r"[a-z0-9_-]+", manifest.name) and manifest.version
        assert manifest.extensions and all(re.fullmatch(r"\.[a-z0-9_+-]+", e) for e in manifest.extensions)
        assert manifest.ident == f"{manifest.name}@{manifest.version}"

    def test_facts_are_well_formed(self, handler: Handler, sample: dict[str, str], tmp_path: Path) -> None:
        out = read(handler, tmp_path, write_tree(tmp_path, sample))
        keys = [n.key for n in out.nodes]
        assert keys and len(keys) == len(set(keys)) and all(keys)
        assert all(n.label for n in out.nodes)
        assert out.edges
        for edge in out.edges:
            assert edge.src in keys and edge.dst in keys, edge
            assert edge.type and isinstance(edge.properties.get("line"), int), edge
        for fact in [*(n.properties for n in out.nodes), *(e.properties for e in out.edges)]:
            json.dumps(fact, allow_nan=False)  # JSON objects of finite values, as the WIT says
        assert out.report.facts == len(out.nodes) + len(out.edges)
        assert out.prose == ""  # a parser is sure of what it read: nothing for the model

    def test_chunk_boundaries_and_reruns_change_nothing(
        self, handler: Handler, sample: dict[str, str], tmp_path: Path
    ) -> None:
        files = write_tree(tmp_path, sample)
        one = read(handler, tmp_path, files, 1)
        assert read(handler, tmp_path, files, len(files)) == one
        assert read(handler, tmp_path, files, 2) == one
        assert read(handler, tmp_path, files, 1) == one

    def test_a_broken_file_is_reported_and_the_rest_still_read(
        self, handler: Handler, sample: dict[str, str], tmp_path: Path
    ) -> None:
        out = read(handler, tmp_path, write_tree(tmp_path, sample))
        assert any(self.broken_note in note for note in out.report.notes), out.report.notes
        assert self.kept in {n.key for n in out.nodes}
        without = read(
            handler,
            tmp_path / "clean",
            write_tree(tmp_path / "clean", {k: v for k, v in sample.items() if k != self.broken}),
        )
        assert not any(self.broken_note in note for note in without.report.notes)


class TestPythonHandler(HandlerContract):
    broken = "pkg/broken.py"
    broken_note = "skipped pkg/broken.py"
    kept = "pkg.a.f"

    @pytest.fixture
    def handler(self) -> Handler:
        return PythonHandler()

    @pytest.fixture
    def sample(self) -> dict[str, str]:
        return {
            "pkg/__init__.py": "from .a import f\n",
            "pkg/a.py": "def f():\n    return g()\n\ndef g():\n    return 1\n",
            "pkg/b.py": "from pkg.a import f\n\nclass K:\n    def m(self):\n        return f()\n",
            "pkg/broken.py": "def (:\n",
        }


class TestCPlugin(HandlerContract):
    """The C plugin built from source (``make plugins``), through drsg's plugin host."""

    broken = "src/broken.c"
    broken_note = "syntax error region(s) in 1 file(s)"  # tree-sitter recovers: a parser of C never refuses
    kept = "twice"

    @pytest.fixture
    def handler(self) -> Handler:
        from tests.support.wasm_plugin import ComponentPlugin, built_plugin

        return ComponentPlugin(built_plugin("c")).handler

    @pytest.fixture
    def sample(self) -> dict[str, str]:
        return {
            "include/util.h": "int twice(int n);\n",
            "src/util.c": (
                '#include "util.h"\n'
                "int twice(int n) { return helper(n) * 2; }\n"
                "static int helper(int n) { return n; }\n"
            ),
            "src/main.c": '#include "util.h"\nint main(void) { return twice(21); }\n',
            "src/broken.c": "int (((( {{{ oops\n",
        }
