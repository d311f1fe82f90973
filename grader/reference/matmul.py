"""The sharded matmul cases, stated once: lessons 3, 4 and 5 use them.

A :class:`Case` is one way of laying A[I, J] and B[J, K] out on a mesh
(``('x',)``, or ``('x', 'y')`` for the 2-D case): the specs of A, B and C,
the one collective kind it needs, the bytes one device must send (the
optimum, lesson 3's ``predict_bytes``), and where its plan is the cheapest.
The grader also owns a reference program per case (:func:`reference`), so
lesson 3 measures bytes in a compiled program of its own, never in
``solutions/``.

This module does not import jax at import time.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

ITEMSIZE = {"float32": 4, "bfloat16": 2}
"""Bytes per element of the dtypes the matmul lessons draw."""
MESHES_2D = ((2, 2), (2, 4), (4, 2), (2, 3), (3, 2), (1, 4), (4, 1), (2, 1), (1, 2))
"""(X, Y) meshes for the 2-D case; examples keep those that fit the devices."""
ALL_GATHER, ALL_REDUCE, REDUCE_SCATTER = "all-gather", "all-reduce", "reduce-scatter"

Spec = tuple[str | None, ...]


@dataclass(frozen=True)
class Case:
    """One layout: specs as tuples of axis names (None = not split)."""

    name: str
    a: Spec
    b: Spec
    c: Spec
    allowed: frozenset[str]
    """The collective kinds its optimal plan uses (none for the local case)."""
    optimum: Callable[[int, int, int, tuple[int, ...], int], int]
    """(I, J, K, mesh shape, itemsize) → bytes one device must send."""
    cheapest: Callable[[int, int, int, tuple[int, ...]], bool]
    """True where this plan moves no more than the alternatives named in the lesson."""
    formula: str
    """The optimum as lesson 3 writes it."""
    rival: Callable[[int, int, int, tuple[int, ...], int], int] | None = None
    """Bytes one device sends in the wrong plan lesson 4 contrasts with this one,
    built from the same collective kinds where it can be (so only bytes tell them
    apart); None where no plan moves anything."""

    def contrasted(self, shapes: tuple[int, int, int], mesh: tuple[int, ...]) -> bool:
        """This plan is the cheapest at ``shapes`` and the rival costs strictly more:
        a program built the rival's way fails on bytes, not by a tie."""
        i, j, k = shapes
        if not self.cheapest(i, j, k, tuple(mesh)):
            return False
        rival = self.rival(i, j, k, tuple(mesh), 1) if self.rival else 0
        return rival == 0 or rival > self.bytes(shapes, mesh, 1)  # 0: nothing moves at all

    @property
    def two_d(self) -> bool:
        return self.name == "2d"

    def bytes(self, shapes: tuple[int, int, int], mesh: tuple[int, ...], itemsize: int) -> int:
        """The optimum for global ``shapes`` (I, J, K) on a mesh of shape ``mesh``."""
        return self.optimum(*shapes, tuple(mesh), itemsize)


def _ring(n: int, size: int) -> int:
    """(N − 1)/N of ``size`` bytes, exact for sizes that divide."""
    return (n - 1) * size // n


CASES = {
    c.name: c
    for c in (
        Case(
            "local",
            ("x", None),
            (None, None),
            ("x", None),
            frozenset(),
            lambda i, j, k, m, b: 0,
            lambda i, j, k, m: True,
            "0 (nothing moves)",
        ),
        # gathering A moves (N−1)/N·IJ; all-reducing partial C would move 2(N−1)/N·IK
        Case(
            "allgather",
            (None, "x"),
            (None, None),
            (None, None),
            frozenset({ALL_GATHER}),
            lambda i, j, k, m, b: _ring(m[0], i * j * b),
            lambda i, j, k, m: j <= 2 * k,
            "all-gather A: (N−1)·(I·J/N)·b",
            lambda i, j, k, m, b: 2 * _ring(m[0], i * k * b),  # all-reduce partial C
        ),
        # all-reducing C moves 2(N−1)/N·IK; gathering both operands (N−1)/N·(IJ + JK)
        Case(
            "allreduce",
            (None, "x"),
            ("x", None),
            (None, None),
            frozenset({ALL_REDUCE}),
            lambda i, j, k, m, b: 2 * _ring(m[0], i * k * b),
            lambda i, j, k, m: 2 * i * k <= i * j + j * k,
            "all-reduce C: 2·(N−1)/N·I·K·b",
            lambda i, j, k, m, b: _ring(m[0], i * j * b) + _ring(m[0], j * k * b),  # gather both
        ),
        Case(
            "reducescatter",
            (None, "x"),
            ("x", None),
            (None, "x"),
            frozenset({REDUCE_SCATTER}),
            lambda i, j, k, m, b: _ring(m[0], i * k * b),
            lambda i, j, k, m: i * k <= i * j + j * k,
            "reduce-scatter C: (N−1)/N·I·K·b",
            lambda i, j, k, m, b: _ring(m[0], i * j * b) + _ring(m[0], j * k * b),  # gather both
        ),
        # gathering B moves (N−1)/N·JK; gathering A and re-splitting C: (N−1)/N·(IJ + IK/N)
        Case(
            "conflict",
            ("x", None),
            (None, "x"),
            ("x", None),
            frozenset({ALL_GATHER}),
            lambda i, j, k, m, b: _ring(m[0], j * k * b),
            lambda i, j, k, m: j * k * m[0] <= i * j * m[0] + i * k,
            "all-gather B: (N−1)·(J·K/N)·b",
            # gather A, multiply, gather C's columns and keep your rows: all-gathers only
            lambda i, j, k, m, b: _ring(m[0], i * j * b) + _ring(m[0], i * k * b),
        ),
        # all-reduce over 'y' of the [I/X, K] partial: 2(Y−1)/Y·IK/X; gathering both over 'y':
        # (Y−1)/Y·(IJ/X + JK)
        Case(
            "2d",
            ("x", "y"),
            ("y", None),
            ("x", None),
            frozenset({ALL_REDUCE}),
            lambda i, j, k, m, b: 2 * _ring(m[1], i // m[0] * k * b),
            lambda i, j, k, m: 2 * i * k <= i * j + j * k * m[0],
            "all-reduce over y of the [I/X, K] partial: 2·(Y−1)/Y·(I/X)·K·b",
            # gather both operands over y
            lambda i, j, k, m, b: _ring(m[1], i // m[0] * j * b) + _ring(m[1], j * k * b),
        ),
    )  # fmt: skip
}


def mesh_shape(ex: dict[str, Any]) -> tuple[int, ...]:
    """An example's mesh: ``mesh`` (X, Y) for the 2-D case, else ``n`` devices on 'x'."""
    return tuple(ex["mesh"]) if "mesh" in ex else (ex["n"],)


def place(
    case: Case, ex: dict[str, Any], rng: np.random.Generator, *, auto: bool = False,
    simulated: bool = False,
) -> dict[str, Any]:  # fmt: skip
    """The example's mesh, inputs (numpy and placed) and expected C.

    ``ex`` has ``shape`` (I, J, K), ``dtype``, ``seed`` and a mesh
    (:func:`mesh_shape`). Inputs are small integers, so float32 results are
    exact, or floats with ``values=float`` (:func:`grader.runtime.example_values`). ``auto`` builds an Auto mesh, on which XLA's partitioner chooses
    the collectives. ``simulated``: the mesh of simulated CPU devices (the
    runtime's ``simulated``).
    """
    import jax
    import jax.numpy as jnp
    from jax.sharding import AxisType, NamedSharding
    from jax.sharding import PartitionSpec as P

    from grader.measure import devices
    from grader.runtime import example_values

    shape = mesh_shape(ex)
    names = ("x", "y")[: len(shape)]
    if auto:
        mesh = jax.make_mesh(
            shape, names, axis_types=(AxisType.Auto,) * len(shape),
            devices=devices.devices(simulated)[: int(np.prod(shape))],
        )  # fmt: skip
    else:
        mesh = devices.make_mesh(shape, names, simulated)
    i, j, k = ex["shape"]
    dtype = jnp.dtype(ex["dtype"])
    a = example_values(rng, (i, j), ex, 4).astype(dtype)
    b = example_values(rng, (j, k), ex, 4).astype(dtype)
    return {
        "mesh": mesh,
        "a": a,
        "b": b,
        "args": (
            jax.device_put(a, NamedSharding(mesh, P(*case.a))),
            jax.device_put(b, NamedSharding(mesh, P(*case.b))),
        ),
        "out": NamedSharding(mesh, P(*case.c)),
        "expected": (a.astype(np.float64) @ b.astype(np.float64)).astype(dtype),
    }


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


def xla_bytes(
    case: Case, ex: dict[str, Any], compiler_options: dict[str, Any] | None = None,
    simulated: bool = False,
) -> tuple[int | None, list[str]]:  # fmt: skip
    """What XLA's partitioner moves for the case's layouts: (bytes per device, kinds).
    ``compiler_options``: for code generation only (the partitioner, which places
    the collectives, runs whatever they say; a test holds the figures equal). Only
    the collectives are read, so the lesson's memory (which XLA's older emitters
    change in lesson 4) does not matter here: :data:`grader.spec.FAST_COMPILE`."""
    import jax

    from grader.measure import hlo
    from grader.runtime import example_rng, known_options

    placed = place(
        case, ex, example_rng(ex), auto=True, simulated=simulated
    )  # bytes depend on shapes, not values
    lowered = jax.jit(lambda a, b: a @ b, out_shardings=placed["out"]).lower(*placed["args"])
    compiled = lowered.compile(compiler_options=known_options(compiler_options))
    comms = hlo.summarize(compiled.as_text(), num_devices=placed["mesh"].size)
    return comms.bytes(None, ITEMSIZE[ex["dtype"]]), sorted(comms.kinds())
