"""Held-back set 6, lesson 8 (see drafts/heldback6/__init__.py)."""

from __future__ import annotations

from drafts.heldback import Held

M = "l08_tensor_parallel"

HELD: list[Held] = [
    Held(
        id="hb6-l08-sp-gather-untiled",
        module=M,
        exercise="sp_mlp",
        what=(
            "The learner all-gathers the sequence without tiled=True, so x_full is stacked "
            "[N, S/N, D] instead of [S, D]; the MLP runs on the last dim regardless, and the "
            "reduce-scatter over dim 0 leaves [1, S/N, D] per device: y comes back [N, S/N, D]."
        ),
        cause=("tiled", "tiled=True", "stacked", "shape", "extra dimension"),
        kind="shape",
        patch=(
            (
                'x_full = lax.all_gather(x_rows, "model", axis=0, tiled=True)',
                'x_full = lax.all_gather(x_rows, "model", axis=0)',
            ),
        ),
    ),
    Held(
        id="hb6-l08-dp-tp-batch-gathered-back",
        module=M,
        exercise="dp_tp_mlp",
        what=(
            "Wanting y [B, D] whole, the learner all-gathers the rows over 'data' after the psum "
            "and returns y replicated (out_specs=P()): the values are right, but y should stay "
            "split over 'data' and the extra all-gather moves the whole batch."
        ),
        cause=(
            "P('data', None)",
            "replicated",
            "all-gather",
            "all_gather",
            "split over 'data'",
            "sharding",
        ),
        kind="collective",
        code="""
def dp_tp_mlp(x, w_in, w_out, mesh):
    def body(x_rows, w_in_cols, w_out_rows):
        y_rows = lax.psum(_mlp_partial(x_rows, w_in_cols, w_out_rows), "model")
        # put the batch back together: y is [B, D]
        return lax.all_gather(y_rows, "data", axis=0, tiled=True, to="invarying")

    return jax.shard_map(
        body, mesh=mesh, in_specs=(P("data", None), COLUMNS, ROWS), out_specs=P()
    )(x, w_in, w_out)
""",
    ),
    Held(
        id="hb6-l08-attention-scores-never-scaled",
        module=M,
        exercise="tp_attention",
        what=(
            "The learner writes the scores as q·kᵀ and goes straight to the softmax, leaving out "
            "the 1/√Dh scale: the softmax is too sharp by a factor √Dh in the exponent, so every "
            "head's weights and y are wrong."
        ),
        cause=("1/√Dh", "sqrt", "scale", "√Dh", "temperature"),
        kind="formula",
        patch=(
            (
                'scores = jnp.einsum("bqhd,bkhd->bhqk", q, k) / np.sqrt(dh).astype(x.dtype)',
                'scores = jnp.einsum("bqhd,bkhd->bhqk", q, k)  # one score per query and key',
            ),
        ),
    ),
]
