"""Where the course's files are: one answer for ``course`` and ``grader``.

``root()`` is the repository a student works with: ``exercises/``,
``solutions/``, ``grader/specs/``, ``course/lessons/``. ``COURSE_ROOT``
overrides it (the developer check of a copied tree, a classroom's course).
``CODE`` is where these packages themselves live, which a grading worker
needs on its path even when ``COURSE_ROOT`` points elsewhere.

This module imports nothing but the standard library: ``course status``
never waits for jax.
"""

from __future__ import annotations

import os
from pathlib import Path

CODE = Path(__file__).resolve().parent.parent
"""The directory holding the ``course`` and ``grader`` packages."""


def root() -> Path:
    """The repository: ``COURSE_ROOT`` when set, else the checkout this code is in."""
    env = os.environ.get("COURSE_ROOT")
    return Path(env).resolve() if env else CODE
