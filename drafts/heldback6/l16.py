"""Held-back set 6, lesson 16 (see drafts/heldback6/__init__.py)."""

from __future__ import annotations

from drafts.heldback import Held

M = "l16_serving"

HELD: list[Held] = [
    Held(
        id="hb6-l16-prefill-attention-of-one-prompt",
        module=M,
        exercise="prefill_time",
        what=(
            "The learner counts attention's 2·L·N·H·T² FLOPs once, for one prompt, instead of "
            "once per prompt of the batch: compute-bound prefills of several prompts come out "
            "too fast."
        ),
        cause=("batch", "per sequence", "per prompt", "every prompt", "B·"),
        kind="factor",
        patch=(
            (
                "    flops += 2.0 * m.layers * m.heads * m.head_dim * batch * tokens**2\n",
                "    flops += 2.0 * m.layers * m.heads * m.head_dim * tokens**2  # causal attention, T²\n",
            ),
        ),
    ),
    Held(
        id="hb6-l16-prefill-mask-upper-triangle",
        module=M,
        exercise="prefill",
        what=(
            "The learner builds the causal mask with jnp.triu instead of jnp.tril: every query "
            "sees itself and the tokens after it, never the ones before, so the logits (the last "
            "token sees only itself) and every layer after the first are wrong."
        ),
        cause=("tril", "triu", "causal", "future", "mask"),
        kind="mask",
        patch=(
            (
                "causal = jnp.tril(jnp.ones((t, t), bool))",
                "causal = jnp.triu(jnp.ones((t, t), bool))",
            ),
        ),
    ),
    Held(
        id="hb6-l16-decode-returns-the-cache-it-was-given",
        module=M,
        exercise="decode_step",
        what=(
            "Reading that the cache is 'updated in place', the learner discards the loop's cache "
            "and returns the one it was given: the logits are right, but the returned cache "
            "lacks the new token's keys and values, so the next step attends to zeros."
        ),
        cause=("returned cache", "new keys", "in place", "stale", "pos"),
        kind="state",
        patch=(
            (
                "        h, cache = lax.fori_loop(0, n_layers, layer, (h, cache))\n"
                '        return h[:, 0] @ p["unembed"], cache\n\n'
                "    return jax.shard_map(\n"
                "        body, mesh=mesh, in_specs=(PARAMS, CACHE,",
                "        h, _ = lax.fori_loop(0, n_layers, layer, (h, cache))  # the cache is updated in place\n"
                '        return h[:, 0] @ p["unembed"], cache\n\n'
                "    return jax.shard_map(\n"
                "        body, mesh=mesh, in_specs=(PARAMS, CACHE,",
            ),
        ),
    ),
    Held(
        id="hb6-l16-decode-weights-read-on-every-chip",
        module=M,
        exercise="decode_step_time",
        what=(
            "The learner times the weights' read as if every chip read all of them, P·itemsize "
            "at one chip's bandwidth, while the caches are spread over the slice: the weights "
            "are sharded too, so on a slice of several chips the weights' time is chips times "
            "too large."
        ),
        cause=("chips", "sharded", "slice", "every chip", "bandwidth"),
        kind="factor",
        patch=(
            (
                "    weights = max(2.0 * batch * p / (s.chips * s.peak_flops), p * itemsize / bandwidth)",
                "    weights = max(2.0 * batch * p / (s.chips * s.peak_flops), p * itemsize / s.hbm_bandwidth)",
            ),
        ),
    ),
]
