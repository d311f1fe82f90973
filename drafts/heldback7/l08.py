"""Held-back set 7, lesson 8 (see drafts/heldback7/__init__.py)."""

from __future__ import annotations

from drafts.heldback import Held

M = "l08_tensor_parallel"

HELD: list[Held] = [
    Held(
        id="hb7-l08-attention-scores-over-heads-not-positions",
        module=M,
        exercise="tp_attention",
        what=(
            "The learner writes the scores as q @ kᵀ on the [B, S, H/N, Dh] layout, swapping "
            "only the last two axes, without moving the heads in front of the sequence: the "
            "matmul then contracts Dh between the heads of one position, [B, S, H/N, H/N], so "
            "each token attends over its own heads, never over the other positions."
        ),
        cause=("transpose", "heads axis", "positions", "[b, h, s", "sequence axis"),
        kind="layout",
        patch=(
            (
                '        scores = jnp.einsum("bqhd,bkhd->bhqk", q, k) / np.sqrt(dh).astype(x.dtype)\n',
                "        scores = q @ jnp.swapaxes(k, -1, -2) / np.sqrt(dh).astype(x.dtype)  # q·kᵀ\n",
            ),
            (
                '        o = jnp.einsum("bhqk,bkhd->bqhd", jax.nn.softmax(scores, axis=-1), v)\n',
                "        o = jax.nn.softmax(scores, axis=-1) @ v\n",
            ),
        ),
    ),
    Held(
        id="hb7-l08-sp-mlp-psum-returned-as-rows",
        module=M,
        exercise="sp_mlp",
        what=(
            "After gathering the sequence the learner ends the block as in tp_mlp, with a psum, "
            "and keeps out_specs=P('model', None): every device holds the whole [S, D] sum, and "
            "shard_map stacks the N copies into an [N·S, D] array instead of each device "
            "keeping its S/N rows (a psum_scatter)."
        ),
        cause=("psum_scatter", "reduce-scatter", "own rows", "stacked", "n copies"),
        kind="collective",
        code="""
def sp_mlp(x: jax.Array, w_in: jax.Array, w_out: jax.Array, mesh: Mesh) -> jax.Array:
    def body(x_rows, w_in_cols, w_out_rows):
        x_full = lax.all_gather(x_rows, "model", axis=0, tiled=True)
        return lax.psum(_mlp_partial(x_full, w_in_cols, w_out_rows), "model")

    return jax.shard_map(body, mesh=mesh, in_specs=(ROWS, COLUMNS, ROWS), out_specs=ROWS)(
        x, w_in, w_out
    )
""",
    ),
    Held(
        id="hb7-l08-dp-tp-output-averaged-over-data",
        module=M,
        exercise="dp_tp_mlp",
        what=(
            "Out of data-parallel habit the learner divides y by the size of 'data' after the "
            "psum over 'model', as if the replicas' results were to be averaged: but each data "
            "row computes different batch rows, nothing is summed over 'data', and y comes out "
            "data times too small."
        ),
        cause=("data", "average", "divide", "forward", "different rows"),
        kind="factor",
        patch=(
            (
                '        return lax.psum(_mlp_partial(x_rows, w_in_cols, w_out_rows), "model")\n\n'
                "    return jax.shard_map(\n"
                '        body, mesh=mesh, in_specs=(P("data", None), COLUMNS, ROWS)',
                '        y = lax.psum(_mlp_partial(x_rows, w_in_cols, w_out_rows), "model")\n'
                '        return y / lax.axis_size("data")  # the mean over the data replicas\n\n'
                "    return jax.shard_map(\n"
                '        body, mesh=mesh, in_specs=(P("data", None), COLUMNS, ROWS)',
            ),
        ),
    ),
]
