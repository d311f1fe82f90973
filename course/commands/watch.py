"""``course watch``: re-grade a lesson every time its exercise file is saved.

One grading worker (:class:`grader.sandbox.runner.Worker`) is kept for the
whole watch: a save finds jax imported, the devices up and a fresh student's
process started ahead, so it costs the changed lesson's tracing, compiles
(from the cache where unchanged) and checks. On a terminal the screen is
cleared before each grade, and a line says when the file changed and what
changed in it (the functions whose lines did).
"""

from __future__ import annotations

import ast
import difflib
import time
from pathlib import Path

from course.commands.common import App
from course.commands.grade import INTERRUPTED, current_lesson, grade

STEP_MS = 20
"""A save is graded once its file has had no change for this long (watchfiles'
``step``; its default, 50 ms, is most of a save's wait before its grade starts).
An editor's save (a rename, or a truncate and a write) lands well inside it; a
save in two bursts further apart is graded twice, the second time whole."""


def watch(app: App, number: int | None, **grade_options) -> int:
    from watchfiles import watch as watch_changes

    from grader.sandbox.runner import Worker

    app.ensure_workspace()
    lesson = app.lesson(number) if number else current_lesson(app)
    target = app.ws.exercise_file(lesson.module).resolve()
    worker = Worker()
    shown: list[bytes | None] = [_contents(target)]
    """The file as last graded."""

    def regrade(changed: bool) -> bool:
        """Grade once (after a change: say what changed, on a cleared screen);
        False when the student pressed Ctrl-C."""
        now = _contents(target)
        if app.console.is_terminal:
            app.console.clear()
        app.console.rule(f"watching {target.name} — Ctrl-C to stop")
        if changed:
            app.console.print(_what_changed(target.name, shown[0], now, time.localtime()))
        shown[0] = now
        return grade(app, str(lesson.number), worker=worker, **grade_options) != INTERRUPTED

    try:
        if not regrade(changed=False):
            return _stopped(app)
        # a save while the first grading ran happened before the watcher started
        while _contents(target) != shown[0]:
            if not regrade(changed=True):
                return _stopped(app)
        for changes in watch_changes(target.parent, debounce=300, step=STEP_MS):
            if any(Path(p).resolve() == target for _, p in changes):
                if _contents(target) == shown[0]:
                    continue  # saved unchanged (or touched): the verdict stands
                if not regrade(changed=True):
                    break
    except KeyboardInterrupt:
        pass
    finally:
        worker.close()
    return _stopped(app)


def _what_changed(
    name: str, before: bytes | None, after: bytes | None, when: time.struct_time
) -> str:
    """``12:03:41  l02_collectives.py changed: ring_all_gather (lines 40–47)``."""
    stamp = time.strftime("%H:%M:%S", when)
    if after is None:
        return f"{stamp}  {name} is gone (deleted or renamed) — grading what is there"
    old = (before or b"").decode(errors="replace").splitlines()
    new = after.decode(errors="replace").splitlines()
    spans = [
        (j1 + 1, max(j1 + 1, j2))
        for tag, _, _, j1, j2 in difflib.SequenceMatcher(a=old, b=new, autojunk=False).get_opcodes()
        if tag != "equal"
    ]
    if not spans:
        return f"{stamp}  {name} saved (no line changed)"
    functions = _functions_at(after, spans)
    lines = ", ".join(f"{a}" if a == b else f"{a}–{b}" for a, b in spans[:3])
    lines += ", …" if len(spans) > 3 else ""
    plural = "s" if sum(b - a + 1 for a, b in spans) > 1 else ""
    what = ", ".join(functions[:3]) if functions else "outside any function"
    what += f" +{len(functions) - 3} more" if len(functions) > 3 else ""
    return f"{stamp}  {name} changed: {what} (line{plural} {lines})"


def _functions_at(source: bytes, spans: list[tuple[int, int]]) -> list[str]:
    """The top-level functions (and classes) whose lines hold a changed line."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return []
    found = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            start = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            end = node.end_lineno or node.lineno
            if any(a <= end and b >= start for a, b in spans):
                found.append(node.name)
    return found


def _contents(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except OSError:
        return None


def _stopped(app: App) -> int:
    app.console.print("\nStopped watching.")
    return 0
