"""Held-back set 3, lesson 8 (see drafts/heldback3/__init__.py)."""

from __future__ import annotations

from drafts.heldback import Held

M = "l08_tensor_parallel"

HELD: list[Held] = [
    Held(
        id="hb3-l08-attention-values-indexed-by-query",
        module=M,
        exercise="tp_attention",
        what=(
            "An einsum slip: the learner labels v's sequence dim with the query index "
            "('bhqk,bqhd->bqhd'), so the weights are summed over keys on their own (to 1) and "
            "each position's output is just its own value vector."
        ),
        cause=("einsum", "key index", "bkhd", "values", "sum over keys"),
        kind="index",
        patch=(
            (
                'o = jnp.einsum("bhqk,bkhd->bqhd", jax.nn.softmax(scores, axis=-1), v)',
                'o = jnp.einsum("bhqk,bqhd->bqhd", jax.nn.softmax(scores, axis=-1), v)',
            ),
        ),
    ),
    Held(
        id="hb3-l08-attention-values-from-wk",
        module=M,
        exercise="tp_attention",
        what=(
            "A copy-paste slip in the three projections: v is computed with wk, so the "
            "values are the keys and wv is never used."
        ),
        cause=("wv", "values", "projection", "copy", "v = "),
        kind="leaf",
        patch=(
            (
                "q, k, v = split(x @ wq), split(x @ wk), split(x @ wv)",
                "q, k, v = split(x @ wq), split(x @ wk), split(x @ wk)",
            ),
        ),
    ),
    Held(
        id="hb3-l08-attention-scaled-after-the-softmax",
        module=M,
        exercise="tp_attention",
        what=(
            "The learner divides by √Dh after the softmax instead of scaling the scores "
            "before it: the weights are those of unscaled scores and the output is shrunk "
            "by 1/√Dh."
        ),
        cause=("before the softmax", "scores", "1/√dh", "scale", "order"),
        kind="formula",
        patch=(
            (
                'scores = jnp.einsum("bqhd,bkhd->bhqk", q, k) / np.sqrt(dh).astype(x.dtype)',
                'scores = jnp.einsum("bqhd,bkhd->bhqk", q, k)',
            ),
            (
                "jax.nn.softmax(scores, axis=-1), v)",
                "jax.nn.softmax(scores, axis=-1) / np.sqrt(dh).astype(x.dtype), v)",
            ),
        ),
    ),
]
