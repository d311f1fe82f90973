"""Lesson 8 — Megatron-style tensor and sequence parallelism (reference solution).

The MLP is ``tanh(x @ w_in) @ w_out`` with ``w_in: [D, F]`` split by columns
(``P(None, 'model')``) and ``w_out: [F, D]`` split by rows
(``P('model', None)``). Device i holds columns i of the hidden layer: the
first matmul is column-parallel and needs nothing from anyone (tanh acts on
each column alone), the second is row-parallel and leaves a partial sum
``{U_model}`` of y on every device. One collective per MLP adds the
partials: a ``psum`` when y is wanted whole (tensor parallelism), a
``psum_scatter`` when y stays split by rows (sequence parallelism).

The weights never move; only activations do.
"""

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.sharding import Mesh
from jax.sharding import PartitionSpec as P

COLUMNS = P(None, "model")
ROWS = P("model", None)


def _mlp_partial(x: jax.Array, w_in: jax.Array, w_out: jax.Array) -> jax.Array:
    """This device's share of ``tanh(x @ w_in) @ w_out``: a partial sum over F."""
    return jnp.tanh(x @ w_in) @ w_out


def tp_mlp(x: jax.Array, w_in: jax.Array, w_out: jax.Array, mesh: Mesh) -> jax.Array:
    """``y = tanh(x @ w_in) @ w_out`` with the weights split over ``'model'``.

    ``x: [B, D]`` replicated; ``w_in: [D, F]`` ``P(None, 'model')``;
    ``w_out: [F, D]`` ``P('model', None)``; returns ``y: [B, D]`` replicated.
    One all-reduce of |y|, after the second matmul.
    """

    def body(x, w_in_cols, w_out_rows):
        return lax.psum(_mlp_partial(x, w_in_cols, w_out_rows), "model")

    return jax.shard_map(body, mesh=mesh, in_specs=(P(), COLUMNS, ROWS), out_specs=P())(
        x, w_in, w_out
    )


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
    dh = wq.shape[1] // n_heads

    def body(x, wq, wk, wv, wo):
        b, s, _ = x.shape
        heads = wq.shape[1] // dh  # H/N heads live here

        def split(t):  # [B, S, heads·Dh] -> [B, S, heads, Dh]: head-major, as the columns are
            return t.reshape(b, s, heads, dh)

        q, k, v = split(x @ wq), split(x @ wk), split(x @ wv)
        scores = jnp.einsum("bqhd,bkhd->bhqk", q, k) / np.sqrt(dh).astype(x.dtype)
        o = jnp.einsum("bhqk,bkhd->bqhd", jax.nn.softmax(scores, axis=-1), v)
        return lax.psum(o.reshape(b, s, heads * dh) @ wo, "model")

    return jax.shard_map(
        body, mesh=mesh, in_specs=(P(), COLUMNS, COLUMNS, COLUMNS, ROWS), out_specs=P()
    )(x, wq, wk, wv, wo)


def sp_mlp(x: jax.Array, w_in: jax.Array, w_out: jax.Array, mesh: Mesh) -> jax.Array:
    """The MLP on a sequence split over ``'model'``, sequence-parallel style.

    ``x: [S, D]`` ``P('model', None)`` → ``y: [S, D]`` ``P('model', None)``.
    All-gather the sequence, run the tensor-parallel MLP, and reduce-scatter
    the partial sums back to rows: the same bytes as one all-reduce, and
    outside the MLP each device holds only its S/N rows.
    """

    def body(x_rows, w_in_cols, w_out_rows):
        x_full = lax.all_gather(x_rows, "model", axis=0, tiled=True)
        partial = _mlp_partial(x_full, w_in_cols, w_out_rows)
        return lax.psum_scatter(partial, "model", scatter_dimension=0, tiled=True)

    return jax.shard_map(body, mesh=mesh, in_specs=(ROWS, COLUMNS, ROWS), out_specs=ROWS)(
        x, w_in, w_out
    )


def dp_tp_mlp(x: jax.Array, w_in: jax.Array, w_out: jax.Array, mesh: Mesh) -> jax.Array:
    """Data and tensor parallelism together, on a mesh ``('data', 'model')``.

    ``x: [B, D]`` ``P('data', None)`` → ``y: [B, D]`` ``P('data', None)``;
    the weights are split over ``'model'`` as in :func:`tp_mlp` and
    replicated over ``'data'``. Each row of the mesh runs :func:`tp_mlp` on
    its own batch rows: the all-reduce stays inside a ``'model'`` group.
    """

    def body(x_rows, w_in_cols, w_out_rows):
        return lax.psum(_mlp_partial(x_rows, w_in_cols, w_out_rows), "model")

    return jax.shard_map(
        body, mesh=mesh, in_specs=(P("data", None), COLUMNS, ROWS), out_specs=P("data", None)
    )(x, w_in, w_out)
