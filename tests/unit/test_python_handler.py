"""The built-in Python handler's resolution rules, each on a small package written for it."""

from __future__ import annotations

import textwrap
from pathlib import Path

from drsg.pipeline.code.handler import Output, SourceTree
from drsg.pipeline.code.python_handler import PythonHandler
from drsg.pipeline.code.python_reading import module_key

FILES = {
    "app/__init__.py": "from .core import Engine\n__all__ = ['Engine']\n",
    "app/core.py": """
        import os
        from app import util
        from app.util import helper as aid
        from collections.abc import Mapping

        LIMIT = 3
        name: str = "x"

        class Base:
            def start(self):
                return self.stop()

            def stop(self):
                pass

        class Engine(Base, Mapping):
            def __init__(self):
                self.parts = Part()

            def start(self):
                super().start()
                self.parts.spin()
                aid()
                util.helper()
                os.getcwd()
                return sorted([], key=util.helper)

        class Part:
            def spin(self):
                local = Engine()
                local.stop()
                unknown.thing()

            def feed(self, other):
                other.spin()

        def build():
            return Engine()
        """,
    "app/util.py": """
        def helper():
            return 1

        @helper
        def decorated():
            pass
        """,
    "app/stars.py": """
        from app.one import *
        from app.two import *

        def both():
            shared()
            only_one()
        """,
    "app/one.py": "def shared():\n    pass\n\ndef only_one():\n    pass\n",
    "app/two.py": "def shared():\n    pass\n",
    "app/broken.py": "def oops(:\n",
}


def read(tmp_path: Path, files: dict[str, str], chunks: int = 1, options: tuple[tuple[str, str], ...] = ()) -> Output:
    root = tmp_path / "proj"
    for path, text in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(textwrap.dedent(text).lstrip())
    paths = sorted(files)
    tree = SourceTree(root, paths)
    handler = PythonHandler()
    groups = [tuple(paths[i : i + chunks]) for i in range(0, len(paths), chunks)]
    return handler.assemble(tree, [handler.parse(tree, group, options) for group in groups], options)


def calls(out: Output) -> dict[tuple[str, str], str]:
    return {(e.src, e.dst): e.properties["_resolved_by"] for e in out.edges if e.type == "CALLS"}


def test_every_resolution_rule_names_what_it_proves(tmp_path: Path) -> None:
    out = read(tmp_path, FILES)
    found = calls(out)
    assert found[("app.core.Base.start", "app.core.Base.stop")] == "self-class"
    assert found[("app.core.Engine.start", "app.core.Base.start")] == "super"
    assert found[("app.core.Engine.start", "app.core.Part.spin")] == "self-attr"
    assert found[("app.core.Engine.start", "app.util.helper")] in ("name", "chain")
    assert found[("app.core.Part.spin", "app.core.Base.stop")] == "receiver"  # local = Engine(); inherited stop
    assert found[("app.core.build", "app.core.Engine")] == "class"
    assert found[("app.util.decorated", "app.util.helper")] == "name"  # a decorator is a call
    assert found[("app.stars.both", "app.one.only_one")] == "star"
    assert ("app.stars.both", "app.one.shared") not in found and ("app.stars.both", "app.two.shared") not in found
    refs = {(e.src, e.dst) for e in out.edges if e.type == "REFERENCES"}
    assert ("app.core.Engine.start", "app.util.helper") in refs  # key=util.helper: a function as a value
    notes = " | ".join(out.report.notes)
    assert "call(s) named nothing defined here — calls into other packages and the standard library" in notes
    assert "1 call(s) matched definitions in two star imports equally — left alone" in notes
    assert "on a receiver whose class is not known here" in notes
    assert out.report.skipped == 1 and any("app/broken.py" in n for n in out.report.notes)


def test_nodes_carry_the_vocabulary(tmp_path: Path) -> None:
    out = read(tmp_path, FILES)
    nodes = {n.key: n for n in out.nodes}
    assert nodes["app"].label == "Module" and nodes["app.core"].properties["path"] == "app/core.py"
    assert nodes["app.core.LIMIT"].label == "Const" and nodes["app.core.name"].properties["signature"] == "str"
    assert nodes["app.core.Engine"].label == "Class" and nodes["app.core.Engine.start"].label == "Method"
    assert nodes["app.core.build"].properties["signature"] == "def build()"
    assert nodes["collections.abc.Mapping"].extra_labels == ("External",)
    assert nodes["os"].label == "Package" and nodes["os"].extra_labels == ("External",)
    extends = {(e.src, e.dst) for e in out.edges if e.type == "EXTENDS"}
    assert {("app.core.Engine", "app.core.Base"), ("app.core.Engine", "collections.abc.Mapping")} <= extends
    keys = set(nodes)
    assert all(e.src in keys and e.dst in keys and isinstance(e.properties["line"], int) for e in out.edges)
    assert "_code" not in nodes["app.core.build"].properties


def test_chunk_boundaries_do_not_change_the_answer(tmp_path: Path) -> None:
    one = read(tmp_path / "one", FILES, chunks=1)
    all_at_once = read(tmp_path / "all", FILES, chunks=len(FILES))
    three = read(tmp_path / "three", FILES, chunks=3)
    assert one == all_at_once == three


def test_include_source_stores_each_definitions_code(tmp_path: Path) -> None:
    out = read(tmp_path, FILES, options=(("include_source", "true"),))
    nodes = {n.key: n for n in out.nodes}
    assert nodes["app.util.decorated"].properties["_code"] == "@helper\ndef decorated():\n    pass\n"


def test_module_keys_follow_the_import_system() -> None:
    packages = frozenset({"", "pkg", "pkg/sub"})
    assert module_key("pkg/sub/mod.py", packages, "root") == ("root.pkg.sub.mod", False)
    assert module_key("pkg/__init__.py", packages, "root") == ("root.pkg", True)
    assert module_key("script.py", frozenset({"lib"}), "root") == ("script", False)
    assert module_key("lib/x.py", frozenset({"lib"}), "root") == ("lib.x", False)
