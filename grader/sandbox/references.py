"""Every copy of the references this course knows of (issue 39, item 1): what
the sandbox hides from the student's process besides the workspace.

- ``solutions/`` of the course's code and of the repository it grades
  (``COURSE_ROOT``), and ``course/solutions`` of an installed wheel;
- the grader's side of the lessons, ``grader/expected/`` (:mod:`grader.expected`:
  the formulas, known mistakes and the grader's own programs that a lesson's
  answers are held against), in a checkout and in an installed wheel alike: the
  student's process imports the lessons' specs, never that folder;
- in a checkout, its git repository whole: ``.git`` (objects, packs, refs), the
  common folder of a linked worktree, the folders its ``alternates`` borrow
  objects from, and every other worktree of the same repository (each holds a
  ``solutions/``; the common folder lists them);
- what a checkout builds or keeps beside its code: ``build/`` and ``dist/``
  (a wheel holds ``course/solutions``), ``tests/`` (the mistakes catalogue, and
  tests that hold reference code);
- pip's and uv's caches, which keep the wheel ``pip install .`` built.

The standard library only (a worker computes it before it imports jax).
"""

from __future__ import annotations

import os
from pathlib import Path

BESIDE = ("solutions", "course/solutions", "grader/expected", "tests", "build", "dist", ".git")
"""Folders of a checkout (or a worktree of it) that may hold a reference; the first
three are also where an installed wheel keeps one (``course/solutions``,
``grader/expected`` under site-packages, the course's ``CODE``)."""


def folders(code: Path, root: Path | None = None) -> list[str]:
    """The folders to hide for a course whose packages are in ``code`` and whose
    repository is ``root`` (``COURSE_ROOT``; ``code`` when None)."""
    found: list[str] = list(_caches())
    for checkout in dict.fromkeys([code, root or code]):
        found += [str(checkout / name) for name in BESIDE]
        found += _git_folders(checkout)
    return list(dict.fromkeys(found))


def _caches() -> list[str]:
    """The package installers' caches: ``pip install .`` of a checkout keeps the
    wheel it built (``course/solutions`` inside) in pip's, uv keeps it unpacked."""
    home = os.path.expanduser("~")
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(home, ".cache")
    found = [os.path.join(cache, "pip"), os.path.join(cache, "uv"),
             os.path.join(home, "Library", "Caches", "pip")]  # fmt: skip
    found += [os.environ[v] for v in ("PIP_CACHE_DIR", "UV_CACHE_DIR") if os.environ.get(v)]
    return found


def _read(path: Path) -> str:
    try:
        return path.read_text(errors="replace").strip()
    except OSError:
        return ""


def _git_folders(checkout: Path) -> list[str]:
    """The git repository of ``checkout`` (its ``.git`` a folder, or a file naming
    a linked worktree's folder), its common folder, alternates and worktrees."""
    dot = checkout / ".git"
    if dot.is_dir():
        git = dot
    elif dot.is_file() and (said := _read(dot)).startswith("gitdir:"):
        git = (checkout / said.removeprefix("gitdir:").strip()).resolve()
    else:
        return []
    common = git
    if said := _read(git / "commondir"):
        common = (git / said).resolve()
    found = [str(git), str(common)]
    if common.name == ".git":  # the main worktree's files, beside its repository
        found += [str(common.parent / name) for name in BESIDE if name != ".git"]
    for line in _read(common / "objects" / "info" / "alternates").splitlines():
        if line.strip() and not line.startswith("#"):
            found.append(str((common / "objects" / line.strip()).resolve()))
    try:
        linked = list((common / "worktrees").iterdir())
    except OSError:
        linked = []
    for entry in linked:
        where = _read(entry / "gitdir")  # <worktree>/.git
        if where:
            tree = Path(os.path.dirname(where))
            found += [str(tree / name) for name in BESIDE]
    return found
