"""Held-back set 6, lesson 4 (see drafts/heldback6/__init__.py)."""

from __future__ import annotations

from drafts.heldback import Held

M = "l04_sharded_matmul"

HELD: list[Held] = [
    Held(
        id="hb6-l04-2d-a-spec-axes-swapped",
        module=M,
        exercise="matmul_2d",
        what=(
            "The learner writes A's in_spec as P('y', 'x'), rows over 'y' and the contracting dim "
            "over 'x', while B's rows stay on 'y': A comes placed P('x', 'y') as the docstring "
            "says, so shard_map refuses it on every 2-D mesh (laid out to match, each device "
            "would multiply A's J-block of its x-index by B's of its y-index)."
        ),
        cause=("P('x', 'y')", "in_specs", "swapped", "contracting", "same axis"),
        kind="axis",
        patch=(
            (
                'in_specs=(P("x", "y"), P("y", None)), out_specs=P("x", None)',
                'in_specs=(P("y", "x"), P("y", None)), out_specs=P("x", None)',
            ),
        ),
    ),
    Held(
        id="hb6-l04-local-gathers-a-then-keeps-its-rows",
        module=M,
        exercise="matmul_local",
        what=(
            "The learner all-gathers A's rows, multiplies the whole A by B on every device, and "
            "keeps only its own rows of C: the values are right, but the case needs no "
            "communication at all, and this one all-gathers A (and does N times the FLOPs)."
        ),
        cause=("no communication", "all-gather", "all_gather", "nothing from anyone", "own rows"),
        kind="collective",
        code="""
def matmul_local(a, b, mesh):
    def body(a_blk, b_full):
        # multiply the whole A, then keep the rows of C that belong here
        a_full = lax.all_gather(a_blk, "x", axis=0, tiled=True)
        c_full = a_full @ b_full
        rows = a_blk.shape[0]
        return lax.dynamic_slice_in_dim(c_full, lax.axis_index("x") * rows, rows, axis=0)

    return jax.shard_map(body, mesh=mesh, in_specs=(P("x", None), P()), out_specs=P("x", None))(
        a, b
    )
""",
    ),
    Held(
        id="hb6-l04-allgather-result-tiled-over-x",
        module=M,
        exercise="matmul_allgather",
        what=(
            "After gathering A every device holds the whole C, and the learner writes "
            "out_specs=P('x', None) as for the local case: shard_map stacks the N copies, and "
            "the result is [N·I, K] instead of a replicated C[I, K]."
        ),
        cause=("out_specs", "P()", "replicated", "N copies", "shape"),
        kind="layout",
        patch=(
            (
                'return jax.shard_map(body, mesh=mesh, in_specs=(P(None, "x"), P()), out_specs=P())(a, b)',
                'return jax.shard_map(\n        body, mesh=mesh, in_specs=(P(None, "x"), P()), out_specs=P("x", None)\n    )(a, b)',
            ),
        ),
    ),
]
