"""notebooks/: one per lesson, in sync with the texts and stubs, and lessons 1-2's run top
to bottom in a real kernel without raising."""

from __future__ import annotations

import json
import shutil
import sys
import time

import nbformat
import pytest

from course import notebooks, registry

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
    assert code[2] == "%%exercise 1\n" + stub.rstrip("\n")
    assert code[3:] == ["course.grade(1)", "course.hint(1)"]
    assert "## The arithmetic" in markdown and "data:image/svg+xml;base64," in markdown
    assert "(figures/" not in markdown  # inlined: Colab has no files beside the notebook


@pytest.mark.parametrize("colab_jax", ["0.10.2", "0.12.1", "0.4.33", None])
def test_on_colab_the_setup_cell_keeps_colabs_jax_when_new_enough(root, monkeypatch, colab_jax):
    """The setup cell run as on Colab (google.colab imported, no course installed), with
    pip recorded: Colab's JAX from 0.10.2 on is kept (pip is asked for the course only);
    an older one, or none, is upgraded first; a COURSE_PACKAGE pip cannot install is said
    in one sentence that names it and what to put there."""
    import importlib.metadata
    import importlib.util
    import shutil
    import subprocess
    import types

    nb = nbformat.read(root / "notebooks" / "01_meshes.ipynb", as_version=4)
    cell = next(c.source for c in nb.cells if c.cell_type == "code")
    assert "not on PyPI" in cell and "COURSE_PACKAGE = " in cell

    def version(name: str) -> str:
        if name != "jax" or colab_jax is None:
            raise importlib.metadata.PackageNotFoundError(name)
        return colab_jax

    asked: list[list[str]] = []

    def run(argv, **kwargs):
        asked.append(argv[5:])  # after python -m pip install -q
        ok = argv[-1] != "no-such-package"
        return subprocess.CompletedProcess(argv, 0 if ok else 1)

    find_spec = importlib.util.find_spec
    monkeypatch.setitem(sys.modules, "google.colab", types.ModuleType("google.colab"))
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "course" else find_spec(name, *a))  # fmt: skip
    monkeypatch.setattr(importlib.metadata, "version", version)
    monkeypatch.setattr(subprocess, "run", run)
    monkeypatch.setattr(shutil, "which", lambda name: "/usr/bin/nvidia-smi")  # a GPU runtime
    monkeypatch.delenv("COLAB_TPU_ADDR", raising=False)
    exec(compile(cell, "setup-cell", "exec"), {})
    if colab_jax in ("0.10.2", "0.12.1"):
        assert asked == [["scaling-course"]]  # Colab's own JAX kept
    else:
        assert asked == [["-U", "jax[cuda12]"], ["scaling-course"]]
    if colab_jax == "0.10.2":
        asked.clear()
        with pytest.raises(RuntimeError) as raised:
            exec(compile(cell.replace('"scaling-course"', '"no-such-package"'), "c", "exec"), {})
        assert str(raised.value).startswith(
            "pip could not install COURSE_PACKAGE = 'no-such-package': set it (above) to the "
            "wheel you uploaded"
        )


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
    assert written.read_text() == (root / "exercises" / f"{module}.py").read_text()
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
