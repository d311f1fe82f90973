"""Where the course's files are: one answer for ``course`` and ``grader``.

``root()`` is the repository a student works with: ``exercises/``,
``solutions/``, ``grader/lessons/``, ``course/lessons/``. ``COURSE_ROOT``
overrides it (the developer check of a copied tree, a classroom's course).
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

import os
from dataclasses import dataclass
from pathlib import Path

CODE = Path(__file__).resolve().parent.parent
"""The directory holding the ``course`` and ``grader`` packages."""


def root() -> Path:
    """The repository: ``COURSE_ROOT`` when set, else the checkout this code is in."""
    env = os.environ.get("COURSE_ROOT")
    return Path(env).resolve() if env else CODE


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
    """True in a clone of the repository (``root()``), False when installed from a wheel."""


def shipped() -> Shipped:
    """The checkout's files when there is one, else the installed package data."""
    repo = root()
    if (repo / "exercises").is_dir():
        return Shipped(repo / "exercises", repo / "solutions", repo / "course" / "lessons", True)
    from importlib import resources  # a wheel's layout only: a checkout never imports it

    package = Path(str(resources.files("course")))  # a wheel installs to a real directory
    return Shipped(package / "exercises", package / "solutions", package / "lessons", False)
