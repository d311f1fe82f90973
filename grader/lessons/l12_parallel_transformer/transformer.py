"""The tiny causal transformer of lesson 12: its params' shapes and inputs, and the
float64 reference by name.

The reference (:mod:`tinymodels.transformer` recomputed in numpy float64 by
hand-written backpropagation: :mod:`grader.expected.l12_transformer`)
is the grader's side, hidden from the student's process, which imports the spec and so
this module: :func:`forward`, :func:`grads` and :func:`sgd_step` here import it when
called, which only the worker does (a check, or a ``run``'s :func:`grader.later.later`).
"""

from __future__ import annotations

import numpy as np

from grader.later import expected
from grader.reference.training import _normal

NAMES = ("wq", "wk", "wv", "wo", "w_in", "w_out")
Params = dict[str, np.ndarray]


def shapes(n_layers: int, d: int, hdh: int, f: int) -> dict[str, tuple[int, int, int]]:
    """Each param's shape (as ``tinymodels.transformer.shapes_of``); ``hdh`` = H·Dh."""
    return {
        "wq": (n_layers, d, hdh), "wk": (n_layers, d, hdh), "wv": (n_layers, d, hdh),
        "wo": (n_layers, hdh, d), "w_in": (n_layers, d, f), "w_out": (n_layers, f, d),
    }  # fmt: skip


RESIDUAL = ("wo", "w_out")
"""The projections that write into the residual stream: drawn 1/√(2L) smaller."""


def draw_params(rng: np.random.Generator, n_layers: int, d: int, hdh: int, f: int) -> Params:
    """float32 weights, normal scaled by 1/√fan-in, and the residual projections
    by 1/√(2L) more (as GPT-2), so h stays O(1) through the 2L sub-blocks
    instead of doubling in each."""
    return {
        k: _normal(rng, s, s[1] * (2 * n_layers if k in RESIDUAL else 1))
        for k, s in shapes(n_layers, d, hdh, f).items()
    }


def draw_batch(rng: np.random.Generator, b: int, s: int, d: int) -> tuple[np.ndarray, np.ndarray]:
    """x and y: [B, S, D] float32, unit normal."""
    return _normal(rng, (b, s, d), 1), _normal(rng, (b, s, d), 1)


_REFERENCE = expected("l12_transformer")
forward = _REFERENCE.fn("forward")
"""The stack's output h [B, S, D] in float64, given ``n_heads``."""
grads = _REFERENCE.fn("grads")
"""(loss, ``jax.grad(tinymodels.transformer.loss)``) in float64."""
sgd_step = _REFERENCE.fn("sgd_step")
"""(params − lr·grads, loss before the step), float64."""
loss = _REFERENCE.fn("loss")
"""½ · Σ (h − y)² / (B·S) in float64; ``causal=False`` leaves the attention mask out."""
