"""``course classroom``: a folder of submissions → CSV, Gradescope JSON, JUnit XML that validate."""

from __future__ import annotations

import csv
import json
import xml.etree.ElementTree as ET
from pathlib import Path

import jsonschema
import pytest
import xmlschema

from course import registry, scoring
from grader.results import Status
from tests.mistakes import MISTAKES
from tests.test_cli import course

FORMATS = Path(__file__).parent / "data" / "formats"
L01 = "l01_meshes.py"
EXERCISES = ["shard_shape", "device_slices", "place", "bytes_per_device"]
HANG = "\n\ndef device_slices(global_shape, mesh_shape, spec):\n    while True:\n        pass\n"
CRASH = "import os\nos._exit(3)  # kills the grading process at import\n"
SYNTAX = "def shard_shape(global_shape, mesh_shape, spec:\n    return ()\n"


@pytest.fixture(scope="module")
def graded(root, tmp_path_factory) -> Path:
    """Five students' lesson 1: right, wrong, hanging (in a zipped sub-folder), crashing,
    and one that does not parse (in a sub-folder too)."""
    base = tmp_path_factory.mktemp("class")
    solution = (root / "solutions" / L01).read_text()
    wrong = next(m for m in MISTAKES if m.id == "floor-division-hides-indivisible")
    files = {
        "alice": solution,
        "bob": wrong.source(solution),
        "carol/lesson1-folder": solution + HANG,
        "dave": CRASH,
        "erin/hw": SYNTAX,
    }
    for where, text in files.items():
        (base / "subs" / where).mkdir(parents=True)
        (base / "subs" / where / L01).write_text(text)
    home = base / "teacher"
    r = course(home, "classroom", str(base / "subs"), "--out", str(base / "out"),
               "--lesson", "1", "--lesson", "2", "--timeout", "3")  # fmt: skip
    assert r.returncode == 0, r.stdout + r.stderr
    assert not home.exists()  # the teacher's own progress is not touched
    return base / "out"


@pytest.fixture(scope="module")
def root() -> Path:
    return Path(__file__).resolve().parent.parent


def test_csv_summary_is_submission_by_exercise(graded):
    with open(graded / "summary.csv", newline="") as f:
        rows = {row["submission"]: row for row in csv.DictReader(f)}
    assert list(rows) == ["alice", "bob", "carol", "dave", "erin"]
    header = list(next(iter(rows.values())))
    assert header[:4] == ["submission", "score", "max_score", "bonus"]
    assert header[4:8] == [f"1.{e}" for e in EXERCISES] and header[8] == "2.ring_all_gather"
    status = {name: [row[f"1.{e}"] for e in EXERCISES] for name, row in rows.items()}
    assert status["alice"] == ["passed"] * 4
    assert status["bob"][0] == "failed"  # floor division: shard_shape is wrong
    assert status["carol"] == ["passed", "timeout", "passed", "passed"]  # only its own hang
    assert status["dave"] == ["error"] * 4
    assert status["erin"] == ["error"] * 4
    assert rows["alice"]["2.ring_all_gather"] == scoring.NOT_SUBMITTED
    points = {e.name: e.points for e in registry.load().lesson(1).exercises}
    for name, row in rows.items():
        earned = sum(points[e] for e, st in zip(EXERCISES, status[name]) if st == "passed")
        assert int(row["score"]) == earned, name
    assert {row["max_score"] for row in rows.values()} == {"10"}  # lessons 1 and 2: 5 + 5


def test_gradescope_results_validate_and_add_up(graded):
    schema = json.loads((FORMATS / "gradescope-results.schema.json").read_text())
    for name in ("alice", "bob", "carol", "dave", "erin"):
        data = json.loads((graded / name / "results.json").read_text())
        jsonschema.validate(data, schema)
        assert data["score"] == sum(t["score"] for t in data["tests"])
        assert data["max_score"] == sum(t["max_score"] for t in data["tests"])
    carol = json.loads((graded / "carol" / "results.json").read_text())
    (hung,) = [
        t for t in carol["tests"] if t["status"] == "failed" and t["number"].startswith("1.")
    ]
    assert hung["name"] == "1.device_slices" and hung["score"] == 0
    assert (
        "did not finish" in hung["output"]
        and "course grade 1.device_slices --example" in hung["output"]
    )
    dave = json.loads((graded / "dave" / "results.json").read_text())
    assert "exited with code 3" in dave["tests"][0]["output"]
    # each output starts with a sentence that says what failed and why, not a status word
    bob = json.loads((graded / "bob" / "results.json").read_text())
    first = {t["number"]: t["output"].splitlines()[0] for t in bob["tests"]}
    assert first["1.shard_shape"].startswith("Failed the "), first
    assert first["2.ring_all_gather"] == "l02_collectives.py was not handed in"
    assert hung["output"].startswith("Timed out: device_slices did not finish"), hung["output"]
    assert dave["tests"][0]["output"].split()[0] not in {"error", "failed", "timeout"}


def test_a_syntax_error_names_the_submissions_file_not_the_copy_graded(graded):
    erin = json.loads((graded / "erin" / "results.json").read_text())
    shown = erin["tests"][0]["output"]
    headline = shown.splitlines()[0]
    assert headline.startswith("l01_meshes.py has a syntax error (line 1): SyntaxError"), shown
    assert 'File "hw/l01_meshes.py", line 1' in shown  # its place in erin's own folder
    assert "course-classroom-" not in shown and "/tmp" not in shown  # not the private copy's
    junit = (graded / "erin" / "junit.xml").read_text()
    assert "course-classroom-" not in junit and 'File "hw/l01_meshes.py"' in junit


def test_junit_validates_and_counts_match(graded):
    schema = xmlschema.XMLSchema(FORMATS / "junit.xsd")
    for name in ("alice", "bob", "carol", "dave", "erin"):
        path = graded / name / "junit.xml"
        schema.validate(path)
        for suite in ET.parse(path).getroot():
            cases = suite.findall("testcase")
            assert int(suite.get("tests")) == len(cases)
            for kind, attr in (
                ("failure", "failures"),
                ("error", "errors"),
                ("skipped", "skipped"),
            ):
                assert int(suite.get(attr)) == sum(c.find(kind) is not None for c in cases)
    carol = ET.parse(graded / "carol" / "junit.xml").getroot()
    errors = [c.get("name") for c in carol.iter("testcase") if c.find("error") is not None]
    assert errors == ["device_slices"]
    bob = ET.parse(graded / "bob" / "junit.xml").getroot()
    failed = {c.get("name"): c.find("failure") for c in bob.iter("testcase")}
    assert "Integer division" in failed["shard_shape"].text
    # the message (a CI screen's headline) says what failed and why, in one line
    message = failed["shard_shape"].get("message")
    assert message == failed["shard_shape"].text.splitlines()[0] and "\n" not in message
    assert message.startswith("Failed the ") and len(message) > len("Failed the x check: ")
    (hung,) = [c.find("error") for c in carol.iter("testcase") if c.find("error") is not None]
    assert hung.get("message").startswith("Timed out: device_slices did not finish")
    assert hung.get("type") == "timeout"
    erin = ET.parse(graded / "erin" / "junit.xml").getroot()
    errors = [c.find("error") for c in erin.iter("testcase") if c.find("error") is not None]
    assert len(errors) == 4  # lesson 1's exercises (lesson 2 was not handed in: skipped)
    (one,) = {e.get("message") for e in errors}  # the one syntax error, for each
    assert one.startswith("l01_meshes.py has a syntax error (line 1): SyntaxError"), one


def test_the_csv_and_junit_say_whether_the_sandbox_was_on(graded):
    """Issue 19: like the report and ``results.json``, the class's CSV (a last column)
    and each JUnit suite (a ``<property>``) say ``sandbox: on`` or ``off: <why>``."""
    from grader.sandbox import jail
    from tests.sandboxed import SANDBOX as sandbox

    with open(graded / "summary.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert list(rows[0])[-1] == "sandbox"
    said = {row["submission"]: row["sandbox"] for row in rows}
    assert {name: said[name] for name in ("alice", "bob", "carol", "dave")} == dict.fromkeys(
        ["alice", "bob", "carol", "dave"], jail.state(sandbox)
    )
    for name in ("alice", "dave"):
        suites = list(ET.parse(graded / name / "junit.xml").getroot())
        assert [[(p.get("name"), p.get("value")) for p in s.iter("property")] for s in suites] == [
            [("sandbox", jail.state(sandbox))]
        ] * 2  # lessons 1 and 2
        said = json.loads((graded / name / "results.json").read_text())["output"]
        assert f" · sandbox: {jail.state(sandbox)} · seed " in said  # then the class's seed


def test_invalid_documents_are_refused_by_the_schemas():
    """The validators are not vacuous: a wrong key or status fails them."""
    schema = json.loads((FORMATS / "gradescope-results.schema.json").read_text())
    sub = scoring.Submission("x", [scoring.Row(1, "l01_meshes", "place", Status.PASSED, 1, 1)])
    good = scoring.gradescope(sub)
    jsonschema.validate(good, schema)
    for bad in ({**good, "scor": 1}, {**good, "tests": [{**good["tests"][0], "status": "ok"}]}):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(bad, schema)
    xsd = xmlschema.XMLSchema(FORMATS / "junit.xsd")
    xsd.validate(scoring.junit_xml(sub))
    assert not xsd.is_valid("<testsuites><testsuite name='x'><testcase/></testsuite></testsuites>")
    said = scoring.junit_xml(scoring.Submission("x", sub.rows, sandbox="off: no sandbox on darwin"))
    xsd.validate(said)
    (prop,) = ET.fromstring(said.split("\n", 1)[1]).iter("property")
    assert (prop.get("name"), prop.get("value")) == ("sandbox", "off: no sandbox on darwin")
    suite = "<testsuite name='x' tests='0' failures='0' errors='0'>{}</testsuite>"
    for bad in ("<testcase name='a' classname='x' time='0'/><properties/>",  # not first
                "<properties><property name='sandbox'/></properties>"):  # no value  # fmt: skip
        assert not xsd.is_valid(f"<testsuites>{suite.format(bad)}</testsuites>"), bad


def test_a_headline_says_what_failed_and_why_in_one_line():
    from grader.results import CheckResult, ExerciseResult

    def er(status, **fields):
        return ExerciseResult(2, "ring_all_gather", status, **fields)

    checks = [CheckResult("values", True, "ok"), CheckResult("steps", False, "0 steps; expected 3"),
              CheckResult("bytes", False, "0 bytes sent")]  # fmt: skip
    assert scoring.headline(er(Status.FAILED, checks=checks)) == (
        "Failed the steps check (also failed: bytes): 0 steps; expected 3"
    )
    raised = 'Traceback (your code, most recent call last):\n  File "l02.py", line 3, in f\n    1 / 0\nZeroDivisionError: division by zero'  # fmt: skip
    assert scoring.headline(er(Status.ERROR, error=raised)) == (
        "Your code raised ZeroDivisionError: division by zero"
    )
    assert scoring.headline(er(Status.NOT_STARTED)).startswith("Not started: ")
    assert scoring.headline(er(Status.FAULT, error="x")).startswith("Not graded: the grader")
    long = scoring.headline(er(Status.FAILED, checks=[CheckResult("values", False, "word " * 99)]))
    assert len(long) <= scoring.HEADLINE and long.endswith(" …") and "\n" not in long


def test_the_private_copys_paths_become_the_submissions_own(tmp_path):
    from course import submissions
    from grader.results import CheckResult, ExerciseResult, LessonResult

    copy = tmp_path / "course-classroom-x" / "0"
    said = f'  File "{copy}/l01_meshes.py", line 1\nSyntaxError: invalid syntax'
    result = LessonResult(1, str(copy), exercises=(
        ExerciseResult(1, "place", Status.ERROR, error=said, hint=f"see {copy}/l01_meshes.py"),
        ExerciseResult(1, "shard_shape", Status.FAILED, checks=(
            CheckResult("values", False, f"{copy}/l01_meshes.py line 2"),)),
    ))  # fmt: skip
    shown = submissions.own_paths(result, copy, {"l01_meshes": "hw/l01_meshes.py"})
    place, shape = shown.exercises
    assert place.error == '  File "hw/l01_meshes.py", line 1\nSyntaxError: invalid syntax'
    assert place.hint == "see hw/l01_meshes.py"
    assert shape.checks[0].message == "hw/l01_meshes.py line 2"
