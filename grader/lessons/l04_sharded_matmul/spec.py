"""Grading spec for lesson 4: the four cases of a sharded matmul.

Each exercise multiplies A[I, J] by B[J, K] placed on a mesh with the case's
shardings. The grader checks every device's shard of C against the unsharded
product, C's sharding, the collective kinds in the compiled program, and the
bytes each device sends against the optimum for the case. Its explanation
compiles the unsharded ``a @ b`` with the same input and output shardings
and lets XLA's partitioner choose the collectives, for the report's
side-by-side.

The cases themselves (layouts, optimum bytes, where each plan is the
cheapest) live in :mod:`grader.reference.matmul`, shared with lessons 3 and 5. Shapes
are drawn where the case's plan is the cheapest one; inputs are small
integers, so float32 results are exact.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from hypothesis import strategies as st

from grader.checks import (
    Bytes,
    InputsUntouched,
    OnlyCollectives,
    OutputSharding,
    Precision,
    UnderShardMap,
    Values,
)
from grader.evidence import XlaComparison
from grader.later import later
from grader.reference.matmul import (
    ALL_GATHER,
    ALL_REDUCE,
    CASES,
    ITEMSIZE,
    MESHES_2D,
    Case,
    mesh_shape,
    place,
    xla_bytes,
)
from grader.runtime import FLOAT, Runtime
from grader.spec import (
    BACKEND_LEVEL_0,
    FAST_COMPILE,
    Context,
    Example,
    ExerciseSpec,
    LessonSpec,
    Run,
    Trial,
)

MODULE = "l04_sharded_matmul"


def _strategy(case: Case) -> Callable[[Context], Any]:
    def strategy(ctx: Context):
        if case.two_d:
            meshes = [m for m in MESHES_2D if m[0] * m[1] <= ctx.n_devices]
            mesh = st.sampled_from(meshes).map(lambda m: {"mesh": m})
        else:
            mesh = st.sampled_from(ctx.mesh_sizes).map(lambda n: {"n": n})

        def full(draw_mesh: dict) -> Any:
            unit = int(np.prod(mesh_shape(draw_mesh)))
            dims = st.tuples(*(st.integers(1, 4).map(lambda v: v * unit) for _ in range(3)))
            return st.fixed_dictionaries(
                {
                    **{k: st.just(v) for k, v in draw_mesh.items()},
                    "shape": dims,
                    "dtype": st.sampled_from(["float32", "bfloat16"]),
                    "seed": st.integers(0, 2**16),
                }
            )

        return mesh.flatmap(full).filter(lambda ex: case.contrasted(ex["shape"], mesh_shape(ex)))

    return strategy


DTYPES = ("float32", "float32", "bfloat16")
VALUES: tuple[dict[str, str], ...] = ({}, {"values": FLOAT}, {})
"""The explicit examples' dtypes and values: the second holds floats (a bfloat16
cast inside a float32 program shows there), the third is bfloat16 (a float32
result or collective shows there)."""


def _explicit(case: Case) -> Callable[[Context], list[Example]]:
    """A mesh of one device (no communication may be needed), then N = 4, then
    N = 3: code that hard-codes a size or a power of two fails the last."""

    def explicit(ctx: Context) -> list[Example]:
        if case.two_d:
            meshes = [(1, 2), (2, 2), (2, 3)]
            out = [{"mesh": m} for m in meshes if m[0] * m[1] <= ctx.n_devices]
        else:
            out = [{"n": n} for n in (1, 4, 3) if n in ctx.mesh_sizes]
        examples = []
        for i, ex in enumerate(out):
            u = int(np.prod(mesh_shape(ex)))
            shape = next(
                s
                for s in ((2 * u, 2 * u, u), (u, 2 * u, 2 * u), (2 * u, u, u), (u, u, u))
                if case.contrasted(s, mesh_shape(ex))
            )
            examples.append({**ex, "shape": shape, "dtype": DTYPES[i], "seed": i, **VALUES[i]})
        return examples

    return explicit


def _purpose(case: Case) -> Callable[[Example], str | None]:
    """What each fixed example is for (issue 45 §1), as :func:`_explicit` and
    :data:`VALUES` say: one device (nothing to send), then float values in float32,
    then bfloat16 on a mesh that is not a power of two; every shape is one where the
    case's plan is strictly the cheapest, and the sentence says what that plan sends."""

    def purpose(ex: Example) -> str | None:
        mesh = mesh_shape(ex)
        shape = "I×J×K = {}×{}×{}".format(*ex["shape"])
        if int(np.prod(mesh)) == 1:
            return (
                f"N = 1, {shape}: A, B and C are whole on the one device, C = A @ B, nothing sent"
            )
        on = "mesh X×Y = {}×{}".format(*mesh) if case.two_d else f"N = {mesh[0]}"
        if any(m & (m - 1) for m in mesh):
            on += " (not a power of two)"
        if ex.get("values") == FLOAT:
            held = "normal floats in float32, C to float32 rounding"
        elif ex["dtype"] == "bfloat16":
            held = "all in bfloat16"
        else:
            held = "small integers in float32, C exact"
        sent = optimum(case, ex)
        if not sent:
            moves = "each device multiplies its own rows of A by B, nothing sent"
        elif case.two_d:
            moves = f"{sent} bytes sent per device, all-reduce over 'y' of the [I/X, K] partial"
        else:
            moves = f"{sent} bytes sent per device, {case.formula}"
        return f"{on}, {shape}, {held}: {moves}"

    return purpose


def make_run(case: Case) -> Run:
    def run(rt: Runtime, fn: Callable[..., Any], ex: Example) -> Trial:
        import jax

        placed = place(case, ex, rt.rng(), simulated=rt.simulated)
        mesh = placed["mesh"]
        trial = rt.compile_and_run(
            jax.jit(lambda a, b: fn(a, b, mesh)), placed["args"], mesh,
            dtype=ex["dtype"], sharding=placed["out"], case=case.name,
        )  # fmt: skip
        # deferred, so that a failing check can ask it again on changed arguments
        trial.expected = later(_product, placed["a"], placed["b"], placed["expected"].dtype)
        return trial

    return run


def _product(a: np.ndarray, b: np.ndarray, dtype: Any) -> np.ndarray:
    """C = A @ B in float64, in the example's dtype (:func:`place`'s expected C)."""
    return (a.astype(np.float64) @ b.astype(np.float64)).astype(dtype)


def optimum(case: Case, ex: Example) -> int:
    return case.bytes(ex["shape"], mesh_shape(ex), ITEMSIZE[ex["dtype"]])


def _simulated(trial: Trial) -> bool:
    """Whether the trial's mesh is of CPU devices: a mesh built to read it is too
    (the simulated ones where the lesson is graded on them; CPUs are all a host
    without two accelerators has anyway)."""
    return trial.mesh is not None and trial.mesh.devices.flat[0].platform == "cpu"


def _explain(case: Case) -> Callable[[list[Trial]], list[XlaComparison]]:
    def explain(trials: list[Trial]) -> list[XlaComparison]:
        from grader.spec import format_example

        trial = max(trials, key=lambda t: optimum(case, t.example))  # the most telling one
        ex = trial.example
        width = ITEMSIZE[ex["dtype"]]
        xla, xla_kinds = xla_bytes(case, ex, FAST_COMPILE, _simulated(trial))  # collectives only
        i, j, k = ex["shape"]
        return [
            XlaComparison(
                example=format_example(ex),
                mesh="×".join(map(str, mesh_shape(ex))),
                shapes=f"{i}×{j}×{k}",
                yours=trial.comms.bytes(None, width),
                yours_kinds=sorted(trial.comms.kinds()),
                optimum=optimum(case, ex),
                optimum_kinds=sorted(case.allowed),
                xla=xla,
                xla_kinds=xla_kinds,
            )
        ]

    return explain


# ------------------------------------------------------------------ hints

_GATHERED_BOTH = (
    "You gathered operands (all-gather) although both are split along J: each device "
    "can multiply its own blocks into a partial C, and one psum adds the partials — "
    "2(N − 1)/N·|C| bytes instead of (N − 1)/N·(|A| + |B|). One all-reduce is enough."
)
ADVICE: dict[str, dict[str, str]] = {
    "local": {
        "*": "A[I_X, J] · B[J, K]: each device already has whole rows of A and all of B, so "
        "its rows of C need nothing from anyone. A collective here usually means in_specs "
        "or out_specs differ from the arrays' shardings and the compiler resharded for you."
    },
    "allgather": {
        ALL_REDUCE: "You summed partial products with psum. With B whole on every device, "
        "gathering A's columns moves (N − 1)/N·|A| where all-reducing C moves "
        "2(N − 1)/N·|C|; this exercise asks for the all-gather of A.",
    },
    "allreduce": {ALL_GATHER: _GATHERED_BOTH},
    "reducescatter": {
        ALL_REDUCE: "A psum (an all-reduce) of a partial C moves 2(N − 1)/N·|C| bytes, and "
        "leaves every column on every device; lax.psum_scatter(partial, 'x', "
        "scatter_dimension=1, tiled=True) sums and scatters in one reduce-scatter of "
        "(N − 1)/N·|C| — half the bytes.",
        ALL_GATHER: "You gathered operands (all-gather) although both are split along J: each "
        "device can multiply its own blocks into a partial C, and one psum_scatter adds and "
        "scatters them — (N − 1)/N·|C| bytes instead of (N − 1)/N·(|A| + |B|). One "
        "reduce-scatter is enough.",
    },  # fmt: skip
    "conflict": {
        "*": "C keeps A's split by rows, so A's rows never need to move: gather B's columns "
        "(lax.all_gather(b_blk, 'x', axis=1, tiled=True)) and multiply. Resharding C or "
        "gathering A moves more.",
    },
    "2d": {
        ALL_GATHER: "You gathered operands: the contracting dim J is split over 'y', so each "
        "device can multiply its blocks into a partial C and psum over 'y' only.",
    },
}


GATHERED_RESULT = (
    "Your C comes back whole on every device, and an all-gather builds an array of C's "
    "shape, [I, K]: the result gathered, where C stays split ({spec}). Return each device's "
    "own block of C: the gather moves (N − 1)/N of C for nothing."
)


def _advice(case: Case) -> Callable[[str, Trial], str | None]:
    table = ADVICE.get(case.name, {})

    def advice(kind: str, trial: Trial) -> str | None:
        said = table.get(kind) or table.get("*")
        if kind == ALL_GATHER and _gathers_the_result(trial):
            spec = getattr(trial.extra.get("sharding"), "spec", None)
            result = GATHERED_RESULT.format(spec=f"{spec}" if spec is not None else "its out_specs")
            i, j, k = trial.example["shape"]
            if j in (i, k) and said:  # an operand of C's shape: either reading
                return f"{result} Or an operand of that shape was gathered: {said}"
            return result
        return said

    return advice


def _gathers_the_result(trial: Trial) -> bool:
    """Your C comes back whole on every device and an all-gather of the program builds an
    array of C's global shape [I, K] (an operand, [I, J] or [J, K], may have it too where J
    is I or K: :func:`_advice` then gives both readings)."""
    from grader.measure.hlo import shape_dims

    i, j, k = trial.example["shape"]
    out, expected = trial.output, trial.extra.get("sharding")
    if expected is None or getattr(expected, "is_fully_replicated", True):
        return False  # C is meant whole on every device: gathering it is no slip
    if not getattr(getattr(out, "sharding", None), "is_fully_replicated", False):
        return False
    return any(c.kind == ALL_GATHER and c.count and shape_dims(c.shape) == (i, k)
               for c in trial.comms.collectives)  # fmt: skip


def _alternatives(case: Case) -> Callable[[Trial], list[tuple[str, Any]]] | None:
    if not case.two_d:
        return None

    def wrong_axis(trial: Trial) -> list[tuple[str, Any]]:
        """Device (r, c) holding Σ_r' A[I_r', J_c] · B[J_c] (a psum over 'x', not 'y'),
        or Σ_r' A[I_r', :] · B (a psum over both axes)."""
        ex = trial.example
        x, y = mesh_shape(ex)
        i, j, _ = ex["shape"]
        placed = place(case, ex, trial.rng(), simulated=_simulated(trial))
        a, b = placed["a"].astype(np.float64), placed["b"].astype(np.float64)

        def rows(r: int) -> slice:
            return slice(r * i // x, (r + 1) * i // x)

        def over_x(coord: tuple, index: tuple) -> np.ndarray:
            cols = slice(coord[1] * j // y, (coord[1] + 1) * j // y)
            return sum(a[rows(rr), cols] @ b[cols] for rr in range(x))

        def over_both(coord: tuple, index: tuple) -> np.ndarray:
            return sum(a[rows(rr)] @ b for rr in range(x))

        return [
            (
                "Your C matches a psum over 'x' instead of 'y': the contracting dim J is split "
                "over 'y' (A[I_X, J_Y]), so the partial products must be summed over 'y'.",
                over_x,
            ),
            (
                "Your C matches a psum over ('x', 'y'): summing over 'x' as well adds the row "
                "blocks of the other devices into yours, in a group of X·Y devices. Only J is "
                "split over 'y', so psum over 'y' alone.",
                over_both,
            ),
        ]

    return wrong_axis


def _diagnose_error(case: Case) -> Callable[[BaseException, Example, list[Example]], str | None]:
    def diagnose(exc: BaseException, ex: Example, passed: list[Example]) -> str | None:
        text = str(exc)
        if type(exc).__name__ == "ShardingTypeError":
            return (
                "On this Explicit mesh a plain a @ b must know how to combine the shards, and "
                "here it cannot: "
                + (
                    "both operands split the contracting dim J, so every device holds a partial "
                    "sum. "
                    if "Contracting" in text
                    else "A and B are split over the same axis along different dims. "
                )
                + "Write the body under jax.shard_map and choose the collective yourself."
            )
        if case.two_d and "out_specs" in text and "'y'" in text:
            return (
                "shard_map says your result is not the same across 'y', yet out_specs "
                "P('x', None) promises it is: the partial products over J (split over 'y') "
                "were not summed over 'y' — psum over 'y', not 'x'."
            )
        if "out_specs" in text and "replicat" in text:
            return (
                "out_specs says the result is the same on every device, but shard_map cannot "
                "see why: sum the partials (psum), or gather with to='invarying', before "
                "returning with out_specs=P()."
            )
        return None

    return diagnose


# ------------------------------------------------------------------ the lesson


def _exercise(case: Case) -> ExerciseSpec:
    return ExerciseSpec(
        name=f"matmul_{case.name}",
        strategy=_strategy(case),
        explicit=_explicit(case),
        run=make_run(case),
        checks=(
            Values(reduce_size=lambda ex: ex["shape"][1], alternatives=_alternatives(case)),
            OutputSharding(expected=lambda t: t.extra["sharding"]),
            InputsUntouched(),
            UnderShardMap(itemsize=lambda t: ITEMSIZE[t.example["dtype"]]),
            Precision(),
            OnlyCollectives(
                case.allowed,
                why="Each case needs exactly one kind of collective (none for the local case).",
                advice=_advice(case),
            ),
            Bytes(
                expected=lambda t: optimum(case, t.example),
                itemsize=lambda t: ITEMSIZE[t.example["dtype"]],
                what="the optimum for this case",
            ),
        ),
        max_examples=1,  # on top of 3 explicit ones, plus XLA's compile: within 3 s a lesson
        diagnose_error=_diagnose_error(case),
        explain=_explain(case),
        purpose=_purpose(case),
    )


SPEC = LessonSpec(
    exercises=tuple(_exercise(c) for c in CASES.values()), compiler_options=BACKEND_LEVEL_0
)
