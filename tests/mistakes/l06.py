"""Realistic wrong implementations for lesson 6 (see tests/mistakes/__init__.py)."""

from __future__ import annotations

from tests.mistakes import Mistake

L06 = "l06_data_parallel"

MISTAKES: list[Mistake] = [
    # ---------------------------------------------------------------- dp_grads
    Mistake(
        id="dp-pmean-of-already-summed-grads",
        module=L06,
        exercise="dp_grads",
        code="""
def dp_grads(params, x, y, mesh):
    def body(p, x_rows, y_rows):
        g = jax.grad(tinymodels.loss)(p, x_rows, y_rows)  # already summed over 'data'
        return jax.tree.map(lambda a: lax.pmean(a, AXIS), g)

    return _data_parallel(body, mesh, P())(params, x, y)
""",
        status="failed",
        check="values",
        says=("N = 4 times", "transpose", "already summed"),
    ),
    Mistake(
        id="dp-local-mean-not-scaled-to-global-batch",
        module=L06,
        exercise="dp_grads",
        code="""
def dp_grads(params, x, y, mesh):
    def body(p, x_rows, y_rows):
        pv = jax.tree.map(lambda w: lax.pcast(w, AXIS, to="varying"), p)
        g = jax.grad(tinymodels.loss)(pv, x_rows, y_rows)  # mean of B/N rows
        return jax.tree.map(lambda a: lax.psum(a, AXIS), g)

    return _data_parallel(body, mesh, P())(params, x, y)
""",
        status="failed",
        check="values",
        says=("N = 4 times", "N local means", "global batch"),
    ),
    Mistake(
        id="dp-check-vma-off-unreduced-grads",
        module=L06,
        exercise="dp_grads",
        code="""
def dp_grads(params, x, y, mesh):
    def body(p, x_rows, y_rows):
        return jax.grad(tinymodels.loss)(p, x_rows, y_rows)

    return jax.shard_map(
        body, mesh=mesh, in_specs=(P(), ROWS, ROWS), out_specs=P(), check_vma=False
    )(params, x, y)
""",
        status="failed",
        check="values",
        says=("own rows only", "check_vma=False", "summed, and divide by N"),
    ),
    Mistake(
        id="dp-bfloat16-inside-float32",
        module=L06,
        exercise="dp_grads",
        code="""
def dp_grads(params, x, y, mesh):
    def body(p, x_rows, y_rows):
        half = jax.tree.map(lambda w: w.astype(jnp.bfloat16), p)  # "to save memory"
        g = jax.grad(tinymodels.loss)(half, x_rows.astype(jnp.bfloat16), y_rows)
        n = lax.axis_size(AXIS)
        return jax.tree.map(lambda a: a.astype(jnp.float32) / n, g)

    return _data_parallel(body, mesh, P())(params, x, y)
""",
        status="failed",
        check="values",
        says=("bfloat16", "float32"),
    ),
    Mistake(
        id="dp-gathers-the-batch",
        module=L06,
        exercise="dp_grads",
        code="""
def dp_grads(params, x, y, mesh):
    def body(p, x_rows, y_rows):
        xs = lax.all_gather(x_rows, AXIS, tiled=True)
        ys = lax.all_gather(y_rows, AXIS, tiled=True)
        return jax.grad(tinymodels.loss)(p, xs, ys)

    return _data_parallel(body, mesh, P())(params, x, y)
""",
        status="failed",
        check="collectives",
        says=("all-gather", "the batch stays"),
    ),
    # ---------------------------------------------------------------- dp_train_step
    Mistake(
        id="dp-step-sums-the-local-losses",
        module=L06,
        exercise="dp_train_step",
        code="",
        status="failed",
        check="values",
        says=("loss is N = 4 times", "lax.pmean"),
        patch=(
            (
                "return new, lax.pmean(local_loss, AXIS)",
                "return new, lax.psum(local_loss, AXIS)",
            ),
        ),
    ),
    Mistake(
        id="dp-step-pmean-of-already-summed-grads",
        code="",
        module=L06,
        exercise="dp_train_step",
        status="failed",
        check="values",
        says=("N = 4 times", "transpose", "all-reduces a weight-shaped array"),
        patch=(
            (
                "new = jax.tree.map(lambda w, g: w - lr * (g / n), p, summed)",
                "new = jax.tree.map(lambda w, g: w - lr * lax.pmean(g, AXIS), p, summed)",
            ),
        ),
    ),
    # issue 45 audit (round 3): the loss's pmean (a scalar) was read as a pmean of the
    # gradient, and this was told "drop the pmean", which would break the loss
    Mistake(
        id="dp-step-summed-gradient-not-divided",
        module=L06,
        exercise="dp_train_step",
        status="failed",
        check="values",
        says=("Nothing divided that sum by N: divide it by N",),
        never=("drop the pmean",),
        patch=(
            (
                "new = jax.tree.map(lambda w, g: w - lr * (g / n), p, summed)",
                "new = jax.tree.map(lambda w, g: w - lr * g, p, summed)  # the summed gradient",
            ),
        ),
    ),
    Mistake(
        id="dp-step-returns-the-local-loss",
        module=L06,
        exercise="dp_train_step",
        code="",
        status="error",
        check=None,
        says=("out_specs=P()", "lax.pmean"),
        patch=(
            (
                "return new, lax.pmean(local_loss, AXIS)",
                "return new, local_loss",
            ),
        ),
    ),
    # ---------------------------------------------------------------- dp_accumulate
    Mistake(
        id="dp-accumulate-all-reduce-inside-the-loop",
        module=L06,
        exercise="dp_accumulate",
        code="",
        status="failed",
        check="bytes",
        says=("8.00×", "inside the loop over micro-batches"),
        patch=(
            (
                "g = jax.grad(tinymodels.loss)(pv, *batch)",
                "g = jax.tree.map(lambda a: lax.pmean(a, AXIS), "
                "jax.grad(tinymodels.loss)(pv, *batch))",
            ),
            (
                "zeros = jax.tree.map(jnp.zeros_like, pv)",
                "zeros = jax.tree.map(jnp.zeros_like, p)",
            ),
            (
                "return jax.tree.map(lambda g: lax.pmean(g, AXIS) / n_micro, total)",
                "return jax.tree.map(lambda g: g / n_micro, total)",
            ),
        ),
    ),
    Mistake(
        id="dp-accumulate-params-left-invariant",
        module=L06,
        exercise="dp_accumulate",
        code="""
def dp_accumulate(params, x, y, mesh, n_micro):
    def body(p, x_rows, y_rows):
        xs = x_rows.reshape(n_micro, -1, x_rows.shape[-1])
        ys = y_rows.reshape(n_micro, -1, y_rows.shape[-1])

        def step(acc, batch):  # p invariant: each grad comes back summed over 'data'
            return jax.tree.map(jnp.add, acc, jax.grad(tinymodels.loss)(p, *batch)), None

        total, _ = lax.scan(step, jax.tree.map(jnp.zeros_like, p), (xs, ys))
        return jax.tree.map(lambda g: g / (n_micro * lax.axis_size(AXIS)), total)

    return _data_parallel(body, mesh, P())(params, x, y)
""",
        status="failed",
        check="bytes",
        says=("8.00×", "still invariant", "lax.pcast"),
    ),
    Mistake(
        id="dp-accumulate-whole-local-batch-divided-by-n-micro",
        module=L06,
        exercise="dp_accumulate",
        code="",
        status="failed",
        check="memory",
        says=("whole local batch", "A = L·(B/N)·(D + F)·4"),
        patch=(
            (
                "g = jax.grad(tinymodels.loss)(pv, *batch)",
                "g = jax.tree.map(lambda a: a / n_micro, "
                "jax.grad(tinymodels.loss)(pv, x_rows, y_rows))",
            ),
            (
                "return jax.tree.map(lambda g: lax.pmean(g, AXIS) / n_micro, total)",
                "return jax.tree.map(lambda g: lax.pmean(g, AXIS), total)",
            ),
        ),
    ),
    Mistake(
        id="dp-accumulate-python-loop",
        module=L06,
        exercise="dp_accumulate",
        code="""
def dp_accumulate(params, x, y, mesh, n_micro):
    def body(p, x_rows, y_rows):
        pv = jax.tree.map(lambda w: lax.pcast(w, AXIS, to="varying"), p)
        rows = x_rows.shape[0] // n_micro
        total = jax.tree.map(jnp.zeros_like, pv)
        for i in range(n_micro):
            mine = slice(i * rows, (i + 1) * rows)
            g = jax.grad(tinymodels.loss)(pv, x_rows[mine], y_rows[mine])
            total = jax.tree.map(jnp.add, total, g)
        return jax.tree.map(lambda g: lax.pmean(g, AXIS) / n_micro, total)

    return _data_parallel(body, mesh, P())(params, x, y)
""",
        status="failed",
        check="loop",
        says=("no loop of n_micro = 8", "Python for-loop is unrolled"),
    ),
    Mistake(
        id="dp-accumulate-forgets-n-micro",
        module=L06,
        exercise="dp_accumulate",
        code="",
        status="failed",
        check="values",
        says=("n_micro = 8 times",),
        patch=(
            (
                "return jax.tree.map(lambda g: lax.pmean(g, AXIS) / n_micro, total)",
                "return jax.tree.map(lambda g: lax.pmean(g, AXIS), total)",
            ),
        ),
    ),
    # ---------------------------------------------------------------- check_vma's refusals
    Mistake(
        id="dp-grads-varying-params-never-reduced",
        module=L06,
        exercise="dp_grads",
        code="""
def dp_grads(params, x, y, mesh):
    def body(p, x_rows, y_rows):
        pv = jax.tree.map(lambda w: lax.pcast(w, AXIS, to="varying"), p)
        return jax.grad(tinymodels.loss)(pv, x_rows, y_rows)  # this device's rows only

    return _data_parallel(body, mesh, P())(params, x, y)
""",
        status="error",
        check=None,
        says=("The gradients", "lax.pcast to varying", "reduce them exactly once"),
    ),
    Mistake(
        id="dp-accumulate-carry-from-zeros",
        module=L06,
        exercise="dp_accumulate",
        status="error",
        check=None,
        says=("starts the same on every device", "lax.pcast(init, 'data', to='varying')"),
        patch=(
            (
                "zeros = jax.tree.map(jnp.zeros_like, pv)",
                "zeros = jax.tree.map(lambda w: jnp.zeros(w.shape, w.dtype), p)",
            ),
        ),
    ),
    Mistake(
        id="dp-accumulate-pcasts-the-rows",
        module=L06,
        exercise="dp_accumulate",
        status="error",
        check=None,
        says=("already varies", "drop that pcast"),
        patch=(
            (
                "xs = x_rows.reshape(n_micro, -1, x_rows.shape[-1])",
                'xs = lax.pcast(x_rows, AXIS, to="varying").reshape(n_micro, -1, x_rows.shape[-1])',
            ),
        ),
    ),
    # ---------------------------------------------------------------- hints that fix, not break
    Mistake(
        id="dp-grads-summed-never-divided-by-n",
        module=L06,
        exercise="dp_grads",
        status="failed",
        check="values",
        says=("N = 4 times", "already summed", "divide it by N", "add no pmean"),
        patch=(("return jax.tree.map(lambda g: g / n, summed)", "return summed"),),
    ),
    Mistake(
        id="dp-grads-pcast-to-invarying",
        module=L06,
        exercise="dp_grads",
        code="""
def dp_grads(params, x, y, mesh):
    def body(p, x_rows, y_rows):
        pv = jax.tree.map(lambda w: lax.pcast(w, AXIS, to="varying"), p)
        g = jax.grad(tinymodels.loss)(pv, x_rows, y_rows)
        return jax.tree.map(lambda a: lax.pcast(a, AXIS, to="invarying"), g)  # for out_specs=P()

    return _data_parallel(body, mesh, P())(params, x, y)
""",
        status="error",
        check=None,
        says=("casts only towards varying", "lax.psum or lax.pmean"),
    ),
    # ---------------------------------------------------------------- issue 18 §4: value failures
    Mistake(
        id="dp-step-loss-after-the-update",
        module=L06,
        exercise="dp_train_step",
        status="failed",
        check="values",
        says=("loss of the updated params", "loss before it"),
        patch=(
            (
                "return new, lax.pmean(local_loss, AXIS)  # mean of equal-sized local means",
                "return new, lax.pmean(tinymodels.loss(new, x_rows, y_rows), AXIS)  # the new loss",
            ),
        ),
    ),
]

# ---------------------------------------------------------------- issue 37: averaged inside the loop
MISTAKES += [
    Mistake(
        id="dp-accumulate-pmean-inside-the-loop",
        module=L06,
        exercise="dp_accumulate",
        status="error",
        check=None,
        says=("already pmean's each micro-batch's gradients", "move that pmean here"),
        patch=(
            (
                "            g = jax.grad(tinymodels.loss)(pv, *batch)",
                "            g = jax.tree.map(lambda a: lax.pmean(a, AXIS),\n"
                "                             jax.grad(tinymodels.loss)(pv, *batch))",
            ),
            (
                "        return jax.tree.map(lambda g: lax.pmean(g, AXIS) / n_micro, total)",
                "        return jax.tree.map(lambda g: g / n_micro, total)  # averaged already",
            ),
        ),
    ),
]
MISTAKES += [
    Mistake(
        id="dp-train-step-check-vma-off-unreduced",
        module=L06,
        exercise="dp_train_step",
        code="""
def dp_train_step(params, x, y, mesh, lr):
    def body(p, x_rows, y_rows):
        local_loss, g = jax.value_and_grad(tinymodels.loss)(p, x_rows, y_rows)
        new = jax.tree.map(lambda w, gw: w - lr * gw, p, g)
        return new, lax.pmean(local_loss, AXIS)

    return jax.shard_map(body, mesh=mesh, in_specs=(P(), ROWS, ROWS), out_specs=(P(), P()),
                         check_vma=False)(params, x, y)
""",
        status="failed",
        check="values",
        says=("gradient of its own rows only", "divide by N"),
    ),
    Mistake(  # held back in drafts/heldback until its hint was made right (issue 45)
        id="l06-step-loss-pmean-divided-by-n",
        module="l06_data_parallel",
        exercise="dp_train_step",
        status="failed",
        check="values",
        says=("Your loss is 1/N",),
        never=("Your gradient is 1/N",),
        patch=(
            (
                "return new, lax.pmean(local_loss, AXIS)  # mean of equal-sized local means",
                "return new, lax.pmean(local_loss, AXIS) / n  # averaged like the grads",
            ),
        ),
    ),
    Mistake(  # held back in drafts/heldback; catalogued as the loss-divided-twice entry's neighbour (issue 45)
        id="l06-grads-pmean-then-divide-by-n",
        module="l06_data_parallel",
        exercise="dp_grads",
        status="failed",
        check="values",
        says=("Your gradient is 1/N",),
        never=("Your loss is 1/N",),
        code='\ndef dp_grads(params, x, y, mesh):\n    def body(p, x_rows, y_rows):\n        pv = jax.tree.map(lambda w: lax.pcast(w, AXIS, to="varying"), p)\n        g = jax.grad(tinymodels.loss)(pv, x_rows, y_rows)\n        n = lax.axis_size(AXIS)\n        return jax.tree.map(lambda a: lax.pmean(a, AXIS) / n, g)  # all-reduce, then / N\n\n    return _data_parallel(body, mesh, P())(params, x, y)\n',
    ),
    Mistake(  # audit 67: the loss pmean'd as shape (1,) was read as the gradient's pmean
        id="dp-step-not-divided-loss-pmean-of-shape-one",
        module=L06,
        exercise="dp_train_step",
        status="failed",
        check="values",
        says=("Nothing divided that sum by N: divide it by N",),
        never=("weight-shaped", "drop the pmean"),
        patch=(
            (
                "new = jax.tree.map(lambda w, g: w - lr * (g / n), p, summed)",
                "new = jax.tree.map(lambda w, g: w - lr * g, p, summed)",
            ),
            (
                "return new, lax.pmean(local_loss, AXIS)",
                "return new, lax.pmean(jnp.atleast_1d(local_loss), AXIS)[0]",
            ),
        ),
    ),
    Mistake(  # drafts/heldback7: 1/n_micro, told "1/(D = 8, the model dimension)" first
        id="dp-accumulate-micro-grads-divided-twice",
        module=L06,
        exercise="dp_accumulate",
        status="failed",
        check="values",
        says=("1/n_micro = 1/8 of the reference", "divided by n_micro once too often"),
        never=("the model dimension",),
        patch=(
            (
                "            g = jax.grad(tinymodels.loss)(pv, *batch)\n",
                "            g = jax.grad(tinymodels.loss)(pv, *batch)\n"
                "            g = jax.tree.map(lambda t: t / n_micro, g)  # this micro-batch's share\n",
            ),
        ),
    ),
    Mistake(  # drafts/heldback7: the new params psummed "to keep replicas in sync"
        id="dp-step-new-params-psummed-to-sync",
        module=L06,
        exercise="dp_train_step",
        status="failed",
        check="values",
        says=("N = 4 times the updated params", "the new params need no collective"),
        patch=(
            (
                "        return new, lax.pmean(local_loss, AXIS)  # mean of equal-sized local means\n",
                "        new = jax.tree.map(lambda w: lax.psum(w, AXIS), new)  # keep replicas in sync\n"
                "        return new, lax.pmean(local_loss, AXIS)  # mean of equal-sized local means\n",
            ),
        ),
    ),
]
