"""Issue 19, classroom: a hostile class cannot borrow, forge or break another's
results, nor the teacher's terminal, CSV or XML.

One real ``course classroom`` run (a subprocess, under a time limit) grades a
class of lesson 1 in which: bob's file is a link to alice's, carol's a link to
the course's solution, dan's folder a link to alice's; aaron (graded first)
rewrites zoe's file and zoe (graded last) rewrites aaron's ``results.json`` and
``summary.csv``; one folder is named ``summary.csv``, one holds ESC sequences
and a newline in its name, one starts like a spreadsheet formula.
"""

from __future__ import annotations

import csv
import json
import os
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tests.test_cli import course

ROOT = Path(__file__).resolve().parent.parent
L01 = "l01_meshes.py"
EVIL = "\x1b[31mevil\x1b]0;pwned\x07\nname"
FORMULA = "=SUM(1,2)*HYPERLINK(1)"
ATTACK = """

try:  # what a hostile submission does at import (a sandbox may stop it: then nothing happens)
    with open({path!r}, "w") as _f:
        _f.write({text!r})
except OSError:
    pass
"""


@pytest.fixture(scope="module")
def hostile(tmp_path_factory) -> tuple[Path, Path, str]:
    base = tmp_path_factory.mktemp("hostile")
    subs, out = base / "subs", base / "out"
    solution = (ROOT / "solutions" / L01).read_text()
    for name in ("aaron", "alice", "bob", "carol", "zoe", "summary.csv", EVIL, FORMULA):
        (subs / name).mkdir(parents=True)
    (subs / "alice" / L01).write_text(
        "# alice has not started\n" + (ROOT / "exercises" / L01).read_text()
    )
    (subs / "bob" / L01).symlink_to(subs / "alice" / L01)
    (subs / "carol" / L01).symlink_to(ROOT / "solutions" / L01)
    (subs / "dan").symlink_to(subs / "carol")
    (subs / "aaron" / L01).write_text(
        solution + ATTACK.format(path=str(subs / "zoe" / L01), text="raise SystemExit(1)\n")
    )
    forged = json.dumps({"score": 999, "max_score": 4, "tests": []})
    (subs / "zoe" / L01).write_text(
        solution + ATTACK.format(path=str(out / "aaron" / "results.json"), text=forged)
        + ATTACK.format(path=str(out / "summary.csv"), text="forged\n")
    )  # fmt: skip
    r = course(base / "teacher", "classroom", str(subs), "--out", str(out), "--lesson", "1",
               "--timeout", "30", timeout=900)  # fmt: skip
    assert r.returncode == 0, r.stdout + r.stderr
    return out, subs, r.stdout


def _results(out: Path, name: str) -> dict:
    return json.loads((out / name / "results.json").read_text())


def _summary(out: Path) -> list[dict]:
    with open(out / "summary.csv", newline="") as f:
        return list(csv.DictReader(f))


def test_a_link_that_leaves_the_submission_is_refused(hostile):
    out, _, _ = hostile
    for name in ("bob", "carol", "dan"):
        res = _results(out, name)
        assert res["score"] == 0, name
        assert all(t["status"] == "failed" for t in res["tests"])
        says = res["tests"][0]["output"]
        assert "refused" in says and "only a submission's own files are graded" in says, says
    assert (
        "l01_meshes.py is a link that leaves the submission"
        in _results(out, "carol")["tests"][0]["output"]
    )
    assert "folder is a link" in _results(out, "dan")["tests"][0]["output"]


def test_a_submission_cannot_change_a_classmates_file_or_results(hostile):
    out, subs, _ = hostile
    for name in ("zoe", "aaron"):  # zoe graded from its private copy, made before aaron ran;
        res = _results(out, name)  # aaron's results.json, forged by zoe, written over
        assert res["score"] == res["max_score"] > 0 and len(res["tests"]) == 4, (name, res)
    rows = {r["submission"]: r for r in _summary(out)}
    assert rows["zoe"]["score"] == rows["aaron"]["score"] == rows["zoe"]["max_score"]


def test_names_are_escaped_for_the_terminal_csv_and_xml(hostile):
    out, _, stdout = hostile
    shown = "\\x1b[31mevil\\x1b]0;pwned\\x07\\x0aname"
    assert "\x1b" not in stdout and "\x07" not in stdout and shown in stdout
    rows = _summary(out)
    names = [r["submission"] for r in rows]
    assert shown in names and "'" + FORMULA in names and FORMULA not in names
    assert len(rows) == 9  # aaron alice bob carol dan zoe, summary.csv, the two odd names
    for junit in out.glob("*/junit.xml"):
        root = ET.parse(junit).getroot()  # well-formed, whatever the name held
        assert "\n" not in root.get("name") and "\x1b" not in root.get("name")
    assert (out / shown / "junit.xml").exists()


def test_a_submission_named_like_an_output_does_not_collide(hostile):
    out, _, stdout = hostile
    assert (out / "summary.csv").is_file()
    assert _results(out, "summary.csv~2")["tests"][0]["output"] == "l01_meshes.py was not handed in"
    assert "results in summary.csv~2/" in stdout


PEEK = """
import importlib.util as _util, json as _json, os as _os

_tried, _got = {}, None
for _what, _path in (("classmate", CLASSMATE), ("solution", SOLUTION), ("home", ELSEWHERE)):
    try:
        _got = _got or open(_path).read()
        _tried[_what] = "read"
    except OSError as _exc:
        _tried[_what] = type(_exc).__name__
try:  # a solution imported as a module of its own
    _spec = _util.spec_from_file_location("_answer", SOLUTION)
    _answer = _util.module_from_spec(_spec)
    _spec.loader.exec_module(_answer)
    globals().update({k: v for k, v in vars(_answer).items() if not k.startswith("__")})
    _tried["import"] = "imported"
except OSError as _exc:
    _tried["import"] = type(_exc).__name__
for _what, _path in (("class", SUBS), ("results", OUT), ("cache", CACHE)):
    try:
        _tried[_what] = sorted(_os.listdir(_path))
    except OSError as _exc:
        _tried[_what] = type(_exc).__name__
try:
    _os.makedirs(CACHE, exist_ok=True)
    with open(_os.path.join(CACHE, "planted"), "w") as _f:
        _f.write("a compiled program of my choosing")
    _tried["plant"] = "written"
except OSError as _exc:
    _tried["plant"] = type(_exc).__name__
if _got is not None:
    exec(_got)  # someone else's answer, as its own
elif _tried["import"] != "imported":
    raise RuntimeError("peeked: " + _json.dumps(_tried))
"""
QUIT = """import os, sys
print("sandbox: cannot mount tmpfs on /tmp: Invalid argument", file=sys.stderr, flush=True)
os._exit(125)  # the exit code a sandbox that cannot be made ends with
"""


@pytest.fixture(scope="module")
def peeked():
    """Issue 19 §2–5, one real ``course classroom`` run in a folder outside /tmp
    (the sandbox's private /tmp would hide a class there anyway): alice is right
    and graded first (the compile cache fills); peeker reads alice's file and the
    course's solution and a file in the teacher's home, imports the solution, lists
    the class, the results and the cache, plants a file in the cache; quitter exits 125 after printing what a
    failed sandbox prints; mallory's file is a hard link to a solution's copy.
    RESULTS holds a compile cache from an earlier run."""
    import shutil
    import tempfile

    from grader.sandbox import jail
    from tests.sandboxed import SANDBOX as sandbox

    if not jail.on(sandbox):
        pytest.skip(f"no sandbox here: {jail.state(sandbox)}")
    try:
        base = Path(tempfile.mkdtemp(prefix=".course-class-test-", dir=Path.home())).resolve()
    except OSError as exc:
        pytest.skip(f"no folder outside /tmp to write in: {exc}")
    try:
        subs, out = base / "subs", base / "out"
        solution = (ROOT / "solutions" / L01).read_text()
        for name in ("alice", "peeker", "quitter", "mallory"):
            (subs / name).mkdir(parents=True)
        (subs / "alice" / L01).write_text(solution)
        (subs / "peeker" / L01).write_text(
            PEEK.replace("CLASSMATE", repr(str(subs / "alice" / L01)))
            .replace("SOLUTION", repr(str(ROOT / "solutions" / L01)))
            .replace("SUBS", repr(str(subs)))
            .replace("OUT", repr(str(out)))
            .replace("CACHE", repr(str(out / ".cache" / "jax")))
            .replace("ELSEWHERE", repr(str(base / "elsewhere" / L01)))
        )
        (subs / "quitter" / L01).write_text(QUIT)
        (base / "elsewhere").mkdir()
        (base / "elsewhere" / L01).write_text(solution)
        os.link(base / "elsewhere" / L01, subs / "mallory" / L01)
        (out / ".cache" / "jax").mkdir(parents=True)  # as a class graded into it before left it
        (out / ".cache" / "jax" / "an-entry").write_bytes(b"a compiled reference program")
        r = course(base / "teacher", "classroom", str(subs), "--out", str(out), "--lesson", "1",
                   "--timeout", "30", timeout=900)  # fmt: skip
        assert r.returncode == 0, r.stdout + r.stderr
        yield out, r.stdout
    finally:
        shutil.rmtree(base, ignore_errors=True)


def test_a_submission_sees_no_classmate_no_solution_and_no_cache(peeked):
    out, _ = peeked
    assert _results(out, "alice")["score"] == _results(out, "alice")["max_score"] > 0
    res = _results(out, "peeker")
    assert res["score"] == 0 and " · sandbox: on · seed " in res["output"]
    says = res["tests"][0]["output"]
    match = re.search(r"peeked: (\{.*\})", says)
    assert match, says
    tried = json.loads(match.group(1))
    assert tried["classmate"] == tried["solution"] == tried["import"] == "FileNotFoundError"
    assert tried["home"] == "FileNotFoundError"  # a file in the teacher's home folder
    for what in ("class", "results"):  # not there (the home that holds them is hidden), or empty
        assert tried[what] in ("FileNotFoundError", []), (what, tried[what])
    assert tried["cache"] == "FileNotFoundError" and tried["plant"] in (
        "OSError",
        "FileNotFoundError",
    )
    cache = out / ".cache" / "jax"
    assert (cache / "an-entry").read_bytes() == b"a compiled reference program"
    assert not (cache / "planted").exists()


def test_a_student_exiting_125_is_the_students_exit_not_a_failed_sandbox(peeked):
    out, _ = peeked
    res = _results(out, "quitter")
    assert res["score"] == 0
    for t in res["tests"]:
        assert "exited with code 125" in t["output"], t["output"]
        assert "grader" not in t["output"] and "could not be made" not in t["output"]
    junit = ET.parse(out / "quitter" / "junit.xml").getroot()
    assert {e.get("type") for e in junit.iter("error")} == {"error"}  # not "grader fault"


def test_a_hard_link_is_refused_with_a_clear_status(peeked):
    out, stdout = peeked
    res = _results(out, "mallory")
    assert res["score"] == 0 and all(t["status"] == "failed" for t in res["tests"])
    says = res["tests"][0]["output"]
    headline, said = says.splitlines()[:2]  # a one-line headline, then the whole message
    assert headline.startswith("refused: l01_meshes.py is a hard link (the file has 1 other name")
    assert said == (
        "refused: l01_meshes.py is a hard link (the file has 1 other name on disk: a classmate's "
        "file, a solution?); only a submission's own files are graded — copy the files, do not "
        "link them"
    ), says
    assert "only a submission's own files are graded" in says
    assert "mallory: 0/" in stdout
