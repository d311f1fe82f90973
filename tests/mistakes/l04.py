"""Realistic wrong implementations for lesson 4 (see tests/mistakes/__init__.py)."""

from __future__ import annotations

from tests.mistakes import Mistake

L04 = "l04_sharded_matmul"
SPECS = "from jax.sharding import PartitionSpec as P\n"

GATHER_BOTH = (
    SPECS
    + """
def matmul_allreduce(a, b, mesh):
    def body(a_blk, b_blk):
        a_full = lax.all_gather(a_blk, "x", axis=1, tiled=True, to="invarying")
        b_full = lax.all_gather(b_blk, "x", axis=0, tiled=True, to="invarying")
        return a_full @ b_full

    return jax.shard_map(
        body, mesh=mesh, in_specs=(P(None, "x"), P("x", None)), out_specs=P()
    )(a, b)
"""
)
"""All-reduce case built by gathering both operands: the wrong kind, and (at the
shapes drawn, never a tie) more bytes too."""

MISTAKES: list[Mistake] = [
    Mistake(
        id="allreduce-gathers-both-operands",
        module=L04,
        exercise="matmul_allreduce",
        code=GATHER_BOTH,
        status="failed",
        check="collectives",
        says=("all-gather", "One all-reduce is enough"),
    ),
    Mistake(
        id="allreduce-gathers-both-operands-costs-more",
        module=L04,
        exercise="matmul_allreduce",
        code=GATHER_BOTH,
        status="failed",
        check="bytes",
        says=("bytes sent per device; the optimum for this case is",),
    ),
    Mistake(
        id="conflict-gathers-a-instead-of-b",
        module=L04,
        exercise="matmul_conflict",
        code=SPECS
        + """
def matmul_conflict(a, b, mesh):
    def body(a_blk, b_blk):
        a_full = lax.all_gather(a_blk, "x", axis=0, tiled=True)
        c_cols = lax.all_gather(a_full @ b_blk, "x", axis=1, tiled=True)  # [I, K]
        rows = a_blk.shape[0]
        return lax.dynamic_slice_in_dim(c_cols, lax.axis_index("x") * rows, rows, axis=0)

    return jax.shard_map(
        body, mesh=mesh, in_specs=(P("x", None), P(None, "x")), out_specs=P("x", None)
    )(a, b)
""",
        status="failed",
        check="bytes",
        says=("bytes sent per device; the optimum for this case is",),
    ),
    Mistake(
        id="one-liner-leaves-the-plan-to-xla",
        module=L04,
        exercise="matmul_conflict",
        code="""
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P


def matmul_conflict(a, b, mesh):
    return jnp.matmul(a, b, out_sharding=NamedSharding(mesh, P("x", None)))
""",
        status="failed",
        check="shard_map",
        says=("no jax.shard_map", "XLA's partitioner chose", "choose the collectives"),
    ),
    Mistake(
        id="allgather-one-liner-leaves-the-plan-to-xla",
        module=L04,
        exercise="matmul_allgather",
        code="""
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P


def matmul_allgather(a, b, mesh):
    return jnp.matmul(a, b, out_sharding=NamedSharding(mesh, P()))
""",
        status="failed",
        check="shard_map",
        says=("no jax.shard_map", "leaves the choice to XLA"),
    ),
    Mistake(
        id="reducescatter-psum-then-slice",
        module=L04,
        exercise="matmul_reducescatter",
        code=SPECS
        + """
def matmul_reducescatter(a, b, mesh):
    def body(a_blk, b_blk):
        total = lax.psum(a_blk @ b_blk, "x")
        k = total.shape[1] // lax.axis_size("x")
        return lax.dynamic_slice_in_dim(total, lax.axis_index("x") * k, k, axis=1)

    return jax.shard_map(
        body, mesh=mesh, in_specs=(P(None, "x"), P("x", None)), out_specs=P(None, "x")
    )(a, b)
""",
        status="failed",
        check="collectives",
        says=("all-reduce", "psum_scatter", "half the bytes"),
    ),
    Mistake(
        id="reducescatter-result-replicated",
        module=L04,
        exercise="matmul_reducescatter",
        status="failed",
        check="sharding",
        says=("replicated", "stay sharded"),
        patch=(
            (
                'return lax.psum_scatter(a_blk @ b_blk, "x", scatter_dimension=1, tiled=True)',
                'return lax.psum(a_blk @ b_blk, "x")',
            ),
            (
                'in_specs=(P(None, "x"), P("x", None)), out_specs=P(None, "x")\n    )(a, b)\n\n\n'
                "def matmul_conflict",
                'in_specs=(P(None, "x"), P("x", None)), out_specs=P()\n    )(a, b)\n\n\n'
                "def matmul_conflict",
            ),
        ),  # fmt: skip
    ),
    Mistake(
        id="allreduce-missing-psum-unchecked",
        module=L04,
        exercise="matmul_allreduce",
        code=SPECS
        + """
def matmul_allreduce(a, b, mesh):
    def body(a_blk, b_blk):
        return a_blk @ b_blk  # the psum is missing; check_vma=False keeps quiet

    return jax.shard_map(
        body, mesh=mesh, in_specs=(P(None, "x"), P("x", None)), out_specs=P(),
        check_vma=False,
    )(a, b)
""",
        status="failed",
        check="values",
        says=("own partial sum", "psum", "missing"),
    ),
    Mistake(
        id="2d-psum-over-wrong-axis",
        module=L04,
        exercise="matmul_2d",
        status="error",
        check=None,
        says=("'y'", "psum over 'y', not 'x'"),
        patch=(('return lax.psum(a_blk @ b_blk, "y")', 'return lax.psum(a_blk @ b_blk, "x")'),),
    ),
    Mistake(
        id="2d-psum-over-wrong-axis-unchecked",
        module=L04,
        exercise="matmul_2d",
        code=SPECS
        + """
def matmul_2d(a, b, mesh):
    def body(a_blk, b_blk):
        return lax.psum(a_blk @ b_blk, "x")

    return jax.shard_map(
        body, mesh=mesh, in_specs=(P("x", "y"), P("y", None)), out_specs=P("x", None),
        check_vma=False,
    )(a, b)
""",
        status="failed",
        check="values",
        says=("psum over 'x' instead of 'y'",),
    ),
    Mistake(
        id="allgather-sums-partials-instead",
        module=L04,
        exercise="matmul_allgather",
        code=SPECS
        + """
def matmul_allgather(a, b, mesh):
    def body(a_blk, b_full):
        j = a_blk.shape[1]
        rows = lax.dynamic_slice_in_dim(b_full, lax.axis_index("x") * j, j, axis=0)
        return lax.psum(a_blk @ rows, "x")

    return jax.shard_map(body, mesh=mesh, in_specs=(P(None, "x"), P()), out_specs=P())(a, b)
""",
        status="failed",
        check="collectives",
        says=("psum", "all-gather of A"),
    ),
    Mistake(
        id="local-returns-replicated",
        module=L04,
        exercise="matmul_local",
        code=SPECS
        + """
def matmul_local(a, b, mesh):
    def body(a_blk, b_full):
        return lax.all_gather(a_blk @ b_full, "x", tiled=True, to="invarying")

    return jax.shard_map(body, mesh=mesh, in_specs=(P("x", None), P()), out_specs=P())(a, b)
""",
        status="failed",
        check="collectives",
        says=("need nothing from anyone",),
    ),
    Mistake(
        id="conflict-gathers-a-and-b",
        module=L04,
        exercise="matmul_conflict",
        code=SPECS
        + """
def matmul_conflict(a, b, mesh):
    def body(a_blk, b_blk):
        a_full = lax.all_gather(a_blk, "x", axis=0, tiled=True)
        b_full = lax.all_gather(b_blk, "x", axis=1, tiled=True)
        rows = a_full.shape[0] // lax.axis_size("x")
        c = a_full @ b_full
        return lax.dynamic_slice_in_dim(c, lax.axis_index("x") * rows, rows, axis=0)

    return jax.shard_map(
        body, mesh=mesh, in_specs=(P("x", None), P(None, "x")), out_specs=P("x", None)
    )(a, b)
""",
        status="failed",
        check="bytes",
        says=("optimum",),
    ),
    Mistake(
        id="plain-matmul-on-explicit-mesh",
        module=L04,
        exercise="matmul_allreduce",
        code="""
def matmul_allreduce(a, b, mesh):
    return a @ b
""",
        status="error",
        check=None,
        says=("partial sum", "jax.shard_map"),
    ),
    Mistake(
        id="allreduce-float32-result-on-bfloat16",
        module=L04,
        exercise="matmul_allreduce",
        code=SPECS
        + """
def matmul_allreduce(a, b, mesh):
    def body(a_blk, b_blk):
        return lax.psum(jnp.dot(a_blk, b_blk, preferred_element_type=jnp.float32), "x")

    return jax.shard_map(
        body, mesh=mesh, in_specs=(P(None, "x"), P("x", None)), out_specs=P()
    )(a, b)
""",
        status="failed",
        check="precision",
        says=("send float32 where the inputs are bfloat16",),
    ),
    Mistake(
        id="allreduce-bfloat16-inside-float32",
        module=L04,
        exercise="matmul_allreduce",
        code=SPECS
        + """
def matmul_allreduce(a, b, mesh):
    def body(a_blk, b_blk):
        low = a_blk.astype(jnp.bfloat16) @ b_blk.astype(jnp.bfloat16)  # "faster"
        return lax.psum(low.astype(a_blk.dtype), "x")

    return jax.shard_map(
        body, mesh=mesh, in_specs=(P(None, "x"), P("x", None)), out_specs=P()
    )(a, b)
""",
        status="failed",
        check="precision",
        says=("computes in bfloat16", "Keep the inputs' dtype"),
    ),
    Mistake(
        id="2d-psum-over-both-axes",
        module=L04,
        exercise="matmul_2d",
        status="failed",
        check="values",
        says=("psum over ('x', 'y')", "psum over 'y' alone"),
        patch=(
            ('return lax.psum(a_blk @ b_blk, "y")', 'return lax.psum(a_blk @ b_blk, ("x", "y"))'),
        ),
    ),
    Mistake(  # drafts/heldback7: C gathered over 'x' at the end, told "you gathered operands"
        id="l04-2d-result-gathered-whole",
        module="l04_sharded_matmul",
        exercise="matmul_2d",
        status="failed",
        check="collectives",
        says=("the result gathered", "Or an operand of that shape was gathered"),
        code="""
def matmul_2d(a: jax.Array, b: jax.Array, mesh: Mesh) -> jax.Array:
    def body(a_blk, b_blk):
        rows = lax.psum(a_blk @ b_blk, "y")
        return lax.all_gather(rows, "x", axis=0, tiled=True, to="invarying")

    return jax.shard_map(body, mesh=mesh, in_specs=(P("x", "y"), P("y", None)), out_specs=P())(a, b)
""",
    ),
    Mistake(  # drafts/heldback7: the float32 product returned as it is; the hint named a constant
        id="l04-allgather-product-left-in-float32",
        module="l04_sharded_matmul",
        exercise="matmul_allgather",
        status="failed",
        check="values",
        says=("A matrix product of your program returns float32",),
        never=("jnp.zeros without dtype",),
        patch=(
            ("from jax import lax\n", "import jax.numpy as jnp\nfrom jax import lax\n"),
            (
                "        return a_full @ b_full\n",
                "        return jnp.matmul(a_full, b_full, preferred_element_type=jnp.float32)\n",
            ),
        ),
    ),
    Mistake(  # its neighbour: a float32 constant added to the bfloat16 product (no wide product)
        id="l04-allgather-product-plus-float32-zeros",
        module="l04_sharded_matmul",
        exercise="matmul_allgather",
        status="failed",
        check="values",
        says=("converts a bfloat16 value to float32 (an astype, or a float32 array or constant",),
        never=("matrix product",),
        patch=(
            ("from jax import lax\n", "import jax.numpy as jnp\nfrom jax import lax\n"),
            (
                "        return a_full @ b_full\n",
                "        return a_full @ b_full + jnp.zeros(b_full.shape[-1])\n",
            ),
        ),
    ),
    Mistake(  # audit 67b: C meant whole (allreduce case), operands gathered: no "result gathered"
        id="l04-allreduce-gathers-both-operands-whole",
        module="l04_sharded_matmul",
        exercise="matmul_allreduce",
        status="failed",
        check="collectives",
        says=("You gathered operands",),
        never=("the result gathered",),
        patch=(
            (
                '        return lax.psum(a_blk @ b_blk, "x")',
                '        a = lax.all_gather(a_blk, "x", axis=1, tiled=True, to="invarying")\n'
                '        bb = lax.all_gather(b_blk, "x", axis=0, tiled=True, to="invarying")\n'
                "        return a @ bb",
            ),
        ),
    ),
]
