"""Held-back set 2, lesson 5 (see drafts/heldback2/__init__.py)."""

from __future__ import annotations

from drafts.heldback import Held

M = "l05_collective_matmul"

HELD: list[Held] = [
    Held(
        id="hb2-l05-reducescatter-adds-its-own-block-every-time",
        module=M,
        exercise="matmul_reducescatter",
        what=(
            "Every device adds its product for output block i (its own index) at each step, "
            "instead of the block of the running sum that is passing through it, so each sum "
            "collects N different blocks' terms and none is a true block of Y."
        ),
        cause=("passing through", "i − s − 2", "which block", "travelling", "own block"),
        kind="index",
        patch=(
            ("return acc + product((me - s - 2) % n)", "return acc + product(me)  # my block"),
            (
                "return lax.fori_loop(0, n - 1, step, product((me - 1) % n))",
                "return lax.fori_loop(0, n - 1, step, product(me))",
            ),
        ),
    ),
    Held(
        id="hb2-l05-bidirectional-tail-on-odd-n",
        module=M,
        exercise="allgather_matmul_bidirectional",
        what=(
            "The learner takes the extra single-direction step when N is odd instead of even "
            "(N − 1 other blocks is odd for even N): even rings never receive block i + N/2, "
            "odd rings add one block a second time after an extra send."
        ),
        cause=("even", "odd", "n/2", "parity", "n % 2 == 0"),
        kind="off-by-one",
        patch=(
            (
                "if n % 2 == 0 and n > 1:",
                "if n % 2 == 1 and n > 1:",
            ),
        ),
    ),
    Held(
        id="hb2-l05-bidirectional-left-stream-copied-from-right",
        module=M,
        exercise="allgather_matmul_bidirectional",
        what=(
            "A copy-paste slip: the stream sent right is fed from the right-arriving buffer "
            "(ppermute(from_right, …)) instead of from_left, so from step 1 the 'left' block is "
            "block i + s − 1 and the blocks i − s never arrive."
        ),
        cause=("from_left", "stream", "copy", "i − s", "same buffer"),
        kind="state",
        patch=(
            (
                'from_left = lax.ppermute(from_left, "x", _right(n))',
                'from_left = lax.ppermute(from_right, "x", _right(n))',
            ),
        ),
    ),
]
