"""Held-back set 4, lesson 16 (see drafts/heldback4/__init__.py)."""

from __future__ import annotations

from drafts.heldback import Held

M = "l16_serving"

HELD: list[Held] = [
    Held(
        id="hb4-l16-critical-batch-without-the-two",
        module=M,
        exercise="critical_batch",
        what=(
            "Solving B·P/peak = P·itemsize/bandwidth, the learner forgets that each weight costs "
            "2 FLOPs a token (a multiply and an add): the critical batch comes out twice too large."
        ),
        cause=("2·b·p", "multiply and an add", "twice", "factor 2", "2 flops"),
        kind="factor",
        patch=(
            (
                "return s.peak_flops * itemsize / (2.0 * s.hbm_bandwidth)",
                "return s.peak_flops * itemsize / s.hbm_bandwidth",
            ),
        ),
    ),
    Held(
        id="hb4-l16-speculative-residual-absolute-difference",
        module=M,
        exercise="verify_draft",
        what=(
            "For the rejection distribution the learner normalises |p − q|, the distance between "
            "the two, instead of max(p − q, 0): tokens the draft over-proposes (q > p) get mass "
            "too, so the emitted token no longer follows p."
        ),
        cause=("max(p − q, 0)", "positive part", "absolute", "q > p", "over-propos"),
        kind="formula",
        patch=(
            (
                "residual = np.maximum(p - q, 0.0)",
                "residual = np.abs(p - q)",
            ),
        ),
    ),
    Held(
        id="hb4-l16-prefill-positions-from-one",
        module=M,
        exercise="prefill",
        what=(
            "The learner gives the prompt's tokens the position embeddings 1 … T, counting "
            "positions from one, while decode adds the token at pos = T with row T of the table: "
            "every prompt token gets its neighbour's position."
        ),
        cause=("position", "from 0", "pos[:t]", "off by one", "0 … t − 1"),
        kind="off-by-one",
        patch=(
            (
                'h = p["embed"][tok] + p["pos"][:t]  # [b, T, D]',
                'h = p["embed"][tok] + p["pos"][1 : t + 1]  # [b, T, D]: positions 1 … T',
            ),
        ),
    ),
    Held(
        id="hb4-l16-decode-logits-from-tied-embedding",
        module=M,
        exercise="decode_step",
        what=(
            "Used to GPT-2's tied weights, the learner computes the logits with the transposed "
            "input embedding, h · embedᵀ, instead of the model's separate unembed matrix."
        ),
        cause=("unembed", "tied", "embed", "embedding", "output projection"),
        kind="leaf",
        patch=(
            (
                'return h[:, 0] @ p["unembed"], cache\n\n    return jax.shard_map(\n'
                "        body, mesh=mesh, in_specs=(PARAMS, CACHE, P(DATA), P()),",
                'return h[:, 0] @ p["embed"].T, cache\n\n    return jax.shard_map(\n'
                "        body, mesh=mesh, in_specs=(PARAMS, CACHE, P(DATA), P()),",
            ),
        ),
    ),
]
