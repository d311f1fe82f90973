"""Realistic wrong implementations for lesson 5 (see tests/mistakes/__init__.py)."""

from __future__ import annotations

from tests.mistakes import Mistake

L05 = "l05_collective_matmul"
SPECS = "from jax.sharding import PartitionSpec as P\n"

MISTAKES: list[Mistake] = [
    Mistake(
        id="bidirectional-loop-one-step-long",
        module=L05,
        exercise="allgather_matmul_bidirectional",
        status="failed",
        check="memory",
        says=("takes one block of W", "more than the whole W"),
        never=("collected every block",),  # no matmul takes the whole W here
        patch=(
            (
                "lax.fori_loop(1, (n - 1) // 2 + 1, step, (y, w_blk, w_blk))",
                "lax.fori_loop(1, n // 2 + 1, step, (y, w_blk, w_blk))",
            ),
        ),
    ),
    Mistake(
        id="collective-matmul-calls-all-gather",
        module=L05,
        exercise="allgather_matmul",
        code=SPECS
        + """
def allgather_matmul(x, w, mesh):
    def body(x_blk, w_blk):
        return x_blk @ lax.all_gather(w_blk, "x", tiled=True)

    return jax.shard_map(
        body, mesh=mesh, in_specs=(P("x", None), P("x", None)), out_specs=P("x", None)
    )(x, w)
""",
        status="failed",
        check="collectives",
        says=("all-gather", "materialises the whole W"),
    ),
    Mistake(
        id="collects-every-block-then-one-matmul",
        module=L05,
        exercise="allgather_matmul",
        code=SPECS
        + """
def allgather_matmul(x, w, mesh):
    def body(x_blk, w_blk):
        n = lax.axis_size("x")
        me = lax.axis_index("x")
        left = [(i, (i - 1) % n) for i in range(n)]
        blocks, held = [w_blk], w_blk
        for _ in range(n - 1):
            held = lax.ppermute(held, "x", left)  # block me + s arrives
            blocks.append(held)
        # blocks[s] is W block (me + s) mod N: roll them into order and multiply once
        w_full = jnp.roll(jnp.concatenate(blocks), me * w_blk.shape[0], axis=0)
        return x_blk @ w_full

    return jax.shard_map(
        body, mesh=mesh, in_specs=(P("x", None), P("x", None)), out_specs=P("x", None)
    )(x, w)
""",
        status="failed",
        check="memory",
        says=("whole W", "collected every block"),
    ),
    Mistake(
        id="collective-matmul-one-transfer-too-many",
        module=L05,
        exercise="allgather_matmul",
        status="failed",
        check="steps",
        says=("One collective-permute too many",),
        patch=(
            (
                "y, w_last = lax.fori_loop(0, n - 1, step,",
                "y, w_last = lax.fori_loop(0, n, step,",
            ),
            ("return (y + partial(w_last, n - 1)).astype", "return y.astype"),
        ),
    ),
    Mistake(
        id="collective-matmul-wrong-x-slice",
        module=L05,
        exercise="allgather_matmul",
        status="failed",
        check="values",
        says=("wrong columns of X", "other way round the ring"),
        patch=(
            (
                "cols = lax.dynamic_slice_in_dim(x_blk, ((me + s) % n) * d, d, axis=1)",
                "cols = lax.dynamic_slice_in_dim(x_blk, ((me - s) % n) * d, d, axis=1)",
            ),
        ),
    ),
    Mistake(
        id="collective-matmul-own-x-slice",
        module=L05,
        exercise="allgather_matmul",
        status="failed",
        check="values",
        says=("your own block",),
        patch=(
            (
                "cols = lax.dynamic_slice_in_dim(x_blk, ((me + s) % n) * d, d, axis=1)",
                "cols = lax.dynamic_slice_in_dim(x_blk, me * d, d, axis=1)",
            ),
        ),
    ),
    Mistake(
        id="reducescatter-matmul-calls-psum-scatter",
        module=L05,
        exercise="matmul_reducescatter",
        code=SPECS
        + """
def matmul_reducescatter(x, w, mesh):
    def body(x_blk, w_blk):
        return lax.psum_scatter(x_blk @ w_blk, "x", scatter_dimension=1, tiled=True)

    return jax.shard_map(
        body, mesh=mesh, in_specs=(P(None, "x"), P("x", None)), out_specs=P(None, "x")
    )(x, w)
""",
        status="failed",
        check="collectives",
        says=("reduce-scatter", "running partial sum"),
    ),
    Mistake(
        id="bidirectional-both-streams-on-the-last-step",
        module=L05,
        exercise="allgather_matmul_bidirectional",
        code="""
def allgather_matmul_bidirectional(x, w, mesh):
    def body(x_blk, w_blk):
        n = lax.axis_size("x")
        me = lax.axis_index("x")
        d = w_blk.shape[0]

        def partial(w_held, block):
            cols = lax.dynamic_slice_in_dim(x_blk, (block % n) * d, d, axis=1)
            return jnp.dot(cols, w_held, preferred_element_type=jnp.float32)

        def step(s, carry):
            y, from_right, from_left = carry
            from_right = lax.ppermute(from_right, "x", _left(n))
            from_left = lax.ppermute(from_left, "x", _right(n))
            twice = (2 * s) % n == 0  # the block N/2 away came from both sides: count it once
            y = y + partial(from_right, me + s) + jnp.where(twice, 0.0, partial(from_left, me - s))
            return y, from_right, from_left

        y = partial(w_blk, me)
        y, _, _ = lax.fori_loop(1, n // 2 + 1, step, (y, w_blk, w_blk))
        return y.astype(x_blk.dtype)

    return jax.shard_map(
        body, mesh=mesh, in_specs=(P("x", None), P("x", None)), out_specs=P("x", None)
    )(x, w)
""",
        status="failed",
        check="steps",
        says=("last one moves a single stream", "one way only"),
    ),
    Mistake(
        id="bidirectional-goes-one-way",
        module=L05,
        exercise="allgather_matmul_bidirectional",
        code="""
def allgather_matmul_bidirectional(x, w, mesh):
    return allgather_matmul(x, w, mesh)
""",
        status="failed",
        check="directions",
        says=("same way round the ring",),
    ),
    Mistake(
        id="collective-matmul-direct-sends",
        module=L05,
        exercise="allgather_matmul",
        code=SPECS
        + """
def allgather_matmul(x, w, mesh):
    def body(x_blk, w_blk):
        n = lax.axis_size("x")
        me = lax.axis_index("x")
        d = w_blk.shape[0]
        y = jnp.dot(lax.dynamic_slice_in_dim(x_blk, me * d, d, axis=1), w_blk)
        for s in range(1, n):  # W block i + s, sent straight from device i + s
            held = lax.ppermute(w_blk, "x", [(j, (j - s) % n) for j in range(n)])
            y = y + jnp.dot(lax.dynamic_slice_in_dim(x_blk, ((me + s) % n) * d, d, axis=1), held)
        return y

    return jax.shard_map(
        body, mesh=mesh, in_specs=(P("x", None), P("x", None)), out_specs=P("x", None)
    )(x, w)
""",
        status="failed",
        check="ring",
        says=("send past the neighbours", "crosses s links"),
    ),
    Mistake(
        id="reducescatter-float32-running-sum",
        module=L05,
        exercise="matmul_reducescatter",
        code=SPECS
        + """
def matmul_reducescatter(x, w, mesh):
    def body(x_blk, w_blk):
        n = lax.axis_size("x")
        me = lax.axis_index("x")
        f = w_blk.shape[1] // n
        right = [(i, (i + 1) % n) for i in range(n)]

        def product(block):  # float32 products, and a float32 sum on the wire
            cols = lax.dynamic_slice_in_dim(w_blk, block * f, f, axis=1)
            return jnp.dot(x_blk, cols, preferred_element_type=jnp.float32)

        def step(s, acc):
            return lax.ppermute(acc, "x", right) + product((me - s - 2) % n)

        acc = lax.fori_loop(0, n - 1, step, product((me - 1) % n))
        return acc.astype(x_blk.dtype)

    return jax.shard_map(
        body, mesh=mesh, in_specs=(P(None, "x"), P("x", None)), out_specs=P(None, "x")
    )(x, w)
""",
        status="failed",
        check="precision",
        says=("send float32 where the inputs are bfloat16", "Cast to bfloat16"),
    ),
    # issue 45 audit (round 3): read in one ring's order, the blocks of the +1 stream and the
    # tail were "the first 3 of 4 terms: a loop of fewer steps"; the bidirectional loop adds
    # me, me + 1, me − 1, me + 2…, and its one missing stream is no such run
    Mistake(
        id="bidirectional-left-stream-never-added",
        module=L05,
        exercise="allgather_matmul_bidirectional",
        status="failed",
        check="values",
        says=("it lacks X[:, block 3]·W[block 3]",),
        never=("fewer steps", "never multiplied", "terms the ring adds in turn"),
        patch=(
            (
                "            y = y + partial(from_right, me + s) + partial(from_left, me - s)\n",
                "            y = y + partial(from_right, me + s)\n"
                "            y + partial(from_left, me - s)  # the block from the left\n",
            ),
        ),
    ),
    Mistake(  # drafts/heldback7: the last product paired by step N where N − 1 belongs
        id="l05-allgather-last-product-at-step-n",
        module="l05_collective_matmul",
        exercise="allgather_matmul",
        status="failed",
        check="values",
        says=("the one wrong term is the last the ring adds",),
        patch=(
            (
                "        return (y + partial(w_last, n - 1)).astype(x_blk.dtype)\n",
                "        return (y + partial(w_last, n)).astype(x_blk.dtype)\n",
            ),
        ),
    ),
]
