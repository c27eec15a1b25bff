"""No two drsg modules import each other, directly or round a longer circle, in any import form.

The layer rule (test_architecture.py) keeps layers from importing upwards; this keeps modules
within a layer from leaning on each other both ways. An import inside a function counts: hiding
one there to dodge a circle at load time leaves the circle in the design.
"""

from __future__ import annotations

from pathlib import Path

from tests.support.imports import ROOT, SOURCES, imported_modules, module_of_file


def import_graph(sources: list[Path], root: Path = ROOT) -> dict[str, set[str]]:
    """Module -> the drsg modules it imports (``from pkg import name`` counts for ``pkg.name``
    when that is a module, else for ``pkg``)."""
    modules = {module_of_file(path, root): path for path in sources}

    def module_named(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {}
    for module, path in modules.items():
        targets = {module_named(name) for _, name in imported_modules(path, root)}
        graph[module] = {t for t in targets if t is not None and t != module}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The groups of modules that reach each other (strongly connected components of two or more)."""
    order: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        order[node] = low[node] = len(order)
        stack.append(node)
        for nxt in sorted(graph[node]):
            if nxt not in order:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], order[nxt])
        if low[node] == order[node]:
            group = []
            while True:
                member = stack.pop()
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(graph):
        if node not in order:
            visit(node)
    return found


def test_no_module_circles() -> None:
    assert cycles(import_graph(SOURCES)) == []


def test_a_planted_circle_is_found(tmp_path: Path) -> None:
    """Guards the finder: a circle closed by an import inside a function, beside a clean chain."""
    files = {
        "workers/a.py": "from drsg.workers import b\n",
        "workers/b.py": "def f():\n    from drsg.workers.c import x\n",
        "workers/c.py": "import drsg.workers.a\nx = 1\n",
        "workers/d.py": "from drsg.workers.a import y\n",
    }
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(exist_ok=True)
        path.write_text(text)
    graph = import_graph(sorted(tmp_path.rglob("*.py")), tmp_path)
    assert graph["drsg.workers.c"] == {"drsg.workers.a"} and graph["drsg.workers.b"] == {"drsg.workers.c"}
    assert cycles(graph) == [["drsg.workers.a", "drsg.workers.b", "drsg.workers.c"]]
