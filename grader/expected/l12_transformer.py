"""The tiny causal transformer of lesson 12 in numpy float64: the reference the
training step is held to (the grader's side, hidden from the student's process; the
lesson's :mod:`grader.lessons.l12_parallel_transformer.transformer` draws the inputs
and names these functions, importing them when called, in the worker).

:mod:`tinymodels.transformer` recomputed by hand-written backpropagation, no
jax (see :mod:`grader.expected.training` for why), so the reference is exact to ~1e-15
and every float32 error the check sees is the student's program's own.
Per-layer gradients come back separately, so a check can say in which layer
and which parameter a program first goes wrong.
"""

from __future__ import annotations

import numpy as np

Params = dict[str, np.ndarray]


def _attn_forward(
    h: np.ndarray, w: Params, n_heads: int, causal: bool = True
) -> tuple[np.ndarray, dict]:
    b, s, _ = h.shape
    dh = w["wq"].shape[1] // n_heads
    q, k, v = ((h @ w[n]).reshape(b, s, n_heads, dh) for n in ("wq", "wk", "wv"))
    scores = np.einsum("bqhd,bkhd->bhqk", q, k) / np.sqrt(dh)
    if causal:
        scores = np.where(np.tril(np.ones((s, s), bool)), scores, -np.inf)
    p = np.exp(scores - scores.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    o = np.einsum("bhqk,bkhd->bqhd", p, v).reshape(b, s, n_heads * dh)
    return o @ w["wo"], {"q": q, "k": k, "v": v, "p": p, "o": o, "dh": dh}


def _attn_backward(h: np.ndarray, w: Params, c: dict, g: np.ndarray) -> tuple[np.ndarray, Params]:
    """(dL/dh through attention, the four weights' gradients) given dL/d(attn out)."""
    b, s, _ = h.shape
    q, k, v, p, dh = c["q"], c["k"], c["v"], c["p"], c["dh"]
    heads = q.shape[2]
    out = {"wo": np.einsum("bsi,bsj->ij", c["o"], g)}
    do = (g @ w["wo"].T).reshape(b, s, heads, dh)
    dv = np.einsum("bhqk,bqhd->bkhd", p, do)
    dp = np.einsum("bqhd,bkhd->bhqk", do, v)
    ds = p * (dp - np.sum(dp * p, -1, keepdims=True)) / np.sqrt(dh)
    dq = np.einsum("bhqk,bkhd->bqhd", ds, k)
    dk = np.einsum("bhqk,bqhd->bkhd", ds, q)
    dh_total = np.zeros_like(h)
    for name, d in (("wq", dq), ("wk", dk), ("wv", dv)):
        d = d.reshape(b, s, heads * dh)
        out[name] = np.einsum("bsi,bsj->ij", h, d)
        dh_total += d @ w[name].T
    return dh_total, out


def _layer(params: Params, i: int) -> Params:
    return {k: v[i] for k, v in params.items()}


def forward(params: Params, x: np.ndarray, n_heads: int, causal: bool = True) -> np.ndarray:
    h = np.asarray(x, np.float64)
    p = _f64(params)
    for i in range(p["wq"].shape[0]):
        w = _layer(p, i)
        h = h + _attn_forward(h, w, n_heads, causal)[0]
        h = h + np.tanh(h @ w["w_in"]) @ w["w_out"]
    return h


def loss(params: Params, x: np.ndarray, y: np.ndarray, n_heads: int, causal: bool = True) -> float:
    """½ · Σ (h − y)² / (B·S), float64; ``causal=False``: every position attends to every
    other (the mask left out), for the hint that measures it."""
    err = forward(params, x, n_heads, causal) - np.asarray(y, np.float64)
    return float(0.5 * np.sum(err * err) / (err.shape[0] * err.shape[1]))


def grads(params: Params, x: np.ndarray, y: np.ndarray, n_heads: int) -> tuple[float, Params]:
    """(loss, ``jax.grad(tinymodels.transformer.loss)``) in float64."""
    p = _f64(params)
    h = np.asarray(x, np.float64)
    saved = []
    for i in range(p["wq"].shape[0]):
        w = _layer(p, i)
        a, cache = _attn_forward(h, w, n_heads)
        h1 = h + a
        t = np.tanh(h1 @ w["w_in"])
        saved.append((h, cache, h1, t))
        h = h1 + t @ w["w_out"]
    err = h - np.asarray(y, np.float64)
    rows = err.shape[0] * err.shape[1]
    g = err / rows
    out = {k: np.zeros_like(v) for k, v in p.items()}
    for i in reversed(range(len(saved))):
        w = _layer(p, i)
        h, cache, h1, t = saved[i]
        out["w_out"][i] = np.einsum("bsf,bsd->fd", t, g)
        da = (g @ w["w_out"].T) * (1.0 - t * t)
        out["w_in"][i] = np.einsum("bsd,bsf->df", h1, da)
        g = g + da @ w["w_in"].T
        dh, gw = _attn_backward(h, w, cache, g)
        for k, v in gw.items():
            out[k][i] = v
        g = g + dh
    return float(0.5 * np.sum(err * err) / rows), out


def sgd_step(params: Params, x: np.ndarray, y: np.ndarray, lr: float,
             n_heads: int) -> tuple[Params, float]:  # fmt: skip
    """(params − lr·grads, loss before the step), float64."""
    value, g = grads(params, x, y, n_heads)
    return {k: np.asarray(v, np.float64) - lr * g[k] for k, v in params.items()}, value


def _f64(params: Params) -> Params:
    return {k: np.asarray(v, np.float64) for k, v in params.items()}
