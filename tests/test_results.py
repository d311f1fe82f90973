"""grader/results.py and grader/evidence.py: typed evidence, its JSON, and the documented schema."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import jsonschema
import pytest

from course.registry import Exercise, Lesson
from course.scoring import to_json
from grader import evidence as ev
from grader.results import CheckResult, ExerciseResult, LessonResult, Status

SCHEMA = json.loads((Path(__file__).parent.parent / "docs" / "grade-json.schema.json").read_text())

EXAMPLES: list[ev.Evidence] = [
    ev.DeviceMap(
        mesh_shape=[2], axis_names=["x"],
        devices=[ev.DeviceShard([0], True, 0.0), ev.DeviceShard([1], False, 2.0)],
        max_abs_err=2.0, max_rel_err=0.5, atol=1e-6, rtol=1e-5,
        first_mismatch=ev.Mismatch([1], [3, 0], 4.0, 2.0, [[4.0]], [[2.0]]),
    ),
    ev.Sharding("PartitionSpec('x',) on mesh(x=2)", "PartitionSpec() on mesh(x=2)"),
    ev.Communication([ev.CollectiveRow("all-gather", 1, None, None)], allowed=[]),
    ev.CountExpectation("collective-permute", 3, 2),
    ev.BytesExpectation(384, None, itemsize=2),
    ev.Memory(argument=1024, output=None, temp=65536, bound=4096),
    ev.MemoryBars(
        example="n=4", bars=[ev.Bar("arguments", 49664), ev.Bar("temporaries", None)],
        marks=[ev.Bar("|params|", 196608)], bound=98304, note="…",
    ),
    ev.Table(["device", "JAX says", "yours"], [["(0,)", "[0:2]", "[2:4]"]]),
    ev.Note("could not prepare the explanation: ZeroDivisionError()"),
    ev.ScheduleChart(
        title="gpipe_schedule(2, 1)", yours=[["F0", "", "B0"], ["", "F0", "B0"]],
        expected=[["F0", "", "", "B0"], ["", "F0", "B0", ""]], mark=[2, 0], waits_for=[2, 1],
        note="tick 2: backward B0 … needs backward B0 … on stage 1, which runs at the same tick 2",
    ),
    ev.Timeline(n=2, example="n=2", rows=[[0, "×W0 →1", "×W1 →0"], [1, "×W1", "×W0"]], note="…"),
    ev.RingSteps(n=2, example="n=2", held=[[0, 1], [1, 0]],
                 use=[["diagonal", "diagonal"], ["masked", "whole"]], note="…"),
    ev.XlaComparison(
        example="shape=16x32x24", mesh="4", shapes="16×32×24", yours=1152,
        yours_kinds=["reduce-scatter"], optimum=1152, optimum_kinds=["reduce-scatter"],
        xla=None, xla_kinds=[],
    ),
    ev.ReplicaGroups(
        example="mesh=2x3", mesh_shape=[2, 3], axis_names=["data", "model"],
        rows=[ev.GroupedCollective("all-reduce", "f32[4,8]", 192, [0, 0, 0, 1, 1, 1], ["model"])],
    ),
    ev.KindBytes(example="mesh=4x2", rows=[ev.KindBytesRow("all-gather", 86016, 172032, 172032),
                                           ev.KindBytesRow("all-reduce", None, None, 16390)]),
    ev.ExpertLoad(example="n=2", capacity=2, groups=2, routed=[5, 1], kept=[4, 1]),
]  # fmt: skip
"""One item of every evidence type: a new type must add one here (and to the schema)."""


def test_there_is_an_example_of_every_evidence_type():
    assert {type(e) for e in EXAMPLES} == set(ev.TYPES.values())


@pytest.mark.parametrize("item", EXAMPLES, ids=lambda e: e.type_name)
def test_evidence_round_trips_through_json(item):
    check = CheckResult("c", False, "m", evidence=[item])
    er = ExerciseResult(3, "x", Status.FAILED, checks=[check], explanation=[item])
    back = ExerciseResult.from_dict(json.loads(json.dumps(er.to_dict())))
    assert back == er
    assert type(back.checks[0].evidence[0]) is type(item)


@pytest.mark.parametrize("cls", list(ev.TYPES.values()), ids=lambda c: c.type_name)
def test_the_schema_names_every_field_of_every_evidence_type(cls):
    """The documented schema cannot drift from the dataclasses."""
    definition = SCHEMA["$defs"][cls.type_name]
    fields = {"type", *(f.name for f in dataclasses.fields(cls))}
    assert set(definition["properties"]) == fields
    assert set(definition["required"]) == fields
    assert definition["properties"]["type"] == {"const": cls.type_name}
    assert {"$ref": f"#/$defs/{cls.type_name}"} in SCHEMA["$defs"]["evidence"]["oneOf"]


def test_the_schema_names_every_field_of_the_results():
    """Exactly the dataclass fields, plus what the registry adds (``to_json``)."""
    scored_fields = {
        "check": (CheckResult, set()),
        "exercise": (ExerciseResult, {"points", "bonus", "score", "counted"}),
        "lesson": (LessonResult, {"title", "score", "bonus_score", "possible", "passed"}),
    }
    for name, (cls, added) in scored_fields.items():
        declared = set(SCHEMA["$defs"][name]["properties"])
        assert declared == {f.name for f in dataclasses.fields(cls)} | added, name


def scored(result: LessonResult):
    lesson = Lesson(3, "x", "A lesson", "", (), (Exercise("a", 2, ""), Exercise("b", 1, "", True)))
    return lesson.score_result(result)


def test_a_document_with_every_evidence_type_validates():
    checks = [CheckResult("c", False, "m", example="n=2", evidence=EXAMPLES, hint="h")]
    exercises = [
        ExerciseResult(3, "a", Status.FAILED, checks=checks, example="n=2", explanation=EXAMPLES),
        ExerciseResult(3, "b", Status.PASSED),
    ]
    result = LessonResult(3, "exercises", exercises, devices="8 CPU devices", seed=1, duration=0.5)
    doc = json.loads(json.dumps(to_json([result], [scored(result)])))
    jsonschema.validate(doc, SCHEMA)
    (lesson,) = doc["lessons"]
    assert (lesson["score"], lesson["bonus_score"], lesson["possible"]) == (0, 1, 2)
    assert [e["points"] for e in lesson["exercises"]] == [2, 1]


def test_the_schema_refuses_what_it_does_not_document():
    result = LessonResult(3, "exercises", exercises=[ExerciseResult(3, "a", Status.PASSED)])
    doc = to_json([result], [scored(result)])
    doc["lessons"][0]["exercises"][0]["explanation"] = [{"type": "pie_chart", "slices": []}]
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(doc, SCHEMA)
