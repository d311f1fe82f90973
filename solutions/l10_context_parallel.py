"""Lesson 10 — context parallelism: ring attention (reference solution).

The sequence is split over the mesh axis ``'seq'``: device i holds rows
i·S/N … (i+1)·S/N − 1 of q, k and v. Attention needs every key for every
query, so the K/V blocks travel round the ring with ``lax.ppermute`` while
each device keeps its queries: after s steps sending to i + 1, device i holds
the K/V block that started on device (i − s) mod N. Each block gives a
partial attention (its output and log-sum-exp per row), and partials over
disjoint key sets combine exactly with :func:`merge_partials`.

Zigzag (bonus): with a causal mask the plain ring is unbalanced — device 0's
queries see only block 0, device N − 1's see every block. Cutting the sequence
into 2N chunks and giving device i chunks i and 2N − 1 − i makes every step
cost the same half block on every device.
"""

import jax
import jax.numpy as jnp
from jax import lax
from jax.sharding import Mesh
from jax.sharding import PartitionSpec as P

AXIS = "seq"
ROWS = P(AXIS, None, None)


def merge_partials(
    o1: jax.Array, lse1: jax.Array, o2: jax.Array, lse2: jax.Array
) -> tuple[jax.Array, jax.Array]:
    """Combine attention over two disjoint key sets: ``(o, lse)`` of their union.

    ``o: [S, H, Dh]`` is each partial's softmax-weighted sum of values (already
    normalised over its own keys), ``lse: [S, H]`` the log of its softmax
    denominator. The union's weights are e^lse1 and e^lse2 over their sum,
    computed relative to the larger lse so nothing overflows (|lse| up to
    hundreds). A row that has seen no key has lse = −inf; where both are −inf
    the result is o = 0, lse = −inf, and no NaN: exp(−inf − (−inf)) is NaN, so
    the reference point is replaced by 0 there.
    """
    lse = jnp.logaddexp(lse1, lse2)
    ref = jnp.where(jnp.isneginf(lse), 0.0, lse)  # both −inf: weights e^−inf = 0, not NaN
    w1 = jnp.exp(lse1 - ref)[..., None]
    w2 = jnp.exp(lse2 - ref)[..., None]
    return (w1 * o1 + w2 * o2).astype(o1.dtype), lse


def _block_attention(
    q: jax.Array, k: jax.Array, v: jax.Array, mask: jax.Array | None
) -> tuple[jax.Array, jax.Array]:
    """Attention of queries q [Sq, H, Dh] over one key block k, v [Sk, H, Dh], in float32.

    Returns (o [Sq, H, Dh], lse [Sq, H]). ``mask`` [Sq, Sk] is True where a
    query may see a key; a row with no visible key gets o = 0, lse = −inf.
    """
    scale = q.shape[-1] ** -0.5
    s = jnp.einsum("qhd,khd->hqk", q, k, preferred_element_type=jnp.float32) * scale
    if mask is not None:
        s = jnp.where(mask[None], s, -jnp.inf)
    m = jnp.max(s, axis=-1, keepdims=True)
    m = jnp.where(jnp.isneginf(m), 0.0, m)  # a fully masked row: exp(−inf − 0) = 0
    p = jnp.exp(s - m)
    denom = jnp.sum(p, axis=-1)  # [H, Sq]
    o = jnp.einsum("hqk,khd->qhd", p, v.astype(jnp.float32))
    o = o / jnp.where(denom == 0, 1.0, denom).T[..., None]
    lse = (m[..., 0] + jnp.log(denom)).T  # log 0 = −inf where nothing was visible
    return o, lse


def _right(n: int) -> list[tuple[int, int]]:
    return [(i, (i + 1) % n) for i in range(n)]


def _empty(q: jax.Array) -> tuple[jax.Array, jax.Array]:
    """The partial over no keys: o = 0, lse = −inf (varying, like the loop's results)."""
    o = jnp.zeros(q.shape, jnp.float32)
    lse = jnp.full(q.shape[:2], -jnp.inf, jnp.float32)
    return lax.pcast(o, AXIS, to="varying"), lax.pcast(lse, AXIS, to="varying")


def ring_attention(q: jax.Array, k: jax.Array, v: jax.Array, mesh: Mesh, causal: bool) -> jax.Array:
    """softmax(q·kᵀ/√Dh [+ causal mask]) · v with K/V blocks passed round the ring.

    ``q, k, v: [S, H, Dh]`` sharded ``P('seq', None, None)``; the result is
    sharded like q. N − 1 rotations of one K/V block each; the causal mask
    compares global positions: query row r of device i is position i·S/N + r,
    key row c of the block that started on device j is j·S/N + c.
    """

    def body(q_blk, k_blk, v_blk):
        n, me = lax.axis_size(AXIS), lax.axis_index(AXIS)
        b = q_blk.shape[0]
        rows = me * b + jnp.arange(b)

        def attend(acc, kv, s):
            j = (me - s) % n  # sending to i + 1: after s steps we hold block i − s
            mask = rows[:, None] >= (j * b + jnp.arange(b))[None, :] if causal else None
            return merge_partials(*acc, *_block_attention(q_blk, *kv, mask))

        def step(s, carry):
            acc, kv = carry
            acc = attend(acc, kv, s)  # attend to the block we hold …
            return acc, lax.ppermute(kv, AXIS, _right(n))  # … while it moves on

        acc, kv = lax.fori_loop(0, n - 1, step, (_empty(q_blk), (k_blk, v_blk)))
        o, _ = attend(acc, kv, n - 1)  # the last block needs no onward send
        return o.astype(q_blk.dtype)

    return jax.shard_map(body, mesh=mesh, in_specs=(ROWS, ROWS, ROWS), out_specs=ROWS)(q, k, v)


def zigzag_ring_attention(q: jax.Array, k: jax.Array, v: jax.Array, mesh: Mesh) -> jax.Array:
    """Causal ring attention balanced by the zigzag layout.

    The sequence is cut into 2N chunks of c = S/2N rows; device i holds chunks
    i and 2N − 1 − i (its first and second half). Against the K/V block of
    device j ≠ i only half the work is unmasked, and it is always the same
    amount:

    - j < i: both query chunks see key chunk j whole, neither sees 2N − 1 − j;
    - j > i: query chunk 2N − 1 − i sees both key chunks whole, chunk i none.

    So every step after the first computes a [2c, c] or [c, 2c] score block
    per head; step 0 (j = i) is the causal diagonal block, done before the loop.
    """

    def body(q_blk, k_blk, v_blk):
        n, me = lax.axis_size(AXIS), lax.axis_index(AXIS)
        c = q_blk.shape[0] // 2
        pos = jnp.concatenate([me * c + jnp.arange(c), (2 * n - 1 - me) * c + jnp.arange(c)])
        o, lse = _block_attention(q_blk, k_blk, v_blk, pos[:, None] >= pos[None, :])
        halves = ((o[:c], lse[:c]), (o[c:], lse[c:]))  # (o, lse) of each query chunk

        def earlier(acc, kv):  # j < i: all queries, first key chunk
            k_j, v_j = kv
            o, lse = _block_attention(q_blk, k_j[:c], v_j[:c], None)
            return merge_partials(*acc[0], o[:c], lse[:c]), merge_partials(*acc[1], o[c:], lse[c:])

        def later(acc, kv):  # j > i: second query chunk, both key chunks
            return acc[0], merge_partials(*acc[1], *_block_attention(q_blk[c:], *kv, None))

        def step(s, carry):
            acc, kv = carry
            kv = lax.ppermute(kv, AXIS, _right(n))  # now the block of device me − s
            j = (me - s) % n
            return lax.cond(j < me, earlier, later, acc, kv), kv

        ((o_first, _), (o_second, _)), _ = lax.fori_loop(1, n, step, (halves, (k_blk, v_blk)))
        return jnp.concatenate([o_first, o_second]).astype(q_blk.dtype)

    return jax.shard_map(body, mesh=mesh, in_specs=(ROWS, ROWS, ROWS), out_specs=ROWS)(q, k, v)
