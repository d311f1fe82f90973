"""Realistic wrong implementations for lesson 17 (see tests/mistakes/__init__.py).

TODO(course dev new): one per way of getting an exercise wrong that the lesson warns about,
each with the words the grader's message or hint must say.
"""

from __future__ import annotations

from tests.mistakes import Mistake

L17 = "l17_pallas_kernels"

MISTAKES: list[Mistake] = [
    # Mistake(id="l17-what-goes-wrong", module=L17, exercise="tiled_matmul",
    #         status="failed", check="values", says=("words of the diagnosis",),
    #         patch=(("a line of the solution", "the wrong line"),)),
]
