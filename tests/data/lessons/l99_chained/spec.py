"""A lesson of the tests' own: three programs, each taking the last one's output.

Its one exercise, ``shift``, moves each device's block to the next device
(``lax.ppermute``). The spec compiles three programs around it, each called
on the previous program's output (program k also scales by k + 1), as a
serving lesson's decode step takes its prefill's cache: the engine contract's
chained case (``ExerciseSpec.run``'s docstring), graded in this process and
through the student's process alike (``tests/test_contract.py``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import strategies as st

from grader.results import CheckResult
from grader.spec import Check, Context, ExerciseSpec, LessonSpec, Trial

AXIS = "x"


def run(rt: Any, fn: Any, ex: dict) -> Trial:
    import jax
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P

    n, rows = ex["n"], ex["rows"]
    mesh = rt.mesh((n,), (AXIS,))
    data = rt.rng().integers(-9, 10, size=(n * rows, 3)).astype(np.float32)
    value = jax.device_put(data, NamedSharding(mesh, P(AXIS)))
    trial = None
    for k in range(3):
        body = jax.shard_map(lambda b, k=k: fn(b, AXIS) * (k + 1), mesh=mesh,
                             in_specs=P(AXIS), out_specs=P(AXIS))  # fmt: skip
        trial = rt.compile_and_run(jax.jit(body), (value,), mesh)
        value = trial.output  # the next program takes this one's output
    expected = data
    for k in range(3):
        expected = np.roll(expected, rows, axis=0) * (k + 1)
    trial.expected = expected
    return trial


class Values(Check):
    name = "values"

    def __call__(self, trial: Trial) -> CheckResult:
        got, want = np.asarray(trial.output), trial.expected
        if got.shape != want.shape:
            return CheckResult(self.name, False, f"shape {got.shape}, expected {want.shape}")
        if np.array_equal(got, want):
            return CheckResult(self.name, True, "every block is where three shifts put it")
        row, col = (int(i) for i in np.argwhere(got != want)[0])
        return CheckResult(
            self.name, False,
            f"after the three programs, element ({row}, {col}) is {got[row, col]:g}, "
            f"expected {want[row, col]:g}",
        )  # fmt: skip


def explicit(ctx: Context) -> list[dict]:
    return [{"n": 4, "rows": 1}]


def strategy(ctx: Context) -> Any:
    sizes = [s for s in ctx.mesh_sizes if s in (4, 8)]  # three shifts either way differ
    return st.fixed_dictionaries({"n": st.sampled_from(sizes), "rows": st.integers(1, 2)})


SPEC = LessonSpec(
    exercises=[
        ExerciseSpec(
            name="shift",
            strategy=strategy,
            explicit=explicit,
            run=run,
            checks=[Values()],
            max_examples=1,
        ),  # fmt: skip
    ]
)
