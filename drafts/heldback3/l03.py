"""Held-back set 3, lesson 3 (see drafts/heldback3/__init__.py)."""

from __future__ import annotations

from drafts.heldback import Held

M = "l03_cost_model"

HELD: list[Held] = [
    Held(
        id="hb3-l03-chunk-per-hop-v-over-n-minus-one",
        module=M,
        exercise="collective_time",
        what=(
            "The learner cuts V into N − 1 chunks, one per hop, so each hop carries "
            "V/(N − 1) bytes instead of V/N: every ring collective's bandwidth term is "
            "N/(N − 1) too large."
        ),
        cause=("v/n", "one chunk", "n chunks", "chunk of v", "per hop"),
        kind="formula",
        patch=(
            (
                "step = alpha + nbytes / (n * w)",
                "step = alpha + nbytes / ((n - 1) * w)  # V cut into one chunk per hop",
            ),
        ),
    ),
    Held(
        id="hb3-l03-reducescatter-bytes-of-a",
        module=M,
        exercise="predict_bytes",
        what=(
            "For the reduce-scatter case the learner copies the all-gather line's size I·J "
            "(A's) instead of the partial C's I·K: what travels is the partial result, "
            "not the operand."
        ),
        cause=("i·k", "partial c", "the result", "not a", "output"),
        kind="leaf",
        patch=(
            (
                "        return (n - 1) * i * k * b // n\n",
                "        return (n - 1) * i * j * b // n\n",
            ),
        ),
    ),
    Held(
        id="hb3-l03-2d-mesh-axes-swapped",
        module=M,
        exercise="predict_bytes",
        what=(
            "In the 2-D case the learner all-reduces over x and splits I over y, mixing up "
            "which mesh axis carries the contracting dim: the partial [I/X, K] is summed "
            "over the Y devices of a row."
        ),
        cause=("over y", "y − 1", "i/x", "contracting", "mesh axis"),
        kind="axis",
        patch=(
            (
                "return 2 * (y - 1) * (i // x) * k * b // y",
                "return 2 * (x - 1) * (i // y) * k * b // x",
            ),
        ),
    ),
]
