"""The course's tiny causal transformer (lesson 12), unsharded, in plain JAX.

    params: wq, wk, wv [L, D, H·Dh], wo [L, H·Dh, D], w_in [L, D, F], w_out [L, F, D]
    block(h)  = h1 + tanh(h1 @ w_in) @ w_out,  h1 = h + attn(h)
    attn(h)   = causal softmax attention of H heads (scale 1/√Dh) · wo
    forward   = blocks 0 … L−1 in order (lax.scan), x: [B, S, D]
    loss      = 0.5 · mean over (B, S) of Σ_D (forward(params, x) − y)²

No norms, no embedding: the lesson is about where the bytes go. Head h is
columns h·Dh … (h+1)·Dh of wq, wk, wv (and rows of wo), as in lesson 8.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax import lax

from tinymodels.attention import attention

Params = dict[str, jax.Array]
NAMES = ("wq", "wk", "wv", "wo", "w_in", "w_out")
"""The params in the order a block uses them."""


def attn(h: jax.Array, wq: jax.Array, wk: jax.Array, wv: jax.Array, wo: jax.Array,
         n_heads: int) -> jax.Array:  # fmt: skip
    """Causal multi-head attention of ``h: [B, S, D]``, its heads' outputs projected by wo."""
    b, s, _ = h.shape
    dh = wq.shape[1] // n_heads

    def heads(w):  # [B, S, H·Dh] -> [B, S, H, Dh], head-major like the columns
        return (h @ w).reshape(b, s, n_heads, dh)

    o = jax.vmap(lambda q, k, v: attention(q, k, v, causal=True))(heads(wq), heads(wk), heads(wv))
    return o.reshape(b, s, n_heads * dh) @ wo


def mlp(h: jax.Array, w_in: jax.Array, w_out: jax.Array) -> jax.Array:
    """The MLP of lessons 6–8: ``tanh(h @ w_in) @ w_out``."""
    return jnp.tanh(h @ w_in) @ w_out


def block(h: jax.Array, w: Params, n_heads: int) -> jax.Array:
    """One residual block: attention, then the MLP, each added to h."""
    h = h + attn(h, w["wq"], w["wk"], w["wv"], w["wo"], n_heads)
    return h + mlp(h, w["w_in"], w["w_out"])


def forward(params: Params, x: jax.Array, n_heads: int) -> jax.Array:
    """All L blocks in order, as one ``lax.scan`` over the stacked weights."""
    h, _ = lax.scan(lambda h, w: (block(h, w, n_heads), None), x, params)
    return h


def loss(params: Params, x: jax.Array, y: jax.Array, n_heads: int) -> jax.Array:
    """0.5 · mean over batch and sequence of the squared error summed over D."""
    err = forward(params, x, n_heads) - y
    return 0.5 * jnp.mean(jnp.sum(err * err, axis=-1))


def init_params(key: jax.Array, n_layers: int, d: int, n_heads: int, dh: int, f: int,
                dtype=jnp.float32) -> Params:  # fmt: skip
    """Normal weights scaled by 1/√fan-in, the residual projections (wo, w_out)
    by 1/√(2L) more, so h stays O(1) through the 2L sub-blocks."""
    shapes = shapes_of(n_layers, d, n_heads * dh, f)
    keys = jax.random.split(key, len(NAMES))
    fan = {k: shapes[k][1] * (2 * n_layers if k in ("wo", "w_out") else 1) for k in NAMES}
    return {
        k: jax.random.normal(key, shapes[k], dtype) / jnp.sqrt(fan[k]).astype(dtype)
        for k, key in zip(NAMES, keys)
    }


def shapes_of(n_layers: int, d: int, hdh: int, f: int) -> dict[str, tuple[int, int, int]]:
    """Each param's shape; ``hdh`` = H·Dh."""
    return {
        "wq": (n_layers, d, hdh), "wk": (n_layers, d, hdh), "wv": (n_layers, d, hdh),
        "wo": (n_layers, hdh, d), "w_in": (n_layers, d, f), "w_out": (n_layers, f, d),
    }  # fmt: skip
