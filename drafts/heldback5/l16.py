"""Held-back set 5, lesson 16 (see drafts/heldback5/__init__.py)."""

from __future__ import annotations

from drafts.heldback import Held

M = "l16_serving"

HELD: list[Held] = [
    Held(
        id="hb5-l16-prefill-bytes-without-the-caches",
        module=M,
        exercise="prefill_time",
        what=(
            "The learner counts only the weights' read in prefill's memory traffic and forgets "
            "the KV caches it writes, batch · kv_cache_bytes(T): where prefill is memory-bound "
            "(short prompts, small batches of long caches) the time comes out too short."
        ),
        cause=("cache", "written", "kv_cache_bytes", "bytes moved", "writes"),
        kind="formula",
        patch=(
            (
                "moved = param_count(m) * itemsize + batch * kv_cache_bytes(m, tokens, itemsize)",
                "moved = param_count(m) * itemsize",
            ),
        ),
    ),
    Held(
        id="hb5-l16-decode-caches-inside-the-roofline",
        module=M,
        exercise="decode_step_time",
        what=(
            "The learner applies lesson 3's roofline to the whole step, max(2·B·P / peak, "
            "(P·itemsize + B·cache bytes) / bandwidth), so at large batches the cache reads "
            "hide behind the weights' FLOPs: attention over the cache does no matmul with the "
            "weights and is always memory-bound, so its read adds to the step."
        ),
        cause=("always memory-bound", "caches", "on top", "add", "attention"),
        kind="formula",
        patch=(
            (
                "    weights = max(2.0 * batch * p / (s.chips * s.peak_flops), p * itemsize / bandwidth)\n"
                "    return caches + weights",
                "    return max(2.0 * batch * p / (s.chips * s.peak_flops), p * itemsize / bandwidth + caches)",
            ),
        ),
    ),
    Held(
        id="hb5-l16-prefill-caches-queries-as-keys",
        module=M,
        exercise="prefill",
        what=(
            "A slip among the three projections: the learner stacks (q, v) into the cache "
            "instead of (k, v): the prompt's logits are right, but the cache's K half holds the "
            "queries, so every later decode step attends with the wrong keys."
        ),
        cause=("keys", "queries", "q instead of k", "cache", "k half"),
        kind="state",
        patch=(
            (
                "kv = jnp.stack([k, v])[None]  # [1, 2, b, T, h, dh]",
                "kv = jnp.stack([q, v])[None]  # [1, 2, b, T, h, dh]",
            ),
        ),
    ),
    Held(
        id="hb5-l16-decode-writes-every-layer-into-layer-0",
        module=M,
        exercise="decode_step",
        what=(
            "The learner writes the new token's keys and values at (0, 0, 0, pos, 0, 0), "
            "forgetting the layer index: every layer overwrites layer 0's slot pos, and layers "
            "1 … L − 1 attend over a cache whose slot pos is still empty."
        ),
        cause=("layer index", "layer 0", "index i", "every layer", "slot pos"),
        kind="index",
        patch=(
            (
                "cache = lax.dynamic_update_slice(cache, new, (i, 0, 0, pos, 0, 0))  # in place",
                "cache = lax.dynamic_update_slice(cache, new, (0, 0, 0, pos, 0, 0))  # in place",
            ),
        ),
    ),
]
