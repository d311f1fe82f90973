"""Held-back set 7, lesson 2 (see drafts/heldback7/__init__.py)."""

from __future__ import annotations

from drafts.heldback import Held

M = "l02_collectives"

HELD: list[Held] = [
    Held(
        id="hb7-l02-gather-own-block-never-written",
        module=M,
        exercise="ring_all_gather",
        what=(
            "The learner starts the output buffer from zeros and only writes the blocks that "
            "arrive round the ring, forgetting to put its own block at slot i first: every "
            "other slot is right, but each device's own slot comes back zero."
        ),
        cause=("own block", "slot i", "its own", "axis_index", "before the loop"),
        kind="state",
        patch=(
            (
                "    out = lax.dynamic_update_slice_in_dim(out, x, me * b, axis=0)\n\n",
                "\n",
            ),
        ),
    ),
    Held(
        id="hb7-l02-gather-buffer-tiled-on-the-last-axis",
        module=M,
        exercise="ring_all_gather",
        what=(
            "The learner makes the output buffer in one line as jnp.zeros_like(jnp.tile(x, n)), "
            "which has x's dtype and type; but jnp.tile(x, n) repeats the last axis, so for a "
            "2-D block [b, d] the buffer is [b, N·d], not [N·b, d]: the offsets i·b on dim 0 "
            "are clamped to 0 and the result has the wrong shape (1-D blocks are unaffected)."
        ),
        cause=("tile", "last axis", "dim 0", "(n, 1)", "[n·b"),
        kind="shape",
        patch=(
            (
                "    out = jnp.zeros((n * b, *x.shape[1:]), x.dtype)\n"
                '    out = lax.pcast(out, axis_name, to="varying")  # the buffer differs per device\n',
                "    out = jnp.zeros_like(jnp.tile(x, n))  # N copies' room, x's dtype, varying\n",
            ),
        ),
    ),
    Held(
        id="hb7-l02-reduce-scatter-own-chunk-then-a-fix-up-hop",
        module=M,
        exercise="ring_reduce_scatter",
        what=(
            "The learner starts each running sum from its own chunk i, sees that the finished "
            "sums land one device too far (device i holds chunk i + 1), and repairs it with one "
            "more ppermute to the right: the values are right, but the ring takes N sends of a "
            "chunk where N − 1 are needed (and at N = 1 one send where none is)."
        ),
        cause=("n − 1", "i − 1", "one send too many", "one step too many", "extra"),
        kind="collective",
        code="""
def ring_reduce_scatter(x, axis_name):
    n = lax.axis_size(axis_name)
    me = lax.axis_index(axis_name)
    c = x.shape[0] // n

    def chunk(k):
        return lax.dynamic_slice_in_dim(x, k * c, c, axis=0)

    acc = chunk(me)  # start with my own chunk

    def step(s, acc):
        acc = lax.ppermute(acc, axis_name, _ring_right(n))
        return acc + chunk((me - s - 1) % n)

    acc = lax.fori_loop(0, n - 1, step, acc)
    # device i now holds chunk i + 1: one more hop puts every sum where it belongs
    return lax.ppermute(acc, axis_name, _ring_right(n))
""",
    ),
]
