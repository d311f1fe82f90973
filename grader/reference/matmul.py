"""The sharded matmul cases, stated once: lessons 3, 4 and 5 use them.

A :class:`Case` is one way of laying A[I, J] and B[J, K] out on a mesh
(``('x',)``, or ``('x', 'y')`` for the 2-D case): the specs of A, B and C,
the one collective kind it needs and the optimum's formula in words.
What each case costs (the optimum, the rival plan's bytes, where each is the
cheapest) and the grader's own optimal program per case, whose compiled bytes
lesson 3 measures, are the grader's side: :mod:`grader.expected.matmul`, hidden
from the student's process (lesson 4's answers are those programs).

This module does not import jax at import time.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from grader.later import expected

ITEMSIZE = {"float32": 4, "bfloat16": 2}
"""Bytes per element of the dtypes the matmul lessons draw."""
MESHES_2D = ((2, 2), (2, 4), (4, 2), (2, 3), (3, 2), (1, 4), (4, 1), (2, 1), (1, 2))
"""(X, Y) meshes for the 2-D case; examples keep those that fit the devices."""
ALL_GATHER, ALL_REDUCE, REDUCE_SCATTER = "all-gather", "all-reduce", "reduce-scatter"

Spec = tuple[str | None, ...]


@dataclass(frozen=True)
class Case:
    """One layout: specs as tuples of axis names (None = not split). What it costs
    is the grader's side (:mod:`grader.expected.matmul`, hidden from the student's
    process): :meth:`bytes` and :meth:`contrasted` import it when first called."""

    name: str
    a: Spec
    b: Spec
    c: Spec
    allowed: frozenset[str]
    """The collective kinds its optimal plan uses (none for the local case)."""
    formula: str
    """The optimum as lesson 3 writes it (its text says so too)."""

    def contrasted(self, shapes: tuple[int, int, int], mesh: tuple[int, ...]) -> bool:
        """This plan is the cheapest at ``shapes`` and the rival plan lesson 4 contrasts
        with it costs strictly more: a program built the rival's way fails on bytes,
        not by a tie."""
        return _COSTS.contrasted(self.name, tuple(shapes), tuple(mesh))

    @property
    def two_d(self) -> bool:
        return self.name == "2d"

    def bytes(self, shapes: tuple[int, int, int], mesh: tuple[int, ...], itemsize: int) -> int:
        """The optimum for global ``shapes`` (I, J, K) on a mesh of shape ``mesh``:
        the bytes one device must send (lesson 3's ``predict_bytes``)."""
        return _COSTS.optimum(self.name, tuple(shapes), tuple(mesh), itemsize)


_COSTS = expected("matmul")
"""The cases' optimal and rival bytes, and the grader's own program per case."""

CASES = {
    c.name: c
    for c in (
        Case("local", ("x", None), (None, None), ("x", None), frozenset(), "0 (nothing moves)"),
        Case(
            "allgather",
            (None, "x"),
            (None, None),
            (None, None),
            frozenset({ALL_GATHER}),
            "all-gather A: (N−1)·(I·J/N)·b",
        ),
        Case(
            "allreduce",
            (None, "x"),
            ("x", None),
            (None, None),
            frozenset({ALL_REDUCE}),
            "all-reduce C: 2·(N−1)/N·I·K·b",
        ),
        Case(
            "reducescatter",
            (None, "x"),
            ("x", None),
            (None, "x"),
            frozenset({REDUCE_SCATTER}),
            "reduce-scatter C: (N−1)/N·I·K·b",
        ),
        Case(
            "conflict",
            ("x", None),
            (None, "x"),
            ("x", None),
            frozenset({ALL_GATHER}),
            "all-gather B: (N−1)·(J·K/N)·b",
        ),
        Case(
            "2d",
            ("x", "y"),
            ("y", None),
            ("x", None),
            frozenset({ALL_REDUCE}),
            "all-reduce over y of the [I/X, K] partial: 2·(Y−1)/Y·(I/X)·K·b",
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
