"""Realistic wrong implementations, each with the diagnosis the grader must give.

One module per lesson, ``tests/mistakes/lNN.py``, holds that lesson's
``MISTAKES``; this package collects every such module by its name, so a new
lesson adds its file and nothing else. Each mistake changes one function of
the lesson's reference solution: either a one-line edit of the solution's
text (``patch``), or a whole wrong function appended to a copy of it
(``code``; the later ``def`` wins). Entries are built with keywords only.
"""

from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass

HEADER = "import jax\nimport jax.numpy as jnp\nimport numpy as np\nfrom jax import lax\n"
"""Imports put in front of ``code``."""


@dataclass(frozen=True, kw_only=True)
class Mistake:
    id: str
    """Unique across the course: the test's id."""
    module: str
    """The lesson's module, e.g. ``l02_collectives``."""
    exercise: str
    status: str
    """The exercise's status: ``failed``, ``error`` …"""
    check: str | None
    """The check that must fail, or None when the whole exercise ends in an error/timeout."""
    says: tuple[str, ...]
    """Words the failing check's message or the hint must contain."""
    never: tuple[str, ...] = ()
    """Words that must not appear there: the cause another mistake's hint names, which
    would be wrong here (issue 45: no cause without its evidence)."""
    code: str = ""
    """Whole wrong functions appended to the solution."""
    patch: tuple[tuple[str, str], ...] = ()
    """(old, new) edits of the solution's own text, for one-line mistakes."""

    def source(self, solution: str) -> str:
        """The solution module with this mistake in it."""
        for old, new in self.patch:
            assert solution.count(old) == 1, f"{self.id}: {old!r} no longer in the solution"
            solution = solution.replace(old, new)
        return solution + ("\n" + HEADER + self.code if self.code else "")


def lesson_modules() -> list[str]:
    """The catalogue modules here, ``l01`` … in order."""
    return sorted(
        m.name for m in pkgutil.iter_modules(__path__) if m.name[0] == "l" and m.name[1:].isdigit()
    )


def collect() -> list[Mistake]:
    return [
        m
        for name in lesson_modules()
        for m in importlib.import_module(f"{__name__}.{name}").MISTAKES
    ]


MISTAKES = collect()
