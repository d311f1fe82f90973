"""Lesson 10's attention: the causal mask and the zigzag layout the inputs are placed
in (the exercise's statement), and the float64 reference by name.

The reference, softmax attention in numpy float64 and the merge of two partials
(:mod:`grader.expected.l10_context_parallel`), is the grader's side, hidden from the
student's process, which imports the spec and so this module: :func:`partial`,
:func:`merge` and :func:`attention` here import it when called, which only the worker does
(a check, or a ``run``'s :func:`grader.later.later`).

A *partial* is attention over a subset of the keys, kept as ``(o, lse)``:
``o [S, H, Dh]`` normalised over that subset, ``lse [S, H]`` the log of its
softmax denominator (−inf for a row that sees no key, whose o is 0).
"""

from __future__ import annotations

import numpy as np

from grader.later import expected

Partial = tuple[np.ndarray, np.ndarray]

_REFERENCE = expected("l10_context_parallel")
partial = _REFERENCE.fn("partial")
"""(o, lse) of queries q [Sq, H, Dh] over keys k, v [Sk, H, Dh] in float64; ``mask``
[Sq, Sk] is True where a query may see a key (None: all)."""
merge = _REFERENCE.fn("merge")
"""The partial over the union of two disjoint key sets."""
attention = _REFERENCE.fn("attention")
"""softmax(q·kᵀ/√Dh [+ causal mask]) · v, [S, H, Dh] float64."""


def causal_mask(q_pos: np.ndarray, k_pos: np.ndarray) -> np.ndarray:
    """[Sq, Sk]: a query sees the keys at its own position and before."""
    return np.asarray(q_pos)[:, None] >= np.asarray(k_pos)[None, :]


def zigzag_order(s: int, n: int) -> np.ndarray:
    """Sequence positions in zigzag layout: the sequence cut into 2N chunks,
    device i's rows are chunk i then chunk 2N − 1 − i. ``x[zigzag_order(S, N)]``
    is what the devices hold, in device order."""
    c = s // (2 * n)
    chunks = [ch for i in range(n) for ch in (i, 2 * n - 1 - i)]
    return np.concatenate([np.arange(ch * c, (ch + 1) * c) for ch in chunks])
