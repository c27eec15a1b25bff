"""The walk's floor, the ignore-file choices and the account it gives (git's own matching is
checked against git in tests/property/test_walk_gitignore.py)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from drsg.kernel.errors import UsageError
from drsg.pipeline.code.walk import TRACKED_ONLY, walk


def tree(root: Path, *paths: str) -> Path:
    for path in paths:
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(path)
    return root


def test_the_floor_skips_dotfiles_build_folders_virtualenvs_and_drsgs_own_files(tmp_path: Path) -> None:
    root = tree(
        tmp_path,
        "src/a.py",
        ".env",
        ".git/config",
        "src/.hidden/x.py",
        "node_modules/m/index.js",
        "target/debug/x",
        "pkg/build/lib.py",
        "pkg/__pycache__/a.pyc",
        "myenv/pyvenv.cfg",
        "myenv/lib/x.py",
        "graph.drsg",
        "graph.drsg-lock",
        "graph.drsg.hnsw/1/x",
        "logs/serve.log",
        "docs/logs/kept.md",
        "demo.egg-info/PKG-INFO",
        "drsg.toml",  # drsg's settings (they may hold API keys), never the project's prose
        "sub/drsg.toml",
    )
    found = walk(root)
    assert found.files == ["docs/logs/kept.md", "src/a.py"]
    assert found.withheld == [] and found.seen == 2


def test_ignore_files_choose_gitignore_dockerignore_both_or_none(tmp_path: Path) -> None:
    root = tree(tmp_path, "src/a.py", "src/b.py", "dist.txt", "notes/n.md", "notes/deep/x.md")
    (root / ".gitignore").write_text("dist.txt\n")
    (root / ".dockerignore").write_text("src\nnotes\n!notes/deep\n")  # Docker: anchored at the root
    assert walk(root).files == ["notes/deep/x.md", "notes/n.md", "src/a.py", "src/b.py"]
    docker = walk(root, ["dockerignore"])
    assert docker.files == ["dist.txt", "notes/deep/x.md"]
    assert {w.path: w.source for w in docker.withheld} == {
        "notes/n.md": ".dockerignore",
        "src/a.py": ".dockerignore",
        "src/b.py": ".dockerignore",
    }
    assert walk(root, ["gitignore", "dockerignore"]).files == ["notes/deep/x.md"]
    assert walk(root, []).seen == 5 and len(walk(root, []).files) == 5
    with pytest.raises(UsageError, match="unknown ignore file 'npmignore'"):
        walk(root, ["npmignore"])


def test_a_docker_pattern_is_anchored_where_a_git_one_is_not(tmp_path: Path) -> None:
    root = tree(tmp_path, "x.log", "sub/x.log")
    (root / ".gitignore").write_text("x.log\n")
    (root / ".dockerignore").write_text("x.log\n")
    assert walk(root, ["gitignore"]).files == []
    assert walk(root, ["dockerignore"]).files == ["sub/x.log"]


def test_more_than_half_withheld_warns_naming_the_file_responsible(tmp_path: Path) -> None:
    root = tree(tmp_path, *(f"src/f{i}.py" for i in range(5)), "main.py", "README.md")
    (root / ".dockerignore").write_text("src\n")
    found = walk(root, ["dockerignore"])
    assert found.warning() == (
        "5 of 7 files were withheld by ignore rules — .dockerignore (5). If that is not what you meant, "
        "`--ignore-files` chooses which of them apply."
    )
    assert walk(root).warning() is None  # .gitignore alone (the default) withholds nothing here


def test_tracked_only_keeps_what_git_tracks_and_refuses_outside_git(tmp_path: Path) -> None:
    root = tree(tmp_path / "repo", "a.py", "b.py", "report.txt")
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    subprocess.run(["git", "-C", str(root), "add", "a.py", "b.py"], check=True)
    (root / "a.py").write_text("edited, not committed: still read as it stands")
    found = walk(root, tracked_only=True)
    assert found.files == ["a.py", "b.py"]
    assert [(w.path, w.source) for w in found.withheld] == [("report.txt", TRACKED_ONLY)]
    assert found.warning() is None  # --tracked-only is a choice, not an ignore rule
    loose = tree(tmp_path / "loose", "a.py")
    with pytest.raises(UsageError, match="is not inside a git repository"):
        walk(loose, tracked_only=True)


def test_rules_above_the_root_apply_inside_a_repository(tmp_path: Path) -> None:
    repo = tree(tmp_path / "repo", "pkg/src/a.py", "pkg/src/gen/b.py", "pkg/src/c.tmp")
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / ".gitignore").write_text("*.tmp\n")
    (repo / "pkg" / ".gitignore").write_text("src/gen/\n")
    (repo / ".git" / "info" / "exclude").write_text("pkg/src/a.py\n")
    found = walk(repo / "pkg" / "src")
    assert found.files == []
    assert {w.path: w.rule for w in found.withheld} == {
        "a.py": "pkg/src/a.py",
        "c.tmp": "*.tmp",
        "gen/b.py": "src/gen/",
    }


def test_the_store_inside_the_tree_is_skipped(tmp_path: Path) -> None:
    root = tree(tmp_path, "a.py", "data/store.lmdb")
    assert walk(root, skip=[root / "data" / "store.lmdb"]).files == ["a.py"]
