"""Held-back set 4, lesson 8 (see drafts/heldback4/__init__.py)."""

from __future__ import annotations

from drafts.heldback import Held

M = "l08_tensor_parallel"

HELD: list[Held] = [
    Held(
        id="hb4-l08-attention-scaled-by-dh",
        module=M,
        exercise="tp_attention",
        what=(
            "The learner divides the scores by Dh instead of √Dh: the softmax sees scores √Dh "
            "times too small and comes out too flat."
        ),
        cause=("√dh", "sqrt", "square root", "1/dh", "scale"),
        kind="factor",
        patch=(
            (
                'scores = jnp.einsum("bqhd,bkhd->bhqk", q, k) / np.sqrt(dh).astype(x.dtype)',
                'scores = jnp.einsum("bqhd,bkhd->bhqk", q, k) / np.asarray(dh).astype(x.dtype)',
            ),
        ),
    ),
    Held(
        id="hb4-l08-sp-mlp-residual-added",
        module=M,
        exercise="sp_mlp",
        what=(
            "Remembering the course layer h + tanh(h·W_in)·W_out, the learner adds the input rows "
            "to the reduce-scattered output: this exercise's MLP is tanh(x·W_in)·W_out with no "
            "residual, so every row is off by x."
        ),
        cause=("residual", "x +", "adds the input", "no residual", "skip connection"),
        kind="formula",
        patch=(
            (
                'return lax.psum_scatter(partial, "model", scatter_dimension=0, tiled=True)',
                'return x_rows + lax.psum_scatter(partial, "model", scatter_dimension=0, tiled=True)',
            ),
        ),
    ),
    Held(
        id="hb4-l08-dp-tp-weights-split-over-data",
        module=M,
        exercise="dp_tp_mlp",
        what=(
            "The learner splits the weights over 'data' (the axis it already split x on) instead "
            "of 'model': each mesh row holds a different F slice, the partial sums are never "
            "added over the F slices, and the psum over 'model' adds 'model' identical copies."
        ),
        cause=("'model'", "weights over data", "mesh axis", "in_specs", "split over 'data'"),
        kind="axis",
        patch=(
            (
                'body, mesh=mesh, in_specs=(P("data", None), COLUMNS, ROWS), out_specs=P("data", None)',
                'body, mesh=mesh, in_specs=(P("data", None), P(None, "data"), P("data", None)),\n'
                '        out_specs=P("data", None),',
            ),
        ),
    ),
]
