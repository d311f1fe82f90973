"""Held-back set 5, lesson 8 (see drafts/heldback5/__init__.py)."""

from __future__ import annotations

from drafts.heldback import Held

M = "l08_tensor_parallel"

HELD: list[Held] = [
    Held(
        id="hb5-l08-attention-head-dim-from-d-model",
        module=M,
        exercise="tp_attention",
        what=(
            "Used to transformers where D = H·Dh, the learner takes the head size as "
            "d_model // n_heads from x instead of wq.shape[1] // n_heads: here the projections "
            "are H·Dh wide, not D, so the columns are cut into heads of the wrong width (and "
            "the scores scaled by the wrong 1/√Dh)."
        ),
        cause=("head size", "dh", "h·dh", "wq.shape[1]", "d_model"),
        kind="shape",
        patch=(
            (
                "dh = wq.shape[1] // n_heads\n\n    def body(x, wq, wk, wv, wo):",
                "dh = x.shape[-1] // n_heads  # d_model / heads\n\n    def body(x, wq, wk, wv, wo):",
            ),
        ),
    ),
    Held(
        id="hb5-l08-sp-mlp-before-the-gather",
        module=M,
        exercise="sp_mlp",
        what=(
            "The learner runs the MLP on its own S/N rows first and all-gathers the partial "
            "outputs before the reduce-scatter: each device's partial covers only its own rows "
            "with its own F columns, so the reduce-scatter adds N copies of one row block's "
            "partial from one F slice instead of every slice's partial for those rows."
        ),
        cause=("order", "gather the sequence", "before the mlp", "all-gather x", "first"),
        kind="collective",
        patch=(
            (
                '        x_full = lax.all_gather(x_rows, "model", axis=0, tiled=True)\n'
                "        partial = _mlp_partial(x_full, w_in_cols, w_out_rows)\n"
                '        return lax.psum_scatter(partial, "model", scatter_dimension=0, tiled=True)',
                "        partial = _mlp_partial(x_rows, w_in_cols, w_out_rows)  # my rows first\n"
                '        full = lax.all_gather(partial, "model", axis=0, tiled=True)\n'
                '        return lax.psum_scatter(full, "model", scatter_dimension=0, tiled=True)',
            ),
        ),
    ),
    Held(
        id="hb5-l08-attention-softmax-across-heads",
        module=M,
        exercise="tp_attention",
        what=(
            "Reading 'one softmax per head' as a softmax over the head axis, the learner "
            "normalises the [B, H/N, S, S] scores along axis 1: each key's weight is shared out "
            "among this device's heads instead of each query's weights summing to 1 over the "
            "keys (with one head per device every weight becomes 1)."
        ),
        cause=("axis", "over the keys", "last axis", "heads", "sum to 1"),
        kind="axis",
        patch=(
            (
                'jnp.einsum("bhqk,bkhd->bqhd", jax.nn.softmax(scores, axis=-1), v)',
                'jnp.einsum("bhqk,bkhd->bqhd", jax.nn.softmax(scores, axis=1), v)',
            ),
        ),
    ),
]
