"""``course classroom SUBMISSIONS --out RESULTS``: grade a class, one folder per student.

Each submission is graded in its own worker process (``grader.sandbox.runner``) with
the full example set, so a submission that crashes or hangs costs its own
result only. Nothing is written to the teacher's progress. RESULTS gets
``summary.csv`` and, per submission, Gradescope's ``results.json`` and
``junit.xml`` (formats in ``course.scoring``).

Against a hostile class (``course.submissions``): every submission is copied to a
private folder before any is graded, and graded from there; a file that is a link
leaving its submission, or a hard link, is refused; its code sees neither the class's
submissions nor the results folder (in the sandbox); names are printed escaped; the results are
written by this process alone, once every submission has been graded, replacing
whatever stands in their place; a submission named like an output gets ``~2``.
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
from course import submissions as safe
from course.commands.common import App, UsageProblem
from course.commands.grade import INTERRUPTED, rerun_command
from course.registry import Lesson
from course.scoring import Submission
from grader.results import ExerciseResult, LessonResult, Status
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
    graded: list[tuple[str, Submission]] = []
    outputs = safe.output_names([name for name, _ in folders])
    app.console.print(
        Text(
            f"Grading {len(folders)} submission(s) from {submissions} into {target}"
            f" · sandbox: {jail.state()}"
        )
    )
    private = safe.private_root()
    # what the submissions' code must not see: the class, the results, the teacher's home
    hidden = (str(Path(submissions).resolve()), str(target.resolve()), str(Path.home()))
    try:
        staged = []  # every submission copied before any is graded: none can change another's
        for i, (name, folder) in enumerate(folders):
            files, refused = submission_files(folder, chosen, whole=len(folders) == 1)
            own = {m: safe.printable(str(f.relative_to(folder))) for m, f in files.items()}
            staged.append((name, safe.stage(private, i, files), refused, own))
        for name, directory, refused, own in staged:
            shown = safe.printable(name)
            with app.console.status(Text(f"grading {shown} …")):
                sub = grade_submission(shown, directory, chosen, seed=seed, timeout=timeout,
                                       devices=devices, cpu=cpu, cache_dir=cache,
                                       refused=refused, own=own,
                                       hidden=hidden)  # fmt: skip
            graded.append((name, sub))
            where = f" (results in {outputs[name]}/)" if outputs[name] != shown else ""
            app.console.print(
                Text(f"  {shown}: {sub.score}/{sub.max_score} points ({sub.duration:.1f} s){where}")
            )
    except KeyboardInterrupt:
        app.console.print(
            "\n[yellow]Interrupted.[/yellow] The submissions graded so far are written."
        )
        return INTERRUPTED
    finally:  # by this process alone, once grading is over, over whatever stands there
        shutil.rmtree(private, ignore_errors=True)
        for name, sub in graded:
            write_submission(target, sub, outputs[name])
        safe.write_file(target / "summary.csv", scoring.summary_csv([s for _, s in graded]))
    app.console.print(summary_table([s for _, s in graded]))
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


def submission_files(
    folder: Path, lessons: list[Lesson], *, whole: bool = False
) -> tuple[dict[str, Path], dict[str, str]]:
    """Module → the file to grade, and module → why its file is refused: a link that
    leaves the submission (to a classmate's file, to the course's solutions), a hard
    link (a file with other names on disk), or a submission folder that is itself a
    link (``whole``: the one folder given)."""
    files: dict[str, Path] = {}
    refused: dict[str, str] = {}
    linked = folder.is_symlink() and not whole
    for ls in lessons:
        f = _locate(folder, ls.module)
        if f is None:
            continue
        if linked:
            refused[ls.module] = (
                "refused: this submission's folder is a link to another folder; "
                "only a submission's own files are graded"
            )
        elif safe.outside(folder, f):
            refused[ls.module] = (
                f"refused: {safe.printable(str(f.relative_to(folder)))} is a link that leaves "
                "the submission; only a submission's own files are graded"
            )
        elif n := safe.other_names(f):
            refused[ls.module] = (
                f"refused: {safe.printable(str(f.relative_to(folder)))} is a hard link (the file "
                f"has {n} other name{'s' if n > 1 else ''} on disk: a classmate's file, a "
                "solution?); only a submission's own files are graded — copy the files, do "
                "not link them"
            )
        else:
            files[ls.module] = f
    return files, refused


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
    cache_dir: Path | None = None, refused: dict[str, str] | None = None,
    own: dict[str, str] | None = None, hidden: tuple[str, ...] = (),
) -> Submission:  # fmt: skip
    """Grade one submission in its own worker; lessons it lacks are ``not submitted``;
    ``refused`` (module → why) are errors with that message, not graded. ``folder`` is
    a private copy: messages name each file by ``own`` (module → its path in the
    submission; default, its name), never by the copy's path; ``hidden``: folders its
    code must not see (the class's submissions, the results)."""
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
                hidden=hidden,
            )  # fmt: skip
            shown = {m: (own or {}).get(m, f"{m}.py") for m in files}
            results = {r.lesson: safe.own_paths(r, directory, shown) for r in grade(request)}
    for ls in lessons:
        if refused and ls.module in refused:
            errors = tuple(
                ExerciseResult(ls.number, e.name, Status.ERROR, error=refused[ls.module])
                for e in ls.exercises
            )
            results[ls.number] = LessonResult(ls.number, str(folder), exercises=errors)
    sandbox = next((r.sandbox for r in results.values() if r.sandbox), "")
    return scoring.submission(
        name, lessons, results, time.perf_counter() - started, rerun_command, sandbox
    )


def write_submission(target: Path, sub: Submission, name: str | None = None) -> None:
    """``results.json`` and ``junit.xml`` in ``target/name`` (default: the submission's
    name), each written in one step over whatever stands there."""
    folder = safe.output_folder(target, name or sub.name)
    safe.write_file(folder / "results.json", json.dumps(scoring.gradescope(sub), indent=2) + "\n")
    safe.write_file(folder / "junit.xml", scoring.junit_xml(sub))


def summary_table(subs: list[Submission]) -> Table:
    table = Table(box=box.SIMPLE_HEAD, title="Class results", title_justify="left")
    table.add_column("submission", no_wrap=True)
    table.add_column("points", justify="right", no_wrap=True)
    table.add_column("passed", justify="right", no_wrap=True)
    table.add_column("not passed")
    for s in subs:
        counts = Counter(r.label for r in s.rows if not r.passed)
        table.add_row(
            Text(s.name), f"{s.score}/{s.max_score}" + (f" +{s.bonus}" if s.bonus else ""),
            f"{sum(r.passed for r in s.rows)}/{len(s.rows)}",
            Text(" · ".join(f"{n} {status}" for status, n in counts.items()), style="red"),
        )  # fmt: skip
    return table
