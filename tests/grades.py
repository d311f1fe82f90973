"""Grades the tests of one run share: each graded once a process, on first use (issue 44 §3).

Several tests read the same grade: every solution's (``test_engine`` checks that it passed
in the student's process with nothing narrowed, ``test_readers`` reads lesson 13's
programs), and every catalogued mistake's (``test_mistakes`` checks its words, the lesson
files read more of its checks). Each such grade is made by the first test that asks for it, whichever
that is, and kept for the rest of the run: no test's pass depends on another having run
first, and a test run alone grades what it needs. Under pytest-xdist each worker keeps its
own (the README's ``-n 2``: a grade two workers both need is made twice).

A grade is kept under what was graded: the lesson, its module, the text of every Python
file in the folder graded, the seed, where the student's code ran (``mode``) and every
other option. ``isolated``: the student's code in a process of its own (the OS sandbox
around it where there is one: :mod:`tests.sandboxed`), on data from a fresh secret salt
(each salt draws data as valid as any other), or from ``salt`` when given; ``here``: in
this process, on the seed's own data. Results are frozen dataclasses: a test cannot
change what another reads.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from grader.config import GradeConfig
from grader.results import LessonResult
from grader.sandbox import backends
from grader.spec import LESSONS, Draws
from tests.mistakes import MISTAKES

ROOT = Path(__file__).resolve().parent.parent

_KEPT: dict[tuple, LessonResult] = {}
_READ: dict[int, tuple[str, ...]] = {}
"""The text of every program the worker read while making a kept grade of a lesson in
:data:`RECORDED`, by the grade's ``id`` (kept grades live for the run)."""

RECORDED = {13}
"""Lessons whose programs come to the worker exported by the student's processes (lesson
13's clusters): ``tests/test_readers.py`` reads them from the run's grades
(:func:`read_in`) instead of forming every cluster again."""

MODES = ("here", "isolated")

DRAWS = Draws()
"""The run's drawn examples, shared by every kept grade: an exercise's draw for a seed is
made once a run (hypothesis, about 0.15 s a grade), as a serving worker's memo makes it
once for its grades (:class:`grader.spec.Draws`; ``tests/test_kept_draws.py`` holds a
kept draw equal to hypothesis's)."""


def _sources(directory: Path) -> str:
    """A digest of the text of every Python file of ``directory`` (what the lesson may import)."""
    digest = hashlib.sha256()
    for path in sorted(Path(directory).glob("*.py")):
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def grade(
    lesson: int, module: str, directory: Path, *, mode: str = "here", salt: int | None = None,
    **options: Any,
) -> LessonResult:  # fmt: skip
    """:func:`grader.sandbox.backends.grade_lesson`, kept for the run under what was graded."""
    if mode not in MODES:
        raise ValueError(f"mode {mode!r}: one of {', '.join(MODES)}")
    frozen = tuple(sorted((k, tuple(v) if isinstance(v, list) else v) for k, v in options.items()))
    key = (lesson, module, _sources(directory), mode, salt, frozen)
    if key not in _KEPT:
        lessons = options.get("lessons", LESSONS)
        if mode == "isolated":
            backend = backends.isolated(salt, lessons=lessons)
        else:
            backend = backends.here(salt or 0, lessons=lessons)
        config = GradeConfig(draws=DRAWS)
        with _reading(lesson in RECORDED) as texts:
            result = backends.grade_lesson(lesson, module, directory, backend=backend,
                                           config=config, **options)  # fmt: skip
        _KEPT[key] = result
        _READ[id(result)] = tuple(texts)
    return _KEPT[key]


@contextlib.contextmanager
def _reading(record: bool) -> Iterator[list[str]]:
    """The text of every program the worker reads (:func:`grader.measure.stablehlo.read`,
    which every exported program goes through) while the block runs, where ``record``."""
    from grader.measure import stablehlo

    texts: list[str] = []
    if not record:
        yield texts
        return
    read = stablehlo.read

    def reading(program: Any) -> Any:
        texts.append(str(program))
        return read(program)

    stablehlo.read = reading  # type: ignore[assignment]
    try:
        yield texts
    finally:
        stablehlo.read = read  # type: ignore[assignment]


def read_in(result: LessonResult) -> tuple[str, ...]:
    """The programs the worker read making ``result``, a kept grade of a lesson in
    :data:`RECORDED` (empty for any other)."""
    return _READ.get(id(result), ())


SECRET_SALT = 0x5EC12E7
"""The data of the solutions' shared grade, drawn as the grading process draws it: from a
salt of its own."""


def solution(lesson: int, module: str) -> LessonResult:
    """The run's grade of lesson ``lesson``'s reference solution (``solutions/``): every
    exercise, the default seed, in the student's process on data from :data:`SECRET_SALT`,
    two minutes an example at most (``test_engine`` and ``test_readers`` read it)."""
    return grade(lesson, module, ROOT / "solutions", mode="isolated", salt=SECRET_SALT,
                 timeout=120)  # fmt: skip


SAMPLE = list(
    dict.fromkeys(
        [
            *{
                (m.module, m.exercise): m for m in reversed(MISTAKES)
            }.values(),  # each exercise's first
            *(m for m in MISTAKES if m.module == "l01_meshes"),  # plain and eager calls, every one
        ]
    )
)
"""Mistakes graded through the student's process in every run, one per exercise at least
(82 of 383): the real grading path (one export run per example, the programs replayed in
the worker) gives each its words. The rest are graded in this process: the student's
process costs about 3.4 times as much a mistake (lesson 6 and 7's 52: 388 s against 114 s
at load 11-19), the whole catalogue there some 47 minutes on two cores."""

ISOLATE_ALL = os.environ.get("COURSE_TEST_ISOLATE") == "1"
"""``COURSE_TEST_ISOLATE=1``: the whole catalogue through the student's process, as
``course grade`` grades (slower)."""


def mistake_mode(m: Any) -> str:
    """Where catalogued mistake ``m`` is graded in this run: :data:`SAMPLE` (and every
    mistake with ``COURSE_TEST_ISOLATE=1``) in the student's process, the rest here."""
    return "isolated" if ISOLATE_ALL or m in _SAMPLED else "here"


_SAMPLED = set(SAMPLE)


def mistake(
    m: Any, *, mode: str | None = None, root: Path | None = None, **options: Any
) -> LessonResult:
    """The grade of catalogued mistake ``m`` (``tests/mistakes``): its exercise only, a
    minute a example at most, as :func:`tests.test_mistakes.assert_caught` grades it.
    ``root``: the course whose solution the mistake edits (``course dev check``'s; by
    default this checkout)."""
    folder = Path(tempfile.mkdtemp(prefix=f"course-mistake-{m.id}-"))
    try:
        text = m.source(((root or ROOT) / "solutions" / f"{m.module}.py").read_text())
        (folder / f"{m.module}.py").write_text(text)
        return grade(int(m.module[1:3]), m.module, folder, mode=mode or mistake_mode(m),
                     only=[m.exercise], timeout=60, **options)  # fmt: skip
    finally:
        shutil.rmtree(folder, ignore_errors=True)
