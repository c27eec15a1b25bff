"""The walk withholds exactly what git ignores: git itself is the oracle.

Random trees with random .gitignore files (nested, negations, directory-only patterns, anchors,
``**``) and a random ``.git/info/exclude``; the walk's admitted set must equal what
``git ls-files --others --exclude-standard`` lists (everything is untracked here), minus drsg's
floor, which git knows nothing about.
"""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from drsg.pipeline.code.walk import walk

NAMES = ["a", "b", "src", "lib", "x.py", "y.log", "z.txt", "keep.log", "deep"]
PATTERNS = [
    "*.log",
    "!keep.log",
    "a/",
    "/b",
    "src/*.py",
    "**/deep",
    "lib/**",
    "!lib/x.py",
    "x.py",
    "*.txt",
    "/src/",
    "b/*",
    "!b/z.txt",
    "deep/",
    "a/**/x.py",
    "# a comment",
    "",
    "\\!y.log",
    "y.log ",
]

paths = st.lists(
    st.lists(st.sampled_from(NAMES), min_size=1, max_size=4).map(lambda parts: "/".join(parts)),
    min_size=1,
    max_size=14,
    unique=True,
)
ignores = st.dictionaries(
    st.sampled_from(["", "a", "src", "a/b", "lib"]),
    st.lists(st.sampled_from(PATTERNS), max_size=5),
    max_size=3,
)


def _materialise(root: Path, files: list[str]) -> list[str]:
    made = []
    for path in files:
        target = root / path
        if any(parent.is_file() for parent in target.parents if parent != root and root in parent.parents):
            continue  # a file where this path needs a folder
        if target.exists():
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(path)
        made.append(path)
    return made


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(files=paths, rules=ignores, exclude=st.lists(st.sampled_from(PATTERNS), max_size=3))
# cases found before: a `!` line matching a folder does not bring back a file another file's line
# ignores; `a/**` is what is inside a, not a; nothing under an ignored folder comes back
@example(files=["a/keep.log/x.py"], rules={"": ["!keep.log"]}, exclude=["a/**/x.py"])
@example(files=["lib/x.py", "lib/y.log"], rules={"": ["lib/**", "!lib/x.py"]}, exclude=[])
@example(files=["a/x.py", "a/z.txt"], rules={"": ["a/", "!a/x.py"]}, exclude=[])
@example(files=["a/b/x.py", "a/deep/z.txt"], rules={"a": ["deep/", "b/*"], "": ["!x.py"]}, exclude=[])
def test_the_walk_admits_what_git_does(files: list[str], rules: dict[str, list[str]], exclude: list[str]) -> None:
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        subprocess.run(["git", "init", "-q", str(root)], check=True)
        (root / ".git" / "info").mkdir(parents=True, exist_ok=True)
        (root / ".git" / "info" / "exclude").write_text("\n".join(exclude) + "\n")
        _materialise(root, files)
        for where, lines in rules.items():
            target = root / where
            if any(p.is_file() for p in [target, *target.parents]):
                continue  # a file where the rules' folder would be
            target.mkdir(parents=True, exist_ok=True)
            (target / ".gitignore").write_text("\n".join(lines) + "\n")
        listed = subprocess.run(
            [
                "git",
                "-C",
                str(root),
                "-c",
                "core.excludesFile=/dev/null",
                "ls-files",
                "--others",
                "--exclude-standard",
                "-z",
            ],
            capture_output=True,
            check=True,
        ).stdout
        expected = sorted(p for p in listed.decode().split("\0") if p and not p.rsplit("/", 1)[-1].startswith("."))
        found = walk(root)
        assert found.files == expected
        assert found.seen == len(found.files) + len(found.withheld)
