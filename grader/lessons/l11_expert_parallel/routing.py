"""Lesson 11's routing rules by name: the tie-breaking knobs, and the float64 reference.

The reference (routing, dispatch and the MoE layer in numpy float64, with the knobs
that turn it into the wrong layers students write:
:mod:`grader.expected.l11_expert_parallel`) is the grader's side, hidden from the
student's process, which imports the spec and so this module: the functions here
import it when called, which only the worker does (a check, a report's figure, or a
``run``'s :func:`grader.later.later`).
"""

from __future__ import annotations

from grader.later import expected

LOWEST, HIGHEST = "lowest", "highest"
"""Which expert wins a tie."""

_REFERENCE = expected("l11_expert_parallel")
route = _REFERENCE.fn("route")
"""Top-k routing of ``logits: [T, E]`` with ``capacity`` slots per expert (GShard
order): a ``Routing`` (choice, slot, capacity, gates; ``dispatch()``, ``combine()``,
``load()``)."""
moe_layer = _REFERENCE.fn("moe_layer")
"""The top-1 MoE layer in float64, each of ``groups`` blocks of rows routed on its
own (or a known wrong variant)."""
expert = _REFERENCE.fn("expert")
"""One expert on rows h: tanh(h @ w_in) @ w_out, float64."""
softmax = _REFERENCE.fn("softmax")
"""The gates: softmax of the logits in float64."""
place = _REFERENCE.fn("place")
"""bool [T, E, C] with (t, choice[t, k], slot[t, k]) set where the slot is < C."""
