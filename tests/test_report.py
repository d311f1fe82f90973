"""grader/report.py: rich renderables, rendered to plain text and read back."""

from __future__ import annotations

import io
from dataclasses import replace

from rich.console import Console, Group

from course.registry import Exercise, Lesson
from grader import evidence as ev
from grader.report import (
    RENDERERS,
    DeviceGrid,
    ExercisePanel,
    LessonReport,
    NotStartedPanel,
    draw,
)
from grader.results import CheckResult, ExerciseResult, LessonResult, Status


def render(renderable, width: int = 100) -> str:
    console = Console(file=io.StringIO(), width=width, color_system=None)
    console.print(renderable)
    return console.file.getvalue()


def lines(text: str) -> list[str]:
    """The rendered lines without panel borders, stripped."""
    return [line.strip().strip("│").strip() for line in text.splitlines()]


def line_with(text: str, start: str) -> str:
    return next(line for line in lines(text) if line.startswith(start))


def report(result: LessonResult, points: dict[str, int]) -> LessonReport:
    """The report of ``result`` scored by a registry lesson with these points."""
    registered = Lesson(
        2, "collectives", "Collectives from first principles", "", (),
        tuple(Exercise(name, p, "") for name, p in points.items()),
    )  # fmt: skip
    return LessonReport(result, registered.score_result(result), rerun)


def drawn(item: ev.Evidence) -> str:
    return render(Group(*draw(item)))


def rerun(e: ExerciseResult) -> str:
    cmd = f"course grade {e.lesson}.{e.exercise}"
    return cmd + (f" --example '{e.example}'" if e.example else "")


# ------------------------------------------------- evidence as the checks write it


def values_check(mesh_shape: list[int], axis_names: list[str], bad: set[tuple]) -> CheckResult:
    coords = [(i,) for i in range(mesh_shape[0])]
    if len(mesh_shape) == 2:
        coords = [(r, c) for r in range(mesh_shape[0]) for c in range(mesh_shape[1])]
    devices = [ev.DeviceShard(list(c), c not in bad, 3.5 if c in bad else 0.0) for c in coords]
    first = min(bad)
    return CheckResult(
        "values",
        False,
        f"{len(bad)} of {len(coords)} devices hold wrong values "
        "(first at global index (8, 0): expected 16, got 0)",
        example="n=4 rows=8 cols=2 dtype=float32 seed=0",
        evidence=[
            ev.DeviceMap(
                mesh_shape=mesh_shape,
                axis_names=axis_names,
                devices=devices,
                max_abs_err=3.5,
                max_rel_err=0.21875,
                atol=3.2e-5,
                rtol=1e-5,
                first_mismatch=ev.Mismatch(
                    coord=list(first), index=[8, 0], expected=16.0, actual=0.0
                ),
            )
        ],  # fmt: skip
        hint="Blocks land one position off: check the offset you write each arriving block at.",
    )


def steps_check(got: int, want: int) -> CheckResult:
    return CheckResult(
        "steps",
        got == want,
        f"{got} × collective-permute executed; expected {want} (ring steps)",
        evidence=[
            ev.Communication([ev.CollectiveRow("collective-permute", 1, got, got * 128)]),
            ev.CountExpectation("collective-permute", want, got),
        ],
    )


def collectives_check() -> CheckResult:
    return CheckResult(
        "collectives",
        False,
        "the compiled program contains all-gather; allowed: collective-permute",
        evidence=[
            ev.Communication(
                [
                    ev.CollectiveRow("all-gather", 1, 1, 384),
                    ev.CollectiveRow("collective-permute", 2, 6, 768),
                ],
                allowed=["collective-permute"],
            )
        ],
        hint="all-gather comes from lax.all_gather",
    )


def failed_exercise(check: CheckResult, *extra: CheckResult) -> ExerciseResult:
    """A failed exercise as grader/engine.py builds it: the first failed check's hint."""
    checks = [check, *extra]
    return ExerciseResult(
        lesson=2,
        exercise="ring_all_gather",
        status=Status.FAILED,
        checks=checks,
        examples_run=4,
        example=check.example or "n=4 rows=8",
        hint=next((c.hint for c in checks if not c.passed and c.hint), None),
        duration=1.25,
    )


def lesson(*exercises: ExerciseResult) -> LessonResult:
    return LessonResult(
        lesson=2,
        source="workspace/exercises",
        exercises=list(exercises),
        devices="8 CPU devices (simulated)",
        seed=1234,
    )


def passed(name: str) -> ExerciseResult:
    return ExerciseResult(
        lesson=2,
        exercise=name,
        status=Status.PASSED,
        checks=[CheckResult("values", True, "every device's shard matches the reference")],
        examples_run=6,
        duration=0.5,
    )


def not_started(name: str, hint: str | None = None) -> ExerciseResult:
    return ExerciseResult(lesson=2, exercise=name, status=Status.NOT_STARTED, hint=hint)


# ------------------------------------------------- the lesson report


def test_summary_table_lists_every_exercise_with_status_and_points() -> None:
    r = lesson(
        passed("ring_all_gather"),
        replace(failed_exercise(values_check([4], ["x"], {(2,)})), exercise="ring_reduce_scatter"),
        not_started("ring_all_reduce", hint="first hint"),
        ExerciseResult(2, "ring_timeout", Status.TIMEOUT),
        ExerciseResult(2, "ring_error", Status.ERROR, error="ZeroDivisionError: x"),
    )
    points = {"ring_all_gather": 2, "ring_reduce_scatter": 2, "ring_all_reduce": 1,
              "ring_timeout": 3, "ring_error": 1}  # fmt: skip
    text = render(report(r, points))
    assert "Lesson 2 · Collectives from first principles" in text

    def row(name: str) -> str:
        return line_with(text, name)

    assert "✔ passed" in row("ring_all_gather") and "2/2" in row("ring_all_gather")
    assert "6" in row("ring_all_gather") and "0.5 s" in row("ring_all_gather")
    assert "✘ failed" in row("ring_reduce_scatter") and "0/2" in row("ring_reduce_scatter")
    assert "· not started" in row("ring_all_reduce") and "0/1" in row("ring_all_reduce")
    assert "⏱ timeout" in row("ring_timeout") and "0/3" in row("ring_timeout")
    assert "✘ error" in row("ring_error") and "0/1" in row("ring_error")
    assert "graded workspace/exercises on 8 CPU devices (simulated) · seed 1234" in text
    assert "Score 2/9 — not yet" in text
    assert "all passed" not in text


def test_passing_lesson_says_all_passed() -> None:
    r = lesson(passed("ring_all_gather"), passed("ring_reduce_scatter"))
    text = render(report(r, {"ring_all_gather": 2, "ring_reduce_scatter": 2}))
    assert "Score 4/4 — all passed" in text
    assert text.count("✔ passed") == 2
    # nothing failed: no panel, no re-run command
    assert "re-run" not in text
    assert "╭" not in text


def test_failed_exercise_panel() -> None:
    e = failed_exercise(
        values_check([4], ["x"], {(2,)}),
        steps_check(3, 3),
        CheckResult("inputs", True, "inputs left untouched"),
    )
    text = render(report(lesson(e), {"ring_all_gather": 2}))
    assert "✘ ring_all_gather — failed" in text
    assert "example" in text and "n=4 rows=8 cols=2 dtype=float32 seed=0" in text
    assert "re-run" in text
    assert (
        "course grade 2.ring_all_gather --example 'n=4 rows=8 cols=2 dtype=float32 seed=0'" in text
    )
    values_line = line_with(text, "✘    values")
    assert "1 of 4 devices hold wrong values" in values_line
    steps_line = line_with(text, "✔    steps")
    assert "3 × collective-permute executed; expected 3 (ring steps)" in steps_line
    assert line_with(text, "✔    inputs").endswith("inputs left untouched")
    assert line_with(text, "hint").endswith("check the offset you write each arriving block at.")
    # evidence of the failed values check; the passing steps check draws none
    assert "devices (x=4)" in text
    assert "max abs error" in text and "3.5" in text
    assert "max rel error" in text and "0.2188" in text
    assert "atol 3.2e-05, rtol 1e-05" in text
    assert "communication measured" not in text
    assert "Score 0/2 — not yet" in text


def test_rerun_omitted_without_callback() -> None:
    e = failed_exercise(values_check([4], ["x"], {(0,)}))
    text = render(ExercisePanel(e))
    assert "n=4 rows=8" in text
    assert "re-run" not in text
    assert "course grade" not in text


def test_device_map_marks_the_wrong_device_on_a_line() -> None:
    check = values_check([4], ["x"], {(2,)})
    text = render(DeviceGrid(check.evidence[0]))
    assert "devices (x=4)" in text
    assert "2 ✘" in text
    for i in (0, 1, 3):
        assert f"{i} ✔" in text
    assert text.count("✘") == 1
    cell_rows = [line for line in text.splitlines() if "✔" in line or "✘" in line]
    assert len(cell_rows) == 1


def test_device_map_draws_a_2x4_mesh_as_two_rows() -> None:
    check = values_check([2, 4], ["x", "y"], {(1, 3), (0, 1)})
    text = render(DeviceGrid(check.evidence[0]))
    assert "devices (x=2 × y=4)" in text
    cell_rows = [line for line in text.splitlines() if "✔" in line or "✘" in line]
    assert len(cell_rows) == 2
    top, bottom = cell_rows
    assert "00 ✔" in top and "01 ✘" in top and "02 ✔" in top and "03 ✔" in top
    assert "10 ✔" in bottom and "13 ✘" in bottom
    assert text.count("✘") == 2
    assert text.count("✔") == 6


def test_device_map_in_lesson_report() -> None:
    e = failed_exercise(values_check([2, 4], ["data", "model"], {(1, 2)}))
    text = render(report(lesson(e), {"ring_all_gather": 2}))
    assert "devices (data=2 × model=4)" in text
    assert "12 ✘" in text
    assert text.count("✘ ring_all_gather") == 1


def test_comms_table_for_a_collectives_check() -> None:
    e = failed_exercise(collectives_check())
    text = render(report(lesson(e), {"ring_all_gather": 2}))
    assert "communication measured in the compiled program" in text
    assert line_with(text, "all-gather").split() == ["all-gather", "1", "1", "384", "B"]
    assert line_with(text, "collective-permute").split() == [
        "collective-permute",
        "2",
        "6",
        "768",
        "B",
    ]
    assert "allowed: collective-permute" in text
    assert "all-gather comes from lax.all_gather" in text


def test_comms_table_for_steps_and_bytes_checks() -> None:
    text = render(Group(*(line for item in steps_check(2, 3).evidence for line in draw(item))))
    assert "collective-permute" in text and "256 B" in text
    assert "expected 3 × collective-permute, measured 2" in text

    bytes_check = CheckResult(
        "bytes",
        False,
        "1,536 bytes sent per device; the ring optimum is 384 (4.00×)",
        evidence=[
            ev.Communication([ev.CollectiveRow("collective-permute", 1, 3, 1536)]),
            ev.BytesExpectation(384, 1536, itemsize=2),
        ],
    )
    text = render(ExercisePanel(failed_exercise(bytes_check)))
    assert "1,536 B" in text
    assert "expected 384 B per device, measured 1,536 B" in text
    assert "counted at 2 bytes per element" in text


def test_comms_table_unknown_and_empty() -> None:
    unknown = CheckResult(
        "steps",
        False,
        "a collective-permute sits in a loop whose trip count the compiler cannot know",
        evidence=[
            ev.Communication([ev.CollectiveRow("collective-permute", 1, None, None)]),
            ev.CountExpectation("collective-permute", 3, None),
        ],
    )
    text = render(ExercisePanel(failed_exercise(unknown)))
    row = line_with(text, "collective-permute")
    assert row.split() == ["collective-permute", "1", "unknown", "unknown"]
    assert "(none)" in drawn(ev.Communication([]))


def test_sharding_and_memory_evidence() -> None:
    sharding = CheckResult(
        "sharding",
        False,
        "sharded as PartitionSpec() on mesh(x=4); expected PartitionSpec('x',) on mesh(x=4)",
        evidence=[ev.Sharding("PartitionSpec('x',) on mesh(x=4)", "PartitionSpec() on mesh(x=4)")],
        hint="The output is replicated on every device: it should stay sharded.",
    )
    memory = CheckResult(
        "memory",
        False,
        "65,536 temporary bytes per device; one block is 4,096",
        evidence=[ev.Memory(argument=1024, output=2048, temp=65536, bound=4096)],
    )
    text = render(ExercisePanel(failed_exercise(sharding, memory), "course grade 2.x"))
    assert "PartitionSpec('x',) on mesh(x=4)" in text
    assert "PartitionSpec() on mesh(x=4)" in text
    assert "memory per device" in text
    mem_row = line_with(text, "1,024 B")
    assert mem_row.split() == ["1,024", "B", "2,048", "B", "65,536", "B", "4,096", "B"]


def test_not_started_exercises_share_one_panel() -> None:
    r = lesson(
        not_started("ring_all_gather", hint="The ring that sends right is perm = ..."),
        not_started("ring_reduce_scatter", hint="The ring that sends right is perm = ..."),
        passed("ring_all_reduce"),
    )
    text = render(report(r, {"ring_all_gather": 2, "ring_reduce_scatter": 2, "ring_all_reduce": 1}))
    assert text.count("· not started") == 3  # two table rows and one panel title
    assert "ring_all_gather, ring_reduce_scatter: still raising NotImplementedError" in text
    assert "re-run" not in text
    assert "Score 1/5 — not yet" in text


def test_the_not_started_panel_names_the_hint_command_and_prints_no_hint() -> None:
    """Hints are a ladder climbed on request (issue 45 §6): the panel names ``course hint
    N`` and shows none of the stubs' hints (before, it printed each one's first hint, and
    lesson 1's was the whole answer to place)."""
    r = lesson(
        not_started("ring_all_gather", hint="ring_all_gather: send right N − 1 times."),
        not_started("ring_reduce_scatter", hint="ring_reduce_scatter: add what arrives."),
        not_started("ring_all_reduce"),
    )
    text = render(NotStartedPanel(list(r.exercises)), width=120)
    assert "stuck?  course hint 2 gives this lesson's hints one at a time" in text
    assert "send right" not in text and "add what arrives" not in text
    assert "hint (" not in text
    full = render(report(r, {"ring_all_gather": 2, "ring_reduce_scatter": 2, "ring_all_reduce": 1}))
    assert "course hint 2" in full and "send right" not in full


def test_a_notebook_report_names_its_own_hint_call() -> None:
    r = lesson(not_started("ring_all_gather", hint="ring_all_gather: send right N − 1 times."))
    plain = report(r, {"ring_all_gather": 2})
    text = render(LessonReport(r, plain.card, ask_hint=lambda n: f"course.hint({n})"), width=120)
    assert "course.hint(2)" in text and "course hint 2" not in text
    assert "send right" not in text


def test_not_started_panel_without_hint() -> None:
    text = render(NotStartedPanel([not_started("shard_shape")]))
    assert "shard_shape: still raising NotImplementedError" in text
    assert "course hint" in text


def test_error_result_shows_the_error_text() -> None:
    error = (
        "Traceback (most recent call last):\n"
        '  File "exercises/l02_collectives.py", line 12, in ring_all_gather\n'
        "    return x / 0\n"
        "ZeroDivisionError: division by zero"
    )
    e = ExerciseResult(2, "ring_all_gather", Status.ERROR, example="n=3 rows=6", error=error)
    text = render(report(lesson(e), {"ring_all_gather": 2}))
    assert "✘ ring_all_gather — error" in text
    assert "ZeroDivisionError: division by zero" in text
    assert 'File "exercises/l02_collectives.py", line 12' in text
    assert "course grade 2.ring_all_gather --example 'n=3 rows=6'" in text


def test_timeout_panel_title() -> None:
    e = ExerciseResult(2, "ring_all_gather", Status.TIMEOUT, hint="An endless loop?")
    text = render(ExercisePanel(e))
    assert "⏱ ring_all_gather — timeout" in text
    assert "An endless loop?" in text


def test_rows_table_lists_what_differs_per_device() -> None:
    check = CheckResult(
        "values", False, "2 of 8 devices get the wrong slice",
        evidence=[ev.Table(["device", "JAX says", "yours"],
                           [["(0, 1)", "[1:2, 0:2]", "[2:3, 0:2]"], ["(1, 0)", "[4:5, 0:2]", "[1:2, 0:2]"]])],
    )  # fmt: skip
    text = render(ExercisePanel(failed_exercise(check)))
    assert "JAX says" in text and "yours" in text
    row = line_with(text, "(1, 0)")
    assert "[4:5, 0:2]" in row and row.index("[4:5, 0:2]") < row.index("[1:2, 0:2]")


# ------------------------------------------------- drawn by type, never by check name


def test_every_evidence_type_has_one_renderer() -> None:
    assert set(RENDERERS) == set(ev.TYPES.values())


def test_evidence_is_drawn_by_its_type_whatever_the_check_is_called() -> None:
    steps = steps_check(2, 3)
    renamed = CheckResult("ring rounds", False, steps.message, evidence=steps.evidence)
    text = render(ExercisePanel(failed_exercise(renamed)))
    assert "expected 3 × collective-permute, measured 2" in text
    assert "communication measured in the compiled program" in text


def test_one_measurement_handed_over_by_several_checks_is_drawn_once() -> None:
    e = failed_exercise(collectives_check(), steps_check(2, 3))
    text = render(ExercisePanel(e))
    assert text.count("communication measured in the compiled program") == 1
    assert "allowed: collective-permute" in text  # the first table drawn, with its marks
    assert "expected 3 × collective-permute, measured 2" in text  # every expectation


def test_a_note_is_drawn_as_text() -> None:
    assert "could not prepare the explanation" in drawn(
        ev.Note("could not prepare the explanation: ZeroDivisionError()")
    )


def test_a_module_that_will_not_load_is_shown_once():
    error = 'l02_collectives.py has a syntax error (line 1):\nSyntaxError: expected ":"'
    names = ["ring_all_gather", "ring_reduce_scatter", "ring_all_reduce"]
    result = LessonResult(
        2, "/x", [ExerciseResult(2, name, Status.ERROR, error=error) for name in names]
    )
    text = render(report(result, dict.fromkeys(names, 1)))
    assert text.count("SyntaxError") == 1 and "none could run" in text
    assert "lesson 2's exercise file" in text


def test_a_narrowed_run_says_it_does_not_count():
    ok = ExerciseResult(2, "ring_all_gather", Status.PASSED, narrowed="2 devices here; …")
    text = render(report(LessonResult(2, "/x", [ok]), {"ring_all_gather": 2}))
    assert "passed · not counted" in text and "0/2" in text and "2 devices here" in text
    assert "unlocks no solution" in text and "not counted (a narrowed run)" in text


def test_memory_bars_share_one_scale_and_fit_60_columns() -> None:
    item = ev.MemoryBars(
        example="n=4",
        bars=[ev.Bar("arguments", 49_152), ev.Bar("temporaries", 196_608), ev.Bar("outputs", None)],
        marks=[ev.Bar("|params|", 196_608), ev.Bar("|params|/N", 49_152)],
        bound=98_304,
        note="Every device runs the same program.",
    )
    text = render(Group(*draw(item)), width=60)
    assert all(len(line) <= 60 for line in text.splitlines())
    bar = {
        name: line_with(text, name).count("█")
        for name in ("arguments", "temporaries", "temp bound")
    }
    assert bar["temporaries"] == 24 and bar["temp bound"] == 12 and bar["arguments"] == 6
    assert "196,608 B" in line_with(text, "temporaries") and "unknown" in line_with(text, "outputs")
    assert "memory per device · n=4" in text and "same program" in text
    without_bound = ev.MemoryBars("n=2", [ev.Bar("temporaries", 10)], [ev.Bar("|params|", 20)])
    assert "temp bound" not in drawn(without_bound)


# ------------------------------------------------- bonus exercises and the summary line


def _with_bonus(*exercises: ExerciseResult) -> LessonReport:
    registered = Lesson(
        2, "collectives", "Collectives from first principles", "", (),
        (Exercise("ring_all_gather", 2, ""), Exercise("ring_reduce_scatter", 2, ""),
         Exercise("ring_bonus", 1, "", bonus=True)),
    )  # fmt: skip
    result = lesson(*exercises)
    return LessonReport(result, registered.score_result(result), rerun)


def test_a_failed_bonus_is_named_in_the_summary_and_the_run_still_passes() -> None:
    from course import scoring

    bonus = replace(failed_exercise(values_check([4], ["x"], {(2,)})), exercise="ring_bonus")
    rep = _with_bonus(passed("ring_all_gather"), passed("ring_reduce_scatter"), bonus)
    text = render(rep)
    assert "Score 4/4 — every required exercise passed; bonus ring_bonus failed" in text
    assert "all passed" not in text
    assert rep.card.passed and rep.card.run_passed  # the exit status's rule: 0
    assert scoring.Verdict((rep.result,), (rep.card,)).passed


def test_a_bonus_not_started_is_named_and_a_required_failure_still_fails() -> None:
    from course import scoring

    wrong = replace(
        failed_exercise(values_check([4], ["x"], {(2,)})), exercise="ring_reduce_scatter"
    )
    rep = _with_bonus(passed("ring_all_gather"), wrong, not_started("ring_bonus"))
    text = render(rep)
    assert "Score 2/4 — not yet; bonus ring_bonus not started" in text
    assert not rep.card.run_passed
    assert not scoring.Verdict((rep.result,), (rep.card,)).passed


def test_a_run_of_only_a_bonus_follows_its_result() -> None:
    good = _with_bonus(ExerciseResult(2, "ring_bonus", Status.PASSED, examples_run=3))
    assert "Score 0/0 + 1 bonus — all passed" in render(good)
    assert good.card.run_passed and not good.card.passed  # the lesson itself is not passed
    bad = _with_bonus(
        replace(failed_exercise(values_check([4], ["x"], {(2,)})), exercise="ring_bonus")
    )
    assert "Score 0/0 — bonus ring_bonus failed" in render(bad)
    assert not bad.card.run_passed


def test_the_footer_breaks_between_its_parts_at_80_columns() -> None:
    """Issue 48.4: at 80 columns (a terminal's and the notebook's width) the line under the
    table broke "sandbox:" from "on"; it breaks between two parts, each whole, and keeps
    one line where all fit."""
    from course.notebook import REPORT_WIDTH

    r = replace(lesson(passed("ring_all_gather")), sandbox="on",
                source="/home/me/scaling-course/workspace/exercises")  # fmt: skip
    expected = {
        80: ["graded /home/me/scaling-course/workspace/exercises on 8 CPU devices (simulated)",
             "· seed 1234 · sandbox: on"],
        REPORT_WIDTH: ["graded /home/me/scaling-course/workspace/exercises on 8 CPU devices "
                       "(simulated) · seed 1234", "· sandbox: on"],
    }  # fmt: skip
    for width, said in expected.items():
        text = render(report(r, {"ring_all_gather": 2}), width=width)
        footer = [x for x in lines(text) if "seed 1234" in x or "sandbox" in x or "graded " in x]
        assert footer == said, footer
        assert " ".join(footer) == (  # joined, the lines read as the one line does
            "graded /home/me/scaling-course/workspace/exercises on 8 CPU devices (simulated) "
            "· seed 1234 · sandbox: on"
        )
    wide = render(report(r, {"ring_all_gather": 2}), width=140)
    assert (
        "graded /home/me/scaling-course/workspace/exercises on 8 CPU devices (simulated) "
        "· seed 1234 · sandbox: on" in wide
    )
