"""Drawn examples are kept (issue 22 §2): a kept draw is the one hypothesis makes."""

from __future__ import annotations

import pytest

from course import registry
from grader import spec as specs
from grader.engine import examples_for, load_spec
from grader.spec import FULL, Context

LESSONS = [(le.module, ex) for le in registry.load().lessons for ex in le.exercises]


@pytest.fixture
def kept(tmp_path, monkeypatch):
    monkeypatch.setattr(specs, "KEPT", [tmp_path])
    monkeypatch.setattr(specs, "_drawn", {})
    return tmp_path


@pytest.mark.parametrize(
    ("ctx", "lessons"), [(FULL, LESSONS), (Context(3, (1, 2, 3)), LESSONS[:12])],
    ids=["every exercise", "3 devices"],
)  # fmt: skip
def test_kept_draws_equal_hypothesis_draws(kept, ctx, lessons):
    for module, exercise in lessons:
        ex_spec = load_spec(module).exercise(exercise.name)
        if not ex_spec.max_examples:
            continue
        explicit = ex_spec.explicit(ctx)
        fresh = specs.hypothesis_draw(ex_spec.strategy(ctx), ex_spec.max_examples, 0, explicit)
        first = examples_for(ex_spec, ctx, 0)  # drawn, kept on disk
        specs._drawn.clear()  # a new process: read back from disk
        again = examples_for(ex_spec, ctx, 0)
        assert first == again == explicit + fresh, (module, exercise.name)
        assert [list(e) for e in again] == [list(e) for e in explicit + fresh]  # key order too
    assert len(list(kept.glob("*.txt"))) >= len(lessons) // 2


def test_a_kept_draw_depends_on_the_seed_and_the_number(kept):
    ex_spec = load_spec("l01_meshes").exercise("shard_shape")
    strategy = ex_spec.strategy(FULL)
    a = specs.draw_examples(strategy, 5, 0, kept_as="x")
    b = specs.draw_examples(strategy, 5, 1, kept_as="x")
    assert a != b and len(specs.draw_examples(strategy, 3, 0, kept_as="x")) == 3
    assert a == specs.hypothesis_draw(strategy, 5, 0)
    other = load_spec("l01_meshes").exercise("device_slices").strategy(FULL)
    assert specs.draw_examples(other, 5, 0, kept_as="y") == specs.hypothesis_draw(other, 5, 0)


def test_a_damaged_kept_file_is_drawn_again(kept):
    ex_spec = load_spec("l01_meshes").exercise("shard_shape")
    strategy = ex_spec.strategy(FULL)
    want = specs.draw_examples(strategy, 4, 2, kept_as="x")
    (path,) = kept.glob("*.txt")
    path.write_text("[{'oops': ")  # cut short
    specs._drawn.clear()
    assert specs.draw_examples(strategy, 4, 2, kept_as="x") == want
