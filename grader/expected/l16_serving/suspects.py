"""What each known mistake of lesson 16's cost model gives on an example, with the
hint that names it (the grader's side: :mod:`grader.expected`). One function per
exercise, taking the example's fields as keywords."""

from __future__ import annotations

from typing import Any

from grader.checks.terms import Max, Sum, Term
from grader.expected.l16_serving import cost
from grader.lessons.l16_serving.records import param_count
from grader.lessons.l16_serving.spec import _time_args, model_of, slice_of


def kv(model: Any, tokens: int, itemsize: int) -> list[tuple[Any, str]]:
    m = model_of(model)
    right = cost.kv_cache_bytes(m, tokens, itemsize)
    return [
        (right * m.heads // m.kv_heads,
         "You count N query heads; the cache holds the K key/value heads only "
         "(grouped-query attention shares each among N/K query heads)."),
        (right // 2, "Half: the cache holds both K and V, two tensors per layer (the 2 in 2·L·K·H)."),
        (right // itemsize, "Elements, not bytes: multiply by itemsize."),
        (right // m.layers, "One layer only: every layer keeps its own keys and values (× L)."),
    ]  # fmt: skip


def prefill(model: Any, slice: Any, batch: int, tokens: int, itemsize: int) -> list:
    m, s = model_of(model), slice_of(slice)
    p = param_count(m)
    flops = 2.0 * p * batch * tokens
    moved = p * itemsize + batch * cost.kv_cache_bytes(m, tokens, itemsize)
    chips_flops, chips_bw = s.chips * s.peak_flops, s.chips * s.hbm_bandwidth
    full = cost.prefill_flops(m, batch, tokens) / chips_flops
    return [
        (max(flops / chips_flops, moved / chips_bw),
         "The attention term is missing: causal Q·Kᵀ and P·V add 2·L·N·H·T² FLOPs per sequence, "
         "which no weight counts."),
        (full + moved / chips_bw,
         "You add compute and memory time; on the roofline they overlap: take the larger."),
        (max(full, p * itemsize / chips_bw),
         "The caches written are missing from the bytes: prefill writes B·kv_cache_bytes(T)."),
        (max(cost.prefill_flops(m, batch, tokens) / s.peak_flops, moved / s.hbm_bandwidth),
         "One chip's FLOP/s and bandwidth: the slice has chips of them (tensor parallel)."),
    ]  # fmt: skip


def decode(model: Any, slice: Any, batch: int, tokens: int, itemsize: int) -> list:
    m, s = model_of(model), slice_of(slice)
    p = param_count(m)
    bw, fl = s.chips * s.hbm_bandwidth, s.chips * s.peak_flops
    caches = batch * cost.kv_cache_bytes(m, tokens, itemsize) / bw
    return [
        (max(2.0 * batch * p / fl, p * itemsize / bw),
         "The caches are missing: every step reads each sequence's whole KV cache from HBM "
         "(B·kv_cache_bytes(context) bytes), whatever the batch."),
        (caches + p * itemsize / bw,
         "Memory time only: above the critical batch the weights' FLOPs (2·B·P) take longer "
         "than reading them, so take max(2·B·P / FLOP/s, P·itemsize / bandwidth)."),
        (caches + 2.0 * batch * p / fl + p * itemsize / bw,
         "You add the weights' FLOP time and their read time; they overlap: take the larger."),
        (max(caches + p * itemsize / bw, 2.0 * batch * p / fl),
         "The roofline's max wraps the caches too; attention over the cache is always "
         "memory-bound: caches + max(weights' FLOPs, weights' bytes)."),
    ]  # fmt: skip


def max_batch(model: Any, slice: Any, context: int, itemsize: int) -> list:
    m, s = model_of(model), slice_of(slice)
    kv = cost.kv_cache_bytes(m, context, itemsize)
    free = s.chips * s.hbm_bytes - param_count(m) * itemsize
    return [
        (int(s.chips * s.hbm_bytes // kv),
         "The weights are not subtracted: one copy of them (P·itemsize) shares the HBM."),
        (max(0, int((s.hbm_bytes - param_count(m) * itemsize) // kv)),
         "One chip's HBM: the slice holds chips × hbm_bytes."),
        (max(0, int(s.chips * (s.hbm_bytes - param_count(m) * itemsize) // kv)),
         "A copy of the weights on every chip: the slice holds one copy, sharded across its "
         "chips, so subtract P·itemsize once from chips × hbm_bytes."),
        (max(0, round(free / kv)), "Rounded: a partial cache does not fit; round down."),
        (int(free // kv), "Negative: when the weights alone do not fit, no sequence does: 0."),
    ]  # fmt: skip


def throughput(model: Any, slice: Any, batch: int, tokens: int, itemsize: int) -> list:
    args = _time_args(model, slice, batch, tokens, itemsize)
    step = cost.decode_step_time(*args)
    return [
        (1.0 / step, "One token per step: each step gives every one of the batch's sequences a token."),
        (batch / step / slice_of(slice).chips,
         "Per chip: the function returns the whole slice's tokens per second."),
    ]  # fmt: skip


def critical(slice: Any, itemsize: int) -> list:
    s = slice_of(slice)
    return [
        (s.peak_flops / s.hbm_bandwidth,
         "Without itemsize: each parameter costs 2 FLOPs per token and itemsize bytes per step, "
         "so B* = peak·itemsize / (2·bandwidth) (240 for bf16 on v5e, 120 for int8 weights)."),
        (s.peak_flops * itemsize / s.hbm_bandwidth,
         "Twice too large: a token costs 2 FLOPs per parameter (multiply and add)."),
    ]  # fmt: skip


def prefill_terms(model: Any, slice: Any, batch: int, tokens: int, itemsize: int) -> Max:
    """:func:`cost.prefill_time` as named terms (:mod:`grader.checks.terms`)."""
    m, s = model_of(model), slice_of(slice)
    p, fl, bw = param_count(m), s.chips * s.peak_flops, s.chips * s.hbm_bandwidth
    return Max(
        Sum(Term("weights' FLOPs, 2·P·B·T / (chips·peak)", 2.0 * p * batch * tokens / fl),
            Term("attention FLOPs, 2·L·N·H·B·T² / (chips·peak)",
                 2.0 * m.layers * m.heads * m.head_dim * batch * tokens**2 / fl)),
        Sum(Term("weights' read, P·itemsize / (chips·bandwidth)", p * itemsize / bw),
            Term("caches written, B·kv_cache_bytes(T) / (chips·bandwidth)",
                 batch * cost.kv_cache_bytes(m, tokens, itemsize) / bw)),
    )  # fmt: skip


def decode_terms(model: Any, slice: Any, batch: int, tokens: int, itemsize: int) -> Sum:
    """:func:`cost.decode_step_time` as named terms (:mod:`grader.checks.terms`)."""
    m, s = model_of(model), slice_of(slice)
    p, fl, bw = param_count(m), s.chips * s.peak_flops, s.chips * s.hbm_bandwidth
    return Sum(
        Term("caches read, B·kv_cache_bytes(context) / (chips·bandwidth)",
             batch * cost.kv_cache_bytes(m, tokens, itemsize) / bw),
        Max(Term("weights' FLOPs, 2·B·P / (chips·peak)", 2.0 * batch * p / fl),
            Term("weights' read, P·itemsize / (chips·bandwidth)", p * itemsize / bw)),
    )  # fmt: skip


def time_quantities(model: Any, slice: Any, **_: Any) -> dict[str, float]:
    """The model's and slice's own counts a term may be off by, beside the example's."""
    m, s = model_of(model), slice_of(slice)
    return {
        f"chips ({s.chips})": float(s.chips),
        f"L, the layer count ({m.layers})": float(m.layers),
        f"N, the query heads ({m.heads})": float(m.heads),
        f"K, the key/value heads ({m.kv_heads})": float(m.kv_heads),
        f"N/K ({m.heads}/{m.kv_heads})": m.heads / m.kv_heads,
    }
