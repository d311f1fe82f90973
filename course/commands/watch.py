"""``course watch``: re-grade a lesson every time its exercise file is saved."""

from __future__ import annotations

from pathlib import Path

from course.commands.common import App
from course.commands.grade import INTERRUPTED, current_lesson, grade


def watch(app: App, number: int | None, **grade_options) -> int:
    from watchfiles import watch as watch_changes

    app.ensure_workspace()
    lesson = app.lesson(number) if number else current_lesson(app)
    target = app.ws.exercise_file(lesson.module).resolve()
    app.console.rule(f"watching {target.name} — Ctrl-C to stop")

    def regrade() -> bool:
        """Grade once; False when the student pressed Ctrl-C."""
        return grade(app, str(lesson.number), **grade_options) != INTERRUPTED

    try:
        before = _contents(target)
        if not regrade():
            return _stopped(app)
        # a save while the first grading ran happened before the watcher started
        while _contents(target) != before:
            before = _contents(target)
            app.console.rule(f"{target.name} changed — grading lesson {lesson.number}")
            if not regrade():
                return _stopped(app)
        for changes in watch_changes(target.parent, debounce=300):
            if any(Path(p).resolve() == target for _, p in changes):
                app.console.rule(f"{target.name} changed — grading lesson {lesson.number}")
                if not regrade():
                    break
    except KeyboardInterrupt:
        pass
    return _stopped(app)


def _contents(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except OSError:
        return None


def _stopped(app: App) -> int:
    app.console.print("\nStopped watching.")
    return 0
