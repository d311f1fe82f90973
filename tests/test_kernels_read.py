"""A Pallas kernel read, never run (``Runtime.kernels``, issue 46's trust route).

A kernel in TPU interpret mode lowers to host callbacks, which cannot leave the process
that traced them; the same kernel exported for a TPU (which a CPU-only process can do)
is a ``tpu_custom_call`` whose body is the kernel's Mosaic IR. So a spec hands such a
program to ``rt.kernels``: through the student's process, it is exported there and read
in the grading process (:func:`grader.exported.read_kernels`), never compiled or run;
the checks read what the worker observed, not what the student's process says.

The tests' own lesson 97 (``tests/data/lessons/l97_kernels``): one kernel that sends a
block to the next device by a remote DMA, its one check reading the DMA's peers and bytes.
"""

from __future__ import annotations

from pathlib import Path

import jax
import numpy as np
import pytest
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from grader.exported import ALLOWED_CALLS, KERNEL_CALL, check_exported, read_kernels
from grader.faults import NotGradable, StudentProcessDied
from grader.measure import mosaic
from grader.results import Status
from grader.sandbox import backends

pytestmark = pytest.mark.skipif(
    mosaic.dialect_missing() is not None, reason=f"jaxlib: {mosaic.dialect_missing()}"
)

LESSONS = "tests.data.lessons"
MODULE = "l97_kernels"
SALT = 0x7E57
LEFT = (
    "lax.rem(lax.axis_index(axis_name) + 1, n)",
    "lax.rem(lax.axis_index(axis_name) + n - 1, n)",
)
"""A realistic mistake: the left neighbour."""
INTERPRETED = (
    "        scratch_shapes=",
    "        interpret=pltpu.InterpretParams(),\n        scratch_shapes=",
)
"""Another: the kernel asks for interpret mode itself (as a CPU-only learner might)."""


def _grade(root: Path, tmp_path: Path, isolate: bool, patch: tuple[str, str] | None = None):
    source = (root / "tests" / "data" / "solutions" / f"{MODULE}.py").read_text()
    if patch is not None:
        assert source.count(patch[0]) == 1
        source = source.replace(*patch)
    folder = tmp_path / ("iso" if isolate else "here")
    folder.mkdir()
    (folder / f"{MODULE}.py").write_text(source)
    chosen = backends.isolated(SALT, LESSONS) if isolate else backends.here(SALT, LESSONS)
    (er,) = backends.grade_lesson(
        97, MODULE, folder, backend=chosen, lessons=LESSONS, timeout=120
    ).exercises
    return er


def _verdict(er) -> tuple:
    return (er.status, er.example, er.error, [(c.name, c.passed, c.message) for c in er.checks])


@pytest.mark.parametrize("isolate", [False, True], ids=["here", "student's process"])
def test_the_kernel_is_read_from_its_program_both_ways(root, tmp_path, isolate):
    er = _grade(root, tmp_path, isolate)
    assert er.status == Status.PASSED, _verdict(er)
    (check,) = er.checks
    assert check.message.startswith("one remote DMA of one block to the next device")


def test_the_left_neighbour_fails_with_the_peers_the_worker_read(root, tmp_path):
    here = _grade(root, tmp_path, False, LEFT)
    isolated = _grade(root, tmp_path, True, LEFT)
    assert here.status == Status.FAILED, _verdict(here)
    assert "the DMA goes to devices (3, 0, 1, 2), expected (1, 2, 3, 0)" in here.checks[0].message
    assert _verdict(isolated) == _verdict(here)


def test_a_kernel_that_asks_for_interpret_mode_itself_is_told_to_leave_it(root, tmp_path):
    """Exported for a TPU, an interpreted kernel is host callbacks: the student's process
    cannot hand it over, and says why in the student's terms."""
    er = _grade(root, tmp_path, True, INTERPRETED)
    assert er.status == Status.FAILED, _verdict(er)
    (said,) = [c.message for c in er.checks if not c.passed]
    assert "leave interpret mode to the grader" in said, said
    assert _verdict(_grade(root, tmp_path, False, INTERPRETED)) == _verdict(er)


def _ring(n: int):
    from tests.test_mosaic import mesh_of, ring_all_gather

    mesh = mesh_of(n)
    x = jax.device_put(
        np.arange(n * 8 * 128, dtype=np.float32).reshape(n * 8, 128),
        NamedSharding(mesh, P("x", None)),
    )
    return (lambda v: ring_all_gather(v, mesh)), x, mesh


def test_interpret_mode_on_in_the_process_still_reads_the_chips_kernel():
    """Lesson 17 runs every kernel of its processes in interpret mode; the program read
    is the one a TPU would run all the same (interpret mode off for the export)."""
    from jax.experimental.pallas import tpu as pltpu

    from grader.runtime import InProcess

    program, x, mesh = _ring(4)
    with pltpu.force_tpu_interpret_mode(pltpu.InterpretParams()):
        assert np.array_equal(np.asarray(jax.jit(program)(x))[: 8 * 4], np.asarray(x))
        (kernel,) = InProcess({}).kernels(program, (x,), mesh)
    hops = [s for s in kernel.starts if s.remote]
    assert [s.peers for s in hops] == [(1, 2, 3, 0)]


def test_a_kernels_program_is_read_only_where_kernels_are_asked():
    """Made for a TPU and calling a kernel: refused as a program to run; a program made
    for the CPU is refused where kernels are asked. Neither is run."""
    from grader.runtime import export_for_tpu

    program, x, mesh = _ring(3)
    exported = export_for_tpu(program, (x,), mesh)
    assert KERNEL_CALL not in ALLOWED_CALLS
    with pytest.raises(NotGradable, match="exported for tpu"):
        check_exported(exported, (x,), mesh, {KERNEL_CALL})
    (kernel,) = read_kernels(exported, (x,), mesh)
    assert [s.peers for s in kernel.starts if s.remote] == [(1, 2, 0)]
    for_cpu = jax.export.export(jax.jit(lambda v: v * 2))(x)
    with pytest.raises(StudentProcessDied, match="made for cpu where its kernels"):
        read_kernels(for_cpu, (x,), mesh)
    with pytest.raises(StudentProcessDied, match="does not take this example's inputs"):
        read_kernels(exported, (np.zeros((8, 128), np.float32),), mesh)


@pytest.mark.parametrize("isolate", [False, True], ids=["here", "student's process"])
def test_an_untouched_stub_is_not_started_both_ways(tmp_path, isolate):
    """Its TODO is raised while the program is traced, before anything is lowered: the
    student's own error, not a kernel the grader could not read."""
    folder = tmp_path / "stub"
    folder.mkdir()
    (folder / f"{MODULE}.py").write_text(
        'def send_right(block, axis_name):\n    raise NotImplementedError("TODO: send_right")\n'
    )
    chosen = backends.isolated(SALT, LESSONS) if isolate else backends.here(SALT, LESSONS)
    (er,) = backends.grade_lesson(
        97, MODULE, folder, backend=chosen, lessons=LESSONS, timeout=120
    ).exercises
    assert er.status == Status.NOT_STARTED, _verdict(er)


def test_a_scoped_copy_is_read_on_an_abstract_tpu_mesh():
    """``pltpu.sync_copy`` allocates its semaphore in a ``run_scoped`` region, which newer
    jax lowers only for a named TPU: built on ``tpu_mesh`` (ShapeDtypeStruct args placed on
    it), the kernel is read on every jax this course supports, here and in the worker's
    checks alike (the same ``read_kernels``)."""
    from jax.experimental import pallas as pl
    from jax.experimental.pallas import tpu as pltpu

    from grader.runtime import InProcess, tpu_mesh

    mesh = tpu_mesh((4,), ("x",))

    def kernel(x_hbm, o_ref, buf):
        pltpu.sync_copy(x_hbm, buf)
        o_ref[...] = buf[...] * 2

    def body(block):
        return pl.pallas_call(
            kernel,
            out_shape=jax.ShapeDtypeStruct(block.shape, block.dtype),
            in_specs=[pl.BlockSpec(memory_space=pl.ANY)],
            scratch_shapes=[pltpu.VMEM(block.shape, block.dtype)],
        )(block)

    program = jax.shard_map(body, mesh=mesh, in_specs=P("x"), out_specs=P("x"), check_vma=False)
    x = jax.ShapeDtypeStruct((4 * 8, 128), np.float32, sharding=NamedSharding(mesh, P("x")))
    (kernel_read,) = InProcess({}).kernels(program, (x,), mesh)
    (start,) = kernel_read.starts
    assert not start.remote and start.bytes == 8 * 128 * 4
    assert kernel_read.devices == 4
