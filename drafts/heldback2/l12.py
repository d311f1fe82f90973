"""Held-back set 2, lesson 12 (see drafts/heldback2/__init__.py)."""

from __future__ import annotations

from drafts.heldback import Held

M = "l12_parallel_transformer"

HELD: list[Held] = [
    Held(
        id="hb2-l12-q-k-v-from-invariant-h",
        module=M,
        exercise="train_step",
        what=(
            "The learner drops the explicit pcast of h before attention and multiplies the "
            "'model'-invariant h by each of wq, wk and wv: the values are right, but each "
            "implicit cast transposes to its own all-reduce of dh, three where one does."
        ),
        cause=("pcast", "once", "three", "transpose", "implicit"),
        kind="collective",
        patch=(
            (
                '    hv = lax.pcast(h, "model", to="varying")  # once: its transpose is one psum of dh\n'
                "\n"
                "    def split(t):\n"
                "        return t.reshape(b, s, heads, dh)\n"
                "\n"
                '    q, k, v = split(hv @ w["wq"]), split(hv @ w["wk"]), split(hv @ w["wv"])',
                "    def split(t):\n"
                "        return t.reshape(b, s, heads, dh)\n"
                "\n"
                '    q, k, v = split(h @ w["wq"]), split(h @ w["wk"]), split(h @ w["wv"])',
            ),
        ),
    ),
    Held(
        id="hb2-l12-loss-summed-over-model-too",
        module=M,
        exercise="train_step",
        what=(
            "The learner sums the loss shares over both mesh axes, but every 'model' device of "
            "a row holds the same share (h is whole there), so the loss is 'model' times too "
            "large; only 'data' splits the batch."
        ),
        cause=("'model'", "over 'data' only", "model times", "replicated", "same share"),
        kind="axis",
        patch=(
            (
                'return new, lax.psum(local, "data")',
                'return new, lax.psum(local, ("data", "model"))  # every device\'s share',
            ),
        ),
    ),
    Held(
        id="hb2-l12-prediction-reduce-scatter-twice",
        module=M,
        exercise="predict_step_bytes",
        what=(
            "Because remat gathers every layer twice, the learner also counts the gradients' "
            "reduce-scatter twice, though only the backward reduce-scatters, once per weight."
        ),
        cause=("once", "reduce-scatter", "backward only", "not re-gathered", "gradient"),
        kind="factor",
        patch=(
            (
                '"reduce-scatter": (data - 1) * weights // data,',
                '"reduce-scatter": 2 * (data - 1) * weights // data,  # like the gathers',
            ),
        ),
    ),
    Held(
        id="hb2-l12-rules-split-the-layers-over-data",
        module=M,
        exercise="shard_params",
        what=(
            "The learner maps the 'layers' logical axis to 'data' and leaves 'embed' unsplit, "
            "reading FSDP as 'each data device holds some layers': the weights end up split by "
            "layer (pipeline-like) instead of on D."
        ),
        cause=("embed", "layers", "split on d", "fsdp", "'data'"),
        kind="layout",
        patch=(
            (
                '"embed": "data",  # FSDP: every weight split over \'data\' on D',
                '"embed": None,',
            ),
            ('"layers": None,', '"layers": "data",  # FSDP: each data device holds its layers'),
        ),
    ),
]
