"""Realistic wrong implementations for lesson 3 (see tests/mistakes/__init__.py)."""

from __future__ import annotations

from tests.mistakes import Mistake

L03 = "l03_cost_model"


def _edit(id: str, exercise: str, old: str, new: str, says: tuple[str, ...]) -> Mistake:
    """A one-line edit of the solution that the ``values`` check must fail."""
    return Mistake(id, L03, exercise, "", "failed", "values", says, patch=((old, new),))


MISTAKES: list[Mistake] = [
    _edit(
        "flops-without-the-two", "matmul_flops",
        "return 2 * m * k * n", "return m * k * n",
        ("two FLOPs",),
    ),
    _edit(
        "flops-as-float", "matmul_flops",
        "return 2 * m * k * n", "return 2.0 * m * k * n",
        ("a float", "integer arithmetic", "value itself is right"),
    ),
    _edit(
        "intensity-forgets-writing-c", "arithmetic_intensity",
        "traffic = (m * k + k * n + m * n) * bytes_per_elem",
        "traffic = (m * k + k * n) * bytes_per_elem",
        ("Writing C",),
    ),
    _edit(
        "intensity-in-elements", "arithmetic_intensity",
        "traffic = (m * k + k * n + m * n) * bytes_per_elem",
        "traffic = m * k + k * n + m * n",
        ("per element", "bytes_per_elem"),
    ),
    _edit(
        "roofline-sum", "matmul_time",
        "return max(math_time, memory_time)", "return math_time + memory_time",
        ("math time + memory time", "max"),
    ),
    _edit(
        "roofline-math-only", "matmul_time",
        "return max(math_time, memory_time)", "return math_time",
        ("math time only", "memory-bound"),
    ),
    _edit(
        "collective-in-bits", "collective_time",
        "step = alpha + nbytes / (n * w)", "step = alpha + 8 * nbytes / (n * w)",
        ("factor 8",),
    ),
    _edit(
        "collective-whole-array-per-step", "collective_time",
        "step = alpha + nbytes / (n * w)", "step = alpha + nbytes / w",
        ("V/N bytes",),
    ),
    _edit(
        "all-reduce-without-its-two", "collective_time",
        "return 2 * (n - 1) * step", "return (n - 1) * step",
        ("reduce-scatter followed by an all-gather",),
    ),
    _edit(
        "one-device-not-free", "collective_time",
        "    if n == 1:\n        return 0.0\n", "",
        ("n_devices = 1",),
    ),
    _edit(
        "all-to-all-as-all-gather", "collective_time",
        'if kind in ("all_gather", "reduce_scatter"):',
        'if kind in ("all_gather", "reduce_scatter", "all_to_all"):',
        ("all-gather's cost", "k links"),
    ),
    _edit(
        "unknown-kind-silent", "collective_time",
        "raise ValueError(f\"unknown collective {kind!r}; known kinds: {', '.join(COLLECTIVES)}\")",
        "return 0.0",
        ("'gather'", "expected a ValueError"),
    ),
    _edit(
        "dp-forward-flops-only", "dp_is_compute_bound",
        "compute = 6 * batch_per_device * params", "compute = 2 * batch_per_device * params",
        ("6·B·P", "backward"),
    ),
    _edit(
        "dp-all-reduce-without-its-two", "dp_is_compute_bound",
        "communicate = 2 * (2 * params) / link.bandwidth",
        "communicate = 2 * params / link.bandwidth",
        ("twice the gradient's bytes",),
    ),
    _edit(
        "dp-comparison-reversed", "dp_is_compute_bound",
        "return compute >= communicate", "return communicate >= compute",
        ("wrong way round",),
    ),
    _edit(
        "dp-fp32-gradient", "dp_is_compute_bound",
        "communicate = 2 * (2 * params) / link.bandwidth",
        "communicate = 2 * (4 * params) / link.bandwidth",
        ("bf16", "2·P bytes"),
    ),
    _edit(
        "predict-all-reduce-as-reduce-scatter", "predict_bytes",
        "return 2 * (n - 1) * i * k * b // n", "return (n - 1) * i * k * b // n",
        ("you predict 384 bytes", "moves 768 bytes per device", "reduce-scatter's count"),
    ),
    _edit(
        "predict-2d-whole-mesh", "predict_bytes",
        "return 2 * (y - 1) * (i // x) * k * b // y",
        "return 2 * (x * y - 1) * (i // x) * k * b // (x * y)",
        ("over 'y' only", "X·Y"),
    ),
    _edit(
        "predict-conflict-gathers-a", "predict_bytes",
        "return (n - 1) * (j * k // n) * b", "return (n - 1) * (i * j // n) * b",
        ("never A",),
    ),
    _edit(
        "predict-float-division", "predict_bytes",
        "return (n - 1) * (i * j // n) * b", "return (n - 1) * (i * j / n) * b",
        ("a float", "//"),
    ),
    Mistake(
        "predict-elements", L03, "predict_bytes",
        """
_correct_predict_bytes = predict_bytes

def predict_bytes(case, shapes, n_devices, bytes_per_elem):
    return _correct_predict_bytes(case, shapes, n_devices, 1)  # elements, not bytes
""",
        "failed", "values", ("elements", "bytes_per_elem"),
    ),
    Mistake(
        "collective-latency-once", L03, "collective_time",
        """
def collective_time(kind, nbytes, n_devices, link):
    if kind not in COLLECTIVES:
        raise ValueError(f"unknown collective {kind!r}")
    n = n_devices
    if n == 1:
        return 0.0
    chunks = {"all_gather": n - 1, "reduce_scatter": n - 1, "all_reduce": 2 * (n - 1),
              "all_to_all": (n - 1) * n / 2 / n, "permute": 1}[kind]
    return link.latency + chunks * nbytes / (n * link.bandwidth)  # one latency in all
""",
        "failed", "values", ("every hop",),
    ),
]  # fmt: skip
