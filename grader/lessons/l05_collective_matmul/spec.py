"""Grading spec for lesson 5: collective matmul by passing blocks around the ring.

The student's function gets X and W placed on a 1-D mesh ``('x',)`` and
returns Y. The grader checks every device's shard of Y against the
unsharded X·W, Y's sharding, that the compiled program holds
collective-permutes only (N − 1 of them; for the bidirectional bonus at most
⌊N/2⌋ in each direction), that no transfer is larger than one block, the
bytes, and — for the all-gather versions — that temporary memory stays below
the whole W: the one check that catches "collected every block with permutes
and concatenated the whole weight".

Shapes make W dominate: per device X has 1–2 rows per device and W blocks
are [16–32, 64–128], so the whole W is several times X and Y together.
Inputs are small integers; float32 results are exact. The all-gather
versions draw float32 only (see ``_gather_strategy``); measured on this
machine, the reference's temporaries are 0.3–0.8 of the whole W in float32,
and a program that concatenates every block needs 1.5–3 times W.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from hypothesis import strategies as st

from grader.checks import (
    Bytes,
    Count,
    InputsUntouched,
    LargestTransfer,
    OnlyCollectives,
    OutputSharding,
    Precision,
    RingHops,
    TempMemory,
    UnderShardMap,
    Values,
    relate,
)
from grader.checks.comms import PERMUTE, communication, streams
from grader.evidence import Timeline
from grader.reference.matmul import ITEMSIZE
from grader.results import CheckResult
from grader.runtime import FLOAT, Runtime, example_values
from grader.spec import (
    FAST_COMPILE,
    Check,
    Context,
    Example,
    ExerciseSpec,
    LessonSpec,
    Run,
    Trial,
    format_example,
)


def _itemsize(t: Trial) -> int:
    return ITEMSIZE[t.example["dtype"]]


# ------------------------------------------------------------------ examples


def _gather_strategy(ctx: Context):
    return st.fixed_dictionaries(
        {
            "n": st.sampled_from(ctx.mesh_sizes),
            "rows": st.integers(1, 2),  # rows of X per device
            "dblock": st.sampled_from([16, 32]),  # rows of one W block
            "f": st.sampled_from([64, 128]),
            # float32 only: XLA:CPU widens bfloat16 transfers to float32, and the conversion
            # buffers (about 5 blocks) would make the memory check measure the CPU's
            # workaround rather than the program.
            "dtype": st.just("float32"),
            "seed": st.integers(0, 2**16),
        }
    )


def _scatter_strategy(ctx: Context):
    return st.fixed_dictionaries(
        {
            "n": st.sampled_from(ctx.mesh_sizes),
            "b": st.sampled_from([2, 4, 8]),  # rows of X (whole on every device)
            "dblock": st.sampled_from([8, 16]),  # X columns / W rows per device
            "fblock": st.sampled_from([8, 16]),  # columns of one output block
            "dtype": st.sampled_from(["float32", "bfloat16"]),
            "seed": st.integers(0, 2**16),
        }
    )


def _explicit(kind: str, bidirectional: bool = False) -> Callable[[Context], list[Example]]:
    """N = 1 (nothing to pass), N = 4, then N = 3 and 6 (not powers of two;
    6 is even with an odd half, for the bidirectional split); for the bidirectional
    exercise N = 2 last, where its one step is the tail alone (the block N/2 = 1 away,
    fetched one way only): a program that skips the tail there is wrong on no other size."""

    def explicit(ctx: Context) -> list[Example]:
        sizes = [n for n in (1, 4, 3, 6, *((2,) if bidirectional else ())) if n in ctx.mesh_sizes]
        if kind == "gather":
            base = {"rows": 1, "dblock": 16, "f": 64}
        else:
            base = {"b": 2, "dblock": 8, "fblock": 8}
        return [{"n": n, **base, **_variant(kind, n), "seed": i} for i, n in enumerate(sizes)]

    return explicit


def _variant(kind: str, n: int) -> dict[str, str]:
    """dtype and values of an explicit example: floats at N = 4 (a lower precision
    inside shows), bfloat16 at N = 3 for the reduce-scatter (a float32 running sum
    shows; the all-gather versions draw float32 only, see ``_gather_strategy``)."""
    if n == 4:
        return {"dtype": "float32", "values": FLOAT}
    return {"dtype": "bfloat16" if kind == "scatter" and n == 3 else "float32"}


@dataclass(frozen=True)
class Layout:
    """Global shapes and specs of one example."""

    x: tuple[int, int]
    w: tuple[int, int]
    x_spec: tuple[str | None, ...]
    w_spec: tuple[str | None, ...]
    y_spec: tuple[str | None, ...]
    block: int
    """Elements of the block that travels: one W block, or one partial-sum block."""


def layout(kind: str, ex: Example) -> Layout:
    n = ex["n"]
    if kind == "gather":  # X[B_X, D] · W[D_X, F] -> Y[B_X, F]
        b, d, f = n * ex["rows"], n * ex["dblock"], ex["f"]
        return Layout((b, d), (d, f), ("x", None), ("x", None), ("x", None), ex["dblock"] * f)
    b, d, f = ex["b"], n * ex["dblock"], n * ex["fblock"]  # X[B, D_X] · W[D_X, F] -> Y[B, F_X]
    return Layout((b, d), (d, f), (None, "x"), ("x", None), (None, "x"), b * ex["fblock"])


def inputs(kind: str, ex: Example, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    lay = layout(kind, ex)
    dtype = np.dtype("float32") if ex["dtype"] == "float32" else _bf16()
    return (
        example_values(rng, lay.x, ex, 3).astype(dtype),
        example_values(rng, lay.w, ex, 3).astype(dtype),
    )


def _bf16() -> Any:
    import jax.numpy as jnp

    return jnp.dtype("bfloat16")


def _run(kind: str) -> Run:
    def run(rt: Runtime, fn: Callable[..., Any], ex: Example) -> Trial:
        import jax
        from jax.sharding import NamedSharding
        from jax.sharding import PartitionSpec as P

        mesh = rt.mesh((ex["n"],), ("x",))
        lay = layout(kind, ex)
        x, w = inputs(kind, ex, rt.rng())
        args = (
            jax.device_put(x, NamedSharding(mesh, P(*lay.x_spec))),
            jax.device_put(w, NamedSharding(mesh, P(*lay.w_spec))),
        )
        trial = rt.compile_and_run(
            jax.jit(lambda a, b: fn(a, b, mesh)), args, mesh,
            dtype=ex["dtype"], sharding=NamedSharding(mesh, P(*lay.y_spec)), kind=kind,
        )  # fmt: skip
        trial.expected = (x.astype(np.float64) @ w.astype(np.float64)).astype(x.dtype)
        return trial

    return run


# ------------------------------------------------------------------ structure


@dataclass(frozen=True)
class Rounds(Check):
    """Sends in each ring direction: at most ⌊N/2⌋ (the bidirectional bonus)."""

    name: str = "directions"

    def __call__(self, trial: Trial) -> CheckResult:
        n = trial.example["n"]
        per = streams(trial)
        most = max(per.values(), default=0)
        shown = ", ".join(f"{_direction(s)}: {c}" for s, c in sorted(per.items())) or "no sends"
        evidence = [communication(trial)]
        if most <= n // 2:
            return CheckResult(
                self.name, True, f"{shown} — at most ⌊N/2⌋ = {n // 2} sequential steps",
                evidence=evidence,
            )  # fmt: skip
        return CheckResult(
            self.name,
            False,
            f"{shown}; with blocks travelling both ways no direction needs more than "
            f"⌊N/2⌋ = {n // 2} sends",
            evidence=evidence,
            hint="Every send goes the same way round the ring, so this is the one-directional "
            "version: keep two copies of your block, pass one to i − 1 and the other to i + 1 "
            "at every step, and stop after ⌊N/2⌋ steps (at N even the last step needs only one)."
            if set(per) in ({1}, {-1})
            else f"Your sends ({shown}): {most} of them go one way, and no direction needs more "
            f"than ⌊N/2⌋ = {n // 2}. Pass one copy of your block to i − 1 and one to i + 1 at "
            "every step, and stop after ⌊N/2⌋ steps.",
        )


def _bidirectional_steps(example: Example, got: int, want: int) -> str | None:
    n = example["n"]
    if n % 2 == 0 and got == want + 1:
        return (
            f"One send too many: at N = {n} (even) the block N/2 = {n // 2} devices away is the "
            f"same block from either side, so of the ⌊N/2⌋ = {n // 2} steps the last one moves "
            "a single stream: pass it on one way only, and N − 1 blocks travel in all."
        )
    return None


def _direction(shift: int) -> str:
    return {1: "to i + 1", -1: "to i − 1", 0: "mixed pairs"}.get(shift, f"to i {shift:+d}")


def _alternatives(trial: Trial) -> list[tuple[str, Callable[[tuple, tuple], np.ndarray]]]:
    """Wrong pairings of X's columns with the W block held, in the direction measured."""
    ex = trial.example
    n, per = ex["n"], streams(trial)
    if len(per) != 1 or n < 3:
        return []
    (shift,) = per
    x, w = (a.astype(np.float64) for a in inputs("gather", ex, trial.rng()))
    rows, d = x.shape[0] // n, ex["dblock"]

    def cols(i: int, j: int) -> np.ndarray:
        return x[i * rows : (i + 1) * rows, (j % n) * d : (j % n + 1) * d]

    def wblk(j: int) -> np.ndarray:
        return w[(j % n) * d : (j % n + 1) * d]

    def result(x_index: Callable[[int, int], int]) -> Callable[[tuple, tuple], np.ndarray]:
        # after s sends with this shift, device i holds W block i − s·shift
        return lambda coord, index: sum(
            cols(coord[0], x_index(coord[0], s)) @ wblk(coord[0] - s * shift) for s in range(n)
        )

    held = "i + s" if shift == -1 else "i − s"
    return [
        (
            f"You multiply the W block you hold by the wrong columns of X: sending "
            f"{_direction(shift)}, after s steps device i holds W block ({held}) mod N, but you "
            "take X's columns for the block coming the other way round the ring.",
            result(lambda i, s: i + s * shift),
        ),
        (
            "You always multiply by X's columns of your own block (i): the W block you hold "
            "changes every step, and the columns of X must follow it.",
            result(lambda i, s: i),
        ),
        (
            "You pick X's columns by the step number alone: after s steps device i holds the "
            "block that started on another device, so the column index depends on "
            "lax.axis_index as well as on s.",
            result(lambda i, s: s),
        ),
    ]


def _arrivals(me: int, n: int, bidirectional: bool) -> list[list[int]]:
    """The orders in which device ``me``'s loop adds the blocks of X (:attr:`relate.Products.
    orders`): one ring's, either way round; both rings' interleaved (its own block, then one
    from each side a step: me + 1 and me − 1, then me + 2 and me − 2…), either side first."""
    if not bidirectional:
        return [[(me + s) % n for s in range(n)], [(me - s) % n for s in range(n)]]
    out = []
    for first in (1, -1):
        order = [me]
        for s in range(1, n):
            for side in (first, -first):
                b = (me + side * s) % n
                if b not in order and len(order) < n:
                    order.append(b)
        out.append(order)
    return out


def _products(kind: str, bidirectional: bool = False) -> Callable[[Trial], list[relate.Products]]:
    """The block products a device's block of Y may be a sum of (:func:`relate.paired`):
    for the all-gather matmul, device i's rows of X, column block j, times W's block k
    (the right sum: k = j); for the reduce-scatter matmul, X's column block j times W's
    row block j and F block c (the right sum: c = i), or times W's row block k and F
    block i (the right sum: k = j)."""

    def families(trial: Trial) -> list[relate.Products]:
        ex = trial.example
        n = ex["n"]
        x, w = (a.astype(np.float64) for a in inputs(kind, ex, trial.rng()))
        d = ex["dblock"]

        def xcols(j: int, rows: slice = slice(None)) -> np.ndarray:
            return x[rows, j * d : (j + 1) * d]

        def wrows(k: int, cols: slice = slice(None)) -> np.ndarray:
            return w[k * d : (k + 1) * d, cols]

        pairs = [(j, k) for j in range(n) for k in range(n)]
        if kind == "gather":
            per = ex["rows"]

            def own(i: int) -> slice:
                return slice(i * per, (i + 1) * per)

            return [relate.Products(
                atoms=lambda c: {(j, k): xcols(j, own(c[0])) @ wrows(k) for j, k in pairs},
                right=lambda c: {j: j for j in range(n)},
                term=lambda j, k: f"X[:, block {j}]·W[block {k}]", first="X's column block",
                second="W block", n=n,
                orders=lambda c: _arrivals(c[0], n, bidirectional),
            )]  # fmt: skip
        f = ex["fblock"]

        def fcols(c: int) -> slice:
            return slice(c * f, (c + 1) * f)

        return [
            relate.Products(
                atoms=lambda c: {(j, o): xcols(j) @ wrows(j, fcols(o)) for j, o in pairs},
                right=lambda c: {j: c[0] for j in range(n)},
                term=lambda j, o: f"X[:, block {j}]·W[block {j}, F block {o}]",
                first="X's column block", second="F block", n=n,
                orders=lambda c: [[(c[0] + 1 + s) % n for s in range(n)],
                                  [(c[0] - 1 - s) % n for s in range(n)]],
            ),
            relate.Products(
                atoms=lambda c: {(j, k): xcols(j) @ wrows(k, fcols(c[0])) for j, k in pairs},
                right=lambda c: {j: j for j in range(n)},
                term=lambda j, k: f"X[:, block {j}]·W[block {k}, your F block]",
                first="X's column block", second="W row block", n=n,
            ),
        ]  # fmt: skip

    return families


def _explain(kind: str) -> Callable[[list[Trial]], list[Timeline]]:
    """The ring schedule the permutes imply (their directions and counts in the
    compiled program); labelled as such, since no step is observed on its own."""

    def explain(trials: list[Trial]) -> list[Timeline]:
        trial = next((t for t in trials if t.example["n"] == 4), trials[-1])
        n = trial.example["n"]
        per = streams(trial)
        steps = max(per.values(), default=0)
        rows = []
        for s in range(steps + 1):
            cells = []
            for i in range(n):
                if kind == "gather":
                    held = [i] if s == 0 else [(i - s * sh) % n for sh, c in per.items() if c >= s]
                    sends = [(i + sh) % n for sh, c in per.items() if c > s]
                    text = " ".join(f"×W{j}" for j in dict.fromkeys(held))
                else:  # the partial sum travelling: its output block
                    (sh,) = per or {1: 0}
                    text = f"+Y{(i - (s + 1) * sh) % n}"
                    sends = [(i + sh) % n] if s < steps else []
                cells.append(text + "".join(f" →{d}" for d in sends))
            rows.append([s, *cells])
        what = (
            "the W block held at that step, to multiply by X's columns of block j"
            if kind == "gather"
            else "the partial sum of output block j, to which the device adds its product"
        )
        return [
            Timeline(
                n=n,
                example=format_example(trial.example),
                rows=rows,
                note=f"{'×Wj' if kind == 'gather' else '+Yj'}: {what}; →d: sent to device d "
                "next. Worked out from the direction and number of the collective-permutes "
                "in your compiled program, not measured step by step: which block each step "
                "really uses is what the values check tests.",
            )
        ]

    return explain


# ------------------------------------------------------------------ checks

ONLY_PERMUTES = OnlyCollectives(
    frozenset({PERMUTE}),
    why="Collective matmul passes blocks with lax.ppermute only.",
    advice=lambda kind, t: {
        "all-gather": "lax.all_gather materialises the whole W on every device before the "
        "matmul can start: pass one W block at a time with lax.ppermute and multiply each "
        "block as it arrives.",
        "reduce-scatter": "lax.psum_scatter sums every partial product in one collective "
        "after all the compute: instead pass a running partial sum of one output block "
        "around the ring with lax.ppermute, adding your own product at each step.",
        "all-reduce": "A psum sums whole partial products at the end: pass partial sums of one "
        "block around the ring with lax.ppermute instead.",
    }.get(kind),
)


def _block_bytes(t: Trial) -> int:
    return layout(t.extra["kind"], t.example).block * _itemsize(t)


def _w_bytes(t: Trial) -> int:
    return int(np.prod(layout(t.extra["kind"], t.example).w)) * _itemsize(t)


def _memory_hint(t: Trial) -> str:
    """The whole-W hint only where a matmul shows it: one that contracts all D rows of W at
    once (every block collected first). A schedule that holds one block too many, a loop
    one step long, also passes the bound without any such matmul."""
    d = layout(t.extra["kind"], t.example).w[0]
    dots = t.program.dots if t.program is not None else ()
    if any(math.prod(dot.lhs_shape[i] for i in dot.lhs_contract) == d for dot in dots):
        return (
            f"A matmul in your program contracts all D = {d} rows of W at once: you collected "
            "every block and multiplied once, which is an all-gather built from permutes. "
            "Multiply each block as it arrives and keep only the one you hold."
        )
    blocks = t.memory["temp"] / _block_bytes(t)
    return (
        f"Every matmul in your program takes one block of W ({t.example['dblock']} of its {d} "
        f"rows), yet the temporaries add up to {blocks:.2f} blocks, more than the whole W: "
        "more blocks are alive at once than the schedule needs (the other failing checks "
        "say where your schedule differs)."
    )


def _checks(kind: str, bidirectional: bool = False) -> tuple[Check, ...]:
    what = "one W block" if kind == "gather" else "one partial-sum block [B, F/N]"
    checks: list[Check] = [
        Values(
            reduce_size=lambda ex: ex["n"] * ex["dblock"],
            alternatives=_alternatives if kind == "gather" and not bidirectional else None,
            families=_products(kind, bidirectional),
        ),
        OutputSharding(expected=lambda t: t.extra["sharding"]),
        InputsUntouched(),
        UnderShardMap(itemsize=_itemsize),
        Precision(),
        ONLY_PERMUTES,
        RingHops(ring_size=lambda ex: ex["n"]),
        Count(
            kind=PERMUTE,
            expected=lambda ex: ex["n"] - 1,
            ring_size=lambda ex: ex["n"],
            what="N − 1 blocks passed on, in both directions together"
            if bidirectional
            else "N − 1 ring steps",
            hint=_bidirectional_steps if bidirectional else None,
        ),
    ]
    if bidirectional:
        checks.append(Rounds())
    checks += [
        LargestTransfer(
            bound=_block_bytes,
            what=what,
            itemsize=_itemsize,
            hint=f"Send {what} per ppermute: a bigger transfer means you concatenated blocks "
            "(or sent whole arrays) before passing them on.",
        ),
        Bytes(
            expected=lambda t: (t.example["n"] - 1) * _block_bytes(t),
            unit=_block_bytes,
            kinds=frozenset({PERMUTE}),
            itemsize=_itemsize,
            what=f"N − 1 × {what}",
        ),
    ]
    if kind == "gather":
        checks.append(
            TempMemory(
                bound=_w_bytes,
                skip=lambda t: (
                    "one device holds the whole W anyway" if t.example["n"] == 1 else None
                ),
                what=lambda t: "the whole W, D·F·itemsize = {}·{}·{}".format(
                    *layout(t.extra["kind"], t.example).w, _itemsize(t)
                ),
                hint=_memory_hint,
            )
        )
    return tuple(checks)


def _purpose(kind: str, bidirectional: bool) -> Callable[[Example], str | None]:
    """What each fixed example is for (issue 45 §1), as :func:`_explicit` and
    :func:`_variant` say: N = 1 (nothing to pass), floats at N = 4, then N = 3 and 6,
    not powers of two (bfloat16 at N = 3 for the reduce-scatter; 6 even with an odd half
    for the bidirectional split)."""

    def purpose(ex: Example) -> str | None:
        n = ex["n"]
        if n == 1:
            return "N = 1: X and W are whole on the one device, Y = X·W with no block passed"
        on = f"N = {n}" if n & (n - 1) == 0 else f"N = {n} (not a power of two)"
        if ex.get("values") == FLOAT:
            on += ", normal floats in float32"
        if kind == "gather":
            d, f = layout(kind, ex).w
            block = (
                f"one W block [{ex['dblock']}, {f}] per send, "
                f"temporaries under the whole W [{d}, {f}]"
            )
        else:
            block = f"one partial-sum block [B, F/N] = [{ex['b']}, {ex['fblock']}] per send"
        if ex["dtype"] == "bfloat16":
            block += ", the partial sums sent in bfloat16"
        if not bidirectional:
            return f"{on}: N − 1 = {n - 1} ring steps, {block}"
        half = n // 2
        if n == 2:
            return ("N = 2: the one block to fetch is N/2 = 1 away on both sides, so one "
                    "step, one way only (the tail alone), 1 send")  # fmt: skip
        if n % 2:
            steps = f"{half} step" if half == 1 else f"{half} steps"
            return f"N = {n}, odd: ⌊N/2⌋ = {steps} each way, N − 1 = {n - 1} sends in all"
        if half % 2:
            on = f"N = {n}, even with an odd half"
        return (
            f"{on}: the block N/2 = {half} away is the same from either side, so "
            f"{half} steps, the last one way only, N − 1 = {n - 1} sends in all"
        )

    return purpose


def _exercise(name: str, kind: str, bidirectional: bool = False) -> ExerciseSpec:
    return ExerciseSpec(
        name=name,
        strategy=_gather_strategy if kind == "gather" else _scatter_strategy,
        explicit=_explicit(kind, bidirectional),
        run=_run(kind),
        checks=_checks(kind, bidirectional),
        max_examples=1,  # on top of N = 1, 4, 3, 6 (and 2, bidirectional): 5 or 6 compiles
        explain=_explain(kind),
        purpose=_purpose(kind, bidirectional),
    )


SPEC = LessonSpec(
    exercises=(
        _exercise("allgather_matmul", "gather"),
        _exercise("matmul_reducescatter", "scatter"),
        _exercise("allgather_matmul_bidirectional", "gather", bidirectional=True),
    ),
    compiler_options=FAST_COMPILE,
)
