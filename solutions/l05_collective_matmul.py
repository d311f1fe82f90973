"""Lesson 5 — collective matmul: overlap communication with compute (reference solution).

Instead of gathering a whole operand and then multiplying, pass blocks
around the ring with ``lax.ppermute`` and multiply each block while the next
one is on its way. The compiled program holds collective-permutes only, each
carrying one block, and no device ever holds the whole weight.

Ring directions used here: "left" sends device i's block to device i − 1,
so after s steps device i holds the block that started on device i + s;
"right" sends to i + 1, so device i then holds the block of device i − s.
"""

import jax
import jax.numpy as jnp
from jax import lax
from jax.sharding import Mesh
from jax.sharding import PartitionSpec as P


def _left(n: int) -> list[tuple[int, int]]:
    return [(i, (i - 1) % n) for i in range(n)]


def _right(n: int) -> list[tuple[int, int]]:
    return [(i, (i + 1) % n) for i in range(n)]


def allgather_matmul(x: jax.Array, w: jax.Array, mesh: Mesh) -> jax.Array:
    """``X[B_X, D] · W[D_X, F] -> Y[B_X, F]`` without an all-gather.

    N steps: each device multiplies the W block it holds by the matching
    columns of its X rows, and (for the first N − 1 steps) passes the block
    on with ``ppermute``. Only one W block is in flight per device at a time.
    """

    def body(x_blk, w_blk):
        n = lax.axis_size("x")
        me = lax.axis_index("x")
        d = w_blk.shape[0]

        def partial(w_held, s):
            # After s steps to the left, this device holds W block (me + s) mod N,
            # which multiplies columns [(me + s) mod N · d, … + d) of X.
            cols = lax.dynamic_slice_in_dim(x_blk, ((me + s) % n) * d, d, axis=1)
            return jnp.dot(cols, w_held, preferred_element_type=jnp.float32)

        def step(s, carry):
            y, w_held = carry
            y = y + partial(w_held, s)  # multiply the block we hold …
            return y, lax.ppermute(w_held, "x", _left(n))  # … while it moves on

        y = jnp.zeros((x_blk.shape[0], w_blk.shape[1]), jnp.float32)
        y, w_last = lax.fori_loop(0, n - 1, step, (lax.pcast(y, "x", to="varying"), w_blk))
        return (y + partial(w_last, n - 1)).astype(x_blk.dtype)

    return jax.shard_map(
        body, mesh=mesh, in_specs=(P("x", None), P("x", None)), out_specs=P("x", None)
    )(x, w)


def matmul_reducescatter(x: jax.Array, w: jax.Array, mesh: Mesh) -> jax.Array:
    """``X[B, D_X] · W[D_X, F] -> Y[B, F_X]`` without a reduce-scatter.

    Every device holds a slice of the contracting dim, so its products are
    partial sums. A running partial sum of one output block travels the
    ring: at each step a device adds its own product for that block and
    passes it on. The sum that ends on device i is complete for block i.
    """

    def body(x_blk, w_blk):
        n = lax.axis_size("x")
        me = lax.axis_index("x")
        f = w_blk.shape[1] // n

        def product(block):
            cols = lax.dynamic_slice_in_dim(w_blk, block * f, f, axis=1)
            return x_blk @ cols

        # Sending right, the sum arriving at device i after step s started on
        # device i − s − 1; device i adds its own term for block (i − s − 2)
        # mod N, so at the last step (s = N − 2) it adds block i itself.
        def step(s, acc):
            acc = lax.ppermute(acc, "x", _right(n))
            return acc + product((me - s - 2) % n)

        return lax.fori_loop(0, n - 1, step, product((me - 1) % n))

    return jax.shard_map(
        body, mesh=mesh, in_specs=(P(None, "x"), P("x", None)), out_specs=P(None, "x")
    )(x, w)


def allgather_matmul_bidirectional(x: jax.Array, w: jax.Array, mesh: Mesh) -> jax.Array:
    """As :func:`allgather_matmul`, with W blocks travelling both ways round the ring.

    At step s a device receives block i + s from its right neighbour and
    block i − s from its left one, so all N blocks have visited after
    ⌊N/2⌋ steps instead of N − 1. The bytes are the same (N − 1 blocks per
    device); the number of sequential steps halves.
    """

    def body(x_blk, w_blk):
        n = lax.axis_size("x")
        me = lax.axis_index("x")
        d = w_blk.shape[0]

        def partial(w_held, block):
            cols = lax.dynamic_slice_in_dim(x_blk, (block % n) * d, d, axis=1)
            return jnp.dot(cols, w_held, preferred_element_type=jnp.float32)

        def step(s, carry):  # s = 1, 2, …: one block arrives from each side
            y, from_right, from_left = carry
            from_right = lax.ppermute(from_right, "x", _left(n))  # now block me + s
            from_left = lax.ppermute(from_left, "x", _right(n))  # now block me − s
            y = y + partial(from_right, me + s) + partial(from_left, me - s)
            return y, from_right, from_left

        y = partial(w_blk, me)
        y, from_right, _ = lax.fori_loop(1, (n - 1) // 2 + 1, step, (y, w_blk, w_blk))
        if n % 2 == 0 and n > 1:  # block me + N/2 = me − N/2: take it from one side only
            from_right = lax.ppermute(from_right, "x", _left(n))
            y = y + partial(from_right, me + n // 2)
        return y.astype(x_blk.dtype)

    return jax.shard_map(
        body, mesh=mesh, in_specs=(P("x", None), P("x", None)), out_specs=P("x", None)
    )(x, w)
