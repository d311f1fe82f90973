"""Held-back set 2, lesson 8 (see drafts/heldback2/__init__.py)."""

from __future__ import annotations

from drafts.heldback import Held

M = "l08_tensor_parallel"

HELD: list[Held] = [
    Held(
        id="hb2-l08-attention-scores-times-sqrt-dh",
        module=M,
        exercise="tp_attention",
        what=(
            "The learner scales the scores by √Dh instead of 1/√Dh (multiplies where the "
            "lesson divides), so the softmax is far too peaked."
        ),
        cause=("1/√dh", "divide", "scale", "√dh", "sqrt"),
        kind="factor",
        patch=(
            (
                "/ np.sqrt(dh).astype(x.dtype)",
                "* np.sqrt(dh).astype(x.dtype)",
            ),
        ),
    ),
    Held(
        id="hb2-l08-attention-causal-mask-added",
        module=M,
        exercise="tp_attention",
        what=(
            "Used to decoder models, the learner adds a causal mask to the scores, though "
            "this exercise's attention has no mask: every query must see every key."
        ),
        cause=("mask", "causal", "no mask", "every key", "future"),
        kind="mask",
        patch=(
            (
                '        o = jnp.einsum("bhqk,bkhd->bqhd", jax.nn.softmax(scores, axis=-1), v)',
                "        scores = jnp.where(jnp.tril(jnp.ones((s, s), bool)), scores, -jnp.inf)\n"
                '        o = jnp.einsum("bhqk,bkhd->bqhd", jax.nn.softmax(scores, axis=-1), v)',
            ),
        ),
    ),
    Held(
        id="hb2-l08-dp-tp-batch-over-model",
        module=M,
        exercise="dp_tp_mlp",
        what=(
            "The learner splits x's rows over 'model' instead of 'data' (in_specs and "
            "out_specs P('model', None)): the psum over 'model' then adds partial sums of "
            "different rows, and the 'data' axis only replicates the work."
        ),
        cause=("'data'", "'model'", "batch rows", "p('data', none)", "wrong axis"),
        kind="axis",
        patch=(
            (
                'in_specs=(P("data", None), COLUMNS, ROWS), out_specs=P("data", None)',
                'in_specs=(P("model", None), COLUMNS, ROWS), out_specs=P("model", None)',
            ),
        ),
    ),
]
