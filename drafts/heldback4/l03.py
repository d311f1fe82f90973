"""Held-back set 4, lesson 3 (see drafts/heldback4/__init__.py)."""

from __future__ import annotations

from drafts.heldback import Held

M = "l03_cost_model"

HELD: list[Held] = [
    Held(
        id="hb4-l03-intensity-bytes-per-flop",
        module=M,
        exercise="arithmetic_intensity",
        what=(
            "The learner divides the HBM bytes by the FLOPs, bytes per FLOP, instead of FLOPs "
            "per byte: the ratio is upside down, small where the matmul is compute-bound."
        ),
        cause=("upside down", "inverted", "flops per byte", "bytes per flop", "reciprocal"),
        kind="formula",
        patch=(
            (
                "return matmul_flops(m, k, n) / traffic",
                "return traffic / matmul_flops(m, k, n)",
            ),
        ),
    ),
    Held(
        id="hb4-l03-reduce-scatter-timed-as-all-reduce",
        module=M,
        exercise="collective_time",
        what=(
            "Grouping the collectives that reduce, the learner times a reduce-scatter like an "
            "all-reduce, 2(N − 1) hops, though a reduce-scatter is only the first half of one: "
            "N − 1 hops of V/N."
        ),
        cause=("reduce-scatter", "half of an all-reduce", "n − 1 hops", "2(n − 1)", "twice"),
        kind="formula",
        patch=(
            (
                'if kind in ("all_gather", "reduce_scatter"):\n        return (n - 1) * step\n'
                '    if kind == "all_reduce":  # a reduce-scatter, then an all-gather',
                'if kind == "all_gather":\n        return (n - 1) * step\n'
                '    if kind in ("all_reduce", "reduce_scatter"):  # both reduce the data',
            ),
        ),
    ),
    Held(
        id="hb4-l03-dp-flops-of-one-matrix",
        module=M,
        exercise="dp_is_compute_bound",
        what=(
            "The learner counts the compute as 6·B·d_model·d_ff, the parameters of one of the "
            "layer's two matrices, while the gradient all-reduce carries both: the compute is "
            "halved and the batch needed to hide the all-reduce doubles."
        ),
        cause=("two matrices", "2·d_model·d_ff", "w_out", "half the parameters", "6·b·p"),
        kind="factor",
        patch=(
            (
                "compute = 6 * batch_per_device * params / chip.peak_flops",
                "compute = 6 * batch_per_device * d_model * d_ff / chip.peak_flops",
            ),
        ),
    ),
    Held(
        id="hb4-l03-reducescatter-bytes-of-the-result-shard",
        module=M,
        exercise="predict_bytes",
        what=(
            "For the reduce-scatter case the learner takes V to be the result each device keeps, "
            "C[I, K/N], and sends (N − 1)/N of that: the ring moves (N − 1) chunks of the whole "
            "partial C[I, K], so the bytes are N times too few."
        ),
        cause=("whole partial", "i·k", "result shard", "divided by n twice", "k/n"),
        kind="factor",
        patch=(
            (
                'if case == "reducescatter":\n        return (n - 1) * i * k * b // n',
                'if case == "reducescatter":  # V is the result C[I, K/N]\n'
                "        return (n - 1) * (i * k // n) * b // n",
            ),
        ),
    ),
]
