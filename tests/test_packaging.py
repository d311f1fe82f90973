"""The README, CI and packaging agree with the repository."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
TOP = ("course", "grader", "exercises", "solutions", "tests", "benchmarks", "docs", "tinymodels")


def test_ci_runs_the_readme_test_command():
    ci = (ROOT / ".ci" / "run").read_text()
    (assignment,) = re.findall(r"^README_TEST=(.*)$", ci, flags=re.M)
    (command,) = shlex.split(assignment)  # the shell's own reading of the quoting
    readme = (ROOT / "README.md").read_text()
    assert f"```bash\n{command}\n```" in readme
    # CI runs it in two parts: the set-up and lint of both legs, then each leg's pytest
    lines = [line for line in ci.splitlines() if line.startswith(("README_TEST=", "SETUP=", "PYTEST="))]  # fmt: skip
    script = "\n".join([*lines, 'printf "%s\\n%s" "$SETUP" "$PYTEST"'])
    setup, pytest_run = subprocess.run(
        ["bash", "-c", script], capture_output=True, text=True, check=True
    ).stdout.split("\n")
    assert f"{setup} && {pytest_run}" == command and pytest_run.startswith(
        ".venv/bin/python -m pytest"
    )
    assert 'bash -c "$SETUP"' in ci and "command=$PYTEST\n" in ci
    assert "command=$NEWEST_PYTEST\n" in ci and 'run_leg "$leg" "$command"' in ci


def test_ci_checks_and_builds_the_wheel_after_both_legs_tests_end():
    """The wheel is built in the checkout (build/, *.egg-info), which the packaging tests
    read; the developer check's grade writes into the checkout's workspace/."""
    ci = (ROOT / ".ci" / "run").read_text()
    ended = ci.index('run_leg "$leg" "$command"')
    for step in (".ci/wheel_smoke", ".venv/bin/course dev check", ".venv-newest/bin/course dev check"):  # fmt: skip
        assert ci.index(f"\n{step}") > ended, step


def test_ci_runs_the_full_developer_check_on_one_leg():
    """The oldest leg grades every solution and stub (`course dev check`), the newest runs
    the file checks only (`--static`)."""
    ci = (ROOT / ".ci" / "run").read_text()
    runs = re.findall(r"^(\.venv[\w-]*)/bin/course dev check(.*)$", ci, flags=re.M)
    assert sorted(runs) == [(".venv", ""), (".venv-newest", " --static")]


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_tables_are_not_broken_by_blank_lines(doc):
    lines = doc.read_text().splitlines()
    for i, line in enumerate(lines):
        starts_table = line.startswith("|") and (i == 0 or not lines[i - 1].startswith("|"))
        if starts_table:
            following = lines[i + 1] if i + 1 < len(lines) else ""
            assert re.match(r"^\|[-:| ]+\|$", following), f"{doc.name}:{i + 1}: {line[:60]}"


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_docs_name_only_files_the_repository_has(doc):
    text = doc.read_text()
    here = doc.parent
    links = [t for t in re.findall(r"\]\(([^)#]+)\)", text) if "://" not in t]
    assert [t for t in links if not (here / t).exists()] == []
    paths = [
        t for t in re.findall(r"`([\w./-]+)`", text)
        if t.split("/")[0] in TOP and "/" in t and "*" not in t
    ]  # fmt: skip
    missing = [t for t in paths if not (ROOT / t).exists()]
    assert missing == [], missing


def _discovered(where: Path) -> list[str]:
    """The wheel's packages as setup.py's discovery finds them under ``where``."""
    import runpy

    return runpy.run_path(str(ROOT / "setup.py"))["packages"](str(where))


def test_every_package_is_in_the_wheel():
    """The packages are discovered (no hand-kept list in pyproject.toml): every folder with
    an __init__.py under course/, grader/ and tinymodels/, the data folder course.lessons,
    and the two package-dir maps from the repository's top."""
    import tomllib

    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert "packages" not in config  # setuptools takes setup.py's then
    found = {
        ".".join(p.parent.relative_to(ROOT).parts)
        for top in ("course", "grader", "tinymodels")
        for p in (ROOT / top).rglob("__init__.py")
    }
    mapped = {name for name, folder in config["package-dir"].items() if (ROOT / folder).is_dir()}
    # folders of data only (no __init__.py) are packages too, or setuptools warns at build
    data = {name for name in config["package-data"] if name not in found | mapped}
    # the texts, their figures, the autograder's scripts
    assert data == {"course.lessons", "course.lessons.figures", "course.autograder"}
    for name in data:  # each pattern finds its files
        folder = ROOT / name.replace(".", "/")
        assert all(list(folder.glob(pattern)) for pattern in config["package-data"][name])
    assert set(_discovered(ROOT)) == found | mapped | data  # no __pycache__ folder either
    assert mapped == {"course.exercises", "course.solutions"}


def test_a_new_lesson_folder_is_found_without_an_edit(tmp_path):
    """What `course dev new` writes, grader/lessons/lNN_slug/, is in the wheel with no
    edit of pyproject.toml or setup.py; a cache folder is not."""
    for folder in ("course", "grader", "grader/lessons", "grader/lessons/l99_new", "tinymodels"):
        (tmp_path / folder).mkdir(parents=True, exist_ok=True)
        (tmp_path / folder / "__init__.py").write_text("")
    (tmp_path / "grader" / "lessons" / "l99_new" / "__pycache__").mkdir()
    (tmp_path / "benchmarks").mkdir()
    (tmp_path / "benchmarks" / "__init__.py").write_text("")
    assert _discovered(tmp_path) == [
        "course", "course.exercises", "course.solutions", "grader", "grader.lessons",
        "grader.lessons.l99_new", "tinymodels",
    ]  # fmt: skip


def test_the_licence_is_an_spdx_string_with_its_file_and_the_setuptools_that_reads_it():
    import tomllib

    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert config["project"]["license"] == "MIT"  # a string (a table is deprecated)
    assert all((ROOT / f).is_file() for f in config["project"]["license-files"])
    (requires,) = config["build-system"]["requires"]
    name, oldest = requires.split(">=")
    assert name == "setuptools" and int(oldest.split(".")[0]) >= 77  # the first to read both


# ------------------------------------------------------------------ workspaces


def run_course(cwd: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if k not in ("COURSE_HOME", "COURSE_DB")}
    return subprocess.run(
        [sys.executable, "-m", "course.cli", *args], cwd=cwd, capture_output=True, text=True,
        env={**base, "PYTHONPATH": str(ROOT), **env}, timeout=120,
    )  # fmt: skip


def test_init_makes_a_workspace_that_commands_inside_it_find(tmp_path):
    r = run_course(tmp_path, "init", "ws")
    assert r.returncode == 0, r.stderr
    ws = tmp_path / "ws"
    assert (ws / ".course-workspace").is_file() and (ws / "exercises" / "l01_meshes.py").is_file()
    (ws / "deeper").mkdir()
    hint = run_course(ws / "deeper", "hint")
    assert hint.returncode == 0 and "Lesson 1 · hint 1" in hint.stdout
    assert (ws / "progress.db").is_file()  # found from below, not made in the current folder
    assert not (ws / "deeper" / "progress.db").exists()
    elsewhere = tmp_path / "other"
    elsewhere.mkdir()
    r = run_course(elsewhere, "status", COURSE_HOME=str(ws))  # --home / COURSE_HOME wins
    assert r.returncode == 0 and str(ws / "exercises" / "l01_meshes.py") in r.stdout


def test_installed_course_asks_for_init_and_never_writes_into_itself(tmp_path):
    installed = {"COURSE_ROOT": str(tmp_path / "no-checkout")}  # no exercises/: not a clone
    r = run_course(tmp_path, "status", **installed)
    assert r.returncode == 1 and "course init" in r.stderr
    r = run_course(tmp_path, "init", str(ROOT / "course" / "ws"), **installed)
    assert r.returncode == 1 and "inside the installed course" in r.stderr
    assert not (ROOT / "course" / "ws").exists()
    bare = run_course(tmp_path, **installed)  # still the way in, then the help
    assert bare.returncode == 0 and "course init" in bare.stdout and "Usage: course" in bare.stdout
    listing = run_course(tmp_path, "list", **installed)  # needs no workspace
    assert listing.returncode == 0 and "shard_shape" in listing.stdout


def test_the_installed_ml_dtypes_imports_without_its_slow_ufunc_registration():
    """ml_dtypes 0.7 with numpy before 2.5 takes about a second to import (its ufunc
    loops are registered one by one, each looked up in a list): pyproject.toml holds
    ml_dtypes below 0.7 where pip resolves such a numpy (Python 3.11)."""
    from importlib.metadata import version

    def release(name: str) -> tuple[int, int]:
        major, minor = version(name).split(".")[:2]
        return int(major), int(minor)

    assert not (release("ml_dtypes") >= (0, 7) and release("numpy") < (2, 5)), (
        version("ml_dtypes"),
        version("numpy"),
    )
