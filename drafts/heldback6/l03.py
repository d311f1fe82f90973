"""Held-back set 6, lesson 3 (see drafts/heldback6/__init__.py)."""

from __future__ import annotations

from drafts.heldback import Held

M = "l03_cost_model"

HELD: list[Held] = [
    Held(
        id="hb6-l03-ring-latency-of-n-hops",
        module=M,
        exercise="collective_time",
        what=(
            "Counting the links of a ring of N devices, the learner charges N hop latencies for "
            "an all-gather or reduce-scatter (2N for an all-reduce) while keeping N − 1 chunks of "
            "bandwidth: a ring collective takes N − 1 sequential hops, so every ring kind is one "
            "latency (two for the all-reduce) too slow."
        ),
        cause=("n − 1 hops", "N - 1", "latency", "hops", "one hop too many"),
        kind="off-by-one",
        code="""
def collective_time(kind, nbytes, n_devices, link):
    if kind not in COLLECTIVES:
        raise ValueError(f"unknown collective {kind!r}; known kinds: {', '.join(COLLECTIVES)}")
    n, alpha, w = n_devices, link.latency, link.bandwidth
    if n == 1:
        return 0.0
    # a ring of n devices has n links: n hops of latency, n - 1 chunks of V/n on the wire
    if kind in ("all_gather", "reduce_scatter"):
        return n * alpha + (n - 1) * nbytes / (n * w)
    if kind == "all_reduce":  # a reduce-scatter, then an all-gather
        return 2 * (n * alpha + (n - 1) * nbytes / (n * w))
    if kind == "all_to_all":
        return (n - 1) * alpha + (n - 1) / (2 * n) * nbytes / w
    return alpha + nbytes / (n * w)  # permute: every device sends its shard one hop
""",
    ),
    Held(
        id="hb6-l03-roofline-counts-multiply-adds",
        module=M,
        exercise="matmul_time",
        what=(
            "Writing the roofline inline, the learner takes the math time as m·k·n / peak, the "
            "multiply-adds, instead of the 2·m·k·n FLOPs that peak_flops counts: every "
            "compute-bound matmul comes out twice as fast as it is."
        ),
        cause=("2·m·k·n", "multiply-add", "matmul_flops", "two flops", "factor of 2"),
        kind="formula",
        patch=(
            (
                "    math_time = matmul_flops(m, k, n) / chip.peak_flops\n",
                "    math_time = m * k * n / chip.peak_flops  # one fused multiply-add per (i, p, j)\n",
            ),
        ),
    ),
    Held(
        id="hb6-l03-roofline-bytes-hard-coded-bf16",
        module=M,
        exercise="matmul_time",
        what=(
            "The learner writes the memory time with 2 bytes per element, bf16's size, instead of "
            "the bytes_per_elem argument: right for bf16, but a memory-bound float32 (4) or int8 "
            "(1) matmul gets the wrong time."
        ),
        cause=("bytes_per_elem", "hard-coded", "2 bytes", "element size", "itemsize"),
        kind="dtype",
        patch=(
            (
                "    memory_time = (m * k + k * n + m * n) * bytes_per_elem / chip.hbm_bandwidth\n",
                "    memory_time = (m * k + k * n + m * n) * 2 / chip.hbm_bandwidth  # bf16 operands\n",
            ),
        ),
    ),
    Held(
        id="hb6-l03-dp-backward-costs-one-forward",
        module=M,
        exercise="dp_is_compute_bound",
        what=(
            "Assuming the backward pass costs as much as the forward, the learner counts the "
            "compute as 4·B·P FLOPs (2 forward + 2 backward) instead of 6·B·P: the backward "
            "needs two matmuls per weight (input and weight gradients), so the compute time is "
            "2/3 of what it should be and the threshold batch is 1.5× too large."
        ),
        cause=("6·B·P", "6 ", "backward", "twice the forward", "4·B·P"),
        kind="factor",
        patch=(
            (
                "    compute = 6 * batch_per_device * params / chip.peak_flops\n",
                "    compute = (2 + 2) * batch_per_device * params / chip.peak_flops  # forward + backward\n",
            ),
        ),
    ),
]
