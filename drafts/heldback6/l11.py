"""Held-back set 6, lesson 11 (see drafts/heldback6/__init__.py)."""

from __future__ import annotations

from drafts.heldback import Held

M = "l11_expert_parallel"

HELD: list[Held] = [
    Held(
        id="hb6-l11-top2-second-choice-by-argsort",
        module=M,
        exercise="top2_dispatch",
        what=(
            "The learner takes the second choice as jnp.argsort(logits)[:, -2], the second-largest "
            "logit, while the first stays argmax's: with distinct logits this agrees, but when "
            "two experts tie for the largest logit the stable sort puts the lower index second "
            "to last, so the second choice is the first choice again and the other tied expert "
            "never gets the token."
        ),
        cause=("ties", "lowest index", "argsort", "same expert", "first choice", "other experts"),
        kind="index",
        patch=(
            (
                "    second = jnp.argmax(others, axis=-1)\n",
                "    second = jnp.argsort(logits, axis=-1)[:, -2]  # the runner-up\n",
            ),
        ),
    ),
    Held(
        id="hb6-l11-top1-argmax-over-the-tokens",
        module=M,
        exercise="top1_dispatch",
        what=(
            "The learner takes the argmax over axis 0, the tokens, instead of the experts: it "
            "gets, for each expert, its highest-scoring token, and builds the dispatch from "
            "those E indices: for T ≠ E the shapes do not broadcast and it raises, for T = E the "
            "routing is wrong."
        ),
        cause=("axis=-1", "axis", "experts", "tokens", "argmax"),
        kind="axis",
        patch=(
            (
                "choice = jnp.argmax(logits, axis=-1)  # argmax returns the first maximum: lowest index",
                "choice = jnp.argmax(logits, axis=0)  # the best-scoring expert, lowest index on ties",
            ),
        ),
    ),
    Held(
        id="hb6-l11-moe-capacity-times-devices",
        module=M,
        exercise="moe_layer",
        what=(
            "Reasoning that expert e takes C tokens from each of the N devices, the learner "
            "routes each device's tokens with capacity N·C: the buffer is [E, N·C, D] and tokens "
            "that C slots per expert would drop are kept, so y differs wherever a device sends more "
            "than C tokens to one expert."
        ),
        cause=("capacity", "N·C", "dropped", "per device", "slots"),
        kind="factor",
        patch=(
            (
                "dispatch, combine = top1_dispatch(x_rows @ router, capacity)  # [T/N, E, C]",
                "# expert e takes `capacity` tokens from each of the N devices\n"
                "        dispatch, combine = top1_dispatch(x_rows @ router, capacity * lax.axis_size(AXIS))",
            ),
        ),
    ),
]
