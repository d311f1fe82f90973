"""Lesson 16's bonus: speculative sampling (Leviathan et al. 2023; Chen et al. 2023).

``verify_draft(p, q, token)`` is graded by enumeration: over every token the draft
model can propose (probability q[x]), the token emitted is x with the acceptance
probability a(x) and else a draw from the residual r(x); the emitted distribution
Σ_x q[x]·(a(x)·δ_x + (1 − a(x))·r(x)) must equal the target's p exactly (1e-12),
and a(x), r(x) must be the reference's, min(1, p[x]/q[x]) and max(p − q, 0)
normalised, wherever they matter (r only where a < 1). Examples: small vocabularies
with q zero where p is not (the residual must cover them), p = q, p one-hot.
``expected_tokens(alpha, gamma)``: (1 − α^(γ+1))/(1 − α), γ + 1 at α = 1.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from hypothesis import strategies as st

from grader.checks import variants
from grader.checks.scalar import Scalar
from grader.evidence import Note, Table
from grader.later import expected
from grader.results import CheckResult
from grader.runtime import Runtime, StudentReturnError, call_pure
from grader.spec import Check, Context, Example, ExerciseSpec, Trial

TOL = 1e-12

F = expected("l16_serving.speculative")
"""The grader's side: the reference verification, the known mistakes and
``expected_tokens``'s formula (hidden from the student's process, which imports this
module), imported when first used: in the worker."""


def distribution(weights: tuple[int, ...]) -> np.ndarray:
    w = np.asarray(weights, np.float64)
    return w / w.sum()


def emitted(q: np.ndarray, answers: list[tuple[float, np.ndarray]]) -> np.ndarray:
    """The distribution of the emitted token, enumerated over the drafted token. A token
    always kept (a = 1) never draws from its residual: that residual has no weight, and
    what it holds (nan, where p = q makes it 0/0) is not read."""
    out = np.zeros_like(q)
    for x, (a, r) in enumerate(answers):
        if q[x] > 0:
            out[x] += q[x] * a
            if a != 1:
                out += q[x] * (1 - a) * r
    return out


EXPLICIT = (
    {"p": (1, 2, 3, 4), "q": (4, 3, 2, 1)},
    {"p": (5, 1, 0, 2), "q": (1, 1, 1, 0)},  # q is 0 where p is not: only the residual emits it
    {"p": (1, 1, 1), "q": (1, 1, 1)},  # p = q: every draft accepted
    {"p": (0, 0, 1), "q": (2, 1, 1)},  # a one-hot target
)


VERIFY_PURPOSE = {
    ((1, 2, 3, 4), (4, 3, 2, 1)): "p and q over 4 tokens in opposite orders: drafts of 0 and 1 "
    "kept with a = 1/4 and 2/3, of 2 and 3 always; the residual (0, 0, 1/4, 3/4)",
    ((5, 1, 0, 2), (1, 1, 1, 0)): "q is 0 on token 3, where p is not: 3 is never drafted and "
    "comes from the residual alone; p is 0 on token 2, so a = 0 there",
    ((1, 1, 1), (1, 1, 1)): "p = q (uniform over 3 tokens): every draft is kept, a = 1, and "
    "max(p − q, 0) is 0 everywhere, so the residual is p itself",
    ((0, 0, 1), (2, 1, 1)): "a one-hot target p = (0, 0, 1): drafts of 0 and 1 have a = 0, 2 is "
    "always kept, and the residual is all on token 2",
}
"""What each fixed example of verify_draft is for, by (p, q) (issue 45 §1)."""


def _weights(v: int) -> Any:
    return st.tuples(*[st.integers(0, 6) for _ in range(v)]).filter(lambda w: sum(w) > 0)


def _strategy(ctx: Context) -> Any:
    return st.integers(2, 6).flatmap(
        lambda v: st.fixed_dictionaries({"p": _weights(v), "q": _weights(v)})
    )


def _run(rt: Runtime, fn: Callable[..., Any], ex: Example) -> Trial:
    p, q = distribution(ex["p"]), distribution(ex["q"])
    answers = []
    for x in range(len(p)):
        if q[x] == 0:
            continue  # never drafted
        out = call_pure(fn, (p.copy(), q.copy(), x), False)
        if not (isinstance(out, (tuple, list)) and len(out) == 2):
            raise StudentReturnError(
                f"verify_draft returned {type(out).__name__}; expected (accept probability, residual)",
                hint="Return a pair: the probability of keeping the drafted token and the "
                "distribution to draw from when it is rejected.",
            )
        try:
            a, r = float(out[0]), np.asarray(out[1], np.float64)
        except (TypeError, ValueError) as exc:
            raise StudentReturnError(f"verify_draft returned {out!r}: {exc}") from None
        if r.shape != p.shape:
            raise StudentReturnError(
                f"verify_draft's residual has shape {r.shape}; expected {p.shape}"
            )
        answers.append((x, a, r))
    return Trial(ex, output=answers, expected=[(x, *F.verify(p, q, x)) for x, _, _ in answers],
                 extra={"p": p, "q": q})  # fmt: skip


@dataclass(frozen=True)
class Emitted(Check):
    """Enumerated over the drafted token, the emitted distribution is the target's."""

    name: str = "distribution"

    def __call__(self, trial: Trial) -> CheckResult:
        p, q = trial.extra["p"], trial.extra["q"]
        got = emitted(q, _by_token(trial.output, len(p)))
        rows = [[str(t), f"{p[t]:.6g}", f"{got[t]:.6g}"] for t in range(len(p))]
        evidence = [Table(["token", "target p", "what you emit"], rows)]
        if np.abs(got - p).max() <= TOL:
            return CheckResult(self.name, True, "the emitted tokens follow the target's distribution exactly",
                               evidence=evidence)  # fmt: skip
        return CheckResult(
            self.name, False,
            f"drafting from q = {np.round(q, 4).tolist()} and verifying with yours, the tokens "
            f"come out with probabilities {np.round(got, 4).tolist()}; the target's are "
            f"{np.round(p, 4).tolist()}",
            evidence=evidence, hint=_diagnose(trial),
        )  # fmt: skip


def _by_token(answers: list, v: int) -> list[tuple[float, np.ndarray]]:
    """(a, r) per token; tokens never drafted contribute nothing (a = 0, r = 0)."""
    out = [(0.0, np.zeros(v)) for _ in range(v)]
    for x, a, r in answers:
        out[x] = (a, r)
    return out


def _diagnose(trial: Trial) -> str | None:
    """The known mistake every drafted token's answer matches, among those this example
    can tell from the reference (where p = q, an unclamped acceptance is min(1, p/q) = 1)."""
    p, q = trial.extra["p"], trial.extra["q"]
    for index in range(4):
        if all(
            _matches(a, r, *F.known(p, q, x)[index][1:]) for x, a, r in trial.output
        ) and not all(
            _matches(*F.verify(p, q, x), *F.known(p, q, x)[index][1:]) for x, _, _ in trial.output
        ):
            return F.known(p, q, trial.output[0][0])[index][0] if trial.output else None
    return None


def _changed(trial: Trial) -> tuple[str | None, list[Note]]:
    """The first change of the reference's arguments or formula whose answers, for every
    drafted token, are the student's (:mod:`grader.checks.variants`)."""
    p, q = trial.extra["p"], trial.extra["q"]
    tokens = [x for x, _, _ in trial.output]

    def matches(answers: list) -> bool:
        return len(answers) == len(tokens) and all(
            _matches(a, r, float(want_a), np.asarray(want_r, np.float64))
            for (_, a, r), (want_a, want_r) in zip(trial.output, answers)
        )

    change = variants.first_change_of((F.fn("verify_each"), (p, q, tokens), {}), matches)
    if change is None:
        return None, []
    sentence = (f"your acceptance and residual of every drafted token are exactly what the "
                f"reference computes {change.said}")  # fmt: skip
    return f"{sentence[0].upper()}{sentence[1:]}.", [Note(f"measured: {sentence}")]


def _matches(a: float, r: np.ndarray, want_a: float, want_r: np.ndarray | None) -> bool:
    return abs(a - want_a) <= 1e-9 and (
        want_r is None or a >= 1 or np.abs(r - want_r).max() <= 1e-9
    )


@dataclass(frozen=True)
class PerToken(Check):
    """a(x) = min(1, p[x]/q[x]); r(x) = max(p − q, 0) normalised, wherever a(x) < 1."""

    name: str = "values"

    def __call__(self, trial: Trial) -> CheckResult:
        for x, _, r in trial.output:
            if not np.all(np.isfinite(r)):
                said = f"verify_draft(token={x}): residual {np.round(r, 4).tolist()}, not "
                if not np.allclose(trial.extra["p"], trial.extra["q"]):  # 0/0 cannot be it
                    return CheckResult(self.name, False, said + "finite")
                return CheckResult(
                    self.name, False,
                    said + "a distribution: p = q here, so max(p − q, 0) is 0 everywhere and "
                    "normalising it divides 0/0",
                    hint="Where max(p − q, 0) sums to 0 (p = q: every drafted token is kept, "
                    "and the residual is never drawn from) return p itself, as the docstring "
                    "says: residual / total if total > 0 else p.",
                )  # fmt: skip
        for (x, a, r), (_, want_a, want_r) in zip(trial.output, trial.expected):
            if abs(a - want_a) > 1e-9:
                hint, measured = _diagnose(trial), []
                if hint is None:
                    hint, measured = _changed(trial)
                return CheckResult(self.name, False,
                                   f"verify_draft(token={x}): accept probability {a:.6g}; expected "
                                   f"min(1, p[x]/q[x]) = {want_a:.6g}", hint=hint,
                                   evidence=measured)  # fmt: skip
            if want_a < 1 and np.abs(r - want_r).max() > 1e-9:
                hint, measured = _diagnose(trial), []
                if hint is None:
                    hint, measured = _changed(trial)
                return CheckResult(self.name, False,
                                   f"verify_draft(token={x}): residual {np.round(r, 4).tolist()}; "
                                   f"expected max(p − q, 0) normalised = {np.round(want_r, 4).tolist()}",
                                   hint=hint, evidence=measured)  # fmt: skip
        return CheckResult(
            self.name, True, "every drafted token's acceptance and residual as the reference's"
        )


VERIFY = ExerciseSpec(
    name="verify_draft", strategy=_strategy, explicit=lambda ctx: list(EXPLICIT), run=_run,
    checks=(Emitted(), PerToken()), max_examples=8,
    purpose=lambda ex: VERIFY_PURPOSE.get((ex["p"], ex["q"])),
)  # fmt: skip


EXPECTED_PURPOSE = {
    (80, 4): "α = 0.8, γ = 4: (1 − 0.8⁵) / (1 − 0.8) = 3.3616 tokens a verification",
    (100, 3): "α = 1, every draft accepted: γ + 1 = 4 tokens, the limit of the formula's 0/0",
    (0, 5): "α = 0, no draft accepted: the target's own token alone, 1 a verification whatever "
    "γ = 5",
    (50, 1): "γ = 1, α = 0.5: one draft, 1 + 0.5 = 1.5 tokens a verification",
}
"""What each fixed example of expected_tokens is for, by (alpha_pct, gamma) (issue 45 §1)."""

EXPECTED = Scalar(
    "expected_tokens", float,
    lambda ctx: st.fixed_dictionaries({"alpha_pct": st.integers(0, 100), "gamma": st.integers(1, 8)}),
    explicit=({"alpha_pct": 80, "gamma": 4}, {"alpha_pct": 100, "gamma": 3},
              {"alpha_pct": 0, "gamma": 5}, {"alpha_pct": 50, "gamma": 1}),
    answer=F.fn("expected_tokens"),
    args=lambda alpha_pct, gamma: (alpha_pct / 100, gamma),
    call=lambda alpha_pct, gamma: f"expected_tokens(alpha={alpha_pct / 100}, gamma={gamma})",
    formula=lambda alpha_pct, gamma: "(1 − α^(γ+1)) / (1 − α) (γ + 1 at α = 1)",
    suspects=F.fn("expected_tokens_suspects"),
    max_examples=8,
    purpose=lambda ex: EXPECTED_PURPOSE.get((ex["alpha_pct"], ex["gamma"])),
)  # fmt: skip
