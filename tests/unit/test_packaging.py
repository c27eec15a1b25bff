"""What a wheel of drsg holds is what the tree holds (pyproject.toml's ``[tool.setuptools]``).

setuptools maps each package to a folder (``package-dir``, the longest prefix wins) and copies only
the packages it is told of. Every folder Python can import under a listed package — a code folder,
and a data folder too, which Python 3 imports as a namespace package — must itself be listed: a
code folder left out is missing from the wheel (an editable install still finds it through its
parent's path, so nothing else notices), and a data folder left out makes every install print a
"Package would be ignored" warning box (``make demo`` printed three). Every data file must match a
``package-data`` pattern of the package whose folder holds it, or the wheel leaves it behind.
"""

from __future__ import annotations

import fnmatch
import tomllib
from pathlib import Path

from tests.support.imports import ROOT

SETUPTOOLS = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
PACKAGES: list[str] = SETUPTOOLS["packages"]
PACKAGE_DIR: dict[str, str] = SETUPTOOLS["package-dir"]
PACKAGE_DATA: dict[str, list[str]] = SETUPTOOLS["package-data"]
#: what a build leaves beside the sources, never shipped as data
NOT_DATA = {".py", ".pyc", ".so", ".c"}


def folder_of(package: str) -> Path:
    """The folder setuptools reads a package from: its longest mapped prefix, then the rest as folders."""
    parts = package.split(".")
    for n in range(len(parts), 0, -1):
        prefix = ".".join(parts[:n])
        if prefix in PACKAGE_DIR:
            return ROOT.joinpath(PACKAGE_DIR[prefix], *parts[n:])
    return ROOT.joinpath(*parts)


def tracked(folder: Path) -> list[Path]:
    return [p for p in folder.iterdir() if p.name != "__pycache__" and not p.name.endswith(".egg-info")]


def test_every_importable_folder_is_a_listed_package() -> None:
    missing = []
    for package in PACKAGES:
        folder = folder_of(package)
        assert folder.is_dir(), f"{package} maps to {folder}, which is not a folder"
        for child in tracked(folder):
            name = f"{package}.{child.name}"
            if child.is_dir() and child.name.isidentifier() and name not in PACKAGES:
                missing.append(f"{name} ({child.relative_to(ROOT)})")
    assert missing == [], f"folders Python imports that pyproject's packages leave out: {missing}"


def test_every_data_file_is_shipped_by_a_pattern() -> None:
    unshipped = []
    for package in PACKAGES:
        folder = folder_of(package)
        for path in folder.rglob("*"):
            if not path.is_file() or path.suffix in NOT_DATA or "__pycache__" in path.parts:
                continue
            # the package that owns the file: the deepest listed package whose folder holds it
            owner = max((p for p in PACKAGES if path.is_relative_to(folder_of(p))), key=lambda p: p.count("."))
            if owner != package:
                continue
            relative = path.relative_to(folder_of(owner)).as_posix()
            if not any(fnmatch.fnmatchcase(relative, pattern) for pattern in PACKAGE_DATA.get(owner, [])):
                unshipped.append(f"{path.relative_to(ROOT)} (package {owner})")
    assert unshipped == [], f"data files no package-data pattern ships: {unshipped}"
