"""Held-back set 7 (issue 45 §7): a seventh set of wrong programs a learner could write from
the lessons' texts, of kinds not in ``tests/mistakes``, ``tests/own_wrong.py``,
``drafts/heldback``, ``drafts/heldback2``, ``drafts/heldback3``, ``drafts/heldback4``,
``drafts/heldback5`` or ``drafts/heldback6``, kept out of the catalogue to measure how the
grader's feedback generalises to mistakes nobody designed it for.

One module a lesson, ``lNN.py`` (lessons 2–16), each with ``HELD: list[Held]`` (the dataclass
of :mod:`drafts.heldback`). Written blind on 2026-12-07 (stop 67) by a helper: the author did
not grade them, run the grader on them or read the grader's code or feedback; each entry's
``cause`` words were chosen before anything was graded.
"""

from __future__ import annotations

from drafts.heldback import Held, collect_package

__all__ = ["Held", "collect"]


def collect() -> list[Held]:
    return collect_package(__name__, __path__)
