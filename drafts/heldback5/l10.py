"""Held-back set 5, lesson 10 (see drafts/heldback5/__init__.py)."""

from __future__ import annotations

from drafts.heldback import Held

M = "l10_context_parallel"

HELD: list[Held] = [
    Held(
        id="hb5-l10-ring-last-block-masked-as-step-n",
        module=M,
        exercise="ring_attention",
        what=(
            "After the N − 1 loop steps the learner attends to the last block as step n, "
            "counting the sends made plus one: with j = (i − s) mod N that names block i, so "
            "the causal mask of the block it holds, (i + 1) mod N, is computed as if it were its "
            "own diagonal block (future keys seen, past ones hidden); without the mask the "
            "result is right."
        ),
        cause=("n − 1", "last block", "off by one", "mask", "block it holds"),
        kind="off-by-one",
        patch=(
            (
                "o, _ = attend(acc, kv, n - 1)  # the last block needs no onward send",
                "o, _ = attend(acc, kv, n)  # the last block needs no onward send",
            ),
        ),
    ),
    Held(
        id="hb5-l10-block-output-not-normalised",
        module=M,
        exercise="ring_attention",
        what=(
            "In the block attention the learner returns Σ e^(s − m)·v without dividing by the "
            "block's denominator Σ e^(s − m), while the lse it returns is right: "
            "merge_partials expects each partial already normalised over its own keys, so every "
            "block's output is off by its own sum of exponentials."
        ),
        cause=("normalis", "denominator", "divide", "sum of exponentials", "its own keys"),
        kind="formula",
        patch=(("    o = o / jnp.where(denom == 0, 1.0, denom).T[..., None]\n", ""),),
    ),
    Held(
        id="hb5-l10-zigzag-later-block-to-the-early-chunk",
        module=M,
        exercise="zigzag_ring_attention",
        what=(
            "For a block from a later device (j > i) the learner merges it into the early query "
            "chunk i instead of the late chunk 2N − 1 − i: chunk i's queries see keys from "
            "their future, and chunk 2N − 1 − i never sees the keys of the devices after i."
        ),
        cause=("query chunk", "2n − 1 − i", "second chunk", "future", "later device"),
        kind="index",
        patch=(
            (
                "return acc[0], merge_partials(*acc[1], *_block_attention(q_blk[c:], *kv, None))",
                "return merge_partials(*acc[0], *_block_attention(q_blk[:c], *kv, None)), acc[1]",
            ),
        ),
    ),
]
