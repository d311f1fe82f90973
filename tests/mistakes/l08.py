"""Realistic wrong implementations for lesson 8 (see tests/mistakes/__init__.py)."""

from __future__ import annotations

from tests.mistakes import Mistake

L08 = "l08_tensor_parallel"

MISTAKES: list[Mistake] = [
    Mistake(
        id="tp-mlp-gathers-the-weights",
        module=L08,
        exercise="tp_mlp",
        code="""
def tp_mlp(x, w_in, w_out, mesh):
    def body(x, w_in_cols, w_out_rows):  # rebuild the whole weights, then run the plain MLP
        w_in_full = lax.all_gather(w_in_cols, "model", axis=1, tiled=True, to="invarying")
        w_out_full = lax.all_gather(w_out_rows, "model", axis=0, tiled=True, to="invarying")
        return jnp.tanh(x @ w_in_full) @ w_out_full

    return jax.shard_map(body, mesh=mesh, in_specs=(P(), COLUMNS, ROWS), out_specs=P())(
        x, w_in, w_out
    )
""",
        status="failed",
        check="weights stay",
        says=("the shape of w_in and w_out", "weights stay where they are"),
    ),
    Mistake(
        id="tp-mlp-all-reduce-after-each-matmul",
        module=L08,
        exercise="tp_mlp",
        code="""
def tp_mlp(x, w_in, w_out, mesh):
    def body(x, w_in_cols, w_out_rows):
        n, me = lax.axis_size("model"), lax.axis_index("model")
        cols = w_in_cols.shape[1]
        # "every matmul needs a psum": assemble the whole hidden layer first ...
        h = jnp.zeros((x.shape[0], n * cols), x.dtype)
        h = lax.psum(lax.dynamic_update_slice_in_dim(h, x @ w_in_cols, me * cols, axis=1), "model")
        h_mine = lax.dynamic_slice_in_dim(jnp.tanh(h), me * cols, cols, axis=1)
        return lax.psum(h_mine @ w_out_rows, "model")  # ... and again after the second

    return jax.shard_map(body, mesh=mesh, in_specs=(P(), COLUMNS, ROWS), out_specs=P())(
        x, w_in, w_out
    )
""",
        status="failed",
        check="one all-reduce",
        says=("2 × all-reduce", "column-parallel", "psum once"),
    ),
    Mistake(
        id="tp-mlp-bfloat16-inside",
        module=L08,
        exercise="tp_mlp",
        code="""
def tp_mlp(x, w_in, w_out, mesh):
    def body(x, w_in_cols, w_out_rows):  # "bf16 matmuls are faster"
        bf = jnp.bfloat16
        h = jnp.tanh(x.astype(bf) @ w_in_cols.astype(bf))
        return lax.psum((h @ w_out_rows.astype(bf)).astype(x.dtype), "model")

    return jax.shard_map(body, mesh=mesh, in_specs=(P(), COLUMNS, ROWS), out_specs=P())(
        x, w_in, w_out
    )
""",
        status="failed",
        check="values",
        says=("bfloat16",),
    ),
    Mistake(
        id="tp-attention-psum-per-head",
        module=L08,
        exercise="tp_attention",
        status="failed",
        check="one all-reduce",
        says=("merged", "psum each head"),
        patch=(
            (
                '        return lax.psum(o.reshape(b, s, heads * dh) @ wo, "model")',
                "        wo_heads = wo.reshape(heads, dh, -1)\n"
                '        return sum(lax.psum(o[:, :, h] @ wo_heads[h], "model") for h in range(heads))',
            ),
        ),
    ),
    Mistake(
        id="tp-attention-heads-at-the-wrong-stride",
        module=L08,
        exercise="tp_attention",
        status="failed",
        check="values",
        says=("wrong stride",),
        patch=(
            (
                "            return t.reshape(b, s, heads, dh)",
                "            return t.reshape(b, s, dh, heads).swapaxes(2, 3)  # head index fastest",
            ),
            (
                "o.reshape(b, s, heads * dh) @ wo",
                "o.swapaxes(2, 3).reshape(b, s, heads * dh) @ wo",
            ),
        ),
    ),
    Mistake(
        id="sp-mlp-all-reduce-then-slice",
        module=L08,
        exercise="sp_mlp",
        code="""
def sp_mlp(x, w_in, w_out, mesh):
    def body(x_rows, w_in_cols, w_out_rows):
        x_full = lax.all_gather(x_rows, "model", axis=0, tiled=True)
        y = lax.psum(jnp.tanh(x_full @ w_in_cols) @ w_out_rows, "model")  # the whole y ...
        rows = x_rows.shape[0]
        return lax.dynamic_slice_in_dim(y, lax.axis_index("model") * rows, rows)  # ... then mine

    return jax.shard_map(body, mesh=mesh, in_specs=(ROWS, COLUMNS, ROWS), out_specs=ROWS)(
        x, w_in, w_out
    )
""",
        status="failed",
        check="collectives",
        says=("all-reduce", "psum_scatter"),
    ),
    Mistake(
        id="dp-tp-mlp-reduces-over-both-axes",
        module=L08,
        exercise="dp_tp_mlp",
        status="failed",
        check="groups",
        says=("spans 'data'", "psum over 'model' only"),
        patch=(
            (
                'return lax.psum(_mlp_partial(x_rows, w_in_cols, w_out_rows), "model")',
                'return lax.psum(_mlp_partial(x_rows, w_in_cols, w_out_rows), ("data", "model"))',
            ),
        ),
    ),
    Mistake(
        id="tp-attention-scaled-by-local-width",
        module=L08,
        exercise="tp_attention",
        status="failed",
        check="values",
        says=("1/√Dh",),
        patch=(
            (
                "/ np.sqrt(dh).astype(x.dtype)",
                "/ np.sqrt(q.shape[2] * q.shape[3]).astype(x.dtype)",
            ),
        ),
    ),
    # ---------------------------------------------------------------- check_vma's refusals
    Mistake(
        id="tp-mlp-gathers-the-weights-check-vma",
        module=L08,
        exercise="tp_mlp",
        code="""
def tp_mlp(x, w_in, w_out, mesh):
    def body(x, w_in_cols, w_out_rows):
        w_in_full = lax.all_gather(w_in_cols, "model", axis=1, tiled=True)
        w_out_full = lax.all_gather(w_out_rows, "model", axis=0, tiled=True)
        return jnp.tanh(x @ w_in_full) @ w_out_full

    return jax.shard_map(body, mesh=mesh, in_specs=(P(), COLUMNS, ROWS), out_specs=P())(
        x, w_in, w_out
    )
""",
        status="error",
        check=None,
        says=("all-gathered w_in and w_out", "weights stay where they are", "N times too large"),
    ),
    Mistake(
        id="tp-mlp-psum-forgotten",
        module=L08,
        exercise="tp_mlp",
        status="error",
        check=None,
        says=("never added: lax.psum(..., 'model')", "cannot tell which"),
        patch=(
            (
                'return lax.psum(_mlp_partial(x, w_in_cols, w_out_rows), "model")',
                "return _mlp_partial(x, w_in_cols, w_out_rows)",
            ),
        ),
    ),
    Mistake(
        id="dp-tp-mlp-psum-over-data",
        module=L08,
        exercise="dp_tp_mlp",
        status="error",
        check=None,
        says=("If you summed over 'data'", "psum over 'model' only"),
        patch=(
            (
                'return lax.psum(_mlp_partial(x_rows, w_in_cols, w_out_rows), "model")',
                'return lax.psum(_mlp_partial(x_rows, w_in_cols, w_out_rows), "data")',
            ),
        ),
    ),
    # ---------------------------------------------------------------- issue 18 §4: value failures
    Mistake(
        id="tp-attention-softmax-over-the-queries",
        module=L08,
        exercise="tp_attention",
        status="failed",
        check="values",
        says=("over the queries", "axis=-1"),
        patch=(("jax.nn.softmax(scores, axis=-1)", "jax.nn.softmax(scores, axis=-2)"),),
    ),
    Mistake(
        id="tp-attention-head-size-from-local-shapes",
        module=L08,
        exercise="tp_attention",
        status="failed",
        check="values",
        says=("Dh/N", "from the global shapes"),
        patch=(
            (
                "        heads = wq.shape[1] // dh  # H/N heads live here",
                "        dh = wq.shape[1] // n_heads  # the shapes in here are local ones\n"
                "        heads = wq.shape[1] // dh",
            ),
        ),
    ),
    Mistake(
        id="tp-attention-heads-split-at-one-stride-then-swapped",
        module=L08,
        exercise="tp_attention",
        status="failed",
        check="values",
        says=("split at one stride and merged at another", "no swap"),
        patch=(
            (
                "            return t.reshape(b, s, heads, dh)",
                "            return t.reshape(b, s, dh, heads).swapaxes(2, 3)  # -> [B, S, heads, Dh]",
            ),
        ),
    ),
    Mistake(
        id="tp-attention-heads-merged-at-another-stride",
        module=L08,
        exercise="tp_attention",
        status="failed",
        check="values",
        says=("split head-major but merged at another stride", "Merge as you split"),
        patch=(
            (
                'return lax.psum(o.reshape(b, s, heads * dh) @ wo, "model")',
                'return lax.psum(o.swapaxes(2, 3).reshape(b, s, heads * dh) @ wo, "model")',
            ),
        ),
    ),
]

# ---------------------------------------------------------------- issue 37: the wrong dimension
SP_GATHER = 'x_full = lax.all_gather(x_rows, "model", axis=0, tiled=True)'
SP_SCATTER = 'return lax.psum_scatter(partial, "model", scatter_dimension=0, tiled=True)'
MISTAKES += [
    Mistake(
        id="sp-gathers-along-the-features",
        module=L08,
        exercise="sp_mlp",
        patch=((SP_GATHER, SP_GATHER.replace("axis=0", "axis=1")),),
        status="error",
        check=None,
        says=("along dimension 1", "axis=0"),
    ),
    Mistake(
        id="sp-scatters-along-the-features",
        module=L08,
        exercise="sp_mlp",
        patch=((SP_SCATTER, SP_SCATTER.replace("scatter_dimension=0", "scatter_dimension=1")),),
        status="failed",
        check="values",
        says=("scattered along dimension 1", "scatter_dimension=0"),
    ),
    Mistake(  # held back in drafts/heldback until its hint was made right (issue 45)
        id="l08-sp-mlp-no-all-gather",
        module="l08_tensor_parallel",
        exercise="sp_mlp",
        status="failed",
        check="collectives",
        says=("has no all-gather",),
        never=("followed by slicing",),
        code='\ndef sp_mlp(x, w_in, w_out, mesh):\n    def body(x_rows, w_in_cols, w_out_rows):\n        # every device keeps its own tokens; one psum adds the hidden slices\n        return lax.psum(_mlp_partial(x_rows, w_in_cols, w_out_rows), "model")\n\n    return jax.shard_map(body, mesh=mesh, in_specs=(ROWS, COLUMNS, ROWS), out_specs=ROWS)(\n        x, w_in, w_out\n    )\n',
    ),
]
