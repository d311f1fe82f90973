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

**One process owns the accelerators.** A TPU admits one process at a time, and a
GPU's memory is preallocated per process: only the grading worker opens an
accelerator (:func:`open_devices`, which falls back to the CPU, saying why, where
one cannot be had: a notebook's kernel holds the TPU, say). Every other process
(the student's, a cluster's) starts jax on the CPU only (:data:`CPU_ONLY`) and
exports its programs for the platform the worker runs them on (:func:`platforms`).
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
CPU_ONLY = {"JAX_PLATFORMS": "cpu"}
"""What every process but the worker starts jax with: the CPU only, whatever the host has."""


class _Opened:
    """What :func:`open_devices` found (once per process)."""

    asked_cpu = False
    """The CPU only, as asked (``--cpu``, ``COURSE_PLATFORM=cpu``, a benchmark's choice)."""
    refused = ""
    """Why the accelerator could not be opened ("": it was, or none was tried)."""


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
        os.environ["JAX_PLATFORMS"] = CPU_ONLY["JAX_PLATFORMS"]
        _Opened.asked_cpu = True
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


def open_devices() -> str:
    """Start jax's backends in the worker: the accelerators where they can be had,
    else the CPU alone. Where an accelerator is installed but cannot be opened (a
    TPU admits one process, and a notebook's kernel may hold it; its runtime may
    be broken), jax raises rather than falls back: the backends are then cleared
    and started on the CPU, and the reason kept for :func:`describe` (one line).
    Returns that reason ("" where nothing was refused)."""
    import jax

    try:
        jax.devices()
        return ""
    except RuntimeError as exc:
        why = _refusal(str(exc))
    from jax.extend import backend

    backend.clear_backends()
    jax.config.update("jax_platforms", "cpu")
    count = _flag_count()
    if count:
        with contextlib.suppress(Exception):
            jax.config.update("jax_num_cpu_devices", count)
    jax.devices()
    _Opened.refused = why
    return why


def _refusal(text: str) -> str:
    """One line for why an accelerator's backend did not start (jax's message)."""
    first = text.strip().splitlines()[0] if text.strip() else "no reason given"
    kind = re.search(r"backend '(\w+)'", first)
    name = (kind.group(1) if kind else "accelerator").upper().replace("CUDA", "GPU")
    if "lockfile" in first or "already in use" in first or "in use by" in first:
        return f"the {name} is in use by another process (a notebook's kernel?)"
    said = re.sub(r"^Unable to initialize backend '\w+': ", "", first)
    said = re.sub(r"\s*\(set JAX_PLATFORMS=.*$", "", said).strip()
    return f"the {name} could not be opened ({said if len(said) <= 100 else said[:99] + '…'})"


def _flag_count() -> int:
    found = re.search(rf"{_FLAG}=(\d+)", os.environ.get("XLA_FLAGS", ""))
    return int(found.group(1)) if found else 0


def platforms(simulated: bool = False) -> dict[str, str]:
    """The platforms the worker runs a handed-back program on: ``mesh``, one over
    the devices meshes are built from (:func:`devices`); ``single``, one that
    runs on one device (the worker's default: its accelerator where it has one,
    even a lone one). Sent to the student's process, which exports for them."""
    import jax

    def name(device: Any) -> str:  # jax.export names GPU platforms by their runtime
        return jax.export.default_export_platform() if device.platform == "gpu" else device.platform

    return {"mesh": name(devices(simulated)[0]), "single": name(jax.devices()[0])}


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
    """Which devices a lesson's meshes are built from, and why, in one line:
    ``8 TPU devices``, or ``8 CPU devices (simulated: WHY)``."""
    import jax

    devs = devices(simulated)
    kind = devs[0].platform.upper() if devs else "?"
    if kind != "CPU":
        return f"{len(devs)} {kind} device{'s' if len(devs) != 1 else ''}"
    accelerators = [d for d in jax.devices() if d.platform != "cpu"]
    if _Opened.refused:
        why = _Opened.refused
    elif _Opened.asked_cpu:
        why = "the CPU only, as asked"
    elif not accelerators:
        why = "no accelerator here"
    else:
        have = f"{len(accelerators)} {accelerators[0].platform.upper()}"
        if len(accelerators) == 1:
            why = f"{have} here, for the one-device programs"
        else:
            why = f"the lesson's meshes need more devices than the {have}s here"
    if len(devs) == 1:  # the host's CPU itself: nothing simulated
        return f"1 CPU device ({why})"
    return f"{len(devs)} CPU devices (simulated: {why})"


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
