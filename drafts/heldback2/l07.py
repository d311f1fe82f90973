"""Held-back set 2, lesson 7 (see drafts/heldback2/__init__.py)."""

from __future__ import annotations

from drafts.heldback import Held

M = "l07_fsdp"

HELD: list[Held] = [
    Held(
        id="hb2-l07-w-out-split-on-f",
        module=M,
        exercise="fsdp_grads",
        what=(
            "The learner splits both weights on their second dimension, w_out [L, F, D] on F "
            "(P(None, 'data', None)) and gathers it on axis 0: the values agree, but w_out and "
            "its gradient are sharded on F where FSDP here splits every weight on D."
        ),
        cause=("w_out", "p(none, none, 'data')", "split on d", "sharding", "last dimension"),
        kind="layout",
        patch=(
            (
                'PARAMS = {"w_in": P(None, AXIS, None), "w_out": P(None, None, AXIS)}',
                'PARAMS = {"w_in": P(None, AXIS, None), "w_out": P(None, AXIS, None)}',
            ),
            (
                "w_out = lax.all_gather(w_out_blk, AXIS, axis=1, tiled=True)  # [F, D/N] -> [F, D]",
                "w_out = lax.all_gather(w_out_blk, AXIS, axis=0, tiled=True)  # [F/N, D] -> [F, D]",
            ),
        ),
    ),
    Held(
        id="hb2-l07-every-layer-fed-the-input",
        module=M,
        exercise="fsdp_forward",
        what=(
            "In the layer scan the learner applies each layer to the input x (closed over) "
            "instead of the carried h, so the layers do not compose and y is the last layer "
            "applied to x."
        ),
        cause=("carry", "previous layer", "input x", "h", "compose"),
        kind="state",
        patch=(
            (
                'return gathered_layer(h, w["w_in"], w["w_out"]), None',
                'return gathered_layer(x, w["w_in"], w["w_out"]), None',
            ),
        ),
    ),
]
