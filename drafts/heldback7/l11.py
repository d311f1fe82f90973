"""Held-back set 7, lesson 11 (see drafts/heldback7/__init__.py)."""

from __future__ import annotations

from drafts.heldback import Held

M = "l11_expert_parallel"

HELD: list[Held] = [
    Held(
        id="hb7-l11-top1-slot-never-one-hot",
        module=M,
        exercise="top1_dispatch",
        what=(
            "The learner computes each token's slot and drops those at slot ≥ C, but then "
            "broadcasts the kept [T, E] mask over the C slots instead of one-hot encoding the "
            "slot: every kept token is marked in every slot of its expert, so slots hold "
            "several tokens and combine repeats each gate C times."
        ),
        cause=("one_hot(slot", "one slot", "every slot", "slot c", "one-hot"),
        kind="mask",
        patch=(
            (
                "    return (onehot[:, :, None] * jax.nn.one_hot(slot, capacity, dtype=jnp.int32)[:, None, :]) > 0\n",
                "    kept = (onehot * (slot < capacity)[:, None]) > 0  # [T, E]: routed there, not dropped\n"
                "    return jnp.broadcast_to(kept[:, :, None], (*kept.shape, capacity))\n",
            ),
        ),
    ),
    Held(
        id="hb7-l11-top2-second-choices-dispatched-to-first-experts",
        module=M,
        exercise="top2_dispatch",
        what=(
            "A copy-paste slip when joining the two dispatches: the second choices' slots are "
            "paired with the first choices' one-hot, so each second choice lands in its first "
            "expert (at the second-choice slot) and the second experts never get a token."
        ),
        cause=("second choice", "onehot2", "second expert", "first choice's expert", "copy"),
        kind="leaf",
        patch=(
            (
                "    dispatch = _dispatch(onehot1, slot1, capacity) | _dispatch(onehot2, slot2, capacity)\n",
                "    dispatch = _dispatch(onehot1, slot1, capacity) | _dispatch(onehot1, slot2, capacity)\n",
            ),
        ),
    ),
    Held(
        id="hb7-l11-moe-router-in-float32-leaks-into-y",
        module=M,
        exercise="moe_layer",
        what=(
            "Following the advice to route in float32, the learner casts the logits to float32 "
            "before top1_dispatch; combine then comes back float32 and the combine einsum "
            "promotes y to float32: for a bfloat16 x the layer returns float32, not x's dtype."
        ),
        cause=("dtype", "float32", "bfloat16", "x's dtype", "combine", "cast back"),
        kind="dtype",
        patch=(
            (
                "        dispatch, combine = top1_dispatch(x_rows @ router, capacity)  # [T/N, E, C]\n",
                "        logits = (x_rows @ router).astype(jnp.float32)  # route in float32\n"
                "        dispatch, combine = top1_dispatch(logits, capacity)  # [T/N, E, C]\n",
            ),
        ),
    ),
]
