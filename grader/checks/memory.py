"""Per-device memory of the compiled program, from its memory analysis."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from grader.evidence import Memory
from grader.results import CheckResult
from grader.spec import Check, Trial


@dataclass(frozen=True)
class TempMemory(Check):
    """Temporary (scratch) bytes per device stay at or below ``bound(trial)``."""

    bound: Callable[[Trial], int] = lambda t: 0
    what: str | Callable[[Trial], str] = "the bound"
    """What the bound is, or a function of the trial that says it in the example's sizes."""
    name: str = "memory"
    hint: str | Callable[[Trial], str | None] = (
        "Something large is materialised on every device: did you gather a whole operand?"
    )
    """The hint, or a function of the trial that words it from what the program did."""

    skip: Callable[[Trial], str | None] = lambda t: None
    """Why this example cannot tell (e.g. one device, where W is one block), or None."""

    def __call__(self, trial: Trial) -> CheckResult:
        bound = self.bound(trial)
        what = self.what(trial) if callable(self.what) else self.what
        got = (trial.memory or {}).get("temp")
        m = trial.memory
        evidence = [Memory(m.get("argument"), m.get("output"), got, bound)] if m else []
        reason = self.skip(trial)
        if reason:
            return CheckResult(self.name, True, f"not measured here: {reason}", evidence=evidence)
        if got is None:
            return CheckResult(
                self.name, True, "memory analysis unavailable on this backend", evidence=evidence
            )
        if got <= bound:
            return CheckResult(
                self.name,
                True,
                f"{got:,} temporary bytes per device ≤ {what} = {bound:,}",
                evidence=evidence,
            )
        return CheckResult(
            self.name, False, f"{got:,} temporary bytes per device; {what} = {bound:,}",
            evidence=evidence, hint=self.hint(trial) if callable(self.hint) else self.hint,
        )  # fmt: skip
