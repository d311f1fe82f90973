"""Compile a student's program once, read it, run it: one Trial per example.

Where the program is traced depends on the process (see :mod:`grader.sandbox.isolation`):
in one process (the tests, ``course dev``) :func:`compile_and_run` traces,
compiles and runs it; in the student's process it only traces and exports it
(:class:`Exporting`); in the grading process it compiles and runs the program
the student's process exported, on data from a salt the student never sees
(:class:`Replaying`). Specs call :func:`compile_and_run` and
:func:`example_rng` and need not know which.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from grader.measure import hlo
from grader.spec import Example, Trial

FLOAT = "float"
"""``values=float`` in an example: normal floats instead of small integers."""

_salt = 0
"""Mixed into every example's data seed (:func:`example_rng`). 0 in one process
(tests, reproducible); secret and fresh per run in the grading process, random
in the student's process, so the data a program is traced on there tells
nothing about the data it is graded on."""


def set_data_salt(salt: int) -> None:
    global _salt
    _salt = int(salt)


def example_rng(ex: Example) -> np.random.Generator:
    """The generator an example's input data is drawn from."""
    seed = int(ex.get("seed", 0))
    return np.random.default_rng([seed, _salt] if _salt else seed)


def example_values(
    rng: np.random.Generator, shape: tuple[int, ...], ex: Example, bound: int
) -> np.ndarray:
    """Inputs for one example, in float64: small integers in [−bound, bound] (every
    summation order exact, diagnoses sharp), or with ``values=float`` normal
    floats, whose rounding a lower precision cannot hide within the tolerance."""
    if ex.get("values") == FLOAT:
        return rng.standard_normal(shape)
    return rng.integers(-bound, bound + 1, size=shape).astype(np.float64)


class GraderFault(Exception):
    """The grader's own code failed while running an example: reported as a
    grader bug, never as the student's error."""


class StudentReturnError(Exception):
    """The student's function returned something of the wrong kind; the message says what."""

    def __init__(self, message: str, hint: str | None = None):
        super().__init__(message)
        self.hint = hint


def check_local_return(out: Any, shape: tuple[int, ...], dtype: Any, fname: str) -> None:
    """Inside a shard_map body: one array of the per-device shape and dtype."""
    import jax

    if out is None:
        raise StudentReturnError(
            f"{fname} returned None; expected an array of shape {shape} per device",
            hint="Did you forget the `return` statement?",
        )
    if isinstance(out, (tuple, list)):
        raise StudentReturnError(
            f"{fname} returned a {type(out).__name__} of {len(out)} items; expected one array of shape {shape}",
            hint="Return a single array: concatenate the blocks (jnp.concatenate) if you kept a list.",
        )
    if not isinstance(out, jax.Array):
        raise StudentReturnError(
            f"{fname} returned {type(out).__name__}; expected a jax array of shape {shape}"
        )
    if tuple(out.shape) != tuple(shape):
        raise StudentReturnError(
            f"{fname} returned shape {tuple(out.shape)} per device; expected {tuple(shape)}"
        )
    if out.dtype != dtype:
        raise StudentReturnError(
            f"{fname} returned dtype {out.dtype} per device; expected {np.dtype(dtype).name}",
            hint="Keep the input's dtype: build buffers with dtype=x.dtype.",
        )


def compile_and_run(
    program: Callable[..., Any],
    args: tuple[Any, ...],
    mesh: Any,
    example: Example,
    *,
    compiler_options: dict[str, Any] | None = None,
    ours: bool = False,
    **extra: Any,
) -> Trial:
    """Lower and compile ``program`` once, read its HLO and memory, run it.

    ``ours``: the grader's own program (a reference it measures), compiled
    here in every process.

    ``compiler_options`` go to XLA (e.g. a lower backend optimisation level,
    for a spec that has measured it leaves collectives and memory unchanged).
    ``mesh`` may be None for a one-device program."""
    mode = _mode
    if mode is not None and not ours:
        return mode.compile_and_run(program, args, mesh, example, compiler_options, extra)
    import jax

    from grader.measure import jaxpr

    jitted = program if hasattr(program, "lower") else jax.jit(program)
    traced = jitted.trace(*args)  # traced once: its jaxpr is what the student asked for
    return run_compiled(
        traced.lower(), jaxpr.read(traced.jaxpr), args, mesh, example, compiler_options, extra
    )


def run_compiled(
    lowered: Any, program: Any, args: tuple[Any, ...], mesh: Any, example: Example,
    compiler_options: dict[str, Any] | None, extra: dict[str, Any],
) -> Trial:  # fmt: skip
    """Compile a lowered program, read its HLO and memory, run it on ``args``."""
    import jax

    host_copies = [np.array(a) if isinstance(a, np.ndarray) else None for a in args]
    compiled = lowered.compile(compiler_options=compiler_options)
    comms = hlo.summarize(compiled.as_text(), num_devices=mesh.size if mesh is not None else 1)
    memory = None
    try:
        stats = compiled.memory_analysis()
        if stats is not None:
            memory = {
                "argument": int(stats.argument_size_in_bytes),
                "output": int(stats.output_size_in_bytes),
                "temp": int(stats.temp_size_in_bytes),
            }
    except Exception:  # some backends have no memory analysis
        memory = None
    output = compiled(*args)
    jax.block_until_ready(output)
    return Trial(
        example=example,
        output=output,
        comms=comms,
        memory=memory,
        mesh=mesh,
        inputs_intact=inputs_intact(args, host_copies),
        program=program,
        extra=extra,
    )


class Mode:
    """How :func:`compile_and_run` treats a program in this process."""

    def compile_and_run(
        self, program: Callable[..., Any], args: tuple[Any, ...], mesh: Any, example: Example,
        compiler_options: dict[str, Any] | None, extra: dict[str, Any],
    ) -> Trial:  # fmt: skip
        raise NotImplementedError


_mode: Mode | None = None


def set_mode(mode: Mode | None) -> None:
    global _mode
    _mode = mode


def inputs_intact(args: tuple[Any, ...], host_copies: list[np.ndarray | None]) -> str | None:
    import jax

    for i, (a, copy) in enumerate(zip(args, host_copies)):
        if isinstance(a, jax.Array) and a.is_deleted():
            return f"argument {i} was deleted (donated) by your function"
        if copy is not None and not np.array_equal(a, copy, equal_nan=True):
            return f"argument {i} was modified in place by your function"
    return None


def call_pure(fn: Callable[..., Any], args: tuple, expect_raise: bool) -> Any:
    """Call a pure student function; an exception is the answer only when one is expected."""
    try:
        return fn(*args)
    except NotImplementedError:
        raise
    except Exception as exc:
        if expect_raise:
            return exc
        raise
