"""Realistic wrong implementations for lesson 12 (see tests/mistakes/__init__.py).

One per way of getting the composed step wrong that the lesson warns about:
a partial sum over 'model' never reduced, gradients all-reduced instead of
reduce-scattered, weights gathered over both axes, a local mean, a wrong
sharding rule, a remat policy that still keeps the gathered weights, and a
prediction that forgets the backward's re-gather.
"""

from __future__ import annotations

from tests.mistakes import Mistake

L12 = "l12_parallel_transformer"
ROW_PARALLEL = 'h = h + lax.psum(o.reshape(b, s, heads * dh) @ w["wo"], "model")'
SHARD_MAP = "in_specs=(specs, batch, batch), out_specs=(specs, P()))("

ALL_REDUCED_GRADS = """
def _gather(w):
    return w  # the weights arrive gathered, from train_step


def train_step(params, x, y, mesh, lr, n_heads):
    dh = params["wq"].shape[2] // n_heads
    rows = x.shape[0] * x.shape[1]
    specs = {k: _spec(k) for k in params}
    batch = _spec("x")
    d_axis = {"wq": 1, "wk": 1, "wv": 1, "wo": 2, "w_in": 1, "w_out": 2}

    def body(p, xb, yb):
        # gather every weight first, differentiate, then add the gradients and keep my slice
        full = {k: lax.all_gather(v, "data", axis=d_axis[k], tiled=True) for k, v in p.items()}
        local, g = jax.value_and_grad(_local_loss)(full, xb, yb, dh, rows)
        me = lax.axis_index("data")
        new = {}
        for k, w in p.items():
            size = w.shape[d_axis[k]]
            mine = lax.dynamic_slice_in_dim(lax.psum(g[k], "data"), me * size, size, d_axis[k])
            new[k] = w - lr * mine
        return new, lax.psum(local, "data")

    return jax.shard_map(body, mesh=mesh, in_specs=(specs, batch, batch),
                         out_specs=(specs, P()))(params, x, y)
"""

GATHERED_OVER_BOTH_AXES = """
def _block(h, w, dh):  # every head and every F column here: no psum needed
    b, s, _ = h.shape
    heads = w["wq"].shape[1] // dh
    split = lambda t: t.reshape(b, s, heads, dh)
    q, k, v = split(h @ w["wq"]), split(h @ w["wk"]), split(h @ w["wv"])
    o = jax.vmap(lambda q, k, v: attention(q, k, v, causal=True))(q, k, v)
    h = h + o.reshape(b, s, heads * dh) @ w["wo"]
    return h + jnp.tanh(h @ w["w_in"]) @ w["w_out"]


def _local_loss(params, x, y, dh, rows):
    d_axis = {"wq": 1, "wk": 1, "wv": 1, "wo": 2, "w_in": 1, "w_out": 2}
    m_axis = {"wq": 2, "wk": 2, "wv": 2, "wo": 1, "w_in": 2, "w_out": 1}
    full = {  # "simpler": the whole model on every device, then plain data parallelism
        k: lax.all_gather(lax.all_gather(v, "data", axis=d_axis[k], tiled=True), "model",
                          axis=m_axis[k], tiled=True, to="invarying")
        for k, v in params.items()
    }
    block = jax.checkpoint(lambda h, w: _block(h, w, dh))
    h, _ = lax.scan(lambda h, w: (block(h, w), None), x, full)
    err = h - y
    return 0.5 * jnp.sum(err * err) / rows
"""

MISTAKES: list[Mistake] = [
    Mistake(
        id="l12-attention-without-the-causal-mask",
        module=L12,
        exercise="train_step",
        patch=(("attention(q, k, v, causal=True)", "attention(q, k, v, causal=False)"),),
        status="failed",
        check="values",
        says=("forward pass is wrong", "equals the model's without the causal mask"),
        never=("never all-reduced",),  # its all-reduces are the reference's, byte for byte
    ),
    Mistake(
        id="l12-mlp-without-tanh",
        module=L12,
        exercise="train_step",
        patch=(('jnp.tanh(hv @ w["w_in"]) @ w["w_out"]', '(hv @ w["w_in"]) @ w["w_out"]'),),
        status="failed",
        check="values",
        says=("forward pass is wrong", "moves what the reference's moves per device"),
        never=("never all-reduced", "causal mask"),
    ),
    Mistake(
        id="l12-row-parallel-without-all-reduce",
        module=L12,
        exercise="train_step",
        patch=(
            (ROW_PARALLEL, 'h = h + o.reshape(b, s, heads * dh) @ w["wo"]  # psum forgotten'),
            (
                SHARD_MAP,
                "in_specs=(specs, batch, batch), out_specs=(specs, P()),\n"
                "                         check_vma=False)(",
            ),
        ),  # fmt: skip
        status="failed",
        check="values",
        says=("the loss differs too", "forward pass is wrong", "psum it over 'model'"),
    ),
    Mistake(
        id="l12-gradients-all-reduced-over-data",
        module=L12,
        exercise="train_step",
        code=ALL_REDUCED_GRADS,
        status="failed",
        check="collectives per axis",
        says=("all-reduce", "over 'data'", "gradients are all-reduced over 'data'"),
    ),
    Mistake(
        id="l12-gradients-all-reduced-hold-the-model-column",
        module=L12,
        exercise="train_step",
        code=ALL_REDUCED_GRADS,
        status="failed",
        check="memory",
        says=("|params|/(2·model)", "whole gradient of its 'model' column"),
    ),
    Mistake(
        id="l12-params-gathered-over-both-axes",
        module=L12,
        exercise="train_step",
        code=GATHERED_OVER_BOTH_AXES,
        status="failed",
        check="memory",
        says=("temporary bytes per device", "gathered over 'model' too"),
    ),
    Mistake(
        id="l12-loss-averaged-over-the-local-batch",
        module=L12,
        exercise="train_step",
        patch=(
            (
                "return 0.5 * jnp.sum(err * err) / rows",
                "return 0.5 * jnp.mean(jnp.sum(err * err, axis=-1))  # my rows' mean",
            ),
        ),  # fmt: skip
        status="failed",
        check="values",
        says=("data = 4 times too large", "global B·S"),
    ),
    Mistake(
        id="l12-bfloat16-gathers",
        module=L12,
        exercise="train_step",
        patch=(
            (
                "    w = _gather(w)\n",
                "    w = {k: v.astype(jnp.bfloat16) for k, v in _gather(w).items()}  # half the bytes\n",
            ),
        ),  # fmt: skip
        status="failed",
        check="values",
        says=("computes in bfloat16", "keep every array float32"),
    ),
    Mistake(
        id="l12-heads-sharded-over-data",
        module=L12,
        exercise="shard_params",
        patch=(
            (
                '"embed": "data",  # FSDP: every weight split over \'data\' on D',
                '"embed": None,  # heads take the data axis instead',
            ),
            ('"heads": "model",', '"heads": "data",'),
        ),  # fmt: skip
        status="failed",
        check="sharding",
        says=("Your rules put embed on None, heads on 'data'", "heads and mlp → 'model'"),
    ),
    Mistake(
        id="l12-remat-saves-all-but-the-weights-names",
        module=L12,
        exercise="train_step",
        patch=(
            (
                "    w = _gather(w)\n",
                "    w = {k: checkpoint_name(v, 'gathered') for k, v in _gather(w).items()}\n",
            ),
            (
                "policy=SAVE_MID)",
                "policy=jax.checkpoint_policies.save_anything_except_these_names('gathered'))",
            ),
        ),  # fmt: skip
        status="failed",
        check="memory",
        says=("still saves them", "save_only_these_names"),
    ),
    Mistake(
        id="l12-prediction-forgets-the-re-gather",
        module=L12,
        exercise="predict_step_bytes",
        patch=(
            (
                '"all-gather": 2 * (data - 1) * weights // data,  # forward + the backward\'s re-gather',
                '"all-gather": (data - 1) * weights // data,  # every weight gathered once',
            ),
        ),  # fmt: skip
        status="failed",
        check="prediction",
        says=("you predict", "0.50×", "the backward gathers every layer again"),
    ),
    Mistake(
        id="l12-train-step-heads-on-data",
        module=L12,
        exercise="train_step",
        patch=(('"heads": "model",', '"heads": "data",'),),
        status="error",
        check=None,
        says=("Your rules put heads on 'data'", "heads and mlp → 'model'"),
    ),
    Mistake(
        id="l12-check-vma-off",
        module=L12,
        exercise="train_step",
        patch=(
            (
                SHARD_MAP,
                "in_specs=(specs, batch, batch), out_specs=(specs, P()),\n"
                "                         check_vma=False)(",
            ),
        ),  # fmt: skip
        status="failed",
        check="values",
        says=("every layer's gradients differ; the loss agrees", "Keep check_vma=True"),
    ),
    # ---------------------------------------------------------------- issue 18 §4: value failures
    Mistake(
        id="l12-loss-without-its-half",
        module=L12,
        exercise="train_step",
        status="failed",
        check="values",
        says=("exactly 2 × the reference", "lost its ½"),
        patch=(("return 0.5 * jnp.sum(err * err) / rows", "return jnp.sum(err * err) / rows"),),
    ),
    Mistake(
        id="l12-heads-split-at-one-stride-then-swapped",
        module=L12,
        exercise="train_step",
        status="failed",
        check="values",
        says=("split at one stride and merged at another", "no swap"),
        patch=(
            (
                "        return t.reshape(b, s, heads, dh)",
                "        return t.reshape(b, s, dh, heads).swapaxes(2, 3)  # -> [B, S, heads, Dh]",
            ),
        ),
    ),
    Mistake(
        id="l12-heads-merged-at-another-stride",
        module=L12,
        exercise="train_step",
        status="failed",
        check="values",
        says=("split head-major but merged at another stride", "no swap"),
        patch=((ROW_PARALLEL, ROW_PARALLEL.replace("o.reshape", "o.swapaxes(2, 3).reshape")),),
    ),
    Mistake(
        id="l12-heads-at-the-wrong-stride",
        module=L12,
        exercise="train_step",
        status="failed",
        check="values",
        says=("split (and merged) at the wrong stride", "no swap"),
        patch=(
            (ROW_PARALLEL, ROW_PARALLEL.replace("o.reshape", "o.swapaxes(2, 3).reshape")),
            (
                "        return t.reshape(b, s, heads, dh)",
                "        return t.reshape(b, s, dh, heads).swapaxes(2, 3)",
            ),
        ),
    ),
]

# ---------------------------------------------------------------- issue 37: a carry gains 'model'
MLP_ROW_PARALLEL = 'return h + lax.psum(jnp.tanh(hv @ w["w_in"]) @ w["w_out"], "model")'
MISTAKES += [
    Mistake(
        id="l12-attention-psum-forgotten-under-check-vma",
        module=L12,
        exercise="train_step",
        patch=((ROW_PARALLEL, 'h = h + o.reshape(b, s, heads * dh) @ w["wo"]'),),
        status="error",
        check=None,
        says=("without lax.psum over 'model'", "would only silence"),
    ),
    Mistake(
        id="l12-mlp-psum-before-the-down-projection",
        module=L12,
        exercise="train_step",
        patch=(
            (
                MLP_ROW_PARALLEL,
                'return h + lax.psum(jnp.tanh(hv @ w["w_in"]), "model") @ w["w_out"]',
            ),
        ),  # fmt: skip
        status="error",
        check=None,
        says=("without lax.psum over 'model'", "would only silence"),
    ),
]
MISTAKES += [
    Mistake(
        id="l12-gradients-psummed-over-model",
        module=L12,
        exercise="train_step",
        patch=(
            (
                "        local, g = jax.value_and_grad(_local_loss)(p, xb, yb, dh, rows)",
                "        local, g = jax.value_and_grad(_local_loss)(p, xb, yb, dh, rows)\n"
                '        g = jax.tree.map(lambda a: lax.pmean(a, "model"), g)  # sync the TP ranks',
            ),
        ),
        status="failed",
        check="bytes",
        says=("shaped like weights or their gradients", "reduced over 'model'"),
    ),
]
MISTAKES += [
    Mistake(
        id="l12-batch-rule-on-model",
        module=L12,
        exercise="train_step",
        patch=(('"batch": "data",', '"batch": "model",'),),
        status="error",
        check=None,
        says=("batch on 'model'", "for x (or y)"),
    ),
    Mistake(
        id="l12-mlp-rule-unsplit",
        module=L12,
        exercise="shard_params",
        patch=(('"mlp": "model",', '"mlp": None,'),),
        status="failed",
        check="sharding",
        says=("Your rules put mlp on None",),
    ),
    Mistake(
        id="l12-act-embed-rule-on-model",
        module=L12,
        exercise="train_step",
        patch=(('"act_embed": None,  # activations keep D whole', '"act_embed": "model",'),),
        status="error",
        check=None,
        says=("act_embed on 'model'", "for x (or y)"),
    ),
]
AR_PREDICTED = '"all-reduce": 4 * n_layers * 2 * (model - 1) * act // model'
MISTAKES += [
    Mistake(
        id="l12-prediction-all-reduce-forward-only",
        module=L12,
        exercise="predict_step_bytes",
        patch=((AR_PREDICTED, AR_PREDICTED.replace("4 * n_layers", "2 * n_layers")),),
        status="failed",
        check="prediction",
        says=("transpose in the backward", "2·(G−1)/G·n"),  # both causes halve it
    ),
    Mistake(
        id="l12-prediction-in-elements",
        module=L12,
        exercise="predict_step_bytes",
        patch=(
            (
                "weights = sum(_size(shapes[k]) for k in NAMES) * itemsize // model",
                "weights = sum(_size(shapes[k]) for k in NAMES) // model",
            ),
        ),  # fmt: skip
        status="failed",
        check="prediction",
        says=("elements, not bytes", "item size"),
    ),
    Mistake(
        id="l12-prediction-weights-divided-by-data-too",
        module=L12,
        exercise="predict_step_bytes",
        patch=(
            (
                "weights = sum(_size(shapes[k]) for k in NAMES) * itemsize // model",
                "weights = sum(_size(shapes[k]) for k in NAMES) * itemsize // (model * data)",
            ),
        ),  # fmt: skip
        status="failed",
        check="prediction",
        says=("0.25×",),
        never=("elements, not bytes",),  # 1/data = 1/4 = 1/itemsize on the 4×2 mesh
    ),
    Mistake(
        id="l12-prediction-weights-not-divided-by-model",
        module=L12,
        exercise="predict_step_bytes",
        patch=(
            (
                "weights = sum(_size(shapes[k]) for k in NAMES) * itemsize // model",
                "weights = sum(_size(shapes[k]) for k in NAMES) * itemsize",
            ),
        ),  # fmt: skip
        status="failed",
        check="prediction",
        says=("one 'model' column",),
    ),
    Mistake(
        id="l12-prediction-activations-of-the-whole-batch",
        module=L12,
        exercise="predict_step_bytes",
        patch=(("act = b // data * s * d * itemsize", "act = b * s * d * itemsize"),),
        status="failed",
        check="prediction",
        says=("[B/data, S, D], not the whole batch",),
    ),
]
MISTAKES += [
    Mistake(
        id="l12-batch-gathered-over-data",
        module=L12,
        exercise="train_step",
        patch=(
            (
                "        local, g = jax.value_and_grad(_local_loss)(p, xb, yb, dh, rows)",
                '        xa, ya = (lax.all_gather(t, "data", axis=0, tiled=True) for t in (xb, yb))\n'
                '        data = lax.axis_size("data")  # every device sees every row, 1/data each\n'
                "        local, g = jax.value_and_grad(_local_loss)(p, xa, ya, dh, rows * data)",
            ),
        ),
        status="failed",
        check="memory",
        says=("returns the whole batch", "The batch never moves", "whole batch's activations"),
    ),
    Mistake(
        id="l12-batch-gathered-over-data-all-reduces",
        module=L12,
        exercise="train_step",
        patch=(
            (
                "        local, g = jax.value_and_grad(_local_loss)(p, xb, yb, dh, rows)",
                '        xa, ya = (lax.all_gather(t, "data", axis=0, tiled=True) for t in (xb, yb))\n'
                '        data = lax.axis_size("data")  # every device sees every row, 1/data each\n'
                "        local, g = jax.value_and_grad(_local_loss)(p, xa, ya, dh, rows * data)",
            ),
        ),
        status="failed",
        check="bytes",
        says=("activations of the whole batch", "gathered over 'data'"),
    ),
]
MISTAKES += [
    Mistake(
        id="l12-params-gathered-over-both-axes-check-vma",
        module=L12,
        exercise="train_step",
        code=GATHERED_OVER_BOTH_AXES.replace(', to="invarying")', ")"),
        status="error",
        check=None,
        says=("a weight all_gathered over 'model'", "would only silence"),
    ),
    Mistake(  # held back in drafts/heldback until its hint was made right (issue 45)
        id="l12-loss-pmean-over-data",
        module="l12_parallel_transformer",
        exercise="train_step",
        status="failed",
        check="values",
        says=("only the loss you return differs", "1/'data'"),
        never=("the forward pass is wrong", "taken after the step"),
        patch=(
            (
                'return new, lax.psum(local, "data")',
                'return new, lax.pmean(local, "data")  # the replicas\' average loss',
            ),
        ),
    ),
    Mistake(  # issue 45 audit: told "how the loss is combined over the devices"
        id="l12-loss-taken-after-the-step",
        module="l12_parallel_transformer",
        exercise="train_step",
        status="failed",
        check="values",
        says=("the loss of the updated params", "taken after the step"),
        never=("combined over the devices",),
        patch=(
            (
                "        local, g = jax.value_and_grad(_local_loss)(p, xb, yb, dh, rows)\n"
                "        new = jax.tree.map(lambda w, gw: w - lr * gw, p, g)\n"
                '        return new, lax.psum(local, "data")',
                "        g = jax.grad(_local_loss)(p, xb, yb, dh, rows)\n"
                "        new = jax.tree.map(lambda w, gw: w - lr * gw, p, g)\n"
                '        return new, lax.psum(_local_loss(new, xb, yb, dh, rows), "data")',
            ),
        ),
    ),
    Mistake(  # issue 45: x is no weight; a fixed example with a batch larger than them
        id="l12-prediction-gathers-x-with-the-weights",
        module="l12_parallel_transformer",
        exercise="predict_step_bytes",
        status="failed",
        check="prediction",
        says=("x is counted with the weights",),
        patch=(
            (
                "weights = sum(_size(shapes[k]) for k in NAMES) * itemsize // model",
                'weights = (sum(_size(shapes[k]) for k in NAMES) + _size(shapes["x"])) * itemsize // model',
            ),
        ),
    ),
    Mistake(  # drafts/heldback6: the weights' bytes times the layers their shapes already hold
        id="l12-prediction-weights-times-the-layers",
        module="l12_parallel_transformer",
        exercise="predict_step_bytes",
        status="failed",
        check="prediction",
        says=("L = 8 times", "already holds every layer"),
        patch=(
            (
                "    weights = sum(_size(shapes[k]) for k in NAMES) * itemsize // model",
                '    weights = shapes["wq"][0] * sum(_size(shapes[k]) for k in NAMES) * itemsize // model',
            ),
        ),
    ),
    Mistake(  # drafts/heldback7: activations sized by the heads' width; "no known slip" before
        id="l12-prediction-activation-width-of-the-heads",
        module="l12_parallel_transformer",
        exercise="predict_step_bytes",
        status="failed",
        check="prediction",
        says=("not the heads' width H·Dh = 24",),
        patch=(
            (
                "    act = b // data * s * d * itemsize  # h on one device: [B/data, S, D]\n",
                '    act = b // data * s * shapes["wq"][2] * itemsize  # o on one device: [B/data, S, H·Dh]\n',
            ),
        ),
    ),
    Mistake(  # drafts/heldback8: a false pass (every example was at itemsize 4)
        id="l12-prediction-reduce-scatter-in-float32",
        module="l12_parallel_transformer",
        exercise="predict_step_bytes",
        status="failed",
        check="prediction",
        says=("at itemsize = 2 (bfloat16) you predict", "a fixed 4 bytes (float32's)"),
        patch=(
            (
                '        "reduce-scatter": (data - 1) * weights // data,',
                '        "reduce-scatter": (data - 1) * (weights // itemsize * 4) // data,  # fp32 gradients',
            ),
        ),
    ),
]
