"""The grading engine in-process: lessons, examples, and bad input it survives."""

from __future__ import annotations

import shutil

import pytest

from course import registry
from grader import engine
from grader.config import GradeConfig
from grader.results import Status
from grader.sandbox import backends
from grader.spec import FULL, Context, draw_examples, format_example, parse_example
from tests import grades

LESSONS = [(lesson.number, lesson.module) for lesson in registry.load().lessons]


@pytest.mark.parametrize("lesson,module", LESSONS)
def test_solutions_pass(lesson, module):
    """The run's one grade of the solution, with its code in the student's process
    (tests/grades.py: on data from a secret salt; the real grading path), every example
    of the default seed; in this process on seed 1 below."""
    result = grades.solution(lesson, module)
    for er in result.exercises:
        assert er.status == Status.PASSED, (er.exercise, er.status, er.error,
                                            [c.message for c in er.checks if not c.passed])  # fmt: skip
        assert er.narrowed is None and er.examples_run >= min_examples(lesson)


def min_examples(lesson: int) -> int:
    """Examples each exercise must run. The training lessons (6 on) compile
    jax.grad and lax.scan programs several times slower, and issue 10 trades
    examples for speed: two sharp explicit ones and one drawn."""
    return 3 if lesson >= 6 else 4


@pytest.mark.parametrize("lesson,module", LESSONS)
def test_untouched_stubs_are_not_started(root, lesson, module):
    result = backends.grade_lesson(lesson, module, root / "exercises")
    for e in result.exercises:
        assert e.status == Status.NOT_STARTED
        assert e.error and "TODO" in e.error


def _copy_with(root, tmp_path, module: str, extra: str) -> None:
    text = (root / "solutions" / f"{module}.py").read_text()
    (tmp_path / f"{module}.py").write_text(text + "\n" + extra)


def test_syntax_error_is_reported_for_every_exercise(tmp_path):
    (tmp_path / "l02_collectives.py").write_text(
        "def ring_all_gather(x, axis_name)\n    return x\n"
    )
    result = backends.grade_lesson(2, "l02_collectives", tmp_path)
    assert len(result.exercises) == 3
    for e in result.exercises:
        assert e.status == Status.ERROR
        assert "syntax error (line 1)" in e.error
        assert "Traceback" not in e.error  # the student's line, not the grader's stack


def test_import_error_names_the_missing_module(tmp_path):
    (tmp_path / "l01_meshes.py").write_text("import not_a_real_package\n")
    result = backends.grade_lesson(1, "l01_meshes", tmp_path)
    assert all(e.status == Status.ERROR for e in result.exercises)
    assert "not_a_real_package" in result.exercises[0].error


def test_missing_function_is_named(root, tmp_path):
    text = (root / "solutions" / "l01_meshes.py").read_text().replace("def place(", "def put(")
    (tmp_path / "l01_meshes.py").write_text(text)
    result = backends.grade_lesson(1, "l01_meshes", tmp_path, only=["place", "shard_shape"])
    by_name = {e.exercise: e for e in result.exercises}
    assert by_name["place"].status == Status.ERROR
    assert "defines no function place()" in by_name["place"].error
    assert by_name["shard_shape"].status == Status.PASSED  # grading goes on


def test_student_exception_shows_the_students_frames_only(root, tmp_path):
    _copy_with(
        root, tmp_path, "l02_collectives", "def ring_all_gather(x, axis_name):\n    return 1 / 0\n"
    )
    (e,) = backends.grade_lesson(2, "l02_collectives", tmp_path, only=["ring_all_gather"]).exercises
    assert e.status == Status.ERROR
    assert "ZeroDivisionError" in e.error
    assert "l02_collectives.py" in e.error and "return 1 / 0" in e.error
    assert "grader/" not in e.error and "site-packages" not in e.error


def test_python_level_hang_times_out_and_grading_goes_on(root, tmp_path):
    _copy_with(
        root, tmp_path, "l01_meshes", "import time\ndef shard_shape(g, m, s):\n    time.sleep(60)\n"
    )
    result = backends.grade_lesson(
        1, "l01_meshes", tmp_path, only=["shard_shape", "place"], timeout=10.0
    )  # place's examples must fit the limit on a loaded host too
    by_name = {e.exercise: e for e in result.exercises}
    assert by_name["shard_shape"].status == Status.TIMEOUT
    assert "did not finish" in by_name["shard_shape"].error
    assert by_name["place"].status == Status.PASSED


def test_power_of_two_only_code_raises_on_n3_and_is_diagnosed(root, tmp_path):
    from tests.mistakes import MISTAKES

    butterfly = next(m for m in MISTAKES if m.id == "butterfly-power-of-two")
    solution = (root / "solutions" / "l02_collectives.py").read_text()
    (tmp_path / "l02_collectives.py").write_text(butterfly.source(solution))
    example = parse_example("n=3 rows=1 cols=1 dtype=float32 seed=0")
    (e,) = backends.grade_lesson(
        2, "l02_collectives", tmp_path, only=["ring_all_gather"], example=example
    ).exercises
    # partners i XOR d that do not exist leave it with the wrong number of blocks
    assert e.status == Status.FAILED and "expected (3, 1)" in e.checks[0].message
    spec = engine.load_spec("l02_collectives").exercise("ring_all_gather")
    hint = spec.diagnose_error(ValueError("bad perm"), {"n": 3}, [{"n": 1}, {"n": 4}])
    assert "N = 1, 4" in hint and "power of two" in hint
    assert spec.diagnose_error(ValueError("bad perm"), {"n": 3}, [{"n": 6}]) is None


def test_examples_are_deterministic_per_seed():
    spec = engine.load_spec("l02_collectives").exercise("ring_all_gather")
    ctx = engine.context()
    a = draw_examples(spec.strategy(ctx), 6, seed=3)
    b = draw_examples(spec.strategy(ctx), 6, seed=3)
    c = draw_examples(spec.strategy(ctx), 6, seed=4)
    assert a == b and a != c and len(a) == 6


@pytest.mark.parametrize("module", [module for _, module in LESSONS])
def test_drawn_examples_are_new_distinct_and_change_with_the_seed(module):
    """Drawn examples never repeat an explicit case or each other, and another
    --seed draws others: otherwise a seed would re-run the same few examples."""
    ctx = engine.context()
    for spec in engine.load_spec(module).exercises:
        if not spec.max_examples:
            continue
        explicit = spec.explicit(ctx)
        draws = [draw_examples(spec.strategy(ctx), spec.max_examples, s, explicit) for s in (0, 1)]
        for drawn in draws:
            assert len(drawn) == spec.max_examples, spec.name
            assert not [ex for ex in drawn if ex in explicit], spec.name
            assert all(drawn.count(ex) == 1 for ex in drawn), spec.name
        assert draws[0] != draws[1], f"{spec.name}: seeds 0 and 1 draw the same examples"


def test_only_the_full_example_set_counts():
    """A run counts only when it holds every example a grade on 8 devices runs."""
    spec = engine.load_spec("l02_collectives").exercise("ring_all_gather")
    full, why = engine.plan(spec, FULL, seed=2)
    assert why is None and len(full) == len(spec.explicit(FULL)) + spec.max_examples
    more, why = engine.plan(spec, FULL, seed=2, max_examples=spec.max_examples + 3)
    assert why is None and more[: len(full)] == full and len(more) == len(full) + 3
    fewer, why = engine.plan(spec, FULL, seed=2, max_examples=0)
    assert why and "--max-examples" in why and fewer == spec.explicit(FULL)
    one, why = engine.plan(spec, FULL, example=full[-1])
    assert one == [full[-1]] and "--example" in why
    two = Context(n_devices=2, mesh_sizes=(1, 2))
    small, why = engine.plan(spec, two, seed=2)
    assert all(ex["n"] <= 2 for ex in small) and why and "2 devices here" in why
    assert "e.g. n=4" in why  # the first example it could not run


def test_a_lesson_that_needs_no_devices_counts_on_one():
    spec = engine.load_spec("l03_cost_model").exercise("matmul_flops")
    assert engine.plan(spec, Context(n_devices=1, mesh_sizes=(1,)))[1] is None


def test_meshes_include_non_powers_of_two_and_size_one():
    spec = engine.load_spec("l02_collectives").exercise("ring_all_gather")
    ctx = engine.context()
    sizes = {ex["n"] for ex in spec.explicit(ctx)}
    assert {1, 3, 6} <= sizes and ctx.mesh_sizes == (1, 2, 3, 4, 6, 8)


def test_example_round_trips_and_reruns_exactly(root):
    ex = {"n": 6, "rows": 2, "cols": 3, "dtype": "bfloat16", "seed": 17}
    text = format_example(ex)
    assert text == "n=6 rows=2 cols=3 dtype=bfloat16 seed=17" and parse_example(text) == ex
    assert parse_example("mesh=2x4 shape=8 spec=x+y/-") == {
        "mesh": (2, 4),
        "shape": 8,
        "spec": "x+y/-",
    }
    (e,) = backends.grade_lesson(
        2, "l02_collectives", root / "solutions", only=["ring_all_gather"], example=ex
    ).exercises
    assert e.status == Status.PASSED and e.examples_run == 1


def test_bad_example_text_is_rejected():
    with pytest.raises(ValueError, match="key=value"):
        parse_example("n6")


def test_values_compare_every_device_not_just_the_assembled_array(root, tmp_path):
    """Device 0's result everywhere is caught even though it is a plausible global array."""
    shutil.copy(root / "solutions" / "l02_collectives.py", tmp_path)
    code = (
        "_rs = ring_reduce_scatter\n"
        "def ring_reduce_scatter(x, axis_name):\n"
        "    full = ring_all_gather(_rs(x, axis_name), axis_name)\n"
        "    return full[: x.shape[0] // lax.axis_size(axis_name)]\n"
    )
    _copy_with(root, tmp_path, "l02_collectives", code)
    (e,) = backends.grade_lesson(
        2, "l02_collectives", tmp_path, only=["ring_reduce_scatter"]
    ).exercises
    values = next(c for c in e.checks if c.name == "values")
    assert not values.passed and "device 0" in values.hint
    (device_map,) = values.evidence
    assert sum(not d.ok for d in device_map.devices) == device_map.mesh_shape[0] - 1


@pytest.mark.parametrize("lesson,module", LESSONS)
def test_solutions_pass_on_another_seed(root, lesson, module):
    """Drawn examples stay legal (dtypes JAX keeps, divisible dims) whatever the seed: one
    seed beyond the default (1), graded in this process, a lesson a test (seeds 2 and 3 as
    well cost 10 of test_engine's 19.5 minutes at load, issue 44)."""
    result = backends.grade_lesson(lesson, module, root / "solutions", seed=1,
                                   max_examples=40 if lesson == 1 else 3)  # fmt: skip
    assert all(e.passed for e in result.exercises), [
        (e.exercise, e.example, e.checks) for e in result.exercises if not e.passed
    ]


def test_too_few_accelerators_grade_the_lesson_on_simulated_cpus(monkeypatch):
    """Two accelerators cannot run lesson 2's N = 3 … 8: the engine switches that
    lesson to the simulated CPU devices (8 here), where the full set runs."""
    from grader.measure import devices

    cpus = devices.devices()
    two_accelerators = cpus[:2]
    monkeypatch.setattr(devices, "on_accelerators", lambda: True)
    monkeypatch.setattr(
        devices, "devices", lambda simulated=False: cpus if simulated else two_accelerators
    )
    l02, l03 = engine.load_spec("l02_collectives"), engine.load_spec("l03_cost_model")
    config = GradeConfig()
    assert engine._needs_simulation(l02, ["ring_all_gather"], 0, config)
    assert not engine._needs_simulation(l03, ["matmul_flops"], 0, config)  # no mesh needed
    simulated = GradeConfig(simulated=True)
    assert not engine._needs_simulation(l02, ["ring_all_gather"], 0, simulated)  # already
    assert engine.context(simulated=True) == FULL
    assert engine.context().n_devices == 2
    assert devices.describe(simulated=True) == "8 CPU devices (simulated: no accelerator here)"
    assert devices.make_mesh((8,), ("x",), simulated=True).devices.size == 8
    with pytest.raises(ValueError, match="needs 8 devices; 2 available"):
        devices.make_mesh((8,), ("x",))  # the accelerators: too few


def test_a_lesson_graded_on_simulated_cpus_builds_every_mesh_of_them(root, monkeypatch):
    """The engine's choice reaches every mesh a spec builds (``rt.mesh``) through the
    config it hands down: lesson 2's explicit examples (N = 3, 4, 6) run, not fail
    to find their devices, and the report names the simulated ones."""
    from grader.measure import devices

    cpus = devices.devices()
    monkeypatch.setattr(devices, "on_accelerators", lambda: True)
    monkeypatch.setattr(devices, "devices", lambda simulated=False: cpus if simulated else cpus[:2])
    result = backends.grade_lesson(
        2, "l02_collectives", root / "solutions", only=["ring_all_gather"], max_examples=0
    )
    assert result.devices == "8 CPU devices (simulated: no accelerator here)"
    (graded,) = result.exercises
    assert graded.status == Status.PASSED, (graded.status, graded.error)
    assert graded.examples_run == 4


# ------------------------------------------------------------------ a passed check's line


def test_a_passed_check_says_only_what_holds_on_every_example():
    """The line of a check that passed on several examples: the message when all said
    the same; the range of a figure that varies; else each message with its count —
    never the last example's message as if it were common to all."""
    from grader.engine import over_examples

    assert over_examples(["sharded as P('x')"] * 3) == "sharded as P('x') — on all 3 examples"
    assert over_examples(["one"]) == "one"
    assert (
        over_examples(["largest transfer 0 bytes ≤ 64", "largest transfer 2,560 bytes ≤ 64",
                       "largest transfer 128 bytes ≤ 64"])
        == "largest transfer 0–2,560 bytes ≤ 64 — on all 3 examples"
    )  # fmt: skip
    assert (
        over_examples(["|K| = 2·24·4 = 192", "|K| = 2·12·4 = 96"])
        == "|K| = 2·(12–24)·4 = 96–192 — on all 2 examples"
    )
    assert over_examples(["gates within 1.6e-02", "gates within 1.3e-06"]) == (
        "gates within 1.3e-06–1.6e-02 — on all 2 examples"
    )
    assert over_examples(["not measured here: float32", "2,304 temporary bytes",
                          "not measured here: float32"]) == (
        "on all 3 examples: not measured here: float32 (2 examples); "
        "2,304 temporary bytes (1 example)"
    )  # fmt: skip


def test_a_graded_exercise_quotes_the_messages_of_all_its_examples(root):
    """Lesson 11's combine check allows 1.3e-06 on a float32 example and 1.6e-02 on a
    bfloat16 one: the line gives the range, not the last example's figure."""
    result = backends.grade_lesson(
        11, "l11_expert_parallel", root / "solutions", only=["top1_dispatch"]
    )
    (er,) = result.exercises
    assert er.status == Status.PASSED
    (combine,) = [c for c in er.checks if c.name == "combine"]
    assert combine.message.startswith("gates within ") and "–1.6e-02 of softmax" in combine.message
    assert combine.message.endswith(f"— on all {er.examples_run} examples")


def test_the_time_limit_interrupts_python_work_in_the_grading_thread():
    """The engine is single-threaded (no thread of its own: tests/test_contract.py),
    so its time limit, a signal handled in the grading thread, covers every
    example; graded from another thread, it interrupts nothing and breaks nothing."""
    import threading
    import time

    from grader.faults import ExampleTimeout

    def spin(start: float) -> None:  # a student's function that never returns
        while time.monotonic() - start < 60:
            pass

    # The loop runs in a frame of its own, as a student's function does. Python 3.13's
    # interpreter can skip the handlers of the very frame whose tight `while` loop a
    # signal's exception interrupts (CPython issues 130279 and 108214): measured here, a
    # try around the loop in the same frame missed 41 of 100 alarms on 3.13.0 and none on
    # 3.11; the caller's handler caught 100 of 100. The grader's handlers sit in callers.
    start = time.monotonic()
    with pytest.raises(ExampleTimeout, match="no result after 0.2 s"), engine.time_limit(0.2):
        spin(start)
    assert time.monotonic() - start < 30
    ended: list[str] = []

    def elsewhere() -> None:
        with engine.time_limit(0.1):
            time.sleep(0.3)
        ended.append("ended")

    t = threading.Thread(target=elsewhere)
    t.start()
    t.join(timeout=30)
    assert ended == ["ended"]


def test_a_time_limit_that_lands_in_a_gc_callback_is_put_off_not_lost():
    """An ExampleTimeout raised in a gc callback (hypothesis registers one) is printed and
    dropped by Python: measured, an in-process grade of a function that never returned,
    allocating as it looped, then never ended. The dropped alarm is raised again, and
    none is left armed after the block."""
    import gc
    import signal
    import time

    from grader.faults import ExampleTimeout

    inside: list[float] = []

    def slow_callback(phase: str, info: dict) -> None:  # the alarm lands in here
        if phase == "start" and not inside:
            inside.append(time.monotonic())
            end = time.monotonic() + 0.5
            while time.monotonic() < end:
                pass

    def spin(start: float) -> None:  # allocating, so the collector runs now and then
        junk = []
        while time.monotonic() - start < 60:
            junk.append([0])
            if len(junk) > 20_000:  # above every Python's first threshold (3.13's: 2,000)
                junk = []

    gc.callbacks.append(slow_callback)
    try:
        start = time.monotonic()
        with pytest.raises(ExampleTimeout), engine.time_limit(0.2):
            spin(start)
    finally:
        gc.callbacks.remove(slow_callback)
    assert inside and time.monotonic() - start < 30
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)


def test_a_time_limit_dropped_in_a_weakref_callback_is_raised_again():
    """A weakref callback's exception is dropped too (the collector runs them as it
    frees; measured on 3.13: the alarm of the test above landed in one and was lost).
    Python hands it to sys.unraisablehook: the alarm is raised again 50 ms later, and
    the hook is the one before once the block ends."""
    import sys
    import time
    import weakref

    from grader.faults import ExampleTimeout

    class Thing:
        pass

    inside: list[float] = []

    def slow_callback(ref: object) -> None:  # the alarm lands in here
        inside.append(time.monotonic())
        end = time.monotonic() + 0.5
        while time.monotonic() < end:
            pass

    def spin(start: float) -> None:
        thing = Thing()
        keep = weakref.ref(thing, slow_callback)
        del thing  # the callback runs now, for half a second
        while time.monotonic() - start < 60 and keep is not None:
            pass

    hook = sys.unraisablehook
    start = time.monotonic()
    with pytest.raises(ExampleTimeout), engine.time_limit(0.2):
        spin(start)
    assert inside and time.monotonic() - start < 30
    assert sys.unraisablehook is hook
