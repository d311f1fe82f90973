"""A program handed over exported (:mod:`jax.export`): checked, read and run here.

The student's program reaches the grading process only as an exported program
(from the student's process, or from a lesson-13 cluster). Before anything is
measured, :func:`check_exported` holds it to the example (it takes the
example's inputs, fits the mesh, calls nothing off the devices), and
:func:`read_exported` reads what the checks read of it from its own StableHLO;
:func:`grader.runtime.replay` compiles and runs it on the grader's data (the
runtime imports this module, never the other way). Nothing here talks to a
process: the core's, used by the sandbox's replaying runtime and by
``Runtime.run_exported``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from grader.faults import GraderFault, HostCall, NotGradable, StudentProcessDied
from grader.measure.jaxpr import Program


class HandedOver:
    """A program handed over exported, read once: deserialised, its StableHLO
    printed (:meth:`read`). What a lesson reads of a cluster's program (its text)
    and what ``Runtime.run_exported`` replays are the same reading."""

    def __init__(self, exported: Any):
        self.exported = exported
        self.text: str = exported.mlir_module()

    @classmethod
    def read(cls, blob: bytes | str) -> HandedOver:
        """The program in ``blob`` (its bytes, or as base64 text: what crosses as
        plain data); unreadable, the process that sent it is at fault."""
        import base64

        import jax

        try:
            raw = base64.b64decode(blob) if isinstance(blob, str) else blob
            return cls(jax.export.deserialize(bytearray(raw)))
        except Exception as exc:
            raise StudentProcessDied(
                f"it handed back a program the grader cannot read ({exc})"
            ) from None


@contextlib.contextmanager
def theirs(what: str) -> Any:
    """What jax or XLA refuses in a student's handed-back program while the worker
    lowers, compiles or runs it (a platform it was not made for, an operation XLA
    has no kernel for here, memory the devices do not have) is the student's
    error, said as such (:class:`NotGradable`); whatever else goes wrong stays the
    grader's."""
    import jax

    refused: tuple[type[BaseException], ...] = (jax.errors.JaxRuntimeError,)
    if what == "lower":  # jax's own refusals of the program it deserialised
        refused += (ValueError, NotImplementedError)
    try:
        yield
    except refused as exc:
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:300]
        raise NotGradable(
            f"the grader could not {what} your program on this platform "
            f"({platform_here()}): {first}"
        ) from None


def platform_here() -> str:
    import jax

    return jax.default_backend()


ALLOWED_CALLS = frozenset({"Sharding", "SPMDFullToShardShape", "SPMDShardToFullShape",
                           "shard_map_body", "annotate_device_placement", "cu_threefry2x32",
                           "xla.sdy.GlobalToLocalShape", "xla.sdy.LocalToGlobalShape",
                           "xla.sdy.FuncResultSharding", "xla.sdy.ShardingGroup",
                           "local_xla.sdy.ManualComputation"})  # fmt: skip
"""Custom calls a handed-back program may hold: sharding annotations only."""


def _takes(exported: Any, args: tuple, mesh: Any) -> None:
    """The program takes the example's inputs and is made for the mesh's devices."""
    import jax

    leaves = jax.tree.leaves(args)
    want = [(tuple(x.shape), str(x.dtype)) for x in leaves]
    got = [(tuple(a.shape), str(a.dtype)) for a in exported.in_avals]
    if want != got or exported.in_tree != jax.tree.structure((tuple(args), {})):
        raise StudentProcessDied(
            "it handed back a program that does not take this example's inputs"
        )
    need = mesh.size if mesh is not None else 1
    if exported.nr_devices != need:
        raise StudentProcessDied(
            f"it handed back a program for {exported.nr_devices} devices, not {need}"
        )


def check_exported(exported: Any, args: tuple, mesh: Any, calls: Collection[str]) -> None:
    """The program takes the example's inputs, fits the mesh, calls nothing else
    (``calls``: its custom calls' targets, :attr:`Read.calls`)."""
    _takes(exported, args, mesh)
    here = mesh.devices.flat[0].platform if mesh is not None else platform_here()
    made_for = [str(p).lower() for p in getattr(exported, "platforms", None) or [here]]
    if here not in made_for and not (here == "gpu" and {"cuda", "rocm"} & set(made_for)):
        raise NotGradable(
            f"your program was exported for {', '.join(made_for)}, and this grade runs on "
            f"{here}: build it for the devices the grader's mesh gives you (do not name a "
            "platform when you jit or export)"
        )
    unknown = sorted(t for t in calls if t not in ALLOWED_CALLS)
    if unknown:
        raise HostCall(
            "your program calls out of the devices (" + ", ".join(unknown[:3]) + "); the grader "
            "runs programs on the devices only: compute with jax operations, not host callbacks"
        )


@dataclass(frozen=True)
class Read:
    """What the worker reads of an exported program (:func:`read_exported`)."""

    calls: frozenset[str]
    """The targets of its custom calls, functions never called included."""
    program: Program
    """What the checks read (its loops, collectives, dtypes, ``shard_map``):
    :func:`grader.measure.stablehlo.read`."""
    donated: tuple[int, ...]
    """The arguments it donates (:func:`donated_argnums`)."""


def read_exported(exported: Any) -> Read:
    """Read an exported program once: its serialized module deserialised into MLIR's
    structures, never printed (on jax 0.10.2, a small ZeRO step took 2.9 ms to print
    and 2.3 ms to parse again, against 0.4 ms to deserialise), and everything the
    worker needs read from that one module: ``tests/test_readers.py`` holds it to
    what the printed text reads. Read from the program itself, never from what the
    student's process says about it; a form the reader does not know is the
    grader's to fix (a newer jax), so it is a grader fault, but a dtype the course
    does not grade is the student's."""
    from grader.measure import stablehlo

    try:
        module = stablehlo.parse_exported(exported)
        program = stablehlo.read(module)
    except stablehlo.Unrecognised as exc:
        if str(exc).startswith("an element type"):  # a dtype the course does not grade
            raise NotGradable(
                f"your program computes with {str(exc)[3:]}, a dtype the grader cannot grade: "
                "use the example's dtype (float32 or bfloat16) for what you compute and send"
            ) from None
        raise GraderFault(
            f"the grader cannot read your exported program's StableHLO: {exc}"
        ) from None
    return Read(
        frozenset(stablehlo.custom_calls(module)), program, donated_argnums(exported, module)
    )


def donated_argnums(exported: Any, module: Any = None) -> tuple[int, ...]:
    """The top-level arguments whose every leaf the exported program donates, read from
    the program itself (:func:`grader.measure.stablehlo.donated_parameters`): the
    grader's own ``jax.jit(..., donate_argnums=…)`` around the student's function,
    traced in the student's process. Compiled with the same donation here, the program
    aliases what it aliased where it was traced (lesson 16's cache)."""
    from grader.measure import stablehlo

    module = stablehlo.parse_exported(exported) if module is None else module
    marked = stablehlo.donated_parameters(module)
    kept = list(exported.module_kept_var_idx)
    donated_flat = {kept[k] for k in marked if k < len(kept)}
    out, first = [], 0
    for index, arg in enumerate(exported.in_tree.children()[0].children()):
        leaves = set(range(first, first + arg.num_leaves)) & set(kept)
        if leaves and leaves <= donated_flat:
            out.append(index)
        first += arg.num_leaves
    return tuple(out)


KERNEL_CALL = "tpu_custom_call"
"""The custom call a Pallas TPU kernel lowers to (its body: the kernel's Mosaic IR). A
program that holds one is only ever read here (:func:`read_kernels`), never compiled or
run: :func:`check_exported` refuses it like any other call out of the devices."""


def read_kernels(exported: Any, args: tuple, mesh: Any) -> tuple[Any, ...]:
    """The Pallas TPU kernels of a program handed over exported for a TPU
    (``Runtime.kernels``), read from their Mosaic IR (:func:`grader.measure.mosaic.kernels`)
    after the checks :func:`check_exported` makes of any program: it takes the example's
    inputs and fits the mesh, it was made for a TPU, and it calls nothing but kernels and
    sharding annotations. Nothing of it is compiled or run; an empty tuple: no kernel."""
    from grader.measure import mosaic, stablehlo

    _takes(exported, args, mesh)
    made_for = [str(p).lower() for p in getattr(exported, "platforms", None) or ()]
    if made_for != ["tpu"]:
        raise StudentProcessDied(
            f"it handed back a program made for {', '.join(made_for) or 'no platform'} "
            "where its kernels for a TPU were asked"
        )
    try:
        module = stablehlo.parse_exported(exported)
        calls = frozenset(stablehlo.custom_calls(module))
    except stablehlo.Unrecognised as exc:
        raise GraderFault(f"the grader cannot read your exported program: {exc}") from None
    unknown = sorted(t for t in calls if t not in ALLOWED_CALLS | {KERNEL_CALL})
    if unknown:
        raise HostCall(
            "your program calls out of the devices (" + ", ".join(unknown[:3]) + "); the grader "
            "reads Pallas kernels and sharding annotations only: compute with jax operations"
        )
    try:
        return mosaic.kernels(module, exported.nr_devices)
    except stablehlo.Unrecognised as exc:
        raise GraderFault(f"the grader cannot read your kernel's Mosaic IR: {exc}") from None
