"""Ground-truth code tasks for the code verbs: a real third-party package copied into a git tree, and
precision and recall of an answer against tests/support/py_calls.py's independent call finder."""

from __future__ import annotations

import shutil
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from tests.support.git_tree import commit_tree

#: the MCP tools the code verbs add (surfaces/mcp/code_tools.py)
CODE_TOOLS = frozenset({"context", "describe", "grep", "trace", "impact", "snippet"})


def copy_package(source: Path, into: Path) -> Path:
    """``source`` (an installed package's folder) copied under ``into`` and committed; returns the copy."""
    copy = into / source.name
    shutil.copytree(source, copy, ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "*.so"))
    commit_tree(into, {})
    return copy


@dataclass(frozen=True)
class Score:
    """How an answer's items compare with the truth's."""

    found: int
    truth: int
    right: int
    calls: int  # MCP tool calls the task took

    @property
    def precision(self) -> float:
        return self.right / self.found if self.found else 0.0

    @property
    def recall(self) -> float:
        return self.right / self.truth if self.truth else 0.0

    def line(self, task: str) -> str:
        return (
            f"{task}: {self.right}/{self.found} right (precision {self.precision:.3f}), "
            f"{self.right}/{self.truth} of the truth (recall {self.recall:.3f}), {self.calls} tool call(s)"
        )


def scored(found: Iterable[object], truth: Iterable[object], calls: int) -> Score:
    got, want = set(found), set(truth)
    return Score(len(got), len(want), len(got & want), calls)
