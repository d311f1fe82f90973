"""A lesson of the tests' own: a Pallas kernel read, never run (``Runtime.kernels``).

Its one exercise, ``send_right``, is a kernel inside ``shard_map`` that sends each
device's block to the next device with one remote DMA. The spec hands the program to
``rt.kernels``: in this process it is exported for a TPU and read here; through the
student's process it is exported there and read in the worker
(:func:`grader.exported.read_kernels`). The one check reads the kernel's DMAs: what
the grader observed of the program, not what the student's process said
(``tests/test_kernels_read.py``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import strategies as st

from grader.results import CheckResult
from grader.spec import Check, Context, ExerciseSpec, LessonSpec, Trial

AXIS = "x"
ROWS, COLS = 8, 128
"""One device's block: a float32 tile a TPU's DMA moves whole."""


def run(rt: Any, fn: Any, ex: dict) -> Trial:
    import jax
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P

    n = ex["n"]
    mesh = rt.mesh((n,), (AXIS,))
    data = rt.rng().standard_normal((n * ROWS, COLS)).astype(np.float32)
    value = jax.device_put(data, NamedSharding(mesh, P(AXIS)))
    body = jax.shard_map(lambda b: fn(b, AXIS), mesh=mesh, in_specs=P(AXIS),
                         out_specs=P(AXIS), check_vma=False)  # fmt: skip
    kernels = rt.kernels(body, (value,), mesh)
    if rt.exporting:  # the student's process: the tuple is empty, and nothing here is read
        assert kernels == ()
    return Trial(ex, mesh=mesh, extra={"kernels": kernels, "n": n})


class SendsRight(Check):
    name = "dmas"

    def __call__(self, trial: Trial) -> CheckResult:
        kernels, n = trial.extra["kernels"], trial.extra["n"]
        if len(kernels) != 1:
            return CheckResult(self.name, False, f"{len(kernels)} Pallas kernels, expected one")
        remote = [s for s in kernels[0].starts if s.remote]
        if len(remote) != 1:
            return CheckResult(self.name, False, f"{len(remote)} remote DMAs, expected one")
        (dma,) = remote
        right = tuple((i + 1) % n for i in range(n))
        if dma.peers != right:
            return CheckResult(
                self.name, False, f"the DMA goes to devices {dma.peers}, expected {right}"
            )
        if dma.bytes != ROWS * COLS * 4:
            return CheckResult(self.name, False, f"it moves {dma.bytes} bytes, not one block")
        return CheckResult(self.name, True, "one remote DMA of one block to the next device")


def explicit(ctx: Context) -> list[dict]:
    return [{"n": 4}]


def strategy(ctx: Context) -> Any:
    return st.fixed_dictionaries({"n": st.sampled_from([s for s in ctx.mesh_sizes if s > 2])})


SPEC = LessonSpec(
    exercises=[
        ExerciseSpec(
            name="send_right",
            strategy=strategy,
            explicit=explicit,
            run=run,
            checks=[SendsRight()],
            max_examples=1,
        ),  # fmt: skip
    ]
)
