"""Held-back set 4, lesson 12 (see drafts/heldback4/__init__.py)."""

from __future__ import annotations

from drafts.heldback import Held

M = "l12_parallel_transformer"

HELD: list[Held] = [
    Held(
        id="hb4-l12-mlp-before-attention",
        module=M,
        exercise="train_step",
        what=(
            "The learner runs the block's two sub-blocks in the wrong order, the MLP first and "
            "attention on its result, though the course block is h1 = h + attn(h), then "
            "h1 + mlp(h1): a different model."
        ),
        cause=("order", "attention first", "mlp first", "sub-block", "h1 = h + attn"),
        kind="formula",
        patch=(
            (
                '    q, k, v = split(hv @ w["wq"]), split(hv @ w["wk"]), split(hv @ w["wv"])\n'
                "    o = jax.vmap(lambda q, k, v: attention(q, k, v, causal=True))(q, k, v)\n"
                '    h = h + lax.psum(o.reshape(b, s, heads * dh) @ w["wo"], "model")\n'
                "    h = checkpoint_name(h, MID)  # saved: the backward need not redo attention's psum\n"
                '    hv = lax.pcast(h, "model", to="varying")\n'
                '    return h + lax.psum(jnp.tanh(hv @ w["w_in"]) @ w["w_out"], "model")',
                '    h = h + lax.psum(jnp.tanh(hv @ w["w_in"]) @ w["w_out"], "model")  # the MLP\n'
                "    h = checkpoint_name(h, MID)\n"
                '    hv = lax.pcast(h, "model", to="varying")\n'
                '    q, k, v = split(hv @ w["wq"]), split(hv @ w["wk"]), split(hv @ w["wv"])\n'
                "    o = jax.vmap(lambda q, k, v: attention(q, k, v, causal=True))(q, k, v)\n"
                '    return h + lax.psum(o.reshape(b, s, heads * dh) @ w["wo"], "model")',
            ),
        ),
    ),
    Held(
        id="hb4-l12-attention-over-the-flattened-batch",
        module=M,
        exercise="train_step",
        what=(
            "Instead of vmapping attention over the batch, the learner flattens [B, S] into one "
            "sequence of B·S tokens, as it would for the MLP: under the causal mask each "
            "sequence's tokens attend to every token of the sequences before it."
        ),
        cause=("vmap", "per sequence", "flatten", "across sequences", "batch"),
        kind="shape",
        patch=(
            (
                "o = jax.vmap(lambda q, k, v: attention(q, k, v, causal=True))(q, k, v)",
                "o = attention(*(t.reshape(b * s, heads, dh) for t in (q, k, v)), causal=True)\n"
                "    o = o.reshape(b, s, heads, dh)",
            ),
        ),
    ),
    Held(
        id="hb4-l12-prediction-loss-all-reduce-forgotten",
        module=M,
        exercise="predict_step_bytes",
        what=(
            "The learner counts the activations' all-reduces over 'model' but forgets the loss: "
            "each device's share is a scalar summed over 'data', one more (tiny) all-reduce of "
            "2(data − 1)/data · itemsize bytes."
        ),
        cause=("loss", "scalar", "over 'data'", "itemsize", "one more all-reduce"),
        kind="other",
        patch=(
            (
                '"all-reduce": 4 * n_layers * 2 * (model - 1) * act // model\n'
                "        + 2 * (data - 1) * itemsize // data,",
                '"all-reduce": 4 * n_layers * 2 * (model - 1) * act // model,',
            ),
        ),
    ),
]
