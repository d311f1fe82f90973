"""The versions that decide what a grading does: read from package metadata, no imports.

``course --version`` prints them, and every attempt records them, so a result
can be reproduced: the same seed draws the same examples only on a hypothesis
in the range pyproject.toml pins, and XLA's version decides what it compiles.
"""

from __future__ import annotations

import platform
from importlib import metadata

DISTRIBUTION = "scaling-course"
GRADING_PACKAGES = ("jax", "jaxlib", "hypothesis", "numpy")


def version(distribution: str = DISTRIBUTION) -> str:
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return "not installed"


def versions() -> dict[str, str]:
    """{"scaling-course": …, "python": …, "jax": …, "jaxlib": …, "hypothesis": …, "numpy": …}."""
    return {
        DISTRIBUTION: version(),
        "python": platform.python_version(),
        **{name: version(name) for name in GRADING_PACKAGES},
    }


def describe() -> str:
    """One line: ``scaling-course 0.1.0 (python 3.11.7, jax 0.10.2, …)``."""
    v = versions()
    rest = ", ".join(f"{k} {val}" for k, val in v.items() if k != DISTRIBUTION)
    return f"{DISTRIBUTION} {v[DISTRIBUTION]} ({rest})"
