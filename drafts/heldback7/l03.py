"""Held-back set 7, lesson 3 (see drafts/heldback7/__init__.py)."""

from __future__ import annotations

from drafts.heldback import Held

M = "l03_cost_model"

HELD: list[Held] = [
    Held(
        id="hb7-l03-permute-whole-v-in-one-hop",
        module=M,
        exercise="collective_time",
        what=(
            "Reading the table's 'permute: V is all shards together, 1 step', the learner "
            "charges that one hop the whole V, α + V/W, while each device sends only its own "
            "shard V/N: the permute comes out N times too slow in its bandwidth term."
        ),
        cause=("v/n", "own shard", "each device sends", "v/(n·w)", "one shard"),
        kind="factor",
        patch=(
            (
                "    return step  # permute: every device sends its shard one hop\n",
                "    return alpha + nbytes / w  # permute: one step that carries V\n",
            ),
        ),
    ),
    Held(
        id="hb7-l03-intensity-copied-from-the-worked-example",
        module=M,
        exercise="arithmetic_intensity",
        what=(
            "The learner reuses section 3's simplified intensity B·d/(2·B + d) with B = m and "
            "d = k: it holds only for a square weight (k = n) in bf16, so for any other n or "
            "bytes_per_elem the FLOPs per byte are wrong."
        ),
        cause=("worked example", "square", "bytes_per_elem", "m·k + k·n + m·n", "general"),
        kind="formula",
        code='''
def arithmetic_intensity(m: int, k: int, n: int, bytes_per_elem: int) -> float:
    """FLOPs per byte of HBM traffic: section 3's B·d / (2·B + d)."""
    return m * k / (2 * m + k)
''',
    ),
    Held(
        id="hb7-l03-predict-2d-partial-of-every-row",
        module=M,
        exercise="predict_bytes",
        what=(
            "In the 2-D case the learner all-reduces a partial C of all I rows, [I, K], over "
            "y, forgetting that A's rows are split over x so each device's partial is only "
            "[I/X, K]: the bytes come out X times too many."
        ),
        cause=("i/x", "rows", "split over x", "[i/x, k]", "divided by x"),
        kind="factor",
        patch=(
            (
                "        return 2 * (y - 1) * (i // x) * k * b // y  # all-reduce the [I/X, K] partial over y\n",
                "        return 2 * (y - 1) * i * k * b // y  # all-reduce the partial C over y\n",
            ),
        ),
    ),
]
