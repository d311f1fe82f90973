"""``course watch``: re-grade a lesson every time its exercise file is saved."""

from __future__ import annotations

from pathlib import Path

from course.commands.common import App
from course.commands.grade import INTERRUPTED, current_lesson, grade


def _stamp(path: Path) -> tuple[int, int]:
    st = path.stat()
    return st.st_mtime_ns, st.st_size


def watch(app: App, number: int | None, **grade_options) -> int:
    from watchfiles import watch as watch_changes

    app.ensure_workspace()
    lesson = app.lesson(number) if number else current_lesson(app)
    target = app.ws.exercise_file(lesson.module).resolve()
    app.console.rule(f"watching {target.name} — Ctrl-C to stop")

    def regrade(why: str) -> bool:
        """Grade the lesson; True when Ctrl-C stopped it."""
        if why:
            app.console.rule(f"{target.name} {why} — grading lesson {lesson.number}")
        return grade(app, str(lesson.number), **grade_options) == INTERRUPTED

    seen = _stamp(target)
    interrupted = regrade("")
    try:
        # the watcher starts after the first grading: a save made during it is caught here
        while not interrupted and _stamp(target) != seen:
            seen = _stamp(target)
            interrupted = regrade("changed while grading")
        for changes in [] if interrupted else watch_changes(target.parent, debounce=300):
            if any(Path(p).resolve() == target for _, p in changes):
                seen = _stamp(target)
                if regrade("changed"):
                    break
    except KeyboardInterrupt:
        pass
    app.console.print("\nStopped watching.")
    return 0
