"""Lesson 7 — fully sharded data parallel, ZeRO-3 (reference solution).

Every device holds 1/N of every weight (split on D) and 1/N of the batch.
Inside the layer loop each layer's weights are all-gathered just before use
and dropped after it. ``jax.grad`` turns each all-gather into a
reduce-scatter of that layer's weight gradient, so the gradients come back
sharded like the params without an all-reduce. ``jax.checkpoint`` around
"gather + layer" makes the backward pass gather each layer again instead of
keeping every gathered layer alive from the forward pass to the backward.
"""

import jax
import jax.numpy as jnp
from jax import lax
from jax.sharding import Mesh
from jax.sharding import PartitionSpec as P

from tinymodels import layer

AXIS = "data"
PARAMS = {"w_in": P(None, AXIS, None), "w_out": P(None, None, AXIS)}
BATCH = P(AXIS, None)


def _gathered_layer(h: jax.Array, w_in_blk: jax.Array, w_out_blk: jax.Array) -> jax.Array:
    """One layer, its weights gathered here so that remat re-gathers them too."""
    w_in = lax.all_gather(w_in_blk, AXIS, axis=0, tiled=True)  # [D/N, F] -> [D, F]
    w_out = lax.all_gather(w_out_blk, AXIS, axis=1, tiled=True)  # [F, D/N] -> [F, D]
    return layer(h, w_in, w_out)


def _local_forward(params: dict, x: jax.Array) -> jax.Array:
    """The layer loop on one device's rows, one layer's weights gathered at a time."""
    gathered_layer = jax.checkpoint(_gathered_layer)  # keep only h between layers

    def step(h, w):
        return gathered_layer(h, w["w_in"], w["w_out"]), None

    h, _ = lax.scan(step, x, params)
    return h


def _local_loss(params: dict, x: jax.Array, y: jax.Array, batch: int) -> jax.Array:
    """This device's share of the loss: its squared errors over the *global* batch."""
    err = _local_forward(params, x) - y
    return 0.5 * jnp.sum(err * err) / batch


def fsdp_forward(params: dict, x: jax.Array, mesh: Mesh) -> jax.Array:
    """The course model's forward pass with params sharded on D.

    ``params["w_in"]: [L, D, F]`` is ``P(None, 'data', None)``,
    ``params["w_out"]: [L, F, D]`` is ``P(None, None, 'data')``;
    ``x: [B, D]`` is ``P('data', None)``. Returns ``y: [B, D]``,
    ``P('data', None)``. Each layer's weights are all-gathered inside the
    layer loop, just before that layer uses them.
    """
    return jax.shard_map(_local_forward, mesh=mesh, in_specs=(PARAMS, BATCH), out_specs=BATCH)(
        params, x
    )


def fsdp_grads(params: dict, x: jax.Array, y: jax.Array, mesh: Mesh) -> dict:
    """``jax.grad(loss)(params, x, y)`` on the full batch, sharded like params.

    The gradients reach each device already reduce-scattered (the transpose
    of the forward's all-gathers); no all-reduce is needed.
    """
    batch = x.shape[0]

    def body(p, xb, yb):
        return jax.grad(_local_loss)(p, xb, yb, batch)

    return jax.shard_map(body, mesh=mesh, in_specs=(PARAMS, BATCH, BATCH), out_specs=PARAMS)(
        params, x, y
    )


def fsdp_train_step(
    params: dict, x: jax.Array, y: jax.Array, mesh: Mesh, lr: float
) -> tuple[dict, jax.Array]:
    """One SGD step ``p − lr·g`` on the full batch; returns (new params, loss).

    The new params stay sharded like the input; the loss is the full-batch
    loss before the step, a replicated scalar.
    """
    batch = x.shape[0]

    def body(p, xb, yb):
        local, g = jax.value_and_grad(_local_loss)(p, xb, yb, batch)
        new = jax.tree.map(lambda w, gw: w - lr * gw, p, g)
        return new, lax.psum(local, AXIS)  # the one all-reduce: a scalar

    return jax.shard_map(body, mesh=mesh, in_specs=(PARAMS, BATCH, BATCH), out_specs=(PARAMS, P()))(
        params, x, y
    )
