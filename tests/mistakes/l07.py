"""Realistic wrong implementations for lesson 7 (see tests/mistakes/__init__.py).

The memory mistakes are the ways of holding the whole model that the lesson
text measures: every layer gathered before the loop, no remat, remat around
the layer but outside its gathers, a checkpoint around the whole forward, a
Python loop. Each fails the memory check with a hint naming its own way.
"""

from __future__ import annotations

from tests.mistakes import Mistake

L07 = "l07_fsdp"

GATHERED_UP_FRONT = """
def _local_forward(params, x):
    full = {  # every layer at once: [L, D, F] and [L, F, D] on each device
        "w_in": lax.all_gather(params["w_in"], AXIS, axis=1, tiled=True),
        "w_out": lax.all_gather(params["w_out"], AXIS, axis=2, tiled=True),
    }
    step = jax.checkpoint(lambda h, w: (layer(h, w["w_in"], w["w_out"]), None))
    return lax.scan(step, x, full)[0]
"""

REMAT_OUTSIDE_GATHERS = """
def _local_forward(params, x):
    checkpointed = jax.checkpoint(layer)  # the gathered weights are its inputs

    def step(h, w):
        w_in = lax.all_gather(w["w_in"], AXIS, axis=0, tiled=True)
        w_out = lax.all_gather(w["w_out"], AXIS, axis=1, tiled=True)
        return checkpointed(h, w_in, w_out), None

    return lax.scan(step, x, params)[0]
"""

CHECKPOINT_WHOLE_FORWARD = """
@jax.checkpoint
def _local_forward(params, x):
    def step(h, w):
        return _gathered_layer(h, w["w_in"], w["w_out"]), None

    return lax.scan(step, x, params)[0]
"""

PYTHON_LOOP = """
def _local_forward(params, x):
    gathered_layer = jax.checkpoint(_gathered_layer)
    h = x
    for i in range(params["w_in"].shape[0]):  # unrolled: L copies of the layer
        h = gathered_layer(h, params["w_in"][i], params["w_out"][i])
    return h
"""

ALL_REDUCED_THEN_SLICED = """
def _full_loss(full, x, y, batch):
    err = forward(full, x) - y
    return 0.5 * jnp.sum(err * err) / batch

def _my_slice(full_grads):
    me, n = lax.axis_index(AXIS), lax.axis_size(AXIS)
    d = full_grads["w_in"].shape[1] // n
    return {
        "w_in": lax.dynamic_slice_in_dim(full_grads["w_in"], me * d, d, axis=1),
        "w_out": lax.dynamic_slice_in_dim(full_grads["w_out"], me * d, d, axis=2),
    }

def _gather_all(p):
    return {
        "w_in": lax.all_gather(p["w_in"], AXIS, axis=1, tiled=True, to="invarying"),
        "w_out": lax.all_gather(p["w_out"], AXIS, axis=2, tiled=True, to="invarying"),
    }

def fsdp_grads(params, x, y, mesh):
    batch = x.shape[0]

    def body(p, xb, yb):
        # the gradient w.r.t. replicated weights comes back summed: an all-reduce
        return _my_slice(jax.grad(_full_loss)(_gather_all(p), xb, yb, batch))

    return jax.shard_map(body, mesh=mesh, in_specs=(PARAMS, BATCH, BATCH), out_specs=PARAMS)(
        params, x, y
    )
"""

GATHERED_OUTSIDE = (  # audit 67: the weights gathered outside jax.grad, the shard sliced out
    "    def body(p, xb, yb):\n"
    "        full = {'w_in': lax.all_gather(p['w_in'], AXIS, axis=1, tiled=True),\n"
    "                'w_out': lax.all_gather(p['w_out'], AXIS, axis=2, tiled=True)}\n"
    "\n"
    "        def loss(f):\n"
    "            h, _ = lax.scan(lambda h, w: (layer(h, w['w_in'], w['w_out']), None), xb, f)\n"
    "            e = h - yb\n"
    "            return 0.5 * jnp.sum(e * e) / batch\n"
    "\n"
    "        g = jax.grad(loss)(full)\n"
    "        me, n = lax.axis_index(AXIS), lax.axis_size(AXIS)\n"
    "        d_in, d_out = g['w_in'].shape[1] // n, g['w_out'].shape[2] // n\n"
    "        return {'w_in': lax.dynamic_slice_in_dim(g['w_in'], me * d_in, d_in, axis=1),\n"
    "                'w_out': lax.dynamic_slice_in_dim(g['w_out'], me * d_out, d_out, axis=2)}\n"
)
"""``fsdp_grads``'s body with the whole params gathered before the gradient is taken: each
device's gradient of its own rows, never summed over the devices."""
OLD_BODY = "    def body(p, xb, yb):\n        return jax.grad(_local_loss)(p, xb, yb, batch)\n"


MISTAKES: list[Mistake] = [
    Mistake(
        id="fsdp-loss-after-the-update",
        module=L07,
        exercise="fsdp_train_step",
        status="failed",
        check="values",
        says=("Your loss is the loss after the step", "loss at the new params"),
        never=("stray scale factor",),
        patch=(
            (
                "return new, lax.psum(local, AXIS)  # the one all-reduce: a scalar",
                "return new, lax.psum(_local_loss(new, xb, yb, batch), AXIS)",
            ),
        ),
    ),
    Mistake(
        id="fsdp-loss-after-the-update-gathers-three-times",
        module=L07,
        exercise="fsdp_train_step",
        status="failed",
        check="all-gather bytes",
        says=("gathers every layer 3 times", "a second forward"),
        patch=(
            (
                "return new, lax.psum(local, AXIS)  # the one all-reduce: a scalar",
                "return new, lax.psum(_local_loss(new, xb, yb, batch), AXIS)",
            ),
        ),
    ),
    Mistake(
        id="fsdp-gathered-up-front",
        module=L07,
        exercise="fsdp_grads",
        code=GATHERED_UP_FRONT,
        status="failed",
        check="memory",
        says=("before the loop", "whole model"),
    ),
    Mistake(
        id="fsdp-forward-gathered-up-front",
        module=L07,
        exercise="fsdp_forward",
        code=GATHERED_UP_FRONT,
        status="failed",
        check="transfer size",
        says=("one layer's weights", "layer by layer"),
    ),
    Mistake(
        id="fsdp-no-remat",
        module=L07,
        exercise="fsdp_grads",
        status="failed",
        check="memory",
        says=("No remat", "jax.checkpoint"),
        patch=(
            (
                "gathered_layer = jax.checkpoint(_gathered_layer)",
                "gathered_layer = _gathered_layer",
            ),
        ),
    ),
    Mistake(
        id="fsdp-train-step-no-remat",
        module=L07,
        exercise="fsdp_train_step",
        status="failed",
        check="memory",
        says=("No remat",),
        patch=(
            (
                "gathered_layer = jax.checkpoint(_gathered_layer)",
                "gathered_layer = _gathered_layer",
            ),
        ),
    ),
    Mistake(
        id="fsdp-remat-outside-gathers",
        module=L07,
        exercise="fsdp_grads",
        code="from tinymodels import layer\n" + REMAT_OUTSIDE_GATHERS,
        status="failed",
        check="memory",
        says=("the gathers are outside the checkpointed function", "all-gathered once"),
    ),
    Mistake(
        id="fsdp-checkpoint-whole-forward",
        module=L07,
        exercise="fsdp_grads",
        code=CHECKPOINT_WHOLE_FORWARD,
        status="failed",
        check="memory",
        says=("whole forward",),
    ),
    Mistake(
        id="fsdp-python-loop",
        module=L07,
        exercise="fsdp_grads",
        code=PYTHON_LOOP,
        status="failed",
        check="memory",
        says=("Python for-loop", "lax.scan"),
    ),
    Mistake(
        id="fsdp-grads-all-reduced-then-sliced",
        module=L07,
        exercise="fsdp_grads",
        code="from tinymodels import forward\n" + ALL_REDUCED_THEN_SLICED,
        status="failed",
        check="collectives",
        says=("all-reduce", "reduce-scatter", "half the bytes"),
    ),
    Mistake(
        id="fsdp-train-step-all-reduced-then-sliced",
        module=L07,
        exercise="fsdp_train_step",
        code="from tinymodels import forward\n"
        + ALL_REDUCED_THEN_SLICED
        + """
def fsdp_train_step(params, x, y, mesh, lr):
    batch = x.shape[0]

    def body(p, xb, yb):
        local, g = jax.value_and_grad(_full_loss)(_gather_all(p), xb, yb, batch)
        new = jax.tree.map(lambda w, gw: w - lr * gw, p, _my_slice(g))
        return new, lax.psum(local, AXIS)

    return jax.shard_map(
        body, mesh=mesh, in_specs=(PARAMS, BATCH, BATCH), out_specs=(PARAMS, P())
    )(params, x, y)
""",
        status="failed",
        check="all-reduce bytes",
        says=("already gathered",),
    ),
    Mistake(
        id="fsdp-params-returned-replicated",
        module=L07,
        exercise="fsdp_train_step",
        code="""
def fsdp_train_step(params, x, y, mesh, lr):
    batch = x.shape[0]

    def body(p, xb, yb):
        local, g = jax.value_and_grad(_local_loss)(p, xb, yb, batch)
        new = jax.tree.map(lambda w, gw: w - lr * gw, p, g)
        whole = {  # "the caller wants whole params back"
            "w_in": lax.all_gather(new["w_in"], AXIS, axis=1, tiled=True, to="invarying"),
            "w_out": lax.all_gather(new["w_out"], AXIS, axis=2, tiled=True, to="invarying"),
        }
        return whole, lax.psum(local, AXIS)

    return jax.shard_map(
        body, mesh=mesh, in_specs=(PARAMS, BATCH, BATCH), out_specs=(P(), P())
    )(params, x, y)
""",
        status="failed",
        check="sharding",
        says=("replicated", "FSDP exists to avoid"),
    ),
    Mistake(
        id="fsdp-loss-local-mean",
        module=L07,
        exercise="fsdp_grads",
        status="failed",
        check="values",
        says=("N = 4 times too large", "global batch"),
        patch=(("0.5 * jnp.sum(err * err) / batch", "0.5 * jnp.sum(err * err) / x.shape[0]"),),
    ),
    Mistake(
        id="fsdp-train-step-loss-local-mean",
        module=L07,
        exercise="fsdp_train_step",
        status="failed",
        check="values",
        says=("too large", "global batch"),
        patch=(("0.5 * jnp.sum(err * err) / batch", "0.5 * jnp.sum(err * err) / x.shape[0]"),),
    ),
    Mistake(
        id="fsdp-gathers-in-bfloat16",
        module=L07,
        exercise="fsdp_grads",
        status="failed",
        check="values",
        says=("bfloat16",),
        patch=(
            (
                "w_in = lax.all_gather(w_in_blk, AXIS, axis=0, tiled=True)",
                "w_in = lax.all_gather(w_in_blk.astype(jnp.bfloat16), AXIS, axis=0, tiled=True)"
                ".astype(jnp.float32)  # half the bytes",
            ),
        ),
    ),
    Mistake(
        id="fsdp-grads-as-tuple",
        module=L07,
        exercise="fsdp_grads",
        code="""
_correct_grads = fsdp_grads

def fsdp_grads(params, x, y, mesh):
    g = _correct_grads(params, x, y, mesh)
    return g["w_in"], g["w_out"]
""",
        status="failed",
        check="returns",
        says=("tuple", "'w_in' and 'w_out'"),
    ),
    # ---------------------------------------------------------------- check_vma's refusals
    Mistake(
        id="fsdp-params-returned-replicated-check-vma",
        module=L07,
        exercise="fsdp_train_step",
        code="""
def fsdp_train_step(params, x, y, mesh, lr):
    batch = x.shape[0]

    def body(p, xb, yb):
        local, g = jax.value_and_grad(_local_loss)(p, xb, yb, batch)
        new = jax.tree.map(lambda w, gw: w - lr * gw, p, g)
        whole = {  # "the caller wants whole params back"
            "w_in": lax.all_gather(new["w_in"], AXIS, axis=1, tiled=True),
            "w_out": lax.all_gather(new["w_out"], AXIS, axis=2, tiled=True),
        }
        return whole, lax.psum(local, AXIS)

    return jax.shard_map(
        body, mesh=mesh, in_specs=(PARAMS, BATCH, BATCH), out_specs=(P(), P())
    )(params, x, y)
""",
        status="error",
        check=None,
        says=("Params returned replicated", "FSDP exists to avoid", "Do not make it pass"),
    ),
    Mistake(
        id="fsdp-train-step-loss-never-reduced",
        module=L07,
        exercise="fsdp_train_step",
        status="error",
        check=None,
        says=("The loss (output [1])", "lax.psum of shares divided by the global batch size"),
        patch=(("return new, lax.psum(local, AXIS)", "return new, local"),),
    ),
    Mistake(
        id="fsdp-forward-python-loop",
        module=L07,
        exercise="fsdp_forward",
        code=PYTHON_LOOP,
        status="failed",
        check="memory",
        says=("no all-gather carries more than one layer", "Python for-loop", "lax.scan"),
    ),
    # ---------------------------------------------------------------- issue 18 §4: value failures
    Mistake(
        id="fsdp-gathers-on-the-wrong-axis",
        module=L07,
        exercise="fsdp_forward",
        status="failed",
        check="values",
        says=("blocks of w_in's rows", "interleaved", "axis=0, tiled=True"),
        patch=(
            (
                "w_in = lax.all_gather(w_in_blk, AXIS, axis=0, tiled=True)  # [D/N, F] -> [D, F]",
                "w_in = lax.all_gather(w_in_blk, AXIS, axis=1).reshape(-1, w_in_blk.shape[1])",
            ),
        ),
    ),
    Mistake(
        id="fsdp-grads-gather-w-out-on-the-wrong-axis",
        module=L07,
        exercise="fsdp_grads",
        status="failed",
        check="values",
        says=("blocks of w_out's columns", "interleaved", "axis=1, tiled=True"),
        patch=(
            (
                "w_out = lax.all_gather(w_out_blk, AXIS, axis=1, tiled=True)  # [F, D/N] -> [F, D]",
                "w_out = lax.all_gather(w_out_blk, AXIS, axis=2).reshape(w_out_blk.shape[0], -1)",
            ),
        ),
    ),
    Mistake(
        id="fsdp-train-step-gathers-on-the-wrong-axis",
        module=L07,
        exercise="fsdp_train_step",
        status="failed",
        check="values",
        says=("blocks of w_in's rows", "interleaved"),
        patch=(
            (
                "w_in = lax.all_gather(w_in_blk, AXIS, axis=0, tiled=True)  # [D/N, F] -> [D, F]",
                "w_in = lax.all_gather(w_in_blk, AXIS, axis=1).reshape(-1, w_in_blk.shape[1])",
            ),
        ),
    ),
]

# ---------------------------------------------------------------- issue 37: read what the extra
# all-gather carries
MISTAKES += [
    Mistake(
        id="fsdp-forward-gathers-the-batch",
        module=L07,
        exercise="fsdp_forward",
        code="""
def fsdp_forward(params, x, mesh):
    def body(p, xb):
        whole = lax.all_gather(xb, AXIS, axis=0, tiled=True)  # every row, to run them together
        h = _local_forward(p, whole)
        rows = xb.shape[0]
        return lax.dynamic_slice_in_dim(h, lax.axis_index(AXIS) * rows, rows, 0)

    return jax.shard_map(body, mesh=mesh, in_specs=(PARAMS, BATCH), out_specs=BATCH)(params, x)
""",
        status="failed",
        check="all-gather bytes",
        says=("returns the whole batch", "the batch never moves"),
    ),
]
MISTAKES += [
    Mistake(
        id="fsdp-grads-shards-averaged-again",
        module=L07,
        exercise="fsdp_grads",
        code="""
def fsdp_grads(params, x, y, mesh):
    batch = x.shape[0]

    def body(p, xb, yb):
        g = jax.grad(_local_loss)(p, xb, yb, batch)
        return jax.tree.map(lambda a: lax.pmean(a, AXIS), g)  # average over the data replicas

    return jax.shard_map(body, mesh=mesh, in_specs=(PARAMS, BATCH, BATCH), out_specs=PARAMS)(
        params, x, y
    )
""",
        status="failed",
        check="values",
        says=("already reduce-scattered", "mixed different devices' shards"),
    ),
    Mistake(  # held back in drafts/heldback until its hint was made right (issue 45)
        id="l07-remat-policy-saves-everything",
        module="l07_fsdp",
        exercise="fsdp_grads",
        status="failed",
        check="memory",
        says=("a policy that saves them", "all-gathered once"),
        patch=(
            (
                "gathered_layer = jax.checkpoint(_gathered_layer)",
                "gathered_layer = jax.checkpoint(  # no recomputation, please\n        _gathered_layer, policy=jax.checkpoint_policies.everything_saveable\n    )",
            ),
        ),
    ),
    Mistake(  # issue 45: the loss reported is the scaled objective lr·loss
        id="l07-step-returns-lr-times-the-loss",
        module="l07_fsdp",
        exercise="fsdp_train_step",
        status="failed",
        check="values",
        says=("the factor is lr = 0.5, the learning rate given", "multiplied by it once too often"),
        patch=(
            (
                "        return new, lax.psum(local, AXIS)  # the one all-reduce: a scalar",
                "        return new, lr * lax.psum(local, AXIS)  # the objective stepped on",
            ),
        ),
    ),
    Mistake(  # drafts/heldback6: no reduce-scatter at all was told "an all-reduce?" alone
        id="l07-step-returns-the-old-params",
        module="l07_fsdp",
        exercise="fsdp_train_step",
        status="failed",
        check="reduce-scatter bytes",
        says=("what you return never uses them",),
        patch=(
            (
                "        return new, lax.psum(local, AXIS)",
                "        return p, lax.psum(local, AXIS)",
            ),
        ),
    ),
    Mistake(  # the same program's values: the params it was given, said as such (the
        # change search's "a term left out" came first before, true but less direct)
        id="l07-step-returns-the-old-params-values",
        module="l07_fsdp",
        exercise="fsdp_train_step",
        status="failed",
        check="values",
        says=("equals the input argument 0['w_in']", "returned as it came, never updated"),
        never=("a term left out",),
        patch=(
            (
                "        return new, lax.psum(local, AXIS)",
                "        return p, lax.psum(local, AXIS)",
            ),
        ),
    ),
    Mistake(  # audit 67: gathered outside jax.grad, the shard sliced out, never summed
        id="l07-grads-gathered-outside-the-grad-never-summed",
        module="l07_fsdp",
        exercise="fsdp_grads",
        status="failed",
        check="values",
        says=("its slice of the gradient of its own rows only",),
        never=("an all-reduce?",),
        patch=((OLD_BODY, GATHERED_OUTSIDE),),
    ),
    Mistake(  # the same program's reduce-scatter check: no all-reduce measured, none offered
        id="l07-grads-gathered-outside-the-grad-never-summed-scatters",
        module="l07_fsdp",
        exercise="fsdp_grads",
        status="failed",
        check="reduce-scatter bytes",
        says=("Nothing else sums them over the devices either",),
        never=("all-reduces", "an all-reduce?"),
        patch=((OLD_BODY, GATHERED_OUTSIDE),),
    ),
    Mistake(  # its neighbour: the gathered gradients psum'd whole, then sliced: right values
        id="l07-grads-gathered-outside-the-grad-all-reduced",
        module="l07_fsdp",
        exercise="fsdp_grads",
        status="failed",
        check="reduce-scatter bytes",
        says=("Your program all-reduces", "summed whole on every device"),
        never=("Nothing else sums them",),
        patch=(
            (
                OLD_BODY,
                GATHERED_OUTSIDE.replace(
                    "jax.grad(loss)(full)",
                    "jax.tree.map(lambda a: lax.psum(a, AXIS), jax.grad(loss)(full))",
                ),
            ),
        ),
    ),
    Mistake(  # drafts/heldback7: y gathered at the end was told "the input rows" moved
        id="l07-forward-output-gathered-whole",
        module="l07_fsdp",
        exercise="fsdp_forward",
        status="failed",
        check="all-gather bytes",
        says=("y gathered at the end, or x gathered before the layers",),
        never=("carry the input rows",),
        code="""
def fsdp_forward(params: dict, x: jax.Array, mesh: Mesh) -> jax.Array:
    def body(p, xb):
        yb = _local_forward(p, xb)
        return lax.all_gather(yb, AXIS, axis=0, tiled=True, to="invarying")  # the whole y

    return jax.shard_map(body, mesh=mesh, in_specs=(PARAMS, BATCH), out_specs=P())(params, x)
""",
    ),
    Mistake(  # drafts/heldback7: h + layer(h) where layer adds h already; no hint before
        id="l07-forward-residual-added-twice",
        module="l07_fsdp",
        exercise="fsdp_forward",
        status="failed",
        check="values",
        says=("the term `h` counted twice",),
        patch=(
            (
                "    return layer(h, w_in, w_out)\n",
                "    return h + layer(h, w_in, w_out)  # the residual around the layer\n",
            ),
        ),
    ),
]
