"""The small interface a spec's ``run`` is given for one example.

A spec's ``run(rt, fn, ex)`` builds the example's inputs from ``rt.rng()``,
builds meshes with ``rt.mesh(...)``, and hands the program it builds around the
student's ``fn`` to ``rt.compile_and_run(...)``, which returns the
:class:`~grader.spec.Trial` the checks read. ``run`` never knows which process
it runs in. Three runtimes implement the interface; whoever starts the engine
chooses one:

- :class:`InProcess` (here): trace, compile and run the program in this process,
  on data from salt 0 unless told otherwise (the tests, ``course dev``);
- ``Exporting`` (:mod:`grader.sandbox.student`, the student's process): trace the
  program on decoy data, export it and hand it over; never compile or run it;
- ``Replaying`` (:mod:`grader.sandbox.isolation`, the grading worker): take the
  program the student's process exported, check it, compile it and run it here
  on data from a secret salt.

No module-level state: the salt, the mode and the student's process belong to
the runtime object.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from grader.faults import GraderFault, StudentReturnError
from grader.measure import hlo
from grader.spec import OPTIONAL_OPTIONS, Example, Trial, example_rng

SAID_UNCHECKED = "said: shard_maps with check_vma=False"
"""``trial.extra`` key: how many shard_maps the student's process says it traced
with ``check_vma=False``. No exported program shows it, so in the worker this is
what that process says: a hint may use it for its wording, never a verdict (a
forged count changes a hint, never a grade)."""

FLOAT = "float"
"""``values=float`` in an example: normal floats instead of small integers."""


def example_values(
    rng: np.random.Generator, shape: tuple[int, ...], ex: Example, bound: int
) -> np.ndarray:
    """Inputs for one example, in float64: small integers in [−bound, bound] (every
    summation order exact, diagnoses sharp), or with ``values=float`` normal
    floats, whose rounding a lower precision cannot hide within the tolerance."""
    if ex.get("values") == FLOAT:
        return rng.standard_normal(shape)
    return rng.integers(-bound, bound + 1, size=shape).astype(np.float64)


class ProgramTooLarge(StudentReturnError):
    """A student's program that needs more memory than the grader lets it use: the
    student's error, said with the figure, before it runs."""


def check_local_return(
    out: Any, shape: tuple[int, ...], dtype: Any, fname: str, given: tuple[int, ...] | None = None
) -> None:
    """Inside a shard_map body: one array of the per-device shape and dtype (``given``: the
    shape of the block the body was handed, for :func:`shape_hint`)."""
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
            f"{fname} returned shape {tuple(out.shape)} per device; expected {tuple(shape)}",
            hint=shape_hint(tuple(out.shape), tuple(shape), given),
        )
    if out.dtype != dtype:
        raise StudentReturnError(
            f"{fname} returned dtype {out.dtype} per device; expected {np.dtype(dtype).name}",
            hint="Keep the input's dtype: build buffers with dtype=x.dtype.",
        )


def shape_hint(
    got: tuple[int, ...], want: tuple[int, ...], given: tuple[int, ...] | None = None
) -> str | None:
    """Where one axis of a returned block differs: how, measured; said as a length counted
    in elements where one in rows belongs where the ratio is the other axes' product. Where
    the block is the one handed in (``given``) cut along one axis and the expected one is
    it cut to that length along another: the axis of the cut."""
    if len(got) != len(want):
        return None
    wrong = [i for i, (g, w) in enumerate(zip(got, want)) if g != w]
    if len(wrong) > 1 and given is not None and len(given) == len(got):
        cut = [i for i, (g, x) in enumerate(zip(got, given)) if g != x]
        ought = [i for i, (w, x) in enumerate(zip(want, given)) if w != x]
        if len(cut) == 1 and len(ought) == 1 and cut != ought and got[cut[0]] == want[ought[0]]:
            (k,), (j,), length = cut, ought, got[cut[0]]
            return (f"Your block is the one you were given, {list(given)}, cut to {length} "
                    f"along axis {k}; the expected {list(want)} is it cut to {length} along "
                    f"axis {j}: the slice is along axis {k}"
                    + (", the last axis" if k == len(given) - 1 else "")
                    + f" (axis={k} or {k - len(given)}) where axis {j} belongs.")  # fmt: skip
        if (len(cut) == 1 and len(ought) == 1 and cut != ought and given[cut[0]]
                and given[ought[0]] and got[cut[0]] % given[cut[0]] == 0
                and got[cut[0]] // given[cut[0]] == want[ought[0]] // given[ought[0]] > 1
                and want[ought[0]] % given[ought[0]] == 0):  # fmt: skip
            (k,), (j,) = cut, ought
            times = got[k] // given[k]
            return (f"Your block is the one you were given, {list(given)}, {times} times as "
                    f"long along axis {k}; the expected {list(want)} is it {times} times as "
                    f"long along axis {j}: the blocks are put together along axis {k} "
                    f"(axis={k} or {k - len(given)}) where axis {j} belongs (jnp.tile(x, n) "
                    "with one count repeats the last axis; jnp.tile(x, (n, 1)) the first).")  # fmt: skip
    if len(wrong) != 1 or not want[wrong[0]]:
        return None
    (i,) = wrong
    rest = int(np.prod([w for j, w in enumerate(want) if j != i]))
    ratio = got[i] / want[i]
    said = f"Axis {i} of your block is {got[i]} long where {want[i]} belongs ({ratio:g}×)"
    if rest > 1 and ratio == rest:
        return (f"{said}, and {rest} is the product of the other axes: a length counted in "
                "elements (x.size) where one in rows (x.shape[0]) belongs gives that — as "
                f"does any other slip that multiplies it by {rest}.")  # fmt: skip
    return f"{said}; the other axes are right."


class Runtime:
    """What a spec's ``run`` is given for one example (see the module docstring)."""

    compiler_options: dict[str, Any] | None = None
    """XLA options for a program whose spec asks for none (the lesson's own,
    :attr:`grader.spec.LessonSpec.compiler_options`; the engine sets it)."""

    simulated: bool = False
    """Meshes from the simulated CPU devices, the accelerators ignored
    (:attr:`grader.config.GradeConfig.simulated`; the engine sets it)."""

    clusters: Any = None
    """The lesson's clusters (:class:`grader.backend.Clusters`), set by the backend
    that made this runtime (None: no cluster can be reached from it)."""

    exporting: bool = False
    """True in the student's process, where the spec's ``run`` only hands its programs
    over (:class:`grader.sandbox.student.Exporting`): nothing computed there is read, so
    a ``run`` may skip work only a check reads (lesson 17's interpret-mode call of the
    student's function, a second a kernel)."""

    memory_limit: Callable[[Any], int | None] | None = None
    """Bytes a handed-back program may need on all its devices together, by its
    mesh (None: no limit), set by the backend: the sandbox's limit where the
    devices are the host's memory (:func:`grader.sandbox.isolation.replay_limit`)."""

    def __init__(
        self,
        example: Example,
        salt: int = 0,
        functions: Callable[[str], Callable[..., Any] | None] | None = None,
    ):
        self.example = example
        self.salt = int(salt)
        self._functions = functions

    def interrupt(self) -> None:
        """The engine stopped waiting for this example (a time limit): whatever
        it waits for in the student's process is stopped."""

    def function(self, name: str) -> Callable[..., Any] | None:
        """Another function of the student's module, for plain-Python calls (a
        report's figure, never a verdict: the exercise of that name grades it), or
        None where this runtime has none (the student's own process, a lone
        exercise). Called in the student's process when the module lives there."""
        return self._functions(name) if self._functions is not None else None

    def cluster(self, processes: int, local: int, ahead: tuple[tuple[int, int], ...] = ()) -> Any:
        """The student's processes as a multi-controller cluster (lesson 13): P
        processes with D CPU devices each, joined by ``jax.distributed``, the
        student's module imported in each. Its ``run(exercise, task, payloads)``
        runs a process-side task the spec declares (:attr:`grader.spec.ExerciseSpec.tasks`)
        in every process and gives back each one's result as plain values, or
        raises the student's error. Every runtime reaches a real cluster of
        processes (the backend's, :class:`grader.backend.Clusters`); ``ahead``:
        clusters later examples use, started now."""
        if self.clusters is None:
            raise GraderFault("this runtime was made without a cluster to run on")
        return self.clusters.get(processes, local, ahead)

    def run_exported(
        self, program: Any, args: tuple[Any, ...], mesh: Any, *,
        compiler_options: dict[str, Any] | None = None, **extra: Any,
    ) -> Trial:  # fmt: skip
        """A program the student's processes exported (a cluster's), as read by
        :meth:`grader.exported.HandedOver.read` (or its bytes), checked (it takes
        ``args``, fits ``mesh``, calls nothing off the devices), compiled and run
        here on ``args``: the same measurement as :meth:`compile_and_run` (with
        the lesson's compiler options unless others are given)."""
        if compiler_options is None:
            compiler_options = self.compiler_options
        limit = self.memory_limit(mesh) if self.memory_limit is not None else None
        return replay(program, args, mesh, self.example, compiler_options, extra, self.salt, limit)

    def rng(self) -> np.random.Generator:
        """The example's random source: a fresh generator on every call, the
        same stream each time."""
        return example_rng(self.example, self.salt)

    def mesh(self, shape: tuple[int, ...], names: tuple[str, ...]) -> Any:
        """A mesh of the devices this grade runs on (simulated ones when the lesson
        is graded on simulated CPU devices)."""
        from grader.measure import devices

        return devices.make_mesh(shape, names, simulated=self.simulated)

    def compile_and_run(
        self,
        program: Callable[..., Any],
        args: tuple[Any, ...],
        mesh: Any,
        *,
        compiler_options: dict[str, Any] | None = None,
        ours: bool = False,
        **extra: Any,
    ) -> Trial:
        """Compile ``program`` once, read its HLO and memory, run it on ``args``.

        ``ours``: the grader's own program (a reference it measures), compiled
        and run in this process whatever the runtime.

        ``compiler_options`` go to XLA (e.g. a lower backend optimisation level,
        for a spec that has measured it leaves collectives and memory unchanged).
        ``mesh`` may be None for a one-device program."""
        if compiler_options is None:
            compiler_options = self.compiler_options
        if ours:
            return compile_here(
                program, args, mesh, self.example, compiler_options, extra, self.salt
            )
        return self.student_program(program, args, mesh, compiler_options, extra)

    def student_program(
        self, program: Callable[..., Any], args: tuple[Any, ...], mesh: Any,
        compiler_options: dict[str, Any] | None, extra: dict[str, Any],
    ) -> Trial:  # fmt: skip
        """How this runtime treats the program built around the student's function."""
        raise NotImplementedError

    def kernels(self, program: Callable[..., Any], args: tuple[Any, ...], mesh: Any) -> tuple:
        """The Pallas TPU kernels of ``program`` (built around the student's function, as
        for :meth:`compile_and_run`), read by the grading process from the program
        exported for a TPU (:func:`grader.exported.read_kernels`: grid, windows, DMAs,
        semaphores, barrier, matmuls, stores, as :mod:`grader.measure.mosaic` reads them).
        Never compiled or run, here or in the student's process, so a host with no TPU
        reads them too. ``mesh``: the program's; where newer jax must be told the TPU
        it lowers for (``pltpu.sync_copy``), build the program on :func:`tpu_mesh` and
        pass ``jax.ShapeDtypeStruct`` args placed on it. In the student's process, where
        nothing is read, the tuple is empty: a spec keeps what it reads for its checks
        and computes nothing from it.
        The values come from elsewhere (the student's function called in TPU interpret
        mode; on a TPU, the program compiled)."""
        return self.student_kernels(program, args, mesh)

    def student_kernels(
        self, program: Callable[..., Any], args: tuple[Any, ...], mesh: Any
    ) -> tuple:
        """How this runtime reads the kernels of a program (:meth:`kernels`): exported
        and read in this process."""
        import jax

        from grader.exported import read_kernels

        exported = export_for_tpu(program, args, mesh)
        return read_kernels(jax.export.deserialize(exported.serialize()), args, mesh)


class InProcess(Runtime):
    """Everything in this process: the tests, ``course dev``, benchmarks."""

    def student_program(self, program, args, mesh, compiler_options, extra) -> Trial:
        return compile_here(program, args, mesh, self.example, compiler_options, extra, self.salt)


TPU_KIND = "TPU v5 lite"
"""The TPU a kernel is lowered for where no TPU is attached (:func:`tpu_mesh`): the v5e,
the chip this course was measured on (``benchmarks/tpu_v5e/``)."""


def tpu_mesh(axis_sizes: tuple[int, ...], axis_names: tuple[str, ...]) -> Any:
    """An abstract mesh of TPU devices (:data:`TPU_KIND`, one core each), Explicit axes:
    what a program is built on to be exported for a TPU from a host without one. Newer
    jax lowers some kernels (a ``run_scoped`` region, ``pltpu.sync_copy``) only for a
    named TPU, which it asks of the context's mesh (a CPU device is refused)."""
    from jax.sharding import AbstractDevice, AbstractMesh, AxisType

    device = AbstractDevice(device_kind=TPU_KIND, num_cores=1, platform="tpu")
    types = (AxisType.Explicit,) * len(axis_sizes)
    return AbstractMesh(tuple(axis_sizes), tuple(axis_names), types, abstract_device=device)


def export_for_tpu(program: Callable[..., Any], args: tuple[Any, ...], mesh: Any = None) -> Any:
    """``program`` traced on ``args`` and exported for a TPU (``jax.export``, which needs no
    TPU), with TPU interpret mode off for it: a process may run every kernel in interpret
    mode (lesson 17 sets it), and an interpreted kernel lowers to host callbacks, which
    neither export nor say what the chip would run. ``mesh``: the one the program is built
    on: an abstract one (:func:`tpu_mesh`) is the context it is lowered in; None (one
    device) is lowered under a one-device :func:`tpu_mesh` where jax asks for the TPU it
    lowers for. What fails to lower is the student's (:class:`StudentReturnError`,
    :func:`why_no_kernel`)."""
    import jax
    from jax.experimental.pallas import tpu as pltpu
    from jax.sharding import AbstractMesh

    def export(context: Any) -> Any:
        with contextlib.ExitStack() as stack:
            stack.enter_context(pltpu.force_tpu_interpret_mode(None))  # type: ignore[arg-type]
            if context is not None:
                stack.enter_context(jax.sharding.use_abstract_mesh(context))
            jitted = jax.jit(program)
            jitted.trace(*args)  # the student's own errors (a stub's TODO) surface here, theirs
            try:
                return jax.export.export(jitted, platforms=["tpu"])(*args)
            except Exception as exc:  # traced, but not lowered for a TPU
                raise _NotLowered(exc) from None

    try:
        return export(mesh if isinstance(mesh, AbstractMesh) else None)
    except _NotLowered as failed:
        why = failed.args[0]
    if mesh is None and "use_abstract_mesh" in str(why):
        try:  # one device: a kernel newer jax lowers only for a named TPU
            return export(tpu_mesh((1,), ("_",)))
        except _NotLowered as failed:
            why = failed.args[0]
    raise StudentReturnError(why_no_kernel(why))


class _NotLowered(Exception):
    """A traced program :func:`export_for_tpu` could not lower (its one arg: why)."""


def why_no_kernel(exc: Exception) -> str:
    """What the student is told where their kernel cannot be exported for a TPU."""
    text = str(exc)
    if "callback" in text or "different from the lowering platform" in text:
        # what an interpreted kernel's callbacks (bound to this CPU) say, exported for a TPU
        return (
            "your kernel could not be exported for a TPU: it runs on the host (a callback, "
            "interpret= passed to pallas_call, or a pallas_call made when your module is "
            "imported, which takes the grader's interpret mode: make it inside your function): "
            "leave interpret mode to the grader, which reads the kernel a TPU would run. "
            f"({text.splitlines()[0][:200]})"
        )
    return (
        "your kernel could not be lowered for a TPU, which the grader reads it from: "
        f"{(text.strip().splitlines() or [type(exc).__name__])[0][:300]}"
    )


def compile_here(
    program: Callable[..., Any], args: tuple[Any, ...], mesh: Any, example: Example,
    compiler_options: dict[str, Any] | None, extra: dict[str, Any], salt: int = 0,
) -> Trial:  # fmt: skip
    """Trace, lower, compile and run ``program`` in this process."""
    import jax

    from grader.measure import jaxpr

    jitted = program if hasattr(program, "lower") else jax.jit(program)
    traced = jitted.trace(*args)  # traced once: its jaxpr is what the student asked for
    return run_compiled(
        traced.lower(),
        jaxpr.read(traced.jaxpr),
        args,
        mesh,
        example,
        compiler_options,
        extra,
        salt,
    )


def replay(
    program: Any, args: tuple, mesh: Any, example: Example,
    compiler_options: dict[str, Any] | None, extra: dict[str, Any], salt: int,
    memory_limit: int | None = None,
) -> Trial:  # fmt: skip
    """An exported program from the student's side (a cluster's, lesson 13: a
    :class:`grader.exported.HandedOver`, or its bytes), checked, read from its
    StableHLO, compiled and run here on ``args`` (``memory_limit``:
    :func:`run_compiled`'s). Here, not in :mod:`grader.exported`: the runtime
    uses that module, which uses nothing of the runtime."""
    import jax

    from grader.exported import HandedOver, check_exported, read_exported, theirs

    handed = program if isinstance(program, HandedOver) else HandedOver.read(program)
    read = read_exported(handed.exported)
    check_exported(handed.exported, args, mesh, read.calls)
    with theirs("lower"):
        lowered = jax.jit(handed.exported.call, donate_argnums=read.donated).trace(*args).lower()
    with theirs("compile or run"):
        return run_compiled(
            lowered, read.program, args, mesh, example, compiler_options, extra, salt,
            memory_limit=memory_limit,
        )  # fmt: skip


def run_compiled(
    lowered: Any, program: Any, args: tuple[Any, ...], mesh: Any, example: Example,
    compiler_options: dict[str, Any] | None, extra: dict[str, Any], salt: int = 0,
    before_run: Callable[[], None] | None = None, reads: dict[Any, Any] | None = None,
    read_as: Any = None,
    memory_limit: int | None = None,
) -> Trial:  # fmt: skip
    """Compile a lowered program, read its HLO and memory, run it on ``args``
    (``before_run``: called once it is compiled, before it runs; the sandbox's
    example prepared ahead waits there for its turn). ``reads``: what reading the HLO and the
    memory gave before, by ``read_as`` (the same program lowered for the same
    inputs and options: the same compiled program), kept there and taken from
    there (a serving worker re-grading unchanged code). ``memory_limit``: bytes
    the program may need on all its devices together (a student's program, which
    the grader runs: issue 39); one that needs more is refused before it runs, as
    the student's error (:class:`ProgramTooLarge`)."""
    import copy

    import jax

    host_copies = [np.array(a) if isinstance(a, np.ndarray) else None for a in args]
    import time

    from grader import phases

    with phases.phase("compile"):
        compiled = lowered.compile(compiler_options=known_options(compiler_options))
    started = time.perf_counter()
    read = reads.get(read_as) if reads is not None else None
    if read is None:
        read = (_read_communication(compiled, mesh), _read_memory(compiled))
        if reads is not None:
            reads[read_as] = read
    comms, memory = copy.deepcopy(read)
    phases.add("read HLO and memory", time.perf_counter() - started)
    if memory_limit is not None and memory is not None:
        devices = mesh.size if mesh is not None else 1
        need = sum(memory.values()) * devices
        if need > memory_limit:
            raise ProgramTooLarge(
                f"your program needs {need / 2**30:.2f} GiB of memory to run ({need / devices / 2**20:.0f}"
                f" MiB on each of {devices} devices: arguments, outputs and temporaries, as XLA "
                f"compiled it), more than the {memory_limit / 2**30:.1f} GiB the grader lets a "
                "student's program use: compute with less temporary memory"
            )
    if before_run is not None:
        before_run()
    with phases.phase("run"):
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
        salt=salt,
        inputs=tuple(args),
    )


def known_options(options: dict[str, Any] | None) -> dict[str, Any] | None:
    """``options`` less those of :data:`grader.spec.OPTIONAL_OPTIONS` that this
    XLA does not have (it refuses an option it does not know): the program then
    compiles as it would without them."""
    if not options:
        return options
    return {k: v for k, v in options.items() if k not in OPTIONAL_OPTIONS or _accepted(k, v)}


@functools.cache
def _accepted(name: str, value: Any) -> bool:
    """Whether this XLA takes the compile option ``name=value`` (a trivial program
    compiled once with it)."""
    import jax

    try:
        jax.jit(lambda: 0).lower().compile(compiler_options={name: value})
    except Exception as exc:  # jax's runtime error: INVALID_ARGUMENT No such compile option
        if "no such compile option" in str(exc).lower():
            return False
        raise
    return True


def _read_communication(compiled: Any, mesh: Any) -> Any:
    return hlo.summarize(compiled.as_text(), num_devices=mesh.size if mesh is not None else 1)


def _read_memory(compiled: Any) -> dict[str, int] | None:
    try:
        stats = compiled.memory_analysis()
    except Exception:  # some backends have no memory analysis
        return None
    if stats is None:
        return None
    return {
        "argument": int(stats.argument_size_in_bytes),
        "output": int(stats.output_size_in_bytes),
        "temp": int(stats.temp_size_in_bytes),
        "alias": int(stats.alias_size_in_bytes),  # outputs written into donated inputs
    }


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
