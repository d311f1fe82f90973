"""``course dev check``: the course is consistent, solutions pass, stubs are stubs.

1. the registry matches the files: every lesson has its exercise stub,
   solution, grading spec, text and catalogue of mistakes
   (``tests/mistakes/lNN.py``), and nothing else lies there;
2. each stub's public functions have the same signatures and docstrings as
   its solution's (read with ast: no import, no jax);
3. the grading spec names exactly the registry's exercises;
4. every solution passes its grader, and every untouched stub is reported
   "not started".
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import click
from rich.table import Table
from rich.text import Text

from course import paths
from course.commands.common import App
from course.registry import Course
from grader.repo import shipped
from grader.results import Status


def public_functions(path: Path) -> dict[str, tuple[str, str | None]]:
    """name → (signature text, docstring) of a module's top-level public functions."""
    tree = ast.parse(path.read_text(), filename=str(path))
    out = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and not node.name.startswith("_"):
            returns = f" -> {ast.unparse(node.returns)}" if node.returns else ""
            out[node.name] = (f"({ast.unparse(node.args)}){returns}", ast.get_docstring(node))
    return out


def static_problems(course: Course, root: Path) -> list[str]:
    """Everything about the files that is wrong, without importing any of them."""
    problems = []
    known = {lesson.module for lesson in course.lessons}
    for folder in ("exercises", "solutions"):
        for f in sorted((root / folder).glob("l[0-9][0-9]_*.py")):
            if f.stem not in known:
                problems.append(f"{folder}/{f.name} belongs to no lesson in course.toml")
    for d in sorted((root / "grader" / "lessons").glob("l[0-9][0-9]_*")):
        if d.is_dir() and d.name not in known:
            problems.append(f"grader/lessons/{d.name}/ belongs to no lesson in course.toml")
    numbered = {f"l{lesson.number:02d}" for lesson in course.lessons}
    for f in sorted((root / "tests" / "mistakes").glob("l[0-9][0-9].py")):
        if f.stem not in numbered:
            problems.append(f"tests/mistakes/{f.name} belongs to no lesson in course.toml")
    texts = {lesson.text_name for lesson in course.lessons}
    for f in sorted((root / "course" / "lessons").glob("*.md")):
        if f.name not in texts:
            problems.append(f"course/lessons/{f.name} belongs to no lesson in course.toml")
    for lesson in course.lessons:
        files = {
            "stub": root / "exercises" / f"{lesson.module}.py",
            "solution": root / "solutions" / f"{lesson.module}.py",
            "grading spec": root / "grader" / "lessons" / lesson.module / "spec.py",
            "text": root / "course" / "lessons" / lesson.text_name,
            "catalogue of mistakes": root / "tests" / "mistakes" / f"l{lesson.number:02d}.py",
        }
        missing = [k for k, f in files.items() if not f.exists()]
        problems += [
            f"lesson {lesson.number}: no {k} ({files[k].relative_to(root)})" for k in missing
        ]
        if {"stub", "solution"} & set(missing):
            continue
        stub, sol = public_functions(files["stub"]), public_functions(files["solution"])
        names = [e.name for e in lesson.exercises]
        for name in names:
            if name not in sol:
                problems.append(f"lesson {lesson.number}: the solution defines no {name}()")
            if name not in stub:
                problems.append(f"lesson {lesson.number}: the stub defines no {name}()")
        for name in sorted(set(stub) | set(sol)):
            if name in stub and name in sol:
                if stub[name][0] != sol[name][0]:
                    problems.append(
                        f"lesson {lesson.number}: {name} signatures differ: stub {stub[name][0]} vs solution {sol[name][0]}"
                    )
                if stub[name][1] != sol[name][1]:
                    problems.append(
                        f"lesson {lesson.number}: {name} docstrings differ between stub and solution"
                    )
            else:
                where = "stub" if name in stub else "solution"
                problems.append(f"lesson {lesson.number}: {name}() is public in the {where} only")
        stub_text = files["stub"].read_text()
        if "TODO" not in stub_text or "NotImplementedError" not in stub_text:
            problems.append(f"lesson {lesson.number}: the stub has no TODO / NotImplementedError")
        if "grading spec" not in missing:
            problems += _lesson_folder_problems(lesson.number, lesson.module, root, known)
            from grader.engine import load_spec  # imports hypothesis and numpy, not jax

            spec_names = [e.name for e in load_spec(lesson.module).exercises]
            if spec_names != names:
                problems.append(
                    f"lesson {lesson.number}: the grading spec grades {spec_names}, course.toml lists {names}"
                )
    problems += _readme_problems(course, root)
    return problems


def _lesson_folder_problems(number: int, module: str, root: Path, known: set[str]) -> list[str]:
    """A lesson folder is a package that imports no other lesson (shared pieces
    live below the lessons: grader/checks, grader/reference, grader/measure)."""
    folder = root / "grader" / "lessons" / module
    problems = []
    if not (folder / "__init__.py").exists():
        problems.append(f"lesson {number}: grader/lessons/{module}/ has no __init__.py")
    for f in sorted(folder.glob("*.py")):
        for node in ast.walk(ast.parse(f.read_text(), filename=str(f))):
            names = []
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            for name in names:
                parts = name.split(".")
                other = parts[2] if parts[:2] == ["grader", "lessons"] and len(parts) > 2 else None
                if other in known and other != module:
                    problems.append(
                        f"lesson {number}: grader/lessons/{module}/{f.name} imports lesson "
                        f"{other}; move what both use below the lessons"
                    )
    return sorted(set(problems))


def _readme_problems(course: Course, root: Path) -> list[str]:
    """The README's lesson table lists exactly the registry's lessons, in order."""
    readme = root / "README.md"
    if not readme.exists():
        return []
    listed = [int(m) for m in re.findall(r"^\| (\d+) \|", readme.read_text(), flags=re.M)]
    numbers = [lesson.number for lesson in course.lessons]
    if listed != numbers:
        return [f"README.md's lesson table lists lessons {listed}, course.toml {numbers}"]
    return []


def check(app: App, grade_code: bool = True, timeout: float = 120.0) -> int:
    from grader.sandbox.protocol import LessonJob, Request
    from grader.sandbox.runner import grade

    if not shipped().checkout:
        raise click.ClickException("course dev check checks a clone of the repository; none here")
    root = paths.root()
    problems = static_problems(app.course, root)
    rows: list[tuple[str, str, bool, str]] = []
    if grade_code and not problems:
        lessons = tuple(
            LessonJob(lesson.number, lesson.module, tuple(e.name for e in lesson.exercises))
            for lesson in app.course.lessons
        )
        for folder, want in (("solutions", Status.PASSED), ("exercises", Status.NOT_STARTED)):
            with app.console.status(f"grading {folder}/ …"):
                results = grade(
                    Request(
                        lessons, str(root / folder), timeout=timeout, cache_dir=app.compile_cache()
                    )
                )
            for lr in results:
                for er in lr.exercises:
                    ok = er.status == want
                    rows.append((folder, f"{er.lesson}.{er.exercise}", ok, str(er.status)))
                    if not ok:
                        why = er.error or next((c.message for c in er.checks if not c.passed), "")
                        problems.append(
                            f"{folder}: {er.lesson}.{er.exercise} is {er.status}, expected {want}: {why}"
                        )
    if rows:
        table = Table(title="course dev check", title_justify="left")
        table.add_column("graded")
        table.add_column("exercise")
        table.add_column("status")
        for folder, name, ok, status in rows:
            table.add_row(folder, name, Text(status, style="green" if ok else "red"))
        app.console.print(table)
    for p in problems:
        app.console.print(Text("✘ " + p, style="red"))
    if problems:
        return 1
    app.console.print(
        Text(
            f"✔ {len(app.course.lessons)} lessons consistent"
            + (", solutions pass, stubs not started" if grade_code else ""),
            style="green",
        )
    )
    return 0
