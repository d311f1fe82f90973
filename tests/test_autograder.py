"""``course autograder OUT.zip`` (issue 38.4, 39.1): the Gradescope autograder run end to
end in a temporary root on the three uploads Gradescope gets (a folder, a browser-renamed
file, nothing gradable), its wheel without a reference, and setup.sh's choice of Python."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from course.commands.autograder import wheel
from tests.mistakes import MISTAKES

ROOT = Path(__file__).resolve().parent.parent
L01 = "l01_meshes.py"


def _course(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "COURSE_PLATFORM": "cpu", "COLUMNS": "100"}
    return subprocess.run([sys.executable, "-m", "course.cli", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)  # fmt: skip


@pytest.fixture(scope="module")
def unzipped(tmp_path_factory) -> Path:
    """The autograder for lesson 1, as Gradescope unzips it into ``source/``."""
    base = tmp_path_factory.mktemp("autograder")
    r = _course("autograder", str(base / "lesson1.zip"), "--lesson", "1", cwd=ROOT)
    assert r.returncode == 0, r.stdout + r.stderr
    source = base / "source"
    with zipfile.ZipFile(base / "lesson1.zip") as z:
        z.extractall(source)
        for info in z.infolist():  # zipfile does not restore modes
            os.chmod(source / info.filename, (info.external_attr >> 16) & 0o777)
    return source


def test_the_autograder_grades_a_folder_and_a_renamed_file_and_says_when_nothing_is_gradable(
    unzipped, tmp_path
):
    solution = (ROOT / "solutions" / L01).read_text()
    wrong = next(m for m in MISTAKES if m.id == "floor-division-hides-indivisible")
    uploads = {
        "folder": {"homework-1/l01_meshes.py": solution},
        "renamed": {"l01_meshes (1).py": wrong.source(solution)},
        "nothing": {"l01-meshes.py": solution, "notes.txt": "hi\n"},
    }
    runs = {}
    for kind, files in uploads.items():
        root = tmp_path / kind
        for where, text in files.items():
            (root / "submission" / where).parent.mkdir(parents=True, exist_ok=True)
            (root / "submission" / where).write_text(text)
        env = {**os.environ, "AUTOGRADER_ROOT": str(root), "PYTHON": sys.executable,
               "COURSE_PLATFORM": "cpu"}  # fmt: skip
        runs[kind] = subprocess.Popen(["bash", str(unzipped / "run_autograder")], cwd=tmp_path,
                                      env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                      text=True)  # fmt: skip
    results = {}
    for kind, proc in runs.items():
        out, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, out + err
        results[kind] = json.loads((tmp_path / kind / "results" / "results.json").read_text())

    folder = results["folder"]
    assert (folder["score"], folder["max_score"]) == (5, 5)
    assert "lesson 1: graded homework-1/l01_meshes.py as l01_meshes.py" in folder["output"]
    assert "seed " in folder["output"]

    renamed = results["renamed"]
    assert (renamed["score"], renamed["max_score"]) == (1, 5)
    assert "lesson 1: graded l01_meshes (1).py as l01_meshes.py" in renamed["output"]
    failed = {t["name"]: t["output"] for t in renamed["tests"] if t["status"] == "failed"}
    assert set(failed) == {"1.shard_shape", "1.device_slices", "1.bytes_per_device"}
    assert failed["1.shard_shape"].startswith("Failed the ")
    assert "re-run it: course grade 1.shard_shape --example" in failed["1.shard_shape"]

    nothing = results["nothing"]
    assert (nothing["score"], nothing["max_score"]) == (0, 5)
    said = nothing["output"]
    assert said.startswith("Nothing gradable was uploaded: this assignment grades l01_meshes.py")
    assert "Found l01-meshes.py: rename it" in said and "notes.txt" in said
    assert {t["output"] for t in nothing["tests"]} == {
        "l01_meshes.py was not handed in; found l01-meshes.py, which is not graded: "
        "name the file l01_meshes.py"
    }


@pytest.mark.parametrize("python", ["missing", "crashes"])
def test_a_course_that_cannot_start_still_gets_a_results_json(unzipped, tmp_path, python):
    """setup.sh failed (no venv) or the installation is broken (Python exits before the
    course writes anything): Gradescope still reads a results.json that says so, not
    "autograder failed"; and a stale one from an earlier run is not taken for it."""
    root = tmp_path / "root"
    (root / "submission").mkdir(parents=True)
    (root / "submission" / L01).write_text("x = 1\n")
    (root / "results").mkdir()
    (root / "results" / "results.json").write_text('{"score": 5}')  # an earlier run's
    fake = tmp_path / "python"
    if python == "crashes":
        fake.write_text("#!/bin/sh\necho 'ModuleNotFoundError: No module named jax' >&2\nexit 1\n")
        fake.chmod(0o755)
    env = {**os.environ, "AUTOGRADER_ROOT": str(root), "PYTHON": str(fake)}
    r = subprocess.run(["bash", str(unzipped / "run_autograder")], env=env,
                       capture_output=True, text=True, timeout=60)  # fmt: skip
    assert r.returncode != 0
    doc = json.loads((root / "results" / "results.json").read_text())
    assert doc["score"] == 0 and doc["tests"] == [] and doc["visibility"] == "visible"
    assert doc["output"].startswith("The autograder itself failed before grading (exit status")
    assert "not your code" in doc["output"]


def test_an_autograder_that_cannot_be_written_is_one_line(tmp_path):
    """OUT.zip in a folder that cannot be made (under a file): a sentence naming it, exit 1,
    no traceback and nothing left behind."""
    (tmp_path / "afile").write_text("")
    r = _course("autograder", str(tmp_path / "afile" / "hw.zip"), "--lesson", "1", cwd=ROOT)
    assert r.returncode == 1 and "Traceback" not in r.stderr, r.stderr
    assert r.stderr.strip() == (
        f"Error: cannot write {tmp_path / 'afile' / 'hw.zip'}: File exists "
        f"({tmp_path / 'afile'}); nothing was written"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["afile"]


def test_the_zip_holds_the_scripts_and_a_wheel_without_any_reference(unzipped):
    names = sorted(p.name for p in unzipped.iterdir())
    assert names == ["run_autograder", "scaling_course-0.1.0-py3-none-any.whl", "setup.sh"]
    assert os.access(unzipped / "run_autograder", os.X_OK) and os.access(
        unzipped / "setup.sh", os.X_OK
    )
    assert "--lesson 1" in (unzipped / "run_autograder").read_text()
    (built,) = unzipped.glob("scaling_course-*-py3-none-any.whl")
    with zipfile.ZipFile(built) as z:
        names = z.namelist()
        texts = {n: z.read(n).decode(errors="replace") for n in names}
    assert not [n for n in names if "solutions" in n]
    assert "course/exercises/l01_meshes.py" in names and "course/autograder/setup.sh" in names
    # every line of a reference that appears nowhere else in the course (its code, the
    # lesson texts' worked examples, the hints): none is in any file of the wheel
    elsewhere = "\n".join(
        p.read_text() for top in ("grader", "course", "tinymodels", "exercises")
        for p in (ROOT / top).rglob("*") if p.suffix in (".py", ".md", ".toml")
    )  # fmt: skip
    own = {
        ref.name: [line.strip() for line in ref.read_text().splitlines()
                   if len(line.strip()) > 25 and line.strip() not in elsewhere]
        for ref in sorted((ROOT / "solutions").glob("l*.py"))
    }  # fmt: skip
    assert all(own.values())
    leaked = {name: line for name, lines in own.items() for line in lines
              for text in texts.values() if line in text}  # fmt: skip
    assert leaked == {}


def test_installed_from_its_wheel_it_grades_without_the_sandbox(tmp_path):
    """The wheel installs (pip, no dependencies: those of the running tests are used) and
    holds no reference, so with the sandbox off it grades; from this checkout, which
    holds them, it refuses, in results.json."""
    name, data = wheel()
    (tmp_path / name).write_bytes(data)
    target = tmp_path / "site"
    pip = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps",
                          "--no-index", "--target", str(target), str(tmp_path / name)],
                         capture_output=True, text=True, timeout=300)  # fmt: skip
    assert pip.returncode == 0, pip.stderr
    assert not (target / "course" / "solutions").exists()
    solution = (ROOT / "solutions" / L01).read_text()
    outcome = {}
    for kind, path in (("wheel", str(target)), ("checkout", None)):
        root = tmp_path / kind
        (root / "submission").mkdir(parents=True)
        (root / "submission" / L01).write_text(solution)
        env = {**os.environ, "AUTOGRADER_ROOT": str(root), "COURSE_SANDBOX": "off",
               "COURSE_PLATFORM": "cpu"}  # fmt: skip
        args = [sys.executable, "-m", "course.commands.autograder", "--lesson", "1"]
        if path:
            env["PYTHONPATH"] = path
        else:
            args.insert(1, "-I")  # this checkout's installation, as run_autograder runs it
        check = subprocess.run([*args[:-2], "--check"], cwd=tmp_path, env=env,
                               capture_output=True, text=True, timeout=120)  # fmt: skip
        r = subprocess.run(args, cwd=tmp_path, env=env, capture_output=True, text=True,
                           timeout=600)  # fmt: skip
        doc = json.loads((root / "results" / "results.json").read_text())
        outcome[kind] = (check.returncode, r.returncode, doc)
    check, code, doc = outcome["wheel"]
    assert (check, code) == (0, 0), doc
    assert doc["score"] == 5 and "sandbox: off" in doc["output"]
    check, code, doc = outcome["checkout"]
    assert (check, code) == (1, 1)
    assert doc["score"] == 0 and doc["tests"] == []
    assert doc["output"].startswith("no sandbox here") and "course autograder" in doc["output"]


SETUP = ROOT / "course" / "autograder" / "setup.sh"


def _bash(script: str, path: Path, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(["/bin/bash", "-c", f"source {SETUP}; {script}"],
                          env={"PATH": str(path), **env}, capture_output=True, text=True,
                          timeout=60)  # fmt: skip


def test_setup_finds_a_python_3_11_or_installs_one_from_deadsnakes(tmp_path):
    """On Gradescope's Ubuntu 22.04 image python3 is 3.10: setup.sh takes $PYTHON or a
    python3.1x that is new enough, and else installs 3.11 (the apt commands it would run
    are recorded here by fakes)."""
    old = tmp_path / "old"
    old.mkdir()
    (old / "python3").write_text("#!/bin/sh\nexit 1\n")  # too old: its version check fails
    log = tmp_path / "apt.log"
    for tool in ("apt-get", "add-apt-repository"):
        (old / tool).write_text(f'#!/bin/sh\necho "{tool} $*" >> {log}\n')
    for f in old.iterdir():
        f.chmod(0o755)
    assert _bash("find_python", old).returncode == 1
    found = _bash("find_python", old, PYTHON=sys.executable)
    assert (found.returncode, found.stdout.strip()) == (0, sys.executable)
    new = tmp_path / "new"
    new.mkdir()
    (new / "python3.11").symlink_to(sys.executable)
    found = _bash("find_python", Path(f"{new}:{old}"))
    assert found.stdout.strip() == str(new / "python3.11")
    installed = _bash("install_python", old)
    assert installed.returncode == 0, installed.stderr
    assert log.read_text().splitlines() == [
        "apt-get update",
        "apt-get install -y --no-install-recommends software-properties-common gpg-agent",
        "add-apt-repository -y ppa:deadsnakes/ppa",
        "apt-get update",
        "apt-get install -y --no-install-recommends python3.11 python3.11-venv",
    ]


def test_setup_makes_the_venv_from_the_python_itself_not_a_link_to_it(tmp_path):
    """A venv made through a link in a folder the sandbox hides (a symlink farm under /tmp,
    ~/.local/bin) points its python there, and the sandbox cannot start it: setup.sh
    resolves the link first."""
    farm = tmp_path / "farm"
    farm.mkdir()
    (farm / "python3.11").symlink_to(sys.executable)
    found = _bash(f"real_python {farm / 'python3.11'}", farm)
    assert found.returncode == 0, found.stderr
    assert found.stdout.strip() == os.path.realpath(sys.executable)
    assert not found.stdout.strip().startswith(str(farm))
