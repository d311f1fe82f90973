"""The student's code runs in a process of its own (issue 9): the grading
process keeps the checks, the expected values and the data; what crosses
between them is plain data, checked on the way in."""

from __future__ import annotations

import dataclasses
import json
from collections import Counter

import numpy as np
import pytest

from grader import engine, jaxpr, programs, wire
from grader.isolation import HostCall, StudentProcessDied, _check_exported
from grader.results import Status
from tests.mistakes import MISTAKES
from tests.test_mistakes import assert_caught

LESSONS = [
    (1, "l01_meshes"), (2, "l02_collectives"), (3, "l03_cost_model"),
    (4, "l04_sharded_matmul"), (5, "l05_collective_matmul"), (6, "l06_data_parallel"),
    (7, "l07_fsdp"), (8, "l08_tensor_parallel"), (9, "l09_pipeline"),
    (10, "l10_context_parallel"), (11, "l11_expert_parallel"), (12, "l12_parallel_transformer"),
    (14, "l14_planning"),
]  # fmt: skip


@pytest.fixture
def secret_salt():
    """Data drawn as the grading process draws it: from a salt of its own."""
    programs.set_data_salt(0x5EC12E7)
    yield
    programs.set_data_salt(0)


@pytest.mark.parametrize("lesson, module", LESSONS, ids=[m for _, m in LESSONS])
def test_every_solution_passes_with_its_code_in_another_process(root, lesson, module, secret_salt):
    result = engine.grade_lesson(lesson, module, root / "solutions", timeout=120, isolate=True)
    for er in result.exercises:
        assert er.status == Status.PASSED, (er.exercise, er.status, er.error,
                                            [c.message for c in er.checks if not c.passed])  # fmt: skip
        assert er.narrowed is None


@pytest.mark.parametrize("lesson, module", [(1, "l01_meshes"), (2, "l02_collectives"),
                                            (9, "l09_pipeline"), (14, "l14_planning")])  # fmt: skip
def test_untouched_stubs_are_not_started_in_another_process(root, lesson, module):
    """Plain, eager and compiled exercises alike."""
    result = engine.grade_lesson(lesson, module, root / "exercises", timeout=60, isolate=True)
    assert {er.status for er in result.exercises} == {Status.NOT_STARTED}


SAMPLE = [
    *{m.module: m for m in reversed(MISTAKES)}.values(),  # the first of each lesson
    *(m for m in MISTAKES if m.module == "l01_meshes"),  # plain and eager calls, every one
]
"""Mistakes graded through the student's process in every run (all of them:
``COURSE_TEST_ISOLATE=1 pytest tests/test_mistakes.py``)."""


@pytest.mark.parametrize("mistake", list(dict.fromkeys(SAMPLE)), ids=lambda m: m.id)
def test_mistakes_get_the_same_diagnosis_in_another_process(root, tmp_path, mistake):
    assert_caught(root, tmp_path, mistake, isolate=True)


def test_a_python_hang_times_out_and_a_fresh_process_grades_the_rest(root, tmp_path):
    source = (root / "solutions" / "l01_meshes.py").read_text()
    (tmp_path / "l01_meshes.py").write_text(
        source
        + "\n\ndef shard_shape(global_shape, mesh_sizes, spec):\n    while True:\n        pass\n"
    )
    result = engine.grade_lesson(1, "l01_meshes", tmp_path, only=["shard_shape", "place"],
                                 timeout=3, isolate=True)  # fmt: skip
    hung, placed = result.exercises
    assert hung.status == Status.TIMEOUT and "did not finish" in hung.error
    assert placed.status == Status.PASSED


def test_an_import_error_is_the_students_and_named(tmp_path):
    (tmp_path / "l02_collectives.py").write_text("import not_a_module_anywhere\n")
    result = engine.grade_lesson(2, "l02_collectives", tmp_path, timeout=60, isolate=True)
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

    from grader.isolation import StudentProcess

    process = StudentProcess("/tmp", "l02_collectives")
    read, write = os.pipe()
    process.proc = subprocess.Popen(["sleep", "30"])
    process._in, process._out = read, io.BytesIO()
    process._buffer, process._pending, process._stash, process._ignore = b"", {1}, {}, set()
    os.write(write, line + b"\n")
    with pytest.raises(StudentProcessDied, match="not the grader's answer"):
        process.receive(1)
    assert process.proc is None  # stopped: its state is unknown
    os.close(write)


# ------------------------------------------------------------------ the data


def test_the_data_salt_changes_the_data_and_zero_keeps_the_seed():
    ex = {"seed": 3}
    plain = programs.example_rng(ex).integers(0, 1000, 8)
    assert np.array_equal(plain, np.random.default_rng(3).integers(0, 1000, 8))
    try:
        programs.set_data_salt(12345)
        salted = programs.example_rng(ex).integers(0, 1000, 8)
        programs.set_data_salt(54321)
        other = programs.example_rng(ex).integers(0, 1000, 8)
    finally:
        programs.set_data_salt(0)
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
    from grader.specs.l03_cost_model import Chip

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

    from grader import devices

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

    x = jnp.ones((4,), jnp.float32)
    real = jax.export.export(jax.jit(lambda v: v * 2))(x)
    assert _check_exported(real, (x,), None) is None
    forged_call = "%0 = stablehlo.custom_call @xla_ffi_python_cpu_callback(%arg0) : (tensor<4xf32>) -> tensor<4xf32>"
    forged = SimpleNamespace(
        in_avals=real.in_avals, in_tree=real.in_tree, nr_devices=1,
        mlir_module=lambda: real.mlir_module() + "\n" + forged_call,
    )  # fmt: skip
    with pytest.raises(HostCall, match="calls out of the devices"):
        _check_exported(forged, (x,), None)
    other_inputs = SimpleNamespace(**{**vars(forged), "in_avals": ()})
    with pytest.raises(StudentProcessDied, match="does not take this example's inputs"):
        _check_exported(other_inputs, (x,), None)
