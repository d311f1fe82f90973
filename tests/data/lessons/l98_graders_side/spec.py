"""A lesson of the tests' own whose spec has a bug: its ``run`` reaches the grader's
side (:mod:`grader.expected`) where the student's process runs it too.

Its one exercise, ``shift`` (lesson 99's), looks up a float64 reference eagerly
(not through ``later`` or a check), then compiles one program. In the grading process
the grader's side is there and the exercise passes; in the student's process it is
hidden, the lookup raises :class:`grader.later.Hidden` (a grader fault) there, and
the report says the grader's own code failed in that process
(``tests/test_contract.py``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import strategies as st

from grader.later import expected
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
    assert callable(expected("training").forward)  # the bug: the grader's side, here
    body = jax.shard_map(lambda b: fn(b, AXIS), mesh=mesh, in_specs=P(AXIS), out_specs=P(AXIS))
    trial = rt.compile_and_run(jax.jit(body), (value,), mesh)
    trial.expected = np.roll(data, rows, axis=0)
    return trial


class Values(Check):
    name = "values"

    def __call__(self, trial: Trial) -> CheckResult:
        ok = np.array_equal(np.asarray(trial.output), trial.expected)
        return CheckResult(self.name, ok, "shifted" if ok else "not shifted")


def strategy(ctx: Context) -> Any:
    return st.fixed_dictionaries({"n": st.sampled_from(ctx.mesh_sizes), "rows": st.just(1)})


SPEC = LessonSpec(
    exercises=[
        ExerciseSpec(name="shift", strategy=strategy, explicit=lambda ctx: [],
                     run=run, checks=[Values()], max_examples=1),
    ]
)  # fmt: skip
