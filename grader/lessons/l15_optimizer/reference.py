"""Lesson 15's hyperparameters (what every example hands the student's step), and the
float64 references by name.

The references, and the wrong results known mistakes give (AdamW, clipping, the
loss-scaled step, float8's round trip: :mod:`grader.expected.l15_optimizer`), are the
grader's side, hidden from the student's process, which imports the spec and so this
module: the functions here import them when called, which only the worker does (a
check, or a ``run``'s :func:`grader.later.later`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from grader.later import expected

HP = {"lr": 1e-2, "b1": 0.9, "b2": 0.999, "eps": 1e-8, "weight_decay": 0.1}
"""AdamW's hyperparameters in every example: PyTorch's defaults, with a weight decay
large enough that where it is applied shows in the values."""
SCALER_HP = {"lr": 1e-2, "momentum": 0.9}
"""The loss-scaled step's (``growth_interval`` is drawn per example)."""

ADAMW_VARIANTS = ("bias-t", "bias-t+2", "l2", "decay-no-lr", "no-bias", "eps-in-sqrt")
"""Known AdamW mistakes: bias correction with t = step (one behind) or step + 2 (one
ahead), weight decay added to the gradient (Adam with L2, not AdamW), decay not
scaled by lr, no bias correction, eps inside the square root (m̂/√(v̂ + eps))."""


_REFERENCE = expected("l15_optimizer")
adamw = _REFERENCE.fn("adamw")
"""(new master, m, v, the Adam direction m̂/(√v̂ + eps)) for one step, ``variant`` aside."""
clip = _REFERENCE.fn("clip")
"""``g · max_norm / max(norm, max_norm)``, with the whole vector's norm unless given."""
loss_scaled = _REFERENCE.fn("loss_scaled")
"""(master, m, scale, good) after one loss-scaled step (or a mistake's view of it)."""
fp8_round_trip = _REFERENCE.fn("fp8_round_trip")
"""float32 ``w`` through float8_e4m3fn with the per-tensor scale 448/amax, and back."""

E4M3_MAX = 448.0
"""float8_e4m3fn's largest finite value."""


def as64(x: Any) -> np.ndarray:
    """A float64 copy of a (possibly bfloat16 or float16) array."""
    return np.asarray(x).astype(np.float64)
