"""Where the course's files are: one answer for ``course`` and ``grader``.

``root()`` is the repository a student works with: ``exercises/``,
``solutions/``, ``grader/lessons/``, ``course/lessons/``. ``COURSE_ROOT``
overrides it (the developer check of a copied tree, a classroom's course):
read at the edge (``course``'s command line, the notebook's calls, the worker's
``main``) and handed to :func:`root` and :func:`shipped`; nothing here reads the
environment.
``CODE`` is where these packages themselves live, which a grading worker
needs on its path even when ``COURSE_ROOT`` points elsewhere.

Installed from a wheel there is no repository: the stubs, references,
lesson texts and ``course.toml`` ship as package data of ``course``
(``course/exercises``, ``course/solutions``, ``course/lessons``), found with
``importlib.resources``. :func:`shipped` answers for both layouts.

This module imports nothing but the standard library: ``course status``
never waits for jax.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

CODE = Path(__file__).resolve().parent.parent
"""The directory holding the ``course`` and ``grader`` packages."""


def root(given: str | Path | None = None) -> Path:
    """The repository: ``given`` (``COURSE_ROOT``, as the edge read it) when set,
    else the checkout this code is in."""
    return Path(given).resolve() if given else CODE


@dataclass(frozen=True)
class Shipped:
    """The course's own files, wherever this copy of the course keeps them."""

    stubs: Path
    """``lNN_slug.py`` as the student starts it."""
    solutions: Path
    """The reference ``lNN_slug.py`` of every lesson."""
    lessons: Path
    """The lesson texts, ``NN_slug.md``."""
    checkout: bool
    """True in a clone of the repository (``root``), False when installed from a wheel."""


def shipped(repo: Path = CODE) -> Shipped:
    """The files of the checkout ``repo`` (:func:`root`'s answer) when it is one,
    else the installed package data."""
    if (repo / "exercises").is_dir():
        return Shipped(repo / "exercises", repo / "solutions", repo / "course" / "lessons", True)
    from importlib import resources  # a wheel's layout only: a checkout never imports it

    package = Path(str(resources.files("course")))  # a wheel installs to a real directory
    return Shipped(package / "exercises", package / "solutions", package / "lessons", False)
