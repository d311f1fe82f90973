"""Lesson 16's bonus, the grader's side (hidden from the student's process:
:mod:`grader.expected`): the reference verification of a drafted token, the
acceptance and residual known mistakes give, and ``expected_tokens``'s formula
with its known mistakes."""

from __future__ import annotations

import numpy as np


def verify(p: np.ndarray, q: np.ndarray, token: int) -> tuple[float, np.ndarray]:
    """The reference: min(1, p[x]/q[x]) and the normalised max(p − q, 0) (p where p = q)."""
    accept = min(1.0, p[token] / q[token])
    residual = np.maximum(p - q, 0.0)
    total = residual.sum()
    return accept, (residual / total if total > 0 else p.copy())


def verify_each(p: np.ndarray, q: np.ndarray, tokens: list[int]) -> list[tuple[float, np.ndarray]]:
    """:func:`verify` of every drafted token in ``tokens``: what a check's changes of the
    reference are held to (:mod:`grader.checks.variants`)."""
    return [verify(p, q, x) for x in tokens]


def known(p: np.ndarray, q: np.ndarray, x: int) -> list[tuple[str, float, np.ndarray | None]]:
    """(hint, acceptance, residual) of known mistakes; None: any residual."""
    residual = np.maximum(p - q, 0.0)
    return [
        ("The acceptance probability is not clamped: p[x]/q[x] exceeds 1 where the target likes "
         "x more than the draft does; keep it with probability min(1, p[x]/q[x]).",
         p[x] / q[x], None),
        ("The acceptance ratio is upside down: keep x with probability min(1, p[x]/q[x]), the "
         "target's over the draft's.", min(1.0, q[x] / p[x]) if p[x] > 0 else 0.0, None),
        ("On rejection you draw from p itself: the tokens the draft proposes then come out too "
         "often. Draw from max(p − q, 0), normalised: only the target's mass the draft lacks.",
         min(1.0, p[x] / q[x]), p),
        ("The residual max(p − q, 0) is not normalised: divide it by its sum.",
         min(1.0, p[x] / q[x]), residual),
    ]  # fmt: skip


def expected_tokens(alpha_pct: int, gamma: int) -> float:
    a = alpha_pct / 100
    return float(gamma + 1) if alpha_pct == 100 else (1 - a ** (gamma + 1)) / (1 - a)


def expected_tokens_suspects(alpha_pct: int, gamma: int) -> list[tuple[float, str]]:
    return [
        (expected_tokens(alpha_pct, gamma) - (alpha_pct / 100) ** gamma,
         "A term short: the sum runs over i = 0 … γ (γ + 1 terms), (1 − α^(γ+1)) / (1 − α): "
         "after γ accepted drafts the target's logits give one token more."),
        (expected_tokens(alpha_pct, gamma) - 1,
         "You count the accepted drafts only: every step also emits one token of the "
         "target's own (the resampled one, or the one after γ accepted)."),
        (alpha_pct / 100 * gamma,
         "α·γ counts accepted drafts as independent: drafts stop at the first rejection, so the "
         "i-th is reached with probability α^i."),
    ]  # fmt: skip
