"""What a grade is told in its configuration reaches the student's process, though
the process that asked for the grade has none of it in its environment (issue 34
§5: the environment is read at the edges, and handed down from there)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from grader.config import Sandbox
from grader.results import Status
from grader.sandbox import backends, jail, worker
from grader.sandbox.protocol import LessonJob, Request
from grader.sandbox.runner import grade
from tests import reports
from tests.sandboxed import SANDBOX

SHARD_SHAPE = LessonJob(1, "l01_meshes", ("shard_shape",))
SETTINGS = ("COURSE_DEVICES", "COURSE_PLATFORM", "COURSE_DEBUG", "COURSE_ROOT", "XLA_FLAGS",
            "JAX_PLATFORMS")  # fmt: skip


@pytest.fixture
def bare(monkeypatch: pytest.MonkeyPatch) -> None:
    """None of the settings in this process's environment (nor so in the worker's
    and the student's process's, which inherit it)."""
    for name in SETTINGS:
        monkeypatch.delenv(name, raising=False)


def _probe(root: Path, folder: Path, first: str) -> str:
    """Lesson 1's solution, with ``first`` run as it is imported."""
    source = (root / "solutions" / "l01_meshes.py").read_text()
    (folder / "l01_meshes.py").write_text(first + source)
    return str(folder)


def test_the_devices_a_request_names_are_the_students_processes(root, tmp_path, bare):
    """``devices=4``: the worker configures four CPU devices and the student's
    process it starts has four too (not the default eight)."""
    looks = "import jax as _jax\n_n = len(_jax.devices('cpu'))\n" + reports.emit("_n")
    directory = _probe(root, tmp_path, looks)
    with reports.relayed() as relayed:
        (result,) = grade(Request((SHARD_SHAPE,), directory, timeout=120.0, devices=4,
                                  platform="cpu", max_examples=0))  # fmt: skip
    assert result.exercises[0].status == Status.PASSED, result.exercises[0].error
    assert result.devices == "4 CPU devices (simulated: the CPU only, as asked)"
    assert reports.read(relayed.getvalue()) == 4
    assert "COURSE_DEVICES" not in os.environ  # the test's own: untouched


@pytest.mark.parametrize("debug", [True, False])
def test_debug_shows_the_workers_stderr_as_it_comes(root, tmp_path, bare, debug):
    """``debug`` (``COURSE_DEBUG=1`` at the command's edge) relays what the
    student's process writes on stderr; without it, nothing of it is shown for a
    grade that passes."""
    line = "stderr-of-the-students-process"
    writes = f"import sys as _sys\nprint({line!r}, file=_sys.stderr, flush=True)\n"
    directory = _probe(root, tmp_path, writes)
    with reports.relayed() as relayed:
        (result,) = grade(Request((SHARD_SHAPE,), directory, timeout=120.0, max_examples=0),
                          debug=debug)  # fmt: skip
    assert result.exercises[0].status == Status.PASSED, result.exercises[0].error
    assert (line in relayed.getvalue()) == debug


def test_the_phases_file_the_workers_edge_reads_gets_its_grades_phases(
    root, tmp_path, bare, monkeypatch
):
    """``COURSE_PHASES``, read once by the worker's ``main`` (its Options), names
    the file each grade's phases are appended to; no module reads it after."""
    path = tmp_path / "phases.jsonl"
    monkeypatch.setenv("COURSE_PHASES", str(path))
    folder = tmp_path / "code"
    folder.mkdir()
    directory = _probe(root, folder, "")
    (result,) = grade(Request((SHARD_SHAPE,), directory, timeout=120.0, max_examples=0))
    assert result.exercises[0].status == Status.PASSED, result.exercises[0].error
    (line,) = [json.loads(text) for text in path.read_text().splitlines()]
    assert line["process"] == "worker" and line["phases"]["checks"] > 0


@pytest.mark.skipif(jail.state(SANDBOX) != "on", reason=f"no sandbox here: {jail.state(SANDBOX)}")
@pytest.mark.parametrize("elsewhere", [True, False])
def test_the_references_of_a_course_elsewhere_are_hidden(root, tmp_path, bare, monkeypatch,
                                                         elsewhere):  # fmt: skip
    """``COURSE_ROOT``, read once by the worker's ``main`` (its Options), hides that
    course's ``solutions/`` from the student's process, which reads neither it nor
    the environment; without it, that folder is the submission's like any other."""
    tree = tmp_path / "tree"
    (tree / "solutions").mkdir(parents=True)
    (tree / "solutions" / "secret.py").write_text("REFERENCE = 1\n")
    if elsewhere:
        monkeypatch.setenv("COURSE_ROOT", str(tree))
    else:
        monkeypatch.delenv("COURSE_ROOT", raising=False)
    looks = (
        "import os as _os\n"
        "_seen = _os.path.exists(_os.path.join(_os.path.dirname(__file__), 'solutions', 'secret.py'))\n"
        + reports.emit("_seen")
    )  # fmt: skip
    directory = _probe(root, tree, looks)
    with reports.relayed() as relayed:
        (result,) = grade(Request((SHARD_SHAPE,), directory, timeout=120.0, max_examples=0))
    assert result.exercises[0].status == Status.PASSED, result.exercises[0].error
    assert reports.read(relayed.getvalue()) is not elsewhere


@pytest.mark.skipif(jail.state(SANDBOX) != "on", reason=f"no sandbox here: {jail.state(SANDBOX)}")
def test_a_memory_limit_handed_down_binds_the_students_process(tmp_path, monkeypatch):
    """``COURSE_SANDBOX_MEMORY``, read by the worker's ``main`` into its Options, is
    handed to every student's process it starts (its spares) and binds there, though
    this process's environment has none: 3 GiB at import fails at once, with the
    sandbox's 1 GiB named (with the default 8 GiB it would be allocated). Not ``bare``:
    what this grade leaves started for later grades must keep the tests' devices
    (XLA_FLAGS); with ``bare``, test_isolation run after it graded on one device."""
    monkeypatch.delenv(jail.MEMORY_VARIABLE, raising=False)
    monkeypatch.delenv(jail.SWITCH, raising=False)
    spares = worker.Warm(worker.Options.from_environment({jail.MEMORY_VARIABLE: "1G"})).spares
    assert spares.sandbox == Sandbox(memory="1G")
    (tmp_path / "l01_meshes.py").write_text(
        "import numpy as np\n\nACTIVATIONS = np.ones((3 * 2**30,), np.uint8)\n"
    )
    try:
        result = backends.grade_lesson(1, "l01_meshes", tmp_path, only=["shard_shape"], timeout=120,
                                       backend=backends.isolated(spares=spares))  # fmt: skip
    finally:
        spares.close()
    (er,) = result.exercises
    assert er.status == Status.ERROR and "MemoryError" in er.error, er.error
    assert "sandbox lets the process your code runs in allocate at most 1.0 GiB" in er.error
