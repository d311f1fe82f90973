"""Held-back set 8, lesson 2 (see drafts/heldback8/__init__.py)."""

from __future__ import annotations

from drafts.heldback import Held

M = "l02_collectives"

HELD: list[Held] = [
    Held(
        id="hb8-l02-gather-whole-buffer-passed-and-added",
        module=M,
        exercise="ring_all_gather",
        what="The learner passes its whole output buffer round the ring each step and adds what arrives to it, as if gathering were summing buffers: blocks reach a device by more than one path and are counted several times, and every step sends N blocks instead of one.",
        cause=("whole buffer", "one block", "adds", "counted twice", "double"),
        kind="collective",
        code="""
def ring_all_gather(x, axis_name):
    n = lax.axis_size(axis_name)
    me = lax.axis_index(axis_name)
    b = x.shape[0]
    out = jnp.zeros((n * b, *x.shape[1:]), x.dtype)
    out = lax.pcast(out, axis_name, to="varying")
    out = lax.dynamic_update_slice_in_dim(out, x, me * b, axis=0)

    def step(s, out):  # what the left neighbour has gathered so far joins mine
        return out + lax.ppermute(out, axis_name, _ring_right(n))

    return lax.fori_loop(0, n - 1, step, out)
""",
    ),
    Held(
        id="hb8-l02-reduce-scatter-chunk-by-python-slice",
        module=M,
        exercise="ring_reduce_scatter",
        what="The learner cuts chunk k with Python slicing, x[k * c:(k + 1) * c], as in NumPy; k depends on axis_index and the loop counter, so it is traced and the slice bounds are not static: the program fails to trace (lax.dynamic_slice_in_dim is needed).",
        cause=("dynamic_slice", "static", "traced", "python slic", "concrete"),
        kind="index",
        patch=(
            (
                "        return lax.dynamic_slice_in_dim(x, k * c, c, axis=0)\n",
                "        return x[k * c : (k + 1) * c]\n",
            ),
        ),
    ),
]
