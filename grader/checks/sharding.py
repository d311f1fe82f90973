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
        elif (moved := _moved(getattr(got, "spec", None), getattr(want, "spec", None),
                              out.ndim)) is not None:  # fmt: skip
            hint = moved
        return CheckResult(
            self.name, False, f"sharded as {seen.actual}; expected {seen.expected}",
            evidence=[seen], hint=hint,
        )  # fmt: skip


def _moved(got: Any, want: Any, ndim: int) -> str | None:
    """Where the same mesh axes split the output along other dimensions: which, measured
    (``P(None, 'x')`` for ``P('x', None)``): the values were computed with another layout,
    or the out_specs name the axes on the wrong dimension."""
    if got is None or want is None:
        return None
    g = [tuple(a) if isinstance(a, tuple) else (a,) for a in (*got, *[None] * (ndim - len(got)))]
    w = [tuple(a) if isinstance(a, tuple) else (a,) for a in (*want, *[None] * (ndim - len(want)))]
    used_g = sorted(str(a) for d in g for a in d if a is not None)
    used_w = sorted(str(a) for d in w for a in d if a is not None)
    if used_g != used_w or not used_g:
        return None
    where = {str(a): i for i, d in enumerate(g) for a in d if a is not None}
    belongs = {str(a): i for i, d in enumerate(w) for a in d if a is not None}
    said = "; ".join(f"mesh axis {a!r} splits dimension {where[a]} where it splits dimension "
                     f"{belongs[a]}" for a in used_w if where[a] != belongs[a])  # fmt: skip
    if not said:
        return None
    return (
        f"Your output is split by the same mesh axes along other dimensions: {said}. "
        "The result each device computes (and the out_specs that stack it) must keep "
        "the layout the exercise names."
    )
