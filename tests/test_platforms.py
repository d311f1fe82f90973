"""One process owns the accelerators (issue 49): the grading worker opens one where
it can be had and falls back to the simulated CPUs, saying why, where it cannot;
every student's process (a lone one, a forked one, a cluster's) starts jax on the
CPU only and exports its programs for the platform the worker runs them on.

CI has no accelerator: a worker told ``JAX_PLATFORMS=tpu`` meets what a TPU host
whose chip another process holds gives it, a backend that will not start, and the
student's processes, which inherit the worker's environment, must not try."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
from pathlib import Path

import jax
import numpy as np
import pytest
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from grader import engine
from grader.exported import read_exported
from grader.faults import HOST_LIMIT, GraderFault, HostLimit
from grader.measure import devices
from grader.results import Status
from grader.sandbox import cluster, forks, processes, student
from grader.sandbox.protocol import LessonJob, Request
from grader.sandbox.runner import grade
from tests import reports

SHARD_SHAPE = LessonJob(1, "l01_meshes", ("shard_shape",))
RING = LessonJob(2, "l02_collectives", ("ring_all_gather",))
LOOK = "import jax as _jax\n_p = sorted({d.platform for d in _jax.devices()})\n" + reports.emit(
    "_p"
)


def test_no_students_process_is_started_with_a_platform_but_the_cpu(monkeypatch):
    """The environment every student's process starts with (a lone one's, the fork
    server's, a cluster launcher's: :func:`processes.environment`) names the CPU
    alone, whatever the worker's says."""
    for given in ("tpu", "tpu,cpu", "cuda", ""):
        monkeypatch.setenv("JAX_PLATFORMS", given)
        env, _ = processes.environment()
        assert env["JAX_PLATFORMS"] == "cpu", given
    monkeypatch.delenv("JAX_PLATFORMS")
    assert processes.environment()[0]["JAX_PLATFORMS"] == "cpu"


def test_a_worker_whose_accelerator_will_not_start_grades_on_the_cpu_and_says_why(
    root, tmp_path, monkeypatch
):
    """The worker is told to use a TPU it cannot open (as on a TPU host whose chip a
    notebook's kernel holds): it grades on the simulated CPUs, and every lesson's
    device line says why. Two lessons, so that lesson 1's student's process is
    forked from the fork server where there is one: every student's process saw the
    CPU alone (a process that tried the TPU would have failed to start), and lesson
    2's ring, exported there, was run here."""
    monkeypatch.setenv("JAX_PLATFORMS", "tpu")
    monkeypatch.delenv("COURSE_PLATFORM", raising=False)  # the tests' own "cpu": not this one
    source = (root / "solutions" / "l01_meshes.py").read_text()
    (tmp_path / "l01_meshes.py").write_text(LOOK + source)
    (tmp_path / "l02_collectives.py").write_text(
        (root / "solutions" / "l02_collectives.py").read_text()
    )
    with reports.relayed() as relayed:
        first, second = grade(Request((SHARD_SHAPE, RING), str(tmp_path), timeout=120.0,
                                      max_examples=0))  # fmt: skip
    for result in (first, second):
        assert [e.status for e in result.exercises] == [Status.PASSED], result.exercises[0].error
        assert result.devices.startswith("8 CPU devices (simulated: the TPU could not be opened")
    assert reports.read(relayed.getvalue()) == ["cpu"]


def test_the_refusal_is_one_line_naming_what_holds_the_accelerator():
    held = ("Unable to initialize backend 'tpu': ABORTED: Internal error when accessing libtpu "
            "multi-process lockfile. Run \"$ sudo rm /tmp/libtpu_lockfile\". (set "
            "JAX_PLATFORMS='' to automatically choose an available backend)")  # fmt: skip
    assert devices._refusal(held) == "the TPU is in use by another process (a notebook's kernel?)"
    broken = (
        "Unable to initialize backend 'cuda': INTERNAL: no CUDA-capable device is detected\nmore"
    )
    said = devices._refusal(broken)
    assert said == "the GPU could not be opened (INTERNAL: no CUDA-capable device is detected)"
    assert "\n" not in devices._refusal("x" * 500) and len(devices._refusal("x" * 500)) < 140


def test_the_device_line_says_why_the_devices_are_simulated(monkeypatch):
    assert devices.describe(simulated=True) == "8 CPU devices (simulated: no accelerator here)"
    monkeypatch.setattr(devices._Opened, "asked_cpu", True)
    assert devices.describe(simulated=True) == "8 CPU devices (simulated: the CPU only, as asked)"
    monkeypatch.setattr(devices._Opened, "refused", "the TPU is in use by another process")
    assert devices.describe() == "8 CPU devices (simulated: the TPU is in use by another process)"


def _programs(mesh):
    """Collectives of each kind the lessons use, on ``mesh`` (one axis 'x')."""
    lax = jax.lax
    bodies = {
        "ring": lambda a: lax.ppermute(a, "x", [(i, (i + 1) % 4) for i in range(4)]),
        "psum": lambda a: lax.psum(a, "x"),
        "all_gather": lambda a: lax.all_gather(a, "x", tiled=True),
        "psum_scatter": lambda a: lax.psum_scatter(a, "x", tiled=True),
        "all_to_all": lambda a: lax.all_to_all(a, "x", 0, 0, tiled=True),
    }
    outs = {"ring": P("x"), "psum": P(), "all_gather": P(), "psum_scatter": P("x"),
            "all_to_all": P("x")}  # fmt: skip
    return {
        name: jax.jit(
            jax.shard_map(body, mesh=mesh, in_specs=P("x"), out_specs=outs[name], check_vma=False)
        )  # fmt: skip
        for name, body in bodies.items()
    }


def test_a_program_exported_for_the_tpu_from_the_cpu_reads_as_the_same_program():
    """What an eight-chip host's worker would read of a program a CPU-only student's
    process exported for it: the same collectives, replica groups, custom calls and
    donations as for the CPU (the part of that path that runs without a TPU)."""
    mesh = devices.make_mesh((4,), ("x",), simulated=True)
    x = jax.device_put(np.arange(64, dtype=np.float32).reshape(16, 4), NamedSharding(mesh, P("x")))
    for name, program in _programs(mesh).items():
        read = {
            p: read_exported(jax.export.export(program, platforms=[p])(x)) for p in ("cpu", "tpu")
        }
        assert read["tpu"].program == read["cpu"].program, name
        assert read["tpu"].calls == read["cpu"].calls and read["tpu"].donated == read["cpu"].donated
        assert jax.export.export(program, platforms=["tpu"])(x).platforms == ("tpu",)


def test_the_students_process_exports_for_the_workers_platforms():
    """Over a mesh (even of one device): the worker's mesh platform; a program on one
    device: the worker's own device's (a lone accelerator runs those)."""
    mesh1 = devices.make_mesh((1,), ("x",), simulated=True)
    mesh4 = devices.make_mesh((4,), ("x",), simulated=True)
    told = {"mesh": "cpu", "single": "tpu"}
    assert student._platform((np.zeros(2),), mesh4, told) == "cpu"
    assert student._platform((np.zeros(2),), mesh1, told) == "cpu"
    assert student._platform((np.zeros(2),), None, told) == "tpu"
    spread = jax.device_put(np.zeros(8), NamedSharding(mesh4, P("x")))
    assert student._platform((spread,), None, told) == "cpu"
    assert student._platform((np.zeros(2),), None, {}) == "cpu"  # told nothing: where it is


def test_a_host_that_refuses_loopback_tcp_is_one_sentence(monkeypatch):
    def refused() -> int:
        raise OSError(errno.EAFNOSUPPORT, "Address family not supported by protocol")

    monkeypatch.setattr(cluster, "free_port", refused)
    pool = cluster.ClusterPool("/nonexistent", "l13_multi_host")
    with pytest.raises(HostLimit) as caught:
        pool.get(2, 4)
    said = str(caught.value)
    assert said.startswith(HOST_LIMIT) and "loopback TCP" in said
    assert "Address family not supported by protocol" in said and "\n" not in said
    assert engine._grader_fault(caught.value) == said  # not "internal grader error … report it"
    assert "internal grader error" in engine._grader_fault(GraderFault("a bug"))
    pool.start_ahead(((2, 4),))  # between grades: nothing started, nothing raised
    assert pool.keys() == ()


def test_the_fork_servers_sweep_never_takes_a_childs_thread_for_an_orphan():
    """gVisor's ``children`` files list a child's threads beside it (seen on the lent
    TPU host: one child with five threads listed six ids); a thread's id killed is its
    whole process, and every lesson's process was killed. Only processes whose
    parent is the server count."""
    code = (
        "import threading, time\n"
        + "threading.Thread(target=time.sleep, args=(30,), daemon=True).start()\n" * 3
    )
    child = subprocess.Popen([sys.executable, "-c", code + "print(1, flush=True)\ntime.sleep(30)"],
                             stdout=subprocess.PIPE)  # fmt: skip
    try:
        assert child.stdout is not None and child.stdout.readline()
        threads = [int(t) for t in os.listdir(f"/proc/{child.pid}/task") if int(t) != child.pid]
        assert len(threads) >= 3
        assert forks._is_child_process(child.pid)
        assert not any(forks._is_child_process(t) for t in threads)
        assert child.pid in forks._own_children()
    finally:
        child.kill()
        child.wait()


@pytest.mark.skipif(
    sys.platform != "linux", reason="the worker's fallback runs anywhere; this reads /proc"
)
def test_a_fresh_process_falls_back_once_and_keeps_the_reason():
    code = (
        "from grader.measure import devices\n"
        "devices.configure(3)\n"
        "why = devices.open_devices()\n"
        "import jax\n"
        "print(len(jax.devices()), jax.devices()[0].platform, devices.open_devices() == '', why)\n"
    )
    env = {**os.environ, "JAX_PLATFORMS": "tpu", "PYTHONPATH": str(Path(__file__).parents[1])}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=120)  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("3 cpu True the TPU could not be opened (")
