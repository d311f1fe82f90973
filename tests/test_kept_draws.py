"""Drawn examples are kept (issue 22 §2): a kept draw is the one hypothesis makes."""

from __future__ import annotations

import pytest

from course import registry
from grader import spec as specs
from grader.engine import examples_for, load_spec
from grader.spec import FULL, Context

LESSONS = [(le.module, ex) for le in registry.load().lessons for ex in le.exercises]


@pytest.fixture
def kept(tmp_path):
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
        draws = specs.Draws(kept=(kept,))
        first = examples_for(ex_spec, ctx, 0, draws=draws)  # drawn, kept on disk
        assert examples_for(ex_spec, ctx, 0, draws=draws) == first  # the memo's
        again = examples_for(ex_spec, ctx, 0, draws=specs.Draws(kept=(kept,)))  # read back
        assert first == again == explicit + fresh, (module, exercise.name)
        assert [list(e) for e in again] == [list(e) for e in explicit + fresh]  # key order too
    assert len(list(kept.glob("*.txt"))) >= len(lessons) // 2


def test_a_kept_draw_depends_on_the_seed_and_the_number(kept):
    ex_spec = load_spec("l01_meshes").exercise("shard_shape")
    strategy = ex_spec.strategy(FULL)
    draws = specs.Draws(kept=(kept,))
    a = specs.draw_examples(strategy, 5, 0, kept_as="x", draws=draws)
    b = specs.draw_examples(strategy, 5, 1, kept_as="x", draws=draws)
    assert a != b and len(specs.draw_examples(strategy, 3, 0, kept_as="x", draws=draws)) == 3
    assert a == specs.hypothesis_draw(strategy, 5, 0)
    other = load_spec("l01_meshes").exercise("device_slices").strategy(FULL)
    assert specs.draw_examples(other, 5, 0, kept_as="y", draws=draws) == specs.hypothesis_draw(
        other, 5, 0
    )
    assert len(list(kept.glob("*.txt"))) == 4  # one file per draw


def test_a_damaged_kept_file_is_drawn_again(kept):
    ex_spec = load_spec("l01_meshes").exercise("shard_shape")
    strategy = ex_spec.strategy(FULL)
    want = specs.draw_examples(strategy, 4, 2, kept_as="x", draws=specs.Draws(kept=(kept,)))
    (path,) = kept.glob("*.txt")
    path.write_text("[{'oops': ")  # cut short
    again = specs.Draws(kept=(kept,))  # a new process: nothing drawn in memory
    assert specs.draw_examples(strategy, 4, 2, kept_as="x", draws=again) == want
    assert path.read_text() == repr(want)  # and kept again
