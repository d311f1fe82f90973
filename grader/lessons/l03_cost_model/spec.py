"""Grading spec for lesson 3: the cost model.

Every exercise is a pure function of numbers and two small hardware records,
so the grader holds each answer against its own formula (never imported from
solutions/): integers exactly, floats within 1e-9 relative. A wrong answer is
held against a list of *suspects*, the values that known mistakes produce on
the same example (m·k·n for 2·m·k·n, the sum of math and memory time for their
max, …); a match names the mistake.

This module is the student's side, which the student's process imports too:
the hardware records, how examples are drawn, the call and its arguments. The
grader's side — every answer, formula and suspect — is
:mod:`grader.expected.l03_cost_model`, hidden from that process, and used only
through :data:`F` (imported when first called, in the worker).

``predict_bytes`` is also held against the compiler: each example compiles
the grader's own optimal program for its case and counts the bytes it sends
(:func:`grader.expected.matmul.measure`). Each exercise is a :class:`grader.checks.scalar.Scalar`:
formulas and data, one check (:class:`grader.checks.scalar.Agrees`).
"""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import strategies as st

from grader.checks.scalar import Scalar
from grader.later import expected
from grader.reference import matmul
from grader.spec import FAST_COMPILE, Context, Example, LessonSpec

# ------------------------------------------------------------ hardware

# The student's functions only read attributes, so the grader builds its own
# records with the same field names. The presets repeat the lesson's figures;
# "toy" ones with round numbers (and names the student's CHIPS/LINKS lack)
# catch code that looks a preset up by name instead of reading the record.


@dataclass(frozen=True)
class Chip:
    name: str
    peak_flops: float
    hbm_bandwidth: float


@dataclass(frozen=True)
class Link:
    name: str
    bandwidth: float
    latency: float


CHIPS = {
    "tpu-v5e": Chip("tpu-v5e", 197e12, 819e9),
    "tpu-v5p": Chip("tpu-v5p", 459e12, 2765e9),
    "h100-sxm": Chip("h100-sxm", 989e12, 3.35e12),
    "h200-sxm": Chip("h200-sxm", 989e12, 4.8e12),
    "toy-chip": Chip("toy-chip", 1e12, 1e10),
}
LINKS = {
    "tpu-v5e-ici": Link("tpu-v5e-ici", 45e9, 1e-6),
    "tpu-v5p-ici": Link("tpu-v5p-ici", 90e9, 1e-6),
    "nvlink4": Link("nvlink4", 450e9, 1e-6),
    "infiniband-ndr": Link("infiniband-ndr", 50e9, 5e-6),
    "toy-link": Link("toy-link", 1e9, 1e-5),
}
KINDS = ("all_gather", "reduce_scatter", "all_reduce", "all_to_all", "permute")


def _show_chip(c: Chip) -> str:
    return f"{c.name} ({c.peak_flops / 1e12:g} TFLOP/s, HBM {c.hbm_bandwidth / 1e9:g} GB/s)"


def _show_link(w: Link) -> str:
    return f"{w.name} ({w.bandwidth / 1e9:g} GB/s, {w.latency * 1e6:g} µs/hop)"


F = expected("l03_cost_model")
"""The grader's side: every answer, formula and known mistake of this lesson
(``grader/expected/l03_cost_model.py``, hidden from the student's process, which
imports this module), imported when first used: in the worker."""

# ------------------------------------------------------------ matmul_flops

_DIM = st.one_of(st.integers(1, 64), st.sampled_from([128, 512, 1000, 4096, 8192, 65536]))


def _mkn(ctx: Context):
    return st.fixed_dictionaries({"m": _DIM, "k": _DIM, "n": _DIM})


FLOPS_PURPOSE = {
    (2, 3, 4): "m, k, n all different (2, 3, 4): 2·m·k·n = 48 FLOPs",
    (1, 1, 1): "a single multiply-add (m = k = n = 1): 2 FLOPs",
    (4096, 8192, 1): "a matrix-vector product (n = 1) with m = 4096, k = 8192: 2·m·k·n = "
    "67,108,864 FLOPs",
}
"""What each fixed example of matmul_flops is for (issue 45 §1), by (m, k, n)."""


MATMUL_FLOPS = Scalar(
    "matmul_flops", int, _mkn,
    explicit=({"m": 2, "k": 3, "n": 4}, {"m": 1, "k": 1, "n": 1}, {"m": 4096, "k": 8192, "n": 1}),
    answer=F.fn("flops"),
    args=lambda m, k, n: (m, k, n),
    call=lambda m, k, n: f"matmul_flops({m}, {k}, {n})",
    formula=lambda m, k, n: f"2·m·k·n = 2·{m}·{k}·{n}",
    suspects=F.fn("suspects_flops"),
    purpose=lambda ex: FLOPS_PURPOSE.get((ex["m"], ex["k"], ex["n"])),
)  # fmt: skip


# ------------------------------------------------------------ arithmetic_intensity


def _mknb(ctx: Context):
    return st.fixed_dictionaries(
        {"m": _DIM, "k": _DIM, "n": _DIM, "bytes_per_elem": st.sampled_from([1, 2, 4])}
    )


INTENSITY_PURPOSE = {
    (2, 3, 4): "m, k, n all different (2, 3, 4) in bf16: 48 FLOPs over (6 + 12 + 8)·2 = 52 "
    "bytes, 0.923 FLOPs per byte",
    (1, 1, 1): "m = k = n = 1 in float32 (4 bytes per element): 2 FLOPs over 3 elements, "
    "12 bytes, 1/6 FLOP per byte",
    (4096, 4096, 4096): "a square 4096³ matmul in bf16: n/3 = 1365.3 FLOPs per byte, above "
    "every chip's C/H",
    (1, 8192, 8192): "a matrix-vector product (m = 1, k = n = 8192) in bf16: 8192/8194, just "
    "under 1 FLOP per byte, each weight element read for one multiply-add",
}
"""What each fixed example of arithmetic_intensity is for (issue 45 §1), by (m, k, n)."""


ARITHMETIC_INTENSITY = Scalar(
    "arithmetic_intensity", float, _mknb,
    explicit=(
        {"m": 2, "k": 3, "n": 4, "bytes_per_elem": 2},
        {"m": 1, "k": 1, "n": 1, "bytes_per_elem": 4},
        {"m": 4096, "k": 4096, "n": 4096, "bytes_per_elem": 2},
        {"m": 1, "k": 8192, "n": 8192, "bytes_per_elem": 2},
    ),
    answer=F.fn("intensity"),
    args=lambda m, k, n, bytes_per_elem: (m, k, n, bytes_per_elem),
    call=lambda m, k, n, bytes_per_elem: (
        f"arithmetic_intensity({m}, {k}, {n}, bytes_per_elem={bytes_per_elem})"
    ),
    formula=F.fn("intensity_formula"),
    suspects=F.fn("suspects_intensity"),
    purpose=lambda ex: INTENSITY_PURPOSE.get((ex["m"], ex["k"], ex["n"])),
)  # fmt: skip


# ------------------------------------------------------------ matmul_time


def _timed(ctx: Context):
    return st.fixed_dictionaries(
        {
            "m": _DIM, "k": _DIM, "n": _DIM,
            "chip": st.sampled_from(sorted(CHIPS)), "bytes_per_elem": st.sampled_from([1, 2, 4]),
        }
    )  # fmt: skip


TIME_PURPOSE = {
    (8192, "h100-sxm"): "8192³ in bf16 on h100-sxm: compute-bound, 1.112 ms of math against "
    "0.1202 ms of memory",
    (1, "h100-sxm"): "one row (m = 1) times an 8192×8192 weight on h100-sxm: memory-bound, "
    "40.07 µs of memory against 0.1357 µs of math",
    (512, "toy-chip"): "a toy chip no preset names (1 TFLOP/s, HBM 10 GB/s), float32: "
    "compute-bound, 17.18 ms of math against 8.389 ms of memory",
    (128, "tpu-v5e"): "m = 128, k = n = 8192 on tpu-v5e (C/H ≈ 241): memory-bound, 169.0 µs "
    "of memory against 87.21 µs of math",
    (4096, "tpu-v5p"): "4096³ in bf16 on tpu-v5p: compute-bound, 299.4 µs of math against "
    "36.41 µs of memory",
    (256, "h200-sxm"): "m = 256, k = n = 8192 on h200-sxm (C/H ≈ 206): just compute-bound, "
    "34.74 µs of math against 29.71 µs of memory",
}
"""What each fixed example of matmul_time is for (issue 45 §1), by (m, chip)."""


MATMUL_TIME = Scalar(
    "matmul_time", float, _timed,
    explicit=(  # compute-bound, memory-bound, then one per chip
        {"m": 8192, "k": 8192, "n": 8192, "chip": "h100-sxm", "bytes_per_elem": 2},
        {"m": 1, "k": 8192, "n": 8192, "chip": "h100-sxm", "bytes_per_elem": 2},
        {"m": 512, "k": 4096, "n": 4096, "chip": "toy-chip", "bytes_per_elem": 4},
        {"m": 128, "k": 8192, "n": 8192, "chip": "tpu-v5e", "bytes_per_elem": 2},
        {"m": 4096, "k": 4096, "n": 4096, "chip": "tpu-v5p", "bytes_per_elem": 2},
        {"m": 256, "k": 8192, "n": 8192, "chip": "h200-sxm", "bytes_per_elem": 2},
    ),
    answer=F.fn("matmul_time"),
    args=lambda m, k, n, chip, bytes_per_elem: (m, k, n, CHIPS[chip], bytes_per_elem),
    call=lambda m, k, n, chip, bytes_per_elem: (
        f"matmul_time({m}, {k}, {n}, {_show_chip(CHIPS[chip])}, bytes_per_elem={bytes_per_elem})"
    ),
    formula=F.fn("time_formula"),
    suspects=F.fn("suspects_time"),
    terms=F.fn("time_terms"),
    purpose=lambda ex: TIME_PURPOSE.get((ex["m"], ex["chip"])),
)  # fmt: skip


# ------------------------------------------------------------ collective_time

_NBYTES = st.one_of(
    st.integers(1, 10**10), st.integers(0, 34).map(lambda e: 2**e)
)  # 1 byte … 16 GiB


def _collective(ctx: Context):
    return st.fixed_dictionaries(
        {
            "kind": st.sampled_from(KINDS),
            "nbytes": _NBYTES,
            "n": st.sampled_from([1, 2, 3, 4, 5, 6, 8, 16, 64, 256]),
            "link": st.sampled_from(sorted(LINKS)),
        }
    )


_MIB = 2**20


_SAME = "V = 1 MiB on N = 4 over nvlink4, one example per kind:"
COLLECTIVE_PURPOSE = {
    ("all_gather", 4): f"{_SAME} an all-gather is N−1 = 3 hops of α + V/(N·W), 4.748 µs",
    ("reduce_scatter", 4): f"{_SAME} a reduce-scatter is N−1 = 3 hops of α + V/(N·W), 4.748 µs",
    ("all_reduce", 4): f"{_SAME} an all-reduce is 2·(N−1) = 6 hops of α + V/(N·W), 9.495 µs",
    ("all_to_all", 4): f"{_SAME} an all-to-all is (N−1)·α + (N−1)/(2N)·V/W, 3.874 µs",
    ("permute", 4): f"{_SAME} a permute is one hop, α + V/(N·W), 1.583 µs",
    ("permute", 1): "a permute on one device (N = 1): nothing moves, 0 s",
    ("all_reduce", 1): "one device (N = 1) on a toy link no preset names (1 GB/s, α = 10 µs): "
    "nothing moves, 0 s",
    ("all_reduce", 2): "N = 2 over infiniband-ndr (α = 5 µs): an all-reduce of V = 3 MiB is "
    "2 hops of α + V/(2W), 72.91 µs",
    ("reduce_scatter", 3): "N = 3 over tpu-v5p-ici: a reduce-scatter of V = 3 MiB is 2 hops "
    "of α + V/(3W), 25.30 µs",
    ("all_to_all", 8): "V = 1 GiB on N = 8 over tpu-v5e-ici: each link carries (N−1)/(2N)·V "
    "= 7/16 of V, 10.45 ms, of which 7 µs is latency",
    ("permute", 6): "V = 6 MiB on N = 6 over a toy link no preset names (1 GB/s, α = 10 µs): "
    "one hop carrying V/N = 1 MiB, 1.059 ms",
    ("all_gather", 256): "V = 1 byte on N = 256 over infiniband-ndr: latency-bound, 255 hops "
    "of α = 5 µs, 1.275 ms in all",
    ("gather", 4): "'gather', a kind the lesson does not define: right code raises ValueError",
}
"""What each fixed example of collective_time is for (issue 45 §1), by (kind, n)."""


COLLECTIVE_TIME = Scalar(
    "collective_time", float, _collective,
    explicit=(
        *({"kind": k, "nbytes": _MIB, "n": 4, "link": "nvlink4"} for k in KINDS),
        {"kind": "permute", "nbytes": _MIB, "n": 1, "link": "nvlink4"},
        {"kind": "all_reduce", "nbytes": _MIB, "n": 1, "link": "toy-link"},
        {"kind": "all_reduce", "nbytes": 3 * _MIB, "n": 2, "link": "infiniband-ndr"},
        {"kind": "reduce_scatter", "nbytes": 3 * _MIB, "n": 3, "link": "tpu-v5p-ici"},
        {"kind": "all_to_all", "nbytes": 2**30, "n": 8, "link": "tpu-v5e-ici"},
        {"kind": "permute", "nbytes": 6 * _MIB, "n": 6, "link": "toy-link"},
        {"kind": "all_gather", "nbytes": 1, "n": 256, "link": "infiniband-ndr"},
        {"kind": "gather", "nbytes": _MIB, "n": 4, "link": "nvlink4"},  # unknown: ValueError
    ),
    answer=F.fn("want_collective"),
    args=lambda kind, nbytes, n, link: (kind, nbytes, n, LINKS[link]),
    call=lambda kind, nbytes, n, link: (
        f"collective_time({kind!r}, nbytes={nbytes}, n_devices={n}, {_show_link(LINKS[link])})"
    ),
    formula=F.fn("collective_formula"),
    suspects=F.fn("suspects_collective"),
    terms=F.fn("collective_terms"),
    fallback=F.fn("fallback_collective"),
    max_examples=30,
    purpose=lambda ex: COLLECTIVE_PURPOSE.get((ex["kind"], ex["n"])),
)  # fmt: skip


# ------------------------------------------------------------ dp_is_compute_bound

# Where each known mistake flips the answer, relative to the threshold
# T = (2/3)·C/W: reversed comparison everywhere, "all-reduce without its 2"
# at T/2, fp32 gradients at 2T, forward FLOPs only at 3T, bits at 8T, HBM for
# the link at T·W/HBM. The explicit examples visit 12T, 0.3T, 0.75T, 5T, 2.5T,
# 1.5T in that order, so each mistake is the only one caught where it fails.
_DP_STEPS = (12, 0.3, 0.75, 5, 2.5, 1.5)


def _dp(ctx: Context):
    def away(ex: Example) -> bool:
        comp, comm = F.dp_times_of(**ex)
        return abs(comp - comm) > 1e-6 * max(comp, comm)

    return st.fixed_dictionaries(
        {
            "batch": st.one_of(st.integers(1, 2**17), st.integers(0, 17).map(lambda e: 2**e)),
            "d_model": st.sampled_from([64, 512, 1024, 4096, 8192]),
            "d_ff": st.sampled_from([256, 2048, 4096, 16384, 28672]),
            "chip": st.sampled_from(sorted(CHIPS)),
            "link": st.sampled_from(sorted(LINKS)),
        }
    ).filter(away)


BOUNDARY = {"batch": 3400, "d_model": 1024, "d_ff": 4096, "chip": "tpu-v5p", "link": "tpu-v5p-ici"}
"""B = T exactly: compute and communication times are equal in floating point
(3400 = (2/3)·459e12/90e9, measured equal for every way of writing the formula
tried), so ≥ says True and > says False. Drawn examples stay away from T."""


DP_STEP_BATCHES = (17582, 440, 1099, 7326, 3663, 2198)
"""round(r·T) for r in :data:`_DP_STEPS`, T = (2/3)·C/W of h100-sxm on nvlink4 (≈ 1465
tokens): written out, since T is the grader's formula (``tests/test_l03.py`` recomputes them)."""


def _dp_step(batch: int) -> Example:
    return {"batch": batch, "d_model": 1024, "d_ff": 4096, "chip": "h100-sxm", "link": "nvlink4"}


def _dp_step_purpose(batch: int, ratio: float) -> str:
    bound = "compute-bound, True" if ratio >= 1 else "the all-reduce is not hidden, False"
    return (
        f"B = {batch} ≈ {ratio:g}·T on h100-sxm over nvlink4, T = (2/3)·C/W ≈ 1465 tokens: " + bound
    )


DP_PURPOSE = {
    **{b: _dp_step_purpose(b, r) for b, r in zip(DP_STEP_BATCHES, _DP_STEPS)},
    4096: "B = 4096 on tpu-v5e over tpu-v5e-ici, above its T = (2/3)·C/W ≈ 2919 tokens: "
    "compute-bound, True",
    2048: "B = 2048 on tpu-v5p over tpu-v5p-ici, below its T = (2/3)·C/W = 3400 tokens: the "
    "all-reduce is not hidden, False",
    16384: "B = 16384 on h200-sxm over infiniband-ndr, above its T = (2/3)·C/W ≈ 13187 "
    "tokens: compute-bound, True",
    1: "B = 1 on a toy chip and link no preset names (1 TFLOP/s, 1 GB/s, T ≈ 667 tokens): "
    "the all-reduce is not hidden, False",
    BOUNDARY["batch"]: "B = T exactly (3400 on tpu-v5p over tpu-v5p-ici): compute and "
    "communication times are equal, which counts as compute-bound, True",
}
"""What each fixed example of dp_is_compute_bound is for (issue 45 §1), by batch."""


DP_IS_COMPUTE_BOUND = Scalar(
    "dp_is_compute_bound", bool, _dp,
    explicit=(
        *(_dp_step(b) for b in DP_STEP_BATCHES),
        {"batch": 4096, "d_model": 4096, "d_ff": 16384, "chip": "tpu-v5e", "link": "tpu-v5e-ici"},
        {"batch": 2048, "d_model": 8192, "d_ff": 28672, "chip": "tpu-v5p", "link": "tpu-v5p-ici"},
        {"batch": 16384, "d_model": 4096, "d_ff": 16384, "chip": "h200-sxm", "link": "infiniband-ndr"},
        {"batch": 1, "d_model": 64, "d_ff": 256, "chip": "toy-chip", "link": "toy-link"},
        BOUNDARY,
    ),
    answer=F.fn("dp_is_compute_bound"),
    args=lambda batch, d_model, d_ff, chip, link: (batch, d_model, d_ff, CHIPS[chip], LINKS[link]),
    call=lambda batch, d_model, d_ff, chip, link: (
        f"dp_is_compute_bound({batch}, d_model={d_model}, d_ff={d_ff}, "
        f"{_show_chip(CHIPS[chip])}, {_show_link(LINKS[link])})"
    ),
    formula=F.fn("dp_formula"),
    suspects=F.fn("suspects_dp"),
    fallback=F.fn("fallback_dp"),
    purpose=lambda ex: DP_PURPOSE.get(ex["batch"]),
)  # fmt: skip


# ------------------------------------------------------------ predict_bytes


def _pick(ctx: Context, n: int) -> int:
    """``n`` if meshes of that size exist here, else the largest that does."""
    return max(s for s in ctx.mesh_sizes if s <= n)


def _explicit_bytes(ctx: Context) -> list[Example]:
    two_d = next((m for m in ((2, 3), (2, 2), (1, 2)) if m[0] * m[1] <= ctx.n_devices), (1, 1))
    return [
        {"case": "local", "shapes": (8, 12, 16), "mesh": _pick(ctx, 4), "dtype": "float32"},
        {"case": "allgather", "shapes": (8, 12, 16), "mesh": _pick(ctx, 4), "dtype": "float32"},
        {"case": "allreduce", "shapes": (8, 12, 16), "mesh": _pick(ctx, 4), "dtype": "float32"},
        {"case": "reducescatter", "shapes": (6, 9, 12), "mesh": _pick(ctx, 3), "dtype": "bfloat16"},
        {"case": "conflict", "shapes": (6, 9, 12), "mesh": _pick(ctx, 3), "dtype": "float32"},
        {"case": "2d", "shapes": (12, 18, 6), "mesh": two_d, "dtype": "float32"},
        {"case": "matmul", "shapes": (4, 4, 4), "mesh": 2, "dtype": "float32"},  # unknown
    ]  # fmt: skip


def _bytes_strategy(ctx: Context):
    """A case, a mesh that fits here, shapes divisible by every mesh axis."""
    meshes_2d = [m for m in matmul.MESHES_2D if m[0] * m[1] <= ctx.n_devices]

    @st.composite
    def example(draw) -> Example:
        case = draw(st.sampled_from([c for c in matmul.CASES if c != "2d" or meshes_2d]))
        mesh = draw(st.sampled_from(meshes_2d if case == "2d" else ctx.mesh_sizes))
        unit = mesh[0] * mesh[1] if case == "2d" else mesh
        shapes = tuple(unit * draw(st.integers(1, 4)) for _ in range(3))
        dtype = draw(st.sampled_from(sorted(matmul.ITEMSIZE)))
        return {"case": case, "shapes": shapes, "mesh": mesh, "dtype": dtype}

    return example()


def _bytes_purpose(ex: Example) -> str | None:
    """What each fixed example of predict_bytes (:func:`_explicit_bytes`) is for (issue 45
    §1), by case; the mesh is the context's."""
    mesh = ex["mesh"]
    return {
        "local": f"case local, A[I_X, J]·B[J, K] → C[I_X, K] on N = {mesh}: each device "
        "already holds what its rows of C need, 0 bytes",
        "allgather": f"case allgather, A[I, J_X]·B[J, K] → C[I, K] on N = {mesh}: A is "
        "all-gathered, N−1 ring steps of one [I, J/N] block each",
        "allreduce": f"case allreduce, A[I, J_X]·B[J_X, K] → C[I, K] on N = {mesh}: the "
        "partial Cs are all-reduced, the whole C on every device",
        "reducescatter": f"case reducescatter in bfloat16 (b = 2) on N = {mesh}: C[I, K_X] "
        "keeps its own columns, the partial Cs are reduce-scattered",
        "conflict": f"case conflict, A[I_X, J]·B[J, K_X] → C[I_X, K] on N = {mesh}: C keeps "
        "A's row split, so B is the operand gathered",
        "2d": f"case 2d on the mesh (X, Y) = {mesh}: the [I/X, K] partials are "
        "all-reduced over y alone, in rings of Y devices",
        "matmul": "'matmul', a case the lesson does not define: right code raises ValueError",
    }.get(ex["case"])


PREDICT_BYTES = Scalar(
    "predict_bytes", int, _bytes_strategy,
    explicit=_explicit_bytes,
    answer=F.fn("want_bytes"),
    args=lambda case, shapes, mesh, dtype: (case, tuple(shapes), mesh, matmul.ITEMSIZE[dtype]),
    call=lambda case, shapes, mesh, dtype: (
        f"predict_bytes({case!r}, {tuple(shapes)}, {mesh}, "
        f"bytes_per_elem={matmul.ITEMSIZE[dtype]})"
    ),
    formula=F.fn("bytes_formula"),
    suspects=F.fn("suspects_bytes"),
    fallback=F.fn("fallback_bytes"),
    measure=F.fn("measure_bytes"),
    max_examples=2,
    purpose=_bytes_purpose,
)  # fmt: skip


EXERCISES = (
    MATMUL_FLOPS, ARITHMETIC_INTENSITY, MATMUL_TIME, COLLECTIVE_TIME, DP_IS_COMPUTE_BOUND,
    PREDICT_BYTES,
)  # fmt: skip
SPEC = LessonSpec(exercises=tuple(e.spec() for e in EXERCISES), compiler_options=FAST_COMPILE)
