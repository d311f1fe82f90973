"""No import circle in ``grader/`` (issue 44 §1; ARCHITECTURE.md, "Started ahead:
one module").

The graph is read from the source with :mod:`ast`, not from what an import run
happens to load: every ``import`` and ``from … import`` of a module is an edge,
at its top, inside a function (imported when that runs) or under
``TYPE_CHECKING`` (a dependency all the same), relative ones resolved. An edge
goes to the module named, or to the submodule where ``from package import name``
names one. A circle is reported as a path of modules, each step with the line
of the import that makes it, so the one to cut can be read off the message.

What it holds: what starts processes ahead of need (:mod:`grader.sandbox.spares`)
sits above the modules that make them (launch, processes, forks, cluster), and
those know nothing of it; the core's runtime uses :mod:`grader.exported` and
:mod:`grader.spec`, which use nothing of the runtime.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections import deque
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

Graph = dict[str, dict[str, tuple[Path, int]]]
"""module → {module it imports: (the file, the line of the first such import)}."""


def modules(root: Path, package: str) -> dict[str, Path]:
    """Every module of ``package`` under ``root`` (a package by its ``__init__.py``)."""
    found = {}
    for path in sorted((root / package.replace(".", "/")).rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _known(name: str, known: dict[str, Path]) -> str | None:
    """``name``, or the nearest package above it, where it is one of ``known``."""
    while name and name not in known:
        name = name.rpartition(".")[0]
    return name or None


def imports(name: str, path: Path, known: dict[str, Path]) -> list[tuple[str, int]]:
    """The modules of ``known`` that module ``name`` (at ``path``) imports: (module, line)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                parts = parts[: len(parts) - (node.level - 1)]
                base = ".".join([*parts, base] if base else parts)
            targets = [
                f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base
                for alias in node.names
            ]
        else:
            continue
        for target in targets:
            module = _known(target, known)
            if module is not None and module != name:
                out.append((module, node.lineno))
    return out


def graph(root: Path, package: str) -> Graph:
    known = modules(root, package)
    edges: Graph = {}
    for name, path in known.items():
        edges[name] = {}
        for module, line in sorted(imports(name, path, known), key=lambda e: e[1]):
            edges[name].setdefault(module, (path, line))
    return edges


def circles(edges: Graph) -> list[list[str]]:
    """Each group of modules that import one another, as one circle through it
    (the shortest from its first module by name, back to that module)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    groups: list[list[str]] = []

    def visit(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10 * len(edges) + 100))
    try:
        for v in sorted(edges):
            if v not in index:
                visit(v)
    finally:
        sys.setrecursionlimit(limit)
    return [_circle(group, edges) for group in sorted(groups)]


def _circle(group: list[str], edges: Graph) -> list[str]:
    start, members = group[0], set(group)
    came: dict[str, str] = {}
    todo = deque([start])
    while todo:
        v = todo.popleft()
        for w in sorted(edges[v]):
            if w == start:
                path = [v]
                while path[-1] != start:
                    path.append(came[path[-1]])
                return [*reversed(path), start]
            if w in members and w not in came:
                came[w] = v
                todo.append(w)
    raise AssertionError(f"no circle through {start}")  # a component always has one


def describe(circle: list[str], edges: Graph, root: Path) -> str:
    """``a → b (a.py:12) → a (b.py:40)``: each step with the import that makes it."""
    steps = [circle[0]]
    for a, b in zip(circle, circle[1:]):
        path, line = edges[a][b]
        steps.append(f"{b} ({path.relative_to(root).as_posix()}:{line})")
    return " → ".join(steps)


def _circles_message(root: Path, package: str) -> str | None:
    edges = graph(root, package)
    found = circles(edges)
    if not found:
        return None
    lines = []
    for circle in found:
        lines.append("  " + describe(circle, edges, root))
        group = _group(circle[0], edges)
        if others := sorted(group - set(circle)):
            lines.append(f"    (its group also holds {', '.join(others)}: cut every circle)")
    return f"import circle{'s' if len(found) > 1 else ''} among {package}'s modules:\n" + "\n".join(
        lines
    )


def _group(start: str, edges: Graph) -> set[str]:
    """The modules that ``start`` reaches and that reach it back."""

    def reach(step: dict[str, set[str]]) -> set[str]:
        seen, todo = {start}, [start]
        while todo:
            for w in step.get(todo.pop(), ()):
                if w not in seen:
                    seen.add(w)
                    todo.append(w)
        return seen

    back: dict[str, set[str]] = {}
    for a, targets in edges.items():
        for b in targets:
            back.setdefault(b, set()).add(a)
    return reach({a: set(t) for a, t in edges.items()}) & reach(back)


@pytest.mark.parametrize("package", ["grader.sandbox", "grader"])
def test_no_module_takes_part_in_an_import_circle(package):
    message = _circles_message(ROOT, package)
    assert message is None, message


# ------------------------------------------------------------------ the reader itself


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


CIRCLE_BEFORE = {
    # issue 44's circle, in miniature: what is started ahead, in the module that
    # starts a student's process, reaches the clusters from inside a function, the
    # clusters reach the isolation layer with a relative import for one helper, and
    # that imports the interface back
    "grader/__init__.py": "",
    "grader/sandbox/__init__.py": "",
    "grader/sandbox/jail.py": "import os\n",
    "grader/sandbox/processes.py": (
        "from grader.sandbox import jail\n\n\nclass Ahead:\n"
        "    def clusters(self):\n        from grader.sandbox.cluster import ClusterPool\n"
    ),
    "grader/sandbox/cluster.py": (
        "from grader.sandbox import jail\n\n\nclass ClusterPool:\n    def run(self):\n"
        "        from .isolation import raise_from\n"
    ),
    "grader/sandbox/isolation.py": "from grader.sandbox.processes import Ahead\n",
}


def test_a_circle_through_a_function_level_and_a_relative_import_is_named(tmp_path):
    """The wrong layout fails, naming every step and the line that makes it; the
    module outside the circle (jail) is not named."""
    _write(tmp_path, CIRCLE_BEFORE)
    message = _circles_message(tmp_path, "grader.sandbox")
    assert message == (
        "import circle among grader.sandbox's modules:\n"
        "  grader.sandbox.cluster → grader.sandbox.isolation (grader/sandbox/cluster.py:6)"
        " → grader.sandbox.processes (grader/sandbox/isolation.py:1)"
        " → grader.sandbox.cluster (grader/sandbox/processes.py:6)"
    )
    assert "jail" not in message


def test_the_circle_cut_passes_and_each_kind_of_import_is_an_edge(tmp_path):
    """The same modules with the helper moved below (as ``raise_from`` went to the
    wire codec) form no circle; a ``TYPE_CHECKING`` import, ``import a.b as c`` and
    ``from package import module`` are edges too (each closes a circle of its own)."""
    cut = {**CIRCLE_BEFORE, "grader/sandbox/cluster.py": (
        "class ClusterPool:\n    def run(self):\n        from grader.sandbox.wire import raise_from\n"
    ), "grader/sandbox/wire.py": "def raise_from(answer):\n    pass\n"}  # fmt: skip
    _write(tmp_path, cut)
    assert _circles_message(tmp_path, "grader.sandbox") is None
    for back in (
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from grader.sandbox.processes import Ahead\n",
        "import grader.sandbox.processes as p\n",
        "from grader.sandbox import processes\n",
    ):  # fmt: skip
        (tmp_path / "grader/sandbox/wire.py").write_text(back)
        message = _circles_message(tmp_path, "grader.sandbox")
        assert message is not None and "grader.sandbox.wire" in message, back


def test_what_is_started_ahead_is_imported_at_the_standard_librarys_cost():
    """``course`` imports :mod:`grader.sandbox.spares` to start its worker before
    anything else, the worker to start its student's process before jax: it
    imports nothing of the grader at its top but the worker's start."""
    loaded = subprocess.run(
        [sys.executable, "-c", "import sys, grader.sandbox.spares; "
         "print(' '.join(sorted(m for m in sys.modules if m.split('.')[0] in "
         "('grader', 'numpy', 'jax'))))"],
        capture_output=True, text=True, check=True, cwd=ROOT,
    ).stdout.split()  # fmt: skip
    assert loaded == ["grader", "grader.sandbox", "grader.sandbox.launch", "grader.sandbox.spares"]
