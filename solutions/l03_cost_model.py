"""Lesson 3 — communication versus computation (reference solution).

A back-of-the-envelope cost model, in plain Python: how long a matmul takes
on one chip (the roofline), how long each collective takes on a ring of
devices, and how many bytes each sharded matmul of lesson 4 must send.

Units throughout: FLOPs, bytes, seconds, FLOP/s and bytes/s.
"""

from dataclasses import dataclass


@dataclass(frozen=True)
class Chip:
    """One accelerator: how fast it computes and how fast it reads its memory."""

    name: str
    peak_flops: float  # dense bf16 FLOP/s
    hbm_bandwidth: float  # bytes/s


@dataclass(frozen=True)
class Link:
    """The link one device uses to send into a ring of its peers."""

    name: str
    bandwidth: float  # bytes/s, one direction, that one device can send into the ring
    latency: float  # seconds per hop


# Public figures; the lesson text names the source of each. Latencies are
# order-of-magnitude assumptions: no datasheet states a per-hop latency.
CHIPS = {
    "tpu-v5e": Chip("tpu-v5e", peak_flops=197e12, hbm_bandwidth=819e9),
    "tpu-v5p": Chip("tpu-v5p", peak_flops=459e12, hbm_bandwidth=2765e9),
    "h100-sxm": Chip("h100-sxm", peak_flops=989e12, hbm_bandwidth=3.35e12),
    "h200-sxm": Chip("h200-sxm", peak_flops=989e12, hbm_bandwidth=4.8e12),
}
LINKS = {
    "tpu-v5e-ici": Link("tpu-v5e-ici", bandwidth=45e9, latency=1e-6),
    "tpu-v5p-ici": Link("tpu-v5p-ici", bandwidth=90e9, latency=1e-6),
    "nvlink4": Link("nvlink4", bandwidth=450e9, latency=1e-6),
    "infiniband-ndr": Link("infiniband-ndr", bandwidth=50e9, latency=5e-6),
}

COLLECTIVES = ("all_gather", "reduce_scatter", "all_reduce", "all_to_all", "permute")
CASES = ("local", "allgather", "allreduce", "reducescatter", "conflict", "2d")


def matmul_flops(m: int, k: int, n: int) -> int:
    """FLOPs of ``[m, k] @ [k, n]``: one multiply and one add per (i, p, j)."""
    return 2 * m * k * n


def arithmetic_intensity(m: int, k: int, n: int, bytes_per_elem: int) -> float:
    """FLOPs per byte of HBM traffic for ``[m, k] @ [k, n]``.

    The traffic is reading both operands and writing the result once:
    ``(m·k + k·n + m·n) · bytes_per_elem``.
    """
    traffic = (m * k + k * n + m * n) * bytes_per_elem
    return matmul_flops(m, k, n) / traffic


def matmul_time(m: int, k: int, n: int, chip: Chip, bytes_per_elem: int) -> float:
    """Roofline time in seconds of ``[m, k] @ [k, n]`` on ``chip``.

    Math and memory traffic overlap, so the slower of the two sets the time:
    ``max(flops / peak_flops, bytes / hbm_bandwidth)``.
    """
    math_time = matmul_flops(m, k, n) / chip.peak_flops
    memory_time = (m * k + k * n + m * n) * bytes_per_elem / chip.hbm_bandwidth
    return max(math_time, memory_time)


def collective_time(kind: str, nbytes: int, n_devices: int, link: Link) -> float:
    """Seconds for one collective on a unidirectional ring of ``n_devices``.

    ``kind`` is one of ``all_gather``, ``reduce_scatter``, ``all_reduce``,
    ``all_to_all``, ``permute``; anything else raises ``ValueError``.
    ``nbytes`` is V, the size of the whole (global) array: the all-gather's
    result, the reduce-scatter's or all-reduce's input on one device, the
    total of all devices' data for an all-to-all, the total of all shards
    for a permute (each device sends V/N one hop). Each hop costs
    ``link.latency`` plus its bytes over ``link.bandwidth``. One device: 0.
    """
    if kind not in COLLECTIVES:
        raise ValueError(f"unknown collective {kind!r}; known kinds: {', '.join(COLLECTIVES)}")
    n, alpha, w = n_devices, link.latency, link.bandwidth
    if n == 1:
        return 0.0
    step = alpha + nbytes / (n * w)  # one hop carrying one chunk of V/N
    if kind in ("all_gather", "reduce_scatter"):
        return (n - 1) * step
    if kind == "all_reduce":  # a reduce-scatter, then an all-gather
        return 2 * (n - 1) * step
    if kind == "all_to_all":
        # the chunk for the device k hops away crosses k links: summed over
        # k = 1 … N−1, each link carries (N−1)·V/(2N) bytes
        return (n - 1) * alpha + (n - 1) / (2 * n) * nbytes / w
    return step  # permute: every device sends its shard one hop


def dp_is_compute_bound(
    batch_per_device: int, d_model: int, d_ff: int, chip: Chip, link: Link
) -> bool:
    """Does one MLP layer's data-parallel step hide its gradient all-reduce?

    The layer has ``W_in [d_model, d_ff]`` and ``W_out [d_ff, d_model]``,
    P = 2·d_model·d_ff parameters, and sees ``batch_per_device`` tokens on
    each device. Compute: 6·B·P FLOPs (forward and backward) at peak.
    Communication: a ring all-reduce of the bf16 gradient (2·P bytes) over
    many devices, 2·(2·P) / link.bandwidth, latency ignored. True when the
    compute time is at least the communication time.
    """
    params = 2 * d_model * d_ff
    compute = 6 * batch_per_device * params / chip.peak_flops
    communicate = 2 * (2 * params) / link.bandwidth  # (N−1)/N → 1 for a large ring
    return compute >= communicate


def predict_bytes(
    case: str, shapes: tuple[int, int, int], n_devices: int | tuple[int, int], bytes_per_elem: int
) -> int:
    """Bytes one device sends for a sharded matmul case of lesson 4 (ring model).

    ``shapes = (I, J, K)`` for ``A[I, J] · B[J, K]``; ``n_devices`` is N for
    the 1-D cases and the mesh shape (X, Y) for ``"2d"``. Cases:
    ``"local"`` A[I_X, J]·B[J, K] → C[I_X, K];
    ``"allgather"`` A[I, J_X]·B[J, K] → C[I, K];
    ``"allreduce"`` A[I, J_X]·B[J_X, K] → C[I, K];
    ``"reducescatter"`` A[I, J_X]·B[J_X, K] → C[I, K_X];
    ``"conflict"`` A[I_X, J]·B[J, K_X] → C[I_X, K];
    ``"2d"`` A[I_X, J_Y]·B[J_Y, K] → C[I_X, K].
    Anything else raises ``ValueError``.
    """
    if case not in CASES:
        raise ValueError(f"unknown case {case!r}; known cases: {', '.join(CASES)}")
    i, j, k = shapes
    b = bytes_per_elem
    if case == "2d":
        x, y = n_devices
        return 2 * (y - 1) * (i // x) * k * b // y  # all-reduce the [I/X, K] partial over y
    n = n_devices
    if case == "local":
        return 0
    if case == "allgather":  # N−1 blocks of A, each [I, J/N]
        return (n - 1) * (i * j // n) * b
    if case == "allreduce":  # reduce-scatter + all-gather of C [I, K]
        return 2 * (n - 1) * i * k * b // n
    if case == "reducescatter":
        return (n - 1) * i * k * b // n
    return (n - 1) * (j * k // n) * b  # conflict: all-gather B, never A
