"""Held-back set 2, lesson 11 (see drafts/heldback2/__init__.py)."""

from __future__ import annotations

from drafts.heldback import Held

M = "l11_expert_parallel"

HELD: list[Held] = [
    Held(
        id="hb2-l11-top1-dispatch-left-as-integers",
        module=M,
        exercise="top1_dispatch",
        what=(
            "The learner returns the product of the two one-hots as it is, an int32 array of "
            "0s and 1s, without comparing it with 0: the places are right but dispatch must "
            "be bool."
        ),
        cause=("bool", "dtype", "int32", "> 0"),
        kind="dtype",
        patch=(
            (
                "return (onehot[:, :, None] * jax.nn.one_hot(slot, capacity, dtype=jnp.int32)[:, None, :]) > 0",
                "return onehot[:, :, None] * jax.nn.one_hot(slot, capacity, dtype=jnp.int32)[:, None, :]",
            ),
        ),
    ),
    Held(
        id="hb2-l11-moe-router-probabilities-softmaxed-again",
        module=M,
        exercise="moe_layer",
        what=(
            "The learner turns the router's logits into probabilities before calling "
            "top1_dispatch, which takes a softmax itself: the choices are unchanged but every "
            "gate is the softmax of probabilities, flattened towards 1/E."
        ),
        cause=("softmax twice", "logits", "probabilities", "gate", "raw"),
        kind="formula",
        patch=(
            (
                "dispatch, combine = top1_dispatch(x_rows @ router, capacity)",
                "probs = jax.nn.softmax(x_rows @ router, axis=-1)  # the router's probabilities\n"
                "        dispatch, combine = top1_dispatch(probs, capacity)",
            ),
        ),
    ),
    Held(
        id="hb2-l11-moe-gate-never-applied",
        module=M,
        exercise="moe_layer",
        what=(
            "The learner combines the returned expert outputs with the 0/1 dispatch mask "
            "instead of combine, so each kept token gets its expert's output unweighted by "
            "the router's gate."
        ),
        cause=("gate", "combine", "weighted", "router's probability", "unweighted"),
        kind="formula",
        patch=(
            (
                'return jnp.einsum("tec,ecd->td", combine, back)',
                'return jnp.einsum("tec,ecd->td", dispatch.astype(back.dtype), back)',
            ),
        ),
    ),
    Held(
        id="hb2-l11-top2-dispatches-intersected",
        module=M,
        exercise="top2_dispatch",
        what=(
            "The learner joins the first- and second-choice dispatches with & instead of |: "
            "a token's two choices are different experts, so the intersection is empty and no "
            "token is dispatched at all."
        ),
        cause=("|", "union", "or", "&", "both choices"),
        kind="mask",
        patch=(
            (
                "dispatch = _dispatch(onehot1, slot1, capacity) | _dispatch(onehot2, slot2, capacity)",
                "dispatch = _dispatch(onehot1, slot1, capacity) & _dispatch(onehot2, slot2, capacity)",
            ),
        ),
    ),
]  # fmt: skip
