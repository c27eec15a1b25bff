"""``Plane.code()``: the code verbs on a code plane, each answer with the plane's drift line.

The verbs are drsg.workers.code_verbs' (context, describe, trace, impact) and code_source's (grep,
snippet), run on one snapshot. Each answer's ``synced`` is the line ``drsg digest`` recorded (the
commit the tree was read beside and its drift then), and, when the tree has moved since — another
commit checked out, files edited — what it is now, since receipts point into the tree as it was.

``allowed_roots`` (a server's ``[server] code_roots`` and the trees ``serve watch`` follows; None: no
restriction) bounds where the tree is read from disk: grep and snippet outside them are refused, and
the drift line keeps to what was recorded (the plane's root is data: it never chooses a directory).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, TypeVar

from drsg.workers.code_source import GREP_DEFAULT, SNIPPET_LINES, Allowed, Grep, GrepHit, Snippet, allows
from drsg.workers.code_verbs import (
    IMPACT_DEPTH,
    CodePlane,
    Context,
    Description,
    Hop,
    Impact,
    Reach,
    Site,
    Symbol,
    Trace,
)

if TYPE_CHECKING:
    from drsg.api.host import HostedPlane
    from drsg.kernel.asof import AsOf

__all__ = ["Code", "Context", "Description", "Grep", "GrepHit", "Hop", "Impact", "Reach", "Site", "Snippet", "Symbol"]
__all__ += ["Trace", "drift_line"]  # the answers' types, for the surfaces that render them


class _Answer(Protocol):
    """A dataclass (what ``dataclasses.replace`` takes; typeshed's own name for it is not importable)."""

    __dataclass_fields__: ClassVar[dict[str, Any]]


R = TypeVar("R", bound=_Answer)  # every answer is a dataclass with `synced`


def drift_line(props: Mapping[str, Any], allowed: Allowed = None) -> str | None:
    """The recorded ``synced:`` line, and how the tree differs now when it does (looked at only inside ``allowed``)."""
    from drsg.pipeline.code.drift import SYNCED_COMMIT, SYNCED_ROOT, drift, synced_line

    line = synced_line(props)
    root = props.get(SYNCED_ROOT)
    if line is None or not isinstance(root, str) or not allows(allowed, root) or not Path(root).is_dir():
        return line
    now = drift(Path(root))
    keys = (SYNCED_COMMIT, "synced_modified", "synced_untracked")
    if not now or all(now.get(k) == props.get(k) for k in keys):
        return line
    return (
        f"{line}; the tree has moved since: now commit {str(now[SYNCED_COMMIT])[:12]} with "
        f"{now['synced_modified']} modified and {now['synced_untracked']} untracked — re-digest to refresh receipts"
    )


def _readable(root: Path, path: str) -> bool:
    """A file the digest's walk reads (never a dotfile such as ``.env``, the store, a virtualenv)."""
    from drsg.pipeline.code.walk import under_floor

    return not under_floor(root, path)


class Code:
    """The code verbs on one plane (``Plane.code()``), read as of ``as_of`` (default: the head)."""

    def __init__(self, plane: HostedPlane, as_of: AsOf | None = None, allowed_roots: Allowed = None) -> None:
        self.plane = plane
        self.as_of = as_of
        self.allowed_roots = allowed_roots

    def _run(self, verb: Callable[[CodePlane], R]) -> R:
        with self.plane.db.snapshot(self.as_of) as snap:
            record = snap.plane_by_id(self.plane.id)
            if record is None:
                record = snap.plane(self.plane.name)  # NotFound naming the plane
            answer = verb(CodePlane(snap, record))
            props = dict(record.props)
        return dataclasses.replace(answer, synced=drift_line(props, self.allowed_roots))

    def context(self, symbol: str) -> Context:
        """Definition, signature, doc, callers with their sites, callees and other edges (≤24,000 chars)."""
        return self._run(lambda code: code.context(symbol))

    def describe(self, symbol: str) -> Description:
        """The symbol's properties, ``_`` provenance left out and vectors elided."""
        return self._run(lambda code: code.describe(symbol))

    def trace(self, src: str, dst: str) -> Trace:
        """The shortest recorded CALLS path from ``src`` to ``dst`` (else ``dst`` to ``src``, marked reversed)."""
        return self._run(lambda code: code.trace(src, dst))

    def impact(self, symbol: str, *, depth: int = IMPACT_DEPTH) -> Impact:
        """What reaches ``symbol`` through incoming CALLS/REFERENCES/IMPORTS/EXTENDS/…, by distance (≤6)."""
        return self._run(lambda code: code.impact(symbol, depth))

    def grep(self, pattern: str, *, ignore_case: bool = False, max_results: int = GREP_DEFAULT) -> Grep:
        """Lines of the plane's files holding ``pattern`` literally (the tree read from disk; ≤200)."""
        from drsg.workers.code_source import grep

        return self._run(lambda code: grep(code, pattern, _readable, ignore_case, max_results, self.allowed_roots))

    def snippet(self, symbol: str, *, lines: int = SNIPPET_LINES) -> Snippet:
        """The symbol's source: stored ``_code``, else ``lines`` lines of its file from its definition."""
        from drsg.workers.code_source import snippet

        return self._run(lambda code: snippet(code, symbol, _readable, lines, self.allowed_roots))
