"""Held-back set 8, lesson 8 (see drafts/heldback8/__init__.py)."""

from __future__ import annotations

from drafts.heldback import Held

M = "l08_tensor_parallel"

HELD: list[Held] = [
    Held(
        id="hb8-l08-attention-scale-by-numpy-float64",
        module=M,
        exercise="tp_attention",
        what="The learner divides the scores by np.sqrt(dh), a NumPy float64 scalar that is not weakly typed: bfloat16 scores are promoted to float32 and the attention comes back float32 instead of in x's dtype.",
        cause=("float32", "dtype", "np.sqrt", "promot", "bfloat16"),
        kind="dtype",
        patch=(("/ np.sqrt(dh).astype(x.dtype)\n", "/ np.sqrt(dh)\n"),),
    ),
    Held(
        id="hb8-l08-attention-scaled-twice",
        module=M,
        exercise="tp_attention",
        what="Used to pre-scaling the queries, the learner divides q by √Dh and then divides the scores by √Dh again: the logits are scaled by 1/Dh and the softmax is too flat.",
        cause=("twice", "√dh", "scale", "1/dh", "queries"),
        kind="factor",
        patch=(
            (
                "        q, k, v = split(x @ wq), split(x @ wk), split(x @ wv)\n",
                "        q, k, v = split(x @ wq) / np.sqrt(dh).astype(x.dtype), split(x @ wk), split(x @ wv)\n",
            ),
        ),
    ),
]
