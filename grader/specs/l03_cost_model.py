"""Grading spec for lesson 3: the cost model.

Every exercise is a pure function of numbers and two small hardware records,
so the grader holds each answer against its own formula (written here, never
imported from solutions/): integers exactly, floats within 1e-9 relative.
A wrong answer is held against a list of *suspects*, the values that known
mistakes produce on the same example (m·k·n for 2·m·k·n, the sum of math
and memory time for their max, …); a match names the mistake.

``predict_bytes`` is also held against the compiler: each example compiles
the lesson-4 reference for its case and counts the bytes it sends
(``grader.specs.l04_sharded_matmul.measure_reference``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from hypothesis import strategies as st

from grader.programs import call_pure
from grader.results import CheckResult
from grader.spec import Check, Context, Example, ExerciseSpec, LessonSpec, Trial

RAISES = "ValueError"
REL_TOL = 1e-9


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
CASES = ("local", "allgather", "allreduce", "reducescatter", "conflict", "2d")
ITEMSIZE = {"float32": 4, "bfloat16": 2}


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


def case_bytes(case: str, shapes: tuple[int, int, int], mesh: Any, b: int) -> int:
    i, j, k = shapes
    if case == "2d":
        x, y = mesh
        return 2 * (y - 1) * (i // x) * k * b // y
    n = mesh
    return {
        "local": 0,
        "allgather": (n - 1) * i * j * b // n,
        "allreduce": 2 * (n - 1) * i * k * b // n,
        "reducescatter": (n - 1) * i * k * b // n,
        "conflict": (n - 1) * j * k * b // n,
    }[case]


CASE_FORMULA = {
    "local": "0 (nothing moves)",
    "allgather": "all-gather A: (N−1)·(I·J/N)·b",
    "allreduce": "all-reduce C: 2·(N−1)/N·I·K·b",
    "reducescatter": "reduce-scatter C: (N−1)/N·I·K·b",
    "conflict": "all-gather B: (N−1)·(J·K/N)·b",
    "2d": "all-reduce over y of the [I/X, K] partial: 2·(Y−1)/Y·(I/X)·K·b",
}
KIND_FORMULA = {
    "all_gather": "(N−1)·(α + V/(N·W))",
    "reduce_scatter": "(N−1)·(α + V/(N·W))",
    "all_reduce": "2·(N−1)·(α + V/(N·W))",
    "all_to_all": "(N−1)·α + (N−1)/(2N)·V/W",
    "permute": "α + V/(N·W)",
}


# ------------------------------------------------------------ the check

Suspects = Callable[[Example], list[tuple[Any, str]]]


def _fmt(x: Any, other: Any = None) -> str:
    if isinstance(x, float):
        text = f"{x:.6g}"
        if isinstance(other, float) and text == f"{other:.6g}":
            text = repr(x)
        return text
    return repr(x)


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    return math.isclose(a, b, rel_tol=REL_TOL, abs_tol=0.0)


@dataclass(frozen=True)
class Agrees(Check):
    """The answer equals the grader's formula (``trial.expected``).

    ``kind`` is ``int`` (exact; floats refused, even whole ones), ``float``
    (within 1e-9 relative; ints accepted) or ``bool``. A ``trial.expected``
    of ``RAISES`` demands a ValueError. ``trial.extra["measured"]``, when
    present, is a second truth the answer must also equal: bytes counted in
    the compiled program. ``suspects`` lists the values known mistakes give
    on the example, each with its diagnosis (several matches are all
    named); ``fallback`` is the hint when none matches.
    """

    kind: type = float
    suspects: Suspects = lambda ex: []
    fallback: Callable[[Example], str | None] = lambda ex: None
    reference: Callable[[Example], Any] | None = None
    """The right answer for an example: rules out suspects that would have
    failed one of the examples ``before`` it, which the student passed."""
    before: Callable[[Example], list[Example]] = lambda ex: []
    name: str = "values"

    def __call__(self, trial: Trial) -> CheckResult:
        got, want, call = trial.output, trial.expected, trial.extra["call"]
        if want == RAISES:
            if isinstance(got, ValueError):
                return CheckResult(self.name, True, "agrees with the grader's formulas")
            what = (
                f"raised {type(got).__name__}: {got}"
                if isinstance(got, BaseException)
                else f"returned {got!r}"
            )
            return CheckResult(
                self.name, False, f"{call} {what}; expected a ValueError",
                hint="Check the name against the known ones first and raise ValueError "
                "for anything else: a silent default hides typos.",
            )  # fmt: skip
        try:
            got = self._normalize(got)
        except TypeError as exc:
            return CheckResult(self.name, False, f"{call} {exc}", hint=self._type_hint(got, want))
        measured = trial.extra.get("measured")
        formula = trial.extra["formula"]
        right = got == want if self.kind is int else _same(got, want)
        if right and (measured is None or got == measured):
            return CheckResult(
                self.name, True,
                "agrees with the grader's formula"
                + (" and with the bytes the compiled lesson-4 reference sends" if measured is not None else ""),
            )  # fmt: skip
        if measured is not None:
            if got == want:  # the formula and the compiler disagree: not the student's fault
                return CheckResult(
                    self.name, False,
                    f"{call}: the grader's formula gives {want} bytes but the compiled reference "
                    f"moves {measured}: a grader bug, please report it",
                )  # fmt: skip
            message = (
                f"{call}: you predict {got} bytes; the compiled reference moves {measured} "
                f"bytes per device (formula: {formula})"
            )
        else:
            sep = ":" if self.kind is bool else " ="
            message = (
                f"{call} returned {_fmt(got, want)}; expected {_fmt(want, got)}{sep} {formula}"
            )
        return CheckResult(self.name, False, message, hint=self._diagnose(got, want, trial.example))

    def _normalize(self, out: Any) -> Any:
        if self.kind is bool:
            if isinstance(out, (bool, np.bool_)):
                return bool(out)
            raise TypeError(f"returned {out!r}; expected a bool (True or False)")
        if isinstance(out, (bool, np.bool_)):
            raise TypeError(f"returned {out!r}, a bool; expected a number")
        if isinstance(out, (int, np.integer)):
            return int(out) if self.kind is int else float(out)
        if isinstance(out, (float, np.floating)):
            if self.kind is float:
                return float(out)
            raise TypeError(
                f"returned {out!r}, a float; expected an int (whole floats are refused too)"
            )
        raise TypeError(f"returned {type(out).__name__} {out!r}; expected {self.kind.__name__}")

    def _type_hint(self, got: Any, want: Any) -> str | None:
        if self.kind is int and isinstance(got, (float, np.floating)):
            right = (
                " The value itself is right." if math.isclose(got, want, rel_tol=REL_TOL) else ""
            )
            return (
                "Counts of FLOPs and bytes are whole numbers: keep to integer arithmetic "
                "(multiply first, then divide with //), since floats lose exactness above 2**53."
                + right
            )
        if got is None:
            return "The function returns None: did you forget the return statement?"
        return None

    def _diagnose(self, got: Any, want: Any, ex: Example) -> str | None:
        ruled_out = set()
        if self.reference is not None:
            for earlier in self.before(ex):
                right = self.reference(earlier)
                ruled_out |= {h for v, h in self.suspects(earlier) if not _same(v, right)}
        hints: list[str] = []
        for value, hint in self.suspects(ex):
            if _same(value, got) and not _same(value, want) and hint not in ruled_out | set(hints):
                hints.append(hint)
        if len(hints) > 1:
            return "One of these: " + " Or: ".join(hints)
        return hints[0] if hints else self.fallback(ex)


def _earlier(explicit: Callable[[Any], list[Example]]) -> Callable[[Example], list[Example]]:
    """The explicit examples graded before ``ex`` (all of them, for a drawn one).

    Only for exercises whose explicit examples do not depend on the context.
    """

    def before(ex: Example) -> list[Example]:
        cases = explicit(None)
        return cases[: cases.index(ex)] if ex in cases else cases

    return before


# ------------------------------------------------------------ matmul_flops

_DIM = st.one_of(st.integers(1, 64), st.sampled_from([128, 512, 1000, 4096, 8192, 65536]))


def _mkn(ctx: Context):
    return st.fixed_dictionaries({"m": _DIM, "k": _DIM, "n": _DIM})


def _explicit_flops(ctx: Context) -> list[Example]:
    return [{"m": 2, "k": 3, "n": 4}, {"m": 1, "k": 1, "n": 1}, {"m": 4096, "k": 8192, "n": 1}]


def _want_flops(ex: Example) -> int:
    return flops(ex["m"], ex["k"], ex["n"])


def _run_flops(fn: Callable[..., Any], ex: Example) -> Trial:
    m, k, n = ex["m"], ex["k"], ex["n"]
    return Trial(
        ex, output=fn(m, k, n), expected=_want_flops(ex),
        extra={"call": f"matmul_flops({m}, {k}, {n})", "formula": f"2·m·k·n = 2·{m}·{k}·{n}"},
    )  # fmt: skip


def _suspects_flops(ex: Example) -> list[tuple[Any, str]]:
    m, k, n = ex["m"], ex["k"], ex["n"]
    return [
        (m * k * n, "That is m·k·n, the number of multiply-adds; each is two FLOPs "
         "(a multiply and an add): 2·m·k·n."),
        (m * n * (2 * k - 1), "m·n·(2k − 1) counts the additions exactly, but the convention "
         "(and the hardware, which fuses multiply and add) counts 2·m·k·n."),
        (2 * (m * k + k * n), "That counts elements, not operations: every one of the m·n "
         "outputs takes k multiply-adds, 2·m·k·n FLOPs in all."),
    ]  # fmt: skip


# ------------------------------------------------------------ arithmetic_intensity


def _mknb(ctx: Context):
    return st.fixed_dictionaries(
        {"m": _DIM, "k": _DIM, "n": _DIM, "bytes_per_elem": st.sampled_from([1, 2, 4])}
    )


def _explicit_intensity(ctx: Context) -> list[Example]:
    return [
        {"m": 2, "k": 3, "n": 4, "bytes_per_elem": 2},
        {"m": 1, "k": 1, "n": 1, "bytes_per_elem": 4},
        {"m": 4096, "k": 4096, "n": 4096, "bytes_per_elem": 2},
        {"m": 1, "k": 8192, "n": 8192, "bytes_per_elem": 2},
    ]


def _want_intensity(ex: Example) -> float:
    m, k, n, b = ex["m"], ex["k"], ex["n"], ex["bytes_per_elem"]
    return flops(m, k, n) / traffic(m, k, n, b)


def _run_intensity(fn: Callable[..., Any], ex: Example) -> Trial:
    m, k, n, b = ex["m"], ex["k"], ex["n"], ex["bytes_per_elem"]
    f, t = flops(m, k, n), traffic(m, k, n, b)
    return Trial(
        ex, output=fn(m, k, n, b), expected=_want_intensity(ex),
        extra={
            "call": f"arithmetic_intensity({m}, {k}, {n}, bytes_per_elem={b})",
            "formula": f"2·m·k·n / ((m·k + k·n + m·n)·b) = {f} FLOPs / {t} bytes",
        },
    )  # fmt: skip


def _suspects_intensity(ex: Example) -> list[tuple[Any, str]]:
    m, k, n, b = ex["m"], ex["k"], ex["n"], ex["bytes_per_elem"]
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


# ------------------------------------------------------------ matmul_time


def _timed(ctx: Context):
    return st.fixed_dictionaries(
        {
            "m": _DIM, "k": _DIM, "n": _DIM,
            "chip": st.sampled_from(sorted(CHIPS)), "bytes_per_elem": st.sampled_from([1, 2, 4]),
        }
    )  # fmt: skip


def _explicit_time(ctx: Context) -> list[Example]:
    return [  # compute-bound, memory-bound, then one per chip
        {"m": 8192, "k": 8192, "n": 8192, "chip": "h100-sxm", "bytes_per_elem": 2},
        {"m": 1, "k": 8192, "n": 8192, "chip": "h100-sxm", "bytes_per_elem": 2},
        {"m": 512, "k": 4096, "n": 4096, "chip": "toy-chip", "bytes_per_elem": 4},
        {"m": 128, "k": 8192, "n": 8192, "chip": "tpu-v5e", "bytes_per_elem": 2},
        {"m": 4096, "k": 4096, "n": 4096, "chip": "tpu-v5p", "bytes_per_elem": 2},
        {"m": 256, "k": 8192, "n": 8192, "chip": "h200-sxm", "bytes_per_elem": 2},
    ]


def _want_time(ex: Example) -> float:
    m, k, n, b, chip = ex["m"], ex["k"], ex["n"], ex["bytes_per_elem"], CHIPS[ex["chip"]]
    return max(flops(m, k, n) / chip.peak_flops, traffic(m, k, n, b) / chip.hbm_bandwidth)


def _run_time(fn: Callable[..., Any], ex: Example) -> Trial:
    m, k, n, b, chip = ex["m"], ex["k"], ex["n"], ex["bytes_per_elem"], CHIPS[ex["chip"]]
    math_t = flops(m, k, n) / chip.peak_flops
    mem_t = traffic(m, k, n, b) / chip.hbm_bandwidth
    bound = "math" if math_t >= mem_t else "memory"
    return Trial(
        ex, output=fn(m, k, n, chip, b), expected=_want_time(ex),
        extra={
            "call": f"matmul_time({m}, {k}, {n}, {_show_chip(chip)}, bytes_per_elem={b})",
            "formula": f"max(2·m·k·n / peak_flops, (m·k + k·n + m·n)·b / hbm_bandwidth) "
            f"= max({math_t:.4g} s math, {mem_t:.4g} s memory): {bound}-bound",
        },
    )  # fmt: skip


def _suspects_time(ex: Example) -> list[tuple[Any, str]]:
    m, k, n, b, chip = ex["m"], ex["k"], ex["n"], ex["bytes_per_elem"], CHIPS[ex["chip"]]
    c, h = chip.peak_flops, chip.hbm_bandwidth
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


def _explicit_collective(ctx: Context) -> list[Example]:
    mib = 2**20
    return [
        *({"kind": k, "nbytes": mib, "n": 4, "link": "nvlink4"} for k in KINDS),
        {"kind": "permute", "nbytes": mib, "n": 1, "link": "nvlink4"},
        {"kind": "all_reduce", "nbytes": mib, "n": 1, "link": "toy-link"},
        {"kind": "all_reduce", "nbytes": 3 * mib, "n": 2, "link": "infiniband-ndr"},
        {"kind": "reduce_scatter", "nbytes": 3 * mib, "n": 3, "link": "tpu-v5p-ici"},
        {"kind": "all_to_all", "nbytes": 2**30, "n": 8, "link": "tpu-v5e-ici"},
        {"kind": "permute", "nbytes": 6 * mib, "n": 6, "link": "toy-link"},
        {"kind": "all_gather", "nbytes": 1, "n": 256, "link": "infiniband-ndr"},
        {"kind": "gather", "nbytes": mib, "n": 4, "link": "nvlink4"},  # unknown: ValueError
    ]


def _want_collective(ex: Example) -> Any:
    if ex["kind"] not in KINDS:
        return RAISES
    return ring_time(ex["kind"], ex["nbytes"], ex["n"], LINKS[ex["link"]])


def _run_collective(fn: Callable[..., Any], ex: Example) -> Trial:
    kind, v, n, link = ex["kind"], ex["nbytes"], ex["n"], LINKS[ex["link"]]
    want = _want_collective(ex)
    if kind not in KINDS:
        formula = "ValueError"
    elif n == 1:
        formula = "0 s: one device sends nothing"
    else:
        formula = (
            f"{KIND_FORMULA[kind]} with N={n}, α={link.latency:g} s, V={v} B, "
            f"W={link.bandwidth:g} B/s"
        )
    return Trial(
        ex, output=call_pure(fn, (kind, v, n, link), want == RAISES), expected=want,
        extra={
            "call": f"collective_time({kind!r}, nbytes={v}, n_devices={n}, {_show_link(link)})",
            "formula": formula,
        },
    )  # fmt: skip


def _suspects_collective(ex: Example) -> list[tuple[Any, str]]:
    kind, v, n, link = ex["kind"], ex["nbytes"], ex["n"], LINKS[ex["link"]]
    if kind not in KINDS:
        return []
    a, w = link.latency, link.bandwidth
    if n == 1:
        return []  # see _fallback_collective
    hops = {"all_gather": n - 1, "reduce_scatter": n - 1, "all_reduce": 2 * (n - 1),
            "all_to_all": n - 1, "permute": 1}[kind]  # fmt: skip
    bw = ring_time(kind, v, n, link) - hops * a  # the bandwidth term
    out = [
        (hops * a + 8 * bw, "nbytes is already bytes and bandwidth bytes/s: no factor 8."),
        (bw, "Every hop also costs link.latency (α): add it once per step of the ring."),
        (a + bw, "Latency is paid on every hop, not once per collective: "
         f"{hops} hop{'s' * (hops > 1)} here."),
    ]  # fmt: skip
    if kind != "all_to_all":
        out.append((hops * (a + v / w), "Each ring step carries one chunk, V/N bytes, not the "
                    "whole array V."))  # fmt: skip
    if kind in ("all_gather", "reduce_scatter", "all_reduce"):
        out.append((hops * a + bw * n / (n - 1), "The bandwidth term needs its (N−1)/N: a "
                    "device already holds 1/N of the array, so only (N−1)/N of V crosses its "
                    "link (V/W is the N → ∞ limit)."))  # fmt: skip
    if kind == "all_reduce":
        out.append((ring_time("all_gather", v, n, link), "An all-reduce is a reduce-scatter "
                    "followed by an all-gather: 2·(N−1) steps, twice the time of either."))  # fmt: skip
    if kind in ("all_gather", "reduce_scatter"):
        out.append((ring_time("all_reduce", v, n, link), "That is an all-reduce's time, "
                    "2·(N−1) steps; an all-gather or a reduce-scatter alone takes N−1."))  # fmt: skip
    if kind == "all_to_all":
        out += [
            (ring_time("all_gather", v, n, link), "That is an all-gather's cost. In an "
             "all-to-all every device sends a different chunk of V/N² to each other device, "
             "and on a ring the chunk for the device k hops away crosses k links: each link "
             "carries (N−1)·V/(2N) bytes in all."),
            ((n - 1) * a + (n - 1) * v / (n * n * w), "That lets each chunk cross one link. On "
             "a ring the chunk for the device k hops away crosses k links; summed over k = "
             "1 … N−1, each link carries (N−1)·V/(2N) bytes."),
        ]  # fmt: skip
    if kind == "permute":
        out.append(((n - 1) * (a + v / (n * w)), "A permute is one hop: every device sends its "
                    "shard V/N to its neighbour at once, α + V/(N·W)."))  # fmt: skip
    return out


def _fallback_collective(ex: Example) -> str | None:
    if ex["n"] == 1:
        return (
            "With one device nothing is sent: return 0.0 for n_devices = 1 (a formula with "
            "a fixed hop, like the permute's, must not charge it)."
        )
    return None


# ------------------------------------------------------------ dp_is_compute_bound

# Where each known mistake flips the answer, relative to the threshold
# T = (2/3)·C/W: reversed comparison everywhere, "all-reduce without its 2"
# at T/2, fp32 gradients at 2T, forward FLOPs only at 3T, bits at 8T, HBM for
# the link at T·W/HBM. The explicit examples visit 12T, 0.3T, 0.75T, 5T, 2.5T,
# 1.5T in that order, so each mistake is the only one caught where it fails.
_DP_STEPS = (12, 0.3, 0.75, 5, 2.5, 1.5)


def _dp(ctx: Context):
    def away(ex: Example) -> bool:
        comp, comm = dp_times(
            ex["batch"], ex["d_model"], ex["d_ff"], CHIPS[ex["chip"]], LINKS[ex["link"]]
        )
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


def _explicit_dp(ctx: Context) -> list[Example]:
    t = dp_threshold(CHIPS["h100-sxm"], LINKS["nvlink4"])
    steps = [
        {
            "batch": round(r * t),
            "d_model": 1024,
            "d_ff": 4096,
            "chip": "h100-sxm",
            "link": "nvlink4",
        }
        for r in _DP_STEPS
    ]
    return steps + [
        {"batch": 4096, "d_model": 4096, "d_ff": 16384, "chip": "tpu-v5e", "link": "tpu-v5e-ici"},
        {"batch": 2048, "d_model": 8192, "d_ff": 28672, "chip": "tpu-v5p", "link": "tpu-v5p-ici"},
        {"batch": 16384, "d_model": 4096, "d_ff": 16384, "chip": "h200-sxm", "link": "infiniband-ndr"},
        {"batch": 1, "d_model": 64, "d_ff": 256, "chip": "toy-chip", "link": "toy-link"},
    ]  # fmt: skip


def _want_dp(ex: Example) -> bool:
    comp, comm = dp_times(
        ex["batch"], ex["d_model"], ex["d_ff"], CHIPS[ex["chip"]], LINKS[ex["link"]]
    )
    return comp >= comm


def _run_dp(fn: Callable[..., Any], ex: Example) -> Trial:
    b, d, f = ex["batch"], ex["d_model"], ex["d_ff"]
    chip, link = CHIPS[ex["chip"]], LINKS[ex["link"]]
    comp, comm = dp_times(b, d, f, chip, link)
    t = dp_threshold(chip, link)
    return Trial(
        ex, output=fn(b, d, f, chip, link), expected=_want_dp(ex),
        extra={
            "call": f"dp_is_compute_bound({b}, d_model={d}, d_ff={f}, {_show_chip(chip)}, "
            f"{_show_link(link)})",
            "formula": f"compute 6·B·P/peak_flops = {comp:.4g} s "
            f"{'≥' if comp >= comm else '<'} all-reduce 2·(2·P)/bandwidth = {comm:.4g} s "
            f"(P = 2·d_model·d_ff; the threshold is B ≥ (2/3)·peak_flops/bandwidth = {t:.0f} "
            "tokens)",
        },
    )  # fmt: skip


def _suspects_dp(ex: Example) -> list[tuple[Any, str]]:
    b, d, f = ex["batch"], ex["d_model"], ex["d_ff"]
    chip, link = CHIPS[ex["chip"]], LINKS[ex["link"]]
    c, p = chip.peak_flops, 2 * d * f
    comp, comm = dp_times(b, d, f, chip, link)
    return [
        (comm >= comp, "The comparison is the wrong way round: compute-bound means compute "
         "time ≥ communication time."),
        (comp >= comm / 2, "An all-reduce sends twice the gradient's bytes on a ring "
         "(reduce-scatter, then all-gather): 2·(2·P) / bandwidth."),
        (comp >= 4 * p / chip.hbm_bandwidth, "The gradient all-reduce goes over the link: use "
         "link.bandwidth, not the chip's hbm_bandwidth."),
        (2 * b * p / c >= comm, "A training step does 6·B·P FLOPs, not 2·B·P: the backward "
         "pass costs twice the forward."),
        (comp >= 8 * comm, "Bandwidth is in bytes/s and the gradient is 2·P bytes: no factor "
         "8 for bits."),
        (comp >= 2 * comm, "The gradient is bf16: 2 bytes per parameter, 2·P bytes, not 4·P."),
    ]  # fmt: skip


def _fallback_dp(ex: Example) -> str:
    t = dp_threshold(CHIPS[ex["chip"]], LINKS[ex["link"]])
    return (
        f"P cancels: the step is compute-bound exactly when B ≥ (2/3)·peak_flops/bandwidth "
        f"= {t:.0f} tokens; here B = {ex['batch']}. Compare your two times with the message's."
    )


# ------------------------------------------------------------ predict_bytes

_2D_MESHES = ((2, 3), (2, 2), (3, 2), (2, 4), (4, 2), (1, 2), (2, 1), (1, 4))


def _pick(ctx: Context, n: int) -> int:
    """``n`` if meshes of that size exist here, else the largest that does."""
    return max(s for s in ctx.mesh_sizes if s <= n)


def _explicit_bytes(ctx: Context) -> list[Example]:
    two_d = next((m for m in _2D_MESHES if m[0] * m[1] <= ctx.n_devices), (1, 1))
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
    meshes_2d = [m for m in _2D_MESHES if m[0] * m[1] <= ctx.n_devices]

    @st.composite
    def example(draw) -> Example:
        case = draw(st.sampled_from([c for c in CASES if c != "2d" or meshes_2d]))
        mesh = draw(st.sampled_from(meshes_2d if case == "2d" else ctx.mesh_sizes))
        unit = mesh[0] * mesh[1] if case == "2d" else mesh
        shapes = tuple(unit * draw(st.integers(1, 4)) for _ in range(3))
        dtype = draw(st.sampled_from(sorted(ITEMSIZE)))
        return {"case": case, "shapes": shapes, "mesh": mesh, "dtype": dtype}

    return example()


def _run_bytes(fn: Callable[..., Any], ex: Example) -> Trial:
    case, shapes, mesh, dtype = ex["case"], tuple(ex["shapes"]), ex["mesh"], ex["dtype"]
    b = ITEMSIZE[dtype]
    call = f"predict_bytes({case!r}, {shapes}, {mesh}, bytes_per_elem={b})"
    if case not in CASES:
        out = call_pure(fn, (case, shapes, mesh, b), True)
        return Trial(ex, output=out, expected=RAISES, extra={"call": call, "formula": ""})
    out = fn(case, shapes, mesh, b)
    from grader.specs.l04_sharded_matmul import measure_reference  # compiles: imports jax

    mesh_shape = tuple(mesh) if case == "2d" else (mesh,)
    want = case_bytes(case, shapes, mesh, b)
    return Trial(
        ex, output=out, expected=want,
        extra={
            "call": call, "formula": f"{CASE_FORMULA[case]} = {want}",
            "measured": measure_reference(case, shapes, mesh_shape, dtype),
        },
    )  # fmt: skip


def _suspects_bytes(ex: Example) -> list[tuple[Any, str]]:
    case, (i, j, k), mesh, b = ex["case"], ex["shapes"], ex["mesh"], ITEMSIZE[ex["dtype"]]
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


def _fallback_bytes(ex: Example) -> str | None:
    if ex["case"] == "local":
        return "Every device holds whole rows of A and all of B: nothing moves, 0 bytes."
    ways = ex["mesh"][1] if ex["case"] == "2d" else ex["mesh"]
    if ways == 1:
        return "A ring of one device sends nothing: 0 bytes."
    return None


SPEC = LessonSpec(
    number=3,
    module="l03_cost_model",
    exercises=(
        ExerciseSpec(
            name="matmul_flops",
            strategy=_mkn,
            explicit=_explicit_flops,
            run=_run_flops,
            checks=(
                Agrees(
                    int, _suspects_flops, reference=_want_flops, before=_earlier(_explicit_flops)
                ),
            ),
            max_examples=20,
        ),
        ExerciseSpec(
            name="arithmetic_intensity",
            strategy=_mknb,
            explicit=_explicit_intensity,
            run=_run_intensity,
            checks=(
                Agrees(
                    float,
                    _suspects_intensity,
                    reference=_want_intensity,
                    before=_earlier(_explicit_intensity),
                ),
            ),
            max_examples=20,
        ),
        ExerciseSpec(
            name="matmul_time",
            strategy=_timed,
            explicit=_explicit_time,
            run=_run_time,
            checks=(
                Agrees(
                    float, _suspects_time, reference=_want_time, before=_earlier(_explicit_time)
                ),
            ),
            max_examples=20,
        ),
        ExerciseSpec(
            name="collective_time",
            strategy=_collective,
            explicit=_explicit_collective,
            run=_run_collective,
            checks=(
                Agrees(
                    float,
                    _suspects_collective,
                    _fallback_collective,
                    reference=_want_collective,
                    before=_earlier(_explicit_collective),
                ),  # fmt: skip
            ),
            max_examples=30,
        ),
        ExerciseSpec(
            name="dp_is_compute_bound",
            strategy=_dp,
            explicit=_explicit_dp,
            run=_run_dp,
            checks=(Agrees(bool, _suspects_dp, _fallback_dp, _want_dp, _earlier(_explicit_dp)),),
            max_examples=20,
        ),
        ExerciseSpec(
            name="predict_bytes",
            strategy=_bytes_strategy,
            explicit=_explicit_bytes,
            run=_run_bytes,
            checks=(Agrees(int, _suspects_bytes, _fallback_bytes),),
            max_examples=2,
        ),
    ),
)
