"""What the reference gives on changed arguments (grader/checks/variants.py, issue 45 §3):
each change said where the output is exactly that value, nothing where it is not."""

from __future__ import annotations

import time

import numpy as np
import pytest

from grader.checks import variants
from grader.checks.trees import PerLeaf
from grader.checks.values import Values
from grader.later import later
from grader.spec import REFERENCE, Trial
from tests import grades
from tests.own_wrong import VARIANTS

RNG = np.random.default_rng(59)
X, Y = RNG.normal(size=(6, 4)), RNG.normal(size=(6, 4))
STACKED = {"w": RNG.normal(size=(3, 4, 4)), "b": RNG.normal(size=(3, 4))}
HP = {"scale": 0.5, "shift": 0.25}


def toy(x, y, layers, causal=True, step=3, hp=HP):
    """A reference of the kinds the changes read: two same-shaped arrays, stacked layers,
    a flag, a counter and hyperparameters left to their default."""
    h = x
    for w, b in zip(layers["w"], layers["b"]):
        h = np.tanh(h @ w + b)
    h = h * hp["scale"] + hp["shift"] + y
    if causal:
        h = np.tril(h)
    return h * (1 - 0.9 ** (step + 1))


def _trial(output, *args, **kwargs):
    """A trial whose expected value was deferred and read, as a run's is in the worker."""
    import jax

    t = Trial({}, output=jax.numpy.asarray(np.asarray(output, np.float32)),
              expected=later(toy, *args, **kwargs), extra={"dtype": "float32"})  # fmt: skip
    t.expected  # noqa: B018  (read: the worker computes it, the trial keeps the call)
    return t


CHANGED = [
    ("with causal = False in place of True", dict(causal=False)),
    ("with x and y swapped", dict(x=Y, y=X)),
    ("with y in place of x", dict(x=Y)),
    ("with x in place of y", dict(y=X)),
    ("with step = 4 in place of 3 (one more)", dict(step=4)),
    ("with layers['w'] transposed (its last two axes swapped)",
     dict(layers={"w": STACKED["w"].swapaxes(-1, -2), "b": STACKED["b"]})),
    ("with step = 2 in place of 3 (one less)", dict(step=2)),
    ("with layers reversed along their first axis",
     dict(layers={k: v[::-1] for k, v in STACKED.items()})),
    ("with hp['shift'] = 0 in place of 0.25", dict(hp={**HP, "shift": 0.0})),
    ("with hp['scale'] and hp['shift'] swapped", dict(hp={"scale": 0.25, "shift": 0.5})),
    ("with y all zeros", dict(y=np.zeros_like(Y))),
]  # fmt: skip


@pytest.mark.parametrize("words, change", CHANGED, ids=[w for w, _ in CHANGED])
def test_each_change_is_said_where_the_output_is_exactly_its_value(words, change):
    """Through a whole ``Values`` check: the output the reference gives on the changed
    arguments gets the change in its hint; the same output off by a little noise gets
    none of it, and the right output passes."""
    args = {"x": X, "y": Y, "layers": STACKED, **change}
    r = Values()(_trial(toy(**args), X, Y, STACKED))
    assert not r.passed
    assert r.hint == f"Your value is exactly what the reference computes {words}, on every element."
    off = toy(**args) + 1e-3 * RNG.normal(size=X.shape)
    r = Values()(_trial(off, X, Y, STACKED))
    assert "the reference computes" not in (r.hint or "")
    assert Values()(_trial(toy(X, Y, STACKED), X, Y, STACKED)).passed


def test_a_deferred_argument_is_changed_inside_by_its_own_reference_names():
    """An argument that is itself deferred (lesson 15's step, read by a wrapper) is
    changed by the inner reference's parameters, and the wrapper computes on it."""

    def inner(a, b):
        return a - 2 * b

    def outer(step, n):
        return step.value() * n

    call = (outer, (later(inner, X, Y), 2), {})
    said = [c.said for c in variants.changes(call)]
    assert said == ["with n = 3 in place of 2 (one more)", "with n = 1 in place of 2 (one less)",
                    "with a and b swapped", "with a reversed along its first axis",
                    "with a cut to its last entry along its first axis alone",
                    "with a cut to its first entry along its first axis alone",
                    "with b reversed along its first axis",
                    "with b cut to its last entry along its first axis alone",
                    "with b cut to its first entry along its first axis alone",
                    "with a all zeros",
                    "with b all zeros", "with b in place of a", "with a in place of b"]  # fmt: skip
    swapped = next(c for c in variants.changes(call) if c.said == "with a and b swapped")
    fn, args, kwargs = swapped.call
    assert np.array_equal(fn(*args, **kwargs), (Y - 2 * X) * 2)


def test_blocks_stacked_where_they_belong_side_by_side_are_said_for_a_mesh_axis_size():
    """A matrix whose k column blocks were stacked and reshaped (k a size of the mesh: an
    untiled gather, reshaped) is said so where the blocks are those of the mesh; the same
    value with noise is not, and no block count is tried that the mesh does not have."""

    def product(a, b):
        return a @ b

    rng = np.random.default_rng(62)
    a, b = rng.normal(size=(3, 4)), rng.normal(size=(4, 6))
    gathered = b.reshape(4, 3, 2).transpose(1, 0, 2).reshape(4, 6)  # [3, 4, 2] read as [4, 6]

    def found(value, blocks):
        change = variants.first_change_of((product, (a, b), {}),
                                          lambda v: np.allclose(v, value, rtol=1e-12, atol=0),
                                          budget_s=60, blocks=blocks)  # fmt: skip
        return None if change is None else change.said

    assert found(a @ gathered, (3,)) == (
        "with b read as its 3 blocks along axis 1 stacked on a new first axis and reshaped "
        "to (4, 6) (what an untiled all_gather, reshaped, holds) in place of the blocks side "
        "by side"
    )
    assert found(a @ gathered * (1 + 1e-6 * rng.normal(size=(3, 6))), (3,)) is None
    assert found(a @ gathered, (2,)) is None and found(a @ gathered, ()) is None


def test_stacked_layers_whose_column_blocks_were_stacked_matrix_by_matrix_are_said_so():
    """Stacked layers [L, F, D]: each layer's k column blocks stacked and reshaped (a
    layer's untiled gather, reshaped) is said matrix by matrix; the same reading across
    the whole stack (layers mixed) is the other change, and noise gets neither."""

    def layers(h, w):
        for wl in w:
            h = np.tanh(h @ wl)
        return h

    rng = np.random.default_rng(64)
    h, w = rng.normal(size=(2, 4)), rng.normal(size=(3, 4, 4))
    each = np.stack(np.split(w, 2, axis=-1), axis=-3).reshape(w.shape)

    def found(value):
        change = variants.first_change_of((layers, (h, w), {}),
                                          lambda v: np.allclose(v, value, rtol=1e-12, atol=0),
                                          budget_s=60, blocks=(2,))  # fmt: skip
        return None if change is None else change.said

    assert found(layers(h, each)) == (
        "with each matrix of w (its last two axes) read as its 2 blocks of columns stacked on "
        "a new first axis and reshaped to (4, 4) (what an untiled all_gather of a layer's "
        "column blocks, reshaped, holds) in place of the blocks side by side"
    ), found(layers(h, each))
    mixed = np.stack(np.split(w, 2, axis=2)).reshape(w.shape)
    assert "each matrix" not in (found(layers(h, mixed)) or "")
    assert found(layers(h, each) * (1 + 1e-6 * rng.normal(size=(2, 4)))) is None


def test_an_array_dealt_out_strided_where_contiguous_blocks_belong_is_said_so():
    """A gradient whose N slices were dealt strided (device i: elements i, i + N, …; a
    reduce-scatter of its [Ψ/N, N] reshape) where each device's state holds a contiguous
    slice: said so for N a size of the mesh, not with noise, not for another N."""

    def update(w, g):
        return w - 0.1 * g

    rng = np.random.default_rng(62)
    w, g = rng.normal(size=12), rng.normal(size=12)
    dealt = np.concatenate([g[i::3] for i in range(3)])  # device i's slice, side by side

    def found(value, blocks):
        change = variants.first_change_of((update, (w, g), {}),
                                          lambda v: np.allclose(v, value, rtol=1e-12, atol=0),
                                          budget_s=60, blocks=blocks)  # fmt: skip
        return None if change is None else change.said

    assert found(update(w, dealt), (3,)) == (
        "with g dealt to 3 devices strided along axis 0 (device i: elements i, i + 3, i + 6, "
        "…) in place of in contiguous blocks"
    )
    assert found(update(w, dealt) + 1e-6 * rng.normal(size=12), (3,)) is None
    assert found(update(w, dealt), (2, 4)) is None


def test_stacked_layers_cut_to_one_of_them_are_said():
    """Stacked layers of which only the last (or the first) was applied (each layer fed
    the input rather than the one before's output: the last one's alone survives) are
    said so; with noise, nothing."""
    rng = np.random.default_rng(62)
    last = toy(X, Y, {k: v[-1:] for k, v in STACKED.items()})
    r = Values()(_trial(last, X, Y, STACKED))
    assert r.hint == (
        "Your value is exactly what the reference computes with layers cut to "
        "its last entry along their first axis alone, on every element."
    ), r.hint
    first = toy(X, Y, {k: v[:1] for k, v in STACKED.items()})
    assert "cut to its first entry" in Values()(_trial(first, X, Y, STACKED)).hint
    noisy = last + 1e-3 * rng.normal(size=X.shape)
    assert "the reference computes" not in (Values()(_trial(noisy, X, Y, STACKED)).hint or "")


def test_lesson_8s_attention_with_a_decoders_mask_is_said_so():
    """Lesson 8's attention has no mask; one computed with a causal mask (a decoder's
    habit) is the reference's with its ``causal`` flag the other way; the right output
    passes."""
    import jax

    from grader.lessons.l08_tensor_parallel.spec import _attention32

    rng = np.random.default_rng(62)
    x = rng.normal(size=(2, 4, 8)).astype(np.float32)
    w = [(rng.normal(size=(8, 8)) / 3).astype(np.float32) for _ in range(4)]

    def trial(output):
        t = Trial({}, output=jax.numpy.asarray(output), expected=later(_attention32, x, *w, 2),
                  extra={"dtype": "float32"})  # fmt: skip
        t.expected  # noqa: B018  (read: the worker computes it, the trial keeps the call)
        return t

    masked = _attention32(x, *w, 2, causal=True)
    r = Values()(trial(masked))
    assert r.hint == (
        "Your value is exactly what the reference computes with causal = True "
        "in place of False, on every element."
    ), r.hint
    assert Values()(trial(_attention32(x, *w, 2))).passed


def test_a_softmax_over_another_axis_is_said_by_the_axis_argument_and_only_there():
    """A softmax over the heads (axis 1 of [B, H, S, S]) where the keys' belongs is the
    reference with its ``softmax_axis`` argument another axis; an argument not named an
    axis is never changed so (a step counter 3 → 0 would be another count, not an axis)."""
    import jax

    from grader.lessons.l08_tensor_parallel.spec import _attention32

    rng = np.random.default_rng(66)
    x = rng.normal(size=(2, 4, 8)).astype(np.float32)
    w = [(rng.normal(size=(8, 8)) / 3).astype(np.float32) for _ in range(4)]
    t = Trial({}, output=jax.numpy.asarray(_attention32(x, *w, 2, softmax_axis=1)),
              expected=later(_attention32, x, *w, 2), extra={"dtype": "float32"})  # fmt: skip
    t.expected  # noqa: B018  (read: the worker computes it, the trial keeps the call)
    hint = Values()(t).hint
    assert hint == (
        "Your value is exactly what the reference computes with softmax_axis = 1 in place of "
        "-1 (another axis), on every element."
    ), hint
    saids = [c.said for c in variants.changes((toy, (X, Y, STACKED), {}))]
    assert not any("another axis" in w for w in saids), saids


def test_a_field_of_the_example_is_named_by_its_key_and_the_inputs_are_never_changed():
    def ref(ex, x):
        return x * ex["step"]

    ex = {"step": 3, "name": "adamw"}
    x = X.copy()
    said = [c.said for c in variants.changes((ref, (ex, x), {}), ex)]
    assert said[:2] == ["with step = 4 in place of 3 (one more)",
                        "with step = 2 in place of 3 (one less)"]  # fmt: skip
    for c in variants.changes((ref, (ex, x), {}), ex):
        fn, args, kwargs = c.call
        fn(*args, **kwargs)
        args[1][...] = 0  # a reference that wrote into its arguments would write into copies
    assert ex == {"step": 3, "name": "adamw"} and np.array_equal(x, X)


def test_a_leaf_of_a_pytree_output_is_read_at_its_path():
    """Through ``PerLeaf``: the first wrong leaf is held to the same leaf of the changed
    reference's value."""

    def ref(x, y):
        return {"sum": x + y, "weighted": x + 2 * y}

    t = Trial({}, output=None, expected=later(ref, X, Y), extra={"dtype": "float32"})
    import jax

    t.output = jax.tree.map(lambda a: jax.numpy.asarray(a.astype(np.float32)), ref(Y, X))
    r = PerLeaf(inner=Values())(t)
    assert r.message.startswith("['weighted']")
    assert "Your ['weighted'] is exactly what the reference computes with x and y swapped" in r.hint


def test_a_change_said_of_one_leaf_must_give_every_other_leaf_too():
    """A pytree output: a change is said of its first wrong leaf only where the change's
    value holds every leaf the student returned (each to its dtype's tolerance). Here
    ``y in place of x`` gives the first leaf; it is said where the second leaf is that
    change's too, and not where the second is wrong another way."""
    import jax

    def ref(x, y):
        return {"a": 2 * x, "b": y - x}

    def graded(output):
        t = Trial({}, output=None, expected=later(ref, X, Y), extra={"dtype": "float32"})
        t.output = jax.tree.map(lambda a: jax.numpy.asarray(a.astype(np.float32)), output)
        return PerLeaf(inner=Values())(t)

    both = graded(ref(Y, Y))  # x read as y everywhere: a = 2y, b = 0
    assert both.message.startswith("['a']") and "with y in place of x" in both.hint
    other = graded({"a": 2 * Y, "b": Y + X})  # the second leaf wrong by another change
    assert other.message.startswith("['a']")
    assert "with y in place of x" not in (other.hint or "")


def test_the_budget_and_a_plain_expected_value_leave_nothing_said():
    def slow(x, y):  # 0.02 s of this thread's CPU: the budget counts that, not sleep
        end = time.thread_time() + 0.02
        while time.thread_time() < end:
            pass
        return x + 2 * y

    t = Trial({}, output=None, expected=later(slow, X, Y))
    t.expected  # noqa: B018
    swapped = Y + 2 * X
    assert (
        variants.first_change(t, lambda v: np.allclose(v, swapped)).said == "with x and y swapped"
    )
    # one change (x and y swapped) is tried at most: its call already spends the budget
    assert variants.first_change(t, lambda v: np.allclose(v, 2 * Y), budget_s=0.01) is None
    assert variants.first_change(t, lambda v: np.allclose(v, 2 * Y)).said == "with x all zeros"
    assert REFERENCE in t.extra
    plain = Trial({}, output=None, expected=X)
    assert variants.first_change(plain, lambda v: True) is None


def test_a_check_holding_the_output_to_another_value_than_the_deferred_one_says_nothing():
    """A trial whose expected value was read, then replaced by a value of its own (a check
    on something else of the example): the reference's changes are not its, so none is
    said, though one gives the output exactly."""
    import jax

    t = _trial(toy(Y, X, STACKED), X, Y, STACKED)
    assert "with x and y swapped" in Values()(t).hint
    t.expected = toy(X, Y, STACKED) * 2  # held to another value now; the call is still kept
    assert "the reference computes" not in (Values()(t).hint or "")
    assert isinstance(t.output, jax.Array)


@pytest.mark.parametrize("mistake", VARIANTS, ids=lambda m: m.id)
def test_an_own_wrong_program_is_told_the_change_that_gives_its_values(mistake):
    """Wrong programs nobody catalogued (tests/own_wrong.py), graded whole in this process
    (:func:`tests.grades.mistake`): the failing check's hint says the change of the
    reference's arguments whose value the output is."""
    (er,) = grades.mistake(mistake, mode="here").exercises
    assert er.status.value == mistake.status, (er.status, er.error)
    check = {c.name: c for c in er.checks if not c.passed}[mistake.check]
    for words in mistake.says:
        assert words in (check.hint or ""), (words, check.message, check.hint)


def test_a_formula_of_the_examples_fields_is_told_the_field_changed_under_its_called_name():
    """A ``Scalar``'s float answer (:class:`grader.checks.scalar.Suspicion`): the first
    change of the example's fields that gives it, named as the call shows the field; an
    answer no change gives, an int answer and a bool get nothing of it."""
    from grader.checks.scalar import Suspicion

    def answer(tokens, bandwidth, latency):
        return tokens * 2.0 / bandwidth + latency

    def call(tokens, bandwidth, latency):
        return f"step_time(context={tokens}, bandwidth={bandwidth}, latency={latency})"

    ex = {"tokens": 8192, "bandwidth": 4.0, "latency": 1.5}
    suspicion = Suspicion(lambda ex: [], answer=answer, call=call)
    want = answer(**ex)

    def hint(got):
        return suspicion(got, want, Trial(ex))

    assert hint(answer(8193, 4.0, 1.5)) == (
        f"Your answer {answer(8193, 4.0, 1.5):.6g} is exactly what the formula gives with "
        "context = 8193 in place of 8192 (one more)."
    )
    assert "with bandwidth and latency swapped" in hint(answer(8192, 1.5, 4.0))
    assert hint(want * 1.000001) is None  # no change gives it
    assert Suspicion(lambda ex: [], answer=answer, call=call)(8193, 8192, Trial(ex)) is None
    assert Suspicion(lambda ex: [], answer=lambda **ex: True)(False, True, Trial(ex)) is None


def test_a_field_change_that_gets_an_example_the_student_got_right_wrong_is_not_said():
    """context one more gives the answer here; where the student's answer on another fixed
    example is right and the same change would give another value there, it is not the
    slip and is not said (both ways: with that example got wrong the same way, it is)."""
    from grader.checks.scalar import AGREED, PROBES, Suspicion

    def answer(tokens, bandwidth, latency):
        return tokens * 2.0 / bandwidth + latency

    ex = {"tokens": 8192, "bandwidth": 4.0, "latency": 1.25}
    other = {"tokens": 100, "bandwidth": 2.0, "latency": 0.5}
    suspicion = Suspicion(lambda ex: [], answer=answer)
    got, want = answer(8193, 4.0, 1.25), answer(**ex)
    right_there = Trial(ex, extra={PROBES: [], AGREED: [other]})
    assert suspicion(got, want, right_there) is None
    wrong_there = Trial(ex, extra={PROBES: [(other, answer(101, 2.0, 0.5))], AGREED: []})
    assert "tokens = 8193 in place of 8192 (one more)" in suspicion(got, want, wrong_there)
    # a whole answer that is the right one rounded, where a fractional one was got right
    # elsewhere: no rounding either (it would have rounded that one too)
    third = {"tokens": 8192, "bandwidth": 3.0, "latency": 0.0}  # right: 5461.33
    assert "rounded down" in suspicion(5461, answer(**third), Trial(third, extra={PROBES: []}))
    assert (
        suspicion(5461, answer(**third), Trial(third, extra={PROBES: [], AGREED: [other]})) is None
    )


def test_a_number_one_step_off_is_said_with_the_formula_change_that_gives_it_too(monkeypatch):
    """Lesson 15's scale grown one clean step late is the interval one more, and the
    reference's `>` for its `>=`: both are said, the argument first; a decay one step on
    that no formula change gives has nothing beside it; a change of another kind (two
    arguments swapped) never looks for one."""
    from grader.expected.l15_optimizer import loss_scaled

    master, m, g = X[0], Y[0], X[1]
    args = (master, m, g, 8.0, 2, 3)  # the third clean step: the scale grows, good resets

    def late(v):  # `good > interval`: the same step, the scale not grown, good counted on
        return np.array_equal(v[0], loss_scaled(*args)[0]) and v[2:] == (8.0, 3)

    change = variants.first_change_of((loss_scaled, args, {}), late, budget_s=60)
    assert change.said == (
        "with interval = 4 in place of 3 (one more), and so does its formula with `>` where "
        "the reference has `>=` — `good > interval` in place of `good >= interval` in "
        "`if good >= interval:`"
    ), change.said

    def found(fn, args, value):
        change = variants.first_change_of(
            (fn, args, {}), lambda v: np.allclose(v, value, rtol=1e-12, atol=0), budget_s=60
        )
        return None if change is None else change.said

    def decayed(x, step):
        return x * 0.5**step

    searched = []
    real = variants._formulas
    monkeypatch.setattr(variants, "_formulas", lambda call: searched.append(call) or real(call))
    assert found(decayed, (X, 3), X * 0.5**4) == "with step = 4 in place of 3 (one more)"
    assert len(searched) == 1

    def mixed(x, y):
        return x - 0.5 * y

    assert found(mixed, (X, Y), mixed(Y, X)) == "with x and y swapped"
    assert len(searched) == 1
