"""Held-back set 2, lesson 16 (see drafts/heldback2/__init__.py)."""

from __future__ import annotations

from drafts.heldback import Held

M = "l16_serving"

HELD: list[Held] = [
    Held(
        id="hb2-l16-kv-cache-of-one-layer",
        module=M,
        exercise="kv_cache_bytes",
        what=(
            "The learner counts K and V for every key/value head but for one layer only, "
            "forgetting that every layer keeps its own cache: L times too small."
        ),
        cause=("layers", "every layer", "2·l", "per layer"),
        kind="factor",
        patch=(
            (
                "return 2 * m.layers * m.kv_heads * m.head_dim * tokens * itemsize",
                "return 2 * m.kv_heads * m.head_dim * tokens * itemsize",
            ),
        ),
    ),
    Held(
        id="hb2-l16-prefill-logits-of-the-first-token",
        module=M,
        exercise="prefill",
        what=(
            "Copying decode_step's h[:, 0], the learner returns the logits of each prompt's "
            "first token instead of its last, h[:, -1]."
        ),
        cause=("last token", "h[:, -1]", "-1", "first token"),
        kind="index",
        patch=(
            (
                'return h[:, -1] @ p["unembed"], cache',
                'return h[:, 0] @ p["unembed"], cache',
            ),
        ),
    ),
    Held(
        id="hb2-l16-decode-reads-before-writing",
        module=M,
        exercise="decode_step",
        what=(
            "The learner reads the layer's keys and values from the cache before writing the "
            "new token's into it, so the mask shows slot pos but that slot still holds zeros: "
            "the new token never attends to itself."
        ),
        cause=("before", "new token", "itself", "write", "order"),
        kind="state",
        patch=(
            (
                "            cache = lax.dynamic_update_slice(cache, new, (i, 0, 0, pos, 0, 0))  # in place\n"
                "            kv = lax.dynamic_index_in_dim(cache, i, keepdims=False)  # [2, b, S, h, dh]\n",
                "            kv = lax.dynamic_index_in_dim(cache, i, keepdims=False)  # [2, b, S, h, dh]\n"
                "            cache = lax.dynamic_update_slice(cache, new, (i, 0, 0, pos, 0, 0))  # in place\n",
            ),
        ),
    ),  # fmt: skip
    Held(
        id="hb2-l16-expected-tokens-at-alpha-one",
        module=M,
        exercise="expected_tokens",
        what=(
            "For α = 1 the learner returns γ, the drafted tokens, forgetting the extra token "
            "the target model emits after accepting all of them: γ + 1."
        ),
        cause=("γ + 1", "gamma + 1", "α = 1", "extra token", "bonus"),
        kind="off-by-one",
        patch=(("return float(gamma + 1)", "return float(gamma)  # every drafted token kept"),),
    ),
]
