"""Grading spec for lesson 16: serving, sharded inference.

**The cost model** (plain Python, :class:`grader.checks.scalar.Scalar`): each function
against :mod:`grader.expected.l16_serving.cost` (the grader's side, hidden from
the student's process) within 1e-9, on LLaMA-2-13B and its
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
from grader.later import expected
from grader.lessons.l16_serving import serve, speculative
from grader.lessons.l16_serving.records import MODELS, SLICES, Model, Slice
from grader.spec import FAST_COMPILE, Context, LessonSpec

cost, suspects = expected("l16_serving.cost"), expected("l16_serving.suspects")
"""The grader's side (``grader/expected/l16_serving/``, hidden from the student's
process, which imports this module): imported when first used, in the worker."""

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


KV_PURPOSE = {
    L13: "LLaMA-2-13B, K = N = 40 heads, 8192 tokens in bf16: 2·40·40·128·8192·2 = 6.71 GB for "
    "one sequence",
    GQA: "the 8-kv-head variant (K = 8 < N = 40), 8192 tokens in bf16: the cache holds the K "
    "heads, 1.34 GB a sequence",
    (2, 64, 128, 4, 2, 16, 100): "a tiny model with K = 2 < N = 4, two layers, 3 tokens of one "
    "byte: 2·2·2·16·3·1 = 384 bytes",
}
"""What each fixed example of kv_cache_bytes is for, by its model (issue 45 §1)."""


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
    suspects=suspects.fn("kv"),
    max_examples=8,
    purpose=lambda ex: KV_PURPOSE.get(ex["model"]),
)  # fmt: skip


# ------------------------------------------------------------------ prefill_time


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


PREFILL_PURPOSE = {
    (L13, 1): "LLaMA-2-13B, one prompt of 8192 tokens on v5e-8: compute-bound (153 ms of FLOPs "
    "against 5 ms of bytes), attention 11 % of the FLOPs",
    (L13, 4): "LLaMA-2-13B, 4 prompts of 128 tokens on v5e-8: the FLOPs take 8.5 ms and the bytes "
    "4.0 ms, so the time is the FLOPs'",
    (GQA, 1): "the 8-kv-head variant on one chip (197 TFLOP/s, 16 GiB, 820 GB/s), a prompt of 4 "
    "tokens in int8: memory-bound, its 13 GB of weights read in 15.9 ms",
}
"""What each fixed example of prefill_time is for, by (model, batch) (issue 45 §1)."""

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
    suspects=suspects.fn("prefill"),
    terms=suspects.fn("prefill_terms"),
    quantities=suspects.fn("time_quantities"),
    max_examples=8,
    purpose=lambda ex: PREFILL_PURPOSE.get((ex["model"], ex["batch"])),
)  # fmt: skip


# ------------------------------------------------------------------ decode_step_time


DECODE_PURPOSE = {
    (L13, 1): "LLaMA-2-13B, batch 1, context 8192: reading the weights takes 3.97 ms, the one "
    "cache 1.02 ms, the weights' FLOPs 0.02 ms",
    (L13, 16): "LLaMA-2-13B, batch 16 (the most that fits), context 8192: the 16 caches (16.4 ms) "
    "take longer than the weights (3.97 ms)",
    (L13, 240): "LLaMA-2-13B at batch 240, the critical batch: the weights' FLOPs (3.964 ms) just "
    "under their read (3.968 ms), the caches 245 ms",
    (GQA, 1): "the 8-kv-head variant, batch 1, context 8192: the weights 3.97 ms, the cache of "
    "K = 8 heads 0.20 ms",
    (GQA, 16): "the 8-kv-head variant, batch 16, context 8192: the caches 3.27 ms beside the "
    "weights' 3.97 ms",
    (GQA, 240): "the 8-kv-head variant at batch 240, the critical batch, context 8192: the caches "
    "49.1 ms, the weights' FLOPs and read both about 3.97 ms",
    (GQA, 512): "batch 512, above the critical batch of 240, context 128: the weights' FLOPs "
    "(8.46 ms) outlast their read (3.97 ms), the caches add 1.64 ms",
}
"""What each fixed example of decode_step_time is for, by (model, batch) (issue 45 §1)."""

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
    suspects=suspects.fn("decode"),
    terms=suspects.fn("decode_terms"),
    quantities=suspects.fn("time_quantities"),
    max_examples=8,
    purpose=lambda ex: DECODE_PURPOSE.get((ex["model"], ex["batch"])),
)  # fmt: skip


# ------------------------------------------------------------------ max_batch


MAX_BATCH_PURPOSE = {
    (L13, V5E): "LLaMA-2-13B on v5e-8 (128 GiB), context 8192 in bf16: 26 GB of weights leave "
    "room for 16 caches of 6.71 GB",
    (GQA, V5E): "the 8-kv-head variant on v5e-8, context 8192 in bf16: caches of 1.34 GB, 83 of "
    "them beside the 26 GB of weights",
    (L13, (1, 197, 16, 820)): "LLaMA-2-13B on one chip of 16 GiB: its 26 GB of weights alone do "
    "not fit, so no sequence does: 0",
}
"""What each fixed example of max_batch is for, by (model, slice) (issue 45 §1)."""

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
    suspects=suspects.fn("max_batch"),
    max_examples=8,
    purpose=lambda ex: MAX_BATCH_PURPOSE.get((ex["model"], ex["slice"])),
)  # fmt: skip


# ------------------------------------------------------------------ throughput


THROUGHPUT_PURPOSE = {
    (L13, 1): "LLaMA-2-13B, batch 1, context 8192 on v5e-8: one token a 4.99 ms step, 200 tokens/s",
    (L13, 64): "LLaMA-2-13B, batch 64, context 8192 on v5e-8: 64 tokens a 69.4 ms step, 922 "
    "tokens/s for the whole slice",
    (GQA, 1): "the 8-kv-head variant, batch 1, context 8192: one token a 4.17 ms step, 240 "
    "tokens/s",
    (GQA, 64): "the 8-kv-head variant, batch 64, context 8192: 64 tokens a 17.1 ms step, 3751 "
    "tokens/s for the whole slice",
}
"""What each fixed example of throughput is for, by (model, batch) (issue 45 §1)."""

THROUGHPUT = Scalar(
    "throughput", float, _time_draw,
    explicit=tuple({"model": n, "slice": V5E, "batch": b, "tokens": 8192, "itemsize": 2}
                   for n in (L13, GQA) for b in (1, 64)),
    answer=lambda **ex: cost.throughput(*_time_args(**ex)),
    args=_time_args,
    call=_time_call("throughput", "context"),
    formula=lambda **ex: "batch / decode_step_time(...)",
    suspects=suspects.fn("throughput"),
    max_examples=6,
    purpose=lambda ex: THROUGHPUT_PURPOSE.get((ex["model"], ex["batch"])),
)  # fmt: skip


# ------------------------------------------------------------------ critical_batch


CRITICAL_PURPOSE = {
    (V5E, 2): "v5e in bf16 (2 bytes a parameter): B* = 1.97e14·2 / (2·8.2e11) = 240",
    (V5E, 1): "v5e with int8 weights (1 byte a parameter): half the bf16 figure, B* = 120",
    ((8, 989, 80, 3350), 2): "8 chips of 989 TFLOP/s and 3.35 TB/s in bf16: the chips cancel, "
    "B* = 295",
}
"""What each fixed example of critical_batch is for, by (slice, itemsize) (issue 45 §1)."""

CRITICAL = Scalar(
    "critical_batch", float,
    lambda ctx: st.fixed_dictionaries({"slice": _slices(), "itemsize": ITEMSIZES}),
    explicit=({"slice": V5E, "itemsize": 2}, {"slice": V5E, "itemsize": 1},
              {"slice": (8, 989, 80, 3350), "itemsize": 2}),
    answer=lambda slice, itemsize: cost.critical_batch(slice_of(slice), itemsize),
    args=lambda slice, itemsize: (slice_of(slice), itemsize),
    call=lambda slice, itemsize: f"critical_batch({show_slice(slice_of(slice))}, itemsize={itemsize})",
    formula=lambda **ex: "peak · itemsize / (2 · bandwidth)",
    suspects=suspects.fn("critical"),
    max_examples=4,
    purpose=lambda ex: CRITICAL_PURPOSE.get((ex["slice"], ex["itemsize"])),
)  # fmt: skip


SPEC = LessonSpec(
    exercises=(
        KV_BYTES.spec(), PREFILL_TIME.spec(), DECODE_TIME.spec(), MAX_BATCH.spec(),
        THROUGHPUT.spec(), CRITICAL.spec(), serve.PREFILL, serve.DECODE, serve.DECODE_GQA,
        speculative.VERIFY, speculative.EXPECTED.spec(),
    ),
    # benchmarks/fast_compile.py --only 16 --option xla_backend_optimization_level=0 --option
    # xla_cpu_use_fusion_emitters=false: 29 programs (solution and catalogue), collectives and
    # memory identical; compile 11.27 → 3.28 s (load ~4). The HLO differs in fusion names and
    # kinds only: what Donated reads (each write's opcode, through a fusion's root, and its
    # size) gives the same verdicts, tests/test_mistakes.py and tests/test_l16.py hold them
    compiler_options=FAST_COMPILE,
)  # fmt: skip
