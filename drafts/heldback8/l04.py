"""Held-back set 8, lesson 4 (see drafts/heldback8/__init__.py)."""

from __future__ import annotations

from drafts.heldback import Held

M = "l04_sharded_matmul"

HELD: list[Held] = [
    Held(
        id="hb8-l04-reducescatter-by-all-to-all",
        module=M,
        exercise="matmul_reducescatter",
        what="The learner sends each device its columns of the partial product with an all-to-all and adds the N pieces it receives; the values are right, but an all-to-all is not the reduce-scatter the case calls for and the sum is done after the transfer instead of in it.",
        cause=("all-to-all", "all_to_all", "psum_scatter", "reduce-scatter"),
        kind="collective",
        code="""
def matmul_reducescatter(a, b, mesh):
    def body(a_blk, b_blk):
        part = a_blk @ b_blk  # [I, K], partial over x
        n = lax.axis_size("x")
        pieces = lax.all_to_all(part, "x", split_axis=1, concat_axis=0, tiled=True)  # [N·I, K/N]
        return pieces.reshape(n, part.shape[0], -1).sum(axis=0)

    return jax.shard_map(
        body, mesh=mesh, in_specs=(P(None, "x"), P("x", None)), out_specs=P(None, "x")
    )(a, b)
""",
    ),
    Held(
        id="hb8-l04-allgather-result-kept-as-own-rows",
        module=M,
        exercise="matmul_allgather",
        what="To save memory the learner keeps only its own rows of C after the gather and returns them with out_specs P('x', None): the values and global shape are right, but the case asks for C replicated on every device.",
        cause=("replicated", "out_specs", "p()", "own rows", "sharding"),
        kind="layout",
        code="""
def matmul_allgather(a, b, mesh):
    def body(a_blk, b_full):
        a_full = lax.all_gather(a_blk, "x", axis=1, tiled=True, to="invarying")
        c = a_full @ b_full
        rows = c.shape[0] // lax.axis_size("x")
        return lax.dynamic_slice_in_dim(c, lax.axis_index("x") * rows, rows, axis=0)

    return jax.shard_map(body, mesh=mesh, in_specs=(P(None, "x"), P()), out_specs=P("x", None))(a, b)
""",
    ),
    Held(
        id="hb8-l04-2d-b-taken-whole-then-sliced",
        module=M,
        exercise="matmul_2d",
        what="The learner declares B replicated (in_specs P()) and slices its own rows inside by axis_index('y'); B arrives split P('y', None), so XLA all-gathers it before the body runs: an all-gather of B the case never needs.",
        cause=("in_specs", "p('y', none)", "all-gather of b", "replicated", "gathers b"),
        kind="layout",
        code="""
def matmul_2d(a, b, mesh):
    def body(a_blk, b_full):
        j = a_blk.shape[1]
        b_blk = lax.dynamic_slice_in_dim(b_full, lax.axis_index("y") * j, j, axis=0)
        return lax.psum(a_blk @ b_blk, "y")

    return jax.shard_map(body, mesh=mesh, in_specs=(P("x", "y"), P()), out_specs=P("x", None))(a, b)
""",
    ),
]
