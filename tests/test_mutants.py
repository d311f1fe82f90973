"""The reference with one piece of its formula changed (grader/checks/mutants.py, issue 45
§3–4): each kind of change found and said where a learner's own wrong formula gives
exactly its value, nothing where the value carries a little noise; the reference itself
never changed; a function it calls changed through it; the whole path through a check."""

from __future__ import annotations

import contextlib
import dataclasses

import ml_dtypes
import numpy as np
import pytest

from grader.checks import mutants, variants
from grader.checks.values import Values
from grader.later import later
from grader.spec import Trial
from tests import grades
from tests.own_wrong import FORMULAS

RNG = np.random.default_rng(60)
P = RNG.dirichlet(np.ones(5))
Q = RNG.dirichlet(np.ones(5))
X, W1, W2 = RNG.normal(size=(4, 3)), RNG.normal(size=(3, 6)), RNG.normal(size=(6, 3))
M, V, G = RNG.normal(size=7), RNG.random(7), RNG.normal(size=7)
SQUARE = RNG.normal(size=(4, 4))  # q and k of one shape: k used untransposed still runs
OUTLIER = np.array([300.0, *RNG.normal(size=6)])  # every other weight scaled below 8
SCORES = RNG.normal(size=(4, 5))
PROBS, VALUES = RNG.random((2, 3, 4, 4)), RNG.normal(size=(2, 4, 3, 5))


# References of the kinds the changes read, each beside a wrong one written by hand as a
# learner would write it (not by changing the reference's text).


def residual(p, q):
    r = np.maximum(p - q, 0.0)
    return r / r.sum()


def residual_wrong(p, q):
    r = np.maximum(q - p, 0.0)  # the draft's excess, not the target's
    return r / r.sum()


def accept(p, q):
    return np.minimum(1.0, p / q)


def quantised(w, top=448.0):
    scale = top / np.max(np.abs(w))
    return np.round(w * scale) / scale


def mlp(x, w1, w2):
    return np.tanh(x @ w1) @ w2


def softmax(z):
    z = np.exp(z - z.max(axis=-1, keepdims=True))
    return z / z.sum(axis=-1, keepdims=True)


def moments(m, v, g, b1=0.9, b2=0.99):
    m = b1 * m + (1 - b1) * g
    v = b2 * v + (1 - b2) * g * g
    return np.concatenate([m, v])


def resblock(h, w):
    h = h + np.tanh(h @ w)
    return h


def momentum_step(w, v, g):
    v = 0.9 * v + g
    w = w - 0.1 * v
    return w


def gated(logits):
    return softmax(logits)


def heavy_ball(m, g, hp):
    m = hp["momentum"] * m + g
    return m


def blended(x, g, hp):  # not a recurrence: never read as a running average
    out = hp["momentum"] * x + g
    return out


def causal(n):
    i = np.arange(n)
    return (i[:, None] >= i[None, :]).astype(float)


def masked(s, mask):
    return np.where(mask, s, -np.inf)


def fp8(w):
    q = (w * (448.0 / np.max(np.abs(w)))).astype(ml_dtypes.float8_e4m3fn)
    return q.astype(np.float64)


def scores(q, k):
    s = q @ k.T
    return s / np.sqrt(q.shape[-1])


def shared(kv, n_heads):
    return np.repeat(kv, n_heads // kv.shape[-2], axis=-2)


def merged(p, v):
    b, h, s, _ = p.shape
    return np.einsum("bhqk,bkhd->bqhd", p, v).reshape(b, s, h * v.shape[-1])


def normalised(g):
    return g / np.sqrt(np.sum(g * g))


def kv_head(h, n_heads, kv_heads):
    return h // (n_heads // kv_heads)


def written(n, pos, value):
    out = np.zeros(n)
    out[pos] = value
    return out


def decayed(x):
    return x * 0.9


def halves(n):
    return (n + 1) // 2


@dataclasses.dataclass(frozen=True)
class Model:
    layers: int
    heads: int
    kv_heads: int
    head_dim: int


LLM = Model(layers=6, heads=12, kv_heads=4, head_dim=64)


def cache(m: Model, tokens):
    return 2 * m.layers * m.kv_heads * m.head_dim * tokens


def soft_wrong(z):
    e = np.exp(z - z.max(axis=0, keepdims=True))  # over the rows (tokens), not the experts
    return e / e.sum(axis=0, keepdims=True)


def moments_swapped(m, v, g, b1=0.9, b2=0.99):
    return np.concatenate([(1 - b1) * m + b1 * g, (1 - b2) * v + b2 * g * g])


def merged_wrong(p, v):
    b, h, s, _ = p.shape
    out = np.einsum("bhqk,bkhd->bhqd", p, v)  # heads left before the queries
    return out.reshape(b, s, h * v.shape[-1])


KINDS = [
    ("swap", residual, (P, Q), residual_wrong(P, Q),
     # np.minimum(p - q, 0) normalised is the same value: both said, the other first
     "the same value on this example, the difference the other way round — `q - p` in "
     "place of `p - q`) in `r = np.maximum(p - q, 0.0)`"),
    ("quotient", accept, (P, Q), np.minimum(1.0, Q / P),
     "with the quotient upside down — `q / p` in place of `p / q`"),
    ("after", mlp, (X, W1, W2), np.tanh(X @ W1 @ W2),
     "with `np.tanh` applied after the `@` instead of before it — `np.tanh(x @ w1 @ w2)`"),
    ("left out", mlp, (X, W1, W2), X @ W1 @ W2, "with `np.tanh` left out — `x @ w1`"),
    ("axis", softmax, (SCORES,), soft_wrong(SCORES),
     "with another axis at all 2 places — `axis=0` in place of `axis=-1`"),
    ("weights", moments, (M, V, G), moments_swapped(M, V, G),
     "with the weights of a weighted sum swapped at all 2 places — "
     "`(1 - b1) * m + b1 * g` in place of `b1 * m + (1 - b1) * g`"),
    ("average", heavy_ball, (M, G, {"momentum": 0.9}), 0.9 * M + 0.1 * G,
     "with a running average's weight `1 - hp['momentum']` on the term the reference adds "
     "whole — `hp['momentum'] * m + (1 - hp['momentum']) * g`"),
    ("factor", moments, (M, V, G),
     np.concatenate([0.9 * M + 0.1 * G, 0.99 * V + 0.01 * G]),
     "with a factor left out — `(1 - b2) * g` in place of `(1 - b2) * g * g`"),
    ("compare", causal, (5,), np.tril(np.ones((5, 5)), -1),
     "with `>` where the reference has `>=` — `i[:, None] > i[None, :]`"),
    ("reversed", causal, (5,), np.triu(np.ones((5, 5))),  # a mask of the future
     "with the comparison reversed — `i[:, None] <= i[None, :]`"),
    ("arguments", masked, (SCORES, SCORES > 0), np.where(SCORES > 0, -np.inf, SCORES),
     "with `np.where`'s arguments `s` and `-np.inf` swapped — `np.where(mask, -np.inf, s)`"),
    ("dtype", fp8, (G,),
     (G * (448.0 / np.max(np.abs(G)))).astype(ml_dtypes.float8_e5m2).astype(np.float64),
     "with another dtype — `ml_dtypes.float8_e5m2` in place of `ml_dtypes.float8_e4m3fn`"),
    ("round", fp8, (OUTLIER,),  # an int8 quantiser's rounding before the float8 cast
     np.round(OUTLIER * (448.0 / 300.0)).astype(ml_dtypes.float8_e4m3fn).astype(np.float64),
     "with the value rounded to integers before the cast — "
     "`np.round(w * (448.0 / np.max(np.abs(w)))).astype(ml_dtypes.float8_e4m3fn)`"),
    ("absolute", residual, (P, Q), np.abs(P - Q) / np.abs(P - Q).sum(),
     "with an absolute value where the reference keeps the positive part — `np.abs(p - q)`"),
    ("sigmoid", gated, (SCORES,), 1.0 / (1.0 + np.exp(-SCORES)),
     "with a sigmoid of each entry where the reference takes a softmax — "
     "`1.0 / (1.0 + np.exp(-logits))` in place of `softmax(logits)`"),
    ("transpose", scores, (SQUARE, SQUARE.T), SQUARE @ SQUARE.T / 2,
     "with the transpose left out — `k` in place of `k.T`"),
    ("all axes", softmax, (SCORES,),
     np.exp(SCORES - SCORES.max(axis=-1, keepdims=True))
     / np.exp(SCORES - SCORES.max(axis=-1, keepdims=True)).sum(),
     "with a reduction over every axis where the reference reduces one"),
    ("twice", resblock, (SQUARE, SQUARE.T), 2 * SQUARE + np.tanh(SQUARE @ SQUARE.T),
     "with the term `h` counted twice — `2 * h + np.tanh(h @ w)` in place of "
     "`h + np.tanh(h @ w)`"),
    ("stale", momentum_step, (M, V, G), M - 0.1 * V,  # the momentum of the step before
     "with `v` read before its update (one step behind) — `v` as it was before `v = 0.9 * v + g`, in place of "
     "its new value"),
    ("log-softmax", gated, (SCORES,), np.log(softmax(SCORES)),
     "with a log-softmax where the reference takes a softmax — `np.log(softmax(logits))`"),
    ("variable", scores, (X, W1.T), X @ X.T / np.sqrt(3),  # a copy-paste slip
     "with another variable read — `q` in place of `k` in `s = q @ k.T`"),
    ("tiled", shared, (VALUES, 9), np.concatenate([VALUES] * 3, axis=-2),  # heads j % K
     "with the whole tiled where the reference repeats each entry in a row — "
     "`np.concatenate([kv] * (n_heads // kv.shape[-2]), axis=-2)` in place of "
     "`np.repeat(kv, n_heads // kv.shape[-2], axis=-2)`"),
    ("einsum", merged, (PROBS, VALUES), merged_wrong(PROBS, VALUES),
     "with the einsum's output axes in another order — `'bhqk,bkhd->bhqd'` in place of "
     "`'bhqk,bkhd->bqhd'`"),
    ("reduction", normalised, (G,), G / np.sqrt(np.mean(G * G)),
     "with a mean where the reference sums — `np.mean(g * g)` in place of `np.sum(g * g)`"),
    ("remainder", kv_head, (np.arange(12), 12, 4), np.arange(12) % 3,
     "with a remainder where the reference divides — `h % (n_heads // kv_heads)`"),
    ("index", written, (6, 2, 1.5), np.eye(6)[3] * 1.5,
     "with an index one on — `pos + 1` in place of `pos` in `out[pos] = value`"),
    ("complement", decayed, (X,), X * 0.1,
     "with 1 minus the constant — `0.1` in place of `0.9`"),
    ("int", halves, (8,), (8 + 2) // 2, "with one more — `2` in place of `1` in `return (n + 1) // 2`"),
    ("field", cache, (LLM, 100), 2 * 6 * 12 * 64 * 100,
     "with another field of `m` — `m.heads` in place of `m.kv_heads`"),
]  # fmt: skip


def _found(reference, args, got) -> str | None:
    def matches(value):
        return np.shape(value) == np.shape(got) and bool(
            np.allclose(value, got, rtol=1e-12, atol=0)
        )

    change = variants._first(
        (variants.Change(m.said, (m.fn, args, {}), m.where) for m in mutants.mutants(reference)),
        matches, most=10_000, budget_s=60,
    )  # fmt: skip
    return None if change is None else change.said


@pytest.mark.parametrize("kind, reference, args, got, words", KINDS, ids=[k[0] for k in KINDS])
def test_each_kind_of_change_is_said_where_the_value_is_exactly_its(
    kind, reference, args, got, words
):
    """The first change of the reference's formula whose value a hand-written wrong formula
    gives, in words: the kind, the piece as changed and as the reference has it; the same
    value off by a little noise gets nothing. (Some changes give the reference's own value,
    ``z + max`` in a softmax: never a wrong output's, so never said.)"""
    said = _found(reference, args, got)
    assert said is not None and words in said, said
    noisy = np.asarray(got, float) * (1 + 1e-6 * RNG.normal(size=np.shape(got)))
    assert _found(reference, args, noisy) is None


def test_a_running_average_is_tried_for_a_recurrence_only():
    """`m = b * m + g` is tried as `b * m + (1 - b) * g` (above); the same formula that
    assigns another name (`out = b * x + g`) is not: its value is not said so."""
    said = _found(blended, (M, G, {"momentum": 0.9}), 0.9 * M + 0.1 * G)
    assert said is None or "running average" not in said, said


def momentum_in_a_block(w, v, g):
    v = 0.9 * v + g
    with np.errstate(all="ignore"):
        w = w - 0.1 * v
    return w


def test_a_read_before_its_update_quotes_the_read_s_own_line():
    """Inside a ``with`` block the stale read is quoted at its own line, not the block's
    (audit 67b: "in `with np.errstate(...)`")."""
    said = _found(momentum_in_a_block, (M, V, G), M - 0.1 * V)
    assert said is not None and said.endswith("in `w = w - 0.1 * v`"), said


def test_a_value_many_changes_give_is_told_none_of_them():
    """A quantiser whose scale is upside down rounds every weight to 0: so do other
    changes (the scale a product, a factor left out), and an all-zero value names none."""
    w = RNG.normal(size=9)
    scale = np.max(np.abs(w)) / 448.0
    wrong = np.round(w * scale) / scale
    assert not np.any(wrong)
    assert _found(quantised, (w,), wrong) is None
    right = 448.0 / np.max(np.abs(w))
    said = _found(quantised, (w,), np.round(w * right) * right)  # not degenerate: said
    assert said.startswith(
        "with a product where the reference divides — `np.round(w * scale) * scale` in place of"
    ), said


def test_the_reference_is_never_changed_and_each_change_is_built_from_it():
    """Every change is built from the reference as it is (not from the one before it), and
    building and calling them all changes neither the reference's value nor its text."""
    import inspect

    text, before = inspect.getsource(moments), moments(M, V, G)
    built = list(mutants.mutants(moments))
    assert len(built) > 20
    for m in built:
        with contextlib.suppress(Exception):
            m.fn(M.copy(), V.copy(), G.copy())
    assert np.array_equal(moments(M, V, G), before) and inspect.getsource(moments) == text
    (swapped,) = [m for m in built if "weights of a weighted sum swapped at all" in m.said]
    assert np.allclose(swapped.fn(M, V, G), moments_swapped(M, V, G))
    for m in built:  # each change alone: the other line keeps the reference's weights
        if m.what.startswith("with a factor left out — `(1 - b2) * g` in place of"):
            assert np.allclose(m.fn(M, V, G)[:7], moments(M, V, G)[:7])


def test_a_function_the_reference_calls_is_changed_through_it_and_named():
    """Lesson 8's deferred reference calls the float64 MLP of the grader's side by name:
    a change there is made through the caller, and its words say where."""
    from grader.lessons.l08_tensor_parallel.spec import _mlp32

    x, w_in, w_out = (a.astype(np.float32) for a in (X, W1, W2))
    got = np.tanh(x.astype(np.float64) @ w_in @ w_out).astype(np.float32)
    said = _found(_mlp32, (x, w_in, w_out), got)
    assert said is not None
    assert said.startswith("with `np.tanh` applied after the `@` instead of before it")
    assert said.endswith("(in `mlp`, which the reference calls)")


def test_a_module_s_function_is_changed_through_a_lambda_two_calls_down():
    """Lesson 16's cost answers are lambdas calling ``cost.decode_step_time`` (a hidden
    reference's module), which calls ``kv_cache_bytes``: a field read in place of another
    there is found, and where two fields are equal on the example both are named."""
    from grader.lessons.l16_serving import spec as S

    ex = {"model": S.GQA, "slice": S.V5E, "batch": 16, "tokens": 8192, "itemsize": 2}
    m, s, b, t, i = S._time_args(**ex)
    assert m.layers == m.heads != m.kv_heads  # llama-2-13b's 40 and 40, its variant's 8
    want = S.DECODE_TIME.answer(**ex)
    kv_by_heads = 2 * m.layers * m.heads * m.head_dim * t * i
    got = want + b * (kv_by_heads - kv_by_heads * m.kv_heads / m.heads) / (
        s.chips * s.hbm_bandwidth
    )
    change = variants.first_change_of(
        (S.DECODE_TIME.answer, (), dict(ex)), lambda v: abs(v - got) <= 1e-12 * got
    )  # fmt: skip
    assert change is not None
    assert "`m.layers` in place of `m.kv_heads`" in change.said
    assert (
        "or, the same value on this example, another field of `m` — `m.heads` in place"
        in change.said
    )
    assert change.said.endswith("(in `kv_cache_bytes`, which the reference calls)")


def test_formula_changes_come_after_the_arguments_and_within_their_own_budget(monkeypatch):
    """A value an argument change gives is said as that (the simpler account); a formula
    change only within :data:`variants.FORMULA_BUDGET_S` (none at 0 s)."""
    from grader.lessons.l08_tensor_parallel.spec import _mlp32

    x, w_in, w_out = (a.astype(np.float32) for a in (X, W1, W2))
    got = np.tanh(x.astype(np.float64) @ w_in @ w_out).astype(np.float32)
    swapped = _mlp32(x, w_in, w_out) + 1e-3  # no change gives it: nothing at all

    def close(to):
        return lambda v: np.shape(v) == np.shape(to) and bool(np.allclose(v, to, atol=1e-6))

    found = variants.first_change_of((_mlp32, (x, w_in, w_out), {}), close(got))
    assert found is not None and "applied after" in found.said
    assert variants.first_change_of((_mlp32, (x, w_in, w_out), {}), close(swapped)) is None
    by_argument = variants.first_change_of(
        (_mlp32, (x, w_in, w_out), {}), close(_mlp32(x[::-1], w_in, w_out))
    )  # fmt: skip
    assert by_argument is not None and by_argument.said == "with x reversed along its first axis"
    monkeypatch.setattr(variants, "FORMULA_BUDGET_S", 0.0)
    assert variants.first_change_of((_mlp32, (x, w_in, w_out), {}), close(got)) is None


def test_through_a_values_check_the_hint_says_the_formula_change():
    """A whole ``Values`` check on a trial deferring lesson 8's reference: the output the
    changed formula gives gets it in its hint; with noise, nothing of it; right, a pass."""
    import jax

    from grader.lessons.l08_tensor_parallel.spec import _mlp32

    x, w_in, w_out = (a.astype(np.float32) for a in (X, W1, W2))

    def trial(output):
        t = Trial({}, output=jax.numpy.asarray(np.asarray(output, np.float32)),
                  expected=later(_mlp32, x, w_in, w_out), extra={"dtype": "float32"})  # fmt: skip
        t.expected  # noqa: B018  (read: the worker computes it, the trial keeps the call)
        return t

    after = np.tanh(x.astype(np.float64) @ w_in @ w_out)
    r = Values()(trial(after))
    assert r.hint.startswith(
        "Your value is exactly what the reference computes with `np.tanh` applied after the "
        "`@` instead of before it — `np.tanh(x @ w_in @ w_out)` in place of "
        "`np.tanh(x @ w_in) @ w_out` in `return np.tanh(x @ w_in) @ w_out` (in `mlp`, which "
        "the reference calls), on every element."
    ), r.hint
    noisy = after * (1 + 1e-3 * RNG.normal(size=after.shape))
    assert "the reference computes" not in (Values()(trial(noisy)).hint or "")
    assert Values()(trial(_mlp32(x, w_in, w_out))).passed


@pytest.mark.parametrize("mistake", FORMULAS, ids=lambda m: m.id)
def test_an_own_wrong_program_is_told_the_formula_change_that_gives_its_values(mistake):
    """Wrong programs nobody catalogued (tests/own_wrong.py), graded whole in this process:
    the failing check's hint says the change of the reference's formula it computes."""
    (er,) = grades.mistake(mistake, mode="here").exercises
    assert er.status.value == mistake.status, (er.status, er.error)
    check = {c.name: c for c in er.checks if not c.passed}[mistake.check]
    for words in mistake.says:
        assert words in (check.hint or ""), (words, check.message, check.hint)
    for words in mistake.never:  # the cause a neighbouring mistake's hint names
        assert words not in (check.hint or ""), (words, check.hint)


def test_a_reference_annotated_with_names_imported_only_for_type_checking_still_changes(
    tmp_path, monkeypatch
):
    """A change is compiled with the annotations left as strings, as in the module it
    comes from: a name imported only under ``TYPE_CHECKING`` need not exist."""
    import importlib

    (tmp_path / "typed_reference.py").write_text(
        "from __future__ import annotations\n"
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from nowhere import Undefined\n\n\n"
        "def doubled(x: Undefined) -> Undefined:\n"
        "    return x * 2\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    module = importlib.import_module("typed_reference")
    said = _found(module.doubled, (3.0,), 1.5)
    assert (
        said
        == "with a quotient where the reference multiplies — `x / 2` in place of `x * 2` in `return x * 2`"
    )


def _leaf_fn(x):
    return x * 2


def _mid_a(x):
    return _leaf_fn(x) + 1


def _mid_b(x):
    return _leaf_fn(x) - 1


def _top(x):
    return _mid_a(x) * _mid_b(x)


def test_a_function_changed_below_is_changed_wherever_the_reference_calls_it(monkeypatch):
    """Level by level (what the reference calls before what those call), and a change
    two calls down reaches every caller: ``_leaf_fn`` halving where it doubles changes
    both ``_mid_a`` and ``_mid_b``, not the first path alone."""
    monkeypatch.setattr(mutants, "OURS", (*mutants.OURS, __name__))
    built = list(mutants.mutants(_top))
    where = [m.where for m in built]
    mids = [i for i, w in enumerate(where) if "(in `_mid_" in w]
    leaves = [i for i, w in enumerate(where) if "(in `_leaf_fn`" in w]
    assert mids and leaves and max(mids) < min(leaves)
    (halved,) = [m for m in built if m.said.startswith("with a quotient where the reference "
                                                        "multiplies — `x / 2`")]  # fmt: skip
    assert halved.fn(3.0) == (1.5 + 1) * (1.5 - 1)
    assert _top(3.0) == 7 * 5  # the reference itself unchanged


def test_lesson_16s_verify_draft_is_told_the_formula_change_every_drafted_token_shows():
    """``verify_draft``'s values check (no deferred value: it holds every drafted token's
    answer to ``verify_each``): a residual of the draft's excess, max(q − p, 0), is told
    the difference the other way round; the right answers pass. (The held-back set has this
    class as a whole program; here it is the check alone, on an example of its own.)"""
    from grader.lessons.l16_serving import speculative as S

    p, q = S.distribution((1, 2, 3, 4, 2)), S.distribution((4, 3, 2, 1, 2))

    def answers(residual_of):
        out = []
        for x in range(len(p)):
            r = residual_of(p, q)
            out.append((x, min(1.0, p[x] / q[x]), r / r.sum() if r.sum() > 0 else p))
        return out

    def trial(output):
        want = [(x, *S.F.verify(p, q, x)) for x, _, _ in output]
        return Trial({"p": (1, 2, 3, 4, 2), "q": (4, 3, 2, 1, 2)}, output=output, expected=want,
                     extra={"p": p, "q": q})  # fmt: skip

    wrong = S.PerToken()(trial(answers(lambda p, q: np.maximum(q - p, 0.0))))
    assert not wrong.passed
    assert wrong.hint.startswith(
        "Your acceptance and residual of every drafted token are exactly what the reference "
        "computes with the difference the other way round — `q - p` in place of `p - q` in "
        "`residual = np.maximum(p - q, 0.0)` (in `verify`, which the reference calls)"
    ), wrong.hint
    assert S.PerToken()(trial(answers(lambda p, q: np.maximum(p - q, 0.0)))).passed


def two_rings(nbytes: float, hosts: int, local: int, flat: bool = False) -> float:
    n = hosts * local
    if flat:
        return 2 * (n - 1) / n * nbytes
    return 2 * (local - 1) / local * nbytes + 2 * (hosts - 1) / hosts * nbytes / local


def two_rings_bare(nbytes, hosts, local, flat=False):  # the same, its numbers not annotated
    n = hosts * local
    if flat:
        return 2 * (n - 1) / n * nbytes
    return 2 * (local - 1) / local * nbytes + 2 * (hosts - 1) / hosts * nbytes / local


def test_another_number_read_throughout_a_formula_is_said_with_its_definition():
    """A learner who gives the second ring the factor of all devices, 2(N−1)/N with
    N = hosts·local (a name of the function read in place of another, at every place one
    statement reads it), is told that change with the local's definition; the same value
    with a little noise gets nothing; a local is never read in its own definition, and a
    function whose numbers are not annotated gets no such change (nothing says what is a
    number there)."""
    nbytes, hosts, local = 1e9, 3, 2  # (4, 2): `hosts` for `local` gives it too
    n = hosts * local
    wrong = 2 * (local - 1) / local * nbytes + 2 * (n - 1) / n * nbytes / local
    said = _found(two_rings, (nbytes, hosts, local), wrong)
    assert said is not None and said.startswith(
        "with another number read at all 2 places — `n` (n = hosts * local) in place of "
        "`hosts` in `return 2 * (local - 1) / local * nbytes + 2 * (hosts - 1) / hosts"
    ), said
    rng = np.random.default_rng(62)
    assert _found(two_rings, (nbytes, hosts, local), wrong * (1 + 1e-6 * rng.normal())) is None
    made = [m.said for m in mutants.mutants(two_rings)]
    assert not any("`n` (n = hosts * local) in place of `hosts` in `n = " in s for s in made)
    assert any("another number read" in s for s in made)
    assert not any("another number read" in m.said for m in mutants.mutants(two_rings_bare))


def corrected(m, b=0.9, t=3):
    return m / (1 - b**t)


def squashed(x):
    return 2 * np.tanh(x)


def root_of_corrected(v, b=0.999, t=3):
    return np.sqrt(v / (1 - b**t))


def test_a_power_written_as_a_product_and_a_function_applied_twice_are_said():
    """Two kinds of change a learner's formula shows: `b * t` for `b ** t` (a bias
    correction written as a product), and a function applied to its own result (a softmax
    of probabilities); the same values with a little noise get neither."""
    rng = np.random.default_rng(62)
    m, x = rng.normal(size=5), rng.normal(size=5)
    product = m / (1 - 0.9 * 3)
    said = _found(corrected, (m,), product)
    assert said is not None and said.startswith(
        "with a product where the reference raises to a power — `b * t` in place of `b ** t`"
    ), said
    twice = 2 * np.tanh(np.tanh(x))
    said = _found(squashed, (x,), twice)
    assert said is not None and said.startswith("with `np.tanh` applied twice"), said
    for got, ref, args in ((product, corrected, (m,)), (twice, squashed, (x,))):
        assert _found(ref, args, got * (1 + 1e-6 * rng.normal(size=5))) is None


def test_many_changes_of_one_piece_that_give_the_value_say_that_piece():
    """A bias correction written 1 − b·t turns negative: the square root of v over it is
    NaN everywhere, and so is every change that makes the correction negative (several
    of them): the piece they all change is said, with two of them; an all-zero value that
    changes in many places give is still told nothing (see above)."""
    v = np.random.default_rng(62).random(5)
    with np.errstate(invalid="ignore"):
        wrong = np.sqrt(v / (1 - 0.999 * 3))  # all NaN

    def matches(value):
        return np.shape(value) == v.shape and bool(np.all(np.isnan(value)))

    change = variants._first(
        (variants.Change(m.said, (m.fn, (v,), {}), m.where, m.text, m.pieces, m.swap)
         for m in mutants.mutants(root_of_corrected)),
        matches, most=10_000, budget_s=60,
    )  # fmt: skip
    assert np.all(np.isnan(wrong)) and change is not None
    assert change.said.startswith("with `1 - b ** t` changed — each of "), change.said
    assert "changes of it gives this value on this example (`" in change.said
    assert change.said.endswith("in `return np.sqrt(v / (1 - b**t))`"), change.said


def test_a_scale_moved_elsewhere_is_said_as_a_named_multiple_of_a_changed_formula():
    """Two slips at once, the second only a scale moved: attention whose scores go
    unscaled and whose output is divided by √Dh after it is exactly 1/√Dh times the
    reference with its scale left out — said with the factor named as the example's own;
    a multiple no quantity names, and a multiple of the expected value itself, get no such
    sentence (the factor relation says the latter)."""
    import jax

    from grader.expected.l08_tensor_parallel import attention

    x = RNG.normal(size=(1, 3, 8)).astype(np.float32)
    wq, wk, wv = (RNG.normal(size=(8, 12)).astype(np.float32) for _ in range(3))
    wo = RNG.normal(size=(12, 8)).astype(np.float32)
    args = (x, wq, wk, wv, wo, 3)

    def hint(output):
        t = Trial({"heads": 3, "dh": 4}, output=jax.numpy.asarray(np.asarray(output, np.float32)),
                  expected=later(attention, *args), extra={"dtype": "float32"})  # fmt: skip
        t.expected  # noqa: B018  (read: the worker computes it, the trial keeps the call)
        return Values()(t).hint or ""

    unscaled = attention(*args, scale=1.0)
    said = hint(unscaled / 2.0)
    assert said.startswith("Your value is exactly ½ (or 1/(√(dh = 4)): equal on this example) "
                           "times what the reference computes with a factor left out"), said  # fmt: skip
    assert "`np.einsum('bqhd,bkhd->bhqk', q, k) * scale`" in said
    assert "times what the reference computes" not in hint(unscaled * 0.37)
    assert "times what the reference computes" not in hint(attention(*args) / 2.0)


def test_a_function_s_changes_do_not_depend_on_the_functions_read_before_it():
    """CPython's parser shares one ``Mult()`` (one ``Load()``…) among all trees: a place
    written on it was the last tree's, and a change built at that place landed at every
    ``*`` of another function, which then failed to compile (its change lost) or changed
    more than it said. Each tree now has nodes of its own, and reading other functions
    after one leaves its changes as they were."""
    import inspect

    from grader.expected.l14_planning import cost as planning
    from grader.expected.l16_serving import cost

    before = [m.said for m in mutants.mutants(cost.decode_step_time)]
    others = [f for _, f in inspect.getmembers(planning, inspect.isfunction)
              if f.__module__ == planning.__name__]  # fmt: skip
    trees = [mutants._prepared(f) for f in others]
    assert [m.said for m in mutants.mutants(cost.decode_step_time)] == before
    mine = {id(n) for n in mutants._prepared(cost.decode_step_time).nodes}
    for t in trees:
        if t is not None:
            assert not mine & {id(n) for n in t.nodes}
    swapped = [m for m in mutants.mutants(cost.decode_step_time)
               if m.said.startswith("with another field of `s` — `s.chips` in place of "
                                    "`s.hbm_bandwidth`")]  # fmt: skip
    assert len(swapped) == 1
    assert "bandwidth = s.chips * s.chips" in swapped[0].text()


def adam_direction(m, v, t):
    b1, b2 = 0.9, 0.999
    return (m / (1 - b1**t)) / (np.sqrt(v / (1 - b2**t)) + 1e-8)


def test_a_change_whose_value_is_infinite_matches_no_output():
    """``t ** b1`` where ``b1 ** t`` belongs, at t = 1, divides by 1 − 1 = 0: its value is
    infinite, and an infinite value was within ``rtol·inf`` of any output. It matched the
    output of an uncorrected first moment with three others, and four found are too many to
    name any: the hint was lost (hb5-l15-adamw-first-moment-uncorrected). Now only the
    changes whose value the output is are found."""
    from grader.checks.values import within

    m, v = RNG.normal(size=16), RNG.uniform(0.1, 1.0, size=16)
    got = m / (np.sqrt(v / (1 - 0.999)) + 1e-8)  # m not divided by 1 − b1ᵗ

    def matches(value):
        return np.shape(value) == got.shape and bool(np.all(within(got, value, 1e-9, 1e-6)))

    found = []
    for m_ in mutants.mutants(adam_direction):
        with np.errstate(all="ignore"):
            value = m_.fn(m, v, 1)
        if matches(value):
            found.append(m_.said)
    assert found and all("b1" in f for f in found), found
    assert not any("`t ** b1`" in f for f in found), found
    (flipped,) = [x for x in mutants.mutants(adam_direction) if "`t ** b1`" in x.said]
    with np.errstate(all="ignore"):
        infinite = flipped.fn(m, v, 1)
    assert not np.isfinite(infinite).any()
    with np.errstate(invalid="ignore"):  # the test it passed: within rtol·inf of anything
        assert np.all(np.abs(got - infinite) <= 1e-9 + 1e-6 * np.abs(infinite))
    change = variants._first(
        (variants.Change(x.said, (x.fn, (m, v, 1), {}), x.where)
         for x in mutants.mutants(adam_direction)),
        matches, most=10_000, budget_s=60,
    )  # fmt: skip
    assert change is not None and "`m` in place of `m / (1 - b1 ** t)`" in change.said
