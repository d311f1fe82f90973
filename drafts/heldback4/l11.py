"""Held-back set 4, lesson 11 (see drafts/heldback4/__init__.py)."""

from __future__ import annotations

from drafts.heldback import Held

M = "l11_expert_parallel"

HELD: list[Held] = [
    Held(
        id="hb4-l11-top1-sigmoid-gates",
        module=M,
        exercise="top1_dispatch",
        what=(
            "The learner gates with a sigmoid of each logit, as some recent routers do, instead "
            "of the softmax over the experts the lesson uses: each kept token's combine weight "
            "is σ(logit) rather than its share of the softmax."
        ),
        cause=("softmax", "sigmoid", "over the experts", "gate", "normalis"),
        kind="formula",
        patch=(
            (
                "gates = jax.nn.softmax(logits, axis=-1)\n"
                "    return dispatch, jnp.where(dispatch, gates[:, :, None], 0).astype(logits.dtype)\n"
                "\n\ndef moe_layer",
                "gates = jax.nn.sigmoid(logits)\n"
                "    return dispatch, jnp.where(dispatch, gates[:, :, None], 0).astype(logits.dtype)\n"
                "\n\ndef moe_layer",
            ),
        ),
    ),
    Held(
        id="hb4-l11-moe-residual-inside-the-layer",
        module=M,
        exercise="moe_layer",
        what=(
            "Having read that the residual carries dropped tokens on, the learner adds x to the "
            "layer's output itself: the layer should return gate · expert(x) (0 when dropped) "
            "and leave the residual to the caller, so every token is off by x."
        ),
        cause=("residual", "x +", "dropped", "the caller", "adds the input"),
        kind="formula",
        patch=(
            (
                'return jnp.einsum("tec,ecd->td", combine, back)  # gate · expert(x); dropped → 0',
                'return x_rows + jnp.einsum("tec,ecd->td", combine, back)  # residual: dropped tokens pass',
            ),
        ),
    ),
    Held(
        id="hb4-l11-top2-second-choices-slotted-first",
        module=M,
        exercise="top2_dispatch",
        what=(
            "The learner gives the second choices their slots first and offsets the first "
            "choices by them, the reverse of GShard's order: first choices lose their slots (and "
            "get dropped) to other tokens' second choices."
        ),
        cause=("first choices", "priority", "gshard", "order", "second choices after"),
        kind="index",
        patch=(
            (
                "onehot1, slot1 = _slots(first, n_experts)\n"
                "    onehot2, slot2 = _slots(second, n_experts, jnp.sum(onehot1, axis=0, keepdims=True))",
                "onehot2, slot2 = _slots(second, n_experts)\n"
                "    onehot1, slot1 = _slots(first, n_experts, jnp.sum(onehot2, axis=0, keepdims=True))",
            ),
        ),
    ),
]
