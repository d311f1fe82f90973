"""Grading spec for lesson 2: ring all-gather, reduce-scatter, all-reduce.

The student writes shard_map bodies; the grader wraps them in
``jax.shard_map`` over a 1-D axis of N devices (N from 1, 2, 3, 4, 6, 8).
Inputs are small integers, so every correct summation order gives exactly
the same result in float32 and bfloat16 alike.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from hypothesis import strategies as st

from grader.checks import (
    Bytes,
    Count,
    InputsUntouched,
    OnlyCollectives,
    Precision,
    RingHops,
    Values,
)
from grader.checks.comms import PERMUTE
from grader.runtime import (
    FLOAT,
    Runtime,
    check_local_return,
    example_values,
)
from grader.spec import FAST_COMPILE, Context, Example, ExerciseSpec, LessonSpec, Run, Trial

AXIS = "x"
ONLY_PERMUTES = OnlyCollectives(
    frozenset({PERMUTE}),
    why="This lesson builds collectives from point-to-point sends: use lax.ppermute only.",
)


def _strategy(ctx: Context):
    return st.fixed_dictionaries(
        {
            "n": st.sampled_from(ctx.mesh_sizes),
            "rows": st.integers(1, 3),
            "cols": st.integers(1, 4),
            "dtype": st.sampled_from(["float32", "bfloat16"]),
            "seed": st.integers(0, 2**16),
        }
    )


def _explicit(ctx: Context) -> list[Example]:
    """Axis of size 1, then a power of two, then N = 3 and 6: code that only
    works for powers of two passes the first two and fails the others. N = 3
    holds floats (a sum in lower precision shows), N = 6 bfloat16."""
    cases = [
        (1, 1, 1, "float32", {}),
        (4, 1, 2, "float32", {}),
        (3, 2, 3, "float32", {"values": FLOAT}),
        (6, 1, 2, "bfloat16", {}),
    ]
    return [
        {"n": n, "rows": r, "cols": c, "dtype": d, "seed": i, **more}
        for i, (n, r, c, d, more) in enumerate(cases)
        if n in ctx.mesh_sizes
    ]


def _itemsize(ex: Example) -> int:
    return 2 if ex["dtype"] == "bfloat16" else 4


def _chunk_bytes(trial: Trial) -> int:
    ex = trial.example
    return ex["rows"] * ex["cols"] * _itemsize(ex)


def _run(
    name: str, in_rows: Callable[[int, int], int], out_rows: Callable[[int, int], int],
    reference: Callable[[np.ndarray, int], np.ndarray],
) -> Run:  # fmt: skip
    """A runner: x of [N·in_rows, cols] sharded over the ring, the body
    under shard_map, compared with ``reference(x, N)`` (global numpy)."""

    def run(rt: Runtime, fn: Callable[..., Any], ex: Example) -> Trial:
        import jax
        import jax.numpy as jnp
        from jax.sharding import NamedSharding
        from jax.sharding import PartitionSpec as P

        n, rows, cols = ex["n"], ex["rows"], ex["cols"]
        dtype = jnp.dtype(ex["dtype"])
        mesh = rt.mesh((n,), (AXIS,))
        rng = rt.rng()
        x = example_values(rng, (n * in_rows(n, rows), cols), ex, 8).astype(dtype)
        placed = jax.device_put(x, NamedSharding(mesh, P(AXIS)))

        def body(block):
            out = fn(block, AXIS)
            check_local_return(out, (out_rows(n, rows), cols), block.dtype, name, block.shape)
            return out

        program = jax.jit(
            jax.shard_map(body, mesh=mesh, in_specs=P(AXIS), out_specs=P(AXIS), check_vma=True)
        )
        trial = rt.compile_and_run(program, (placed,), mesh, dtype=ex["dtype"])
        trial.expected = reference(x.astype(np.float64), n).astype(dtype)
        return trial

    return run


def _gather_ref(x: np.ndarray, n: int) -> np.ndarray:
    return np.concatenate([x] * n)  # every device holds all of x


def _scatter_ref(x: np.ndarray, n: int) -> np.ndarray:
    per_device = x.reshape(n, n, -1, x.shape[-1])  # [device, chunk, c, cols]
    return per_device.sum(axis=0).reshape(-1, x.shape[-1])  # device i holds chunk i summed


def _allreduce_ref(x: np.ndarray, n: int) -> np.ndarray:
    total = x.reshape(n, -1, x.shape[-1]).sum(axis=0)
    return np.concatenate([total] * n)


def _diagnose_error(exc: BaseException, ex: Example, passed: list[Example]) -> str | None:
    n = ex["n"]
    if n & (n - 1) and passed and all(p["n"] & (p["n"] - 1) == 0 for p in passed):
        ok = sorted({p["n"] for p in passed})
        return (
            f"It works for N = {', '.join(map(str, ok))} but fails for N = {n}, which is not a "
            "power of two: partners like i XOR 2^k (a butterfly) do not exist there. Use a ring."
        )
    return None


def _purpose(ex: Example) -> str | None:
    """What each fixed example is for (issue 45 §1), as :func:`_explicit` says."""
    return {
        1: "an axis of size 1: no step at all, the input is the answer",
        4: "N = 4, a power of two: every send goes one link, to a ring neighbour",
        3: "N = 3, not a power of two, with float values: partners i XOR 2^k do not exist "
        "there, a ring still reaches every device",
        6: "N = 6 in bfloat16, not a power of two: the ring sends and adds in the input's "
        "own dtype",
    }.get(ex["n"])


def _exercise(name, run, values, steps, optimum, what) -> ExerciseSpec:
    return ExerciseSpec(
        name=name,
        strategy=_strategy,
        explicit=_explicit,
        purpose=_purpose,
        run=run,
        checks=(
            values,
            InputsUntouched(),
            Precision(),
            ONLY_PERMUTES,
            RingHops(ring_size=lambda ex: ex["n"]),
            Count(kind=PERMUTE, expected=steps, ring_size=lambda ex: ex["n"], what=what),
            Bytes(
                expected=optimum,
                unit=_chunk_bytes,
                kinds=frozenset({PERMUTE}),
                itemsize=lambda t: _itemsize(t.example),
                what="the ring optimum",
            ),
        ),  # fmt: skip
        max_examples=2,  # on top of N = 1, 4, 3, 6: 6 compiles each, within 3 s a lesson
        diagnose_error=_diagnose_error,
    )


SPEC = LessonSpec(
    exercises=(
        _exercise(
            "ring_all_gather",
            _run("ring_all_gather", lambda n, r: r, lambda n, r: n * r, _gather_ref),
            Values(block_rows=lambda ex: ex["rows"], ring=True),
            steps=lambda ex: ex["n"] - 1,
            optimum=lambda t: (t.example["n"] - 1) * _chunk_bytes(t),
            what="N − 1 ring steps",
        ),
        _exercise(
            "ring_reduce_scatter",
            _run("ring_reduce_scatter", lambda n, r: n * r, lambda n, r: r, _scatter_ref),
            Values(reduce_size=lambda ex: ex["n"], ring=True),
            steps=lambda ex: ex["n"] - 1,
            optimum=lambda t: (t.example["n"] - 1) * _chunk_bytes(t),
            what="N − 1 ring steps",
        ),
        _exercise(
            "ring_all_reduce",
            _run("ring_all_reduce", lambda n, r: n * r, lambda n, r: n * r, _allreduce_ref),
            Values(reduce_size=lambda ex: ex["n"], ring=True),
            steps=lambda ex: 2 * (ex["n"] - 1),
            optimum=lambda t: 2 * (t.example["n"] - 1) * _chunk_bytes(t),
            what="2(N − 1) ring steps: reduce-scatter then all-gather",
        ),
    ),
    compiler_options=FAST_COMPILE,
)
