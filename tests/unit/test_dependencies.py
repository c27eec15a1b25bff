"""What drsg imports is what drsg declares (pyproject.toml), checked as a fresh install would see it.

A fresh install holds exactly the declared distributions and what they require in turn — but only
their plain requirements: an extra another package asks for (jusText's ``lxml[html_clean]``) is
that package's choice, which a new release or another resolution can drop, so what drsg needs it
declares itself. A subprocess stands in for that fresh environment: an import finder placed first
refuses every top-level module no such distribution provides, with the error a missing package
gives. In it, every drsg module is imported, every third-party module any drsg code names (imports
inside functions too) is imported, and the crawler's extraction runs once — trafilatura reaches
``lxml.html.clean`` (since lxml 5.2 the separate ``lxml_html_clean``) through jusText only when
imported, which drsg does inside a function.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import json
import pkgutil
import subprocess
import sys
import tomllib

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

import drsg
from tests.support.imports import FOLDERS, ROOT, SOURCES, imported_modules

PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
#: the extras a user may install drsg with (``test`` is the developers', never imported by drsg)
PRODUCT_EXTRAS = sorted(set(PYPROJECT["project"].get("optional-dependencies", {})) - {"test"})


def declared() -> list[Requirement]:
    """drsg's own requirements: its dependencies and its product extras."""
    extras = PYPROJECT["project"].get("optional-dependencies", {})
    texts = [*PYPROJECT["project"]["dependencies"], *(r for name in PRODUCT_EXTRAS for r in extras[name])]
    return [Requirement(text) for text in texts]


def fresh_closure() -> set[str]:
    """The distributions a fresh install of drsg is sure to hold: the declared ones (with the extras
    drsg names) and, from there on, each one's plain requirements — never an extra a third party asks for."""
    todo = [(req, set(req.extras)) for req in declared()]
    held: set[str] = set()
    while todo:
        req, extras = todo.pop()
        name = canonicalize_name(req.name)
        if name in held:
            continue
        held.add(name)
        try:
            requires = importlib.metadata.requires(req.name) or []
        except importlib.metadata.PackageNotFoundError:
            continue  # not installed here: the subprocess's imports will say so
        for text in requires:
            sub = Requirement(text)
            wanted = {""} | extras
            if sub.marker is None or any(sub.marker.evaluate({"extra": extra}) for extra in wanted):
                todo.append((sub, set()))  # a third party's extras are not followed
    return held


def provided_modules(distributions: set[str]) -> set[str]:
    """The top-level modules those distributions install."""
    return {
        top
        for top, dists in importlib.metadata.packages_distributions().items()
        if any(canonicalize_name(d) in distributions for d in dists)
    }


def drsg_modules() -> list[str]:
    """Every module of drsg: each layer is a folder of its own mapped to ``drsg.<folder>``, walked."""
    names = ["drsg"]
    for package in [drsg, *(importlib.import_module(f"drsg.{folder}") for folder in FOLDERS)]:
        names += [package.__name__] if package is not drsg else []
        names += [m.name for m in pkgutil.walk_packages(package.__path__, f"{package.__name__}.")]
    return [name for name in names if not name.endswith(".__main__")]  # `python -m` entry points run the CLI


def third_party_imports() -> dict[str, list[str]]:
    """Top-level third-party module -> where drsg code imports it (every form, inside functions too)."""
    found: dict[str, list[str]] = {}
    for path in SOURCES:
        for line, name in imported_modules(path):
            top = name.split(".")[0]
            if top and top not in sys.stdlib_module_names and top not in ("drsg", "__future__", *FOLDERS):
                found.setdefault(top, []).append(f"{path.relative_to(ROOT)}:{line}")
    return found


#: run in a subprocess: argv[1] is {"allowed": [...], "modules": [...], "third": [...], "extract": bool}
FRESH = r"""
import importlib, importlib.abc, json, sys
plan = json.loads(sys.argv[1])
allowed = set(plan["allowed"])
installed = set(plan["installed"])  # modules some distribution provides: the rest are the interpreter's

class Fresh(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        top = name.partition(".")[0]
        if top in allowed or top not in installed or top == "drsg":
            return None
        raise ModuleNotFoundError(f"No module named {top!r}", name=top)

sys.meta_path.insert(0, Fresh())
failed = {}
for name in plan["modules"] + plan["third"]:
    try:
        importlib.import_module(name)
    except Exception as exc:
        failed[name] = f"{type(exc).__name__}: {exc}"
if plan["extract"]:
    try:
        from drsg.pipeline.fetch.page import read_html
        text = "Self-attention lets every token attend to every other token in the Transformer. " * 8
        html = f"<html><body><main><article><h1>Attention</h1><p>{text}</p><p>{text}</p></article></main></body></html>"
        reading = read_html(html, "http://example.org/")
        assert "Self-attention" in reading.markdown, reading.markdown
        import trafilatura
        assert "Self-attention" in (trafilatura.extract(html, output_format="markdown") or "")
    except Exception as exc:
        failed["extraction"] = f"{type(exc).__name__}: {exc}"
print(json.dumps(failed))
"""


def run_fresh(allowed: set[str], modules: list[str], third: list[str], extract: bool) -> dict[str, str]:
    installed = sorted(importlib.metadata.packages_distributions())
    plan = {"allowed": sorted(allowed), "installed": installed, "modules": modules, "third": third, "extract": extract}
    ran = subprocess.run(
        [sys.executable, "-c", FRESH, json.dumps(plan)], capture_output=True, text=True, timeout=120, cwd=ROOT
    )
    assert ran.returncode == 0, ran.stderr[-3000:]
    result: dict[str, str] = json.loads(ran.stdout.strip().splitlines()[-1])
    return result


def test_every_module_imports_and_extraction_runs_with_only_what_is_declared() -> None:
    allowed = provided_modules(fresh_closure())
    failed = run_fresh(allowed, drsg_modules(), sorted(third_party_imports()), extract=True)
    assert failed == {}, "a fresh install of drsg lacks what these need; declare it in pyproject.toml"


def test_every_third_party_import_is_a_declared_distribution() -> None:
    """Not only reachable: declared by drsg itself, directly, so no other package's choices can drop it."""
    direct = provided_modules({canonicalize_name(req.name) for req in declared()})
    undeclared = {top: where for top, where in third_party_imports().items() if top not in direct}
    assert undeclared == {}


def test_the_check_sees_what_trafilatura_loads_only_when_imported() -> None:
    """Without lxml_html_clean the extraction fails as on the fresh install that reported it."""
    allowed = provided_modules(fresh_closure() - {"lxml-html-clean"})
    failed = run_fresh(allowed, [], [], extract=True)
    assert "lxml_html_clean" in failed["extraction"]
