"""Held-back set 5, lesson 3 (see drafts/heldback5/__init__.py)."""

from __future__ import annotations

from drafts.heldback import Held

M = "l03_cost_model"

HELD: list[Held] = [
    Held(
        id="hb5-l03-intensity-floor-division",
        module=M,
        exercise="arithmetic_intensity",
        what=(
            "Taking section 6's advice to 'divide with //' for every count, the learner divides "
            "the FLOPs by the bytes with floor division: the intensity comes back as a whole "
            "number, floored (and 0 wherever the matmul does less than one FLOP per byte)."
        ),
        cause=("floor", "//", "integer division", "true division", "truncat"),
        kind="dtype",
        patch=(
            (
                "return matmul_flops(m, k, n) / traffic",
                "return matmul_flops(m, k, n) // traffic",
            ),
        ),
    ),
    Held(
        id="hb5-l03-roofline-result-written-in-float32",
        module=M,
        exercise="matmul_time",
        what=(
            "Remembering that matmuls accumulate in float32, the learner charges the result C at "
            "4 bytes per element and only the operands at bytes_per_elem: the memory time is "
            "too long wherever bytes_per_elem is not 4, though the model writes C in the "
            "inputs' precision."
        ),
        cause=("bytes_per_elem", "float32", "4 bytes", "accumulat", "result's bytes"),
        kind="dtype",
        patch=(
            (
                "memory_time = (m * k + k * n + m * n) * bytes_per_elem / chip.hbm_bandwidth",
                "memory_time = ((m * k + k * n) * bytes_per_elem + m * n * 4) / chip.hbm_bandwidth",
            ),
        ),
    ),
    Held(
        id="hb5-l03-all-to-all-each-piece-one-hop",
        module=M,
        exercise="collective_time",
        what=(
            "For the all-to-all the learner charges what one device sends, (N − 1)/N of its V/N "
            "bytes, as if every piece crossed a single link: on a ring the piece for the device "
            "k hops away crosses k links, so each link carries (N − 1)·V/(2N), N/2 times more."
        ),
        cause=("k links", "crosses", "hops", "forwarded", "(n−1)/(2n)"),
        kind="formula",
        patch=(
            (
                "return (n - 1) * alpha + (n - 1) / (2 * n) * nbytes / w",
                "return (n - 1) * alpha + (n - 1) / n * (nbytes / n) / w  # what I send",
            ),
        ),
    ),
    Held(
        id="hb5-l03-link-counted-both-directions",
        module=M,
        exercise="collective_time",
        what=(
            "Reading that a link carries traffic both ways, the learner doubles link.bandwidth "
            "for every collective: the ring here sends one way, and W is already what one "
            "device sends into it, so every bandwidth term comes out half as long."
        ),
        cause=(
            "one direction",
            "both directions",
            "bidirectional",
            "one way",
            "twice the bandwidth",
        ),
        kind="factor",
        patch=(
            (
                "n, alpha, w = n_devices, link.latency, link.bandwidth",
                "n, alpha, w = n_devices, link.latency, 2 * link.bandwidth  # both directions",
            ),
        ),
    ),
]
