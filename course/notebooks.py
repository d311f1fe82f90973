"""The notebooks: ``notebooks/NN_slug.ipynb``, one per lesson, generated from its text and stub.

Each notebook holds, in order: a setup cell (on Colab it installs the course and
keeps Colab's own JAX when it is new enough; elsewhere it does nothing), the
workspace cell (``course.notebook.init``; on Colab, optionally a folder on your
Drive), the lesson's text cut at its ``##`` sections with its figures inlined (a
notebook opened on Colab has no files beside it), the exercise cell (``%%exercise N``
and the stub: run, it writes the lesson's file in your workspace), a grade cell and a
hint cell. Run top to bottom in a fresh kernel it raises nothing: the untouched stub
is graded "not started".

``course dev notebooks`` draws the figures and writes the notebooks; ``course dev
check`` names every notebook or figure that differs from what would be written now.
Cell ids are fixed (``l01-07``), so the same course gives the same bytes.
"""

from __future__ import annotations

from pathlib import Path

from course import figure_links, figures
from course.registry import Course, Lesson

FOLDER = "notebooks"
"""Where the notebooks live in a clone (the wheel does not ship them)."""
MIN_JAX = "0.10.2"
"""The oldest JAX the course runs on (pyproject.toml's bound): Colab's own is kept from it on."""

SETUP = f"""# Setup. On Colab: install the course, keeping Colab's own JAX when it is {MIN_JAX} or newer.
# Elsewhere this does nothing: install the course first (README: "Start").
import importlib.util
import subprocess
import sys

# What pip installs on Colab. The course is not on PyPI: put here the wheel you uploaded to
# this Colab session (built in a clone with `pip wheel --no-deps .`), e.g.
# "/content/scaling_course-0.1.0-py3-none-any.whl", or the repository as
# "git+https://github.com/OWNER/REPO" (your teacher may have set it already).
COURSE_PACKAGE = "scaling-course"

if "google.colab" in sys.modules and importlib.util.find_spec("course") is None:
    import os
    import shutil
    from importlib.metadata import PackageNotFoundError, version

    def _new_enough(name: str, least: tuple) -> bool:
        try:
            parts = version(name).split(".")[:3]
            return tuple(int("".join(c for c in p if c.isdigit()) or 0) for p in parts) >= least
        except PackageNotFoundError:
            return False

    pip = [sys.executable, "-m", "pip", "install", "-q"]
    if not _new_enough("jax", {tuple(int(p) for p in MIN_JAX.split("."))}):
        accelerator = "jax"
        if "COLAB_TPU_ADDR" in os.environ or os.path.exists("/dev/accel0"):
            accelerator = "jax[tpu]"
        elif shutil.which("nvidia-smi"):
            accelerator = "jax[cuda12]"
        subprocess.run([*pip, "-U", accelerator], check=True)
    if subprocess.run([*pip, COURSE_PACKAGE]).returncode != 0:  # keeps a JAX that satisfies it
        raise RuntimeError(
            f"pip could not install COURSE_PACKAGE = {{COURSE_PACKAGE!r}}: set it (above) to the "
            "wheel you uploaded or to the repository's git+https:// URL, then run this cell again"
        )"""

WORKSPACE = """# Your workspace: your exercise files and progress. On Colab set DRIVE = True to keep it
# on your Google Drive between sessions (otherwise it lasts as long as the runtime).
from course import notebook as course

DRIVE = False
home = None  # None: the workspace `course` would use here, else ~/scaling-course
if DRIVE:
    from google.colab import drive

    drive.mount("/content/drive")
    home = "/content/drive/MyDrive/scaling-course"
course.init(home)"""


def path(root: Path, lesson: Lesson) -> Path:
    return root / FOLDER / f"{lesson.number:02d}_{lesson.slug}.ipynb"


def sections(text: str) -> list[str]:
    """The text cut before each ``## `` heading (never inside a code block)."""
    out: list[list[str]] = [[]]
    fenced = False
    for line in text.split("\n"):
        if line.startswith("```"):
            fenced = not fenced
        if line.startswith("## ") and not fenced and any(s.strip() for s in out[-1]):
            out.append([])
        out[-1].append(line)
    return ["\n".join(lines).strip("\n") for lines in out if any(s.strip() for s in lines)]


def build(lesson: Lesson, lessons: Path, stubs: Path) -> str:
    """Lesson ``lesson``'s notebook as the text of its ``.ipynb`` file."""
    import nbformat
    from nbformat import v4

    n = lesson.number
    text = figure_links.inline((lessons / lesson.text_name).read_text(), lessons)
    stub = (stubs / f"{lesson.module}.py").read_text().rstrip("\n")
    exercises = "\n".join(
        f"- `{e.name}` ({e.points} pt{', bonus' if e.bonus else ''}): {e.summary}"
        for e in lesson.exercises
    )
    first, *rest = sections(text)
    cells = [
        v4.new_markdown_cell(
            f"{first}\n\n*This notebook is generated from the lesson's text and stub "
            f"(`course dev notebooks`). Run the two setup cells, read, write your code in the "
            f"exercise cell, run it, then grade.*"
        ),
        v4.new_code_cell(SETUP),
        v4.new_code_cell(WORKSPACE),
        *(v4.new_markdown_cell(section) for section in rest),
        v4.new_markdown_cell(
            f"## Your code\n\n{exercises}\n\nThe cell below is lesson {n}'s exercise file. "
            f"Running it writes the file into your workspace (`%%exercise {n}`); a file you "
            "changed elsewhere is kept as a `.bak` first, and the untouched stub never "
            "replaces your code."
        ),
        v4.new_code_cell(f"%%exercise {n}\n{stub}"),
        v4.new_markdown_cell(
            f"## Grade\n\nThe report names each exercise's status; a failure shows the example "
            f"that broke it and the command that re-runs it. `course.grade('{n}.NAME')` grades "
            "one exercise."
        ),
        v4.new_code_cell(f"course.grade({n})"),
        v4.new_markdown_cell(
            f"## Stuck?\n\nEach run of the next cell shows the next hint. Once the lesson "
            f"passes, `course.solution({n})` shows the reference; `course.status()` your "
            "progress."
        ),
        v4.new_code_cell(f"course.hint({n})"),
    ]
    for k, cell in enumerate(cells):
        cell["id"] = f"l{n:02d}-{k:02d}"
    nb = v4.new_notebook(cells=cells)
    nb.metadata = {
        "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
        "language_info": {"name": "python"},
        "colab": {"name": f"{lesson.number:02d}_{lesson.slug}.ipynb", "provenance": []},
    }
    return nbformat.writes(nb) + "\n"


def write(course: Course, root: Path) -> list[Path]:
    """Draw the figures and write every notebook; return the files that changed."""
    lessons, stubs = root / "course" / "lessons", root / "exercises"
    changed = figures.write(lessons / "figures")
    (root / FOLDER).mkdir(exist_ok=True)
    for lesson in course.lessons:
        target = path(root, lesson)
        text = build(lesson, lessons, stubs)
        if not target.exists() or target.read_text() != text:
            target.write_text(text)
            changed.append(target)
    return changed


def problems(course: Course, root: Path) -> list[str]:
    """Every figure and notebook that differs from what ``course dev notebooks`` writes,
    and any notebook of no lesson."""
    lessons, stubs = root / "course" / "lessons", root / "exercises"
    out = figures.problems(lessons)
    try:
        import nbformat  # noqa: F401
    except ImportError:
        return [*out, "nbformat is not installed (pip install -e '.[test]'): notebooks not checked"]
    known = set()
    for lesson in course.lessons:
        target = path(root, lesson)
        known.add(target.name)
        where = f"{FOLDER}/{target.name}"
        if not target.exists():
            out.append(f"{where} is missing: run course dev notebooks")
        elif target.read_text() != build(lesson, lessons, stubs):
            out.append(f"{where} is out of sync with its lesson: run course dev notebooks")
    for stray in sorted((root / FOLDER).glob("*.ipynb")) if (root / FOLDER).is_dir() else []:
        if stray.name not in known:
            out.append(f"{FOLDER}/{stray.name} belongs to no lesson in course.toml")
    return out
