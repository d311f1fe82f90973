"""Which devices the grader runs on: real accelerators, or simulated CPUs.

The number of simulated CPU devices must be fixed before jax is first
imported, so :func:`configure` is called by every entry point (the grading
worker, the tests' conftest, a benchmark's script) before anything imports jax.

Nothing here reads the environment: ``COURSE_DEVICES`` (simulated CPU devices,
default 8) and ``COURSE_PLATFORM`` (``auto``: accelerators when there are at
least two, else CPU; ``cpu``: always simulate) are read at the edge (``course``'s
``--devices`` and ``--cpu``, the worker's :class:`grader.sandbox.worker.Options`)
and parsed by :func:`parse_devices` and :func:`parse_platform`. The worker configures
its devices from its request, and hands the platform down as
:attr:`grader.config.GradeConfig.simulated` (``cpu``: every lesson simulated).

A lesson whose examples need more accelerators than the host has is graded on
the simulated CPU devices instead: the engine says so to whatever builds meshes
(``simulated=True``, from :attr:`grader.config.GradeConfig.simulated`; a spec's
``rt.mesh`` passes its runtime's).
"""

from __future__ import annotations

import contextlib
import math
import os
import re
import sys
from typing import Any

DEFAULT_CPU_DEVICES = 8
PLATFORMS = ("auto", "cpu")
_FLAG = "--xla_force_host_platform_device_count"


def configure(n_cpu: int | None = None, platform: str | None = None) -> None:
    """Ask XLA for ``n_cpu`` host devices (default 8); call before ``import jax``.
    ``platform="cpu"``: a script's own choice (a benchmark's) that jax start no
    accelerator at all; the worker never passes it (it hands ``--cpu`` down as
    :attr:`grader.config.GradeConfig.simulated`).

    The one place the grader writes its process's environment: XLA reads
    ``XLA_FLAGS`` (and jax ``JAX_PLATFORMS``) from it when jax first starts its
    backends, and nothing else fixes the CPU devices' count before that on every
    supported jax. It prepares this fresh process, and the student's processes
    the worker starts inherit it (their environment is built from the worker's,
    :func:`grader.sandbox.processes.environment`): that is their edge."""
    n = DEFAULT_CPU_DEVICES if n_cpu is None else n_cpu
    flags = re.sub(rf"{_FLAG}=\S+", "", os.environ.get("XLA_FLAGS", "")).strip()
    os.environ["XLA_FLAGS"] = f"{flags} {_FLAG}={n}".strip()
    if platform is not None and parse_platform(platform) == "cpu":
        os.environ["JAX_PLATFORMS"] = "cpu"
    if "jax" in sys.modules:  # too late for the environment; try the config options
        import jax

        with contextlib.suppress(Exception):  # backends already up: keep what we have
            jax.config.update("jax_num_cpu_devices", n)


def parse_devices(text: str = "") -> int:
    """Simulated CPU devices, as ``COURSE_DEVICES`` says them (``""``: the default)."""
    raw = text.strip() or str(DEFAULT_CPU_DEVICES)
    try:
        n = int(raw)
    except ValueError:
        raise ValueError(f"COURSE_DEVICES must be a whole number, not {raw!r}") from None
    if n < 1:
        raise ValueError(f"COURSE_DEVICES must be at least 1, not {n}")
    return n


def parse_platform(text: str = "") -> str:
    """``auto`` or ``cpu``, as ``COURSE_PLATFORM`` says it (``""``: ``auto``)."""
    choice = (text.strip() or "auto").lower()
    if choice not in PLATFORMS:
        raise ValueError(f"COURSE_PLATFORM must be 'auto' or 'cpu', not {choice!r}")
    return choice


def cpu_device_count() -> int:
    """The CPU devices this process has (:func:`configure` fixed them)."""
    import jax

    return len(jax.devices("cpu"))


def on_accelerators() -> bool:
    """Meshes are built from real accelerators (not simulated CPUs)."""
    return devices()[0].platform != "cpu"


def devices(simulated: bool = False) -> list[Any]:
    """The devices meshes are built from, in a fixed order (``simulated``: the
    simulated CPU devices, whatever the host has)."""
    import jax

    if not simulated:
        accelerators = [d for d in jax.devices() if d.platform != "cpu"]
        if len(accelerators) >= 2:
            return accelerators
    return list(jax.devices("cpu"))


def describe(simulated: bool = False) -> str:
    devs = devices(simulated)
    kind = devs[0].platform.upper() if devs else "?"
    if len(devs) == 1:
        return f"1 {kind} device"
    mark = " (simulated)" if kind == "CPU" else ""
    return f"{len(devs)} {kind} devices{mark}"


def make_mesh(shape: tuple[int, ...], names: tuple[str, ...], simulated: bool = False) -> Any:
    """A mesh over the first prod(shape) devices (``simulated``: of the simulated
    CPU devices), every axis Explicit."""
    import jax
    from jax.sharding import AxisType

    devs = devices(simulated)
    need = math.prod(shape)
    if need > len(devs):
        raise ValueError(f"a mesh of shape {shape} needs {need} devices; {len(devs)} available")
    return jax.make_mesh(
        shape, names, axis_types=(AxisType.Explicit,) * len(shape), devices=devs[:need]
    )
