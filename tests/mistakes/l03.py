"""Realistic wrong implementations for lesson 3 (see tests/mistakes/__init__.py)."""

from __future__ import annotations

from tests.mistakes import Mistake

L03 = "l03_cost_model"


def _edit(id: str, exercise: str, old: str, new: str, says: tuple[str, ...]) -> Mistake:
    """A one-line edit of the solution that the ``values`` check must fail."""
    return Mistake(
        id=id,
        module=L03,
        exercise=exercise,
        status="failed",
        check="values",
        says=says,
        patch=((old, new),),
    )


MISTAKES: list[Mistake] = [
    _edit(
        id="flops-without-the-two", exercise="matmul_flops",
        old="return 2 * m * k * n", new="return m * k * n",
        says=("two FLOPs",),
    ),
    _edit(
        id="flops-as-float", exercise="matmul_flops",
        old="return 2 * m * k * n", new="return 2.0 * m * k * n",
        says=("a float", "integer arithmetic", "value itself is right"),
    ),
    _edit(
        id="intensity-forgets-writing-c", exercise="arithmetic_intensity",
        old="traffic = (m * k + k * n + m * n) * bytes_per_elem",
        new="traffic = (m * k + k * n) * bytes_per_elem",
        says=("Writing C",),
    ),
    _edit(
        id="intensity-in-elements", exercise="arithmetic_intensity",
        old="traffic = (m * k + k * n + m * n) * bytes_per_elem",
        new="traffic = m * k + k * n + m * n",
        says=("per element", "bytes_per_elem"),
    ),
    _edit(
        id="roofline-sum", exercise="matmul_time",
        old="return max(math_time, memory_time)", new="return math_time + memory_time",
        says=("math time + memory time", "max"),
    ),
    _edit(
        id="roofline-math-only", exercise="matmul_time",
        old="return max(math_time, memory_time)", new="return math_time",
        says=("math time only", "memory-bound"),
    ),
    _edit(
        id="collective-in-bits", exercise="collective_time",
        old="step = alpha + nbytes / (n * w)", new="step = alpha + 8 * nbytes / (n * w)",
        says=("factor 8",),
    ),
    _edit(
        id="collective-whole-array-per-step", exercise="collective_time",
        old="step = alpha + nbytes / (n * w)", new="step = alpha + nbytes / w",
        says=("V/N bytes",),
    ),
    _edit(
        id="all-reduce-without-its-two", exercise="collective_time",
        old="return 2 * (n - 1) * step", new="return (n - 1) * step",
        says=("reduce-scatter followed by an all-gather",),
    ),
    _edit(  # latency paid in both phases, the bytes counted as crossing once
        id="all-reduce-bytes-counted-once", exercise="collective_time",
        old="return 2 * (n - 1) * step",
        new="return 2 * (n - 1) * alpha + (n - 1) * nbytes / (n * w)",
        says=("bandwidth term (2(N−1)·V/(N·W)", "multiplied by ½"),
    ),
    _edit(
        id="one-device-not-free", exercise="collective_time",
        old="    if n == 1:\n        return 0.0\n", new="",
        says=("n_devices = 1",),
    ),
    _edit(
        id="all-to-all-as-all-gather", exercise="collective_time",
        old='if kind in ("all_gather", "reduce_scatter"):',
        new='if kind in ("all_gather", "reduce_scatter", "all_to_all"):',
        says=("all-gather's cost", "k links"),
    ),
    _edit(
        id="unknown-kind-silent", exercise="collective_time",
        old="raise ValueError(f\"unknown collective {kind!r}; known kinds: {', '.join(COLLECTIVES)}\")",
        new="return 0.0",
        says=("'gather'", "expected a ValueError"),
    ),
    _edit(
        id="dp-forward-flops-only", exercise="dp_is_compute_bound",
        old="compute = 6 * batch_per_device * params", new="compute = 2 * batch_per_device * params",
        says=("6·B·P", "backward"),
    ),
    _edit(
        id="dp-all-reduce-without-its-two", exercise="dp_is_compute_bound",
        old="communicate = 2 * (2 * params) / link.bandwidth",
        new="communicate = 2 * params / link.bandwidth",
        says=("twice the gradient's bytes",),
    ),
    _edit(
        id="dp-comparison-reversed", exercise="dp_is_compute_bound",
        old="return compute >= communicate", new="return communicate >= compute",
        says=("wrong way round",),
    ),
    _edit(
        id="dp-strict-comparison-at-the-boundary", exercise="dp_is_compute_bound",
        old="return compute >= communicate", new="return compute > communicate",
        says=("At the boundary", "≥, not >"),
    ),
    _edit(
        id="dp-fp32-gradient", exercise="dp_is_compute_bound",
        old="communicate = 2 * (2 * params) / link.bandwidth",
        new="communicate = 2 * (4 * params) / link.bandwidth",
        says=("bf16", "2·P bytes"),
    ),
    _edit(
        id="predict-all-reduce-as-reduce-scatter", exercise="predict_bytes",
        old="return 2 * (n - 1) * i * k * b // n", new="return (n - 1) * i * k * b // n",
        says=("you predict 384 bytes", "moves 768 bytes per device", "reduce-scatter's count"),
    ),
    _edit(
        id="predict-2d-whole-mesh", exercise="predict_bytes",
        old="return 2 * (y - 1) * (i // x) * k * b // y",
        new="return 2 * (x * y - 1) * (i // x) * k * b // (x * y)",
        says=("over 'y' only", "X·Y"),
    ),
    _edit(
        id="predict-conflict-gathers-a", exercise="predict_bytes",
        old="return (n - 1) * (j * k // n) * b", new="return (n - 1) * (i * j // n) * b",
        says=("never A",),
    ),
    _edit(
        id="predict-float-division", exercise="predict_bytes",
        old="return (n - 1) * (i * j // n) * b", new="return (n - 1) * (i * j / n) * b",
        says=("a float", "//"),
    ),
    Mistake(
        id="predict-elements", module=L03, exercise="predict_bytes",
        code="""
_correct_predict_bytes = predict_bytes

def predict_bytes(case, shapes, n_devices, bytes_per_elem):
    return _correct_predict_bytes(case, shapes, n_devices, 1)  # elements, not bytes
""",
        status="failed", check="values", says=("elements", "bytes_per_elem"),
    ),
    Mistake(
        id="collective-latency-once", module=L03, exercise="collective_time",
        code="""
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
        status="failed", check="values", says=("every hop",),
    ),
    Mistake(  # held back in drafts/heldback until its hint was made right (issue 45)
        id='l03-predict-2d-divides-first',
        module='l03_cost_model',
        exercise='predict_bytes',
        status="failed",
        check='values',
        says=('integer division',),
        patch=(('return 2 * (y - 1) * (i // x) * k * b // y', 'return 2 * (y - 1) // y * (i // x) * k * b'),),
    ),
    Mistake(  # issue 45: a whole number where the ratio is fractional
        id="l03-intensity-truncated-to-an-int",
        module="l03_cost_model",
        exercise="arithmetic_intensity",
        status="failed",
        check="values",
        says=("rounded down to a whole number", "int()"),
        patch=(("    return matmul_flops(m, k, n) / traffic", "    return int(matmul_flops(m, k, n) / traffic)  # FLOPs per byte, a count"),),
    ),
    Mistake(  # issue 45 audit (round 3): 1 for 0.923 was told "rounded up", 0.5 elsewhere
        id="l03-intensity-traffic-of-every-multiply",
        module="l03_cost_model",
        exercise="arithmetic_intensity",
        status="failed",
        check="values",
        says=("arithmetic_intensity(",),
        never=("rounded",),
        patch=(("    traffic = (m * k + k * n + m * n) * bytes_per_elem\n", "    traffic = m * k * n * bytes_per_elem  # each multiply-add reads an element\n"),),
    ),
    Mistake(  # audit 67: 0 is floor(t) of every time under a second: no rounding measured
        id="l03-collective-all-to-all-left-at-zero",
        module="l03_cost_model",
        exercise="collective_time",
        status="failed",
        check="values",
        says=("returned 0; expected 3.87381e-06",),
        never=("rounded",),
        patch=(("        return (n - 1) * alpha + (n - 1) / (2 * n) * nbytes / w\n", "        return 0.0  # TODO all-to-all\n"),),
    ),
]  # fmt: skip
