"""Held-back set 3, lesson 11 (see drafts/heldback3/__init__.py)."""

from __future__ import annotations

from drafts.heldback import Held

M = "l11_expert_parallel"

HELD: list[Held] = [
    Held(
        id="hb3-l11-slots-cumsum-over-experts",
        module=M,
        exercise="top1_dispatch",
        what=(
            "The learner takes the running count along axis 1 (the experts) instead of "
            "axis 0 (the tokens): each token counts only itself, so every token gets slot 0 "
            "and tokens of the same expert collide."
        ),
        cause=("axis 0", "tokens", "earlier tokens", "cumsum", "slot 0"),
        kind="axis",
        patch=(
            (
                "earlier = jnp.cumsum(onehot, axis=0) - onehot",
                "earlier = jnp.cumsum(onehot, axis=1) - onehot",
            ),
        ),
    ),
    Held(
        id="hb3-l11-top2-gates-from-masked-logits",
        module=M,
        exercise="top2_dispatch",
        what=(
            "The learner takes the softmax of `others`, the logits with the first choice "
            "masked out, instead of the original logits: the first choice's gate becomes 0 "
            "and the second's is renormalised."
        ),
        cause=("softmax(logits", "original logits", "masked", "first choice", "gate"),
        kind="leaf",
        patch=(
            (
                "dispatch = _dispatch(onehot1, slot1, capacity) | _dispatch(onehot2, slot2, capacity)\n"
                "    gates = jax.nn.softmax(logits, axis=-1)",
                "dispatch = _dispatch(onehot1, slot1, capacity) | _dispatch(onehot2, slot2, capacity)\n"
                "    gates = jax.nn.softmax(others, axis=-1)",
            ),
        ),
    ),
    Held(
        id="hb3-l11-top2-first-choices-summed-per-token",
        module=M,
        exercise="top2_dispatch",
        what=(
            "To count the slots first choices used, the learner sums the first-choice "
            "one-hot over axis 1 (per token, always 1) instead of axis 0 (per expert): "
            "every second choice's slot is offset by 1, not by its expert's first-choice count."
        ),
        cause=("axis 0", "per expert", "first choices routed", "count", "offset"),
        kind="axis",
        patch=(
            (
                "jnp.sum(onehot1, axis=0, keepdims=True)",
                "jnp.sum(onehot1, axis=1, keepdims=True)",
            ),
        ),
    ),
    Held(
        id="hb3-l11-expert-tanh-after-both-matmuls",
        module=M,
        exercise="moe_layer",
        what=(
            "The learner applies tanh after both expert matmuls, tanh(h·W_in·W_out), "
            "instead of between them, tanh(h·W_in)·W_out."
        ),
        cause=("tanh", "between", "nonlinearity", "hidden", "order"),
        kind="formula",
        patch=(
            (
                "done = jnp.tanh(mine @ w_in_e[0]) @ w_out_e[0]",
                "done = jnp.tanh(mine @ w_in_e[0] @ w_out_e[0])",
            ),
        ),
    ),
]
