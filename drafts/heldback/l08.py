"""Held-back wrong programs for lesson 8 (see drafts/heldback/__init__.py)."""

from __future__ import annotations

from drafts.heldback import Held

M = "l08_tensor_parallel"

HELD: list[Held] = [
    Held(
        id="hb-l08-tp-mlp-tanh-after-the-psum",
        module=M,
        exercise="tp_mlp",
        what="Reading that partial sums must be added before the nonlinearity, the learner "
        "moves tanh after the psum, computing tanh(x @ w_in @ w_out) instead of "
        "tanh(x @ w_in) @ w_out; with w_in split by columns h is complete and tanh belongs "
        "between the matmuls.",
        cause=("nonlinearity", "after the psum", "tanh of the sum", "between the two matmuls"),
        kind="formula",
        code="""
def tp_mlp(x, w_in, w_out, mesh):
    def body(x, w_in_cols, w_out_rows):
        # tanh of a partial sum is not a partial sum of tanh: add the partials first
        return jnp.tanh(lax.psum((x @ w_in_cols) @ w_out_rows, "model"))

    return jax.shard_map(body, mesh=mesh, in_specs=(P(), COLUMNS, ROWS), out_specs=P())(
        x, w_in, w_out
    )
""",
    ),
    Held(
        id="hb-l08-tp-mlp-pmean",
        module=M,
        exercise="tp_mlp",
        what="The learner adds the row-parallel partial sums with lax.pmean, as for data-parallel "
        "gradients, so y is divided by N: the partials are pieces of one sum, not copies to "
        "average.",
        cause=("pmean", "too small", "divided by n", "average"),
        kind="collective",
        patch=(
            (
                'return lax.psum(_mlp_partial(x, w_in_cols, w_out_rows), "model")',
                'return lax.pmean(_mlp_partial(x, w_in_cols, w_out_rows), "model")',
            ),
        ),
    ),
    Held(
        id="hb-l08-tp-attention-merged-without-transpose",
        module=M,
        exercise="tp_attention",
        what="The learner's output einsum leaves the heads before the queries ([B, H/N, S, Dh]) "
        "and reshapes that straight to [B, S, H/N·Dh], so each output row mixes different "
        "positions and heads before the wo projection.",
        cause=("transpose", "sequence axis", "positions", "heads before the queries"),
        kind="layout",
        patch=(
            (
                'o = jnp.einsum("bhqk,bkhd->bqhd", jax.nn.softmax(scores, axis=-1), v)',
                'o = jnp.einsum("bhqk,bkhd->bhqd", jax.nn.softmax(scores, axis=-1), v)',
            ),
        ),
    ),
    Held(
        id="hb-l08-dp-tp-reuses-tp-mlp",
        module=M,
        exercise="dp_tp_mlp",
        what="The learner reuses tp_mlp on the 2-D mesh, so x is gathered over 'data' to be "
        "replicated and every data row computes and returns the whole batch, instead of "
        "each mesh row keeping its own batch rows P('data', None).",
        cause=("'data'", "replicated", "batch rows", "split over data"),
        kind="layout",
        code="""
def dp_tp_mlp(x, w_in, w_out, mesh):
    return tp_mlp(x, w_in, w_out, mesh)  # the same MLP, the mesh just has one more axis
""",
    ),
]
