"""Held-back set 8 (issue 45 §7): an eighth set of wrong programs a learner could write from
the lessons' texts, of kinds not in ``tests/mistakes``, ``tests/own_wrong.py``,
``drafts/heldback``, ``drafts/heldback2``, ``drafts/heldback3``, ``drafts/heldback4``,
``drafts/heldback5``, ``drafts/heldback6`` or ``drafts/heldback7``, kept out of the catalogue to
measure how the grader's feedback generalises to mistakes nobody designed it for.

One module a lesson, ``lNN.py`` (lessons 2–16), each with ``HELD: list[Held]`` (the dataclass
of :mod:`drafts.heldback`). Written blind on 2026-12-08 (stop 67) by a helper, to be measured
after that stop's work: the author did not grade them, run the grader on them or read the
grader's code or feedback; each entry's ``cause`` words were chosen before anything was graded.
"""

from __future__ import annotations

from drafts.heldback import Held, collect_package

__all__ = ["Held", "collect"]


def collect() -> list[Held]:
    return collect_package(__name__, __path__)
