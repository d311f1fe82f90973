"""Lesson 12's grader side (hidden from the student's process: :mod:`grader.expected`):
the bytes per kind the compiled reference train_step sends, which is
``predict_step_bytes``'s answer and what the step's bytes are held against, and what a
prediction with one known factor wrong gives, for the hints.
"""

from __future__ import annotations

import numpy as np

from grader.lessons.l12_parallel_transformer.spec import (
    ALL_GATHER,
    ALL_REDUCE,
    ITEMSIZE,
    NAMES,
    REDUCE_SCATTER,
    _predict_shapes,
)
from grader.spec import Example


def reference_bytes(shapes: dict[str, tuple], data: int, m: int, itemsize: int) -> dict[str, int]:
    """What the compiled reference train_step sends per device per kind (module
    docstring), counted per collective as :mod:`grader.measure.hlo` counts it: an
    all-reduce of n bytes over G devices sends ⌊2(G−1)·n/G⌋ each time, so the 4·L
    psums over 'model' round one by one (on a 2×3 mesh of the lesson's example 32 ×
    1,365 + 4 = 43,684 B where the closed formula :func:`megatron` gives 43,694).
    The gathers and reduce-scatters divide exactly."""
    column = sum(int(np.prod(shapes[k])) for k in NAMES) * itemsize // m
    b, s, d = shapes["x"]
    act = b // data * s * d * itemsize
    out = {
        ALL_GATHER: 2 * (data - 1) * column // data,
        REDUCE_SCATTER: (data - 1) * column // data,
        ALL_REDUCE: 4 * shapes["wq"][0] * (2 * (m - 1) * act // m)
        + 2 * (data - 1) * itemsize // data,
    }
    return {k: v for k, v in out.items() if v}


def megatron(shapes: dict[str, tuple], data: int, m: int, itemsize: int) -> int:
    """4·L·2(m−1)/m·|[B/data, S, D]|: two psums per block forward, two backward."""
    b, s, d = shapes["x"]
    return 4 * shapes["wq"][0] * 2 * (m - 1) * (b // data * s * d * itemsize) // m


def prediction_factors(kind: str, ex: Example) -> list[tuple[float, str]]:
    """(what a prediction with one known factor wrong gives, that factor in words), for one
    kind on a predict example. Each is the reference's formula with one piece changed, so a
    prediction 2× or 4× off is named by the piece(s) that give exactly its value; where two
    pieces give the same value on an example (a forward-only all-reduce and the all-reduce's
    2 both halve it), both are said."""
    data, m = ex["mesh"]
    shapes = _predict_shapes(ex)
    column = sum(int(np.prod(shapes[k])) for k in NAMES) * ITEMSIZE / m
    b, seq, d = shapes["x"]
    act = b / data * seq * d * ITEMSIZE
    layers = shapes["wq"][0]
    ring = (data - 1) / data
    out: list[tuple[float, str]] = [(
        reference_bytes(shapes, data, m, 1).get(kind, 0),
        "Counted in elements, not bytes: multiply by the item size (float32: 4).",
    )]  # fmt: skip
    with_x = ring * (column + b * seq * d * ITEMSIZE / m)  # x taken for a weight
    if kind in (ALL_GATHER, REDUCE_SCATTER):
        out.append(((2 if kind == ALL_GATHER else 1) * with_x, "x is counted with the "
                    "weights: FSDP gathers and reduce-scatters the params only (the names of "
                    "the model's weights); x stays split over 'data', each device with its "
                    "own rows."))  # fmt: skip
    if kind == ALL_GATHER:
        out += [
            (ring * column, "Half the all-gather: you count the forward's gathers only. With "
             "remat the backward gathers every layer again, so the weights cross 'data' twice "
             "per step: 2·(data−1)/data·|params|/m."),
            (2 * ring * column * m, "The gathers move one 'model' column of the weights, "
             "|params|/m: each device gathers only its own heads' and F columns' shards."),
            (2 * column, "The ring factor (data−1)/data is missing: a device already holds "
             "its own shard and receives the other data−1."),
        ]  # fmt: skip
    elif kind == REDUCE_SCATTER:
        out += [
            (ring * column * m, "The reduce-scatter moves one 'model' column of the gradients, "
             "|params|/m, not all of them."),
            (column, "The ring factor (data−1)/data is missing from the reduce-scatter."),
            (2 * ring * column, "A reduce-scatter sends (data−1)/data·n, once: 2·(data−1)/data "
             "is an all-reduce's."),
        ]  # fmt: skip
    if kind in (ALL_GATHER, REDUCE_SCATTER) and layers > 1:
        out.append((layers * reference_bytes(shapes, data, m, ITEMSIZE).get(kind, 0),
                    f"L = {layers} times: each weight's shape already holds every layer "
                    "(its leading dimension is L), so its size counts all L blocks once; "
                    "multiplying by the layers again counts each L times."))  # fmt: skip
    if kind == ALL_REDUCE:
        per = 2 * (m - 1) / m * act
        out += [
            (2 * layers * per, "The all-reduce is half: each sub-block's psum over 'model' in "
             "the forward has a transpose in the backward (the pcast of h becomes a psum of "
             "dh), 4 per block, not 2."),
            (4 * layers * (m - 1) / m * act, "The all-reduce is half: an all-reduce of n bytes "
             "over G devices sends 2·(G−1)/G·n (a reduce-scatter and an all-gather), not "
             "(G−1)/G·n."),
            (4 * layers * per * data, "The activations are those of one 'data' row of the "
             "mesh: [B/data, S, D], not the whole batch [B, S, D]."),
            (4 * per, "Once per block: the 4 all-reduces run in each of the L blocks, "
             "4·L·2(m−1)/m·|[B/data, S, D]|."),
        ]  # fmt: skip
        hdh = shapes["wq"][-1] if len(shapes["wq"]) == 3 else None
        if hdh and hdh != d:
            out.append((4 * layers * per * hdh / d, f"The all-reduced activations are "
                        f"[B/data, S, D], D = {d}: the psums carry o @ wo and the MLP's output, "
                        f"both back in the model's width — not the heads' width H·Dh = {hdh}."))  # fmt: skip
    return out
