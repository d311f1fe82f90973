"""The course model: a stack of L residual tanh-MLP layers.

    params = {"w_in": [L, D, F], "w_out": [L, F, D]}
    layer(h, w_in, w_out) = h + tanh(h @ w_in) @ w_out
    forward(params, x)    = layers 0 … L−1 in order, x: [B, D]
    loss(params, x, y)    = 0.5 · mean over the batch of Σ_D (forward(params, x) − y)²

Unsharded on purpose: the lessons shard it, the grader compares with it.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax import lax

Params = dict[str, jax.Array]


def layer(h: jax.Array, w_in: jax.Array, w_out: jax.Array) -> jax.Array:
    """One residual layer: ``h + tanh(h @ w_in) @ w_out``; h: [B, D]."""
    return h + jnp.tanh(h @ w_in) @ w_out


def forward(params: Params, x: jax.Array) -> jax.Array:
    """All L layers in order, as one ``lax.scan`` over the stacked weights."""

    def step(h, w):
        return layer(h, w["w_in"], w["w_out"]), None

    h, _ = lax.scan(step, x, params)
    return h


def loss(params: Params, x: jax.Array, y: jax.Array) -> jax.Array:
    """0.5 · mean over the batch of the squared error summed over D."""
    err = forward(params, x) - y
    return 0.5 * jnp.mean(jnp.sum(err * err, axis=-1))


def init_params(key: jax.Array, n_layers: int, d: int, f: int, dtype=jnp.float32) -> Params:
    """Normal weights scaled by 1/√fan-in, so activations stay O(1) through the stack."""
    k_in, k_out = jax.random.split(key)
    w_in = jax.random.normal(k_in, (n_layers, d, f), dtype) / jnp.sqrt(d).astype(dtype)
    w_out = jax.random.normal(k_out, (n_layers, f, d), dtype) / jnp.sqrt(f).astype(dtype)
    return {"w_in": w_in, "w_out": w_out}
