"""``course watch``: re-grade a lesson every time its exercise file is saved.

One grading worker (:class:`grader.sandbox.runner.Worker`) is kept for the
whole watch: a save finds jax imported, the devices up and a fresh student's
process started ahead, so it costs the changed lesson's tracing, compiles
(from the cache where unchanged) and checks. On a terminal the screen is
cleared before each grade, and a line says when the file changed and what
changed in it (the functions whose lines did).

A save while a grade runs stops that grade (a fix saved during a hang does not
wait out its time limit) and the new file is graded. Once the lesson passes, the
watch moves on to the next lesson in the course's order and says so; a save of
any lesson's file in the exercises folder grades that lesson.
"""

from __future__ import annotations

import _thread
import ast
import difflib
import queue
import threading
import time
from pathlib import Path

from course.commands.common import App
from course.commands.grade import INTERRUPTED, current_lesson, grade
from course.registry import Lesson

STEP_MS = 20
"""A save is graded once its file has had no change for this long (watchfiles'
``step``; its default, 50 ms, is most of a save's wait before its grade starts).
An editor's save (a rename, or a truncate and a write) lands well inside it; a
save in two bursts further apart is graded twice, the second time whole."""
SUPERSEDED = -1
"""What :func:`watch`'s grade gives back when a newer save stopped it."""


class Watch:
    """The files of the exercises folder as last graded, and the grade running now:
    the watcher thread stops that grade when its file is saved with other contents."""

    def __init__(self, app: App) -> None:
        self.folder = app.ws.exercises.resolve()
        self.lessons = {f"{ls.module}.py": ls for ls in app.course.lessons}
        self.graded: dict[str, bytes | None] = {}
        """File name → its contents as last graded."""
        self.saves: queue.Queue[str] = queue.Queue()
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.grading: str | None = None
        """The file being graded now."""
        self.superseded = False

    def watch_files(self) -> None:
        """The watcher thread: each lesson file saved with new contents is queued; one
        saved while its lesson is graded stops that grade (as Ctrl-C would, at once)."""
        from watchfiles import watch as watch_changes

        for changes in watch_changes(
            self.folder, debounce=300, step=STEP_MS, stop_event=self.stop, raise_interrupt=False
        ):
            names = {Path(p).name for _, p in changes if Path(p).resolve().parent == self.folder}
            for name in sorted(names & self.lessons.keys()):
                if _contents(self.folder / name) == self.graded.get(name):
                    continue  # saved unchanged (or touched): the verdict stands
                self.saves.put(name)
                with self.lock:
                    if self.grading == name and not self.superseded:
                        self.superseded = True
                        _thread.interrupt_main()  # SIGINT's handler: the grade stops


def watch(app: App, number: int | None, **grade_options) -> int:
    from grader.sandbox.runner import Worker

    app.ensure_workspace()
    lesson = app.lesson(number) if number else current_lesson(app)
    state = Watch(app)
    worker = Worker()

    def regrade(ls: Lesson, changed: bool) -> int:
        """Grade ``ls`` once (after a change: say what changed, on a cleared screen): its
        exit status, :data:`SUPERSEDED` when a newer save stopped it."""
        name = f"{ls.module}.py"
        now = _contents(state.folder / name)
        if app.console.is_terminal:
            app.console.clear()
        app.console.rule(f"watching {name} — Ctrl-C to stop")
        if changed:
            app.console.print(_what_changed(name, state.graded.get(name), now, time.localtime()))
        state.graded[name] = now
        with state.lock:
            state.grading, state.superseded = name, False
        try:
            code = grade(app, str(ls.number), worker=worker, **grade_options)
        except KeyboardInterrupt:
            code = INTERRUPTED
        finally:
            with state.lock:
                state.grading = None
        if code == INTERRUPTED and state.superseded:
            app.console.print(f"{name} was saved again: that grade was stopped.")
            return SUPERSEDED
        return code

    def step(ls: Lesson, changed: bool) -> Lesson | None:
        """Grade ``ls``; the lesson watched next (None: Ctrl-C)."""
        try:
            code = regrade(ls, changed)
        except KeyboardInterrupt:  # a stop that landed just after the grade ended
            code = SUPERSEDED if state.superseded else INTERRUPTED
        if code == INTERRUPTED:
            return None
        if code != 0 or ls.number != current.number:
            return current
        return _moved_on(app, ls)

    watcher = threading.Thread(target=state.watch_files, daemon=True, name="watch-files")
    watcher.start()
    current = lesson
    try:
        moved = step(current, changed=False)
        while moved is not None:
            current = moved
            name = _next_save(state)
            if _contents(state.folder / name) == state.graded.get(name):
                continue
            moved = step(state.lessons[name], changed=True)
    except KeyboardInterrupt:
        pass
    finally:
        state.stop.set()
        worker.close()
    return _stopped(app)


def _next_save(state: Watch) -> str:
    """The next file saved (short waits, so that Ctrl-C is seen at once)."""
    while True:
        try:
            return state.saves.get(timeout=0.2)
        except queue.Empty:
            continue


def _moved_on(app: App, passed: Lesson) -> Lesson:
    """After ``passed`` passes: the next lesson in the course's order, said on screen
    (after the last one: that one, and where the whole course stands)."""
    order = list(app.course.lessons)
    later = order[order.index(passed) + 1 :]
    if not later:
        app.console.print(
            f"Lesson {passed.number} passes and it is the last one: course status shows the "
            "whole course. Still watching its file.",
            soft_wrap=True,
        )
        return passed
    nxt = later[0]
    app.console.print(
        f"[bold green]Lesson {passed.number} passes.[/bold green] Now watching lesson "
        f"{nxt.number} · {nxt.title}: save {app.ws.exercise_file(nxt.module)} to grade it "
        f"(course show {nxt.number} to read it).",
        soft_wrap=True,
    )
    return nxt


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
