"""A held-back set of wrong programs (issue 45 §7): mistakes a learner could make from the
lessons' texts, of kinds not in ``tests/mistakes``, kept out of the catalogue so that the
grader's feedback can be measured on mistakes nobody designed it for.

One module a lesson, ``lNN.py``, each with ``HELD: list[Held]``. Written blind: their
authors did not grade them or read their feedback while writing. ``measure.py`` grades each
as a student would and classifies its feedback (named / vague / none / passed); a person
then reads every non-named one and says whether its hint names a wrong cause.
"""

from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass


@dataclass(frozen=True, kw_only=True)
class Held:
    id: str
    """Unique across the set (and not an id of ``tests/mistakes``)."""
    module: str
    """The lesson's module, e.g. ``l02_collectives``."""
    exercise: str
    what: str
    """One sentence: what the learner did, and why it is wrong."""
    cause: tuple[str, ...]
    """Words (any one, case-insensitive) a hint that names this mistake would contain,
    chosen before any feedback was seen."""
    kind: str
    """The class of mistake, for the report: off-by-one, factor, layout, axis, dtype,
    collective, leaf, formula, mask, index, state, shape, other."""
    patch: tuple[tuple[str, str], ...] = ()
    """(old, new) edits of the solution's text, as in ``tests.mistakes.Mistake``."""
    code: str = ""
    """Whole wrong functions appended to the solution (the later ``def`` wins)."""

    def source(self, solution: str) -> str:
        from tests.mistakes import Mistake

        as_mistake = Mistake(id=self.id, module=self.module, exercise=self.exercise,
                             status="failed", check=None, says=(), patch=self.patch,
                             code=self.code)  # fmt: skip
        return as_mistake.source(solution)


def collect_package(name: str, path: list[str]) -> list[Held]:
    """Every ``HELD`` of package ``name``'s lesson modules (``lNN.py``), in lesson order."""
    names = sorted(m.name for m in pkgutil.iter_modules(path) if m.name[:1] == "l")
    return [h for n in names for h in importlib.import_module(f"{name}.{n}").HELD]


def collect() -> list[Held]:
    return collect_package(__name__, __path__)
