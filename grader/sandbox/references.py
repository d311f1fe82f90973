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
- pip's and uv's caches, which keep the wheel ``pip install .`` built;
- every ``__pycache__`` of the course's packages that holds stale bytecode
  (:func:`stale_bytecode`): a module moved to ``grader/expected/`` by a ``git pull``
  leaves its compiled code behind where it was (issue 47), readable with ``marshal``
  by anyone who finds the folder through a lesson's ``__file__``.

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
        found += stale_bytecode(checkout)
    return list(dict.fromkeys(found))


PACKAGES = ("grader", "course")
"""The course's packages, whose bytecode the student's process could read."""


def stale_bytecode(code: Path) -> list[str]:
    """The ``__pycache__`` folders of the course's packages in ``code`` that hold a
    ``.pyc`` not compiled from the source beside it: its ``.py`` is gone (moved or
    deleted by a ``git pull``, which leaves untracked bytecode behind), or changed since
    (the header's source size and time, or hash, no longer match: what the module
    held before). Python's import never reads such a file (it recompiles from source,
    and finds no sourceless module in a ``__pycache__``), but a program can read and
    unmarshal it: hidden whole, its folder's current bytecode is compiled again from
    source in the student's process (it cannot write there)."""
    found = []
    for package in PACKAGES:
        for folder, _dirs, files in os.walk(code / package):
            if os.path.basename(folder) == "__pycache__" and any(
                _stale(Path(folder), name) for name in files if name.endswith(".pyc")
            ):
                found.append(folder)
    return found


def _stale(folder: Path, name: str) -> bool:
    """Whether ``folder/name`` (``module.<tag>.pyc``) is not the bytecode of
    ``module.py`` beside ``folder`` as it is now (PEP 552's header: flags, then the
    source's time and size, or its hash). Unreadable: stale (it is hidden)."""
    source = folder.parent / (name.split(".", 1)[0] + ".py")
    try:
        with open(folder / name, "rb") as f:
            header = f.read(16)
        stat = source.stat()
    except OSError:
        return True
    if len(header) < 16:
        return True
    flags = int.from_bytes(header[4:8], "little")
    if flags & 1:  # hash-based
        import importlib.util

        try:
            return header[8:16] != importlib.util.source_hash(source.read_bytes())
        except OSError:
            return True
    mtime, size = int.from_bytes(header[8:12], "little"), int.from_bytes(header[12:16], "little")
    return mtime != int(stat.st_mtime) & 0xFFFFFFFF or size != stat.st_size & 0xFFFFFFFF


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
