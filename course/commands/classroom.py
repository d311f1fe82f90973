"""``course classroom SUBMISSIONS --out RESULTS``: grade a class, one folder per student.

Each submission is graded in its own worker process (``grader.sandbox.runner``) with
the full example set, so a submission that crashes or hangs costs its own
result only. Nothing is written to the teacher's progress. RESULTS gets
``summary.csv`` and, per submission, Gradescope's ``results.json`` and
``junit.xml`` (formats in ``course.scoring``).
"""

from __future__ import annotations

import json
import shutil
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from rich import box
from rich.table import Table
from rich.text import Text

from course import scoring
from course.commands.common import App, UsageProblem
from course.commands.grade import INTERRUPTED, rerun_command
from course.registry import Lesson
from course.scoring import Submission
from grader.results import LessonResult
from grader.sandbox.protocol import DEFAULT_TIMEOUT


def classroom(
    app: App, submissions: str, out: str, *, lessons: tuple[int, ...] = (), seed: int = 0,
    timeout: float = DEFAULT_TIMEOUT, devices: int | None = None, cpu: bool = False,
    require_sandbox: bool = False,
) -> int:  # fmt: skip
    from grader.sandbox import jail

    if require_sandbox and not jail.on():
        raise UsageProblem(f"--require-sandbox: no sandbox here ({jail.state()}); nothing graded")
    chosen = [app.lesson(n) for n in lessons] if lessons else list(app.course.lessons)
    folders = find_submissions(Path(submissions), chosen)
    target = Path(out)
    target.mkdir(parents=True, exist_ok=True)
    cache = target / ".cache" / "jax"  # the reference programs compile once for the class
    graded: list[Submission] = []
    app.console.print(f"Grading {len(folders)} submission(s) from {submissions} into {target}"
                      f" · sandbox: {jail.state()}")  # fmt: skip
    try:
        for name, folder in folders:
            with app.console.status(f"grading {name} …"):
                sub = grade_submission(name, folder, chosen, seed=seed, timeout=timeout,
                                       devices=devices, cpu=cpu, cache_dir=cache)  # fmt: skip
            write_submission(target, sub)
            graded.append(sub)
            app.console.print(
                f"  {name}: {sub.score}/{sub.max_score} points ({sub.duration:.1f} s)"
            )
    except KeyboardInterrupt:
        app.console.print(
            "\n[yellow]Interrupted.[/yellow] The submissions graded so far are written."
        )
        return INTERRUPTED
    finally:
        (target / "summary.csv").write_text(scoring.summary_csv(graded))
    app.console.print(summary_table(graded))
    app.console.print(
        f"Written: {target / 'summary.csv'}, and per submission results.json, junit.xml"
    )
    return 0


def find_submissions(folder: Path, lessons: list[Lesson]) -> list[tuple[str, Path]]:
    """(name, folder) of each submission: every sub-folder, or ``folder`` itself when
    it holds a lesson file (one submission, as Gradescope lays it out)."""
    if any(_locate(folder, lesson.module, deep=False) for lesson in lessons):
        return [(folder.resolve().name, folder)]
    return sorted(
        (d.name, d) for d in folder.iterdir() if d.is_dir() and not d.name.startswith((".", "__"))
    )


def _locate(folder: Path, module: str, deep: bool = True) -> Path | None:
    """The submission's file for ``module``: at the top, or (zipped folders) deeper."""
    direct = folder / f"{module}.py"
    if direct.is_file() or not deep:
        return direct if direct.is_file() else None
    found = sorted(
        p for p in folder.rglob(f"{module}.py") if p.is_file() and "__MACOSX" not in p.parts
    )
    return found[0] if found else None


@contextmanager
def _staged(folder: Path, files: dict[str, Path]) -> Iterator[Path]:
    """A directory with the lesson files as ``<module>.py``: ``folder`` itself when
    they all lie at its top, else a temporary copy."""
    if all(f.parent == folder for f in files.values()):
        yield folder
        return
    with tempfile.TemporaryDirectory(prefix="course-submission-") as stage:
        for module, f in files.items():
            shutil.copyfile(f, Path(stage) / f"{module}.py")
        yield Path(stage)


def grade_submission(
    name: str, folder: Path, lessons: list[Lesson], *, seed: int = 0,
    timeout: float = DEFAULT_TIMEOUT, devices: int | None = None, cpu: bool = False,
    cache_dir: Path | None = None,
) -> Submission:  # fmt: skip
    """Grade one submission in its own worker; lessons it lacks are ``not submitted``."""
    from grader.sandbox.protocol import LessonJob, Request
    from grader.sandbox.runner import grade

    started = time.perf_counter()
    files = {ls.module: f for ls in lessons if (f := _locate(folder, ls.module)) is not None}
    present = [ls for ls in lessons if ls.module in files]
    results: dict[int, LessonResult] = {}
    if present:
        with _staged(folder.resolve(), files) as directory:
            request = Request(
                lessons=tuple(
                    LessonJob(ls.number, ls.module, tuple(e.name for e in ls.exercises))
                    for ls in present
                ),
                directory=str(directory), seed=seed, timeout=timeout, devices=devices,
                platform="cpu" if cpu else None, cache_dir=str(cache_dir) if cache_dir else None,
            )  # fmt: skip
            results = {r.lesson: r for r in grade(request)}
    sandbox = next((r.sandbox for r in results.values() if r.sandbox), "")
    return scoring.submission(
        name, lessons, results, time.perf_counter() - started, rerun_command, sandbox
    )


def write_submission(target: Path, sub: Submission) -> None:
    folder = target / sub.name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "results.json").write_text(json.dumps(scoring.gradescope(sub), indent=2) + "\n")
    (folder / "junit.xml").write_text(scoring.junit_xml(sub))


def summary_table(subs: list[Submission]) -> Table:
    table = Table(box=box.SIMPLE_HEAD, title="Class results", title_justify="left")
    table.add_column("submission", no_wrap=True)
    table.add_column("points", justify="right", no_wrap=True)
    table.add_column("passed", justify="right", no_wrap=True)
    table.add_column("not passed")
    for s in subs:
        counts = Counter(r.label for r in s.rows if not r.passed)
        table.add_row(
            s.name, f"{s.score}/{s.max_score}" + (f" +{s.bonus}" if s.bonus else ""),
            f"{sum(r.passed for r in s.rows)}/{len(s.rows)}",
            Text(" · ".join(f"{n} {status}" for status, n in counts.items()), style="red"),
        )  # fmt: skip
    return table
