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

import re
from pathlib import Path

from course import figure_links, figures
from course.registry import Course, Lesson

FOLDER = "notebooks"
"""Where the notebooks live in a clone (the wheel does not ship them)."""
INDEX = "README.md"
"""The notebooks' index in :data:`FOLDER`, in the course's order (:func:`index`)."""
BRANCH = "main"
"""The branch the "Open in Colab" links open."""
MIN_JAX = "0.10.2"
"""The oldest JAX the course runs on (pyproject.toml's bound): Colab's own is kept from it on."""

SETUP_CELL = r"""# Setup. On Colab or Kaggle: install the course, keeping the runtime's own JAX (and, on a
# TPU, its libtpu) when it is @MIN_JAX@ or newer. Elsewhere this does nothing: install the
# course first (README: "Start").
import importlib.util
import os
import sys

# What pip installs. The course is not on PyPI: name the wheel you uploaded to this session
# (build it in a clone with `pip wheel --no-deps .`, then the folder icon on the left,
# "Upload"), e.g. "/content/scaling_course-0.1.0-py3-none-any.whl", or the repository as
# "git+https://github.com/OWNER/REPO". Left empty: a scaling_course-*.whl you uploaded.
COURSE_PACKAGE = "@PACKAGE@"

hosted = "google.colab" in sys.modules or "KAGGLE_KERNEL_RUN_TYPE" in os.environ
if hosted and importlib.util.find_spec("course") is None:
    import glob
    import shutil
    import subprocess
    import tempfile
    from importlib.metadata import PackageNotFoundError, version

    def _version(name: str) -> str | None:
        try:
            return version(name)
        except PackageNotFoundError:
            return None

    def _new_enough(found: str | None, least: tuple) -> bool:
        parts = (found or "0").split(".")[:3]
        return tuple(int("".join(c for c in p if c.isdigit()) or 0) for p in parts) >= least

    package = COURSE_PACKAGE.strip()
    if not package:
        places = ("/content", "/kaggle/input/*", ".")
        wheels = sorted(w for p in places for w in glob.glob(f"{p}/scaling_course-*.whl"))
        if not wheels:
            raise RuntimeError(
                "Set COURSE_PACKAGE (above) to the course's wheel you uploaded (build it in "
                "a clone: pip wheel --no-deps .) or to its git+https:// URL, then run this "
                "cell again"
            )
        package = wheels[-1]
    chips = glob.glob("/dev/accel*") + glob.glob("/dev/vfio/[0-9]*")
    tpu = "COLAB_TPU_ADDR" in os.environ or bool(chips)
    pip = [sys.executable, "-m", "pip", "install", "-q"]
    jax = _version("jax")
    if _new_enough(jax, @LEAST@):
        # Keep this runtime's JAX: pin it, its jaxlib and (on a TPU) libtpu to what is there.
        names = ("jax", "jaxlib", "libtpu", "libtpu-nightly")
        kept = [f"{n}=={v}" for n in names if (v := _version(n))]
        with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as pins:
            pins.write("\n".join(kept) + "\n")
        pip += ["-c", pins.name]
        print(f"Keeping this runtime's JAX: {', '.join(kept)}.", flush=True)
    else:
        gpu = shutil.which("nvidia-smi")
        accelerator = "jax[tpu]" if tpu else "jax[cuda12]" if gpu else "jax"
        said = f"JAX {jax} is older than @MIN_JAX@" if jax else "JAX is missing"
        print(f"{said}: pip installs {accelerator} first (about a minute) …", flush=True)
        subprocess.run([*pip, "-U", accelerator], check=True)
    print(
        f"pip is installing the course from {package} and what it needs (rich, click, "
        "hypothesis, …): about a minute, quiet until it ends …",
        flush=True,
    )
    if subprocess.run([*pip, package]).returncode != 0:
        raise RuntimeError(
            f"pip could not install COURSE_PACKAGE = {package!r} (its message is above): set it "
            "(above) to the wheel you uploaded or to the repository's git+https:// URL, then "
            "run this cell again"
        )
    print(f"Installed the course; JAX {_version('jax')}. Next: the workspace cell.", flush=True)"""
"""The first cell of every notebook (``@MIN_JAX@``, ``@LEAST@``, ``@PACKAGE@`` filled in by
:func:`setup_cell`). It never installs a package by the course's name from an index (the
name is not ours there): only what the learner names, or a wheel they uploaded."""


def repository(root: Path) -> str | None:
    """The course's repository, ``[project.urls] Repository`` in pyproject.toml: the one
    place its address is written (None while it is not set, or with no pyproject.toml)."""
    import tomllib

    try:
        urls = tomllib.loads((root / "pyproject.toml").read_text())["project"].get("urls", {})
    except (OSError, KeyError, tomllib.TOMLDecodeError):
        return None
    url = urls.get("Repository")
    return url.rstrip("/") if isinstance(url, str) and url.startswith("https://") else None


def setup_cell(repo: str | None = None) -> str:
    """The setup cell; with the repository's address, its git URL is what pip installs."""
    least = "(" + ", ".join(MIN_JAX.split(".")) + ")"
    return (
        SETUP_CELL.replace("@MIN_JAX@", MIN_JAX).replace("@LEAST@", least)
        .replace("@PACKAGE@", f"git+{repo}" if repo else "")
    )  # fmt: skip


SETUP = setup_cell()
"""The setup cell while the repository is not set."""

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


COMMAND = re.compile(r"\bcourse (show|grade|hint|solution) ([0-9]+(?:\.[A-Za-z_][A-Za-z0-9_]*)?)\b")
"""A ``course`` command a stub's text names: ``course show 1``, ``course grade 1.place``."""


def notebook_words(text: str) -> str:
    """``text`` (a stub) with each ``course`` command it names written as the notebook's
    call: ``course show 1`` → ``course.show(1)``, ``course grade 1.place`` →
    ``course.grade('1.place')`` (the notebooks import :mod:`course.notebook` as
    ``course``)."""

    def call(m: re.Match) -> str:
        target = m[2]
        return f"course.{m[1]}({target if target.isdigit() else repr(target)})"

    return COMMAND.sub(call, text)


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


def colab(repo: str | None, name: str) -> str | None:
    """The "Open in Colab" address of notebook ``name``, from a GitHub repository's
    address (None for none, or one elsewhere)."""
    prefix = "https://github.com/"
    if not repo or not repo.startswith(prefix):
        return None
    return f"https://colab.research.google.com/github/{repo[len(prefix) :]}/blob/{BRANCH}/{FOLDER}/{name}"


def _link(lesson: Lesson, repo: str | None) -> str:
    """A Markdown link to ``lesson``'s notebook: on Colab where the repository is known
    (a notebook opened there has no files beside it), else the file beside this one."""
    name = f"{lesson.number:02d}_{lesson.slug}.ipynb"
    return f"[{name}]({colab(repo, name) or name})"


def _index_link(repo: str | None) -> str:
    """A Markdown link to the notebooks' index: on GitHub where the repository is known."""
    if repo and repo.startswith("https://github.com/"):
        return f"[{FOLDER}/{INDEX}]({repo}/blob/{BRANCH}/{FOLDER}/{INDEX})"
    return f"[{FOLDER}/{INDEX}]({INDEX})"


def build(
    lesson: Lesson, lessons: Path, stubs: Path, repo: str | None = None,
    following: Lesson | None = None,
) -> str:  # fmt: skip
    """Lesson ``lesson``'s notebook as the text of its ``.ipynb`` file; ``repo``: the
    repository's address (:func:`repository`), ``following``: the lesson after it in the
    course's order (None for the last)."""
    import nbformat
    from nbformat import v4

    n = lesson.number
    text = figure_links.inline((lessons / lesson.text_name).read_text(), lessons)
    stub = notebook_words((stubs / f"{lesson.module}.py").read_text()).rstrip("\n")
    exercises = "\n".join(
        f"- `{e.name}` ({e.points} pt{', bonus' if e.bonus else ''}): {e.summary}"
        for e in lesson.exercises
    )
    first, *rest = sections(text)
    name = f"{lesson.number:02d}_{lesson.slug}.ipynb"
    badge = colab(repo, name)
    opened = f"[Open in Colab]({badge}) · " if badge else ""
    nxt = (
        f"Next in the course: lesson {following.number}, {following.title} "
        f"({_link(following, repo)}). The course's order: the notebooks' index, "
        f"{_index_link(repo)}, and `course.status()`."
        if following is not None
        else "This is the course's last lesson: `course.status()` shows what is left."
    )
    cells = [
        v4.new_markdown_cell(
            f"{first}\n\n*{opened}This notebook is generated from the lesson's text and stub "
            f"(`course dev notebooks`). Run the two setup cells, read, write your code in the "
            f"exercise cell, run it, then grade.*"
        ),
        v4.new_code_cell(setup_cell(repo)),
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
            f"that broke it and the call that re-runs it. `course.grade('{n}.NAME')` grades "
            "one exercise."
        ),
        v4.new_code_cell(f"course.grade({n})"),
        v4.new_markdown_cell(
            f"## Stuck?\n\nEach run of the next cell shows the next hint. Once the lesson "
            f"passes, `course.solution({n})` shows the reference; `course.status()` your "
            "progress."
        ),
        v4.new_code_cell(f"course.hint({n})"),
        v4.new_markdown_cell(f"## Next\n\n{nxt}"),
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


def index(course: Course, repo: str | None = None) -> str:
    """``notebooks/README.md``: the notebooks in the course's order (GitHub shows it under
    the folder's listing, which sorts them by number), with why the numbers may not follow
    it, each linked to Colab where the repository is known."""
    rows = "\n".join(f"| {x.number} | {x.title} | {_link(x, repo)} |" for x in course.lessons)
    note = course.order_note()
    order = f" {note}" if note else ""
    return (
        "# The notebooks, in the course's order\n\n"
        "One notebook per lesson: its text and figures, your code in a cell, a grade cell and "
        "a hint cell. Take them in this order, the course's (as `course list` and `course "
        "status` give it); a lesson's number names its files and `course grade N`."
        f"{order}\n\n"
        "On Colab or Kaggle, the first cell installs the course: set its `COURSE_PACKAGE` to "
        "the course's wheel you uploaded (`pip wheel --no-deps .` in a clone) or to the "
        'repository\'s `git+https://` URL (README: "In a notebook").\n\n'
        "| lesson | title | notebook |\n|---:|---|---|\n"
        f"{rows}\n\n"
        "*Written by `course dev notebooks` from course/course.toml; `course dev check` "
        "holds it in sync.*\n"
    )


def _following(course: Course) -> dict[int, Lesson | None]:
    """Each lesson's number → the lesson after it in the course's order."""
    return {x.number: course.after(x.number) for x in course.lessons}


def write(course: Course, root: Path, drawn: bool = True) -> list[Path]:
    """Draw the figures (not with ``drawn=False``) and write every notebook and the
    index; return the files that changed."""
    lessons, stubs = root / "course" / "lessons", root / "exercises"
    repo, following = repository(root), _following(course)
    changed = figures.write(lessons / "figures") if drawn else []
    (root / FOLDER).mkdir(exist_ok=True)
    texts = {path(root, x): build(x, lessons, stubs, repo, following[x.number])
             for x in course.lessons}  # fmt: skip
    texts[root / FOLDER / INDEX] = index(course, repo)
    for target, text in texts.items():
        if not target.exists() or target.read_text() != text:
            target.write_text(text)
            changed.append(target)
    return changed


def problems(course: Course, root: Path) -> list[str]:
    """Every figure, notebook and index that differs from what ``course dev notebooks``
    writes, and any notebook of no lesson."""
    lessons, stubs = root / "course" / "lessons", root / "exercises"
    repo, following = repository(root), _following(course)
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
        elif target.read_text() != build(lesson, lessons, stubs, repo, following[lesson.number]):
            out.append(f"{where} is out of sync with its lesson: run course dev notebooks")
    listed = root / FOLDER / INDEX
    if not listed.is_file() or listed.read_text() != index(course, repo):
        out.append(f"{FOLDER}/{INDEX}, the notebooks' index, is missing or out of sync with "
                   "course.toml: run course dev notebooks")  # fmt: skip
    for stray in sorted((root / FOLDER).glob("*.ipynb")) if (root / FOLDER).is_dir() else []:
        if stray.name not in known:
            out.append(f"{FOLDER}/{stray.name} belongs to no lesson in course.toml")
    return out
