"""``course init [DIR]``: make a folder the student's workspace."""

from __future__ import annotations

from pathlib import Path

import click

from course.commands.common import App
from course.paths import MARKER, Workspace, inside_installed_package


def init(app: App, directory: str) -> int:
    home = Path(directory).resolve()
    if inside_installed_package(home, app.root):
        raise click.ClickException(
            f"{home} is inside the installed course; choose a folder of your own, "
            "e.g. course init ~/scaling-course"
        )
    marker = home / MARKER
    fresh = not marker.exists()
    home.mkdir(parents=True, exist_ok=True)
    marker.write_text("A scaling-course workspace: `course` run in here (or below) uses it.\n")
    ws = Workspace(home, home / "progress.db")
    copied = ws.ensure([lesson.module for lesson in app.course.lessons], app.root)
    verb = "Made" if fresh else "Updated"
    app.console.print(f"{verb} the workspace {home}: {len(copied)} exercise file(s) copied.")
    app.console.print(f"Your code goes in\n  {ws.exercises}", soft_wrap=True)
    here = Path.cwd().resolve()
    go = "" if home == here or here.is_relative_to(home) else f"cd {home} && "
    app.console.print(f"Next:\n  {go}course status", soft_wrap=True)
    return 0
