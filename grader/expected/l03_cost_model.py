"""Lesson 3's grader side: every answer, the formula shown with it, and the values
known mistakes give on the same example (hidden from the student's process:
:mod:`grader.expected`). The student's side — hardware records, draws, the call —
is :mod:`grader.lessons.l03_cost_model.spec`, which reaches these functions by
name (each takes the example's fields as keywords, like a
:class:`grader.checks.scalar.Scalar`'s fields).
"""

from __future__ import annotations

from typing import Any

from grader.checks.scalar import RAISES
from grader.checks.terms import Max, Sum, Term
from grader.expected import matmul as costs
from grader.lessons.l03_cost_model.spec import CHIPS, KINDS, LINKS, Chip, Link
from grader.reference import matmul

# ------------------------------------------------------------ formulas


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


def suspects_intensity(m: int, k: int, n: int, bytes_per_elem: int) -> list[tuple[Any, str]]:
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


def _roofline(m: int, k: int, n: int, chip: str, bytes_per_elem: int) -> tuple[float, float]:
    """(math, memory) seconds of one matmul on ``chip``."""
    c = CHIPS[chip]
    return flops(m, k, n) / c.peak_flops, traffic(m, k, n, bytes_per_elem) / c.hbm_bandwidth


def time_formula(m: int, k: int, n: int, chip: str, bytes_per_elem: int) -> str:
    math_t, mem_t = _roofline(m, k, n, chip, bytes_per_elem)
    bound = "math" if math_t >= mem_t else "memory"
    return (
        f"max(2·m·k·n / peak_flops, (m·k + k·n + m·n)·b / hbm_bandwidth) "
        f"= max({math_t:.4g} s math, {mem_t:.4g} s memory): {bound}-bound"
    )


def suspects_time(m: int, k: int, n: int, chip: str, bytes_per_elem: int) -> list[tuple[Any, str]]:
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


def time_terms(m: int, k: int, n: int, chip: str, bytes_per_elem: int) -> Max:
    """:func:`matmul_time` as its two named terms (:mod:`grader.checks.terms`)."""
    math_t, mem_t = _roofline(m, k, n, chip, bytes_per_elem)
    return Max(Term("math time, 2·m·k·n / peak_flops", math_t),
               Term("memory time, (m·k + k·n + m·n)·b / hbm_bandwidth", mem_t))  # fmt: skip


HOPS_SAID = {"all_gather": "(N−1)", "reduce_scatter": "(N−1)", "all_reduce": "2(N−1)",
             "permute": "1"}  # fmt: skip


def collective_terms(kind: str, nbytes: int, n: int, link: str) -> Sum | None:
    """:func:`want_collective` as its latency and bandwidth terms; None where nothing moves."""
    if kind not in KINDS or n == 1:
        return None
    a, bw = LINKS[link].latency, LINKS[link].bandwidth
    if kind == "all_to_all":
        return Sum(Term("latency, (N−1)·α", (n - 1) * a),
                   Term("bandwidth, (N−1)/(2N)·V/W", (n - 1) * nbytes / (2 * n * bw)))  # fmt: skip
    hops = {"all_gather": n - 1, "reduce_scatter": n - 1, "all_reduce": 2 * (n - 1),
            "permute": 1}[kind]  # fmt: skip
    said = HOPS_SAID[kind]
    return Sum(Term(f"latency, {said}·α", hops * a),
               Term(f"bandwidth, {said}·V/(N·W)", hops * nbytes / (n * bw)))  # fmt: skip


def want_collective(kind: str, nbytes: int, n: int, link: str) -> Any:
    if kind not in KINDS:
        return RAISES
    return ring_time(kind, nbytes, n, LINKS[link])


def collective_formula(kind: str, nbytes: int, n: int, link: str) -> str:
    if n == 1:
        return "0 s: one device sends nothing"
    w = LINKS[link]
    return (
        f"{KIND_FORMULA[kind]} with N={n}, α={w.latency:g} s, V={nbytes} B, W={w.bandwidth:g} B/s"
    )


def suspects_collective(kind: str, nbytes: int, n: int, link: str) -> list[tuple[Any, str]]:
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


def fallback_collective(kind: str, nbytes: int, n: int, link: str) -> str | None:
    if n == 1:
        return (
            "With one device nothing is sent: return 0.0 for n_devices = 1 (a formula with "
            "a fixed hop, like the permute's, must not charge it)."
        )
    return None


def dp_formula(batch: int, d_model: int, d_ff: int, chip: str, link: str) -> str:
    comp, comm = dp_times_of(batch, d_model, d_ff, chip, link)
    t = dp_threshold(CHIPS[chip], LINKS[link])
    return (
        f"compute 6·B·P/peak_flops = {comp:.4g} s "
        f"{'≥' if comp >= comm else '<'} all-reduce 2·(2·P)/bandwidth = {comm:.4g} s "
        f"(P = 2·d_model·d_ff; the threshold is B ≥ (2/3)·peak_flops/bandwidth = {t:.0f} "
        "tokens)"
    )


def suspects_dp(batch: int, d_model: int, d_ff: int, chip: str, link: str) -> list[tuple[Any, str]]:
    b, c, h, p = batch, CHIPS[chip].peak_flops, CHIPS[chip].hbm_bandwidth, 2 * d_model * d_ff
    comp, comm = dp_times_of(batch, d_model, d_ff, chip, link)
    return [
        (comp > comm, "At the boundary, compute time = communication time, the step is "
         "compute-bound: the formula says ≥, not >."),
        (comm >= comp, "The comparison is the wrong way round: compute-bound means compute "
         "time ≥ communication time."),
        (comp >= comm / 2, "Your answers are those of a compute-to-communication "
         "ratio twice the formula's: an all-reduce sends twice the "
         "gradient's bytes on a ring (reduce-scatter, then all-gather): 2·(2·P) / bandwidth — "
         "or the compute counted twice (6·B·P, P = 2·d_model·d_ff)."),
        (comp >= 4 * p / h, "The gradient all-reduce goes over the link: use "
         "link.bandwidth, not the chip's hbm_bandwidth."),
        (2 * b * p / c >= comm, "A training step does 6·B·P FLOPs, not 2·B·P: the backward "
         "pass costs twice the forward."),
        (comp >= 8 * comm, "Bandwidth is in bytes/s and the gradient is 2·P bytes: no factor "
         "8 for bits."),
        (comp >= 2 * comm, "Your answers are those of a compute-to-communication "
         "ratio half the formula's: the gradient is bf16, 2 bytes per "
         "parameter, 2·P bytes, not 4·P — or the compute counted half (P = 2·d_model·d_ff: "
         "both matrices of the layer; 6·B·P FLOPs)."),
    ]  # fmt: skip


def fallback_dp(batch: int, d_model: int, d_ff: int, chip: str, link: str) -> str:
    t = dp_threshold(CHIPS[chip], LINKS[link])
    return (
        f"P cancels: the step is compute-bound exactly when B ≥ (2/3)·peak_flops/bandwidth "
        f"= {t:.0f} tokens; here B = {batch}. Compare your two times with the message's."
    )


def want_bytes(case: str, shapes: tuple[int, int, int], mesh: Any, dtype: str) -> Any:
    if case not in matmul.CASES:
        return RAISES
    return case_bytes(case, shapes, mesh, matmul.ITEMSIZE[dtype])


def suspects_bytes(
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
            (2 * (y - 1) // y * (i // x) * k * b, "2·(Y−1)/Y is a fraction: integer division "
             "(//) truncates it (to 1 for every Y ≥ 3); divide last, or in floats."),
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


def fallback_bytes(case: str, shapes: tuple[int, int, int], mesh: Any, dtype: str) -> str | None:
    if case == "local":
        return "Every device holds whole rows of A and all of B: nothing moves, 0 bytes."
    ways = mesh[1] if case == "2d" else mesh
    if ways == 1:
        return "A ring of one device sends nothing: 0 bytes."
    return None


def suspects_flops(m: int, k: int, n: int) -> list[tuple[Any, str]]:
    return [
        (m * k * n, "That is m·k·n, the number of multiply-adds; each is two FLOPs "
         "(a multiply and an add): 2·m·k·n."),
        (m * n * (2 * k - 1), "m·n·(2k − 1) counts the additions exactly, but the convention "
         "(and the hardware, which fuses multiply and add) counts 2·m·k·n."),
        (2 * (m * k + k * n), "That counts elements, not operations: every one of the m·n "
         "outputs takes k multiply-adds, 2·m·k·n FLOPs in all."),
    ]  # fmt: skip


# ------------------------------------------------------------ answers, formulas


def intensity(m: int, k: int, n: int, bytes_per_elem: int) -> float:
    return flops(m, k, n) / traffic(m, k, n, bytes_per_elem)


def intensity_formula(m: int, k: int, n: int, bytes_per_elem: int) -> str:
    return (
        f"2·m·k·n / ((m·k + k·n + m·n)·b) = {flops(m, k, n)} FLOPs / "
        f"{traffic(m, k, n, bytes_per_elem)} bytes"
    )


def matmul_time(**ex: Any) -> float:
    return max(_roofline(**ex))


def dp_times_of(batch: int, d_model: int, d_ff: int, chip: str, link: str) -> tuple[float, float]:
    """(compute, communication) seconds of the example's step (chip and link by name)."""
    return dp_times(batch, d_model, d_ff, CHIPS[chip], LINKS[link])


def dp_is_compute_bound(**ex: Any) -> bool:
    comp, comm = dp_times_of(**ex)
    return comp >= comm


def bytes_formula(**ex: Any) -> str:
    return f"{matmul.CASES[ex['case']].formula} = {want_bytes(**ex)}"


def measure_bytes(
    case: str, shapes: tuple[int, int, int], mesh: Any, dtype: str, simulated: bool = False
) -> int:
    """Bytes the compiled grader's program for ``case`` sends per device (``simulated``:
    on the simulated CPU devices)."""
    return costs.measure(
        matmul.CASES[case], tuple(shapes), _mesh_shape(case, mesh), dtype, simulated
    )
