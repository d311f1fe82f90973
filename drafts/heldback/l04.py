"""Held-back wrong programs for lesson 4 (see drafts/heldback/__init__.py)."""

from __future__ import annotations

from drafts.heldback import Held

M = "l04_sharded_matmul"

HELD: list[Held] = [
    Held(
        id="hb-l04-allreduce-pmean",
        module=M,
        exercise="matmul_allreduce",
        what=(
            "Adds the partial products with lax.pmean instead of lax.psum: C's terms must be "
            "summed, and the mean is N times too small."
        ),
        cause=("pmean", "mean", "average", "n times too small"),
        kind="collective",
        patch=(
            (
                'return lax.psum(a_blk @ b_blk, "x")',
                'return lax.pmean(a_blk @ b_blk, "x")',
            ),
        ),
    ),
    Held(
        id="hb-l04-reducescatter-scatters-rows",
        module=M,
        exercise="matmul_reducescatter",
        what=(
            "Calls psum_scatter with scatter_dimension=0, so each device keeps a block of C's "
            "rows, while out_specs P(None, 'x') assembles the blocks as columns."
        ),
        cause=("scatter_dimension", "columns", "dimension 1", "rows"),
        kind="axis",
        patch=(
            (
                'return lax.psum_scatter(a_blk @ b_blk, "x", scatter_dimension=1, tiled=True)',
                'return lax.psum_scatter(a_blk @ b_blk, "x", scatter_dimension=0, tiled=True)',
            ),
        ),
    ),
    Held(
        id="hb-l04-conflict-reshapes-stacked-gather",
        module=M,
        exercise="matmul_conflict",
        what=(
            "Gathers B untiled, which stacks the blocks as [N, J, K/N], and reshapes that to "
            "[J, K]: the shape fits but the columns are scrambled, not placed side by side."
        ),
        cause=("reshape", "stack", "tiled", "axis=1"),
        kind="layout",
        patch=(
            (
                'b_full = lax.all_gather(b_blk, "x", axis=1, tiled=True)',
                'b_full = lax.all_gather(b_blk, "x").reshape(b_blk.shape[0], -1)  # [J, K]',
            ),
        ),
    ),
    Held(
        id="hb-l04-2d-reduce-scatter-over-y",
        module=M,
        exercise="matmul_2d",
        what=(
            "Saves bytes with a psum_scatter over 'y' and returns C[I_X, K_Y]: the values add "
            "up, but C must come back whole along K, so an all-reduce over 'y' is needed."
        ),
        cause=("reduce-scatter", "psum_scatter", "sharded over 'y'", "p('x', 'y')"),
        kind="collective",
        code="""
from jax.sharding import PartitionSpec as P


def matmul_2d(a, b, mesh):
    def body(a_blk, b_blk):
        return lax.psum_scatter(a_blk @ b_blk, "y", scatter_dimension=1, tiled=True)

    return jax.shard_map(
        body, mesh=mesh, in_specs=(P("x", "y"), P("y", None)), out_specs=P("x", "y")
    )(a, b)
""",
    ),
    Held(
        id="hb-l04-local-out-specs-columns",
        module=M,
        exercise="matmul_local",
        what=(
            "Writes out_specs=P(None, 'x') for C[I_X, K], reading the spec as 'the second "
            "entry is the mesh axis': each device's row block is placed as a column block."
        ),
        cause=("out_specs", "p('x', none)", "rows", "first dimension"),
        kind="layout",
        patch=(
            (
                'in_specs=(P("x", None), P()), out_specs=P("x", None))(',
                'in_specs=(P("x", None), P()), out_specs=P(None, "x"))(',
            ),
        ),
    ),
]
