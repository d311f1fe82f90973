"""Held-back set 6, lesson 2 (see drafts/heldback6/__init__.py)."""

from __future__ import annotations

from drafts.heldback import Held

M = "l02_collectives"

HELD: list[Held] = [
    Held(
        id="hb6-l02-gather-line-without-the-wrap-pair",
        module=M,
        exercise="ring_all_gather",
        what=(
            "The learner builds the permutation as a line, [(i, i + 1) for i in range(N − 1)], "
            "leaving out the pair (N − 1, 0) that closes the ring: device 0 receives zeros at "
            "every step, and the zeros travel on, so most slots of most devices come back zero."
        ),
        cause=("wrap", "(n − 1, 0)", "closes the ring", "mod n", "receives zeros", "line"),
        kind="collective",
        code="""
def ring_all_gather(x, axis_name):
    n = lax.axis_size(axis_name)
    me = lax.axis_index(axis_name)
    b = x.shape[0]
    # every device hands its block on to the next one
    pairs = [(i, i + 1) for i in range(n - 1)]
    out = jnp.zeros((n * b, *x.shape[1:]), x.dtype)
    out = lax.pcast(out, axis_name, to="varying")
    out = lax.dynamic_update_slice_in_dim(out, x, me * b, axis=0)

    def step(s, carry):
        out, block = carry
        block = lax.ppermute(block, axis_name, pairs)
        owner = (me - s - 1) % n  # the device this block started on
        return lax.dynamic_update_slice_in_dim(out, block, owner * b, axis=0), block

    out, _ = lax.fori_loop(0, n - 1, step, (out, x))
    return out
""",
    ),
    Held(
        id="hb6-l02-reduce-scatter-chunks-cut-on-the-last-axis",
        module=M,
        exercise="ring_reduce_scatter",
        what=(
            "The learner cuts the chunks with dynamic_slice_in_dim(..., axis=-1), along the last "
            "dimension, while the chunk length c comes from dim 0: for a 1-D x it is the same, "
            "but for x [N·c, d] each 'chunk' is a window of columns of every row (clamped at the "
            "edge), so the sums and the result shape are wrong."
        ),
        cause=("axis=0", "dim 0", "last axis", "columns", "leading dimension"),
        kind="axis",
        patch=(
            (
                "return lax.dynamic_slice_in_dim(x, k * c, c, axis=0)",
                "return lax.dynamic_slice_in_dim(x, k * c, c, axis=-1)",
            ),
        ),
    ),
    Held(
        id="hb6-l02-reduce-scatter-returns-float32",
        module=M,
        exercise="ring_reduce_scatter",
        what=(
            "To add the partial sums accurately the learner casts the running sum to float32 and "
            "returns it as it is, never casting back: for a bfloat16 (or float16) x the result "
            "is float32, not x's dtype (float32 inputs are unaffected)."
        ),
        cause=("dtype", "float32", "cast back", "x.dtype", "bfloat16"),
        kind="dtype",
        patch=(
            (
                "    acc = chunk((me - 1) % n)\n",
                "    acc = chunk((me - 1) % n).astype(jnp.float32)  # add up in float32\n",
            ),
        ),
    ),
]
