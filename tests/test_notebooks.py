"""notebooks/: one per lesson, in sync with the texts and stubs, and lessons 1-2's run top
to bottom in a real kernel without raising."""

from __future__ import annotations

import json
import shutil
import sys
import time
from pathlib import Path

import nbformat
import pytest

from course import notebooks, registry
from course.notebooks import notebook_words

# nbformat, nbclient and ipykernel come with the [test] extra (pyproject.toml), which the
# README's test command installs on both of CI's legs: imported, never skipped, so that CI
# cannot pass without running lessons 1-2's notebooks in a real kernel.


def test_every_lesson_has_its_notebook_in_sync(root):
    assert notebooks.problems(registry.load(), root) == []
    names = sorted(p.name for p in (root / "notebooks").glob("*.ipynb"))
    assert names == sorted(f"{x.number:02d}_{x.slug}.ipynb" for x in registry.load().lessons)


def test_a_notebook_behind_its_text_or_stub_is_named(root, tmp_path):
    for folder in ("course/lessons", "exercises", "notebooks"):
        shutil.copytree(root / folder, tmp_path / folder)
    stub = tmp_path / "exercises" / "l02_collectives.py"
    stub.write_text(stub.read_text().replace("TODO", "TODO (changed)", 1))
    text = tmp_path / "course" / "lessons" / "03_cost_model.md"
    text.write_text(text.read_text() + "\nOne more line.\n")
    (tmp_path / "notebooks" / "05_collective_matmul.ipynb").unlink()
    (tmp_path / "notebooks" / "99_old.ipynb").write_text("{}")
    assert notebooks.problems(registry.load(), tmp_path) == [
        "notebooks/02_collectives.ipynb is out of sync with its lesson: run course dev notebooks",
        "notebooks/03_cost_model.ipynb is out of sync with its lesson: run course dev notebooks",
        "notebooks/05_collective_matmul.ipynb is missing: run course dev notebooks",
        "notebooks/99_old.ipynb belongs to no lesson in course.toml",
    ]
    changed = notebooks.write(registry.load(), tmp_path)
    assert sorted(p.name for p in changed) == [
        "02_collectives.ipynb", "03_cost_model.ipynb", "05_collective_matmul.ipynb",
    ]  # fmt: skip
    assert notebooks.problems(registry.load(), tmp_path) == [
        "notebooks/99_old.ipynb belongs to no lesson in course.toml"
    ]


def test_a_notebook_holds_the_text_figures_exercise_grade_and_hint(root):
    nb = nbformat.read(root / "notebooks" / "01_meshes.ipynb", as_version=4)
    nbformat.validate(nb)
    code = [c.source for c in nb.cells if c.cell_type == "code"]
    markdown = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    assert "google.colab" in code[0] and "0, 10, 2" in code[0]  # Colab's own JAX kept from 0.10.2
    assert "drive.mount" in code[1] and "course.init(home)" in code[1]
    stub = (root / "exercises" / "l01_meshes.py").read_text()
    assert code[2] == "%%exercise 1\n" + notebook_words(stub).rstrip("\n")
    # issue 49.5: the stub's docstring speaks notebook
    assert "Read the lesson first: ``course.show(1)``. Grade with ``course.grade(1)``." in code[2]
    assert "course show" not in code[2] and "course grade" not in code[2]
    assert code[3:] == ["course.grade(1)", "course.hint(1)"]
    assert "## The arithmetic" in markdown and "data:image/svg+xml;base64," in markdown
    assert "(figures/" not in markdown  # inlined: Colab has no files beside the notebook


WHEEL = "/content/scaling_course-0.1.0-py3-none-any.whl"


@pytest.fixture
def hosted(monkeypatch):
    """The setup cell's world on Colab, with pip and the devices recorded or stood in for:
    ``run(cell, jax=…, tpu=…, uploaded=…, pip_fails=…)`` execs it and returns pip's argv
    (after ``python -m pip install -q``) and the pins file's lines, if any."""
    import glob
    import importlib.metadata
    import importlib.util
    import shutil
    import subprocess
    import types

    monkeypatch.setitem(sys.modules, "google.colab", types.ModuleType("google.colab"))
    find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "course" else find_spec(name, *a))  # fmt: skip
    monkeypatch.delenv("COLAB_TPU_ADDR", raising=False)

    def run(cell, *, jax=None, tpu=False, uploaded=(), pip_fails=False):
        installed = {"jax": jax, "jaxlib": jax, "libtpu": "0.0.21" if tpu else None}
        asked: list[list[str]] = []
        pins: list[str] = []

        def version(name: str) -> str:
            if installed.get(name) is None:
                raise importlib.metadata.PackageNotFoundError(name)
            return installed[name]

        def pip(argv, **kwargs):
            asked.append(argv[5:])
            if "-c" in argv:
                pins.extend(Path(argv[argv.index("-c") + 1]).read_text().split())
            return subprocess.CompletedProcess(argv, 1 if pip_fails else 0)

        def found(pattern: str) -> list[str]:
            if pattern.startswith("/dev/accel"):
                return ["/dev/accel0"] if tpu else []
            return [w for w in uploaded if Path(w).parent == Path(pattern).parent]

        monkeypatch.setattr(importlib.metadata, "version", version)
        monkeypatch.setattr(subprocess, "run", pip)
        monkeypatch.setattr(glob, "glob", found)
        monkeypatch.setattr(shutil, "which", lambda name: None if tpu else "/usr/bin/nvidia-smi")
        exec(compile(cell, "setup-cell", "exec"), {})
        return asked, pins

    return run


def _setup(root: Path) -> str:
    nb = nbformat.read(root / "notebooks" / "01_meshes.ipynb", as_version=4)
    return next(c.source for c in nb.cells if c.cell_type == "code")


def test_the_setup_cell_never_installs_the_courses_name_from_an_index(root, hosted):
    """Issue 49.5: as shipped, the cell names no package (``scaling-course`` is not ours on
    PyPI): with nothing uploaded it says in one sentence what to set, and runs no pip."""
    cell = _setup(root)
    assert 'COURSE_PACKAGE = ""' in cell and "scaling-course" not in cell.replace("# ", "")
    assert "not on PyPI" in cell and "pip wheel --no-deps ." in cell and "git+https://" in cell
    with pytest.raises(RuntimeError) as raised:
        hosted(cell, jax="0.12.1")
    assert str(raised.value) == (
        "Set COURSE_PACKAGE (above) to the course's wheel you uploaded (build it in a clone: "
        "pip wheel --no-deps .) or to its git+https:// URL, then run this cell again"
    )


@pytest.mark.parametrize("jax", ["0.10.2", "0.12.1", "0.4.33", None])
@pytest.mark.parametrize("tpu", [False, True], ids=["gpu", "tpu"])
def test_the_setup_cell_keeps_the_runtimes_jax_and_says_what_it_does(
    root, hosted, capsys, jax, tpu
):
    """A JAX from 0.10.2 on is kept, pinned with its jaxlib and libtpu while pip installs
    the course (issue 49.5); an older one, or none, is upgraded first (jax[tpu] on a TPU);
    each step is said before pip runs, silent for about a minute (issue 48.7)."""
    cell = _setup(root).replace('COURSE_PACKAGE = ""', f"COURSE_PACKAGE = {WHEEL!r}")
    asked, pins = hosted(cell, jax=jax, tpu=tpu)
    said = capsys.readouterr().out
    if jax in ("0.10.2", "0.12.1"):
        (pinned,) = asked
        assert pinned[-1] == WHEEL and pinned[0] == "-c"  # the course, with the pins
        assert pins == [f"jax=={jax}", f"jaxlib=={jax}", *(["libtpu==0.0.21"] if tpu else [])]
        assert f"Keeping this runtime's JAX: jax=={jax}, jaxlib=={jax}" in said
    else:
        assert asked == [["-U", "jax[tpu]" if tpu else "jax[cuda12]"], [WHEEL]]
        assert ("JAX 0.4.33 is older than 0.10.2" if jax else "JAX is missing") in said
        assert "pip installs jax[" in said
    assert f"pip is installing the course from {WHEEL}" in said and "about a minute" in said
    assert said.rstrip().endswith("Next: the workspace cell.")
    assert all("scaling-course" not in argv for argv in asked)


def test_the_setup_cell_finds_an_uploaded_wheel_and_names_a_failing_package(root, hosted):
    cell = _setup(root)
    asked, _ = hosted(cell, jax="0.12.1", uploaded=[WHEEL])
    assert asked[-1][-1] == WHEEL  # COURSE_PACKAGE left empty: the wheel uploaded
    with pytest.raises(RuntimeError) as raised:
        hosted(cell.replace('COURSE_PACKAGE = ""', 'COURSE_PACKAGE = "nope.whl"'), jax="0.12.1",
               pip_fails=True)  # fmt: skip
    assert str(raised.value).startswith(
        "pip could not install COURSE_PACKAGE = 'nope.whl' (its message is above): set it"
    )


def test_the_repositorys_address_is_read_from_project_urls_once_set(root, tmp_path):
    """Issue 49.5: [project.urls] Repository is the one place the address is written; the
    notebooks' Colab links, their index and the setup cell's default follow it."""
    from course.notebooks import build, colab, index, repository, setup_cell

    assert repository(root) is None  # not set yet: no links, no default
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "x"\n[project.urls]\nRepository = "https://github.com/o/course/"\n'
    )
    repo = repository(tmp_path)
    assert repo == "https://github.com/o/course"
    assert 'COURSE_PACKAGE = "git+https://github.com/o/course"' in setup_cell(repo)
    link = "https://colab.research.google.com/github/o/course/blob/main/notebooks/01_meshes.ipynb"
    assert colab(repo, "01_meshes.ipynb") == link
    course = registry.load()
    assert f"[01_meshes.ipynb]({link})" in index(course, repo)
    lesson = course.lesson(1)
    text = build(lesson, root / "course" / "lessons", root / "exercises", repo, course.after(1))
    assert f"[Open in Colab]({link})" in text
    assert colab("https://gitlab.com/o/course", "01_meshes.ipynb") is None


@pytest.fixture
def kernel(tmp_path, monkeypatch):
    """A kernel spec for this Python (the one the tests run in), and a fresh workspace."""
    spec = tmp_path / "jupyter" / "kernels" / "course-test"
    spec.mkdir(parents=True)
    argv = [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    (spec / "kernel.json").write_text(json.dumps({"argv": argv, "language": "python",
                                                  "display_name": "course test"}))  # fmt: skip
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "jupyter"))
    monkeypatch.setenv("COURSE_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("COURSE_PLATFORM", "cpu")
    return tmp_path


@pytest.mark.parametrize("name", ["01_meshes", "02_collectives"])
def test_the_notebook_runs_top_to_bottom_in_a_real_kernel(root, kernel, name):
    """About 2.4 s (lesson 1) and 2.2 s (lesson 2) here on main of 00:04 UTC, 8-10 s on two
    busy cores: the kernel start, then mostly the grade."""
    import ipykernel  # noqa: F401  (the kernel below runs it)
    from nbclient import NotebookClient

    nb = nbformat.read(root / "notebooks" / f"{name}.ipynb", as_version=4)
    start = time.monotonic()
    NotebookClient(
        nb,
        timeout=600,
        startup_timeout=300,
        kernel_name="course-test",
        resources={"metadata": {"path": str(kernel)}},
    ).execute()  # raises CellExecutionError on any error; generous limits: a busy machine
    print(f"{name}: {time.monotonic() - start:.1f} s")
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    assert not [o for o in outputs if o.output_type == "stream" and o.name == "stderr"]
    texts = [o.get("data", {}).get("text/plain", "") for o in outputs]
    number = int(name[:2])
    module = next(x.module for x in registry.load().lessons if x.number == number)
    written = kernel / "home" / "exercises" / f"{module}.py"
    assert written.read_text() == notebook_words((root / "exercises" / f"{module}.py").read_text())
    report = next(t for t in texts if f"Lesson {number} ·" in t and "status" in t)
    assert "not started" in report and "passed" not in report and "Traceback" not in report
    assert any(f"Lesson {number} · hint 1 of" in t for t in texts)
    assert all("\x1b" not in t for t in texts)


def test_course_dev_check_names_a_stale_notebook_and_figure(root, tmp_path):
    import os
    import subprocess

    tree = tmp_path / "tree"
    folders = ("exercises", "solutions", "grader/lessons", "course/lessons", "tests/mistakes")
    for folder in (*folders, "notebooks"):
        shutil.copytree(root / folder, tree / folder)
    shutil.copy(root / "README.md", tree / "README.md")
    stub = tree / "exercises" / "l01_meshes.py"
    stub.write_text(stub.read_text() + "\n# TODO: one more line\n")
    (tree / "course" / "lessons" / "figures" / "13_hierarchical_all_reduce.svg").write_text(
        "<svg/>"
    )
    env = {**os.environ, "COURSE_ROOT": str(tree), "COURSE_HOME": str(tmp_path / "home")}
    r = subprocess.run([sys.executable, "-m", "course", "dev", "check", "--static"], cwd=root,
                       env=env, capture_output=True, text=True, timeout=300)  # fmt: skip
    said = " ".join(r.stdout.split())
    assert r.returncode == 1, r.stdout + r.stderr
    assert "notebooks/01_meshes.ipynb is out of sync with its lesson" in said
    assert "figures/13_hierarchical_all_reduce.svg is out of date" in said
