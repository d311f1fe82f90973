"""Lesson 16's tiny language model in numpy float64: the reference prefill and decode are
held to (the grader's side, hidden from the student's process; the lesson's
:mod:`grader.lessons.l16_serving.model` draws the params and names these functions,
importing them when called, in the worker).

The blocks of lesson 12's transformer (``h + attn(h)``, then ``h + tanh(h @ w_in) @ w_out``,
causal multi-head attention, no norms), with a token embedding, learned positions added at
the input, and an untied head. The reference never caches: the logits at every position
come from the whole sequence recomputed, so a cache that holds the wrong thing cannot agree
with it. :func:`decode` reads a cache the ways known mistakes do.
"""

from __future__ import annotations

import numpy as np

from grader.lessons.l16_serving.model import (
    BLOCKS,
    EXACT,
    MASK_AFTER,
    MASK_BEFORE,
    POSITION_ZERO,
    Params,
)


def _attention(h: np.ndarray, w: Params, n_heads: int) -> np.ndarray:
    """Causal multi-head attention of h [B, T, D], projected by wo."""
    b, t, _ = h.shape
    dh = w["wq"].shape[1] // n_heads
    q = (h @ w["wq"]).reshape(b, t, n_heads, dh)
    k, v = (_shared((h @ w[n]).reshape(b, t, -1, dh), n_heads) for n in ("wk", "wv"))
    scores = np.einsum("bqhd,bkhd->bhqk", q, k) / np.sqrt(dh)
    # keys at or before the query: the diagonal (k = 0) and below it
    scores = np.where(np.tril(np.ones((t, t), bool), k=0), scores, -np.inf)
    p = np.exp(scores - scores.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    return np.einsum("bhqk,bkhd->bqhd", p, v).reshape(b, t, n_heads * dh) @ w["wo"]


def _shared(kv: np.ndarray, n_heads: int) -> np.ndarray:
    """[..., K, Dh] → [..., N, Dh]: key/value head j serves query heads j·N/K … (j+1)·N/K − 1."""
    return np.repeat(kv, n_heads // kv.shape[-2], axis=-2)


def _blocks(p: Params, x: np.ndarray, n_heads: int) -> np.ndarray:
    h = x
    for i in range(p["wq"].shape[0]):
        w = {k: p[k][i] for k in BLOCKS}
        h = h + _attention(h, w, n_heads)
        h = h + np.tanh(h @ w["w_in"]) @ w["w_out"]
    return h


def hidden(params: Params, tokens: np.ndarray, n_heads: int, first: int = 0) -> np.ndarray:
    """The last block's output [B, T, D] for ``tokens [B, T]`` at positions first … first+T−1
    (with ``first`` > 0 the earlier positions are absent: a mistake's model)."""
    p = {k: np.asarray(v, np.float64) for k, v in params.items()}
    t = tokens.shape[1]
    x = p["embed"][tokens] + p["pos"][first : first + t]
    return _blocks(p, x, n_heads)


def logits(params: Params, tokens: np.ndarray, n_heads: int) -> np.ndarray:
    """Next-token logits [B, T, V] at every position, float64, recomputed from scratch."""
    return hidden(params, tokens, n_heads) @ np.asarray(params["unembed"], np.float64)


def kv(params: Params, tokens: np.ndarray, n_heads: int) -> np.ndarray:
    """The keys and values every layer computes for ``tokens``: [L, 2, B, T, H, Dh]."""
    p = {k: np.asarray(v, np.float64) for k, v in params.items()}
    b, t = tokens.shape
    h = p["embed"][tokens] + p["pos"][:t]
    out = []
    for i in range(p["wq"].shape[0]):
        w = {k: p[k][i] for k in BLOCKS}
        dh = w["wq"].shape[1] // n_heads
        out.append([(h @ w[n]).reshape(b, t, -1, dh) for n in ("wk", "wv")])
        h = h + _attention(h, w, n_heads)
        h = h + np.tanh(h @ w["w_in"]) @ w["w_out"]
    return np.asarray(out)


def greedy(params: Params, prompt: np.ndarray, n_heads: int, steps: int) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """(tokens [B, steps + 1], logits [steps + 1, B, V]): the greedy continuation of the
    prompts, each step's logits recomputed over the whole sequence so far."""
    seq, out = np.asarray(prompt), []
    for _ in range(steps + 1):
        last = logits(params, seq, n_heads)[:, -1]
        out.append(last)
        seq = np.concatenate([seq, last.argmax(-1)[:, None]], axis=1)
    return seq[:, prompt.shape[1] :], np.asarray(out)


def decode(params: Params, prompt: np.ndarray, fed: np.ndarray, n_heads: int, max_len: int,
           how: str = EXACT) -> np.ndarray:  # fmt: skip
    """Logits [steps, B, V] of decoding ``fed [B, steps]`` one token a step after the
    prompt, from a float64 cache of ``max_len`` slots (zeros where nothing was written),
    read as ``how`` says: the right way equals :func:`logits` recomputed; the others
    are what known mistakes compute."""
    p = {k: np.asarray(v, np.float64) for k, v in params.items()}
    b, t0 = prompt.shape
    n_layers = p["wq"].shape[0]
    dh = p["wq"].shape[2] // n_heads
    cache = np.zeros((n_layers, 2, b, max_len, p["wk"].shape[2] // dh, dh))
    cache[:, :, :, :t0] = kv(params, prompt, n_heads)
    out = []
    for step in range(fed.shape[1]):
        pos = t0 + step
        where = 0 if how == POSITION_ZERO else pos
        h = p["embed"][fed[:, step]] + p["pos"][where]  # [B, D]
        last = {MASK_BEFORE: pos - 1, MASK_AFTER: pos + 1}.get(how, pos)
        for i in range(n_layers):
            w = {k: p[k][i] for k in BLOCKS}
            q = (h @ w["wq"]).reshape(b, n_heads, dh)
            k, v = ((h @ w[n]).reshape(b, -1, dh) for n in ("wk", "wv"))
            cache[i, 0, :, pos], cache[i, 1, :, pos] = k, v
            keys, values = (_shared(cache[i, j, :, : last + 1], n_heads) for j in (0, 1))
            s = np.einsum("bhd,bshd->bhs", q, keys) / np.sqrt(dh)
            a = np.exp(s - s.max(-1, keepdims=True))
            a /= a.sum(-1, keepdims=True)
            o = np.einsum("bhs,bshd->bhd", a, values).reshape(b, n_heads * dh)
            h = h + o @ w["wo"]
            h = h + np.tanh(h @ w["w_in"]) @ w["w_out"]
        out.append(h @ p["unembed"])
    return np.asarray(out)
