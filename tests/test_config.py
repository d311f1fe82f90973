"""No hidden state (issue 34 §5): what a grade depends on is handed down in a
configuration object (:class:`grader.config.GradeConfig`, the worker's
:class:`grader.sandbox.worker.Options`, the early worker ``course grade`` started),
environment variables are read where a process starts, and every one is in the
README's table."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from grader.config import Sandbox
from grader.sandbox import worker

ROOT = Path(__file__).resolve().parent.parent
SOURCES = sorted([*(ROOT / "grader").rglob("*.py"), *(ROOT / "course").rglob("*.py")])

READERS = {
    # the command line's edge: a command's options, a process's main
    "course/cli.py": "COURSE_DEBUG, COURSE_ROOT and COURSE_COMPILE_CACHE, into the App every "
    "command receives (COURSE_HOME and COURSE_DB: its --home and --db options' variables)",
    "course/notebook.py": "COURSE_DEBUG, COURSE_ROOT, COURSE_HOME, COURSE_DB and "
    "COURSE_COMPILE_CACHE, into the App of a notebook's call",
    "course/commands/autograder.py": "AUTOGRADER_ROOT and COURSE_DEBUG, in the autograder's own main",
    "course/commands/common.py": "PAGER, where a command pages",
    "course/commands/grade.py": "COURSE_PLATFORM and COURSE_DEVICES, checked as `course grade` starts",
    "grader/sandbox/worker.py": "the worker's Options, read once in its main",
    "grader/sandbox/student.py": "COURSE_SANDBOX_WRITES (the sandbox's, for it), in its main",
    "grader/sandbox/launch.py": "the environment a worker inherits",
    "grader/sandbox/spares.py": "the early worker's switch (COURSE_EARLY_WORKER), as `course grade` starts",
    "grader/sandbox/jail.py": "its script's main (the sandbox's process): sets TMPDIR and "
    "COURSE_SANDBOX_WRITES for the student's process; reads no setting (grader.config.Sandbox)",
    # still read where they are used (README: 'Still read where they are used')
    "grader/measure/devices.py": "configure, which prepares a fresh process: XLA_FLAGS",
    "grader/sandbox/processes.py": "the student's process's environment, built from the worker's",
    "grader/sandbox/references.py": "the package caches' folders",
}
"""Every file that reads the environment, and what it reads: a new one reads it at
the edge and hands it down, or is added here and to the README's table."""


def _relative(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def test_the_environment_is_read_only_where_listed():
    reading = {
        _relative(p)
        for p in SOURCES
        if re.search(r"os\.environ\b|os\.getenv\(", p.read_text()) and "/lessons/" not in str(p)
    }
    reading.discard("course/notebooks.py")  # a notebook's setup cell, as text
    assert reading == set(READERS), (
        f"read the environment where a process starts and hand it down; new: "
        f"{sorted(reading - set(READERS))}, no longer: {sorted(set(READERS) - reading)}"
    )


def test_every_course_variable_the_code_names_is_in_the_readme_table():
    named = set()
    for path in SOURCES:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                named |= set(re.findall(r"\bCOURSE_[A-Z][A-Z_]*[A-Z]\b", node.value))
    named.discard("COURSE_PACKAGE")  # a notebook's variable, not the environment's
    readme = (ROOT / "README.md").read_text()
    table = readme[readme.index("### Environment variables") :]
    listed = set(re.findall(r"^\| `(COURSE_[A-Z_]+)`", table, re.M))
    assert named <= listed, f"not in the README's table: {sorted(named - listed)}"
    assert {"AUTOGRADER_ROOT", "PAGER", "XLA_FLAGS", "JAX_PLATFORMS"} <= set(
        re.findall(r"^\| `([A-Z_]+)`", table, re.M)
    )


def test_no_module_assigns_its_globals_from_a_function():
    """What a grade depends on is passed down, never set in a module global (as
    the kept draws' folder, the simulated devices and the sandbox's verdict were)."""
    found = [
        f"{_relative(path)}:{node.lineno} global {', '.join(node.names)}"
        for path in SOURCES
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Global)
    ]
    assert not found, found


@pytest.mark.parametrize(
    ("environ", "options"),
    [
        ({}, worker.Options(ahead=True, warm_up=True, fork_server=True)),
        ({worker.AHEAD: "0"}, worker.Options(ahead=False)),
        ({worker.WARM_UP: "0"}, worker.Options(warm_up=False)),
        ({"COURSE_FORK_SERVER": "0"}, worker.Options(fork_server=False)),
        ({worker.HELPERS: "0"}, worker.Options(helpers=0)),
        ({worker.HELPERS: "2"}, worker.Options(helpers=2)),
        ({worker.HELPERS: "9"}, worker.Options(helpers=3)),  # at most three
        ({"COURSE_PHASES": "/f"}, worker.Options(phases="/f")),
        ({"COURSE_DEVICES": "4", "COURSE_PLATFORM": "cpu"}, worker.Options(devices="4", platform="cpu")),
        ({"COURSE_SANDBOX": "off"}, worker.Options(sandbox=Sandbox(switch="off"))),
        ({"COURSE_SANDBOX_MEMORY": "2G"}, worker.Options(sandbox=Sandbox(memory="2G"))),
    ],
)  # fmt: skip
def test_the_workers_switches_are_read_from_the_environment_it_is_given(environ, options):
    got = worker.Options.from_environment(environ)
    want = {k: getattr(options, k)
            for k in ("ahead", "warm_up", "fork_server", "devices", "platform", "phases", "sandbox")}  # fmt: skip
    assert {k: getattr(got, k) for k in want} == want
    if worker.HELPERS in environ:
        assert got.helpers == options.helpers


WRITERS = {
    ("grader/measure/devices.py", "configure", "XLA_FLAGS"): "before jax starts its backends",
    ("grader/measure/devices.py", "configure", "JAX_PLATFORMS"): "--cpu, a script's CPUs only",
    ("grader/sandbox/jail.py", "_inside", "WRITES_VARIABLE"): "for the student's process it starts",
    ("grader/sandbox/jail.py", "_inside", "TMPDIR"): "for the student's process it starts",
}
"""The only writes of a process's environment (file, function, key): each
prepares a process (or its child) before jax is imported; no setting of the
course's (``COURSE_DEVICES``, as ``devices.configure`` once wrote) is handed down
through it."""


def _is_environ(node: ast.AST) -> bool:
    return (isinstance(node, ast.Attribute) and node.attr == "environ"
            and isinstance(node.value, ast.Name) and node.value.id == "os")  # fmt: skip


def _key(node: ast.AST) -> str:
    return node.value if isinstance(node, ast.Constant) else getattr(node, "id", ast.dump(node))


def test_the_environment_is_written_only_where_a_process_is_prepared():
    found = set()
    for path in SOURCES:
        for function in ast.walk(ast.parse(path.read_text())):
            if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            for node in ast.walk(function):
                if isinstance(node, ast.Assign | ast.AugAssign | ast.Delete):
                    targets = getattr(node, "targets", None) or [node.target]
                    keys = [_key(t.slice) for t in targets
                            if isinstance(t, ast.Subscript) and _is_environ(t.value)]  # fmt: skip
                elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                      and _is_environ(node.func.value)
                      and node.func.attr in ("setdefault", "update", "pop", "clear")):  # fmt: skip
                    keys = [_key(node.args[0]) if node.args else node.func.attr]
                else:
                    continue
                found |= {(_relative(path), function.name, key) for key in keys}
    assert found == set(WRITERS), found


@pytest.mark.parametrize(
    ("environ", "home", "db", "caching"),
    [
        ({"COURSE_HOME": "/w"}, "/w", "/w/progress.db", True),
        ({"COURSE_HOME": "/w", "COURSE_DB": "/d/p.db"}, "/w", "/d/p.db", True),
        ({"COURSE_HOME": "/w", "COURSE_COMPILE_CACHE": "off"}, "/w", "/w/progress.db", False),
        ({"COURSE_HOME": "/w", "COURSE_COMPILE_CACHE": "No"}, "/w", "/w/progress.db", False),
        ({"COURSE_HOME": "/w", "COURSE_COMPILE_CACHE": "on"}, "/w", "/w/progress.db", True),
    ],
)  # fmt: skip
def test_the_workspace_settings_are_read_at_the_command_lines_edge(
    environ, home, db, caching, monkeypatch, tmp_path
):
    """``course``'s group reads COURSE_HOME, COURSE_DB (its options' variables) and
    COURSE_COMPILE_CACHE and hands them to the workspace; course.paths reads none."""
    from click.testing import CliRunner

    from course import cli, paths
    from course.commands.common import App

    for name in ("COURSE_HOME", "COURSE_DB", "COURSE_COMPILE_CACHE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    seen: list[App] = []

    @cli.cli.command("probe-app", hidden=True)
    @cli.click.pass_obj
    def probe(app: App) -> None:
        seen.append(app)

    try:
        r = CliRunner().invoke(cli.cli, ["probe-app"], env=environ, catch_exceptions=False)
    finally:
        cli.cli.commands.pop("probe-app")
    assert r.exit_code == 0, r.output
    (app,) = seen
    assert (app.ws.home, app.ws.db) == (Path(home).resolve(), Path(db).resolve())
    assert (app.compile_cache() is not None) == caching
    monkeypatch.setenv("COURSE_COMPILE_CACHE", "off")  # read by no one below the edge
    assert paths.workspace(home, None).compile_cache == Path(home).resolve() / ".cache" / "jax"
