"""Held-back set 5, lesson 6 (see drafts/heldback5/__init__.py)."""

from __future__ import annotations

from drafts.heldback import Held

M = "l06_data_parallel"

HELD: list[Held] = [
    Held(
        id="hb5-l06-accumulate-target-counter-never-advanced",
        module=M,
        exercise="dp_accumulate",
        what=(
            "The learner scans over the input micro-batches and fetches each one's targets with "
            "a counter carried through the loop, but returns the counter unchanged: every "
            "micro-batch's loss compares its outputs with micro-batch 0's targets."
        ),
        cause=("counter", "advance", "targets", "micro-batch 0", "pair"),
        kind="state",
        code="""
def dp_accumulate(params, x, y, mesh, n_micro):
    def body(p, x_rows, y_rows):
        pv = jax.tree.map(lambda w: lax.pcast(w, AXIS, to="varying"), p)
        xs = x_rows.reshape(n_micro, -1, x_rows.shape[-1])
        ys = y_rows.reshape(n_micro, -1, y_rows.shape[-1])

        def step(carry, xb):
            acc, k = carry
            g = jax.grad(tinymodels.loss)(pv, xb, ys[k])  # this micro-batch's targets
            return (jax.tree.map(jnp.add, acc, g), k), None  # k is never advanced

        zeros = jax.tree.map(jnp.zeros_like, pv)
        (total, _), _ = lax.scan(step, (zeros, 0), xs)
        return jax.tree.map(lambda g: lax.pmean(g, AXIS) / n_micro, total)

    return _data_parallel(body, mesh, P())(params, x, y)
""",
    ),
    Held(
        id="hb5-l06-step-divides-by-every-device",
        module=M,
        exercise="dp_train_step",
        what=(
            "The learner divides the summed gradient by jax.device_count(), the devices JAX "
            "sees, instead of lax.axis_size('data'), the devices of the mesh: whenever the mesh "
            "uses fewer devices than there are, the step is too short by that ratio."
        ),
        cause=("device_count", "axis_size", "mesh", "devices in the mesh", "'data'"),
        kind="factor",
        patch=(
            (
                "        n = lax.axis_size(AXIS)\n        new = jax.tree.map",
                "        n = jax.device_count()  # the number of devices\n        new = jax.tree.map",
            ),
        ),
    ),
    Held(
        id="hb5-l06-accumulate-divided-by-the-loop-count",
        module=M,
        exercise="dp_accumulate",
        what=(
            "Following the docstring, the learner starts the sum with the first micro-batch's "
            "gradient and scans over the other n_micro − 1, then divides by n_micro − 1, the "
            "loop's length: the sum holds all n_micro micro-batch means, so the gradient comes "
            "out n_micro/(n_micro − 1) times too large."
        ),
        cause=("n_micro", "n_micro − 1", "divide", "loop's length", "micro-batches"),
        kind="off-by-one",
        code="""
def dp_accumulate(params, x, y, mesh, n_micro):
    def body(p, x_rows, y_rows):
        pv = jax.tree.map(lambda w: lax.pcast(w, AXIS, to="varying"), p)
        xs = x_rows.reshape(n_micro, -1, x_rows.shape[-1])
        ys = y_rows.reshape(n_micro, -1, y_rows.shape[-1])

        def step(acc, batch):
            g = jax.grad(tinymodels.loss)(pv, *batch)
            return jax.tree.map(jnp.add, acc, g), None

        first = jax.grad(tinymodels.loss)(pv, xs[0], ys[0])  # start with the first micro-batch
        total, _ = lax.scan(step, first, (xs[1:], ys[1:]))  # then the other n_micro - 1
        return jax.tree.map(lambda g: lax.pmean(g, AXIS) / (n_micro - 1), total)

    return _data_parallel(body, mesh, P())(params, x, y)
""",
    ),
]
