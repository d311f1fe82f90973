"""The student's code runs in a process of its own (issue 9): the grading
process keeps the checks, the expected values and the data; what crosses
between them is plain data, checked on the way in."""

from __future__ import annotations

import dataclasses
import json
import os
from collections import Counter

import numpy as np
import pytest

from grader.faults import HostCall
from grader.measure import jaxpr
from grader.results import Status
from grader.runtime import example_rng
from grader.sandbox import backends, wire
from grader.sandbox.isolation import StudentProcessDied, check_exported
from tests import reports


@pytest.mark.parametrize("lesson, module", [(1, "l01_meshes"), (2, "l02_collectives"),
                                            (9, "l09_pipeline"), (14, "l14_planning")])  # fmt: skip
def test_untouched_stubs_are_not_started_in_another_process(root, lesson, module):
    """Plain, eager and compiled exercises alike."""
    result = backends.grade_lesson(lesson, module, root / "exercises", timeout=60, isolate=True)
    assert {er.status for er in result.exercises} == {Status.NOT_STARTED}


def test_a_python_hang_times_out_and_a_fresh_process_grades_the_rest(root, tmp_path):
    source = (root / "solutions" / "l01_meshes.py").read_text()
    (tmp_path / "l01_meshes.py").write_text(
        source
        + "\n\ndef shard_shape(global_shape, mesh_sizes, spec):\n    while True:\n        pass\n"
    )
    result = backends.grade_lesson(1, "l01_meshes", tmp_path, only=["shard_shape", "place"],
                                 timeout=10, isolate=True)  # fmt: skip
    hung, placed = result.exercises
    assert hung.status == Status.TIMEOUT and "did not finish" in hung.error
    assert placed.status == Status.PASSED


def test_starting_the_process_again_is_not_charged_to_the_next_exercise(root, tmp_path):
    """Issue 19: after a hang, the fresh process's start (here an import that takes
    twice the time limit, as importing jax can on a busy machine) is not the next
    exercise's time: it still passes. The test marks the hang in the folder as it
    sees it begin (the module says so on its stdout): its folder is read-only in
    the sandbox, so the module cannot leave the mark for the next process itself."""
    import threading

    source = (root / "solutions" / "l01_meshes.py").read_text()
    slow_again = (
        "import os as _os, time as _time\n"
        "if _os.path.exists(_os.path.join(_os.path.dirname(__file__), 'hung')):\n"
        "    _time.sleep(4)\n"
    )
    (tmp_path / "l01_meshes.py").write_text(
        slow_again + source + "\n\ndef shard_shape(global_shape, mesh_sizes, spec):\n"
        "    print('course-test: hanging now', flush=True)\n    while True:\n        pass\n"
    )
    done = threading.Event()

    def mark(relayed: reports.Kept) -> None:
        while not done.wait(0.01):
            if "course-test: hanging now" in relayed.getvalue():
                (tmp_path / "hung").touch()
                return

    with reports.relayed() as relayed:
        marker = threading.Thread(target=mark, args=(relayed,))
        marker.start()
        try:
            result = backends.grade_lesson(1, "l01_meshes", tmp_path, only=["shard_shape", "place"],
                                         timeout=2, isolate=True)  # fmt: skip
        finally:
            done.set()
            marker.join()
    hung, placed = result.exercises
    assert hung.status == Status.TIMEOUT
    assert (tmp_path / "hung").exists()  # so the fresh process's import took 4 s
    assert placed.status == Status.PASSED, (placed.status, placed.error)


def test_the_students_process_imports_nothing_of_the_worker():
    """What both sides share sits below both: the student's process, with every
    lesson's spec loaded, holds none of the worker, the runner or the isolation layer."""
    import subprocess
    import sys

    code = (
        "import sys, grader.sandbox.student\n"
        "from course import registry\n"
        "from grader.engine import load_spec\n"
        "for lesson in registry.load().lessons:\n"
        "    load_spec(lesson.module)\n"
        "print(' '.join(m for m in sys.modules if m.startswith('grader')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = set(out.stdout.split())
    assert "grader.sandbox.student" in loaded
    assert not loaded & {"grader.sandbox.worker", "grader.sandbox.runner",
                         "grader.sandbox.isolation"}, loaded  # fmt: skip


def test_no_part_of_the_events_key_reaches_the_students_process(root, tmp_path, monkeypatch):
    """Issue 19: neither the student's environment nor its command line holds the
    key (or half of it) that signs the worker's events; nor a secret of the caller's
    environment (only what Python, JAX and the course read is passed on)."""
    from grader.sandbox import runner
    from grader.sandbox.protocol import LessonJob, Request

    made = iter(["ab" * 16, "cd" * 8])  # the key first, then the marker of the grade's processes
    monkeypatch.setattr(runner.secrets, "token_hex", lambda n: next(made))
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "sekrit-of-the-teachers")
    source = (root / "solutions" / "l01_meshes.py").read_text()
    (tmp_path / "l01_meshes.py").write_text(
        "import pathlib as _pathlib\n"
        "_own = {name: _pathlib.Path(f'/proc/self/{name}').read_bytes().hex()\n"
        "        for name in ('environ', 'cmdline')}\n" + reports.emit("_own") + source
    )
    job = LessonJob(1, "l01_meshes", ("shard_shape",))
    with reports.relayed() as relayed:
        (result,) = runner.grade(Request((job,), str(tmp_path), timeout=120))
    assert result.exercises[0].status == Status.PASSED
    own = reports.read(relayed.getvalue())
    seen = bytes.fromhex(own["environ"]) + bytes.fromhex(own["cmdline"])
    assert b"cdcdcdcd" in seen  # the marker is there: the probe read the right process
    assert b"abab" not in seen
    assert b"sekrit-of-the-teachers" not in seen and b"AWS_SECRET" not in seen
    # what the course reads is passed on (cpu here; auto in the GPU check, benchmarks/gpu_check.sh)
    assert f"COURSE_PLATFORM={os.environ['COURSE_PLATFORM']}\0".encode() in seen


def test_the_students_environment_is_an_allow_list():
    from grader.sandbox import jail

    given = {"PATH": "/bin", "HOME": "/h", "JAX_PLATFORMS": "cpu", "XLA_FLAGS": "-x",
             "PYTHONPATH": "/p", "LC_ALL": "C", "COURSE_DEVICES": "8",
             "GITHUB_TOKEN": "t", "AWS_SECRET_ACCESS_KEY": "k", "DATABASE_URL": "u"}  # fmt: skip
    assert set(jail.environment(given)) == {
        "PATH",
        "HOME",
        "JAX_PLATFORMS",
        "XLA_FLAGS",
        "PYTHONPATH",
        "LC_ALL",
        "COURSE_DEVICES",
    }


def test_undumpable_processes_refuse_their_memory_to_their_user():
    import subprocess
    import sys

    code = (
        "import ctypes\n"
        "from grader.sandbox.lifeline import undumpable\n"
        "libc = ctypes.CDLL(None)\n"
        "before = libc.prctl(3, 0, 0, 0, 0)\n"  # PR_GET_DUMPABLE
        "undumpable()\n"
        "print(before, libc.prctl(3, 0, 0, 0, 0))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["1", "0"]


def test_an_import_error_is_the_students_and_named(tmp_path):
    (tmp_path / "l02_collectives.py").write_text("import not_a_module_anywhere\n")
    result = backends.grade_lesson(2, "l02_collectives", tmp_path, timeout=60, isolate=True)
    assert {er.status for er in result.exercises} == {Status.ERROR}
    assert "not_a_module_anywhere" in result.exercises[0].error


@pytest.mark.parametrize(
    "line", [b"[" * 20_000, b"garbage", b'{"seq": 9, "ok": true}', b'{"ok": true}'],
    ids=["nested-too-deep", "not-json", "unasked-question", "no-question"],
)  # fmt: skip
def test_a_line_that_is_no_answer_ends_the_students_process_not_the_grader(line):
    import io
    import os
    import subprocess

    from grader.sandbox.isolation import StudentProcess

    process = StudentProcess("/tmp", "l02_collectives")
    read, write = os.pipe()
    process.adopt(
        (subprocess.Popen(["sleep", "30"]), io.BytesIO(), read), pending=(1,), loaded=True
    )
    os.write(write, line + b"\n")
    with pytest.raises(StudentProcessDied, match="not the grader's answer"):
        process.receive(1)
    assert process.proc is None  # stopped: its state is unknown
    os.close(write)


# ------------------------------------------------------------------ the data


def test_the_data_salt_changes_the_data_and_zero_keeps_the_seed():
    ex = {"seed": 3}
    plain = example_rng(ex).integers(0, 1000, 8)
    assert np.array_equal(plain, np.random.default_rng(3).integers(0, 1000, 8))
    salted = example_rng(ex, 12345).integers(0, 1000, 8)
    other = example_rng(ex, 54321).integers(0, 1000, 8)
    assert not np.array_equal(plain, salted) and not np.array_equal(salted, other)


# ------------------------------------------------------------------ the wire


@dataclasses.dataclass
class NotOurs:
    x: int


def test_plain_values_round_trip_and_keep_shared_lists():
    row = [1, None]
    value = {
        "grid": [row, row, [2, 3]], "t": (1, 2.5, "s", True, None), "big": 2**70,
        "inf": float("-inf"), "arr": np.arange(6, dtype=np.int32).reshape(2, 3),
        "slice": slice(0, 3, None), "dtype": np.dtype("float32"), "np": np.float32(1.5),
    }  # fmt: skip
    back = wire.loads(wire.dumps(value))
    assert back["grid"][0] is back["grid"][1] and back["grid"][0] is not back["grid"][2]
    assert back["t"] == value["t"] and back["big"] == 2**70 and back["inf"] == float("-inf")
    assert np.array_equal(back["arr"], value["arr"]) and back["arr"].dtype == np.int32
    assert back["slice"] == slice(0, 3) and back["dtype"] == np.float32 and back["np"] == 1.5


def test_only_the_graders_records_travel_as_themselves():
    from grader.lessons.l03_cost_model.spec import Chip

    chip = Chip("toy", 1e12, 1e10)
    assert wire.loads(wire.dumps(chip)) == chip
    stranger = wire.loads(wire.dumps(NotOurs(3)))
    assert isinstance(stranger, wire.Opaque) and type(stranger).__name__ == "NotOurs"


def test_exceptions_come_back_by_class_name():
    assert type(wire.remote_exception("ValueError", "bad")) is ValueError
    custom = wire.remote_exception("ShardingError", "no")
    assert isinstance(custom, wire.RemoteError) and type(custom).__name__ == "ShardingError"
    assert not isinstance(wire.remote_exception("SystemExit", "x"), SystemExit)


def test_a_sharded_array_comes_back_with_its_sharding_and_every_shard():
    import jax
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P

    from grader.measure import devices

    mesh = devices.make_mesh((2, 2), ("a", "b"))
    x = jax.device_put(np.arange(16.0, dtype=np.float32).reshape(4, 4), NamedSharding(mesh, P("a")))
    back = wire.loads(wire.dumps(x), mesh_for=lambda r: mesh)
    assert back.sharding == x.sharding
    assert all(np.array_equal(s.data, t.data) for s, t in zip(back.addressable_shards, x.addressable_shards))  # fmt: skip


@pytest.mark.parametrize(
    "text",
    [
        "not json", '{"t": "nd", "dtype": "float32", "shape": [2], "v": "AAAA"}',
        '{"t": "nd", "dtype": "object", "shape": [], "v": ""}', '{"t": "ref", "v": 3}',
        '{"t": "dc", "cls": "os:system", "v": []}', '{"t": "pickle", "v": ""}', "[1, 2]",
        '{"t": "slice", "v": ["a", 1, null]}',
    ],
    ids=["not-json", "short-data", "object-dtype", "dangling-ref", "foreign-class", "unknown-tag",
         "bare-list", "slice-of-words"],
)  # fmt: skip
def test_what_is_not_a_value_is_refused_or_opaque(text):
    try:
        value = wire.loads(text)
    except wire.WireError:
        return
    assert isinstance(value, wire.Opaque)  # a class from elsewhere: a name, nothing run


# ------------------------------------------------------------------ what the jaxpr said


def test_a_program_summary_round_trips_and_a_malformed_one_is_refused():
    import jax
    import jax.numpy as jnp

    def f(x):
        def body(c, _):
            return c @ c.T[:, : c.shape[1]], None

        return jax.lax.scan(body, x, None, length=3)[0].astype(jnp.bfloat16)

    program = jaxpr.trace(f, jnp.ones((4, 4)))
    back = jaxpr.from_wire(json.loads(json.dumps(jaxpr.to_wire(program))))
    assert back == program and back.dots == program.dots and back.dots[0].loops == (3,)
    assert [lp.inside for lp in back.loops] == [lp.inside for lp in program.loops]
    raw = jaxpr.to_wire(program)
    raw["sites"] = [["exec_python", [], [], [], []]]
    with pytest.raises(ValueError, match="unknown collective"):
        jaxpr.from_wire(raw)
    with pytest.raises(ValueError):
        jaxpr.from_wire({"counts": Counter()})


def test_a_handed_back_program_that_calls_the_host_is_refused():
    """jax.export will not serialise a host callback; a student's process that
    forged one anyway (its own bytes) is read before anything is compiled."""
    from types import SimpleNamespace

    import jax
    import jax.numpy as jnp

    from grader.exported import read_exported
    from grader.measure import stablehlo

    x = jnp.ones((4,), jnp.float32)
    real = jax.export.export(jax.jit(lambda v: v * 2))(x)
    assert check_exported(real, (x,), None, read_exported(real).calls) is None
    forged_call = "    %9 = stablehlo.custom_call @xla_ffi_python_cpu_callback(%arg0) : (tensor<4xf32>) -> tensor<4xf32>\n"
    text = real.mlir_module()
    at = text.index("    return")
    calls = stablehlo.custom_calls(stablehlo.parse(text[:at] + forged_call + text[at:]))
    forged = SimpleNamespace(in_avals=real.in_avals, in_tree=real.in_tree, nr_devices=1)
    with pytest.raises(HostCall, match="calls out of the devices"):
        check_exported(forged, (x,), None, calls)
    other_inputs = SimpleNamespace(**{**vars(forged), "in_avals": ()})
    with pytest.raises(StudentProcessDied, match="does not take this example's inputs"):
        check_exported(other_inputs, (x,), None, calls)


def test_a_process_whose_side_closed_is_told_with_the_code_it_exits_with():
    """A question sent as the student's process ends finds its side of the channel closed
    while its exit status is not known yet (it closed it a moment before it exited): the
    grader waits for that status, and says it (polled at once, a loaded host's crash
    read "it ended", no code)."""
    import subprocess
    import sys

    from grader.sandbox.channel import Channel
    from grader.sandbox.isolation import StudentProcess

    ending = "import os, sys, time\nos.close(0)\nprint(flush=True)\ntime.sleep(0.3)\nsys.exit(3)"
    proc = subprocess.Popen([sys.executable, "-c", ending], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE)  # fmt: skip
    assert proc.stdout is not None and proc.stdout.readline() == b"\n"  # its side closed
    student = StudentProcess("/nowhere", "l01_meshes")
    student.proc, student.channel = proc, Channel(out=proc.stdin)
    try:
        with pytest.raises(StudentProcessDied, match="it exited with code 3$"):
            student.send({"op": "load"})  # "load": sent to the process there is
    finally:
        proc.kill()
        proc.wait()
