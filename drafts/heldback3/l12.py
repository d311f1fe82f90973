"""Held-back set 3, lesson 12 (see drafts/heldback3/__init__.py)."""

from __future__ import annotations

from drafts.heldback import Held

M = "l12_parallel_transformer"

HELD: list[Held] = [
    Held(
        id="hb3-l12-loss-divided-by-sequences-not-tokens",
        module=M,
        exercise="train_step",
        what=(
            "The learner divides the summed squared error by the B sequences instead of the "
            "B·S token rows: the loss and every gradient come out S times too large."
        ),
        cause=("b·s", "tokens", "rows", "seq", "factor s"),
        kind="factor",
        patch=(
            (
                "rows = x.shape[0] * x.shape[1]",
                "rows = x.shape[0]  # the batch's sequences",
            ),
        ),
    ),
    Held(
        id="hb3-l12-mlp-reads-the-pre-attention-h",
        module=M,
        exercise="train_step",
        what=(
            "The learner reuses the 'model'-varying copy hv made before attention for the "
            "MLP instead of casting the updated h again: the MLP sees the block's input, not "
            "h after the attention residual."
        ),
        cause=("stale", "updated h", "after attention", "pcast", "hv"),
        kind="state",
        patch=(
            (
                '    hv = lax.pcast(h, "model", to="varying")\n    return h + lax.psum(',
                "    return h + lax.psum(",
            ),
        ),
    ),
    Held(
        id="hb3-l12-prediction-activations-split-over-model",
        module=M,
        exercise="predict_step_bytes",
        what=(
            "The learner divides the activation h by 'model' too, as if it were split like "
            "the heads, but h is whole on every 'model' device: the all-reduce bytes come out "
            "model times too small."
        ),
        cause=("whole", "replicated over 'model'", "activation", "not split", "b/data"),
        kind="factor",
        patch=(
            (
                "act = b // data * s * d * itemsize  # h on one device: [B/data, S, D]",
                "act = b // data * s * d * itemsize // model  # h on one device",
            ),
        ),
    ),
]
