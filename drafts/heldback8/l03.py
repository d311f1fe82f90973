"""Held-back set 8, lesson 3 (see drafts/heldback8/__init__.py)."""

from __future__ import annotations

from drafts.heldback import Held

M = "l03_cost_model"

HELD: list[Held] = [
    Held(
        id="hb8-l03-flops-one-add-fewer-than-multiplies",
        module=M,
        exercise="matmul_flops",
        what="Counting exactly, the learner takes k multiplies and k − 1 adds per output element, m·n·(2k − 1), while the lesson's convention is 2·m·k·n (one multiply-add per (i, p, j) counted as two FLOPs).",
        cause=("2·m·k·n", "2k − 1", "2k-1", "k − 1 adds", "convention"),
        kind="formula",
        patch=(
            (
                "    return 2 * m * k * n\n",
                "    return m * n * (2 * k - 1)  # k multiplies and k − 1 adds per output\n",
            ),
        ),
    ),
    Held(
        id="hb8-l03-predict-allreduce-ratio-floored-first",
        module=M,
        exercise="predict_bytes",
        what="For the all-reduce case the learner writes 2 * (n - 1) // n * i * k * b: Python evaluates the floor division first, so the ring factor 2(N − 1)/N becomes 1 for every N ≥ 2 and the bytes are those of C once.",
        cause=("floor division", "order", "2(n − 1)/n", "precedence", "// n"),
        kind="formula",
        patch=(
            (
                "        return 2 * (n - 1) * i * k * b // n\n",
                "        return 2 * (n - 1) // n * i * k * b\n",
            ),
        ),
    ),
    Held(
        id="hb8-l03-dp-gradient-bytes-times-batch",
        module=M,
        exercise="dp_is_compute_bound",
        what="The learner thinks every token's gradient is all-reduced and multiplies the gradient's bytes by the batch per device; the all-reduce carries one summed gradient of 2·P bytes whatever the batch, so large batches look communication-bound.",
        cause=("batch", "independent of the batch", "one gradient", "2·p bytes", "per token"),
        kind="factor",
        patch=(
            (
                "    communicate = 2 * (2 * params) / link.bandwidth",
                "    communicate = 2 * (2 * params * batch_per_device) / link.bandwidth",
            ),
        ),
    ),
]
