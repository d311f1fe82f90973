"""Hold a check against each array of an output that is a pytree.

Training exercises return dicts of gradients or ``(params, loss)``: the
value and sharding checks are written for one array, so :class:`Leaves`
runs its check once per named leaf, on a copy of the trial whose output,
expected value and ``extra`` are that leaf's, and reports the first leaf
that fails under its name.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from grader.results import CheckResult
from grader.spec import Check, Trial

Leaf = tuple[str, Any, Any, dict[str, Any]]
"""(name, the student's array, the expected array, extra facts for the check)."""


@dataclass(frozen=True)
class Leaves(Check):
    """``check`` holds for every leaf ``leaves(trial)`` names."""

    check: Check = Check()
    leaves: Callable[[Trial], list[Leaf]] = lambda t: []
    hint: Callable[[str, Trial, CheckResult], str | None] | None = None
    """A hint for a failing leaf that knows more than the inner check (or None to keep its own)."""

    @property
    def name(self) -> str:  # type: ignore[override]
        return self.check.name

    def __call__(self, trial: Trial) -> CheckResult:
        passed: dict[str, CheckResult] = {}
        for name, output, expected, extra in self.leaves(trial):
            leaf = replace(
                trial, output=output, expected=expected,
                extra={**trial.extra, **extra, "leaf": name},
            )  # fmt: skip
            result = self.check(leaf)
            if not result.passed:
                better = self.hint(name, leaf, result) if self.hint else None
                return CheckResult(
                    result.name, False, f"{name}: {result.message}",
                    details={**result.details, "leaf": name}, hint=better or result.hint,
                )  # fmt: skip
            passed[name] = result
        messages = {r.message for r in passed.values()}
        text = (
            f"{', '.join(passed)}: {messages.pop()}"
            if len(messages) == 1
            else "; ".join(f"{n}: {r.message}" for n, r in passed.items())
        )
        return CheckResult(self.name, True, text, details={n: r.details for n, r in passed.items()})
