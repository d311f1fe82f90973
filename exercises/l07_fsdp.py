"""Lesson 7 — fully sharded data parallel, ZeRO-3.

Every device holds 1/N of every weight (split on D) and 1/N of the batch.
Gather each layer's weights inside the layer loop, just before that layer
uses them, and let ``jax.grad`` turn each gather into a reduce-scatter of
the gradient. The grader checks the values, that params and gradients stay
sharded, the collectives (all-gather, reduce-scatter, and no all-reduce
beyond the scalar loss) and their bytes, that no all-gather carries more
than one layer, and that no device ever holds the whole model's weights
(from the compiled program's memory analysis).

Read the lesson first: ``course show 7``. Grade with ``course grade 7``.
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


def fsdp_forward(params: dict, x: jax.Array, mesh: Mesh) -> jax.Array:
    """The course model's forward pass with params sharded on D.

    ``params["w_in"]: [L, D, F]`` is ``P(None, 'data', None)``,
    ``params["w_out"]: [L, F, D]`` is ``P(None, None, 'data')``;
    ``x: [B, D]`` is ``P('data', None)``. Returns ``y: [B, D]``,
    ``P('data', None)``. Each layer's weights are all-gathered inside the
    layer loop, just before that layer uses them.
    """
    # TODO: jax.shard_map with in_specs (PARAMS, BATCH) and out_specs BATCH.
    #       In the body, lax.scan over the layers; in each step all-gather
    #       that layer's w_in block along D (axis 0 of the [D/N, F] block) and
    #       w_out block along D (axis 1 of [F, D/N]) with tiled=True, then
    #       apply tinymodels.layer(h, w_in, w_out).
    raise NotImplementedError("fsdp_forward: TODO")


def fsdp_grads(params: dict, x: jax.Array, y: jax.Array, mesh: Mesh) -> dict:
    """``jax.grad(loss)(params, x, y)`` on the full batch, sharded like params.

    The gradients reach each device already reduce-scattered (the transpose
    of the forward's all-gathers); no all-reduce is needed.
    """
    # TODO: inside shard_map (in_specs (PARAMS, BATCH, BATCH), out_specs
    #       PARAMS), take jax.grad of this device's share of the loss: its
    #       squared errors divided by the *global* batch x.shape[0]. Wrap
    #       "gather + layer" in jax.checkpoint so that the backward pass
    #       gathers each layer again instead of keeping them all.
    raise NotImplementedError("fsdp_grads: TODO")


def fsdp_train_step(
    params: dict, x: jax.Array, y: jax.Array, mesh: Mesh, lr: float
) -> tuple[dict, jax.Array]:
    """One SGD step ``p − lr·g`` on the full batch; returns (new params, loss).

    The new params stay sharded like the input; the loss is the full-batch
    loss before the step, a replicated scalar.
    """
    # TODO: as fsdp_grads, with jax.value_and_grad; update each shard in
    #       place of the gradient shard, and psum the scalar loss (the only
    #       all-reduce). out_specs (PARAMS, P()).
    raise NotImplementedError("fsdp_train_step: TODO")
