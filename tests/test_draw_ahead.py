"""A serving worker draws the next grade's examples while it waits (issue 47 §12: a
watch save of lesson 16 spent 0.45-0.51 s of its 1.7 s drawing 11 exercises' fresh
examples). ``course`` chooses the next recorded grade's fresh seed one grade early and
tells the kept worker (``Request.next_seed``); the worker draws with it on a thread
after it has served, by the calls a grade makes, and waits for that thread before
the next grade begins. Each told seed is drawn from once, never again."""

from __future__ import annotations

from pathlib import Path

import pytest

from course.commands.common import make_app
from course.commands.grade import grade as course_grade
from grader import spec as grader_spec
from grader.results import ExerciseResult, LessonResult, Status
from grader.sandbox import worker
from grader.sandbox.protocol import ExerciseGraded, LessonJob, Request
from grader.sandbox.runner import Worker

ROOT = Path(__file__).resolve().parents[1]
L16 = LessonJob(16, "l16_serving", ("kv_cache_bytes", "decode_step"))


def _no_hypothesis(monkeypatch: pytest.MonkeyPatch) -> list:
    """Every fresh draw made from here on, recorded; none is made on a memo hit."""
    made: list = []
    real = grader_spec.hypothesis_draw

    def counted(strategy, n, seed, exclude):
        made.append(seed)
        return real(strategy, n, seed, exclude)

    monkeypatch.setattr(grader_spec, "hypothesis_draw", counted)
    return made


def _plan(state: worker.Warm, seed: int) -> None:
    """What the grade of L16 on ``seed`` draws, with the worker's draws."""
    from grader import engine
    from grader.config import GradeConfig
    from grader.spec import Draws

    config = GradeConfig(draws=Draws(memo=state.drawn), simulated=state.cpu_only)
    engine.draw_ahead(L16.module, L16.exercises, seed, config)


def test_the_next_grades_examples_are_drawn_while_the_worker_waits(monkeypatch):
    state = worker.Warm(worker.Options())
    state.configured = (None, None, None)  # as after its first grade
    told, other = grader_spec.fresh_seed(), grader_spec.fresh_seed()
    state.draw_ahead(Request((L16,), str(ROOT / "solutions"), seed=0, next_seed=told))
    state.drawn_ahead()
    made = _no_hypothesis(monkeypatch)
    _plan(state, told)  # the grade on the told seed: every draw there already
    assert made == []
    _plan(state, other)  # another seed: drawn then, as before
    assert made and set(made) == {other}


def test_nothing_is_drawn_ahead_without_a_next_seed_or_for_one_example(monkeypatch):
    state = worker.Warm(worker.Options())
    state.configured = (None, None, None)
    for request in (Request((L16,), "x", next_seed=None),
                    Request((L16,), "x", example="n=1", next_seed=grader_spec.fresh_seed())):  # fmt: skip
        state.draw_ahead(request)
        assert state._drawing is None
    assert state.drawn == {}


def _home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    (home / "exercises").mkdir(parents=True)
    for stub in (ROOT / "exercises").glob("l[0-9]*.py"):
        (home / "exercises" / stub.name).write_text(stub.read_text())
    return home


def test_each_told_seed_is_drawn_from_once_and_then_a_fresh_one_is_told(tmp_path, monkeypatch):
    """Grades through a kept worker: each recorded grade runs on the seed told with the
    one before, and tells a fresh one; a re-run of one example tells none and uses its
    told seed up, so no seed is ever drawn from twice; a grade without a kept worker
    (``course grade``) tells none."""
    asked: list[Request] = []

    def served(request, on_event, **options):
        asked.append(request)
        er = ExerciseResult(1, "shard_shape", Status.NOT_STARTED)
        on_event(ExerciseGraded(1, er))
        return [LessonResult(1, request.directory, exercises=[er])]

    monkeypatch.setattr("grader.sandbox.runner.grade", served)
    app = make_app(str(_home(tmp_path)), None)
    kept = Worker()
    for _ in range(3):
        course_grade(app, "1.shard_shape", worker=kept)
    first, second, third = asked
    assert first.next_seed == second.seed and second.next_seed == third.seed
    assert third.next_seed == kept.next_seed
    seeds = [r.seed for r in asked] + [third.next_seed]
    assert len(set(seeds)) == 4 and all(s in grader_spec.FRESH_SEEDS for s in seeds)
    course_grade(app, "1.shard_shape", worker=kept, example="mesh=2x4 shape=6x8 spec=y/-")
    assert asked[-1].next_seed is None and kept.next_seed is None
    course_grade(app, "1.shard_shape", worker=kept)
    assert asked[-1].seed not in seeds and asked[-1].next_seed == kept.next_seed
    course_grade(app, "1.shard_shape")  # no kept worker: nothing told
    assert asked[-1].next_seed is None and asked[-1].seed in grader_spec.FRESH_SEEDS
