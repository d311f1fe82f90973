"""Lesson 10 — context parallelism: ring attention.

The sequence is split over the mesh axis ``'seq'``: each device holds S/N
rows of q, k and v. Every query needs every key, so the K/V blocks travel
round the ring with ``lax.ppermute`` while the queries stay put; partial
attentions over disjoint key blocks combine exactly through their
log-sum-exp (``merge_partials``). The grader checks the values against
softmax attention in float64, that only collective-permutes run — N − 1
rotations of one K/V block — and that no device holds the whole K and V.

Read the lesson first: ``course show 10``. Grade with ``course grade 10``.
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
    # TODO: the union's lse without forming e^lse (it overflows float32 above
    #       88.7), then each o weighted by its share of the softmax mass.
    #       Rows where both lse are −inf must come out o = 0, lse = −inf.
    raise NotImplementedError("merge_partials: TODO")


def ring_attention(q: jax.Array, k: jax.Array, v: jax.Array, mesh: Mesh, causal: bool) -> jax.Array:
    """softmax(q·kᵀ/√Dh [+ causal mask]) · v with K/V blocks passed round the ring.

    ``q, k, v: [S, H, Dh]`` sharded ``P('seq', None, None)``; the result is
    sharded like q. N − 1 rotations of one K/V block each; the causal mask
    compares global positions: query row r of device i is position i·S/N + r,
    key row c of the block that started on device j is j·S/N + c.
    """
    # TODO: inside jax.shard_map (in_specs ROWS for q, k, v; out_specs ROWS):
    #       start from o = 0, lse = −inf (lax.pcast them to varying); at each
    #       step attend your queries to the K/V block you hold (scores in
    #       float32, causal mask by global position, the block's own (o, lse)),
    #       merge_partials it in, and lax.ppermute the block to i + 1 —
    #       N blocks attended, N − 1 rotations (lax.fori_loop).
    raise NotImplementedError("ring_attention: TODO")


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
    # TODO: device i holds chunks i and 2N − 1 − i (c = S/2N rows each).
    #       Step 0: your own block with the causal mask on those positions.
    #       Then for the block of device j = (i − s) mod N: if j < i, all your
    #       queries against key chunk j only; if j > i, your second query chunk
    #       against both key chunks (lax.cond) — no mask needed in either case.
    raise NotImplementedError("zigzag_ring_attention: TODO")
