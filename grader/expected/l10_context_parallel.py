"""Softmax attention in numpy float64: the grader's reference for lessons 10 and 12
(the grader's side, hidden from the student's process; the lesson's
:mod:`grader.lessons.l10_context_parallel.attention` names these functions and imports
them when called, in the worker).

No jax here: the reference must not share a bug (or a float32 rounding) with
the program it judges. Shapes follow the course: ``q, k, v: [S, H, Dh]``,
one softmax per head over the keys, scores scaled by 1/√Dh.

A *partial* is attention over a subset of the keys, kept as ``(o, lse)``:
``o [S, H, Dh]`` normalised over that subset, ``lse [S, H]`` the log of its
softmax denominator (−inf for a row that sees no key, whose o is 0). Two
partials over disjoint key sets merge exactly (:func:`merge`); that identity
is what ring attention is built on (and ``merge_partials``' answer).
"""

from __future__ import annotations

import numpy as np

from grader.lessons.l10_context_parallel.attention import Partial, causal_mask


def partial(q: np.ndarray, k: np.ndarray, v: np.ndarray, mask: np.ndarray | None) -> Partial:
    """(o, lse) of queries q [Sq, H, Dh] over keys k, v [Sk, H, Dh] in float64.

    ``mask`` [Sq, Sk] is True where a query may see a key (None: all)."""
    q, k, v = (np.asarray(a, np.float64) for a in (q, k, v))
    s = np.einsum("qhd,khd->qhk", q, k) / np.sqrt(q.shape[-1])
    if mask is not None:
        s = np.where(mask[:, None, :], s, -np.inf)
    m = s.max(axis=-1, keepdims=True)
    m = np.where(np.isneginf(m), 0.0, m)
    p = np.exp(s - m)
    denom = p.sum(axis=-1)
    o = np.einsum("qhk,khd->qhd", p, v) / np.where(denom == 0, 1.0, denom)[..., None]
    with np.errstate(divide="ignore"):  # log 0 = −inf: the row saw no key
        return o, m[..., 0] + np.log(denom)


def merge(a: Partial, b: Partial) -> Partial:
    """The partial over the union of two disjoint key sets."""
    (o1, lse1), (o2, lse2) = a, b
    lse = np.logaddexp(lse1, lse2)
    ref = np.where(np.isneginf(lse), 0.0, lse)
    w1, w2 = np.exp(lse1 - ref)[..., None], np.exp(lse2 - ref)[..., None]
    return w1 * o1 + w2 * o2, lse


def attention(q: np.ndarray, k: np.ndarray, v: np.ndarray, causal: bool) -> np.ndarray:
    """softmax(q·kᵀ/√Dh [+ causal mask]) · v, [S, H, Dh] float64."""
    s = np.arange(q.shape[0])
    return partial(q, k, v, causal_mask(s, s) if causal else None)[0]
