"""Held-back set 7, lesson 4 (see drafts/heldback7/__init__.py)."""

from __future__ import annotations

from drafts.heldback import Held

M = "l04_sharded_matmul"

HELD: list[Held] = [
    Held(
        id="hb7-l04-allgather-product-left-in-float32",
        module=M,
        exercise="matmul_allgather",
        what=(
            "Used to mixed-precision matmuls, the learner multiplies the gathered A by B with "
            "preferred_element_type=float32 and returns that product as it is: for bfloat16 "
            "inputs C comes back float32 instead of the inputs' dtype."
        ),
        cause=("dtype", "float32", "bfloat16", "preferred_element_type", "cast back"),
        kind="dtype",
        patch=(
            ("from jax import lax\n", "import jax.numpy as jnp\nfrom jax import lax\n"),
            (
                "        return a_full @ b_full\n",
                "        return jnp.matmul(a_full, b_full, preferred_element_type=jnp.float32)\n",
            ),
        ),
    ),
    Held(
        id="hb7-l04-reducescatter-own-columns-then-summed",
        module=M,
        exercise="matmul_reducescatter",
        what=(
            "To compute only the columns it keeps, each device multiplies its A block by its own "
            "column block of B's rows and psums the products: but device e's term is for "
            "column block e, so the psum adds terms of N different column blocks and device d "
            "never receives the other devices' terms for its own columns."
        ),
        cause=("column block", "different columns", "every column", "psum_scatter", "own columns"),
        kind="index",
        code="""
def matmul_reducescatter(a: jax.Array, b: jax.Array, mesh: Mesh) -> jax.Array:
    def body(a_blk, b_blk):
        n = lax.axis_size("x")
        me = lax.axis_index("x")
        kc = b_blk.shape[1] // n
        mine = lax.dynamic_slice_in_dim(b_blk, me * kc, kc, axis=1)  # only the columns I keep
        return lax.psum(a_blk @ mine, "x")

    return jax.shard_map(
        body, mesh=mesh, in_specs=(P(None, "x"), P("x", None)), out_specs=P(None, "x")
    )(a, b)
""",
    ),
    Held(
        id="hb7-l04-2d-result-gathered-whole",
        module=M,
        exercise="matmul_2d",
        what=(
            "After the psum over 'y' the learner also all-gathers the row blocks over 'x' and "
            "returns C replicated (out_specs=P()): the values are right, but C should stay "
            "split by rows, P('x', None), and the extra all-gather moves (X − 1)/X of C."
        ),
        cause=("p('x', none)", "rows stay split", "all-gather", "replicated", "out_specs"),
        kind="layout",
        code="""
def matmul_2d(a: jax.Array, b: jax.Array, mesh: Mesh) -> jax.Array:
    def body(a_blk, b_blk):
        rows = lax.psum(a_blk @ b_blk, "y")
        return lax.all_gather(rows, "x", axis=0, tiled=True, to="invarying")

    return jax.shard_map(body, mesh=mesh, in_specs=(P("x", "y"), P("y", None)), out_specs=P())(
        a, b
    )
""",
    ),
]
