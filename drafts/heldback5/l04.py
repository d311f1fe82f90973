"""Held-back set 5, lesson 4 (see drafts/heldback5/__init__.py)."""

from __future__ import annotations

from drafts.heldback import Held

M = "l04_sharded_matmul"

HELD: list[Held] = [
    Held(
        id="hb5-l04-2d-all-reduce-as-scatter-then-gather",
        module=M,
        exercise="matmul_2d",
        what=(
            "Having learnt that an all-reduce is a reduce-scatter followed by an all-gather, the "
            "learner writes the sum over 'y' as psum_scatter then all_gather of the [I/X, K] "
            "partial: the values are right, but the program holds two collectives, a "
            "reduce-scatter and an all-gather, where the case is one all-reduce."
        ),
        cause=("all-reduce", "psum", "one collective", "two collectives", "reduce-scatter and"),
        kind="collective",
        patch=(
            (
                'return lax.psum(a_blk @ b_blk, "y")',
                'part = lax.psum_scatter(a_blk @ b_blk, "y", scatter_dimension=1, tiled=True)\n'
                '        return lax.all_gather(part, "y", axis=1, tiled=True, to="invarying")',
            ),
        ),
    ),
    Held(
        id="hb5-l04-conflict-gathers-a-returns-columns",
        module=M,
        exercise="matmul_conflict",
        what=(
            "The learner resolves the conflict by gathering A's rows instead of B's columns and "
            "returns C split like B, C[I, K_X] (out_specs P(None, 'x')): the values are right, "
            "but C must keep A's row split, C[I_X, K], and gathering A moves I·J where B's "
            "J·K was asked for."
        ),
        cause=("keep a's", "rows", "p('x', none)", "gather b", "never a"),
        kind="layout",
        patch=(
            (
                '        b_full = lax.all_gather(b_blk, "x", axis=1, tiled=True)\n'
                "        return a_blk @ b_full\n\n"
                "    return jax.shard_map(\n"
                '        body, mesh=mesh, in_specs=(P("x", None), P(None, "x")), out_specs=P("x", None)',
                '        a_full = lax.all_gather(a_blk, "x", axis=0, tiled=True)\n'
                "        return a_full @ b_blk  # C's columns k of B's block\n\n"
                "    return jax.shard_map(\n"
                '        body, mesh=mesh, in_specs=(P("x", None), P(None, "x")), out_specs=P(None, "x")',
            ),
        ),
    ),
    Held(
        id="hb5-l04-allreduce-by-lesson-2-ring",
        module=M,
        exercise="matmul_allreduce",
        what=(
            "Proud of lesson 2, the learner sums the partial products with its own ring of "
            "ppermutes (a reduce-scatter then an all-gather along C's rows) and, since the "
            "result is typed varying, turns check_vma off to return it with out_specs=P(): "
            "the values and the bytes are right, but the program holds 2(N − 1) "
            "collective-permutes where the case is one all-reduce (psum)."
        ),
        cause=("psum", "all-reduce", "collective-permute", "ppermute", "one collective"),
        kind="collective",
        code="""
from jax.sharding import PartitionSpec as P


def _ring_sum(x, axis):  # lesson 2's ring all-reduce: reduce-scatter, then all-gather
    n, me = lax.axis_size(axis), lax.axis_index(axis)
    c = x.shape[0] // n
    right = [(i, (i + 1) % n) for i in range(n)]

    def chunk(k):
        return lax.dynamic_slice_in_dim(x, k * c, c, axis=0)

    acc = chunk((me - 1) % n)
    for s in range(n - 1):
        acc = lax.ppermute(acc, axis, right) + chunk((me - s - 2) % n)
    out = lax.dynamic_update_slice_in_dim(jnp.zeros_like(x), acc, me * c, axis=0)
    block = acc
    for s in range(n - 1):
        block = lax.ppermute(block, axis, right)
        out = lax.dynamic_update_slice_in_dim(out, block, ((me - s - 1) % n) * c, axis=0)
    return out


def matmul_allreduce(a, b, mesh):
    def body(a_blk, b_blk):
        return _ring_sum(a_blk @ b_blk, "x")

    return jax.shard_map(
        body, mesh=mesh, in_specs=(P(None, "x"), P("x", None)), out_specs=P(), check_vma=False
    )(a, b)
""",
    ),
]
