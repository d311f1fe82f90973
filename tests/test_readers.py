"""The grader's StableHLO reader (jaxlib's MLIR bindings) and the first one (regular
expressions, kept as an oracle in ``tests/stablehlo_text.py``) read every program of
the course the same: each solution's and each catalogued mistake's (``tests/mistakes``).

The programs are gathered once for this module (:func:`tests.programs.gather`: every
lesson graded in this process on its explicit examples, each program exported as the
student's process exports it); that grading is the cost of this file. Lesson 13's
programs, exported by the processes of a cluster, are those the worker read making the
run's own grades of its solution and of each of its catalogued mistakes
(:func:`tests.grades.read_in`): the grades ``test_engine``, ``test_isolation`` and
``test_mistakes`` read, made once a run (once a worker under pytest-xdist; forming every cluster again here cost some 45 s
a leg, issue 44 §3).
"""

from __future__ import annotations

import pytest

from grader.measure import jaxpr, stablehlo
from tests import grades, stablehlo_text
from tests.mistakes import collect
from tests.programs import Recorded, gather


@pytest.fixture(scope="module")
def programs() -> list[Recorded]:
    from course import registry

    lessons = registry.load().lessons
    found = gather({lesson.number for lesson in lessons} - grades.RECORDED)
    for lesson in (lesson for lesson in lessons if lesson.number in grades.RECORDED):
        module = lesson.module
        found += [Recorded(f"{module} (exported)", text)
                  for text in grades.read_in(grades.solution(lesson.number, module))]  # fmt: skip
        for m in (m for m in collect() if m.module == module):
            found += [Recorded(f"{m.id} (exported)", text)
                      for text in grades.read_in(grades.mistake(m))]  # fmt: skip
    return found


def reading(p: jaxpr.Program) -> dict:
    """Everything a reader returns (a loop's body counts included)."""
    return {
        "counts": dict(p.counts),
        "dtypes": dict(p.dtypes),
        "loops": [(lp.primitive, lp.length, lp.depth, dict(lp.inside)) for lp in p.loops],
        "collectives": [
            (s.primitive, s.dtypes, s.shapes, s.axes, [lp.length for lp in s.loops])
            for s in p.collectives
        ],
        "dots": list(p.dots),
        "computed": dict(p.computed),
    }


def test_both_readers_read_every_program_the_same(programs: list[Recorded]) -> None:
    differ = []
    for r in programs:
        ours, theirs = reading(stablehlo.read(r.text)), reading(stablehlo_text.read(r.text))
        if ours != theirs:
            fields = [k for k in ours if ours[k] != theirs[k]]
            differ.append(f"{r.label}: {fields}")
    assert not differ, f"{len(differ)} of {len(programs)} programs read differently: {differ[:5]}"


def test_a_program_reads_the_same_from_its_export_as_from_its_text(
    programs: list[Recorded],
) -> None:
    """The worker reads the exported program's module without printing it
    (:func:`grader.exported.read_exported`): the same as its printed text reads."""
    from grader.exported import read_exported

    exported = [r for r in programs if r.exported is not None]
    assert len(exported) > 0.9 * len(programs)
    for r in exported:
        got, printed = read_exported(r.exported), stablehlo.parse(r.text)
        assert reading(got.program) == reading(stablehlo.read(printed)), r.label
        assert (
            got.calls == stablehlo.custom_calls(printed) == stablehlo_text.calls_in_text(r.text)
        ), r.label


def test_the_programs_are_every_lesson_and_mistake_and_hold_what_checks_read(
    programs: list[Recorded],
) -> None:
    """Not a vacuous comparison: every lesson that compiles programs and most mistakes
    are there, with loops of known length, collectives in loops, every collective
    kind, bfloat16 and remat."""
    labels = {r.label.removesuffix(" (exported)") for r in programs}
    lessons = {f"l{n:02d}" for n in (2, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 15)}
    assert lessons <= {label[:3] for label in labels if label[:1] == "l" and label[3] == "_"}
    mistakes = {m.id for m in collect()}
    assert len(mistakes & labels) > 0.5 * len(mistakes)
    read = [stablehlo.read(r.text) for r in programs]
    assert any(lp.length and lp.length > 1 for p in read for lp in p.loops)
    assert any(s.loops for p in read for s in p.collectives)
    kinds = {s.primitive for p in read for s in p.collectives}
    assert {"psum", "all_gather", "reduce_scatter", "ppermute", "all_to_all"} <= kinds
    assert any(p.dtypes["bfloat16"] for p in read)
    assert any(p.counts["checkpoint"] for p in read)
