"""One wrapper for a lesson that knows a failure better than a generic check does."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass

from grader.results import CheckResult
from grader.spec import Check, Trial


@dataclass(frozen=True)
class Hinted(Check):
    """``inner``, with the hint ``explain(trial, result)`` in place of its own when
    it fails and ``explain`` recognises the cause from the evidence; when
    ``explain`` returns None the inner check's own hint stays."""

    inner: Check = dataclasses.field(default_factory=Check)
    explain: Callable[[Trial, CheckResult], str | None] = lambda t, r: None

    @property
    def name(self) -> str:  # type: ignore[override]
        return self.inner.name

    def __call__(self, trial: Trial) -> CheckResult:
        result = self.inner(trial)
        if result.passed:
            return result
        hint = self.explain(trial, result)
        return result if hint is None else dataclasses.replace(result, hint=hint)
