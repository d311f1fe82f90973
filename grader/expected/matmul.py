"""The sharded matmul cases' grader side (lessons 3 and 4): what each case costs and
the grader's own optimal program for it.

Per case (:data:`grader.reference.matmul.CASES`, by name): the bytes one device must
send (the optimum: lesson 3's ``predict_bytes``), where its plan is the cheapest, and
the bytes of the wrong plan lesson 4 contrasts with it (built from the same collective
kinds where it can be, so that only bytes tell them apart). :func:`reference` is the
grader's own optimal program per case: lesson 3 measures the bytes its compiled form
sends (:func:`measure`), never ``solutions/``'s; it is also lesson 4's answer, which
is why all of this is hidden from the student's process (:mod:`grader.expected`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from grader.reference.matmul import ITEMSIZE, Case, place

Shape = tuple[int, ...]
Bytes = Callable[[int, int, int, Shape, int], int]
"""(I, J, K, mesh shape, itemsize) → bytes one device sends."""


def _ring(n: int, size: int) -> int:
    """(N − 1)/N of ``size`` bytes, exact for sizes that divide."""
    return (n - 1) * size // n


OPTIMUM: dict[str, Bytes] = {
    "local": lambda i, j, k, m, b: 0,
    # gathering A moves (N−1)/N·IJ; all-reducing partial C would move 2(N−1)/N·IK
    "allgather": lambda i, j, k, m, b: _ring(m[0], i * j * b),
    # all-reducing C moves 2(N−1)/N·IK; gathering both operands (N−1)/N·(IJ + JK)
    "allreduce": lambda i, j, k, m, b: 2 * _ring(m[0], i * k * b),
    "reducescatter": lambda i, j, k, m, b: _ring(m[0], i * k * b),
    # gathering B moves (N−1)/N·JK; gathering A and re-splitting C: (N−1)/N·(IJ + IK/N)
    "conflict": lambda i, j, k, m, b: _ring(m[0], j * k * b),
    # all-reduce over 'y' of the [I/X, K] partial: 2(Y−1)/Y·IK/X; gathering both over 'y':
    # (Y−1)/Y·(IJ/X + JK)
    "2d": lambda i, j, k, m, b: 2 * _ring(m[1], i // m[0] * k * b),
}
"""The bytes one device must send in the case's optimal plan."""

CHEAPEST: dict[str, Callable[[int, int, int, Shape], bool]] = {
    "local": lambda i, j, k, m: True,
    "allgather": lambda i, j, k, m: j <= 2 * k,
    "allreduce": lambda i, j, k, m: 2 * i * k <= i * j + j * k,
    "reducescatter": lambda i, j, k, m: i * k <= i * j + j * k,
    "conflict": lambda i, j, k, m: j * k * m[0] <= i * j * m[0] + i * k,
    "2d": lambda i, j, k, m: 2 * i * k <= i * j + j * k * m[0],
}
"""True where the case's plan moves no more than the alternatives named in the lesson."""

RIVAL: dict[str, Bytes] = {
    "allgather": lambda i, j, k, m, b: 2 * _ring(m[0], i * k * b),  # all-reduce partial C
    "allreduce": lambda i, j, k, m, b: (
        _ring(m[0], i * j * b) + _ring(m[0], j * k * b)
    ),  # gather both
    "reducescatter": lambda i, j, k, m, b: _ring(m[0], i * j * b) + _ring(m[0], j * k * b),
    # gather A, multiply, gather C's columns and keep your rows: all-gathers only
    "conflict": lambda i, j, k, m, b: _ring(m[0], i * j * b) + _ring(m[0], i * k * b),
    # gather both operands over y
    "2d": lambda i, j, k, m, b: _ring(m[1], i // m[0] * j * b) + _ring(m[1], j * k * b),
}
"""Bytes one device sends in the wrong plan lesson 4 contrasts with the case's; none
where no plan moves anything (local)."""


def optimum(case: str, shapes: Shape, mesh: Shape, itemsize: int) -> int:
    """The optimum of ``case`` for global ``shapes`` (I, J, K) on a mesh of shape ``mesh``."""
    return OPTIMUM[case](*shapes, tuple(mesh), itemsize)


def contrasted(case: str, shapes: Shape, mesh: Shape) -> bool:
    """The case's plan is the cheapest at ``shapes`` and the rival costs strictly more."""
    i, j, k = shapes
    if not CHEAPEST[case](i, j, k, tuple(mesh)):
        return False
    rival = RIVAL[case](i, j, k, tuple(mesh), 1) if case in RIVAL else 0
    return rival == 0 or rival > optimum(case, shapes, mesh, 1)  # 0: nothing moves at all


def reference(case: Case, mesh: Any) -> Callable[[Any, Any], Any]:
    """The grader's own optimal program for ``case``: one shard_map, one collective."""
    import jax
    from jax import lax
    from jax.sharding import PartitionSpec as P

    bodies = {
        "local": lambda a, b: a @ b,
        "allgather": lambda a, b: lax.all_gather(a, "x", axis=1, tiled=True, to="invarying") @ b,
        "allreduce": lambda a, b: lax.psum(a @ b, "x"),
        "reducescatter": lambda a, b: lax.psum_scatter(a @ b, "x", scatter_dimension=1, tiled=True),
        "conflict": lambda a, b: a @ lax.all_gather(b, "x", axis=1, tiled=True),
        "2d": lambda a, b: lax.psum(a @ b, "y"),
    }
    return jax.shard_map(
        bodies[case.name], mesh=mesh, in_specs=(P(*case.a), P(*case.b)), out_specs=P(*case.c)
    )


def measure(
    case: Case, shapes: tuple[int, int, int], mesh: tuple[int, ...], dtype: str,
    simulated: bool = False,
) -> int:  # fmt: skip
    """Bytes per device the compiled :func:`reference` sends for ``case``
    (counted at ``dtype``'s width), on a mesh of shape ``mesh`` (``simulated``:
    of the simulated CPU devices)."""
    import jax

    from grader.runtime import compile_here, example_rng

    key = "mesh" if case.two_d else "n"
    ex = {key: tuple(mesh) if case.two_d else mesh[0], "shape": tuple(shapes), "dtype": dtype,
          "seed": 0}  # fmt: skip
    placed = place(case, ex, example_rng(ex), simulated=simulated)
    program = jax.jit(reference(case, placed["mesh"]))
    trial = compile_here(program, placed["args"], placed["mesh"], ex, None, {})
    got = trial.comms.bytes(None, ITEMSIZE[dtype])
    if got is None:
        raise RuntimeError(f"the reference for {case.name!r} has a loop of unknown length")
    return got
