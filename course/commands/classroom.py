"""``course classroom SUBMISSIONS --out RESULTS``: grade a class, one folder per student.

Each submission is graded in its own worker process (``grader.sandbox.runner``) with
the full example set, drawn from one fresh seed for the class, ``--jobs`` of them at
once (:func:`in_parallel`: a thread waits on each worker; the results are those of one
after another), so a submission that crashes or hangs costs its own result only.
Nothing is written to the teacher's progress. Where no sandbox can be made, a class
is graded only from an installation without the references. RESULTS gets
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
import os
import queue
import shutil
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path

from rich import box
from rich.table import Table
from rich.text import Text

from course import scoring
from course import submissions as safe
from course.commands.common import App, UsageProblem, references, unsandboxed
from course.commands.grade import INTERRUPTED, rerun_command
from course.registry import Lesson
from course.scoring import Submission
from grader.results import ExerciseResult, LessonResult, Status
from grader.sandbox.protocol import DEFAULT_TIMEOUT

JOBS = max(1, (os.cpu_count() or 2) // 2)
"""Submissions graded at once by default: about half the cores (each grade's worker and
student's process use one or two)."""


def classroom(
    app: App, submissions: str, out: str, *, lessons: tuple[int, ...] = (), seed: int | None = None,
    timeout: float = DEFAULT_TIMEOUT, devices: int | None = None, cpu: bool = False,
    require_sandbox: bool = False, jobs: int | None = None,
) -> int:  # fmt: skip
    from grader.sandbox import jail
    from grader.spec import fresh_seed

    sandbox = jail.state(app.sandbox)
    if require_sandbox and sandbox != "on":
        raise UsageProblem(f"--require-sandbox: no sandbox here ({sandbox}); nothing graded")
    if sandbox != "on" and (found := references(app.root)):
        raise UsageProblem(unsandboxed(sandbox, found))
    chosen = [app.lesson(n) for n in lessons] if lessons else list(app.course.lessons)
    folders = find_submissions(Path(submissions), chosen)
    if not folders:
        raise UsageProblem(nothing_to_grade(Path(submissions), chosen))
    seed = fresh_seed() if seed is None else seed
    jobs = max(1, min(jobs or JOBS, len(folders)))
    target = Path(out)
    target.mkdir(parents=True, exist_ok=True)
    cache = target / ".cache" / "jax"  # the reference programs compile once for the class
    outputs = safe.output_names([name for name, _ in folders])
    app.console.print(
        Text(
            f"Grading {len(folders)} submission(s) from {submissions} into {target}"
            f" · seed {seed} · {jobs} at once · sandbox: {sandbox}"
        )
    )
    private = safe.private_root()
    # what the submissions' code must not see: the class, the results, the teacher's home,
    # and every private copy (each submission's own is put back for it alone), wherever
    # TMPDIR puts them: under /tmp the sandbox's own /tmp covers them anyway
    hidden = (str(Path(submissions).resolve()), str(target.resolve()), str(Path.home()),
              str(private.resolve()))  # fmt: skip
    graded: dict[int, Submission] = {}
    try:
        staged = []  # every submission copied before any is graded: none can change another's
        for i, (name, folder) in enumerate(folders):
            found = locate_all(folder, chosen, whole=len(folders) == 1)
            staged.append((name, safe.stage(private, i, found.files), found))

        def one(i: int, stop: threading.Event) -> Submission:
            name, directory, found = staged[i]
            sub = grade_submission(safe.printable(name), directory, chosen, seed=seed,
                                   timeout=timeout, devices=devices, cpu=cpu, cache_dir=cache,
                                   refused=found.refused, own=found.own, hidden=hidden,
                                   stop=stop, debug=app.debug)  # fmt: skip
            return with_found(sub, found)

        with app.console.status(Text(f"grading {len(folders)} submission(s) …")) as status:
            for i, sub in in_parallel(one, len(staged), jobs):
                graded[i] = sub
                name = folders[i][0]
                shown = safe.printable(name)
                where = f" (results in {outputs[name]}/)" if outputs[name] != shown else ""
                app.console.print(
                    Text(
                        f"  {shown}: {sub.score}/{sub.max_score} points ({sub.duration:.1f} s){where}"
                    )
                )
                status.update(Text(f"graded {len(graded)} of {len(folders)} …"))
    except KeyboardInterrupt:
        app.console.print(
            "\n[yellow]Interrupted.[/yellow] The submissions graded so far are written."
        )
        return INTERRUPTED
    finally:  # by this process alone, once grading is over, over whatever stands there
        shutil.rmtree(private, ignore_errors=True)
        done = [(folders[i][0], graded[i]) for i in sorted(graded)]
        for i in sorted(graded):
            name = folders[i][0]
            write_submission(target, graded[i], outputs[name], seed=seed,
                             notes=taken(staged[i][2], chosen))  # fmt: skip
        safe.write_file(target / "summary.csv", scoring.summary_csv([s for _, s in done]))
    app.console.print(summary_table([graded[i] for i in sorted(graded)]))
    app.console.print(
        f"Written: {target / 'summary.csv'}, and per submission results.json, junit.xml"
    )
    return 0


class Cancelled(Exception):
    """Grading was stopped (Ctrl-C) while this submission's grade ran."""


def in_parallel(
    grade_one: Callable[[int, threading.Event], Submission], n: int, jobs: int
) -> Iterator[tuple[int, Submission]]:
    """``grade_one(i, stop)`` for i in 0..n-1, ``jobs`` at a time, each in a thread of
    its own (a grade is a worker process: the thread only waits on it); yields (i, the
    submission) as each finishes. On Ctrl-C (or the caller leaving early) ``stop`` is set,
    which ends each grade still running at its next event; the threads are daemons, and
    their workers leave with this process (``grader.sandbox.lifeline.watch_parent``)."""
    todo: queue.Queue[int] = queue.Queue()
    for i in range(n):
        todo.put(i)
    done: queue.Queue[tuple[int, Submission | BaseException]] = queue.Queue()
    stop = threading.Event()

    def work() -> None:
        while not stop.is_set():
            try:
                i = todo.get_nowait()
            except queue.Empty:
                return
            try:
                done.put((i, grade_one(i, stop)))
            except BaseException as exc:  # noqa: BLE001 — handed to the caller to raise
                done.put((i, exc))

    threads = [threading.Thread(target=work, daemon=True, name=f"grade-{k}") for k in range(jobs)]
    for t in threads:
        t.start()
    try:
        for _ in range(n):
            while True:
                try:
                    i, result = done.get(timeout=0.2)  # short waits: Ctrl-C is seen at once
                    break
                except queue.Empty:
                    continue
            if isinstance(result, BaseException):
                raise result
            yield i, result
    finally:
        stop.set()


def find_submissions(folder: Path, lessons: list[Lesson]) -> list[tuple[str, Path]]:
    """(name, folder) of each submission: every sub-folder, or ``folder`` itself when
    it holds a lesson file (one submission, as Gradescope lays it out)."""
    if any(safe.lesson_file(folder, lesson.module, deep=False) for lesson in lessons):
        return [(folder.resolve().name, folder)]
    return sorted(
        (d.name, d) for d in folder.iterdir() if d.is_dir() and not d.name.startswith((".", "__"))
    )


def nothing_to_grade(folder: Path, lessons: list[Lesson]) -> str:
    """Why ``course classroom`` grades nothing in ``folder``, with the near misses."""
    modules = [ls.module for ls in lessons]
    misses = [
        m for module in modules for m in safe.near_misses(folder, module, others=frozenset(modules))
    ]
    expected = ", ".join(f"{m}.py" for m in modules[:3]) + (" …" if len(modules) > 3 else "")
    said = (
        f"; found {', '.join(dict.fromkeys(misses))}, which is not named as graded"
        if misses
        else ""
    )
    return (
        f"no submission in {safe.printable(str(folder))}: nothing graded. Give a folder with one "
        f"sub-folder per student (or one student's files), holding {expected}{said}"
    )


@dataclass(frozen=True)
class Found:
    """What one submission handed in, as found before it is copied and graded."""

    files: dict[str, Path]
    """Module → the file to grade."""
    refused: dict[str, str]
    """Module → why its file is not graded (a link that leaves the submission …)."""
    own: dict[str, str]
    """Module → its file's path inside the submission, printable (what messages name)."""
    misses: dict[str, list[str]]
    """Module not handed in → files that look meant for it (:func:`safe.near_misses`)."""


def locate_all(folder: Path, lessons: list[Lesson], *, whole: bool = False) -> Found:
    """Every lesson's file in ``folder``, what is refused, and the near misses."""
    files, refused = submission_files(folder, lessons, whole=whole)
    own = {m: safe.printable(str(f.relative_to(folder))) for m, f in files.items()}
    for ls in lessons:  # a refused file is named by its own path too
        if ls.module in refused and (f := safe.lesson_file(folder, ls.module)) is not None:
            own[ls.module] = safe.printable(str(f.relative_to(folder)))
    others = frozenset(ls.module for ls in lessons)
    misses = {
        ls.module: safe.near_misses(folder, ls.module, others=others)
        for ls in lessons if ls.module not in files and ls.module not in refused
    }  # fmt: skip
    return Found(files, refused, own, {m: v for m, v in misses.items() if v})


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
        f = safe.lesson_file(folder, ls.module)
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
    """The file to grade for ``module`` in a private copy (``<module>.py`` at its top)."""
    return safe.lesson_file(folder, module, deep=deep)


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
    stop: threading.Event | None = None, debug: bool = False,
) -> Submission:  # fmt: skip
    """Grade one submission in its own worker; lessons it lacks are ``not submitted``;
    ``refused`` (module → why) are errors with that message, not graded. ``folder`` is
    a private copy: messages name each file by ``own`` (module → its path in the
    submission; default, its name), never by the copy's path; ``hidden``: folders its
    code must not see (the class's submissions, the results); ``stop``, once set, ends
    the grade at its next event (:class:`Cancelled`); ``debug``: the worker's stderr
    shown as it comes."""
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

            def stopped(_event: object) -> None:
                if stop is not None and stop.is_set():
                    raise Cancelled(name)

            results = {
                r.lesson: safe.own_paths(r, directory, shown)
                for r in grade(request, stopped, debug=debug)
            }
    for ls in lessons:
        if refused and ls.module in refused:
            errors = tuple(
                ExerciseResult(ls.number, e.name, Status.ERROR, error=refused[ls.module])
                for e in ls.exercises
            )
            results[ls.number] = LessonResult(ls.number, str(folder), exercises=errors)
    sandbox = next((r.sandbox for r in results.values() if r.sandbox), "")
    sub = scoring.submission(
        name, lessons, results, time.perf_counter() - started, rerun_command, sandbox
    )
    graded = {er.exercise: er for r in results.values() for er in r.exercises}
    return replace(sub, rows=tuple(
        replace(row, output=feedback(er, rerun_command))
        if (er := graded.get(row.exercise)) is not None and row.status is not None
        and not (refused and row.module in refused) else row
        for row in sub.rows
    ))  # fmt: skip


def feedback(er: ExerciseResult, rerun: Callable[[ExerciseResult], str]) -> str:
    """What a student reads about one exercise in ``results.json`` and ``junit.xml``: the
    one-line headline once, then what the terminal's panel shows — every failed check's
    words (the first's first line is the headline's), the pictures (which devices hold
    wrong values, the collectives and bytes, memory …) as text, the error, the example,
    what to run, a hint."""
    if er.passed:
        return scoring.feedback(er, rerun)
    lines = [scoring.headline(er)]
    whole = scoring.headline(er, whole=True)
    if whole != lines[0]:  # cut to a CI screen's one line: the rest of it follows, once
        lines.append("… " + whole[len(lines[0]) - 2 :].strip())
    failed = [c for c in er.checks if not c.passed]
    for i, c in enumerate(failed):
        said = c.message.splitlines() or [""]
        if i == 0 and said[0] and said[0] in whole:
            said = said[1:]  # the headline says it
        elif said:
            said[0] = f"{c.name}: {said[0]}"
        lines += said
    pictures = evidence_text([x for c in failed for x in c.evidence] + list(er.explanation), er)
    if pictures:
        lines.append(pictures)
    return "\n".join(lines + scoring.feedback_tail(er, rerun, whole))


TEXT_WIDTH = 100
"""Columns the pictures are drawn in for results.json and junit.xml (Gradescope shows
them in a fixed-width block)."""


def evidence_text(items: list, er: ExerciseResult) -> str:
    """The evidence ``items`` drawn as the terminal draws them, as plain text (no colour);
    empty when there is nothing to draw (or drawing fails: the words are still there)."""
    if not items:
        return ""
    import io

    from rich.console import Console

    from grader.report import draw_all

    try:
        drawn = draw_all(items, er)
        if not drawn:
            return ""
        console = Console(file=io.StringIO(), width=TEXT_WIDTH, color_system=None,
                          emoji=False, highlight=False, record=True)  # fmt: skip
        console.print(*drawn, crop=False)
        return "\n".join(line.rstrip() for line in console.export_text().splitlines()).strip("\n")
    except Exception:  # noqa: BLE001 — a picture never costs the results
        return ""


def taken(found: Found, lessons: list[Lesson]) -> tuple[str, ...]:
    """A line per lesson whose file was not simply ``<module>.py`` at the top: the file
    that was graded for it (``homework-1/l01_meshes (1).py``)."""
    return tuple(
        f"lesson {ls.number}: graded {found.own[ls.module]} as {ls.module}.py"
        for ls in lessons
        if ls.module in found.files and found.own[ls.module] != f"{ls.module}.py"
    )


def with_found(sub: Submission, found: Found) -> Submission:
    """A lesson not handed in names the files that look meant for it."""
    return replace(sub, rows=tuple(
        replace(row, output=f"{row.output}; found {', '.join(found.misses[row.module])}, "
                f"which is not graded: name the file {row.module}.py")
        if row.status is None and row.module in found.misses else row
        for row in sub.rows
    ))  # fmt: skip


def write_submission(
    target: Path, sub: Submission, name: str | None = None, *, seed: int | None = None,
    notes: tuple[str, ...] = (),
) -> None:  # fmt: skip
    """``results.json`` and ``junit.xml`` in ``target/name`` (default: the submission's
    name), each written in one step over whatever stands there."""
    folder = safe.output_folder(target, name or sub.name)
    document = gradescope(sub, seed, notes)
    safe.write_file(folder / "results.json", json.dumps(document, indent=2) + "\n")
    safe.write_file(folder / "junit.xml", scoring.junit_xml(sub))


def gradescope(sub: Submission, seed: int | None = None, notes: tuple[str, ...] = ()) -> dict:
    """Gradescope's ``results.json`` (``scoring.gradescope``), its ``output`` saying the
    seed the examples were drawn from and ``notes`` (the files taken …)."""
    doc = scoring.gradescope(sub)
    said = [doc["output"] + (f" · seed {seed}" if seed is not None else ""), *notes]
    doc["output"] = "\n".join(said)
    return doc


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
