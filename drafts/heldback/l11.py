"""Held-back wrong programs for lesson 11 (see drafts/heldback/__init__.py)."""

from __future__ import annotations

from drafts.heldback import Held

M = "l11_expert_parallel"

HELD: list[Held] = [
    Held(
        id="hb-l11-top1-slots-counted-over-experts",
        module=M,
        exercise="top1_dispatch",
        what="The learner takes the exclusive cumsum of the one-hot choices over the expert axis "
        "instead of the token axis, so every token gets slot 0 of its expert, tokens collide "
        "and none is ever dropped.",
        cause=("token axis", "over the tokens", "axis=0", "slot 0"),
        kind="axis",
        patch=(
            (
                "earlier = jnp.cumsum(onehot, axis=0) - onehot",
                "earlier = jnp.cumsum(onehot, axis=1) - onehot",
            ),
        ),
    ),
    Held(
        id="hb-l11-top1-softmax-over-the-tokens",
        module=M,
        exercise="top1_dispatch",
        what="The learner computes the gates as a softmax over the token axis (axis=0) instead of "
        "over each token's experts, so combine holds each expert's share among the tokens, "
        "not the router's probability for the token.",
        cause=("over the experts", "axis=-1", "over the tokens", "softmax axis"),
        kind="axis",
        patch=(
            (
                "    dispatch = _dispatch(onehot, slot, capacity)\n"
                "    gates = jax.nn.softmax(logits, axis=-1)",
                "    dispatch = _dispatch(onehot, slot, capacity)\n"
                "    gates = jax.nn.softmax(logits, axis=0)",
            ),
        ),
    ),
    Held(
        id="hb-l11-moe-expert-after-the-round-trip",
        module=M,
        exercise="moe_layer",
        what="The learner runs both all-to-alls back to back and applies the expert afterwards, "
        "so the tokens are back home and every token is processed by its own device's expert "
        "instead of the expert it was routed to.",
        cause=("wrong expert", "between the two all-to-alls", "own device's expert", "routed to"),
        kind="other",
        patch=(
            (
                "        mine = lax.all_to_all(sent, AXIS, split_axis=0, concat_axis=0, tiled=True)\n"
                "        done = jnp.tanh(mine @ w_in_e[0]) @ w_out_e[0]  # expert e on every device's tokens\n"
                "        back = lax.all_to_all(done, AXIS, split_axis=0, concat_axis=0, tiled=True)  # [E, C, D]\n",
                "        mine = lax.all_to_all(sent, AXIS, split_axis=0, concat_axis=0, tiled=True)\n"
                "        back = lax.all_to_all(mine, AXIS, split_axis=0, concat_axis=0, tiled=True)\n"
                "        back = jnp.tanh(back @ w_in_e[0]) @ w_out_e[0]  # the expert, on [E, C, D]\n",
            ),
        ),
    ),
    Held(
        id="hb-l11-top2-first-choice-masked-with-zero",
        module=M,
        exercise="top2_dispatch",
        what="To find the second choice the learner sets the first choice's logit to 0 instead "
        "of −inf, so when every other logit is negative (or 0 at a lower index) the second "
        "choice is the first expert again.",
        cause=("-inf", "−inf", "same expert twice", "masked with 0"),
        kind="mask",
        patch=(
            (
                "others = jnp.where(jax.nn.one_hot(first, n_experts) > 0, -jnp.inf, logits)",
                "others = jnp.where(jax.nn.one_hot(first, n_experts) > 0, 0.0, logits)",
            ),
        ),
    ),
    Held(
        id="hb-l11-top2-offset-counts-every-first-choice",
        module=M,
        exercise="top2_dispatch",
        what="The learner offsets the second choices' slots by the total number of first "
        "choices (jnp.sum without axis=0, i.e. T) instead of the first choices routed to that "
        "expert, so every second choice lands past the capacity and is dropped.",
        cause=("per expert", "that expert", "every second choice", "axis=0"),
        kind="axis",
        patch=(
            (
                "jnp.sum(onehot1, axis=0, keepdims=True)",
                "jnp.sum(onehot1)",
            ),
        ),
    ),
]
