"""The float64 references of lesson 15, and the wrong results known mistakes give
(the grader's side, hidden from the student's process; the lesson's
:mod:`grader.lessons.l15_optimizer.reference` holds the examples' hyperparameters and
names these functions, importing them when called, in the worker).

Every function takes and returns numpy arrays in float64 (int for counters).
``variant`` names a known mistake: the reference with that one thing wrong, so
that a wrong answer equal to it everywhere can be named (never a verdict: the
verdict is the comparison with the right one).
"""

from __future__ import annotations

import numpy as np

from grader.lessons.l15_optimizer.reference import E4M3_MAX, HP, SCALER_HP


def adamw(
    master: np.ndarray, m: np.ndarray, v: np.ndarray, step: int, g: np.ndarray,
    hp: dict[str, float] = HP, variant: str | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:  # fmt: skip
    """(new master, m, v, the Adam direction m̂/(√v̂ + eps)) for one step, ``variant`` aside."""
    b1, b2, lr, wd = hp["b1"], hp["b2"], hp["lr"], hp["weight_decay"]
    t = {"bias-t": step, "bias-t+2": step + 2}.get(variant or "", step + 1)
    if variant == "l2":
        g = g + wd * master
    m = b1 * m + (1 - b1) * g
    v = b2 * v + (1 - b2) * g * g
    with np.errstate(divide="ignore", invalid="ignore"):
        if variant == "no-bias":
            m_hat, v_hat = m, v
        else:
            m_hat, v_hat = m / (1 - b1**t), v / (1 - b2**t)
        if variant == "eps-in-sqrt":
            direction = m_hat / np.sqrt(v_hat + hp["eps"])
        else:
            direction = m_hat / (np.sqrt(v_hat) + hp["eps"])
    if variant == "l2":
        new = master - lr * direction
    elif variant == "decay-no-lr":
        new = master - lr * direction - wd * master
    else:
        new = master - lr * (direction + wd * master)
    return new, m, v, direction


def clip(g: np.ndarray, max_norm: float, norm: float | None = None) -> np.ndarray:
    """``g · max_norm / max(norm, max_norm)``, with the whole vector's norm unless given."""
    norm = float(np.sqrt(np.sum(g * g))) if norm is None else norm
    return g * (max_norm / max(norm, max_norm))


def loss_scaled(
    master: np.ndarray, m: np.ndarray, grads: np.ndarray, scale: float, good: int,
    interval: int, hp: dict[str, float] = SCALER_HP, skip: bool | None = None,
    unscale: bool = True,
) -> tuple[np.ndarray, np.ndarray, float, int]:  # fmt: skip
    """(master, m, scale, good) after one step; ``skip`` forces the decision (a
    mistake's view), ``unscale=False`` forgets to divide by the scale."""
    if skip is None:
        skip = not bool(np.all(np.isfinite(grads)))
    if skip:
        return master, m, scale / 2, 0
    g = grads / scale if unscale else grads
    m = hp["momentum"] * m + g
    master = master - hp["lr"] * m
    good += 1
    if good >= interval:
        return master, m, scale * 2, 0
    return master, m, scale, good


def fp8_round_trip(w: np.ndarray, amax: float | None = None) -> np.ndarray:
    """float32 ``w`` quantised to float8_e4m3fn with the per-tensor scale 448/amax (amax of
    the whole tensor unless given), and back: what every device of the bonus returns."""
    import ml_dtypes

    w = np.asarray(w, np.float32)
    amax = np.float32(np.max(np.abs(w)) if amax is None else amax)
    scale = np.float32(E4M3_MAX) / amax
    q = (w * scale).astype(ml_dtypes.float8_e4m3fn)
    return q.astype(np.float32) / scale
