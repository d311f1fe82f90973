"""Realistic wrong implementations for lesson 2 (see tests/mistakes/__init__.py)."""

from __future__ import annotations

from tests.mistakes import Mistake

L02 = "l02_collectives"

MISTAKES: list[Mistake] = [
    Mistake(
        id="wrong-ring-direction",
        module=L02,
        exercise="ring_all_gather",
        code="""
def ring_all_gather(x, axis_name):
    n = lax.axis_size(axis_name)
    me = lax.axis_index(axis_name)
    b = x.shape[0]
    left = [(i, (i - 1) % n) for i in range(n)]  # sends left ...
    out = lax.pcast(jnp.zeros((n * b, *x.shape[1:]), x.dtype), axis_name, to="varying")
    out = lax.dynamic_update_slice_in_dim(out, x, me * b, axis=0)

    def step(s, carry):
        out, block = carry
        block = lax.ppermute(block, axis_name, left)
        owner = (me - s - 1) % n  # ... but indexes as if it sent right
        return lax.dynamic_update_slice_in_dim(out, block, owner * b, axis=0), block

    return lax.fori_loop(0, n - 1, step, (out, x))[0]
""",
        status="failed",
        check="values",
        says=("mirrored", "ring"),
    ),
    Mistake(
        id="calls-all-gather",
        module=L02,
        exercise="ring_all_gather",
        code="""
def ring_all_gather(x, axis_name):
    return lax.all_gather(x, axis_name, tiled=True)
""",
        status="failed",
        check="collectives",
        says=("all-gather", "lax.all_gather"),
    ),
    Mistake(
        id="one-step-too-many",
        module=L02,
        exercise="ring_all_gather",
        status="failed",
        check="steps",
        says=("too many",),
        patch=(("lax.fori_loop(0, n - 1, step, (out, x))", "lax.fori_loop(0, n, step, (out, x))"),),
    ),
    Mistake(
        id="reduce-scatter-one-step-short",
        module=L02,
        exercise="ring_reduce_scatter",
        status="failed",
        check="steps",
        says=("One collective-permute too few", "needs 3 sends"),
        never=("butterfly",),  # 2 = log2(4) sends, but each to a neighbour
        patch=(
            (
                "return lax.fori_loop(0, n - 1, step, acc)",
                "return lax.fori_loop(0, n - 2, step, acc)",
            ),
        ),
    ),
    Mistake(
        id="butterfly-power-of-two",
        module=L02,
        exercise="ring_all_gather",
        code="""
def ring_all_gather(x, axis_name):
    n = lax.axis_size(axis_name)
    me = lax.axis_index(axis_name)
    out, d = x, 1
    while d < n:  # recursive doubling: partner i XOR d
        other = lax.ppermute(out, axis_name, [(i, i ^ d) for i in range(n)])
        lower = (me & d) == 0
        out = jnp.where(lower, jnp.concatenate([out, other]), jnp.concatenate([other, out]))
        d *= 2
    return out
""",
        status="failed",
        check="steps",
        says=("butterfly", "power of two"),
    ),
    Mistake(
        id="all-reduce-sends-everything",
        module=L02,
        exercise="ring_all_reduce",
        code="""
def ring_all_reduce(x, axis_name):
    n = lax.axis_size(axis_name)
    right = [(i, (i + 1) % n) for i in range(n)]
    acc, block = x, x
    for _ in range(n - 1):  # the whole array, N - 1 times
        block = lax.ppermute(block, axis_name, right)
        acc = acc + block
    return acc
""",
        status="failed",
        check="bytes",
        says=("whole arrays",),
    ),
    Mistake(
        id="reduce-scatter-wrong-chunk",
        module=L02,
        exercise="ring_reduce_scatter",
        status="failed",
        check="values",
        says=("meant for device i + 1",),
        # starts with its own chunk, so every sum ends one device too far
        patch=(
            ("acc = chunk((me - 1) % n)", "acc = chunk(me)"),
            ("chunk((me - s - 2) % n)", "chunk((me - s - 1) % n)"),
        ),
    ),
    Mistake(
        id="reduce-scatter-chunk-0-everywhere",
        module=L02,
        exercise="ring_reduce_scatter",
        code="""
def ring_reduce_scatter(x, axis_name):
    n = lax.axis_size(axis_name)
    c = x.shape[0] // n
    right = [(i, (i + 1) % n) for i in range(n)]
    acc, block = x, x
    for _ in range(n - 1):
        block = lax.ppermute(block, axis_name, right)
        acc = acc + block
    return acc[:c]  # chunk 0 on every device: axis_index forgotten
""",
        status="failed",
        check="values",
        says=("device 0",),
    ),
    Mistake(
        id="all-reduce-mean",
        module=L02,
        exercise="ring_all_reduce",
        code="""
def ring_all_reduce(x, axis_name):
    n = lax.axis_size(axis_name)
    return ring_all_gather(ring_reduce_scatter(x, axis_name), axis_name) / n  # a mean
""",
        status="failed",
        check="values",
        says=("too small", "mean"),
    ),
    Mistake(
        id="returns-none",
        module=L02,
        exercise="ring_all_gather",
        code="""
def ring_all_gather(x, axis_name):
    lax.ppermute(x, axis_name, [(0, 0)])
""",
        status="failed",
        check="returns",
        says=("returned None", "return"),
    ),
    Mistake(
        id="returns-list",
        module=L02,
        exercise="ring_all_gather",
        code="""
def ring_all_gather(x, axis_name):
    return [x] * lax.axis_size(axis_name)
""",
        status="failed",
        check="returns",
        says=("list",),
    ),
    Mistake(
        id="wrong-shape",
        module=L02,
        exercise="ring_reduce_scatter",
        code="""
def ring_reduce_scatter(x, axis_name):
    return x  # forgot to scatter
""",
        status="failed",
        check="returns",
        says=("shape",),
    ),
    Mistake(
        id="wrong-dtype",
        module=L02,
        exercise="ring_all_reduce",
        code="""
_correct_all_reduce = ring_all_reduce

def ring_all_reduce(x, axis_name):
    return _correct_all_reduce(x, axis_name).astype(jnp.float32)
""",
        status="failed",
        check="returns",
        says=("dtype",),
    ),
    Mistake(
        id="nan",
        module=L02,
        exercise="ring_all_reduce",
        code="""
_correct_all_reduce = ring_all_reduce

def ring_all_reduce(x, axis_name):
    total = _correct_all_reduce(x, axis_name)
    return total * jnp.log(total - total - 1)  # log of a negative number
""",
        status="failed",
        check="values",
        says=("NaN",),
    ),
    Mistake(
        id="raises",
        module=L02,
        exercise="ring_all_gather",
        code="""
def ring_all_gather(x, axis_name):
    return helper(x)

def helper(x):
    raise ValueError("my own bug")
""",
        status="error",
        check=None,
        says=("my own bug", "helper"),
    ),
    Mistake(
        id="direct-sends-to-i-plus-s",
        module=L02,
        exercise="ring_all_gather",
        code="""
def ring_all_gather(x, axis_name):
    n = lax.axis_size(axis_name)
    me = lax.axis_index(axis_name)
    b = x.shape[0]
    out = lax.pcast(jnp.zeros((n * b, *x.shape[1:]), x.dtype), axis_name, to="varying")
    out = lax.dynamic_update_slice_in_dim(out, x, me * b, axis=0)
    for s in range(1, n):  # step s: my own block straight to device i + s
        got = lax.ppermute(x, axis_name, [(i, (i + s) % n) for i in range(n)])
        out = lax.dynamic_update_slice_in_dim(out, got, ((me - s) % n) * b, axis=0)
    return out
""",
        status="failed",
        check="ring",
        says=("send past the neighbours", "crosses s links", "Your permutes send i → i + 2"),
    ),
    Mistake(  # issue 45 audit: a butterfly's sends are not "straight to device i + s"
        id="all-reduce-butterfly-whole-arrays",
        module=L02,
        exercise="ring_all_reduce",
        patch=(
            (
                "    return ring_all_gather(ring_reduce_scatter(x, axis_name), axis_name)",
                "    n = lax.axis_size(axis_name)\n"
                "    k = 1\n"
                "    while k < n:  # recursive doubling: add the partner's partial sum\n"
                "        x = x + lax.ppermute(x, axis_name, [(i, i ^ k) for i in range(n) if i ^ k < n])\n"
                "        k *= 2\n"
                "    return x",
            ),
        ),
        status="failed",
        check="ring",
        says=("i XOR 2, a butterfly",),
        never=("optimum", "straight to device"),
    ),
    Mistake(
        id="reduce-scatter-sums-in-bfloat16",
        module=L02,
        exercise="ring_reduce_scatter",
        patch=(
            (
                "return acc + chunk((me - s - 2) % n)",
                "return (acc.astype(jnp.bfloat16) + chunk((me - s - 2) % n).astype(jnp.bfloat16)).astype(x.dtype)",
            ),
        ),
        status="failed",
        check="precision",
        says=("computes in bfloat16", "Keep the inputs' dtype"),
    ),
    Mistake(  # drafts/heldback6: a line, not a ring; device 0 receives zeros, which travel on
        id="l02-gather-line-without-the-wrap-pair",
        module="l02_collectives",
        exercise="ring_all_gather",
        status="failed",
        check="values",
        says=("nothing is sent to device 0", "the last one's to the first"),
        patch=(
            (
                "        block = lax.ppermute(block, axis_name, _ring_right(n))\n"
                "        owner = (me - s - 1) % n",
                "        block = lax.ppermute(block, axis_name, [(i, i + 1) for i in range(n - 1)])\n"
                "        owner = (me - s - 1) % n",
            ),
        ),
    ),
    Mistake(  # its neighbour: the whole ring, a slot never written (zeros there): not the pairs
        id="l02-gather-written-one-slot-late",
        module="l02_collectives",
        exercise="ring_all_gather",
        status="failed",
        check="values",
        says=(),
        never=("nothing is sent", "A ring's pairs"),
        patch=(("owner = (me - s - 1) % n  # the device", "owner = (me - s) % n  # the device"),),
    ),
    Mistake(  # drafts/heldback6: the chunk cut along the last axis; no hint before
        id="l02-reduce-scatter-chunks-cut-on-the-last-axis",
        module="l02_collectives",
        exercise="ring_reduce_scatter",
        status="failed",
        check=None,
        says=("cut to 1 along axis 1", "where axis 0 belongs"),
        patch=(
            (
                "return lax.dynamic_slice_in_dim(x, k * c, c, axis=0)",
                "return lax.dynamic_slice_in_dim(x, k * c, c, axis=-1)",
            ),
        ),
    ),
    Mistake(  # drafts/heldback7: the own block never written: "exactly 0" before
        id="l02-gather-own-block-never-written",
        module="l02_collectives",
        exercise="ring_all_gather",
        status="failed",
        check="values",
        says=("own block",),
        patch=(("    out = lax.dynamic_update_slice_in_dim(out, x, me * b, axis=0)\n\n", "\n"),),
    ),
    Mistake(  # drafts/heldback7: the buffer tiled along the last axis; message only before
        id="l02-gather-buffer-tiled-on-the-last-axis",
        module="l02_collectives",
        exercise="ring_all_gather",
        status="failed",
        check="returns",
        says=("4 times as long along axis 1", "where axis 0 belongs"),
        patch=(
            (
                "    out = jnp.zeros((n * b, *x.shape[1:]), x.dtype)\n"
                '    out = lax.pcast(out, axis_name, to="varying")  # the buffer differs per device\n',
                "    out = jnp.zeros_like(jnp.tile(x, n))  # N copies' room, x's dtype, varying\n",
            ),
        ),
    ),
]
