"""Grading spec for lesson 16: serving, sharded inference.

**The cost model** (plain Python, :class:`grader.checks.scalar.Scalar`): each function
against :mod:`grader.lessons.l16_serving.cost` within 1e-9, on LLaMA-2-13B and its
8-kv-head variant on 8 TPU v5e (the scaling book's worked example; ``tests/test_l16.py``
holds the formulas to the book's published table) and on drawn models and slices,
drawn on both sides of the critical batch (where the max in the roofline switches) and
with K < N (where counting N heads for the cache differs). A wrong answer is named when
it equals a known mistake's: N heads for K, the factor 2 for K and V lost, elements for
bytes, the attention term or the caches left out, a sum for the roofline's max, one
chip's bandwidth for the slice's, the weights not subtracted from HBM, itemsize not in
the critical batch.

**The sharded model** (:mod:`grader.lessons.l16_serving.serve`): ``prefill`` and
``decode_step`` of the tiny transformer on ``('data', 'model')``.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from grader.checks.scalar import Scalar
from grader.lessons.l16_serving import cost, serve, speculative
from grader.lessons.l16_serving.records import MODELS, SLICES, Model, Slice, param_count
from grader.spec import Context, LessonSpec

L13 = "llama-2-13b"
GQA = "llama-2-13b-gqa"
V5E = "tpu-v5e-8"


def model_of(name: Any) -> Model:
    """A preset by name, or ``(L, D, F, N, K, H, V)``."""
    if isinstance(name, str):
        return MODELS[name]
    return Model("model-" + "x".join(map(str, name)), *name)


def slice_of(name: Any) -> Slice:
    """A preset by name, or ``(chips, peak TFLOP/s, HBM GiB, bandwidth GB/s)``."""
    if isinstance(name, str):
        return SLICES[name]
    chips, tflops, gib, gbps = name
    return Slice("slice-" + "x".join(map(str, name)), chips, tflops * 1e12, gib * 2**30, gbps * 1e9)


def show_model(m: Model) -> str:
    return m.name if m.name in MODELS else (
        f"Model(L={m.layers}, D={m.d_model}, F={m.d_ff}, N={m.heads}, K={m.kv_heads}, "
        f"H={m.head_dim}, V={m.vocab})"
    )  # fmt: skip


def show_slice(s: Slice) -> str:
    return s.name if s.name in SLICES else (
        f"Slice(chips={s.chips}, peak={s.peak_flops:.3g}, hbm={s.hbm_bytes:.3g}, "
        f"bandwidth={s.hbm_bandwidth:.3g})"
    )  # fmt: skip


def _models() -> Any:
    heads = st.sampled_from([8, 16, 32])
    return heads.flatmap(
        lambda n: st.tuples(
            st.sampled_from([2, 16, 40]), st.sampled_from([1024, 4096]),
            st.sampled_from([2816, 11008]), st.just(n),
            st.sampled_from([k for k in (1, 2, 8) if k < n]), st.sampled_from([64, 128]),
            st.sampled_from([32000, 128256]),
        )
    )  # fmt: skip


def _slices() -> Any:
    return st.tuples(
        st.sampled_from([1, 4, 8]), st.sampled_from([197, 989]), st.sampled_from([16, 80]),
        st.sampled_from([820, 3350]),
    )  # fmt: skip


ITEMSIZES = st.sampled_from([1, 2])


# ------------------------------------------------------------------ kv_cache_bytes


def _kv_suspects(model: Any, tokens: int, itemsize: int) -> list[tuple[Any, str]]:
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


KV_BYTES = Scalar(
    "kv_cache_bytes", int,
    lambda ctx: st.fixed_dictionaries(
        {"model": _models(), "tokens": st.sampled_from([1, 2048, 8192]), "itemsize": ITEMSIZES}
    ),
    explicit=({"model": L13, "tokens": 8192, "itemsize": 2}, {"model": GQA, "tokens": 8192, "itemsize": 2},
              {"model": (2, 64, 128, 4, 2, 16, 100), "tokens": 3, "itemsize": 1}),
    answer=lambda model, tokens, itemsize: cost.kv_cache_bytes(model_of(model), tokens, itemsize),
    args=lambda model, tokens, itemsize: (model_of(model), tokens, itemsize),
    call=lambda model, tokens, itemsize: f"kv_cache_bytes({show_model(model_of(model))}, tokens={tokens}, itemsize={itemsize})",
    formula=lambda model, tokens, itemsize: "2·L·K·H·tokens·itemsize = 2·{}·{}·{}·{}·{}".format(
        *(getattr(model_of(model), a) for a in ("layers", "kv_heads", "head_dim")), tokens, itemsize),
    suspects=_kv_suspects,
    max_examples=8,
)  # fmt: skip


# ------------------------------------------------------------------ prefill_time


def _prefill_suspects(model: Any, slice: Any, batch: int, tokens: int, itemsize: int) -> list:
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


def _time_args(model: Any, slice: Any, batch: int, tokens: int, itemsize: int) -> tuple:
    return (model_of(model), slice_of(slice), batch, tokens, itemsize)


def _time_call(fname: str, what: str) -> Any:
    def call(model: Any, slice: Any, batch: int, tokens: int, itemsize: int) -> str:
        return (f"{fname}({show_model(model_of(model))}, {show_slice(slice_of(slice))}, "
                f"batch={batch}, {what}={tokens}, itemsize={itemsize})")  # fmt: skip

    return call


def _time_draw(ctx: Context) -> Any:
    return st.fixed_dictionaries({
        "model": _models(), "slice": _slices(), "batch": st.sampled_from([1, 16, 64, 512]),
        "tokens": st.sampled_from([128, 2048, 8192]), "itemsize": ITEMSIZES,
    })  # fmt: skip


PREFILL_TIME = Scalar(
    "prefill_time", float, _time_draw,
    explicit=({"model": L13, "slice": V5E, "batch": 1, "tokens": 8192, "itemsize": 2},
              {"model": L13, "slice": V5E, "batch": 4, "tokens": 128, "itemsize": 2},
              {"model": GQA, "slice": (1, 197, 16, 820), "batch": 1, "tokens": 4, "itemsize": 1}),
    answer=lambda **ex: cost.prefill_time(*_time_args(**ex)),
    args=_time_args,
    call=_time_call("prefill_time", "tokens"),
    formula=lambda **ex: "max((2·P·B·T + 2·L·N·H·B·T²) / (chips·peak), "
    "(P·itemsize + B·kv_cache_bytes(T)) / (chips·bandwidth))",
    suspects=_prefill_suspects,
    max_examples=8,
)  # fmt: skip


# ------------------------------------------------------------------ decode_step_time


def _decode_suspects(model: Any, slice: Any, batch: int, tokens: int, itemsize: int) -> list:
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


DECODE_TIME = Scalar(
    "decode_step_time", float, _time_draw,
    explicit=tuple({"model": n, "slice": V5E, "batch": b, "tokens": 8192, "itemsize": 2}
                   for n in (L13, GQA) for b in (1, 16, 240))
    + ({"model": GQA, "slice": V5E, "batch": 512, "tokens": 128, "itemsize": 2},),
    answer=lambda **ex: cost.decode_step_time(*_time_args(**ex)),
    args=_time_args,
    call=_time_call("decode_step_time", "context"),
    formula=lambda **ex: "B·kv_cache_bytes(context) / (chips·bandwidth) + "
    "max(2·B·P / (chips·peak), P·itemsize / (chips·bandwidth))",
    suspects=_decode_suspects,
    max_examples=8,
)  # fmt: skip


# ------------------------------------------------------------------ max_batch


def _max_suspects(model: Any, slice: Any, context: int, itemsize: int) -> list:
    m, s = model_of(model), slice_of(slice)
    kv = cost.kv_cache_bytes(m, context, itemsize)
    free = s.chips * s.hbm_bytes - param_count(m) * itemsize
    return [
        (int(s.chips * s.hbm_bytes // kv),
         "The weights are not subtracted: one copy of them (P·itemsize) shares the HBM."),
        (max(0, int((s.hbm_bytes - param_count(m) * itemsize) // kv)),
         "One chip's HBM: the slice holds chips × hbm_bytes."),
        (max(0, round(free / kv)), "Rounded: a partial cache does not fit; round down."),
        (int(free // kv), "Negative: when the weights alone do not fit, no sequence does: 0."),
    ]  # fmt: skip


MAX_BATCH = Scalar(
    "max_batch", int,
    lambda ctx: st.fixed_dictionaries({"model": _models(), "slice": _slices(),
                                       "context": st.sampled_from([1024, 8192, 32768]),
                                       "itemsize": ITEMSIZES}),
    explicit=({"model": L13, "slice": V5E, "context": 8192, "itemsize": 2},
              {"model": GQA, "slice": V5E, "context": 8192, "itemsize": 2},
              {"model": L13, "slice": (1, 197, 16, 820), "context": 8192, "itemsize": 2}),
    answer=lambda model, slice, context, itemsize: cost.max_batch(model_of(model), slice_of(slice), context, itemsize),
    args=lambda model, slice, context, itemsize: (model_of(model), slice_of(slice), context, itemsize),
    call=lambda model, slice, context, itemsize: f"max_batch({show_model(model_of(model))}, {show_slice(slice_of(slice))}, context={context}, itemsize={itemsize})",
    formula=lambda **ex: "max(0, ⌊(chips·hbm_bytes − P·itemsize) / kv_cache_bytes(context)⌋)",
    suspects=_max_suspects,
    max_examples=8,
)  # fmt: skip


# ------------------------------------------------------------------ throughput


def _throughput_suspects(model: Any, slice: Any, batch: int, tokens: int, itemsize: int) -> list:
    args = _time_args(model, slice, batch, tokens, itemsize)
    step = cost.decode_step_time(*args)
    return [
        (1.0 / step, "One token per step: each step gives every one of the batch's sequences a token."),
        (batch / step / slice_of(slice).chips,
         "Per chip: the function returns the whole slice's tokens per second."),
    ]  # fmt: skip


THROUGHPUT = Scalar(
    "throughput", float, _time_draw,
    explicit=tuple({"model": n, "slice": V5E, "batch": b, "tokens": 8192, "itemsize": 2}
                   for n in (L13, GQA) for b in (1, 64)),
    answer=lambda **ex: cost.throughput(*_time_args(**ex)),
    args=_time_args,
    call=_time_call("throughput", "context"),
    formula=lambda **ex: "batch / decode_step_time(...)",
    suspects=_throughput_suspects,
    max_examples=6,
)  # fmt: skip


# ------------------------------------------------------------------ critical_batch


def _critical_suspects(slice: Any, itemsize: int) -> list:
    s = slice_of(slice)
    return [
        (s.peak_flops / s.hbm_bandwidth,
         "Without itemsize: each parameter costs 2 FLOPs per token and itemsize bytes per step, "
         "so B* = peak·itemsize / (2·bandwidth) (240 for bf16 on v5e, 120 for int8 weights)."),
        (s.peak_flops * itemsize / s.hbm_bandwidth,
         "Twice too large: a token costs 2 FLOPs per parameter (multiply and add)."),
    ]  # fmt: skip


CRITICAL = Scalar(
    "critical_batch", float,
    lambda ctx: st.fixed_dictionaries({"slice": _slices(), "itemsize": ITEMSIZES}),
    explicit=({"slice": V5E, "itemsize": 2}, {"slice": V5E, "itemsize": 1},
              {"slice": (8, 989, 80, 3350), "itemsize": 2}),
    answer=lambda slice, itemsize: cost.critical_batch(slice_of(slice), itemsize),
    args=lambda slice, itemsize: (slice_of(slice), itemsize),
    call=lambda slice, itemsize: f"critical_batch({show_slice(slice_of(slice))}, itemsize={itemsize})",
    formula=lambda **ex: "peak · itemsize / (2 · bandwidth)",
    suspects=_critical_suspects,
    max_examples=4,
)  # fmt: skip


SPEC = LessonSpec(
    exercises=(
        KV_BYTES.spec(), PREFILL_TIME.spec(), DECODE_TIME.spec(), MAX_BATCH.spec(),
        THROUGHPUT.spec(), CRITICAL.spec(), serve.PREFILL, serve.DECODE, serve.DECODE_GQA,
        speculative.VERIFY, speculative.EXPECTED.spec(),
    ),
)  # fmt: skip
