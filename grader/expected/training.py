"""The course model (:mod:`tinymodels`) in numpy float64: the reference lessons 6, 7, 9
and 13 hold the student's programs to (the grader's side, hidden from the student's
process; :mod:`grader.reference.training` draws the inputs and sets the tolerance).

Hand-written backpropagation: no jax, no x64 flag (``jax_enable_x64`` is a
process-wide switch the student's float32 program must not see), so the reference
is exact to ~1e-15 and every float32 error the check sees is the student's program's own.
"""

from __future__ import annotations

import numpy as np

Params = dict[str, np.ndarray]


def forward(params: Params, x: np.ndarray) -> np.ndarray:
    """``tinymodels.forward`` in float64."""
    return _forward(_f64(params), np.asarray(x, np.float64))[0]


def loss(params: Params, x: np.ndarray, y: np.ndarray) -> float:
    """``tinymodels.loss`` in float64."""
    err = forward(params, x) - np.asarray(y, np.float64)
    return float(0.5 * np.mean(np.sum(err * err, axis=-1)))


def grads(params: Params, x: np.ndarray, y: np.ndarray) -> tuple[float, Params]:
    """(loss, ``jax.grad(tinymodels.loss)``) in float64, by backpropagation."""
    p = _f64(params)
    out, hs, ts = _forward(p, np.asarray(x, np.float64))
    err = out - np.asarray(y, np.float64)
    b = err.shape[0]
    g = err / b  # d loss / d out
    g_in, g_out = np.zeros_like(p["w_in"]), np.zeros_like(p["w_out"])
    for i in reversed(range(p["w_in"].shape[0])):  # h_{i+1} = h_i + t_i @ w_out[i]
        g_out[i] = ts[i].T @ g
        da = (g @ p["w_out"][i].T) * (1.0 - ts[i] ** 2)  # t_i = tanh(h_i @ w_in[i])
        g_in[i] = hs[i].T @ da
        g = g + da @ p["w_in"][i].T
    return float(0.5 * np.mean(np.sum(err * err, axis=-1))), {"w_in": g_in, "w_out": g_out}


def sgd_step(params: Params, x: np.ndarray, y: np.ndarray, lr: float) -> tuple[Params, float]:
    """(params − lr·grads, loss before the step), float64."""
    value, g = grads(params, x, y)
    return {k: np.asarray(v, np.float64) - lr * g[k] for k, v in params.items()}, value


def _f64(params: Params) -> Params:
    return {k: np.asarray(v, np.float64) for k, v in params.items()}


def _forward(p: Params, x: np.ndarray) -> tuple[np.ndarray, list, list]:
    """Output, each layer's input h_i and its tanh t_i (kept for the backward)."""
    hs, ts, h = [], [], x
    for w_in, w_out in zip(p["w_in"], p["w_out"]):
        t = np.tanh(h @ w_in)
        hs.append(h)
        ts.append(t)
        h = h + t @ w_out
    return h, hs, ts
