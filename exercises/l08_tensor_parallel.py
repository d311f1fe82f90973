"""Lesson 8 — Megatron-style tensor and sequence parallelism.

The MLP is ``tanh(x @ w_in) @ w_out``. Split ``w_in`` by columns and
``w_out`` by rows over the mesh axis ``'model'``, and each device computes
its own slice of the hidden layer with no communication; one collective at
the end adds the devices' partial sums of y. The grader checks the values,
the output's sharding, that exactly that one collective runs (with its
bytes and, for the 2-D mesh, which devices it groups), and that no weight
ever moves.

Read the lesson first: ``course show 8``. Grade with ``course grade 8``.
"""

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.sharding import Mesh
from jax.sharding import PartitionSpec as P


def tp_mlp(x: jax.Array, w_in: jax.Array, w_out: jax.Array, mesh: Mesh) -> jax.Array:
    """``y = tanh(x @ w_in) @ w_out`` with the weights split over ``'model'``.

    ``x: [B, D]`` replicated; ``w_in: [D, F]`` ``P(None, 'model')``;
    ``w_out: [F, D]`` ``P('model', None)``; returns ``y: [B, D]`` replicated.
    One all-reduce of |y|, after the second matmul.
    """
    # TODO: jax.shard_map with in_specs (P(), P(None, 'model'), P('model', None))
    #       and out_specs P(). In the body, tanh(x @ w_in_cols) @ w_out_rows is
    #       this device's partial sum of y; add the partials with one psum.
    raise NotImplementedError("tp_mlp: TODO")


def tp_attention(
    x: jax.Array,
    wq: jax.Array,
    wk: jax.Array,
    wv: jax.Array,
    wo: jax.Array,
    mesh: Mesh,
    n_heads: int,
) -> jax.Array:
    """Multi-head softmax attention with the heads split over ``'model'``.

    ``x: [B, S, D]`` replicated; ``wq, wk, wv: [D, H·Dh]`` ``P(None, 'model')``
    (head h is columns h·Dh … (h+1)·Dh); ``wo: [H·Dh, D]`` ``P('model', None)``.
    Scores are scaled by 1/√Dh, no mask. Returns ``y: [B, S, D]`` replicated.
    Each device runs its H/N heads whole; one all-reduce of |y| adds the
    heads' contributions to y.
    """
    # TODO: Dh = wq.shape[1] // n_heads (global shapes). Inside shard_map each
    #       device holds the columns of H/N whole heads: reshape x @ wq to
    #       [B, S, H/N, Dh] (head-major, like the columns), attend per head,
    #       reshape back, multiply by your rows of wo, and psum once.
    raise NotImplementedError("tp_attention: TODO")


def sp_mlp(x: jax.Array, w_in: jax.Array, w_out: jax.Array, mesh: Mesh) -> jax.Array:
    """The MLP on a sequence split over ``'model'``, sequence-parallel style.

    ``x: [S, D]`` ``P('model', None)`` → ``y: [S, D]`` ``P('model', None)``.
    All-gather the sequence, run the tensor-parallel MLP, and reduce-scatter
    the partial sums back to rows: the same bytes as one all-reduce, and
    outside the MLP each device holds only its S/N rows.
    """
    # TODO: in_specs (P('model', None), P(None, 'model'), P('model', None)),
    #       out_specs P('model', None). lax.all_gather the rows (tiled), compute
    #       the partial sum as in tp_mlp, then lax.psum_scatter it over rows.
    raise NotImplementedError("sp_mlp: TODO")


def dp_tp_mlp(x: jax.Array, w_in: jax.Array, w_out: jax.Array, mesh: Mesh) -> jax.Array:
    """Data and tensor parallelism together, on a mesh ``('data', 'model')``.

    ``x: [B, D]`` ``P('data', None)`` → ``y: [B, D]`` ``P('data', None)``;
    the weights are split over ``'model'`` as in :func:`tp_mlp` and
    replicated over ``'data'``. Each row of the mesh runs :func:`tp_mlp` on
    its own batch rows: the all-reduce stays inside a ``'model'`` group.
    """
    # TODO: as tp_mlp, with x split over 'data'. Which axis do the partial
    #       sums of y need adding over — and which must they not?
    raise NotImplementedError("dp_tp_mlp: TODO")
