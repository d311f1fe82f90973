"""Lesson 6 — data parallelism and gradient accumulation.

Every device holds the whole course model (params replicated, ``P()``) and
its own rows of the batch (``P('data', None)``). Each device differentiates
the loss of its rows; one all-reduce makes the gradients those of the whole
batch on every device. The grader checks every device's copy against a
float64 reference, that only all-reduces run and send 2(N − 1)/N · |params|
bytes per call, and — for accumulation — that the micro-batches are looped
over with one all-reduce after the loop and that memory stays below the
whole local batch's activations.

Read the lesson first: ``course show 6``. Grade with ``course grade 6``.
"""

import jax
import jax.numpy as jnp
from jax import lax
from jax.sharding import Mesh
from jax.sharding import PartitionSpec as P

import tinymodels


def dp_grads(params: dict, x: jax.Array, y: jax.Array, mesh: Mesh) -> dict:
    """Gradient of ``tinymodels.loss`` over the whole batch, replicated on every device.

    Each device differentiates the mean loss of its B/N rows; the gradients
    are summed over 'data' and divided by N, which is the gradient of the
    mean over all B rows. Equal to ``jax.grad(tinymodels.loss)(params, x, y)``.
    """
    # TODO: jax.shard_map with in_specs (P(), P('data', None), P('data', None))
    #       and out_specs P(). Inside, jax.grad(tinymodels.loss) of your rows.
    #       Mind what jax.grad returns for params that came in replicated.
    raise NotImplementedError("dp_grads: TODO")


def dp_train_step(
    params: dict, x: jax.Array, y: jax.Array, mesh: Mesh, lr: float
) -> tuple[dict, jax.Array]:
    """One SGD step ``p − lr·g`` on the whole batch, and the loss before it.

    Returns ``(new_params, loss)``: params replicated like the input, loss a
    replicated float32 scalar, the mean over all B rows.
    """
    # TODO: as dp_grads, with jax.value_and_grad; the local loss is the mean
    #       of your rows only, so average it over 'data' too.
    raise NotImplementedError("dp_train_step: TODO")


def dp_accumulate(params: dict, x: jax.Array, y: jax.Array, mesh: Mesh, n_micro: int) -> dict:
    """Gradient over the whole batch, accumulated over ``n_micro`` micro-batches per device.

    Each device splits its B/N rows into ``n_micro`` micro-batches and loops
    over them (``lax.scan`` or ``lax.fori_loop``), adding up local gradients.
    The grader checks what the loop is for, not its form: the micro-batches
    run one after another, so only one micro-batch's activations are alive
    at a time (temporary memory stays below those of the whole local batch),
    and the gradients cross devices once, after the loop. Starting the sum
    with the first micro-batch and looping over the other ``n_micro − 1``
    counts the same. Equal to ``dp_grads``.
    """
    # TODO: reshape your rows to [n_micro, rows/n_micro, D] and lax.scan over
    #       them, adding jax.grad of each micro-batch's loss. Keep the
    #       gradients local inside the loop (lax.pcast the params to 'varying'
    #       first) and all-reduce once after it.
    raise NotImplementedError("dp_accumulate: TODO")
