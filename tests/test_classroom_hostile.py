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
