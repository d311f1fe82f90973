"""Held-back set 5, lesson 11 (see drafts/heldback5/__init__.py)."""

from __future__ import annotations

from drafts.heldback import Held

M = "l11_expert_parallel"

HELD: list[Held] = [
    Held(
        id="hb5-l11-top1-slot-is-the-token-index",
        module=M,
        exercise="top1_dispatch",
        what=(
            "Reading 'slot = the number of earlier tokens' without 'routed there', the learner "
            "gives token t slot t whatever its expert: slots skip the places other experts' "
            "tokens took, so tokens are dropped once t ≥ C even where their expert has room."
        ),
        cause=("same expert", "routed there", "per expert", "earlier tokens", "cumsum"),
        kind="formula",
        patch=(
            (
                "earlier = jnp.cumsum(onehot, axis=0) - onehot  # exclusive: tokens before this one",
                "earlier = jnp.arange(choice.shape[0])[:, None] * jnp.ones_like(onehot)  # tokens before",
            ),
        ),
    ),
    Held(
        id="hb5-l11-moe-sends-back-the-inputs",
        module=M,
        exercise="moe_layer",
        what=(
            "A variable slip in the return trip: the learner computes the expert's output but "
            "all-to-alls `mine`, the tokens it received, back instead of `done`: every kept "
            "token comes back as gate · x, the expert never applied."
        ),
        cause=("expert output", "done", "never applied", "the tokens it received", "inputs back"),
        kind="state",
        patch=(
            (
                "back = lax.all_to_all(done, AXIS, split_axis=0, concat_axis=0, tiled=True)",
                "back = lax.all_to_all(mine, AXIS, split_axis=0, concat_axis=0, tiled=True)",
            ),
        ),
    ),
    Held(
        id="hb5-l11-top2-first-choice-masked-by-value",
        module=M,
        exercise="top2_dispatch",
        what=(
            "To exclude the first choice the learner masks every logit equal to the row's "
            "maximum instead of the first choice's index: where two experts tie for the top "
            "logit both are masked, so the second choice falls to a lower logit (or, when all "
            "tie, back to expert 0, the first choice again) instead of the other tied expert."
        ),
        cause=("tie", "index", "one_hot(first)", "both maxima", "equal logits"),
        kind="mask",
        patch=(
            (
                "others = jnp.where(jax.nn.one_hot(first, n_experts) > 0, -jnp.inf, logits)",
                "others = jnp.where(logits == logits.max(axis=-1, keepdims=True), -jnp.inf, logits)",
            ),
        ),
    ),
]
