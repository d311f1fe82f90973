"""Held-back wrong programs for lesson 3 (see drafts/heldback/__init__.py)."""

from __future__ import annotations

from drafts.heldback import Held

M = "l03_cost_model"

HELD: list[Held] = [
    Held(
        id="hb-l03-intensity-counts-c-twice",
        module=M,
        exercise="arithmetic_intensity",
        what=(
            "Counts the result C as read and written (2·m·n elements) in the HBM traffic, as if "
            "the matmul accumulated into C in memory; the model moves each element once."
        ),
        cause=("twice", "written once", "2·m·n", "once"),
        kind="formula",
        patch=(
            (
                "traffic = (m * k + k * n + m * n) * bytes_per_elem",
                "traffic = (m * k + k * n + 2 * m * n) * bytes_per_elem  # C read and written",
            ),
        ),
    ),
    Held(
        id="hb-l03-roofline-min",
        module=M,
        exercise="matmul_time",
        what=(
            "Takes the minimum of math and memory time (remembering the roofline as a min of "
            "two ceilings), which gives the faster of the two instead of the slower."
        ),
        cause=("min", "slower", "max("),
        kind="formula",
        patch=(
            (
                "return max(math_time, memory_time)",
                "return min(math_time, memory_time)",
            ),
        ),
    ),
    Held(
        id="hb-l03-all-to-all-precedence",
        module=M,
        exercise="collective_time",
        what=(
            "Writes the all-to-all bandwidth term (N−1)/(2N)·V/W as (n - 1) / 2 * n: without "
            "parentheses it multiplies by N instead of dividing by it, N² times too large."
        ),
        cause=("precedence", "parenthes", "2·n", "(n−1)/(2n)"),
        kind="formula",
        patch=(
            (
                "return (n - 1) * alpha + (n - 1) / (2 * n) * nbytes / w",
                "return (n - 1) * alpha + (n - 1) / 2 * n * nbytes / w",
            ),
        ),
    ),
    Held(
        id="hb-l03-dp-hbm-instead-of-link",
        module=M,
        exercise="dp_is_compute_bound",
        what=(
            "Times the gradient all-reduce with the chip's HBM bandwidth instead of the link's, "
            "so the threshold becomes (2/3)·C/H tokens and far too small a batch passes."
        ),
        cause=("hbm", "link.bandwidth", "link bandwidth", "memory bandwidth"),
        kind="other",
        patch=(
            (
                "communicate = 2 * (2 * params) / link.bandwidth",
                "communicate = 2 * (2 * params) / chip.hbm_bandwidth",
            ),
        ),
    ),
]
