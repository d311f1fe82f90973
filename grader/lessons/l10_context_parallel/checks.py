"""Checks for ring attention (lesson 10): merged partials, rotation steps, score blocks.

- :class:`MergeValues` holds ``merge_partials``' ``(o, lse)`` to the float64
  merge, treating lse = −inf (a row that has seen no key) as a value of its own.
- :class:`RotationSteps` counts the ring's rotations from the compiled program:
  the elements all collective-permutes carry, in units of one local K block
  plus one local V block — so K and V may travel stacked or separately.
- :class:`ScoreBlocks` reads the traced program for the zigzag bonus: every
  step after the diagonal one computes a half score block per head.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from grader.checks import relate, variants
from grader.checks.comms import PERMUTE, communication
from grader.checks.values import as_numpy
from grader.evidence import CountExpectation, Note, RingSteps, Table
from grader.results import CheckResult
from grader.spec import Check, Trial

U32 = 2.0**-24
MERGE_SAFETY = 16.0
"""Allowance for merge_partials in units of u·(1 + |lse|) (see :class:`MergeValues`)."""
MERGE_ABS = 2.0**-11
"""And an absolute allowance (o: times max|o|) for a chip's float32 exp and log (see
:class:`MergeValues`)."""
SHOW_ROWS = 5
"""Wrong (row, head) pairs shown in a merge_partials report."""


# ------------------------------------------------------------------ merge_partials


@dataclass(frozen=True)
class MergeValues(Check):
    """``(o, lse)`` against the float64 merge of the drawn partials.

    float32 error: an lse near ±300 is stored to u·300 ≈ 2e-5 absolute, and
    that error moves the weights e^(lse_i − lse) by as much relatively. So o
    may be off by ``(MERGE_SAFETY·u·(1 + max|lse|) + MERGE_ABS)·max|o|`` and each
    lse by ``MERGE_SAFETY·u·(1 + |lse|) + MERGE_ABS`` (:func:`merge_allowance`).
    Measured over 20 draws on a CPU (``python benchmarks/ring_attention.py``): the
    reference uses 0.47 and 0.92 of one relative unit; weighting bfloat16 o's, 212.
    A TPU's float32 exp and log are approximations: on one v5e the reference's lse
    was off by up to 876 relative units, about 1e-4 absolute, and its o by 3.65
    (``python benchmarks/tpu_precision.py``, 200 of the grader's draws), hence
    ``MERGE_ABS``: 2⁻¹¹ ≈ 4.9e-4. A wrong merge misses by far more: an lse in
    bfloat16 by 4e-3 at |lse| ≈ 1, the max alone by up to log 2. Where the expected
    lse is −inf the answer must be o = 0, lse = −inf exactly."""

    name: str = "values"

    def __call__(self, trial: Trial) -> CheckResult:
        want_o, want_lse = trial.expected
        shaped = _shape_problem(trial.output, want_o, want_lse)
        if shaped:
            return CheckResult(self.name, False, shaped[0], hint=shaped[1])
        got_o, got_lse = (as_numpy(a) for a in trial.output)
        rows_ok = _rows_ok(got_o, got_lse, want_o, want_lse)
        if rows_ok.all():
            return CheckResult(
                self.name, True, "o and lse match the float64 merge, rows that saw no key included"
            )
        bad = [tuple(int(i) for i in at) for at in np.argwhere(~rows_ok)]
        hint, measured = _merge_hint(got_o, got_lse, trial), []
        if hint is None:  # what the merge gives on changed partials, where that is yours

            def matches(value: Any) -> bool:
                o, lse = (np.asarray(a, np.float64) for a in value)
                if o.shape != got_o.shape or lse.shape != got_lse.shape:
                    return False
                return bool(_rows_ok(got_o, got_lse, o, lse).all())

            hint, measured = variants.told(trial, matches, "your (o, lse)")
        if hint is None:  # each o vector scaled: weights that do not add up to 1
            hint = _scaled_o(got_o, got_lse, want_o, want_lse, ~rows_ok, trial.extra.get("o"))
        return CheckResult(
            self.name,
            False,
            f"{len(bad)} of {rows_ok.size} (row, head) pairs wrong, first at row {bad[0][0]}, "
            f"head {bad[0][1]}",
            evidence=[_wrong_rows(bad[:SHOW_ROWS], trial, got_o, got_lse), *measured],
            hint=hint,
        )


def _scaled_o(got_o: np.ndarray, got_lse: np.ndarray, want_o: np.ndarray,
              want_lse: np.ndarray, wrong: np.ndarray, partials: Any = None) -> str | None:  # fmt: skip
    """Where every wrong pair's lse is right and its o is the expected o times a factor
    of its own: each wrong pair's o as a·o1 + b·o2, where that fits every one exactly and
    a + b is not 1 (:func:`_weights_sum`), else the factors
    (:func:`grader.checks.relate.scaled_lines`); None where neither holds."""
    lse_tol, o_tol = merge_allowance(want_o, want_lse)
    with np.errstate(invalid="ignore"):
        lse_right = (np.abs(got_lse - want_lse) <= lse_tol) | (got_lse == want_lse)
    if not np.all(lse_right[wrong]):
        return None
    if partials is not None and (said := _weights_sum(got_o, partials, wrong, o_tol)):
        return said
    said = relate.scaled_lines(got_o, want_o, np.broadcast_to(wrong[..., None], got_o.shape),
                               lambda a, b: np.abs(a - b) <= o_tol, "your o")  # fmt: skip
    return None if said is None else f"{said[0].upper()}{said[1:]}; your lse is right."


def _weights_sum(got_o: np.ndarray, partials: tuple[np.ndarray, np.ndarray],
                 wrong: np.ndarray, o_tol: float) -> str | None:  # fmt: skip
    """Each wrong (row, head) pair's o solved as a·o1 + b·o2 (least squares over its Dh
    elements, Dh ≥ 3 so two weights are determined with room to check): where that gives
    every wrong pair's o to the allowance and a + b is not 1 on any, the weights' sums, the
    merge's being 1 (e^(lse1 − lse) + e^(lse2 − lse) = 1 for lse = logaddexp(lse1, lse2));
    else None."""
    o1, o2 = (np.asarray(o, np.float64) for o in partials)
    if got_o.shape[-1] < 3 or o1.shape != got_o.shape:
        return None
    sums = []
    for r, h in np.argwhere(wrong):
        basis = np.stack([o1[r, h], o2[r, h]], axis=1)  # [Dh, 2]
        if np.linalg.matrix_rank(basis) < 2:
            return None
        ab = np.linalg.lstsq(basis, got_o[r, h], rcond=None)[0]
        if not np.all(np.abs(basis @ ab - got_o[r, h]) <= o_tol):
            return None
        sums.append(float(ab.sum()))
    if not sums or any(abs(x - 1) <= 1e-6 for x in sums):
        return None
    return (f"At each of the {len(sums)} wrong (row, head) pairs your o is exactly a·o1 + b·o2, "
            f"with a + b from {min(sums):.6g} to {max(sums):.6g}: the merge's weights "
            "e^(lse1 − lse) and e^(lse2 − lse) add up to 1 (lse = logaddexp(lse1, lse2)), and "
            "your lse is right.")  # fmt: skip


def _rows_ok(got_o: np.ndarray, got_lse: np.ndarray, want_o: np.ndarray,
             want_lse: np.ndarray) -> np.ndarray:  # fmt: skip
    """[S, H]: the (row, head) pairs whose lse and every element of o are within the
    allowance (:func:`merge_allowance`); an empty row (expected lse −inf) must be −inf."""
    lse_tol, o_tol = merge_allowance(want_o, want_lse)
    empty = np.isneginf(want_lse)
    with np.errstate(invalid="ignore"):  # −inf − (−inf) where both are empty: by `empty`
        near = np.abs(got_lse - want_lse) <= lse_tol
    lse_ok = np.where(empty, np.isneginf(got_lse), near)
    return lse_ok & np.all(np.abs(got_o - want_o) <= o_tol, axis=-1)


def merge_allowance(want_o: np.ndarray, want_lse: np.ndarray) -> tuple[np.ndarray, float]:
    """How far each lse, and every element of o, may be from the float64 merge."""
    largest = float(np.max(np.abs(want_lse[np.isfinite(want_lse)])))
    lse = MERGE_SAFETY * U32 * (1.0 + np.abs(want_lse)) + MERGE_ABS
    o = (MERGE_SAFETY * U32 * (1.0 + largest) + MERGE_ABS) * float(np.max(np.abs(want_o)))
    return lse, o


def _wrong_rows(
    bad: list[tuple[int, int]], trial: Trial, got_o: np.ndarray, got_lse: np.ndarray
) -> Table:
    """The first wrong (row, head) pairs: both inputs' lse, the merged lse and o, expected and yours."""
    (lse1, lse2), (want_o, want_lse) = trial.extra["lse"], trial.expected
    rows = [
        [
            f"{r}, {h}", f"{lse1[r, h]:.6g}", f"{lse2[r, h]:.6g}",
            f"{want_lse[r, h]:.6g}", f"{got_lse[r, h]:.6g}",
            _first(want_o[r, h]), _first(got_o[r, h]),
        ]
        for r, h in bad
    ]  # fmt: skip
    columns = ["row, head", "lse1", "lse2", "lse", "your lse", "o[:3]", "your o[:3]"]
    return Table(columns, rows)


def _first(o: np.ndarray) -> str:
    return ", ".join(f"{x:.4g}" for x in o[:3])


def _shape_problem(out: Any, want_o: np.ndarray, want_lse: np.ndarray) -> tuple[str, str] | None:
    """(message, hint) when the output is not (o, lse) of the right shapes and dtype."""
    import jax

    if not isinstance(out, (tuple, list)) or len(out) != 2:
        return (
            f"returned {type(out).__name__}; expected a pair (o, lse)",
            "Return both the merged output and its log-sum-exp: the next merge needs the lse.",
        )
    for what, got, want in (("o", out[0], want_o), ("lse", out[1], want_lse)):
        if not isinstance(got, jax.Array):
            return f"{what} is {type(got).__name__}; expected a jax.Array", "Return jax arrays."
        if tuple(got.shape) != want.shape:
            return f"{what} has shape {tuple(got.shape)}; expected {want.shape}", (
                "o is [S, H, Dh] and lse [S, H]: broadcast the per-row weights with [..., None]."
            )
        if got.dtype.name != "float32":
            return f"{what} has dtype {got.dtype.name}; expected float32", (
                "Keep the inputs' dtype (float32)."
            )
    return None


def _merge_hint(got_o: np.ndarray, got_lse: np.ndarray, trial: Trial) -> str | None:
    lse1, lse2 = trial.extra["lse"]
    both = np.isneginf(lse1) & np.isneginf(lse2)
    nan = np.isnan(got_o).any(axis=-1) | np.isnan(got_lse)
    if (nan & both).any():
        return (
            "NaN where both partials have lse = −inf (rows that have seen no key): "
            "exp(lse1 − lse) with lse = −inf is exp(−inf − (−inf)) = exp(NaN). Where the "
            "merged lse is −inf, subtract 0 instead (jnp.where(jnp.isneginf(lse), 0, lse)): "
            "the weights are then e^−inf = 0 and o = 0."
        )
    one = np.isneginf(lse1) ^ np.isneginf(lse2)
    want_o, want_lse = trial.expected
    wrong = ~_rows_ok(got_o, got_lse, want_o, want_lse)
    if wrong.any() and one[wrong].all():
        return (
            f"Wrong only in rows where exactly one partial is empty (its lse = −inf, the "
            f"other's finite): {int(wrong.sum())} of the {int(one.sum())} such (row, head) "
            "pairs, every other row right. There the merged lse is the other partial's and "
            "its weight e^(lse_i − lse) = 1: whatever stands in for the reference point "
            "(0 in place of a −inf lse) belongs only where both partials are empty."
        )
    big = np.maximum(np.where(np.isfinite(lse1), lse1, -np.inf), lse2) > 88
    if (~np.isfinite(got_o).all(axis=-1) | ~np.isfinite(got_lse))[big & ~both].any():
        return (
            "inf or NaN where an lse is large: e^lse overflows float32 above lse ≈ 88.7. "
            "Never form e^lse1 or e^lse2 themselves: take lse = logaddexp(lse1, lse2) and "
            "weight the partials by e^(lse1 − lse) and e^(lse2 − lse), which are at most 1."
        )
    if not np.array_equal(np.isneginf(got_lse), np.isneginf(trial.expected[1])):
        return (
            "A row that has seen no key in either partial keeps lse = −inf (and o = 0); a row "
            "that has seen keys in one has that partial's lse."
        )
    want_o, _ = trial.expected
    scale = float(np.max(np.abs(want_o)))
    o1, o2 = trial.extra["o"]
    for wrong, why in (
        (o1 + o2, "You added the two outputs: each is normalised over its own keys, so the "
         "union weights them by their share of the softmax mass, e^(lse_i − lse)."),
        ((o1 + o2) / 2, "You averaged the two outputs: their weights are e^(lse_i − lse), not "
         "1/2 — a partial over more (or larger-scoring) keys counts more."),
    ):  # fmt: skip
        if np.allclose(got_o, wrong, atol=1e-4 * scale, rtol=0):
            return why
    if np.allclose(got_lse, np.maximum(lse1, lse2), rtol=0, atol=1e-4):
        return "The union's lse is log(e^lse1 + e^lse2) (jnp.logaddexp), not the larger of the two."
    return None


# ------------------------------------------------------------------ rotations


def kv_block_elements(trial: Trial) -> int:
    """Elements of one local K block plus one local V block."""
    return 2 * trial.extra["block_elements"]


@dataclass(frozen=True)
class RotationSteps(Check):
    """N − 1 rotations: permuted elements = (N − 1) · (|local K| + |local V|).

    Counted in elements, so stacked K/V (one permute per step) and separate
    K and V (two) read the same, and bfloat16 widened in transit does not matter."""

    name: str = "steps"

    def __call__(self, trial: Trial) -> CheckResult:
        n = trial.example["n"]
        elements = trial.comms.bytes(PERMUTE, itemsize=1)
        if elements is None:
            return CheckResult(
                self.name, False,
                "a collective-permute sits in a loop whose trip count the compiler cannot know",
                evidence=[communication(trial)],
                hint="Loop a fixed number of times: lax.fori_loop with Python int bounds "
                "(lax.axis_size gives N as a Python int), or a Python for-loop.",
            )  # fmt: skip
        steps = Fraction(elements, kv_block_elements(trial))
        shown = str(steps) if steps.denominator == 1 else f"{float(steps):.2f}"
        evidence = [
            communication(trial),
            CountExpectation("K/V block rotations", n - 1, round(steps)),
        ]
        if steps == n - 1:
            return CheckResult(
                self.name, True, f"{shown} rotations of the local K/V block (N − 1)",
                evidence=evidence,
            )  # fmt: skip
        return CheckResult(
            self.name,
            False,
            f"the permutes carry {shown} local K/V blocks per device; N − 1 = {n - 1} rotations "
            "bring every block to every device",
            evidence=evidence,
            hint=_steps_hint(steps, n),
        )


def _steps_hint(steps: Fraction, n: int) -> str:
    if steps == n:
        return (
            "One rotation too many: after N − 1 rotations every device has held every block, "
            "and the block received by the N-th is its own again. Attend to the "
            "block you hold, rotate, N − 1 times; then attend to the last block without sending it."
        )
    if steps == 0:
        return "Nothing travels: pass the K and V blocks round the ring with lax.ppermute."
    if steps == Fraction(n - 1, 2):
        return (
            "Half of what N − 1 rotations carry: only K (or only V) travels. Every step needs "
            "the K and the V block of the same device: rotate both (separately, or stacked)."
        )
    if steps < n - 1:
        return "Too few rotations: some K/V blocks never reach some devices."
    return (
        "More than one K/V block per step travels: send only the local K and V blocks "
        "(each exactly once per rotation), not the queries or a growing buffer."
    )


# ------------------------------------------------------------------ zigzag score blocks


@dataclass(frozen=True)
class ScoreBlocks(Check):
    """Zigzag: only the diagonal step computes a whole [S/N, S/N] score block per
    head; every other step half of one ([S/N, S/2N] or [S/2N, S/N]).

    Score products are the ``dot_general``s that contract over Dh (the grader
    draws Dh different from S/N and S/2N); a product inside a loop counts
    once per iteration."""

    name: str = "balance"

    def __call__(self, trial: Trial) -> CheckResult:
        ex = trial.example
        block, half = 2 * ex["chunk"], ex["chunk"]
        runs = score_products(trial.program, ex["dh"], ex["h"])
        full = [(per_head, times) for per_head, times in runs if per_head > block * half]
        count = None if any(t is None for _, t in full) else sum(t for _, t in full)
        what = f"[S/N, S/N] = [{block}, {block}]"
        if not runs:
            return CheckResult(
                self.name, False, "no q·kᵀ product (a contraction over Dh) found in the program",
                evidence=[Note(f"Looked for dot_generals contracting over Dh = {ex['dh']}.")],
            )  # fmt: skip
        evidence = [_products_table(runs, block * half)]
        if count is not None and count <= 1:
            return CheckResult(
                self.name, True,
                f"{count} whole {what} score block per head (the diagonal), every other step "
                f"half of one ({block}·{half} scores)",
                evidence=evidence,
            )  # fmt: skip
        shown = "an unknown number of" if count is None else str(count)
        return CheckResult(
            self.name,
            False,
            f"{shown} whole {what} score blocks per head computed; zigzag needs one (the "
            f"diagonal) and half a block ({block}·{half} scores) at each other step",
            evidence=evidence,
            hint="You compute the whole block of scores at every step and mask it: with the "
            "zigzag layout the mask makes half of every off-diagonal block useless. Against the "
            "K/V block of device j < i use your queries and key chunk j only ([S/N, S/2N]); for "
            "j > i use your second query chunk and both key chunks ([S/2N, S/N]) — lax.cond on "
            "j < i. Do the diagonal step (j = i) before the loop.",
        )


def _products_table(runs: list[tuple[int, int | None]], half: int) -> Table:
    """Each q·kᵀ product of the traced program: scores per head, how often it runs."""
    rows = [
        [str(per_head), "?" if times is None else str(times),
         "half a block or less" if per_head <= half else "more than half a block"]
        for per_head, times in runs
    ]  # fmt: skip
    return Table(["scores per head", "runs", "size"], rows)


def score_products(program: Any, dh: int, heads: int) -> list[tuple[int, int | None]]:
    """(scores per head, times run) of every dot_general contracting over Dh."""
    out = []
    for dot in program.dots:
        if [dot.lhs_shape[d] for d in dot.lhs_contract] != [dh]:
            continue
        times = None if None in dot.loops else int(np.prod(dot.loops, dtype=np.int64))
        out.append((int(np.prod(dot.out_shape)) // heads, times))
    return out


# ------------------------------------------------------------------ the ring picture


def ring_steps(
    n: int, steps: int, shift: int, causal: bool, zigzag: bool, example: str = "", note: str = ""
) -> RingSteps:
    """The ring sending ``shift`` (+1 to i + 1, −1 to i − 1) for ``steps`` rotations:
    after s of them device i holds the block of device (i − s·shift) mod N."""
    held = [[(i - s * shift) % n for i in range(n)] for s in range(steps + 1)]
    use = [[_use(i, j, causal, zigzag) for i, j in enumerate(row)] for row in held]
    return RingSteps(n, example, held, use, note)


def _use(i: int, j: int, causal: bool, zigzag: bool) -> str:
    if j == i and causal:
        return "diagonal"
    if not causal or (j < i and not zigzag):
        return "whole"
    if zigzag:  # j < i: every query, key chunk j; j > i: query chunk 2N − 1 − i, every key
        return "first key chunk" if j < i else "second query chunk"
    return "masked"


# ------------------------------------------------------------------ softmax precision


NARROW = ("bfloat16", "float16")
"""16-bit floats: the softmax statistics must not be kept in them."""


@dataclass(frozen=True)
class SoftmaxPrecision(Check):
    """In a bfloat16 example the scores, the softmax statistics (running max,
    running sum of exponentials or lse) and the output accumulator are float32,
    read from the traced program's own dtypes (``Program.computed``, ``dots``):
    K and V may be sent in bfloat16 and the result cast back at the end, but
    nothing of the softmax is computed or stored in a 16-bit float.

    The values check cannot tell: bfloat16 statistics drift by 0.005–0.026·max|ref|
    over the ring, inside the 2⁻⁴ allowance that rounding bfloat16 inputs needs.
    What is read, per example, with b query rows, H heads and Dh per head:

    - a ``dot_general`` with a 16-bit result contracting Dh: the scores q·kᵀ;
    - a 16-bit ``exp``: the exponentials e^(s − max) (and so their sum);
    - a 16-bit ``max``/``reduce_max``: the running max;
    - a 16-bit ``reduce_sum`` or ``log``: the sum of exponentials, the lse;
    - a 16-bit ``add`` or a cast to 16 bits inside the ring's loop of an
      [H, b]-sized array: a running statistic stored in bfloat16;
    - of a [b, H, Dh]-sized array: the output accumulator, rounded at every
      step (outside loops: cast more often than the one output).

    A size that is also a score block's (say Dh = S/N) is not read as a
    statistic or the accumulator, so p cast to bfloat16 for the p·V product
    (flash attention's form) never counts."""

    name: str = "precision"

    def __call__(self, trial: Trial) -> CheckResult:
        ex = trial.example
        if ex["dtype"] not in NARROW:
            return CheckResult(
                self.name, True, "not measured here: a float32 example (the values check holds "
                "it to float32's rounding)",
            )  # fmt: skip
        found = softmax_findings(trial.program, _dims(ex))
        if not found:
            return CheckResult(
                self.name, True, "scores, softmax statistics and accumulator are float32 "
                f"({ex['dtype']} only in what is sent and returned)",
            )  # fmt: skip
        first = found[0]
        rest = "; ".join(found[1:])
        return CheckResult(
            self.name,
            False,
            f"{first}" + (f" (also: {rest})" if rest else ""),
            hint="A bfloat16 example keeps bfloat16 only where it saves bytes: send K and V "
            "as they are, compute the scores with preferred_element_type=jnp.float32, and keep "
            "the running max, the running sum of exponentials (or the lse) and the output "
            "accumulator in float32 — start them with jnp.float32 zeros/−inf, not q.dtype — "
            "casting only the result back (o.astype(q.dtype)) at the end. The values stay "
            "within the bfloat16 allowance either way; at long sequence lengths a bfloat16 "
            "sum of thousands of exponentials does not.",
        )


def _dims(ex: dict[str, Any]) -> dict[str, Any]:
    """Query-row and key-row counts a ring example works on (zigzag: chunks of c = S/2N
    and the whole 2c as well), H and Dh."""
    b = ex["rows"] if "rows" in ex else 2 * ex["chunk"]
    rows = {b, b // 2} if "chunk" in ex else {b}
    return {"rows": rows, "h": ex["h"], "dh": ex["dh"], "out": b * ex["h"] * ex["dh"]}


def softmax_findings(program: Any, dims: dict[str, Any]) -> list[str]:
    """What of the softmax the program computes or stores in a 16-bit float, each as a
    sentence naming it (empty when everything of the softmax is float32)."""
    h, dh, rows = dims["h"], dims["dh"], dims["rows"]
    scores = {h * r * k for r in rows for k in rows}
    stats = {h * r for r in rows} - scores
    acc = {h * r * dh for r in rows} - scores
    computed = [(c, n) for c, n in program.computed.items() if c.dtype in NARROW]

    def sizes(ops: set[str], among: set[int], in_loop: bool | None = None) -> int:
        return sum(
            n
            for c, n in computed
            if c.op in ops and c.size in among and (in_loop is None or c.in_loop == in_loop)
            and (c.op != "convert_element_type" or c.source not in NARROW)
        )  # fmt: skip

    def dtype_of(ops: set[str]) -> str:
        return next((c.dtype for c, _ in computed if c.op in ops), "bfloat16")

    found = []
    narrow_scores = [
        d for d in program.dots if d.dtype in NARROW and _contracted(d) == dh and dh not in rows
    ]
    if narrow_scores:
        found.append(
            f"your scores q·kᵀ are {narrow_scores[0].dtype}: the product of q and k has a "
            f"{narrow_scores[0].dtype} result (no preferred_element_type=jnp.float32)"
        )
    if any(c.op == "exp" for c, _ in computed):
        d = dtype_of({"exp"})
        found.append(f"your exponentials e^(s − max) are {d}, and so is what they sum to")
    if any(c.op in ("max", "reduce_max") for c, _ in computed):
        found.append(f"your running max is {dtype_of({'max', 'reduce_max'})}")
    if any(c.op in ("reduce_sum", "log") for c, _ in computed):
        d = dtype_of({"reduce_sum", "log"})
        found.append(
            f"your running sum of exponentials is {d}: the program sums or takes the log "
            f"(the lse) in {d}"
        )
    elif sizes({"convert_element_type", "add"}, stats, in_loop=True) or sizes({"add"}, stats):
        found.append(
            "your running softmax statistics are bfloat16: inside the ring's loop the program "
            f"rounds {'/'.join(str(s) for s in sorted(stats))}-element arrays ([H, S/N], the "
            "size of the running sum of exponentials, the running max or the lse) to a 16-bit "
            "float at every step"
        )
    looped = sizes({"convert_element_type", "add"}, acc, in_loop=True)
    outside = sum(
        n * c.size
        for c, n in computed
        if c.op == "convert_element_type" and c.source not in NARROW and c.size in acc
        and not c.in_loop
    )  # fmt: skip
    if looped or outside > dims["out"] or sizes({"add"}, acc):
        found.append(
            "your output accumulator is bfloat16: the program rounds [S/N, H, Dh]-sized "
            "partial outputs to a 16-bit float "
            + ("inside the ring's loop, at every step" if looped else "more than once")
        )
    return found


def _contracted(dot: Any) -> int:
    n = 1
    for i in dot.lhs_contract:
        n *= dot.lhs_shape[i]
    return n
