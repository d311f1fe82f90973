"""Lesson 16's tiny language model: its params and inputs, and the float64 reference by name.

The reference (:mod:`grader.expected.l16_serving.model`) is the grader's side, hidden
from the student's process, which imports the spec and so this module: :func:`hidden`,
:func:`logits`, :func:`kv`, :func:`greedy` and :func:`decode` here import it when called,
which only the worker does (a check, a ``run``'s :func:`grader.later.later` or
:func:`grader.later.in_worker`).

The blocks of lesson 12's transformer (``h + attn(h)``, then ``h + tanh(h @ w_in) @ w_out``,
causal multi-head attention, no norms), with a token embedding ``embed [V, D]``, learned positions ``pos [S_max, D]`` added at
the input, and an untied head ``unembed [D, V]``. The reference never caches: the
logits at every position come from the whole sequence recomputed, so a cache that
holds the wrong thing cannot agree with it.
"""

from __future__ import annotations

import numpy as np

from grader.later import expected
from grader.reference.training import _normal

Params = dict[str, np.ndarray]
BLOCKS = ("wq", "wk", "wv", "wo", "w_in", "w_out")
NAMES = ("embed", "pos", "unembed", *BLOCKS)
RESIDUAL = ("wo", "w_out")


def _block_params(rng: np.random.Generator, n_layers: int, d: int, hdh: int, f: int,
                  kdh: int) -> Params:  # fmt: skip
    """Normal, scaled by 1/√fan-in; the residual projections by 1/√(2L) more (as lesson 12).
    ``kdh`` = K·Dh, the key/value heads' columns (K < H: grouped-query attention)."""
    shapes = {
        "wq": (n_layers, d, hdh), "wk": (n_layers, d, kdh), "wv": (n_layers, d, kdh),
        "wo": (n_layers, hdh, d), "w_in": (n_layers, d, f), "w_out": (n_layers, f, d),
    }  # fmt: skip
    return {
        k: _normal(rng, s, s[1] * (2 * n_layers if k in RESIDUAL else 1)) for k, s in shapes.items()
    }


def draw_params(rng: np.random.Generator, n_layers: int, d: int, hdh: int, f: int, vocab: int,
                max_len: int, kdh: int | None = None) -> Params:  # fmt: skip
    """float32: the blocks as lesson 12 draws them; embeddings unit normal; the head
    scaled so the logits spread over a few units (greedy choices are clear-cut)."""
    p = _block_params(rng, n_layers, d, hdh, f, hdh if kdh is None else kdh)
    p["embed"] = _normal(rng, (vocab, d), 1)
    p["pos"] = _normal(rng, (max_len, d), 1)
    p["unembed"] = _normal(rng, (d, vocab), d / 4)
    return {k: p[k] for k in NAMES}


EXACT, MASK_BEFORE, MASK_AFTER, POSITION_ZERO = (
    "exact",
    "mask-before",
    "mask-after",
    "position-zero",
)
"""How :func:`decode` reads the cache: as it must; the new token not seeing itself
(keys < pos); seeing one empty slot more (keys ≤ pos + 1); embedded at position 0."""


_REFERENCE = expected("l16_serving.model")
hidden = _REFERENCE.fn("hidden")
"""The last block's output [B, T, D] for ``tokens [B, T]`` (float64)."""
logits = _REFERENCE.fn("logits")
"""Next-token logits [B, T, V] at every position, float64, recomputed from scratch."""
kv = _REFERENCE.fn("kv")
"""The keys and values every layer computes for ``tokens``: [L, 2, B, T, K, Dh]."""
greedy = _REFERENCE.fn("greedy")
"""(tokens [B, steps + 1], logits [steps + 1, B, V]): the greedy continuation."""
decode = _REFERENCE.fn("decode")
"""Logits [steps, B, V] of decoding ``fed`` one token a step from a float64 cache, read
as ``how`` says (:data:`EXACT`, or a known mistake's way)."""
