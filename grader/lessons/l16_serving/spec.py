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
    max_examples=8,
)  # fmt: skip


# ------------------------------------------------------------------ decode_step_time


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
    max_examples=8,
)  # fmt: skip


# ------------------------------------------------------------------ max_batch


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
)  # fmt: skip


# ------------------------------------------------------------------ throughput


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
)  # fmt: skip


# ------------------------------------------------------------------ critical_batch


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
