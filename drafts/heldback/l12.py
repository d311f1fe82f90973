"""Held-back wrong programs for lesson 12 (see drafts/heldback/__init__.py)."""

from __future__ import annotations

from drafts.heldback import Held

M = "l12_parallel_transformer"
ROW_PARALLEL = 'h = h + lax.psum(o.reshape(b, s, heads * dh) @ w["wo"], "model")'

HELD: list[Held] = [
    Held(
        id="hb-l12-residual-inside-the-all-reduce",
        module=M,
        exercise="train_step",
        what=(
            "The learner folded the attention residual into the row-parallel all-reduce, "
            "psum(h + o @ wo), so each of the 'model' devices adds its copy of h and the "
            "block output carries model·h instead of h."
        ),
        cause=("residual", "inside the psum", "model times h", "h is added"),
        kind="collective",
        patch=(
            (
                ROW_PARALLEL,
                'h = lax.psum(h + o.reshape(b, s, heads * dh) @ w["wo"], "model")'
                "  # residual folded into the all-reduce",
            ),
        ),
    ),
    Held(
        id="hb-l12-own-causal-mask-one-ahead",
        module=M,
        exercise="train_step",
        what=(
            "The learner wrote their own causal attention with jnp.tril(..., k=1), so every "
            "query also sees the key one position in its future."
        ),
        cause=("mask", "causal", "future", "diagonal"),
        kind="mask",
        patch=(
            (
                "o = jax.vmap(lambda q, k, v: attention(q, k, v, causal=True))(q, k, v)",
                "def attend(q, k, v):  # [S, heads, Dh] each: my own causal attention\n"
                "        n = q.shape[0]\n"
                '        scores = jnp.einsum("qhd,khd->hqk", q, k) / jnp.sqrt(dh)\n'
                "        seen = jnp.tril(jnp.ones((n, n), bool), k=1)  # keys a query may see\n"
                "        scores = jnp.where(seen, scores, -jnp.inf)\n"
                '        return jnp.einsum("hqk,khd->qhd", jax.nn.softmax(scores, axis=-1), v)\n'
                "\n"
                "    o = jax.vmap(attend)(q, k, v)",
            ),
        ),
    ),
    Held(
        id="hb-l12-w-out-logical-axes-copied-from-w-in",
        module=M,
        exercise="shard_params",
        what=(
            "The learner copied w_in's logical axes for w_out, ('layers', 'embed', 'mlp'), so "
            "w_out [L, F, D] is split on F over 'data' and on D over 'model' instead of F over "
            "'model' and D over 'data'."
        ),
        cause=("w_out", "logical axes", "mlp", "transposed"),
        kind="layout",
        patch=(
            (
                '"w_out": ("layers", "mlp", "embed"),',
                '"w_out": ("layers", "embed", "mlp"),',
            ),
        ),
    ),
    Held(
        id="hb-l12-prediction-all-reduce-over-the-data-group",
        module=M,
        exercise="predict_step_bytes",
        what=(
            "The learner used the 'data' axis size for the activation all-reduces' ring "
            "factor, 2(data−1)/data, though those psums run over 'model': 1.5× too many on "
            "the 4×2 mesh and a phantom all-reduce on a mesh with model = 1."
        ),
        cause=("'model'", "group", "model − 1", "(m−1)/m"),
        kind="axis",
        patch=(
            (
                '"all-reduce": 4 * n_layers * 2 * (model - 1) * act // model',
                '"all-reduce": 4 * n_layers * 2 * (data - 1) * act // data',
            ),
        ),
    ),
]
