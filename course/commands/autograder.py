"""``course autograder OUT.zip``: a Gradescope autograder, ready to upload; and the
entry its ``run_autograder`` calls in the container (``python -m course.commands.autograder``).

The zip holds ``setup.sh`` and ``run_autograder`` (``course/autograder/``, with the
lessons and options filled in) and a wheel of the course built here **without the
reference solutions** (:func:`wheel`): the students' code runs in the container with
the course's rights, so no reference may be readable there, sandbox or not.

In the container (``AUTOGRADER_ROOT``, default ``/autograder``): the student's files
are in ``submission/``, in any layout — at the top, in a folder
(``homework-1/l01_meshes.py``), renamed by a browser (``l01_meshes (1).py``) — and
:func:`run` always writes ``results/results.json``: the grade, with the file taken for
each lesson and the seed drawn; or, when nothing gradable was uploaded, what was
expected and what was found; or why nothing was graded (no sandbox with references
installed; the grader's own failure).
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import io
import json
import os
import shlex
import shutil
import sys
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path

import click

from course import scoring
from course import submissions as safe
from course.commands.classroom import (
    grade_submission,
    gradescope,
    locate_all,
    taken,
    with_found,
)
from course.commands.common import App, UsageProblem, references, unsandboxed
from course.commands.grade import rerun_command
from course.registry import Lesson
from grader.config import Sandbox
from grader.sandbox.protocol import DEFAULT_TIMEOUT

TEMPLATES = Path(__file__).resolve().parent.parent / "autograder"
"""``setup.sh`` and ``run_autograder`` as written into the zip (``@OPTIONS@`` filled in)."""
DEFAULT_ROOT = "/autograder"
"""Where Gradescope puts the autograder, the submission and the results."""
EPOCH = (1980, 1, 1, 0, 0, 0)
"""Every zip entry's time: the same course gives the same bytes."""


# ------------------------------------------------------------ building the zip


def autograder(
    app: App, out: str, *, lessons: tuple[int, ...] = (), timeout: float = DEFAULT_TIMEOUT,
    devices: int | None = None,
) -> int:  # fmt: skip
    """Write the autograder zip ``out`` for ``lessons`` (default: every lesson)."""
    chosen = [app.lesson(n) for n in lessons] if lessons else list(app.course.lessons)
    target = Path(out)
    if target.suffix != ".zip":
        raise UsageProblem(f"{out}: the autograder is a .zip file (Gradescope takes a zip)")
    options = [a for ls in chosen for a in ("--lesson", str(ls.number))]
    if timeout != DEFAULT_TIMEOUT:
        options += ["--timeout", f"{timeout:g}"]
    if devices is not None:
        options += ["--devices", str(devices)]
    name, data = wheel(app.root)
    staged = target.with_name(f".{target.name}.tmp")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        with zipfile.ZipFile(staged, "w", zipfile.ZIP_DEFLATED) as z:
            _add(z, "setup.sh", (TEMPLATES / "setup.sh").read_bytes(), executable=True)
            script = (TEMPLATES / "run_autograder").read_text()
            script = script.replace("@OPTIONS@", " ".join(shlex.quote(o) for o in options))
            _add(z, "run_autograder", script.encode(), executable=True)
            _add(z, name, data)
        os.replace(staged, target)
    except OSError as exc:  # a folder that cannot be made or written, a full disk: one line
        if staged.parent.is_dir():
            staged.unlink(missing_ok=True)
        where = f" ({exc.filename})" if exc.filename not in (None, str(target), str(staged)) else ""
        raise click.ClickException(
            f"cannot write {out}: {exc.strerror or exc}{where}; nothing was written"
        ) from None
    numbers = ", ".join(str(ls.number) for ls in chosen)
    app.console.print(
        f"Written {target}: setup.sh, run_autograder and {name} (the course without its "
        f"reference solutions), grading lesson{'s' if len(chosen) > 1 else ''} {numbers}.\n"
        "Upload it as a Gradescope programming assignment's autograder (docs/classroom.md).",
        soft_wrap=True,
    )
    return 0


def _add(z: zipfile.ZipFile, name: str, data: bytes, *, executable: bool = False) -> None:
    info = zipfile.ZipInfo(name, EPOCH)
    info.external_attr = (0o100755 if executable else 0o100644) << 16
    info.compress_type = zipfile.ZIP_DEFLATED
    z.writestr(info, data)


def _sources(root: Path | None = None) -> Iterator[tuple[str, Path]]:
    """(path in the wheel, file) of everything the course runs on: its packages with
    their data (lesson texts, ``course.toml``, these templates) and the stubs as
    ``course/exercises``; never a reference solution, compiled file or cache."""
    import course
    import grader
    import tinymodels
    from grader.repo import shipped

    for package in (course, grader, tinymodels):
        top = Path(package.__file__).resolve().parent
        for f in sorted(top.rglob("*")):
            rel = f.relative_to(top.parent)
            if not f.is_file() or "__pycache__" in rel.parts or f.suffix in (".pyc", ".pyo"):
                continue
            if rel.parts[:2] in (("course", "solutions"), ("course", "exercises")):
                continue  # references never; stubs from where the course keeps them, below
            yield rel.as_posix(), f
    for f in sorted((shipped(root) if root else shipped()).stubs.glob("*.py")):
        yield f"course/exercises/{f.name}", f


def wheel(root: Path | None = None) -> tuple[str, bytes]:
    """The course as a wheel (its file name and bytes), built without the reference
    solutions: a pure-Python wheel is a zip with a ``.dist-info`` (PEP 427), written here
    without setuptools, so that it builds in a second from a checkout or an installation.
    ``root``: the course's checkout whose stubs it holds (:func:`grader.repo.root`)."""
    from importlib import metadata

    dist = metadata.distribution("scaling-course")
    version = dist.version
    base = f"scaling_course-{version}"
    info = f"{base}.dist-info"
    requires = [r for r in (dist.requires or []) if "extra ==" not in r]
    meta = [
        "Metadata-Version: 2.1", "Name: scaling-course", f"Version: {version}",
        "Summary: The scaling course, built by `course autograder` without its reference solutions.",
        f"Requires-Python: {dist.metadata.get('Requires-Python') or '>=3.11'}",
        *(f"Requires-Dist: {r}" for r in requires),
    ]  # fmt: skip
    files: list[tuple[str, bytes]] = [(rel, f.read_bytes()) for rel, f in _sources(root)]
    files += [
        (f"{info}/METADATA", ("\n".join(meta) + "\n").encode()),
        (
            f"{info}/WHEEL",
            b"Wheel-Version: 1.0\nGenerator: course autograder\n"
            b"Root-Is-Purelib: true\nTag: py3-none-any\n",
        ),  # fmt: skip
        (f"{info}/entry_points.txt", b"[console_scripts]\ncourse = course.cli:main\n"),
    ]
    record = [f"{rel},sha256={_digest(data)},{len(data)}" for rel, data in files]
    files.append((f"{info}/RECORD", ("\n".join([*record, f"{info}/RECORD,,"]) + "\n").encode()))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        for rel, data in files:
            _add(z, rel, data)
    return f"{base}-py3-none-any.whl", out.getvalue()


def _digest(data: bytes) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


# ------------------------------------------------------------ in the container


def run(
    root: Path, lessons: list[Lesson], *, timeout: float = DEFAULT_TIMEOUT,
    devices: int | None = None, seed: int | None = None, debug: bool = False,
    sandbox: Sandbox = Sandbox(),  # noqa: B008 — frozen
) -> int:  # fmt: skip
    """Grade ``root/submission`` and write ``root/results/results.json``, whatever
    happens; the exit status is 0 once it is written with a grade, 1 otherwise.
    ``debug``: the worker's stderr shown as it comes; ``sandbox``: its settings
    (read in :func:`main`; the worker reads its own, from the same environment)."""
    from grader.sandbox import jail
    from grader.spec import fresh_seed

    results = root / "results" / "results.json"
    results.parent.mkdir(parents=True, exist_ok=True)
    submission = root / "submission"
    started = time.perf_counter()
    max_score = sum(e.points for ls in lessons for e in ls.required)
    if (said := jail.state(sandbox)) != "on" and (found := references()):
        _write(results, _message(unsandboxed(said, found), max_score))
        print(f"refused: {unsandboxed(said, found)}", file=sys.stderr)
        return 1
    seed = fresh_seed() if seed is None else seed
    private = safe.private_root()
    try:
        found = locate_all(submission, lessons, whole=True) if submission.is_dir() else None
        if found is None or not (found.files or found.refused):
            sub = scoring.submission("submission", lessons, {}, 0.0, rerun_command)
            if found is not None:
                sub = with_found(sub, found)
            document = gradescope(sub)
            document["output"] = nothing_gradable(submission, lessons)
            _write(results, document)
            print(document["output"])
            return 0
        directory = safe.stage(private, 0, found.files)
        hidden = (str(submission.resolve()), str(results.parent.resolve()), str(Path.home()),
                  str(private.resolve()))  # fmt: skip
        sub = grade_submission("submission", directory, lessons, seed=seed, timeout=timeout,
                               devices=devices, cpu=True, cache_dir=private / "cache",
                               refused=found.refused, own=found.own, hidden=hidden,
                               debug=debug)  # fmt: skip
        sub = with_found(sub, found)
        document = gradescope(sub, seed, taken(found, lessons))
        document["execution_time"] = round(time.perf_counter() - started, 3)
        _write(results, document)
        print(document["output"])
        return 0
    except Exception as exc:  # noqa: BLE001 — Gradescope gets a results.json in any case
        _write(results, _message(
            f"The autograder itself failed, not your code: {type(exc).__name__}: {exc}. "
            "Please tell your teacher.", max_score))  # fmt: skip
        raise
    finally:
        shutil.rmtree(private, ignore_errors=True)


ARCHIVES = (".zip", ".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tar.xz", ".7z", ".rar", ".gz")
"""Names of an archive uploaded whole: the advice is to upload what it holds."""


def nothing_gradable(submission: Path, lessons: list[Lesson]) -> str:
    """What ``results.json`` says when no lesson file was uploaded: what was expected,
    and what was there (near misses first)."""
    expected = ", ".join(f"{ls.module}.py (lesson {ls.number})" for ls in lessons)
    uploaded = []
    if submission.is_dir():
        uploaded = [
            safe.printable(str(p.relative_to(submission)))
            for p in sorted(submission.rglob("*"))
            if p.is_file() and "__MACOSX" not in p.parts
        ]
    modules = frozenset(ls.module for ls in lessons)
    misses = list(dict.fromkeys(
        m for ls in lessons for m in safe.near_misses(submission, ls.module, others=modules)
    )) if submission.is_dir() else []  # fmt: skip
    lines = [f"Nothing gradable was uploaded: this assignment grades {expected}."]
    if misses:
        lines.append(
            f"Found {', '.join(misses)}: rename it to the lesson's file name and upload again."
        )
    archives = [name for name in uploaded if name.lower().endswith(ARCHIVES)]
    if archives:
        what = "is an archive" if len(archives) == 1 else "are archives"
        lines.append(
            f"{', '.join(archives[:3])} {what}, and an archive is not unpacked here: unpack "
            "it on your computer and upload the lesson's .py file itself."
        )
    if uploaded:
        shown = uploaded[:10] + ([f"… {len(uploaded) - 10} more"] if len(uploaded) > 10 else [])
        lines.append(f"Uploaded: {', '.join(shown)}.")
    else:
        lines.append("No file was uploaded.")
    return "\n".join(lines)


def _message(text: str, max_score: int) -> dict:
    return {"score": 0, "max_score": max_score, "output": text, "visibility": "visible",
            "stdout_visibility": "hidden", "tests": []}  # fmt: skip


def _write(path: Path, document: dict) -> None:
    safe.write_file(path, json.dumps(document, indent=2) + "\n")


def main(argv: list[str] | None = None) -> int:
    """``run_autograder``'s entry: options as ``course autograder`` wrote them;
    ``AUTOGRADER_ROOT`` (default ``/autograder``) read here, at the edge.
    ``--check``: exit 1 when this installation holds reference solutions (``setup.sh``)."""
    parser = argparse.ArgumentParser(prog="python -m course.commands.autograder")
    parser.add_argument("--lesson", type=int, action="append", default=[])
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT)
    parser.add_argument("--devices", type=int)
    parser.add_argument("--seed", type=int)
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args(argv)
    if args.check:
        found = references()
        if found:
            print(
                f"this installation holds reference solutions: {', '.join(found)}", file=sys.stderr
            )
            return 1
        print("no reference solution in this installation")
        return 0
    from course import registry

    course = registry.load()
    lessons = [course.lesson(n) for n in args.lesson] if args.lesson else list(course.lessons)
    root = Path(os.environ.get("AUTOGRADER_ROOT") or DEFAULT_ROOT)
    debug = os.environ.get("COURSE_DEBUG") == "1"
    return run(root, lessons, timeout=args.timeout, devices=args.devices, seed=args.seed,
               debug=debug, sandbox=Sandbox.from_environment(os.environ))  # fmt: skip


if __name__ == "__main__":
    sys.exit(main())
