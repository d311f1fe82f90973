"""Lesson 16's reference cost model of serving (the grader's own formulas; hidden from
the student's process: :mod:`grader.expected`).

Every time is a roofline: the larger of the FLOPs at peak and the bytes at HBM
bandwidth, over all the slice's chips (tensor parallel, communication ignored).
"""

from __future__ import annotations

from grader.lessons.l16_serving.records import Model, Slice, param_count


def kv_cache_bytes(m: Model, tokens: int, itemsize: int) -> int:
    """One sequence's cache: 2 (K and V) · L · K · H · tokens · itemsize."""
    return 2 * m.layers * m.kv_heads * m.head_dim * tokens * itemsize


def prefill_flops(m: Model, batch: int, tokens: int) -> float:
    """2·P per token for the weights, plus causal attention: Q·Kᵀ and P·V over the
    lower triangle, 2·2·(T²/2)·N·H per layer and sequence."""
    return (
        2.0 * param_count(m) * batch * tokens
        + 2.0 * m.layers * m.heads * m.head_dim * batch * tokens**2
    )


def prefill_time(m: Model, s: Slice, batch: int, tokens: int, itemsize: int) -> float:
    """max(FLOPs / (chips·peak), (weights read + caches written) / (chips·bandwidth))."""
    compute = prefill_flops(m, batch, tokens) / (s.chips * s.peak_flops)
    moved = param_count(m) * itemsize + batch * kv_cache_bytes(m, tokens, itemsize)
    return max(compute, moved / (s.chips * s.hbm_bandwidth))


def decode_step_time(m: Model, s: Slice, batch: int, context: int, itemsize: int) -> float:
    """The caches read at bandwidth, plus the weights: max(2·B·P / FLOP/s, P·itemsize / bandwidth)."""
    bandwidth = s.chips * s.hbm_bandwidth
    caches = batch * kv_cache_bytes(m, context, itemsize) / bandwidth
    p = param_count(m)
    return caches + max(2.0 * batch * p / (s.chips * s.peak_flops), p * itemsize / bandwidth)


def max_batch(m: Model, s: Slice, context: int, itemsize: int) -> int:
    """How many sequences of ``context`` tokens fit beside the weights in the slice's HBM."""
    free = s.chips * s.hbm_bytes - param_count(m) * itemsize
    return max(0, int(free // kv_cache_bytes(m, context, itemsize)))


def throughput(m: Model, s: Slice, batch: int, context: int, itemsize: int) -> float:
    """Tokens per second of the whole slice: batch / decode_step_time."""
    return batch / decode_step_time(m, s, batch, context, itemsize)


def critical_batch(s: Slice, itemsize: int) -> float:
    """The batch where the weights' FLOPs (2·B per parameter) take as long as reading
    them (itemsize bytes per parameter): peak · itemsize / (2 · bandwidth)."""
    return s.peak_flops * itemsize / (2.0 * s.hbm_bandwidth)
