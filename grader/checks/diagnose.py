"""Known mistakes, recognised from the evidence, turned into hints.

Every function takes what a check measured and returns a sentence naming the
likely mistake, or None when nothing familiar fits.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

Close = Callable[[np.ndarray, np.ndarray], bool]

NON_FINITE = "NaN or Inf in the output"
"""The start of the hint for non-finite values; a measured overflow of a narrow cast
takes its place (:func:`grader.checks.relate.overflow`)."""

STRAY_FACTOR = "The result is the right one times"
"""The start of the hint for a factor no known mistake explains; a relation measured
on the values (:mod:`grader.checks.relate`, which names the factor where it is one of
the example's quantities) takes its place."""


def _same_shapes(a: Sequence[np.ndarray], b: Sequence[np.ndarray]) -> bool:
    return len(a) == len(b) and all(x.shape == y.shape for x, y in zip(a, b))


def values(
    actual: Sequence[np.ndarray],
    expected: Sequence[np.ndarray],
    close: Close,
    *,
    block: int | None = None,
    n_ring: int | None = None,
) -> str | None:
    """Diagnose wrong per-device results.

    ``actual``/``expected`` are per-device arrays in ring (device) order.
    ``block`` is the row count of one block along dim 0 when results are made
    of blocks (an all-gather); ``n_ring`` the ring size.
    """
    n = len(actual)
    if not _same_shapes(actual, expected) or all(close(a, e) for a, e in zip(actual, expected)):
        return None
    if any(not np.all(np.isfinite(a)) for a in actual):
        bad = [d for d, a in enumerate(actual) if not np.all(np.isfinite(a))]
        return (
            f"{NON_FINITE} of device(s) {bad}: look for inf − inf (a row's max of −inf "
            "subtracted from its scores, where every score of the row is masked to −inf), "
            "0 · inf, a division by zero, a log of a non-positive number, or an "
            "uninitialised buffer (jnp.empty)."
        )
    distinct_expected = n > 1 and any(not close(expected[0], e) for e in expected[1:])
    differ = any(not close(actual[0], a) for a in actual[1:])
    if n > 1 and not distinct_expected and differ and close(np.sum(actual, axis=0), expected[0]):
        return (
            "Each device returned only its own partial sum: added up over the devices they give "
            "the right answer, so the psum that should combine them is missing. With "
            "check_vma=False, out_specs=P() does not complain and the global array shows device "
            "0's partial. Add the psum over the axis; but if these are gradients of an input "
            "replicated over the axis, taken with jax.grad inside shard_map, turn check_vma back "
            "on instead and add no psum: with it, jax.grad returns them already summed (a psum "
            "on top would make them N times too large)."
        )
    if distinct_expected and not differ:
        for word, total in (("mean", np.mean(expected, axis=0)), ("sum", np.sum(expected, axis=0))):
            if close(actual[0], total):
                how = "lax.pmean (or a psum divided by N)" if word == "mean" else "lax.psum"
                return (
                    f"Every device holds the {word} of the {n} devices' right blocks: each "
                    "device's own block was already its piece of the result (gradient shards, "
                    f"say, which autodiff has already reduce-scattered), and a {how} over the "
                    "axis mixed different devices' shards together. Drop that reduction: the "
                    "blocks need none."
                )
    if distinct_expected and all(close(a, expected[0]) for a in actual):
        return (
            "Every device returned device 0's result: the output is replicated where each device "
            "should hold its own block. With check_vma=False a wrong out_specs=P() hides this; "
            "keep check_vma=True and return each device's own block."
        )
    if n > 1 and distinct_expected:
        for k in range(1, n):
            if all(close(actual[d], expected[(d + k) % n]) for d in range(n)):
                other = f"i + {k}" if k <= n // 2 else f"i − {n - k}"
                return (
                    f"Device i holds the result meant for device {other} (mod N): the chunk index "
                    f"is off by {min(k, n - k)} step(s) — check the ring direction of ppermute "
                    "against the chunk you add or keep at each step."
                )
    if block and n_ring and n_ring > 1 and all(a.shape[0] == n_ring * block for a in actual):
        for k in range(1, n_ring):
            if all(close(a, np.roll(e, k * block, axis=0)) for a, e in zip(actual, expected)):
                shift = k if k <= n_ring // 2 else k - n_ring
                return (
                    f"All blocks arrived, but each sits {abs(shift)} position(s) "
                    f"{'after' if shift > 0 else 'before'} where it belongs: the offset where you "
                    "write an incoming block assumes the other ring direction (or is off by one "
                    "step). A block received at step s came from device (i − s − 1) mod N when "
                    "you send to i + 1."
                )
        if n == n_ring and all(
            close(
                a[p * block : (p + 1) * block],
                e[((2 * d - p) % n) * block : ((2 * d - p) % n + 1) * block],
            )
            for d, (a, e) in enumerate(zip(actual, expected))
            for p in range(n)
        ):
            return (
                "The blocks are mirrored around each device's own: you send one way round the "
                "ring but compute the source of an incoming block for the other way. Sending to "
                "i + 1, the block received at step s came from device (i − s − 1) mod N."
            )
        if all(_blocks_permuted(a, e, block, close) for a, e in zip(actual, expected)):
            return (
                "Every block arrived, but some are written at the wrong offset: the index of the "
                "block you receive at each step does not match where you store it."
            )
    zeros = all(np.count_nonzero(a) == 0 for a in actual)
    if zeros and any(np.count_nonzero(e) for e in expected):
        if all(np.ndim(a) == 0 for a in actual):
            return None  # a scalar that stayed 0 (a counter not advanced, say): no buffer
        if n == 1:  # nothing arrives from another device: the device's own term is lost
            return (
                "The output is all zeros on a mesh of one device, where nothing comes from "
                "another device (a ring of N − 1 steps runs none): what your code computes "
                "from the device's own block alone is lost — the term a ring loop starts its "
                "sum from, or the one it adds after its last step; or the result buffer is "
                "never written, or the wrong variable is returned."
            )
        return "The output is all zeros: the result buffer is never written, or the wrong variable is returned."
    scale = _scale(actual, expected)
    if (
        scale is not None
        and not zeros
        and not np.isclose(scale, 1.0)
        and all(close(a, scale * e) for a, e in zip(actual, expected))
    ):
        varied = _varied(expected)  # one value (a scalar) is some multiple of any other
        round_one = not varied and round_number(expected)  # (a power of two: the factor too)
        if n_ring and np.isclose(scale, n_ring):
            if round_one:  # measured on one round number: no cause is shown by it
                return f"{STRAY_FACTOR} N = {n_ring} (one round value: that alone names no cause)."
            return Behaviour(
                f"The result is exactly N = {n_ring} times too large: a sum where a mean belongs "
                "gives that, or a value added once per device twice — or a product with any "
                f"other size that is {n_ring} here."
            )
        if n_ring and np.isclose(scale * n_ring, 1.0):
            if round_one:
                return (
                    f"{STRAY_FACTOR} 1/N = 1/{n_ring} (one round value: that alone names no cause)."
                )
            return Behaviour(
                f"The result is exactly N = {n_ring} times too small: a mean (pmean) where a sum "
                f"belongs gives that — or a division by any other size that is {n_ring} here."
            )
        if varied:
            return f"{STRAY_FACTOR} {scale:.3g}: a stray scale factor."
        return None
    wrong = [d for d in range(n) if not close(actual[d], expected[d])]
    if 0 < len(wrong) < n:
        return f"Only device(s) {wrong} of {n} are wrong; the others are right: what your code does differently on those devices is where the values part."
    return None


class Behaviour(str):
    """A hint that says what the output does (the gradient came back unclipped, the result
    N times too small), which several causes give: a change of the reference that gives
    the output is still looked for, and said first (:mod:`grader.checks.values`)."""


def round_number(arrays: Sequence[np.ndarray]) -> bool:
    """Every value a whole number or a power of two (a counter, a loss scale): between two
    such numbers a factor such as N = 4 is as often a coincidence (2048 → 8192 is a scale
    doubled where it halves) as a cause. A value from a computation (a loss, 149.928) is
    not: a factor exact to its tolerance there is one of few that fit."""
    values = np.concatenate([np.ravel(np.asarray(x, np.float64)) for x in arrays])
    finite = np.abs(values[np.isfinite(values) & (values != 0)])
    return bool(np.all((np.mod(finite, 1) == 0) | (np.mod(np.log2(finite), 1) == 0)))


def _varied(arrays: Sequence[np.ndarray]) -> bool:
    """The expected values take two values at least: only then does an exact factor
    between two results say more than their ratio."""
    values = np.concatenate([np.ravel(x) for x in arrays])
    return values.size > 1 and bool(np.any(values != values[0]))


def _blocks_permuted(a: np.ndarray, e: np.ndarray, block: int, close: Close) -> bool:
    nb = a.shape[0] // block
    got = [a[i * block : (i + 1) * block] for i in range(nb)]
    want = [e[i * block : (i + 1) * block] for i in range(nb)]
    used: set[int] = set()
    for w in want:
        match = next((i for i, g in enumerate(got) if i not in used and close(g, w)), None)
        if match is None:
            return False
        used.add(match)
    return True


def _scale(actual: Sequence[np.ndarray], expected: Sequence[np.ndarray]) -> float | None:
    a = np.concatenate([np.ravel(x).astype(np.float64) for x in actual])
    e = np.concatenate([np.ravel(x).astype(np.float64) for x in expected])
    denom = float(e @ e)
    if denom == 0.0:
        return None
    return float(a @ e) / denom


def steps(kind: str, actual: int, expected: int, n: int, farthest: int | None = None) -> str | None:
    """Diagnose a wrong number of collective executions. ``farthest``: the most ring links
    one send of the program crosses (None: not measured). A butterfly is named only where
    both show it: log2(N) exchanges a phase and a send past the neighbours (its partners
    i XOR 2^k); log2(4) = 2 is also one step short of a ring's 3, which sends to neighbours."""
    rounds = int(np.log2(n)) if n > 2 and (n & (n - 1)) == 0 else 0
    per_phase = rounds and actual * (n - 1) == expected * rounds
    if (
        rounds
        and (per_phase or actual == rounds)  # (a butterfly all-reduce: log2 N in all)
        and farthest is not None
        and farthest > 1
    ):
        return (
            f"log2(N) = {rounds} exchanges {'per phase' if per_phase else 'in all'}, and "
            f"sends that cross up to "
            f"{farthest} links of the ring: that is a butterfly (recursive doubling, partners "
            "i XOR 2^k), which only works when N is a power of two — the grader also draws "
            "N = 3 and 6. Use a ring of N − 1 steps."
        )
    if actual == expected + 1:
        return (
            f"One {kind} too many: {expected} sends already bring every block where it "
            f"belongs (N − 1 = {n - 1} per pass round the ring; steps counted as sends, as in "
            "the lesson's tables); the extra one only moves data again. Send N − 1 times "
            "per pass: range(N − 1), or range(1, N) if you number steps from 1."
        )
    if actual == expected - 1:
        return f"One {kind} too few: a ring of N = {n} devices needs {expected} sends to reach every device."
    if n > 2 and expected > 0 and actual == expected * n // (n - 1):
        return f"N steps per phase instead of N − 1: every phase of the ring needs only N − 1 = {n - 1} steps."
    if actual == 0 and expected > 0:
        return f"No {kind} at all: the data never leaves the device."
    return None


def split_along(got: Sequence[int], want: Sequence[int], n: int) -> str | None:
    """A result whose dimension i is N times too large and dimension j N times too small (the
    others right): each device's block was cut along j where the layout cuts along i, and the
    blocks were stacked along i as the out_specs say. Names both dimensions."""
    got, want = tuple(got), tuple(want)
    if n < 2 or len(got) != len(want) or got == want:
        return None
    big = [i for i in range(len(got)) if got[i] == want[i] * n]
    small = [j for j in range(len(got)) if got[j] * n == want[j]]
    rest = [k for k in range(len(got)) if got[k] != want[k] and k not in big + small]
    if len(big) != 1 or len(small) != 1 or rest:
        return None
    i, j = big[0], small[0]
    return (
        f"Your result's dimension {i} is N = {n} times too long and dimension {j} N times too "
        f"short: each device's block was scattered along dimension {j} (it kept "
        f"{want[j]}/{n} = {got[j]} of it) where the output is split along dimension {i}, and "
        f"out_specs stacked the blocks along {i}. Scatter along dimension {i}: "
        f"lax.psum_scatter(..., scatter_dimension={i}, tiled=True)."
    )
