"""Held-back set 3, lesson 16 (see drafts/heldback3/__init__.py)."""

from __future__ import annotations

from drafts.heldback import Held

M = "l16_serving"

HELD: list[Held] = [
    Held(
        id="hb3-l16-kv-cache-per-query-head",
        module=M,
        exercise="kv_cache_bytes",
        what=(
            "The learner sizes the cache with the N query heads instead of the K key/value "
            "heads: under grouped-query attention it comes out N/K times too large."
        ),
        cause=("kv_heads", "key/value heads", "grouped-query", "k heads", "query heads"),
        kind="formula",
        patch=(
            (
                "return 2 * m.layers * m.kv_heads * m.head_dim * tokens * itemsize",
                "return 2 * m.layers * m.heads * m.head_dim * tokens * itemsize",
            ),
        ),
    ),
    Held(
        id="hb3-l16-decode-roofline-over-caches-too",
        module=M,
        exercise="decode_step_time",
        what=(
            "The learner takes the larger of the cache reading time and the weights' time, "
            "as if they overlapped, instead of adding them: the caches are read on top."
        ),
        cause=("add", "sum", "caches +", "plus", "on top"),
        kind="formula",
        patch=(
            (
                "return caches + weights",
                "return max(caches, weights)",
            ),
        ),
    ),
    Held(
        id="hb3-l16-prefill-cache-v-before-k",
        module=M,
        exercise="prefill",
        what=(
            "The learner stacks (v, k) into the cache's K/V dimension: index 0 holds the "
            "values and 1 the keys, the opposite of the [L, 2, …] layout decode reads."
        ),
        cause=("k first", "index 0", "keys", "layout", "order"),
        kind="layout",
        patch=(
            (
                "kv = jnp.stack([k, v])[None]  # [1, 2, b, T, h, dh]",
                "kv = jnp.stack([v, k])[None]  # [1, 2, b, T, h, dh]",
            ),
        ),
    ),
    Held(
        id="hb3-l16-gqa-kv-heads-tiled",
        module=M,
        exercise="decode_step_gqa",
        what=(
            "The learner expands the K key/value heads with tile instead of repeat, so query "
            "head n uses kv head n mod K instead of n // (N/K): the heads are paired wrongly."
        ),
        cause=("repeat", "consecutive", "j·n/k", "group", "interleav"),
        kind="layout",
        patch=(
            (
                "keys, values = (jnp.repeat(kv[j], share, axis=2) for j in (0, 1))",
                "keys, values = (jnp.tile(kv[j], (1, 1, share, 1)) for j in (0, 1))",
            ),
        ),
    ),
]
