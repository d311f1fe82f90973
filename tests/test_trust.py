"""The grading worker trusts only the program (issue 19, item 3).

A student's module runs in the student's process and can rewrite that process
on import: what the grader's side over there reads of the program
(``grader.measure.jaxpr.read``), what it answers (``Session.export``), the
failures it reports. Each test here grades a realistic wrong program from the
mistakes catalogue with such a forgery added, through the student's process,
and holds that it gains nothing: the worker reads the program's structure from
the exported StableHLO itself, and whatever that process reports is the
student's error, never an internal grader error. (Against the worker as it was,
reading the summary the student's process sent, the first three forgeries pass
their check: measured when this file was written.)
"""

from __future__ import annotations

import pytest

from grader.results import Status
from grader.sandbox import backends
from tests.mistakes import MISTAKES

FORGE = """

# ---- a forgery of the student's own process (what a hostile module can do)
def _forge():
    from collections import Counter

    import sys

    import grader.measure.jaxpr as J

    S = sys.modules["__main__"]  # the process runs python -m grader.sandbox.student

    state = dict(want="float32")  # the example's dtype: what the forgery says is sent

    def fake():
        want = state["want"]
        {body}

    real_export = S.Session.export
    J.read = lambda jaxpr: fake()

    def export(self, req, part=None):
        state["want"] = S.wire.decode(req["example"]).get("dtype", "float32")

        def forged(k, line):  # each program sent with a forged summary beside it
            part(k, dict(line, program=J.to_wire(fake())))

        return real_export(self, req, forged)

    S.Session.export = export


_forge()
"""

SHARD_MAP = """
        return J.Program(Counter({"shard_map": 1, "dot_general": 1}), (), (),
                         Counter({"float32": 3}), ())"""
"""Says the program holds a shard_map and calls no collective."""

ONE_LOOP = """
        loop = J.Loop("scan", None, 0, Counter({"ppermute": 1, "dot_general": 2}))
        site = J.Site("ppermute", (loop,), ("float32",), ((2, 4),), ("stage",))
        return J.Program(Counter({"shard_map": 1, "scan": 1, "ppermute": 1}), (loop,),
                         (site,), Counter({"float32": 9}), ())"""
"""Says the permutes all sit in one loop."""

BFLOAT16_SENT = """
        sites = tuple(J.Site(k, (), (want,), ((1, 2, 8),), ("expert",))
                      for k in ("all_to_all", "all_to_all", "psum"))
        return J.Program(Counter({"shard_map": 1, "all_to_all": 2, "psum": 1}), (), sites,
                         Counter({"float32": 9}), ())"""
"""Says every collective sends the example's own dtype (and nothing computes in a
16-bit float)."""


def _mistake(mistake_id: str):
    (m,) = [m for m in MISTAKES if m.id == mistake_id]
    return m


def _grade(root, tmp_path, mistake, extra: str):
    source = mistake.source((root / "solutions" / f"{mistake.module}.py").read_text())
    (tmp_path / f"{mistake.module}.py").write_text(source + extra)
    result = backends.grade_lesson(
        int(mistake.module[1:3]), mistake.module, tmp_path, only=[mistake.exercise],
        timeout=120, isolate=True,
    )  # fmt: skip
    (er,) = result.exercises
    return er


@pytest.mark.parametrize(
    "mistake_id, body",
    [
        ("one-liner-leaves-the-plan-to-xla", SHARD_MAP),  # lesson 4: no shard_map
        ("pp-forward-ticks-unrolled-in-python", ONE_LOOP),  # lesson 9: unrolled ticks
        ("allreduce-float32-result-on-bfloat16", BFLOAT16_SENT),  # lesson 4: float32 sent
        ("moe-bfloat16-buffer-sent-as-float32", BFLOAT16_SENT),  # lesson 11: float32 sent
    ],
)
def test_a_forged_program_summary_gains_nothing(root, tmp_path, mistake_id, body):
    mistake = _mistake(mistake_id)
    er = _grade(root, tmp_path, mistake, FORGE.format(body=body))
    assert er.status == Status(mistake.status), (er.status, er.error)
    failed = {c.name: c for c in er.checks if not c.passed}
    assert mistake.check in failed, sorted(failed)
    evidence = f"{failed[mistake.check].message} {failed[mistake.check].hint} {er.hint}"
    for words in mistake.says:
        assert words in evidence, f"{words!r} not in: {evidence}"


FORGED_FAULT = """

# ---- the student's process answers every export with a failure "of the grader's"
def _forge():
    import sys

    S = sys.modules["__main__"]  # the process runs python -m grader.sandbox.student

    def export(self, req, part=None):
        return {answer}

    S.Session.export = export


_forge()
"""


@pytest.mark.parametrize(
    "answer",
    [
        '{"fault": "KeyError: the grader broke (forged)"}',
        '{"raised": {"kind": "fault", "type": "RuntimeError", "called": 0, '
        '"message": "the spec built no program (forged)"}}',
        '{"raised": {"kind": "error", "type": "KeyError", "called": 0, '
        '"message": "before your code ran (forged)"}}',
    ],
    ids=["fault", "raised-fault", "raised-before-the-call"],
)
def test_a_fault_reported_by_the_students_process_is_the_students_error(root, tmp_path, answer):
    mistake = _mistake("one-liner-leaves-the-plan-to-xla")
    er = _grade(root, tmp_path, mistake, FORGED_FAULT.format(answer=answer))
    assert er.status == Status.ERROR, (er.status, er.error)
    assert "internal grader error" not in (er.error or "")
    assert "forged" in er.error and "reported a failure" in er.error
    assert "your code" in (er.hint or "")


def test_a_grader_fault_in_the_worker_stays_a_grader_fault(root, tmp_path, monkeypatch):
    """A StableHLO form the worker's reader does not know is the grader's to fix."""
    from grader.measure import stablehlo

    def refuse(text):
        raise stablehlo.Unrecognised("an op 'stablehlo.frobnicate'")

    monkeypatch.setattr(stablehlo, "read", refuse)
    er = _grade(root, tmp_path, _mistake("one-liner-leaves-the-plan-to-xla"), "")
    assert er.status == Status.FAULT, (er.status, er.error)
    assert "internal grader error" in er.error and "frobnicate" in er.error
