"""Lesson 6's examples are drawn where its checks can tell right from wrong."""

from __future__ import annotations

import numpy as np
import pytest

from grader.engine import context
from grader.lessons.l06_data_parallel import spec as l06
from grader.results import Status
from grader.sandbox import backends
from grader.spec import draw_examples
from tests.mistakes.l06 import MISTAKES


def _examples(name: str, n: int = 30) -> list[dict]:
    ex = l06.SPEC.exercise(name)
    ctx = context()
    return ex.explicit(ctx) + draw_examples(ex.strategy(ctx), n, seed=0)


def test_values_are_checked_on_several_devices():
    """At N = 1 an N× mistake is invisible; N = 3 is not a power of two."""
    for name in ("dp_grads", "dp_train_step", "dp_accumulate"):
        examples = _examples(name)
        assert all(ex["n"] >= 2 for ex in examples)
        assert {4, 3} <= {ex["n"] for ex in examples[:2]}


def test_accumulation_draws_where_activations_dominate():
    """n_micro ≥ 4 and A ≥ 5·|params| (the syllabus's bound), n_micro ≠ N in the
    first example so an N× and an n_micro× mistake get different hints."""
    examples = _examples("dp_accumulate")
    for ex in examples:
        assert ex["micro"] >= 4 and ex["rows"] % ex["micro"] == 0
        assert l06.activation_bytes(ex) >= 5 * l06.params_bytes(ex)
    assert examples[0]["micro"] != examples[0]["n"]


def test_tolerance_is_tighter_than_a_bfloat16_rounding():
    """The derived allowance stays far below bfloat16's 2⁻⁹ relative rounding."""
    for name in ("dp_grads", "dp_accumulate"):
        for ex in _examples(name):
            assert l06.training.tolerance(l06.model_sizes(ex)) < 2**-9 / 20


# ------------------------------------------------------------------ other correct accumulations

MODULE = "l06_data_parallel"

FIRST_BEFORE_THE_LOOP = """
def dp_accumulate(params, x, y, mesh, n_micro):
    # vision_transformer / big_vision's accumulate_gradient: the first micro-batch
    # starts the sum, fori_loop adds the other n_micro - 1, one pmean after
    def body(p, x_rows, y_rows):
        pv = jax.tree.map(lambda w: lax.pcast(w, AXIS, to="varying"), p)
        step = x_rows.shape[0] // n_micro
        grad_fn = jax.grad(tinymodels.loss)
        g = grad_fn(pv, x_rows[:step], y_rows[:step])

        def acc(i, g):
            xi = lax.dynamic_slice_in_dim(x_rows, i * step, step)
            yi = lax.dynamic_slice_in_dim(y_rows, i * step, step)
            return jax.tree.map(jnp.add, g, grad_fn(pv, xi, yi))

        g = lax.fori_loop(1, n_micro, acc, g)
        return jax.tree.map(lambda a: lax.pmean(a, AXIS) / n_micro, g)

    return _data_parallel(body, mesh, P())(params, x, y)
"""

LAST_AFTER_THE_LOOP = """
def dp_accumulate(params, x, y, mesh, n_micro):
    def body(p, x_rows, y_rows):
        pv = jax.tree.map(lambda w: lax.pcast(w, AXIS, to="varying"), p)
        xs = x_rows.reshape(n_micro, -1, x_rows.shape[-1])
        ys = y_rows.reshape(n_micro, -1, y_rows.shape[-1])

        def step(acc, batch):
            return jax.tree.map(jnp.add, acc, jax.grad(tinymodels.loss)(pv, *batch)), None

        total, _ = lax.scan(step, jax.tree.map(jnp.zeros_like, pv), (xs[:-1], ys[:-1]))
        total = jax.tree.map(jnp.add, total, jax.grad(tinymodels.loss)(pv, xs[-1], ys[-1]))
        return jax.tree.map(lambda g: lax.pmean(g, AXIS) / n_micro, total)

    return _data_parallel(body, mesh, P())(params, x, y)
"""


def _variant(root, tmp_path, code: str):
    text = (root / "solutions" / f"{MODULE}.py").read_text()
    (tmp_path / f"{MODULE}.py").write_text(text + "\n" + code)
    return tmp_path


@pytest.mark.parametrize("isolate", [False, True], ids=["here", "student-process"])
def test_the_first_micro_batch_before_the_loop_passes(root, tmp_path, isolate):
    """vision_transformer's form, one micro-batch outside a loop of n_micro − 1: what
    the loop stands for holds (one micro-batch's activations at a time, measured by
    the memory check, and one all-reduce after the loop).

    (LAST_AFTER_THE_LOOP passes the loop check too, but its compiled program needs
    1.03·A of temporaries at N = 4, n_micro = 8 — measured — so memory fails it.)"""
    directory = _variant(root, tmp_path, FIRST_BEFORE_THE_LOOP)
    result = backends.grade_lesson(
        6, MODULE, directory, only=["dp_accumulate"], max_examples=0, isolate=isolate
    )  # the worker reads the program from its StableHLO, this process from its jaxpr
    (e,) = result.exercises
    assert e.status == Status.PASSED, [c.to_dict() for c in e.checks if not c.passed]
    (loop,) = [c for c in e.checks if c.name == "loop"]
    assert "one more outside the loop" in loop.message


def _traced(source: str, ex: dict):
    """The traced program of ``dp_accumulate`` defined in ``source`` (the solution's
    module with it appended), at example ``ex``: tracing only, nothing compiled."""
    import jax
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P

    from grader.measure import devices, jaxpr

    namespace: dict = {}
    exec(compile(source, "<variant>", "exec"), namespace)
    mesh = devices.make_mesh((ex["n"],), ("data",))
    params, x, y = l06.inputs(ex, np.random.default_rng(0))
    rows = NamedSharding(mesh, P("data", None))
    args = (
        jax.device_put(params, NamedSharding(mesh, P())),
        jax.device_put(x, rows),
        jax.device_put(y, rows),
    )
    fn = namespace["dp_accumulate"]
    return jaxpr.trace(lambda p, a, b: fn(p, a, b, mesh, ex["micro"]), *args)


PYTHON_LOOP = next(m for m in MISTAKES if m.id == "dp-accumulate-python-loop")
HEADER = "import jax\nimport jax.numpy as jnp\nimport numpy as np\nfrom jax import lax\n"


@pytest.mark.parametrize("layers,micro", [(3, 4), (2, 8), (2, 3)])
def test_a_python_loop_is_no_micro_batch_loop_even_where_a_layer_loop_has_n_micro_minus_1(
    root, layers, micro
):
    """A Python loop over micro-batches leaves only the model's layer loops (L
    iterations each); at L = n_micro − 1 (the explicit example L = 3, n_micro = 4)
    such a loop has the length a loop after one peeled micro-batch would have, and
    the matmuls outside it still tell that n_micro micro-batches run unrolled."""
    solution = (root / "solutions" / f"{MODULE}.py").read_text()
    ex = {"n": 3, "layers": layers, "rows": 12 * micro, "d": 8, "f": 24, "micro": micro}
    unrolled = _traced(PYTHON_LOOP.source(solution), ex)
    assert any(lp.length == micro - 1 for lp in unrolled.loops) == (layers == micro - 1)
    assert l06._micro_loops(unrolled, micro) == []
    for code in (FIRST_BEFORE_THE_LOOP, LAST_AFTER_THE_LOOP, ""):
        program = _traced(solution + "\n" + HEADER + code, ex)
        (loop,) = l06._micro_loops(program, micro)
        assert loop.length == (micro if not code else micro - 1)


def test_two_micro_batches_outside_the_loop_are_not_accumulation(root):
    """A loop of n_micro − 1 iterations with two micro-batches' matmuls outside it: the
    hint says what was measured (the shape of a loop with the rest unrolled)."""
    solution = (root / "solutions" / f"{MODULE}.py").read_text()
    two_outside = FIRST_BEFORE_THE_LOOP.replace(
        "g = grad_fn(pv, x_rows[:step], y_rows[:step])",
        "g = grad_fn(pv, x_rows[:step], y_rows[:step])\n"
        "        g = jax.tree.map(jnp.add, g, grad_fn(pv, x_rows[:step], y_rows[:step]))",
    )
    assert two_outside != FIRST_BEFORE_THE_LOOP
    ex = {"n": 3, "layers": 2, "rows": 64, "d": 8, "f": 24, "micro": 4}
    program = _traced(solution + "\n" + HEADER + two_outside, ex)
    assert l06._micro_loops(program, 4) == []
    hint = l06._no_micro_loop_hint(program, 4)
    assert "A loop of 3 iterations runs the model" in hint
    assert "add up to 2.00 of its iterations" in hint
