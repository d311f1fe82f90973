"""Grading spec for lesson 3: the cost model.

Every exercise is a pure function of numbers and two small hardware records,
so the grader holds each answer against its own formula (written here, never
imported from solutions/): integers exactly, floats within 1e-9 relative.
A wrong answer is held against a list of *suspects*, the values that known
mistakes produce on the same example (m·k·n for 2·m·k·n, the sum of math
and memory time for their max, …); a match names the mistake.

``predict_bytes`` is also held against the compiler: each example compiles
the grader's own optimal program for its case and counts the bytes it sends
(:func:`grader.reference.matmul.measure`). Each exercise is a :class:`grader.checks.scalar.Scalar`:
formulas and data, one check (:class:`grader.checks.scalar.Agrees`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

from grader.checks.scalar import RAISES, Scalar
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


# ------------------------------------------------------------ reference formulas


def flops(m: int, k: int, n: int) -> int:
    return 2 * m * k * n


def traffic(m: int, k: int, n: int, b: int) -> int:
    """Bytes read (A, B) and written (C) once."""
    return (m * k + k * n + m * n) * b


def ring_time(kind: str, v: float, n: int, w: Link) -> float:
    if n == 1:
        return 0.0
    a, bw = w.latency, w.bandwidth
    hops = {"all_gather": n - 1, "reduce_scatter": n - 1, "all_reduce": 2 * (n - 1), "permute": 1}
    if kind == "all_to_all":
        return (n - 1) * a + (n - 1) * v / (2 * n * bw)
    return hops[kind] * (a + v / (n * bw))


def dp_times(batch: int, d_model: int, d_ff: int, chip: Chip, link: Link) -> tuple[float, float]:
    """(compute, communication) seconds of one data-parallel MLP step."""
    p = 2 * d_model * d_ff
    return 6 * batch * p / chip.peak_flops, 4 * p / link.bandwidth


def dp_threshold(chip: Chip, link: Link) -> float:
    """Tokens per device from which compute hides the all-reduce: (2/3)·C/W."""
    return 2 * chip.peak_flops / (3 * link.bandwidth)


KIND_FORMULA = {
    "all_gather": "(N−1)·(α + V/(N·W))",
    "reduce_scatter": "(N−1)·(α + V/(N·W))",
    "all_reduce": "2·(N−1)·(α + V/(N·W))",
    "all_to_all": "(N−1)·α + (N−1)/(2N)·V/W",
    "permute": "α + V/(N·W)",
}


def _mesh_shape(case: str, mesh: Any) -> tuple[int, ...]:
    """Lesson 3 writes a 1-D mesh as its size N, the 2-D one as (X, Y)."""
    return tuple(mesh) if case == "2d" else (mesh,)


def case_bytes(case: str, shapes: tuple[int, int, int], mesh: Any, b: int) -> int:
    """The optimum of :data:`grader.reference.matmul.CASES` ``case``, with lesson 3's mesh."""
    return matmul.CASES[case].bytes(tuple(shapes), _mesh_shape(case, mesh), b)


# ------------------------------------------------------------ matmul_flops

_DIM = st.one_of(st.integers(1, 64), st.sampled_from([128, 512, 1000, 4096, 8192, 65536]))


def _mkn(ctx: Context):
    return st.fixed_dictionaries({"m": _DIM, "k": _DIM, "n": _DIM})


MATMUL_FLOPS = Scalar(
    "matmul_flops", int, _mkn,
    explicit=({"m": 2, "k": 3, "n": 4}, {"m": 1, "k": 1, "n": 1}, {"m": 4096, "k": 8192, "n": 1}),
    answer=flops,
    args=lambda m, k, n: (m, k, n),
    call=lambda m, k, n: f"matmul_flops({m}, {k}, {n})",
    formula=lambda m, k, n: f"2·m·k·n = 2·{m}·{k}·{n}",
    suspects=lambda m, k, n: [
        (m * k * n, "That is m·k·n, the number of multiply-adds; each is two FLOPs "
         "(a multiply and an add): 2·m·k·n."),
        (m * n * (2 * k - 1), "m·n·(2k − 1) counts the additions exactly, but the convention "
         "(and the hardware, which fuses multiply and add) counts 2·m·k·n."),
        (2 * (m * k + k * n), "That counts elements, not operations: every one of the m·n "
         "outputs takes k multiply-adds, 2·m·k·n FLOPs in all."),
    ],
)  # fmt: skip


# ------------------------------------------------------------ arithmetic_intensity


def _mknb(ctx: Context):
    return st.fixed_dictionaries(
        {"m": _DIM, "k": _DIM, "n": _DIM, "bytes_per_elem": st.sampled_from([1, 2, 4])}
    )


def _suspects_intensity(m: int, k: int, n: int, bytes_per_elem: int) -> list[tuple[Any, str]]:
    b = bytes_per_elem
    f, t = flops(m, k, n), traffic(m, k, n, b)
    return [
        (f / ((m * k + k * n) * b), "Writing C is traffic too: add its m·n elements."),
        (f / ((m * k + k * n + 2 * m * n) * b), "C is written once, never read: count its m·n "
         "elements once."),
        (f / (t // b), "That is FLOPs per element: multiply the element count by bytes_per_elem."),
        (f / (t * 8), "That is FLOPs per bit: count bytes, not bits (no factor 8)."),
        (f / 2 / t, "The FLOP count is 2·m·k·n: a multiply-add is two FLOPs."),
        (t / f, "Upside down: intensity is FLOPs per byte, flops / bytes."),
    ]  # fmt: skip


ARITHMETIC_INTENSITY = Scalar(
    "arithmetic_intensity", float, _mknb,
    explicit=(
        {"m": 2, "k": 3, "n": 4, "bytes_per_elem": 2},
        {"m": 1, "k": 1, "n": 1, "bytes_per_elem": 4},
        {"m": 4096, "k": 4096, "n": 4096, "bytes_per_elem": 2},
        {"m": 1, "k": 8192, "n": 8192, "bytes_per_elem": 2},
    ),
    answer=lambda m, k, n, bytes_per_elem: flops(m, k, n) / traffic(m, k, n, bytes_per_elem),
    args=lambda m, k, n, bytes_per_elem: (m, k, n, bytes_per_elem),
    call=lambda m, k, n, bytes_per_elem: (
        f"arithmetic_intensity({m}, {k}, {n}, bytes_per_elem={bytes_per_elem})"
    ),
    formula=lambda m, k, n, bytes_per_elem: (
        f"2·m·k·n / ((m·k + k·n + m·n)·b) = {flops(m, k, n)} FLOPs / "
        f"{traffic(m, k, n, bytes_per_elem)} bytes"
    ),
    suspects=_suspects_intensity,
)  # fmt: skip


# ------------------------------------------------------------ matmul_time


def _timed(ctx: Context):
    return st.fixed_dictionaries(
        {
            "m": _DIM, "k": _DIM, "n": _DIM,
            "chip": st.sampled_from(sorted(CHIPS)), "bytes_per_elem": st.sampled_from([1, 2, 4]),
        }
    )  # fmt: skip


def _roofline(m: int, k: int, n: int, chip: str, bytes_per_elem: int) -> tuple[float, float]:
    """(math, memory) seconds of one matmul on ``chip``."""
    c = CHIPS[chip]
    return flops(m, k, n) / c.peak_flops, traffic(m, k, n, bytes_per_elem) / c.hbm_bandwidth


def _time_formula(m: int, k: int, n: int, chip: str, bytes_per_elem: int) -> str:
    math_t, mem_t = _roofline(m, k, n, chip, bytes_per_elem)
    bound = "math" if math_t >= mem_t else "memory"
    return (
        f"max(2·m·k·n / peak_flops, (m·k + k·n + m·n)·b / hbm_bandwidth) "
        f"= max({math_t:.4g} s math, {mem_t:.4g} s memory): {bound}-bound"
    )


def _suspects_time(m: int, k: int, n: int, chip: str, bytes_per_elem: int) -> list[tuple[Any, str]]:
    b, c, h = bytes_per_elem, CHIPS[chip].peak_flops, CHIPS[chip].hbm_bandwidth
    f, t = flops(m, k, n), traffic(m, k, n, b)
    return [
        (f / c + t / h, "That is math time + memory time. They overlap (the chip computes on "
         "one tile while it loads the next), so the roofline time is their max."),
        (f / c, "That is the math time only. This matmul is memory-bound: reading A and B and "
         "writing C (bytes / hbm_bandwidth) takes longer. Take the max of the two."),
        (t / h, "That is the memory time only. This matmul is compute-bound: 2·m·k·n / "
         "peak_flops takes longer. Take the max of the two."),
        (min(f / c, t / h), "The slower of math and memory sets the time: max, not min."),
        (max(f / 2 / c, t / h), "The FLOP count is 2·m·k·n: a multiply-add is two FLOPs."),
        (max(f / c, 8 * t / h), "hbm_bandwidth is in bytes/s: no factor 8 for bits."),
        (max(f / c, (m * k + k * n) * b / h), "Writing C is memory traffic too: add its m·n "
         "elements."),
        (max(f / c, t / b / h), "Memory time is bytes over bandwidth: multiply the element "
         "count by bytes_per_elem."),
    ]  # fmt: skip


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
    answer=lambda **ex: max(_roofline(**ex)),
    args=lambda m, k, n, chip, bytes_per_elem: (m, k, n, CHIPS[chip], bytes_per_elem),
    call=lambda m, k, n, chip, bytes_per_elem: (
        f"matmul_time({m}, {k}, {n}, {_show_chip(CHIPS[chip])}, bytes_per_elem={bytes_per_elem})"
    ),
    formula=_time_formula,
    suspects=_suspects_time,
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


def _want_collective(kind: str, nbytes: int, n: int, link: str) -> Any:
    if kind not in KINDS:
        return RAISES
    return ring_time(kind, nbytes, n, LINKS[link])


def _collective_formula(kind: str, nbytes: int, n: int, link: str) -> str:
    if n == 1:
        return "0 s: one device sends nothing"
    w = LINKS[link]
    return (
        f"{KIND_FORMULA[kind]} with N={n}, α={w.latency:g} s, V={nbytes} B, W={w.bandwidth:g} B/s"
    )


def _suspects_collective(kind: str, nbytes: int, n: int, link: str) -> list[tuple[Any, str]]:
    if kind not in KINDS or n == 1:
        return []  # n = 1: see _fallback_collective
    v, w = nbytes, LINKS[link]
    a, bwidth = w.latency, w.bandwidth
    hops = {"all_gather": n - 1, "reduce_scatter": n - 1, "all_reduce": 2 * (n - 1),
            "all_to_all": n - 1, "permute": 1}[kind]  # fmt: skip
    bw = ring_time(kind, v, n, w) - hops * a  # the bandwidth term
    out = [
        (hops * a + 8 * bw, "nbytes is already bytes and bandwidth bytes/s: no factor 8."),
        (bw, "Every hop also costs link.latency (α): add it once per step of the ring."),
        (a + bw, "Latency is paid on every hop, not once per collective: "
         f"{hops} hop{'s' * (hops > 1)} here."),
    ]  # fmt: skip
    if kind != "all_to_all":
        out.append((hops * (a + v / bwidth), "Each ring step carries one chunk, V/N bytes, not "
                    "the whole array V."))  # fmt: skip
    if kind in ("all_gather", "reduce_scatter", "all_reduce"):
        out.append((hops * a + bw * n / (n - 1), "The bandwidth term needs its (N−1)/N: a "
                    "device already holds 1/N of the array, so only (N−1)/N of V crosses its "
                    "link (V/W is the N → ∞ limit)."))  # fmt: skip
    if kind == "all_reduce":
        out.append((ring_time("all_gather", v, n, w), "An all-reduce is a reduce-scatter "
                    "followed by an all-gather: 2·(N−1) steps, twice the time of either."))  # fmt: skip
    if kind in ("all_gather", "reduce_scatter"):
        out.append((ring_time("all_reduce", v, n, w), "That is an all-reduce's time, "
                    "2·(N−1) steps; an all-gather or a reduce-scatter alone takes N−1."))  # fmt: skip
    if kind == "all_to_all":
        out += [
            (ring_time("all_gather", v, n, w), "That is an all-gather's cost. In an "
             "all-to-all every device sends a different chunk of V/N² to each other device, "
             "and on a ring the chunk for the device k hops away crosses k links: each link "
             "carries (N−1)·V/(2N) bytes in all."),
            ((n - 1) * a + (n - 1) * v / (n * n * bwidth), "That lets each chunk cross one link. "
             "On a ring the chunk for the device k hops away crosses k links; summed over k = "
             "1 … N−1, each link carries (N−1)·V/(2N) bytes."),
        ]  # fmt: skip
    if kind == "permute":
        out.append(((n - 1) * (a + v / (n * bwidth)), "A permute is one hop: every device sends "
                    "its shard V/N to its neighbour at once, α + V/(N·W)."))  # fmt: skip
    return out


def _fallback_collective(kind: str, nbytes: int, n: int, link: str) -> str | None:
    if n == 1:
        return (
            "With one device nothing is sent: return 0.0 for n_devices = 1 (a formula with "
            "a fixed hop, like the permute's, must not charge it)."
        )
    return None


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
    answer=_want_collective,
    args=lambda kind, nbytes, n, link: (kind, nbytes, n, LINKS[link]),
    call=lambda kind, nbytes, n, link: (
        f"collective_time({kind!r}, nbytes={nbytes}, n_devices={n}, {_show_link(LINKS[link])})"
    ),
    formula=_collective_formula,
    suspects=_suspects_collective,
    fallback=_fallback_collective,
    max_examples=30,
)  # fmt: skip


# ------------------------------------------------------------ dp_is_compute_bound

# Where each known mistake flips the answer, relative to the threshold
# T = (2/3)·C/W: reversed comparison everywhere, "all-reduce without its 2"
# at T/2, fp32 gradients at 2T, forward FLOPs only at 3T, bits at 8T, HBM for
# the link at T·W/HBM. The explicit examples visit 12T, 0.3T, 0.75T, 5T, 2.5T,
# 1.5T in that order, so each mistake is the only one caught where it fails.
_DP_STEPS = (12, 0.3, 0.75, 5, 2.5, 1.5)


def _dp_times(batch: int, d_model: int, d_ff: int, chip: str, link: str) -> tuple[float, float]:
    return dp_times(batch, d_model, d_ff, CHIPS[chip], LINKS[link])


def _dp(ctx: Context):
    def away(ex: Example) -> bool:
        comp, comm = _dp_times(**ex)
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


def _dp_formula(batch: int, d_model: int, d_ff: int, chip: str, link: str) -> str:
    comp, comm = _dp_times(batch, d_model, d_ff, chip, link)
    t = dp_threshold(CHIPS[chip], LINKS[link])
    return (
        f"compute 6·B·P/peak_flops = {comp:.4g} s "
        f"{'≥' if comp >= comm else '<'} all-reduce 2·(2·P)/bandwidth = {comm:.4g} s "
        f"(P = 2·d_model·d_ff; the threshold is B ≥ (2/3)·peak_flops/bandwidth = {t:.0f} "
        "tokens)"
    )


def _suspects_dp(
    batch: int, d_model: int, d_ff: int, chip: str, link: str
) -> list[tuple[Any, str]]:
    b, c, h, p = batch, CHIPS[chip].peak_flops, CHIPS[chip].hbm_bandwidth, 2 * d_model * d_ff
    comp, comm = _dp_times(batch, d_model, d_ff, chip, link)
    return [
        (comp > comm, "At the boundary, compute time = communication time, the step is "
         "compute-bound: the formula says ≥, not >."),
        (comm >= comp, "The comparison is the wrong way round: compute-bound means compute "
         "time ≥ communication time."),
        (comp >= comm / 2, "An all-reduce sends twice the gradient's bytes on a ring "
         "(reduce-scatter, then all-gather): 2·(2·P) / bandwidth."),
        (comp >= 4 * p / h, "The gradient all-reduce goes over the link: use "
         "link.bandwidth, not the chip's hbm_bandwidth."),
        (2 * b * p / c >= comm, "A training step does 6·B·P FLOPs, not 2·B·P: the backward "
         "pass costs twice the forward."),
        (comp >= 8 * comm, "Bandwidth is in bytes/s and the gradient is 2·P bytes: no factor "
         "8 for bits."),
        (comp >= 2 * comm, "The gradient is bf16: 2 bytes per parameter, 2·P bytes, not 4·P."),
    ]  # fmt: skip


def _fallback_dp(batch: int, d_model: int, d_ff: int, chip: str, link: str) -> str:
    t = dp_threshold(CHIPS[chip], LINKS[link])
    return (
        f"P cancels: the step is compute-bound exactly when B ≥ (2/3)·peak_flops/bandwidth "
        f"= {t:.0f} tokens; here B = {batch}. Compare your two times with the message's."
    )


BOUNDARY = {"batch": 3400, "d_model": 1024, "d_ff": 4096, "chip": "tpu-v5p", "link": "tpu-v5p-ici"}
"""B = T exactly: compute and communication times are equal in floating point
(3400 = (2/3)·459e12/90e9, measured equal for every way of writing the formula
tried), so ≥ says True and > says False. Drawn examples stay away from T."""


def _dp_step(r: float) -> Example:
    t = dp_threshold(CHIPS["h100-sxm"], LINKS["nvlink4"])
    return {"batch": round(r * t), "d_model": 1024, "d_ff": 4096, "chip": "h100-sxm",
            "link": "nvlink4"}  # fmt: skip


DP_IS_COMPUTE_BOUND = Scalar(
    "dp_is_compute_bound", bool, _dp,
    explicit=(
        *(_dp_step(r) for r in _DP_STEPS),
        {"batch": 4096, "d_model": 4096, "d_ff": 16384, "chip": "tpu-v5e", "link": "tpu-v5e-ici"},
        {"batch": 2048, "d_model": 8192, "d_ff": 28672, "chip": "tpu-v5p", "link": "tpu-v5p-ici"},
        {"batch": 16384, "d_model": 4096, "d_ff": 16384, "chip": "h200-sxm", "link": "infiniband-ndr"},
        {"batch": 1, "d_model": 64, "d_ff": 256, "chip": "toy-chip", "link": "toy-link"},
        BOUNDARY,
    ),
    answer=lambda **ex: _dp_times(**ex)[0] >= _dp_times(**ex)[1],
    args=lambda batch, d_model, d_ff, chip, link: (batch, d_model, d_ff, CHIPS[chip], LINKS[link]),
    call=lambda batch, d_model, d_ff, chip, link: (
        f"dp_is_compute_bound({batch}, d_model={d_model}, d_ff={d_ff}, "
        f"{_show_chip(CHIPS[chip])}, {_show_link(LINKS[link])})"
    ),
    formula=_dp_formula,
    suspects=_suspects_dp,
    fallback=_fallback_dp,
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


def _want_bytes(case: str, shapes: tuple[int, int, int], mesh: Any, dtype: str) -> Any:
    if case not in matmul.CASES:
        return RAISES
    return case_bytes(case, shapes, mesh, matmul.ITEMSIZE[dtype])


def _suspects_bytes(
    case: str, shapes: tuple[int, int, int], mesh: Any, dtype: str
) -> list[tuple[Any, str]]:
    (i, j, k), b = shapes, matmul.ITEMSIZE[dtype]
    want = case_bytes(case, (i, j, k), mesh, b)
    out = [
        (want / b, "That is elements: multiply by bytes_per_elem."),
        (want * 8, "Count bytes, not bits: no factor 8."),
    ]
    if case == "2d":
        x, y = mesh
        out += [
            (2 * (x * y - 1) * (i // x) * k * b / (x * y), "The partial sums are added over 'y' "
             "only: each ring has Y devices, not the whole mesh's X·Y."),
            (2 * (x - 1) * (i // x) * k * b / x, "The contracting dim J is split over 'y', so "
             "the ring runs along 'y': use Y, not X."),
            (2 * (y - 1) * i * k * b / y, "Each device's partial sum covers only its own I/X "
             "rows of C: [I/X, K], not [I, K]."),
            ((y - 1) * (i // x) * k * b / y, "C[I_X, K] is whole along 'y', so the partials are "
             "all-reduced, 2·(Y−1)/Y, not reduce-scattered."),
        ]  # fmt: skip
        return out
    n = mesh
    if case == "allgather":
        out += [
            ((n - 1) * i * j * b, "Each ring step sends one block of A, [I, J/N], not all of A."),
            (i * j * b, "A device already holds 1/N of A: it receives only the other N−1 blocks, "
             "(N−1)·(I·J/N)·b."),
            ((n - 1) * j * k * b / n, "Here A is the sharded operand: gather A, not B."),
        ]  # fmt: skip
    if case == "allreduce":
        out += [
            ((n - 1) * i * k * b / n, "That is a reduce-scatter's count. An all-reduce is a "
             "reduce-scatter followed by an all-gather: 2·(N−1)/N·I·K·b."),
            ((n - 1) * i * k * b, "A ring all-reduce sends chunks of C, [I/N, K], 2·(N−1) times, "
             "not the whole C N−1 times."),
        ]  # fmt: skip
    if case == "reducescatter":
        out += [
            (2 * (n - 1) * i * k * b / n, "That is an all-reduce's count. A reduce-scatter is "
             "half of one: (N−1)/N·I·K·b."),
            ((n - 1) * i * k * b / (n * n), "V is the whole partial C, [I, K], that every device "
             "holds before the sum, not the [I, K/N] it keeps."),
        ]  # fmt: skip
    if case == "conflict":
        out += [
            ((n - 1) * i * j * b / n, "Gather B, never A: C keeps A's row split, so each device "
             "needs all of B's columns and only its own rows of A."),
            ((n - 1) * i * k * b / n, "No sum is needed here: each device computes whole dot "
             "products once it has all of B, (N−1)·(J·K/N)·b."),
        ]  # fmt: skip
    return out


def _fallback_bytes(case: str, shapes: tuple[int, int, int], mesh: Any, dtype: str) -> str | None:
    if case == "local":
        return "Every device holds whole rows of A and all of B: nothing moves, 0 bytes."
    ways = mesh[1] if case == "2d" else mesh
    if ways == 1:
        return "A ring of one device sends nothing: 0 bytes."
    return None


PREDICT_BYTES = Scalar(
    "predict_bytes", int, _bytes_strategy,
    explicit=_explicit_bytes,
    answer=_want_bytes,
    args=lambda case, shapes, mesh, dtype: (case, tuple(shapes), mesh, matmul.ITEMSIZE[dtype]),
    call=lambda case, shapes, mesh, dtype: (
        f"predict_bytes({case!r}, {tuple(shapes)}, {mesh}, "
        f"bytes_per_elem={matmul.ITEMSIZE[dtype]})"
    ),
    formula=lambda **ex: f"{matmul.CASES[ex['case']].formula} = {_want_bytes(**ex)}",
    suspects=_suspects_bytes,
    fallback=_fallback_bytes,
    measure=lambda case, shapes, mesh, dtype, simulated: matmul.measure(
        matmul.CASES[case], tuple(shapes), _mesh_shape(case, mesh), dtype, simulated
    ),
    max_examples=2,
)  # fmt: skip


EXERCISES = (
    MATMUL_FLOPS, ARITHMETIC_INTENSITY, MATMUL_TIME, COLLECTIVE_TIME, DP_IS_COMPUTE_BOUND,
    PREDICT_BYTES,
)  # fmt: skip
SPEC = LessonSpec(exercises=tuple(e.spec() for e in EXERCISES), compiler_options=FAST_COMPILE)
