"""Lesson 8's float64 references: the unsharded MLP and attention the tensor-parallel
programs are held to, and the wrong attention a head-fastest column stride gives (the
grader's side, hidden from the student's process; the spec names these functions and
imports them when called, in the worker)."""

from __future__ import annotations

import numpy as np


def mlp(x: np.ndarray, w_in: np.ndarray, w_out: np.ndarray) -> np.ndarray:
    return np.tanh(x @ w_in) @ w_out


def attention(
    x: np.ndarray, wq: np.ndarray, wk: np.ndarray, wv: np.ndarray, wo: np.ndarray, n_heads: int,
    scale: float | None = None, softmax_axis: int = -1, causal: bool = False,
) -> np.ndarray:  # fmt: skip
    """Softmax attention, no mask; head h = columns h·Dh … (h+1)·Dh of wq/wk/wv.
    Scores are scaled by ``scale``, 1/√Dh unless given (other scales are mistakes);
    ``causal`` masks the keys after each query (a mistake here: a decoder's mask)."""
    b, s, _ = x.shape
    dh = wq.shape[1] // n_heads
    scale = 1 / np.sqrt(dh) if scale is None else scale

    def split(t: np.ndarray) -> np.ndarray:
        return t.reshape(b, s, n_heads, dh)

    q, k, v = split(x @ wq), split(x @ wk), split(x @ wv)
    scores = np.einsum("bqhd,bkhd->bhqk", q, k) * scale
    if causal:
        scores = np.where(np.tril(np.ones((s, s), bool)), scores, -np.inf)
    p = np.exp(scores - scores.max(softmax_axis, keepdims=True))
    p /= p.sum(softmax_axis, keepdims=True)
    return np.einsum("bhqk,bkhd->bqhd", p, v).reshape(b, s, n_heads * dh) @ wo


def wrong_stride(
    x, wq, wk, wv, wo, n_heads: int, n: int, split: bool = True, merge: bool = True
) -> np.ndarray:  # fmt: skip
    """y when every device reads its H/N·Dh columns at the head-fastest stride: as
    [Dh, H/N] swapped to [H/N, Dh], "head h, dim c" is the true local column
    c·H/N + h. ``split``: q, k, v are split so; ``merge``: the heads' outputs are
    put back so before wo (both: the columns are only renumbered, each head still
    meets its own rows of wo, but the heads mix columns)."""
    heads, dh = n_heads // n, wq.shape[1] // n_heads
    local = np.arange(heads * dh).reshape(dh, heads).T.reshape(-1)  # position h·Dh + c → c·H/N + h
    perm = np.concatenate([i * heads * dh + local for i in range(n)])
    qkv = [w[:, perm] if split else w for w in (wq, wk, wv)]
    return attention(x, *qkv, wo[perm] if merge else wo, n_heads)
