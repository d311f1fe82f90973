"""Checks on the traced program (jaxpr): what the student wrote, before XLA
compiled it — whether it chose its own collectives, and what dtype each sends.

The compiled HLO stays the source of truth for kinds, counts and bytes
(:mod:`grader.checks.comms`); XLA:CPU widens bfloat16 collectives to float32
there, so the dtype a collective sends is read here instead.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from grader.checks.comms import communication
from grader.evidence import Table
from grader.results import CheckResult
from grader.spec import Check, Trial


@dataclass(frozen=True)
class UnderShardMap(Check):
    """The program holds a ``jax.shard_map``: the lesson is about choosing the
    communication yourself, not leaving it to XLA's partitioner."""

    name: str = "shard_map"
    itemsize: Callable[[Trial], int] | None = None
    """Count elements at this width (see :meth:`grader.hlo.Collective.total`)."""

    def __call__(self, trial: Trial) -> CheckResult:
        if trial.program.counts["shard_map"]:
            return CheckResult(self.name, True, "written with jax.shard_map")
        comms, width = trial.comms, self.itemsize(trial) if self.itemsize else None
        kinds = ", ".join(sorted(comms.kinds())) or "no collectives"
        sent = comms.bytes(None, width)
        shown = "an unknown number of" if sent is None else f"{sent:,}"
        return CheckResult(
            self.name,
            False,
            f"no jax.shard_map in your program: XLA's partitioner chose {kinds} "
            f"({shown} bytes per device) — the table below is its plan, not yours",
            evidence=[communication(trial, width)],
            hint="This lesson asks you to choose the collectives: write the body under "
            "jax.shard_map with in_specs/out_specs from the docstring and call the collective "
            "(lax.all_gather, lax.psum, lax.psum_scatter, lax.ppermute) yourself. A plain "
            "a @ b or jnp.matmul(..., out_sharding=…) leaves the choice to XLA.",
        )


@dataclass(frozen=True)
class SendsIn(Check):
    """Every collective the student wrote sends ``dtype(example)``, as traced: a
    float32 running sum on bfloat16 inputs doubles the bytes on a real link."""

    dtype: Callable[[Trial], str] = lambda t: t.example["dtype"]
    name: str = "precision"

    def __call__(self, trial: Trial) -> CheckResult:
        want = self.dtype(trial)
        if not trial.program.collectives:
            return CheckResult(self.name, True, "no collectives written")
        wrong = [s for s in trial.program.collectives if any(d != want for d in s.dtypes)]
        if not wrong:
            return CheckResult(self.name, True, f"every collective sends {want}")
        rows = [[s.primitive, ", ".join(s.axes), want, ", ".join(s.dtypes)] for s in wrong]
        got = sorted({d for s in wrong for d in s.dtypes if d != want})
        return CheckResult(
            self.name,
            False,
            f"{len(wrong)} collective(s) send {', '.join(got)} where the inputs are {want}",
            evidence=[Table(["collective", "axes", "expected", "yours"], rows)],
            hint=f"Cast to {want} before the collective (x.astype(a.dtype)): a wider dtype "
            f"on the wire sends more bytes than the optimum on a GPU or TPU, even where "
            "XLA:CPU hides it. Accumulate locally in float32 if you like, but send the "
            "inputs' dtype.",
        )
