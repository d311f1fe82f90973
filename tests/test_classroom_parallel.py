"""``course classroom`` at scale and at its edges (issue 38.4, 39.1, 39.6, 39.7): several
submissions at once with the serial run's results, nothing to grade, near-miss names, the
terminal's pictures in results.json once, private copies wherever TMPDIR is, and no
grading without the sandbox where the references can be read."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from course import submissions as safe
from course.commands.classroom import feedback
from grader.results import ExerciseResult, Status
from grader.spec import FRESH_SEEDS
from tests.mistakes import MISTAKES
from tests.test_report import rerun, steps_check, values_check

ROOT = Path(__file__).resolve().parent.parent
L01 = "l01_meshes.py"


def course(home: Path, *args: str, env: dict[str, str] | None = None):
    environment = {**os.environ, "COURSE_HOME": str(home), "COLUMNS": "100",
                   "COURSE_PLATFORM": "cpu", **(env or {})}  # fmt: skip
    return subprocess.run([sys.executable, "-m", "course.cli", *args], cwd=ROOT,
                          env=environment, capture_output=True, text=True, timeout=600)  # fmt: skip


def _class(base: Path) -> Path:
    """Right at the top, wrong (floor division) in a folder, right as a browser's copy in a
    folder, and a near miss only (``l01-meshes.py``)."""
    solution = (ROOT / "solutions" / L01).read_text()
    wrong = next(m for m in MISTAKES if m.id == "floor-division-hides-indivisible")
    files = {
        "alice/l01_meshes.py": solution,
        "bob/homework-1/l01_meshes.py": wrong.source(solution),
        "carol/hw/l01_meshes (1).py": solution,
        "dave/l01-meshes.py": solution,
    }
    for where, text in files.items():
        (base / where).parent.mkdir(parents=True, exist_ok=True)
        (base / where).write_text(text)
    return base


def _documents(out: Path) -> dict[str, dict]:
    docs = {}
    for f in sorted(out.glob("*/results.json")):
        doc = json.loads(f.read_text())
        doc.pop("execution_time")
        docs[f.parent.name] = doc
    return docs


def test_graded_at_once_the_class_gets_the_serial_runs_results(tmp_path):
    subs = _class(tmp_path / "subs")
    runs = {}
    for jobs in ("1", "3"):
        out = tmp_path / f"out{jobs}"
        r = course(tmp_path / "teacher", "classroom", str(subs), "--out", str(out),
                   "--lesson", "1", "--seed", "7", "--jobs", jobs)  # fmt: skip
        assert r.returncode == 0, r.stdout + r.stderr
        assert f"· seed 7 · {jobs} at once ·" in " ".join(r.stdout.split())
        runs[jobs] = ((out / "summary.csv").read_text(), _documents(out))
    assert runs["1"] == runs["3"]
    summary, docs = runs["3"]
    assert summary.splitlines()[1:] == [
        "alice,5,5,0,passed,passed,passed,passed,on",
        "bob,1,5,0,failed,failed,passed,failed,on",
        "carol,5,5,0,passed,passed,passed,passed,on",
        "dave,0,5,0,not submitted,not submitted,not submitted,not submitted,",
    ]
    # the file taken is named where it was not simply l01_meshes.py at the top
    assert "lesson 1: graded hw/l01_meshes (1).py as l01_meshes.py" in docs["carol"]["output"]
    assert "lesson 1: graded homework-1/l01_meshes.py" in docs["bob"]["output"]
    assert "graded" not in docs["alice"]["output"] and "seed 7" in docs["alice"]["output"]
    # a near miss is named, with what to do
    assert docs["dave"]["tests"][0]["output"] == (
        "l01_meshes.py was not handed in; found l01-meshes.py, which is not graded: "
        "name the file l01_meshes.py"
    )


def test_a_class_run_draws_one_fresh_seed_and_says_it(tmp_path):
    subs = tmp_path / "subs"
    (subs / "ann").mkdir(parents=True)
    (subs / "ann" / L01).write_text((ROOT / "exercises" / L01).read_text())  # a stub: quick
    seeds = []
    for n in range(2):
        r = course(tmp_path / "teacher", "classroom", str(subs), "--out", str(tmp_path / f"o{n}"),
                   "--lesson", "1")  # fmt: skip
        assert r.returncode == 0, r.stdout + r.stderr
        said_all = " ".join(r.stdout.split())  # the header wraps at 100 columns: long paths (CI's)
        (said,) = [w for w in said_all.split("·") if w.strip().startswith("seed ")]
        seeds.append(int(said.split()[1]))
        assert (
            f"seed {seeds[-1]}"
            in json.loads((tmp_path / f"o{n}" / "ann" / "results.json").read_text())["output"]
        )
    assert seeds[0] != seeds[1] and all(s in FRESH_SEEDS for s in seeds)


def test_no_submission_is_an_error_that_names_the_near_misses(tmp_path):
    subs = tmp_path / "subs"
    subs.mkdir()
    (subs / "L01_Meshes.py").write_text("x = 1\n")
    (subs / "notes.txt").write_text("hi\n")
    r = course(tmp_path / "teacher", "classroom", str(subs), "--out", str(tmp_path / "out"),
               "--lesson", "1")  # fmt: skip
    assert r.returncode == 2, r.stdout + r.stderr
    said = " ".join(r.stderr.split())
    assert "no submission in" in said and "nothing graded" in said
    assert "found L01_Meshes.py" in said and "notes.txt" not in said
    assert not (tmp_path / "out" / "summary.csv").exists()


def test_near_misses_and_browser_copies():
    import tempfile as tf

    with tf.TemporaryDirectory() as d:
        folder = Path(d)
        for name in ("l01-meshes.py", "lo1_meshes.py", "l01_meshes.py.txt", "l02_collectives.py",
                     "l01_meshes (2).py", "unrelated.py"):  # fmt: skip
            (folder / name).write_text("")
        taken = safe.lesson_file(folder, "l01_meshes")
        assert taken == folder / "l01_meshes (2).py"  # a copy's name is graded
        misses = safe.near_misses(folder, "l01_meshes", taken=taken,
                                  others=frozenset({"l01_meshes", "l02_collectives"}))  # fmt: skip
        assert sorted(misses) == ["l01-meshes.py", "l01_meshes.py.txt", "lo1_meshes.py"]
        (folder / "l01_meshes.py").write_text("")
        assert safe.lesson_file(folder, "l01_meshes") == folder / "l01_meshes.py"  # exact first


def test_results_carry_the_device_map_and_the_headline_once():
    """The terminal's per-device map and the collectives table, as text, in the output
    results.json and junit.xml carry; the first failed check's words only in the headline."""
    er = ExerciseResult(
        2, "ring_all_gather", Status.FAILED, checks=(values_check([4], ["x"], {(1,), (3,)}),
                                                     steps_check(4, 3)),
        example="n=4 rows=8 cols=2 dtype=float32 seed=0",
    )  # fmt: skip
    text = feedback(er, rerun)
    first = "2 of 4 devices hold wrong values (first at global index (8, 0): expected 16, got 0)"
    assert text.splitlines()[0] == f"Failed the values check (also failed: steps): {first}"
    assert text.count(first) == 1  # the headline, not repeated below it
    assert "steps: 4 × collective-permute executed; expected 3 (ring steps)" in text
    assert "1 ✘" in text and "3 ✘" in text and "0 ✔" in text  # which devices, as drawn
    assert "collective-permute" in text.split("steps:")[1]  # the communication table
    assert "re-run it: course grade 2.ring_all_gather --example" in text


def test_a_headline_cut_for_ci_goes_on_below_it_not_again():
    """A values message longer than a CI screen's line (as most real ones are): the
    headline keeps 160 characters, the next line says the rest, and the message is not
    written out a second time below (it was, whole, as "values: …")."""
    from dataclasses import replace

    check = values_check([4], ["x"], {(0,), (1,), (2,), (3,)})
    long = (
        "4 of 4 devices hold wrong values (first at global index (1, 0): expected -4, got "
        "-2); wrong along axis 0: 8 of 16 rows (1, 3–4, 6, 9, 11–12, 14)"
    )
    er = ExerciseResult(2, "ring_all_gather", Status.FAILED, checks=(replace(check, message=long),),
                        example="n=4 rows=1 cols=2 dtype=float32 seed=1")  # fmt: skip
    head, rest, *_ = feedback(er, rerun).splitlines()
    assert len(head) <= 160 and head.startswith("Failed the values check: 4 of 4 devices hold")
    assert head.endswith(" …") and rest.startswith("… ") and rest.endswith("11–12, 14)")
    assert f"{head[:-2]} {rest[2:]}" == f"Failed the values check: {long}"
    text = feedback(er, rerun)
    assert text.count("devices hold wrong values") == 1 and "values: " not in text
    assert "0 ✘" in text and "3 ✘" in text  # the device map still drawn


@pytest.mark.skipif(not os.access("/var/tmp", os.W_OK), reason="needs a TMPDIR outside /tmp")
def test_private_copies_stay_private_with_tmpdir_outside_tmp(tmp_path):
    """A submission that reads every file beside its own private copy sees none of a
    classmate's, even where TMPDIR is not under /tmp (which the sandbox replaces)."""
    spy = (
        "import os\n"
        "top = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))\n"
        "seen = []\n"
        "for d, _, files in os.walk(top):\n"
        "    for f in files:\n"
        "        try:\n"
        "            seen.append(f + ':' + open(os.path.join(d, f)).read()[:40])\n"
        "        except OSError as e:\n"
        "            seen.append(f + ':' + type(e).__name__)\n"
        "raise RuntimeError('SAW ' + repr(seen))\n"
    )
    subs = tmp_path / "subs"
    (subs / "a-spy").mkdir(parents=True)
    (subs / "a-spy" / L01).write_text(spy)
    (subs / "b-victim").mkdir()
    (subs / "b-victim" / L01).write_text(
        "SECRET_OF_THE_VICTIM = 1\n" + (ROOT / "exercises" / L01).read_text()
    )
    with tempfile.TemporaryDirectory(dir="/var/tmp") as outside:
        env_tmp = {"TMPDIR": outside}
        r = course(tmp_path / "teacher", "classroom", str(subs), "--out", str(tmp_path / "out"),
                   "--lesson", "1", "--jobs", "1", env=env_tmp)  # fmt: skip
    assert r.returncode == 0, r.stdout + r.stderr
    spy_out = json.loads((tmp_path / "out" / "a-spy" / "results.json").read_text())
    said = spy_out["tests"][0]["output"]
    if "sandbox: on" not in spy_out["output"]:
        pytest.skip("no sandbox here")
    assert "SAW" in said and "l01_meshes.py:import os" in said  # it ran, and saw itself
    assert "SECRET_OF_THE_VICTIM" not in said


def test_without_a_sandbox_a_class_is_not_graded_where_the_references_are(tmp_path):
    subs = tmp_path / "subs" / "ann"
    subs.mkdir(parents=True)
    (subs / L01).write_text("x = 1\n")
    r = course(tmp_path / "teacher", "classroom", str(subs.parent), "--out", str(tmp_path / "out"),
               "--lesson", "1", env={"COURSE_SANDBOX": "off"})  # fmt: skip
    assert r.returncode == 2, r.stdout + r.stderr
    said = " ".join(r.stderr.split())
    assert "no sandbox here" in said and "reference solutions" in said
    assert str(ROOT / "solutions") in said and "course autograder" in said
    assert not (tmp_path / "out").exists()


def test_ctrl_c_while_several_grade_writes_what_was_graded_at_once(tmp_path):
    """Two submissions hang (a 600 s limit), one is a stub: Ctrl-C once the stub is graded
    ends the run at once (130), with the stub's results written (the hanging ones' workers
    leave with the command: ``grader.sandbox.lifeline.watch_parent``)."""
    import signal
    import threading
    import time

    hang = (ROOT / "solutions" / L01).read_text() + (
        "\n\ndef shard_shape(global_shape, mesh_shape, spec):\n    while True:\n        pass\n"
    )
    subs = tmp_path / "subs"
    for name, text in (
        ("a-hangs", hang),
        ("b-hangs", hang),
        ("c-stub", (ROOT / "exercises" / L01).read_text()),
    ):
        (subs / name).mkdir(parents=True)
        (subs / name / L01).write_text(text)
    env = {**os.environ, "COURSE_HOME": str(tmp_path / "t"), "COURSE_PLATFORM": "cpu"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "course.cli", "classroom", str(subs), "--out", str(tmp_path / "out"),
         "--lesson", "1", "--jobs", "3", "--timeout", "600"],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    lines: list[str] = []
    threading.Thread(target=lambda: lines.extend(proc.stdout), daemon=True).start()
    deadline = time.monotonic() + 300
    while not any("c-stub:" in line for line in lines) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert any("c-stub:" in line for line in lines), lines
    time.sleep(1.0)
    stopped = time.monotonic()
    proc.send_signal(signal.SIGINT)
    proc.wait(timeout=120)
    assert time.monotonic() - stopped < 60  # not the hangs' 600 s
    assert proc.returncode == 130
    rows = (tmp_path / "out" / "summary.csv").read_text().splitlines()
    assert [r.split(",")[0] for r in rows[1:]] == ["c-stub"]
    assert (tmp_path / "out" / "c-stub" / "results.json").exists()


def test_a_copy_renamed_with_spaces_is_graded_as_the_lesson_file(tmp_path):
    """Issue 48.5: ``l02 collectives (1).py`` (underscores turned to spaces on upload, as
    some systems rename) is lesson 2's file, as ``l02_collectives (1).py`` is; a change of
    case or hyphens stays a near miss, and another lesson's spaced name is not taken."""
    for name in ("l02 collectives (1).py", "L02 Collectives.py", "l02-collectives.py",
                 "l01 meshes.py"):  # fmt: skip
        (tmp_path / name).write_text("")
    taken = safe.lesson_file(tmp_path, "l02_collectives")
    assert taken == tmp_path / "l02 collectives (1).py"
    assert safe.copied_as("l02 collectives 2") == "l02_collectives"  # Finder's copy
    assert safe.copied_as("l02  collectives") == "l02_collectives"
    misses = safe.near_misses(tmp_path, "l02_collectives", taken=taken,
                              others=frozenset({"l01_meshes", "l02_collectives"}))  # fmt: skip
    assert sorted(misses) == ["L02 Collectives.py", "l02-collectives.py"]
    assert safe.lesson_file(tmp_path, "l01_meshes") == tmp_path / "l01 meshes.py"


def test_an_uploaded_archive_is_told_to_be_unpacked(tmp_path):
    """Issue 48.5: a raw ``hw.zip`` is not gradable; the output says to unpack it and upload
    the .py, beside what was uploaded (no advice about archives when there is none)."""
    from course import registry
    from course.commands.autograder import nothing_gradable

    lessons = [registry.load().lesson(1)]
    (tmp_path / "hw.zip").write_bytes(b"PK\x03\x04")
    said = nothing_gradable(tmp_path, lessons)
    assert (
        "hw.zip is an archive, and an archive is not unpacked here: unpack it on your "
        "computer and upload the lesson's .py file itself." in said
    )
    assert said.endswith("Uploaded: hw.zip.")
    (tmp_path / "hw.zip").unlink()
    (tmp_path / "notes.txt").write_text("hi\n")
    assert "archive" not in nothing_gradable(tmp_path, lessons)
