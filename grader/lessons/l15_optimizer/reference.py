"""The float64 references of lesson 15, and the wrong results known mistakes give.

Every function takes and returns numpy arrays in float64 (int for counters).
``variant`` names a known mistake: the reference with that one thing wrong, so
that a wrong answer equal to it everywhere can be named (never a verdict: the
verdict is the comparison with the right one).
"""

from __future__ import annotations

from typing import Any

import numpy as np

HP = {"lr": 1e-2, "b1": 0.9, "b2": 0.999, "eps": 1e-8, "weight_decay": 0.1}
"""AdamW's hyperparameters in every example: PyTorch's defaults, with a weight decay
large enough that where it is applied shows in the values."""
SCALER_HP = {"lr": 1e-2, "momentum": 0.9}
"""The loss-scaled step's (``growth_interval`` is drawn per example)."""

ADAMW_VARIANTS = ("bias-t", "bias-t+2", "l2", "decay-no-lr", "no-bias")
"""Known AdamW mistakes: bias correction with t = step (one behind) or step + 2 (one
ahead), weight decay added to the gradient (Adam with L2, not AdamW), decay not
scaled by lr, no bias correction."""


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


E4M3_MAX = 448.0
"""float8_e4m3fn's largest finite value."""


def fp8_round_trip(w: np.ndarray, amax: float | None = None) -> np.ndarray:
    """float32 ``w`` quantised to float8_e4m3fn with the per-tensor scale 448/amax (amax of
    the whole tensor unless given), and back: what every device of the bonus returns."""
    import ml_dtypes

    w = np.asarray(w, np.float32)
    amax = np.float32(np.max(np.abs(w)) if amax is None else amax)
    scale = np.float32(E4M3_MAX) / amax
    q = (w * scale).astype(ml_dtypes.float8_e4m3fn)
    return q.astype(np.float32) / scale


def as64(x: Any) -> np.ndarray:
    """A float64 copy of a (possibly bfloat16 or float16) array."""
    return np.asarray(x).astype(np.float64)
