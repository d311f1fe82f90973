"""Which devices the grader runs on: real accelerators, or simulated CPUs.

The number of simulated CPU devices must be fixed before jax is first
imported, so :func:`configure` is called by every entry point (the grading
worker, the tests' conftest) before anything imports jax.

Environment variables (flags of ``course grade`` set them too):

``COURSE_DEVICES``   simulated CPU devices (default 8)
``COURSE_PLATFORM``  ``auto`` (default: accelerators when there are at least
                     two, else CPU) or ``cpu`` (always simulate)

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
_FLAG = "--xla_force_host_platform_device_count"


def configure(n_cpu: int | None = None, platform: str | None = None) -> None:
    """Ask XLA for ``n_cpu`` host devices; call before ``import jax``."""
    if n_cpu is not None:
        os.environ["COURSE_DEVICES"] = str(n_cpu)
    if platform is not None:
        os.environ["COURSE_PLATFORM"] = platform
    n = cpu_device_count()
    flags = re.sub(rf"{_FLAG}=\S+", "", os.environ.get("XLA_FLAGS", "")).strip()
    os.environ["XLA_FLAGS"] = f"{flags} {_FLAG}={n}".strip()
    if "jax" in sys.modules:  # too late for XLA_FLAGS; try the config option
        import jax

        with contextlib.suppress(Exception):  # backends already up: keep what we have
            jax.config.update("jax_num_cpu_devices", n)


def cpu_device_count() -> int:
    raw = os.environ.get("COURSE_DEVICES", str(DEFAULT_CPU_DEVICES))
    try:
        n = int(raw)
    except ValueError:
        raise ValueError(f"COURSE_DEVICES must be a whole number, not {raw!r}") from None
    if n < 1:
        raise ValueError(f"COURSE_DEVICES must be at least 1, not {n}")
    return n


def platform_choice() -> str:
    choice = os.environ.get("COURSE_PLATFORM", "auto").lower()
    if choice not in ("auto", "cpu"):
        raise ValueError(f"COURSE_PLATFORM must be 'auto' or 'cpu', not {choice!r}")
    return choice


def on_accelerators() -> bool:
    """Meshes are built from real accelerators (not simulated CPUs)."""
    return devices()[0].platform != "cpu"


def devices(simulated: bool = False) -> list[Any]:
    """The devices meshes are built from, in a fixed order (``simulated``: the
    simulated CPU devices, whatever the host has)."""
    import jax

    if platform_choice() == "auto" and not simulated:
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
