"""Held-back set 7, lesson 6 (see drafts/heldback7/__init__.py)."""

from __future__ import annotations

from drafts.heldback import Held

M = "l06_data_parallel"

HELD: list[Held] = [
    Held(
        id="hb7-l06-accumulate-micro-grads-weighted-then-divided-again",
        module=M,
        exercise="dp_accumulate",
        what=(
            "The learner weights each micro-batch's gradient by 1/n_micro as it adds it (so the "
            "sum is already the mean over the device's rows) and then still divides the "
            "all-reduced total by n_micro: the gradient comes out n_micro times too small."
        ),
        cause=("n_micro", "twice", "already", "divided again", "weight"),
        kind="factor",
        patch=(
            (
                "            g = jax.grad(tinymodels.loss)(pv, *batch)\n",
                "            g = jax.grad(tinymodels.loss)(pv, *batch)\n"
                "            g = jax.tree.map(lambda t: t / n_micro, g)  # this micro-batch's share\n",
            ),
        ),
    ),
    Held(
        id="hb7-l06-accumulate-micro-batches-vmapped",
        module=M,
        exercise="dp_accumulate",
        what=(
            "The learner computes the micro-batch gradients with jax.vmap over the micro-batch "
            "axis and sums them, instead of a sequential lax.scan: the values and the one "
            "all-reduce are right, but vmap runs every micro-batch at once, so the activations "
            "of the whole local batch are alive together and accumulation saves no memory."
        ),
        cause=("vmap", "one at a time", "sequential", "scan", "memory", "loop"),
        kind="other",
        code="""
def dp_accumulate(params: dict, x: jax.Array, y: jax.Array, mesh: Mesh, n_micro: int) -> dict:
    def body(p, x_rows, y_rows):
        pv = jax.tree.map(lambda w: lax.pcast(w, AXIS, to="varying"), p)
        xs = x_rows.reshape(n_micro, -1, x_rows.shape[-1])
        ys = y_rows.reshape(n_micro, -1, y_rows.shape[-1])
        per_micro = jax.vmap(lambda xb, yb: jax.grad(tinymodels.loss)(pv, xb, yb))(xs, ys)
        total = jax.tree.map(lambda g: jnp.sum(g, axis=0), per_micro)
        return jax.tree.map(lambda g: lax.pmean(g, AXIS) / n_micro, total)

    return _data_parallel(body, mesh, P())(params, x, y)
""",
    ),
    Held(
        id="hb7-l06-step-new-params-psummed-to-sync",
        module=M,
        exercise="dp_train_step",
        what=(
            "Worried that the replicas drift apart, the learner psums the updated params over "
            "'data' to keep them in sync: they are already the same on every device (invariant), "
            "so the psum multiplies them by N instead of leaving them as they are."
        ),
        cause=("already replicated", "invariant", "psum", "n times", "in sync"),
        kind="collective",
        patch=(
            (
                "        return new, lax.pmean(local_loss, AXIS)  # mean of equal-sized local means\n",
                "        new = jax.tree.map(lambda w: lax.psum(w, AXIS), new)  # keep replicas in sync\n"
                "        return new, lax.pmean(local_loss, AXIS)  # mean of equal-sized local means\n",
            ),
        ),
    ),
]
