"""The wheel's packages, found by setuptools' discovery (the rest of the build: pyproject.toml).

pyproject.toml's ``[tool.setuptools.packages.find]`` cannot add a package that
``package-dir`` maps from a folder outside its parent (pypa/setuptools#5145), and the
stubs and references are two such: ``course.exercises`` from ``exercises/``,
``course.solutions`` from ``solutions/``. So the discovery is here: every package under
``course/``, ``grader/`` and ``tinymodels/`` (a new lesson's ``grader/lessons/lNN_slug/``
with no edit; namespace ones too: ``course.lessons`` holds the lesson texts and no
``__init__.py``), then those two.
"""

from __future__ import annotations

from setuptools import find_namespace_packages, setup

TOP = ("course", "grader", "tinymodels")
MAPPED = ("course.exercises", "course.solutions")
"""Mapped by pyproject.toml's ``package-dir``; discovery cannot see them."""


def packages(where: str = ".") -> list[str]:
    """Every package of the wheel, found under ``where`` (the repository)."""
    found = find_namespace_packages(
        where,
        include=[f"{top}{tail}" for top in TOP for tail in ("", ".*")],
        exclude=["*.__pycache__"],
    )
    return sorted({*found, *MAPPED})


if __name__ == "__main__":
    setup(packages=packages())
