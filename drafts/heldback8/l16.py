"""Held-back set 8, lesson 16 (see drafts/heldback8/__init__.py)."""

from __future__ import annotations

from drafts.heldback import Held

M = "l16_serving"

HELD: list[Held] = [
    Held(
        id="hb8-l16-max-batch-hbm-of-one-chip",
        module=M,
        exercise="max_batch",
        what="The learner takes the free memory of one chip, hbm_bytes − weights, instead of the slice's chips·hbm_bytes − weights: on a slice of many chips the batch that fits is far too small (or zero).",
        cause=("chips", "slice", "every chip", "s.chips", "one chip"),
        kind="factor",
        patch=(
            (
                "    free = s.chips * s.hbm_bytes - param_count(m) * itemsize\n",
                "    free = s.hbm_bytes - param_count(m) * itemsize\n",
            ),
        ),
    ),
    Held(
        id="hb8-l16-prefill-weights-read-per-prompt",
        module=M,
        exercise="prefill_time",
        what="The learner counts the weights read once per prompt, batch·P·itemsize bytes: the batch's prompts go through together and the weights are read once for all of them.",
        cause=("once", "batch", "weights read", "per prompt", "p·itemsize"),
        kind="factor",
        patch=(
            (
                "    moved = param_count(m) * itemsize + batch",
                "    moved = batch * param_count(m) * itemsize + batch",
            ),
        ),
    ),
    Held(
        id="hb8-l16-verify-accept-ratio-inverted",
        module=M,
        exercise="verify_draft",
        what="The learner keeps the drafted token with probability min(1, q[x]/p[x]), draft over target, instead of min(1, p[x]/q[x]): tokens the target likes more than the draft are rejected.",
        cause=("p[x]/q[x]", "p/q", "inverted", "target over draft", "ratio"),
        kind="formula",
        patch=(
            (
                "    accept = min(1.0, float(p[token] / q[token]))\n",
                "    accept = min(1.0, float(q[token] / p[token]))\n",
            ),
        ),
    ),
]
