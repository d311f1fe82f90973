"""The output's sharding is the one the exercise promises."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from grader.evidence import Sharding
from grader.results import CheckResult
from grader.spec import Check, Trial


def describe_sharding(sharding: Any) -> str:
    spec = getattr(sharding, "spec", None)
    if spec is not None:
        mesh = sharding.mesh
        axes = ", ".join(f"{n}={s}" for n, s in zip(mesh.axis_names, mesh.devices.shape))
        return f"{spec} on mesh({axes})"
    return type(sharding).__name__


@dataclass(frozen=True)
class OutputSharding(Check):
    """``trial.output.sharding`` is equivalent to ``expected(trial)``."""

    expected: Callable[[Trial], Any] = lambda t: None
    name: str = "sharding"

    def __call__(self, trial: Trial) -> CheckResult:
        import jax

        want = self.expected(trial)
        out = trial.output
        if not isinstance(out, jax.Array):
            return CheckResult(
                self.name, False, f"returned {type(out).__name__}, which has no sharding"
            )
        got = out.sharding
        seen = Sharding(describe_sharding(want), describe_sharding(got))
        if got.is_equivalent_to(want, out.ndim):
            return CheckResult(self.name, True, f"sharded as {seen.actual}", evidence=[seen])
        hint = None
        if getattr(got, "is_fully_replicated", False):
            hint = "The output is replicated on every device: it should stay sharded."
        return CheckResult(
            self.name, False, f"sharded as {seen.actual}; expected {seen.expected}",
            evidence=[seen], hint=hint,
        )  # fmt: skip
