"""Held-back set 7, lesson 16 (see drafts/heldback7/__init__.py)."""

from __future__ import annotations

from drafts.heldback import Held

M = "l16_serving"

HELD: list[Held] = [
    Held(
        id="hb7-l16-max-batch-weights-left-out",
        module=M,
        exercise="max_batch",
        what=(
            "The learner divides the slice's whole HBM by one sequence's cache, forgetting that "
            "one copy of the weights lives there too: the batch comes out too large by about "
            "P·itemsize / cache bytes sequences (and never 0 when the weights do not fit)."
        ),
        cause=("weights", "p·itemsize", "one copy", "subtract", "beside"),
        kind="formula",
        patch=(
            (
                "    free = s.chips * s.hbm_bytes - param_count(m) * itemsize\n",
                "    free = s.chips * s.hbm_bytes  # the slice's memory, for the caches\n",
            ),
        ),
    ),
    Held(
        id="hb7-l16-verify-residual-not-normalised",
        module=M,
        exercise="verify_draft",
        what=(
            "The learner returns max(p − q, 0) as the rejection distribution without dividing "
            "by its sum: the residual's mass is 1 − Σ min(p, q), less than 1, so it is not a "
            "distribution and the emitted tokens no longer follow p."
        ),
        cause=("normalise", "sum to 1", "divide by", "residual's sum", "distribution"),
        kind="formula",
        patch=(
            (
                "    return accept, (residual / total if total > 0 else p.copy())\n",
                "    return accept, (residual if total > 0 else p.copy())\n",
            ),
        ),
    ),
    Held(
        id="hb7-l16-prefill-cache-sized-to-the-prompt",
        module=M,
        exercise="prefill",
        what=(
            "The learner allocates the cache for the T prompt tokens it writes, "
            "[L, 2, B, T, H, Dh], instead of max_len positions: the logits are right, but the "
            "cache has no room for the tokens decode will add and its shape is not the one "
            "decode_step expects."
        ),
        cause=("max_len", "room", "decode", "positions t", "[l, 2, b, max_len"),
        kind="shape",
        patch=(
            (
                "        cache = jnp.zeros((n_layers, 2, b, max_len, local_heads, dh), h.dtype)\n",
                "        cache = jnp.zeros((n_layers, 2, b, t, local_heads, dh), h.dtype)  # the prompt's keys\n",
            ),
        ),
    ),
    Held(
        id="hb7-l16-decode-attends-every-cache-slot",
        module=M,
        exercise="decode_step",
        what=(
            "Thinking the empty slots after pos harmless because they hold zeros, the learner "
            "attends over the whole cache without a mask: a zero key scores 0, not −inf, so "
            "every empty slot takes softmax weight (with a zero value) and dilutes the output."
        ),
        cause=("mask", "zeros", "slots after pos", "empty slots", "<= pos"),
        kind="mask",
        patch=(
            (
                "        visible = (jnp.arange(cache.shape[3]) <= pos)[None]  # [1, S]: the cache up to pos\n",
                "        visible = jnp.ones((1, cache.shape[3]), bool)  # empty slots are zeros anyway\n",
            ),
        ),
    ),
]
