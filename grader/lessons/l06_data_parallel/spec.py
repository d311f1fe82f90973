"""Grading spec for lesson 6: data parallelism and gradient accumulation.

The student's functions get the course model's params replicated (``P()``)
and a batch split by rows over a 1-D mesh ``('data',)``. The grader checks
every device's copy of the result against the float64 reference of
:mod:`grader.reference.training` (tolerance from the float32 error of the reductions
involved, see there), that every output is replicated, that the compiled
program holds all-reduces only (the batch never moves), and that they send
exactly the ring optimum 2(N − 1)/N · |params| (+ one scalar for the loss)
per call. For ``dp_accumulate`` it also checks, from the traced program,
that the micro-batches run one after another in a loop (``lax.scan``/``fori_loop``
of n_micro iterations, or of n_micro − 1 with one micro-batch before or after it,
as vision_transformer writes it: matmuls counted with trip counts decide, see
``_micro_loops``) and no all-reduce runs inside that loop, and that temporary memory stays below
A = L·(B/N)·(D + F)·4 bytes, the activations of the whole local batch.

Sizes. Values and bytes draw small shapes (2–6 rows per device). The
accumulation draws 128 rows per device, D = 8, F ∈ {24, 32} and
n_micro ∈ {4, 8}, so A = 10–10.7·|params| (activations dominate) and a
micro-batch holds 16–32 rows. Measured on this machine (N = 3, 4, 8; L = 2,
3): the reference's temporaries 0.47–0.79·A; the gradient of the whole local
batch 2.37–2.64·A; a Python loop over micro-batches 2.27–2.73·A; over every
drawn size (N = 3, 8; L = 2, 3; F = 24, 32; n_micro = 4, 8) the reference
stays at 0.42–0.79·A.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
from hypothesis import strategies as st

from grader.checks import (
    InputsUntouched,
    OnlyCollectives,
    OutputSharding,
    TempMemory,
    Values,
    relate,
    vma,
)
from grader.checks.comms import communication
from grader.checks.program import precision_hint
from grader.checks.trees import PerLeaf
from grader.checks.values import Behaviour
from grader.evidence import BytesExpectation, Note, Table
from grader.later import later
from grader.measure import jaxpr
from grader.reference import training
from grader.results import CheckResult
from grader.runtime import Runtime
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

MODULE = "l06_data_parallel"
AXIS = "data"
ALL_REDUCE = "all-reduce"
FLOAT32 = 4
LOSS_BYTES = FLOAT32
"""The loss is one float32 scalar."""
ACCUMULATE_ROWS = 128
"""Rows per device for dp_accumulate: enough that activations dominate params."""

TRANSPOSE_RULE = (
    "Under shard_map with check_vma=True, params that come in replicated are invariant "
    "over 'data'; using them with your varying rows casts them to varying implicitly, "
    "and the transpose of that cast is a psum — so jax.grad returns the gradient already "
    "summed over the devices."
)


# ------------------------------------------------------------------ examples


def _sizes_from(ctx: Context) -> list[int]:
    """Mesh sizes where a wrong scale shows (N ≥ 2), or 1 when that is all there is."""
    return [n for n in ctx.mesh_sizes if n >= 2] or [1]


def _strategy(kind: str) -> Callable[[Context], Any]:
    def strategy(ctx: Context):
        fields: dict[str, Any] = {
            "n": st.sampled_from(_sizes_from(ctx)),
            "layers": st.sampled_from([2, 3]),
        }
        if kind == "accumulate":
            fields |= {
                "rows": st.just(ACCUMULATE_ROWS),
                "d": st.just(8),
                "f": st.sampled_from([24, 32]),
                "micro": st.sampled_from([4, 8]),
            }
        else:
            fields |= {
                "rows": st.integers(2, 6),
                "d": st.sampled_from([8, 16]),
                "f": st.sampled_from([16, 32]),
            }
        if kind == "train":
            fields["lr"] = st.sampled_from(["0.5", "0.25"])
        fields["seed"] = st.integers(0, 2**16)
        return st.fixed_dictionaries(fields)

    return strategy


def _explicit(kind: str) -> Callable[[Context], list[Example]]:
    """N = 4, then N = 3 (not a power of two). Values need N ≥ 2: at N = 1 an
    N× mistake is invisible."""

    def explicit(ctx: Context) -> list[Example]:
        sizes = [n for n in (4, 3) if n in ctx.mesh_sizes] or [max(ctx.mesh_sizes)]
        out = []
        for i, n in enumerate(sizes):
            if kind == "accumulate":
                ex = {"n": n, "layers": 2 + i, "rows": ACCUMULATE_ROWS, "d": 8, "f": 24}
                ex["micro"] = 8 // (i + 1)  # ≠ N, so an N× and an n_micro× mistake differ
            else:
                ex = {"n": n, "layers": 2 + i, "rows": 2 + i, "d": 8, "f": 16}
            if kind == "train":
                ex["lr"] = "0.5"
            out.append({**ex, "seed": i})
        return out

    return explicit


def model_sizes(ex: Example) -> training.Sizes:
    return training.Sizes(ex["layers"], ex["n"] * ex["rows"], ex["d"], ex["f"])


def inputs(
    ex: Example, rng: np.random.Generator
) -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray]:
    sizes = model_sizes(ex)
    params = training.draw_params(rng, sizes.n_layers, sizes.d, sizes.f)
    return (params, *training.draw_batch(rng, sizes.batch, sizes.d))


def params_bytes(ex: Example) -> int:
    return 2 * ex["layers"] * ex["d"] * ex["f"] * FLOAT32


def activation_bytes(ex: Example) -> int:
    """A = L·(B/N)·(D + F)·4: every layer's input and tanh for the whole local batch."""
    return ex["layers"] * ex["rows"] * (ex["d"] + ex["f"]) * FLOAT32


def _expected(kind: str, ex: Example, params, x, y) -> Any:
    if kind == "train":
        new, value = training.sgd_step(params, x, y, float(ex["lr"]))
        return new, value
    return training.grads(params, x, y)[1]


def _run(kind: str) -> Run:
    def run(rt: Runtime, fn: Callable[..., Any], ex: Example) -> Trial:
        import jax
        from jax.sharding import NamedSharding
        from jax.sharding import PartitionSpec as P

        mesh = rt.mesh((ex["n"],), (AXIS,))
        params, x, y = inputs(ex, rt.rng())
        rows = NamedSharding(mesh, P(AXIS, None))
        args = (
            jax.device_put(params, NamedSharding(mesh, P())),
            jax.device_put(x, rows),
            jax.device_put(y, rows),
        )
        last = (float(ex["lr"]),) if kind == "train" else (ex["micro"],) if "micro" in ex else ()
        jitted = jax.jit(lambda p, a, b: fn(p, a, b, mesh, *last))
        trial = rt.compile_and_run(
            jitted, args, mesh, compiler_options=FAST_COMPILE, kind=kind,
            inputs=(params, x, y), replicated=NamedSharding(mesh, P()), dtype="float32",
        )  # fmt: skip
        trial.expected = later(_expected, kind, ex, params, x, y)  # in the worker only
        return trial

    return run


# ------------------------------------------------------------------ diagnoses


def _summed_inside_model(program: jaxpr.Program) -> bool:
    """An all-reduce inside a loop: the implicit psum of jax.grad for invariant
    params sits in the backward loop over layers (measured, jax 0.10)."""
    return any(s.kind == ALL_REDUCE and s.in_loop for s in program.collectives)


def _n_times_hint(trial: Trial, name: str | None = None) -> str:
    """N× the reference: why, from where the program's all-reduces are; ``name``: the
    param whose gradient this is (other leaves may be right), None for the loss."""
    n = trial.example["n"]
    yours = f"Your gradient of {name}" if name else "Your loss"
    return f"{yours} is N = {n} times the reference{_n_times_why(trial)}"


def _n_times_why(trial: Trial) -> str:
    """Why a gradient is N× the reference, from where the program's all-reduces are: the
    rest of :func:`_n_times_hint`'s sentence."""
    program = trial.program
    # an all-reduce of a weight-shaped array outside the backward loop: a pmean of the
    # gradient, or of the params (the loss's pmean, of any shape of one element, is not:
    # "drop the pmean" would break the loss)
    weights = {tuple(np.shape(w)) for w in trial.extra["inputs"][0].values()}
    if _summed_inside_model(program) and any(
        s.kind == ALL_REDUCE and not s.in_loop and any(tuple(x) in weights for x in s.shapes)
        for s in program.collectives
    ):
        return (
            f". {TRANSPOSE_RULE} Nothing divided that sum by N. Your program also all-reduces "
            "a weight-shaped array outside the backward loop: a pmean of the summed gradient "
            "leaves it as it is (it is the same on every device already), as does a pmean of "
            "the params. Divide the summed gradient by N (and a pmean of it can go), or "
            "lax.pcast the params to varying before jax.grad and pmean once."
        )
    if _summed_inside_model(program):  # only autodiff's psum: nothing divided its sum by N
        return (
            f". {TRANSPOSE_RULE} Nothing divided that sum by N: divide it by N "
            "(lax.axis_size('data')), and add no pmean — that would all-reduce the gradient "
            "a second time."
        )
    return (
        ": you added up N local means. Each device's loss is the mean over its B/N rows, so "
        "the sum of the N local gradients is N times the gradient of the mean over all B "
        "rows: scale to the global batch (pmean, or divide the psum by N)."
    )


def _local_grads(trial: Trial, coord: tuple) -> tuple[float, dict[str, np.ndarray]]:
    """(loss, grads) of one device's own rows, float64."""
    params, x, y = trial.extra["inputs"]
    rows = trial.example["rows"]
    mine = slice(coord[0] * rows, (coord[0] + 1) * rows)
    return training.grads(params, x[mine], y[mine])


def _param_name(leaf: str) -> str | None:
    """``"['w_in']"`` or ``"[0]['w_in']"`` → ``"w_in"``; the loss (``"[1]"``) → None."""
    found = re.search(r"'(\w+)'", leaf)
    return found[1] if found else None


def _alternatives(trial: Trial) -> list[tuple[str, Callable[[tuple, tuple], np.ndarray]]]:
    """Known wrong results for one leaf (``trial.extra['leaf']``): the right
    gradient scaled by N, n_micro or 1/N, and each device's unreduced own gradient."""
    ex, kind, leaf = trial.example, trial.extra["kind"], trial.extra["leaf"]
    n, micro = ex["n"], ex.get("micro", 1)
    params, x, y = trial.extra["inputs"]
    value, grads = training.grads(params, x, y)
    name = _param_name(leaf)  # None for the loss

    def result(g: Any, loss_value: float) -> np.ndarray:
        """The output leaf, given gradient dict g and a loss."""
        if name is None:
            return np.asarray(loss_value)
        if kind != "train":
            return g[name]
        return np.asarray(params[name], np.float64) - float(ex["lr"]) * g[name]

    def scaled(factor: float) -> Callable[[tuple, tuple], np.ndarray]:
        wrong = result({k: factor * v for k, v in grads.items()}, factor * value)
        return lambda coord, index: wrong[index]

    out: list[tuple[str, Callable[[tuple, tuple], np.ndarray]]] = []
    if kind == "train" and name is None:
        lr = float(ex["lr"])
        after = training.loss({k: np.asarray(params[k], np.float64) - lr * g
                               for k, g in grads.items()}, x, y)  # fmt: skip
        out.append((
            "Your loss is the loss of the updated params, p − lr·g: the step returns the loss "
            "before it, the value jax.value_and_grad gives with the gradient.",
            lambda coord, index: np.asarray(after),
        ))  # fmt: skip
    if n > 1 and name is None:
        out.append((
            f"Your loss is N = {n} times the reference: you summed the N local means. Every "
            "device has B/N rows, so the mean over all B rows is the mean of the local means: "
            "lax.pmean, not lax.psum.",
            scaled(n),
        ))  # fmt: skip
    elif n > 1 and kind == "train":  # p − lr·g: lr·g N times, the gradient or the rate
        said = _n_times_why(trial)
        out.append((
            Behaviour(
                f"Your step moved {name} N = {n} times as far as the reference's (p − lr·g "
                f"with lr·g N times): either your learning rate is N times the lr given (the "
                f"step asked for is p − lr·g, lr as it comes), or your gradient of {name} is N "
                f"times the reference{said}"
            ),
            scaled(n),
        ))  # fmt: skip
    elif n > 1:
        out.append((_n_times_hint(trial, name), scaled(n)))
    if n > 1 and kind == "train" and name is not None:  # the new params summed over 'data'
        moved = result(grads, value)
        out.append((
            f"Your {name} is N = {n} times the updated params, p − lr·g, on every device: the "
            "new params were summed over 'data' (a psum of values that are the same on every "
            "device multiplies them by N). Every device computes the same update from the "
            "same all-reduced gradient: the new params need no collective.",
            lambda coord, index: n * moved[index],
        ))  # fmt: skip
    if micro > 1:
        out += [
            (
                f"Your gradient is n_micro = {micro} times the reference: you added up the "
                "gradients of n_micro micro-batch means. Divide the sum by n_micro.",
                scaled(micro),
            ),
            (
                f"Your gradient is N·n_micro = {n * micro} times the reference: the sum over "
                "micro-batches and devices of local means needs dividing by both n_micro and "
                "N (pmean after the loop does the N).",
                scaled(n * micro),
            ),
            (
                f"Your gradient is 1/n_micro = 1/{micro} of the reference: divided by n_micro "
                "once too often — each micro-batch's gradient weighted 1/n_micro as it is "
                "added and the sum divided by n_micro again, say. The mean of the n_micro "
                "micro-batch means is their sum divided by n_micro once.",
                scaled(1 / micro),
            ),
        ]
    if n > 1 and name is None:  # the loss leaf: the gradients may well be right
        out.append((
            f"Your loss is 1/N = 1/{n} of the reference: it was divided by N twice. The mean "
            "of the N local means (lax.pmean) is already the mean over all B rows: divide "
            "no further.",
            scaled(1 / n),
        ))  # fmt: skip
    elif n > 1:
        out.append(
            (
                f"Your gradient is 1/N = 1/{n} of the reference: you divided by N twice. "
                + TRANSPOSE_RULE
                + " Divide once.",
                scaled(1 / n),
            )
        )
        out.append(
            (
                "Each device returned the gradient of its own rows only: nothing summed them "
                "over 'data'. With check_vma=False, jax.grad no longer inserts the psum that "
                "the implicit cast of the replicated params implies, and out_specs=P() does not "
                "complain — the global array shows device 0's. Either lax.pmean the gradients "
                "yourself (with check_vma=False nothing else reduces them), or keep "
                "check_vma=True, where jax.grad returns them summed, and divide by N.",
                lambda coord, index: result(*reversed(_local_grads(trial, coord)))[index],
            )
        )
    return out


def _precision_hint(trial: Trial) -> str | None:
    return precision_hint(trial, "Keep params, inputs and gradients in float32.")


def _vma_error(exc: BaseException) -> str | None:
    """An output of out_specs P() that varies over 'data': which one, read from the error."""
    found = vma.read(exc)
    if found is None or found.kind != vma.OUT_SPECS or not found.outputs:
        return None
    if any(o.path.startswith("[1]") for o in found.outputs):
        return (
            "The loss (output [1]) has out_specs=P() but still varies over 'data': each device "
            "holds the mean loss of its own rows. lax.pmean(local_loss, 'data') makes it the "
            "mean over the whole batch (the mean of equal-sized local means), the same on "
            "every device."
        )
    return (
        f"The gradients ({vma.where(found.outputs[0])}, out_specs=P()) vary over 'data': each "
        "device holds the gradient of its own rows. Gradients vary when the params were "
        "lax.pcast to varying before jax.grad; params left invariant give gradients already "
        "summed over 'data' (the transpose of the implicit pcast), which are invariant. Varying "
        "ones are local means: reduce them exactly once, after any loop, with lax.pmean over "
        "'data' (for the update too, before it). If your loop already pmean's each "
        "micro-batch's gradients, move that pmean here instead: inside the loop it is one "
        "all-reduce per micro-batch, and the varying accumulator you add them to keeps the "
        "output varying anyway."
    )


def _diagnose_error(exc: BaseException, ex: Example, passed: list[Example]) -> str | None:
    text = str(exc)
    said = _vma_error(exc)
    if said:
        return said
    if "out_specs" in text and "replication" in text:
        return (
            "shard_map cannot prove your result is the same on every device, so out_specs=P() "
            "is refused: something returned still varies over 'data'. All-reduce it (lax.pmean) "
            "— the loss of the local rows, or gradients of params you lax.pcast to varying."
        )
    if type(exc).__name__ == "TracerArrayConversionError":
        return (
            "The grader runs your function under jax.jit, where arrays are traced, not "
            "computed: np.asarray or float() of one cannot work. Return jax arrays "
            "(jax.tree.map keeps a dict of them)."
        )
    return None


# ------------------------------------------------------------------ checks


@dataclass(frozen=True)
class AllReduceBytes(Check):
    """All-reduce bytes per device per call = 2(N − 1)/N · (|params| + the loss), exactly.

    Summed as fractions over the collectives the compiled program runs: XLA
    may send the gradients as one tuple all-reduce, one per array, or one per
    layer, and the ring share of each is rounded differently."""

    with_loss: bool = False
    name: str = "bytes"

    def __call__(self, trial: Trial) -> CheckResult:
        n = trial.example["n"]
        payload = params_bytes(trial.example) + (LOSS_BYTES if self.with_loss else 0)
        want = Fraction(2 * (n - 1), n) * payload
        got = all_reduce_bytes(trial)
        if got is None:
            return CheckResult(
                self.name, False,
                "bytes unknown: an all-reduce sits in a loop of unknown trip count",
                hint="Loop over micro-batches a fixed number of times (lax.scan, or "
                "lax.fori_loop with Python int bounds).",
            )  # fmt: skip
        what = (
            "2(N − 1)/N · (|params| + 4 bytes of loss)"
            if self.with_loss
            else ("2(N − 1)/N · |params|")
        )
        evidence = [
            communication(trial, allowed=frozenset({ALL_REDUCE})),
            BytesExpectation(expected=round(want), actual=round(got)),
        ]
        if got == want:
            return CheckResult(
                self.name, True, f"{_bytes(got)} bytes sent per device = {what}", evidence=evidence
            )
        ratio = float(got / want) if want else float("inf")
        return CheckResult(
            self.name,
            False,
            f"{_bytes(got)} bytes sent per device; {what} is {_bytes(want)} ({ratio:.2f}×)",
            evidence=evidence,
            hint=_bytes_hint(trial, ratio),
        )


def all_reduce_bytes(trial: Trial) -> Fraction | None:
    """Bytes one device sends in all-reduces per call, exactly: Σ count · 2(G − 1)/G ·
    operand bytes (None if a trip count is unknown)."""
    total = Fraction(0)
    for c in trial.comms.collectives:
        if c.kind != ALL_REDUCE or not c.moves_data:
            continue
        if c.count is None:
            return None
        total += c.count * Fraction(2 * (c.group_size - 1), c.group_size) * c.operand_bytes
    return total


def _bytes(n: Fraction) -> str:
    """Whole bytes as ``4,608``; a ring share of an indivisible size as ``5.3``."""
    return f"{int(n):,}" if n.denominator == 1 else f"{float(n):,.1f}"


def _bytes_hint(trial: Trial, ratio: float) -> str | None:
    program, micro = trial.program, trial.example.get("micro")
    if micro and _in_micro_loop(program, micro):
        return _IN_LOOP_HINT.format(micro=micro)
    if ratio == 0:
        return (
            "Nothing was all-reduced: every device kept the gradient of its own rows. "
            "Average them over 'data' once (lax.pmean), or keep check_vma=True, where "
            "jax.grad returns them summed over 'data', and divide by N."
        )
    if np.isclose(ratio, 2) and _summed_inside_model(program):
        return (
            f"The gradient crosses the devices twice. {TRANSPOSE_RULE} Do not all-reduce it again."
        )
    return None


_IN_LOOP_HINT = (
    "An all-reduce runs inside the loop over micro-batches, so the gradients cross the devices "
    "{micro} times per call instead of once. Either you pmean inside the loop, or the params "
    "inside it are still invariant — then jax.grad sums over 'data' at every micro-batch "
    "(the transpose of the implicit cast to varying is a psum). lax.pcast the params to "
    "varying before the loop, add up local gradients, and all-reduce once after it."
)


def _micro_loops(program: jaxpr.Program, micro: int) -> list[jaxpr.Loop]:
    """Loops that stand for the one over micro-batches: a loop that runs the model
    (a dot_general inside), of n_micro iterations, or of n_micro − 1 with the one
    micro-batch left over outside it (the first before the loop, as vision_transformer
    and big_vision write it, or the last after it), or a while loop.

    What counts is the property the loop stands for — the micro-batches run one after
    another, so one micro-batch's activations are alive at a time — not its form: the
    matmuls the program runs outside the loop (loop trip counts included, from the
    traced program) must be at most one iteration's worth, n_micro − t iterations'
    worth exactly for a loop of t = n_micro − 1. A Python for-loop over micro-batches
    fails this however its layer loops happen to be counted: n_micro copies of the
    model run outside any one of them."""
    out = []
    for lp in program.loops:
        if lp.depth or not lp.contains("dot_general"):
            continue
        if lp.length is None:
            out.append(lp)  # a while loop: trip count unknown, as before
            continue
        if lp.length not in (micro, micro - 1):
            continue
        inside, outside = _matmul_work(program, lp)
        unknown = inside is None or outside is None  # a while loop elsewhere
        if unknown or (micro - lp.length) * inside <= outside <= inside:
            out.append(lp)
    return out


def _matmul_work(program: jaxpr.Program, loop: jaxpr.Loop) -> tuple[int | None, int | None]:
    """(dot_generals one iteration of ``loop`` runs, dot_generals the program runs
    outside ``loop``), nested trip counts included; None where a while loop makes a
    count unknown. Reads the loop tree from ``Program.loops`` (program order, outer
    before inner: a loop's children follow it, one level deeper)."""
    loops = list(program.loops)

    def children(i: int) -> list[int]:
        out, depth = [], loops[i].depth
        for j in range(i + 1, len(loops)):
            if loops[j].depth <= depth:
                break
            if loops[j].depth == depth + 1:
                out.append(j)
        return out

    def per_iteration(i: int) -> int | None:
        kids = children(i)
        work = loops[i].inside["dot_general"] - sum(loops[j].inside["dot_general"] for j in kids)
        for j in kids:
            if not loops[j].contains("dot_general"):
                continue
            inner = per_iteration(j)
            if inner is None or loops[j].length is None:
                return None
            work += loops[j].length * inner
        return work

    top = [i for i, lp in enumerate(loops) if lp.depth == 0]
    me = next(i for i in top if loops[i] is loop)
    outside = program.counts["dot_general"] - sum(loops[i].inside["dot_general"] for i in top)
    for i in top:
        if i == me or not loops[i].contains("dot_general"):
            continue
        inner = per_iteration(i)
        if inner is None or loops[i].length is None:
            return per_iteration(me), None
        outside += loops[i].length * inner
    return per_iteration(me), outside


def _no_micro_loop_hint(program: jaxpr.Program, micro: int) -> str:
    """What the traced program loops over instead: a loop of the right length with more
    than one micro-batch's matmuls outside it, a loop around the model's own layer loop
    of another length, or none (a Python loop, or the whole local batch at once)."""
    for lp in program.loops:
        if lp.depth or lp.length not in (micro, micro - 1) or not lp.contains("dot_general"):
            continue
        if not (lp.contains("scan") or lp.contains("while")):
            continue  # the model's own layer loop, not one around it
        inside, outside = _matmul_work(program, lp)
        if inside and outside is not None:
            return (
                f"A loop of {lp.length} iterations runs the model, and the matmuls the "
                f"program runs outside it add up to {outside / inside:.2f} of its iterations; "
                f"with n_micro = {micro} micro-batches, {lp.length} in the loop leave "
                f"{micro - lp.length} outside it. Run the micro-batches in that loop, at most "
                "one before or after it."
            )
    outer = sorted({
        lp.length for lp in program.loops
        if lp.depth == 0 and lp.contains("dot_general")
        and (lp.contains("scan") or lp.contains("while"))
    }, key=lambda n: -1 if n is None else n)  # fmt: skip
    if outer:
        runs = " and ".join("an unknown number of" if n is None else str(n) for n in outer)
        return (
            f"The loop around the model runs {runs} iterations, not n_micro = {micro}: loop "
            "over the n_micro micro-batches themselves (lax.scan over the rows reshaped to "
            "[n_micro, B/(N·n_micro), D])."
        )
    return (
        "No loop runs around the model's layers: a Python for-loop is unrolled into n_micro "
        "copies of the forward and backward (XLA is free to run every forward first, keeping "
        "all their activations alive), and one pass over the whole local batch has no loop "
        "at all. Loop over the micro-batches with lax.scan (or lax.fori_loop)."
    )


def _in_micro_loop(program: jaxpr.Program, micro: int) -> bool:
    loops = {id(lp) for lp in _micro_loops(program, micro)}
    return any(
        s.kind == ALL_REDUCE and any(id(lp) in loops for lp in s.loops) for s in program.collectives
    )


def _loop_table(program: jaxpr.Program, micro: int) -> Table:
    """Every loop of the traced program: what it runs, and whether an all-reduce is inside."""
    rows = []
    for lp in program.loops:
        reduces = sum(
            1 for s in program.collectives if s.kind == ALL_REDUCE and any(x is lp for x in s.loops)
        )
        rows.append([
            "  " * lp.depth + lp.primitive,
            str(lp.length) if lp.length is not None else "unknown",
            "yes" if lp.contains("dot_general") else "no",
            str(reduces) if reduces else "",
        ])  # fmt: skip
    return Table(["loop (traced)", "iterations", "matmuls inside", "all-reduces inside"], rows)


@dataclass(frozen=True)
class MicroBatchLoop(Check):
    """The micro-batches are looped over (scan/fori_loop), with no all-reduce inside."""

    name: str = "loop"

    def __call__(self, trial: Trial) -> CheckResult:
        micro, program = trial.example["micro"], trial.program
        loops = _micro_loops(program, micro)
        evidence = [_loop_table(program, micro)]
        if not loops:
            return CheckResult(
                self.name,
                False,
                f"no loop of n_micro = {micro} iterations runs the model (nor one of "
                f"n_micro − 1 = {micro - 1} with the micro-batch left over outside it)",
                evidence=evidence,
                hint=_no_micro_loop_hint(program, micro),
            )
        if _in_micro_loop(program, micro):
            return CheckResult(
                self.name, False, "an all-reduce runs inside the loop over micro-batches",
                evidence=evidence, hint=_IN_LOOP_HINT.format(micro=micro),
            )  # fmt: skip
        kind = "scan" if loops[0].length else "while loop"
        runs = (
            f"loops over {micro} micro-batches ({kind})"
            if loops[0].length != micro - 1
            else f"loops over {micro - 1} micro-batches ({kind}), one more outside the loop"
        )
        return CheckResult(
            self.name, True, f"{runs}, all-reduce after the loop", evidence=evidence
        )  # fmt: skip


def _atol(trial: Trial) -> float:
    return training.tolerance(model_sizes(trial.example))


def _micro_batches(trial: Trial) -> list[relate.Products]:
    """The accumulated gradient (this leaf) as a sum of the micro-batches' gradients
    (:func:`relate.paired`): micro-batch k's term is the mean, over the devices, of the
    gradient of each device's k-th micro-batch, over N·n_micro; the right sum has every
    k once. A loop that loses, repeats or skips micro-batches is told which."""
    ex, leaf = trial.example, trial.extra["leaf"]
    name = _param_name(leaf)
    if trial.extra["kind"] != "accumulate" or name is None:
        return []
    n, micro = ex["n"], ex["micro"]
    params, x, y = trial.extra["inputs"]
    per = x.shape[0] // (n * micro)  # rows of one micro-batch
    atoms = {}
    for k in range(micro):
        rows = [d * micro * per + k * per + r for d in range(n) for r in range(per)]
        grads = [training.grads(params, x[rows[d * per : (d + 1) * per]],
                                y[rows[d * per : (d + 1) * per]])[1][name] for d in range(n)]  # fmt: skip
        atoms[(k, k)] = np.sum(grads, axis=0) / (n * micro)
    return [relate.Products(
        atoms=lambda coord: atoms, right=lambda coord: {k: k for k in range(micro)},
        term=lambda k, _: f"micro-batch {k}'s", first="micro-batch", second="micro-batch",
        n=micro, what="a sum of the micro-batches' gradients (each device's k-th, averaged)",
    )]  # fmt: skip


def _checks(kind: str) -> tuple[Check, ...]:
    values = PerLeaf(
        inner=Values(
            atol=_atol,
            alternatives=_alternatives,
            quantities=lambda t: training.quantities(model_sizes(t.example)),
            families=_micro_batches,
        ),
        explain_failure=_precision_hint,
    )
    checks: list[Check] = [
        values,
        PerLeaf(inner=OutputSharding(expected=lambda t: t.extra["replicated"])),
        InputsUntouched(),
        OnlyCollectives(
            frozenset({ALL_REDUCE}),
            why="Data parallelism moves gradients only, with one all-reduce: the batch stays "
            "where it is and the params are already on every device.",
        ),
    ]
    if kind == "accumulate":
        checks.append(MicroBatchLoop())
    checks.append(AllReduceBytes(with_loss=kind == "train"))
    if kind == "accumulate":
        checks.append(
            TempMemory(
                bound=lambda t: activation_bytes(t.example),
                what=lambda t: "A = L·(B/N)·(D + F)·4 = {}·{}·({} + {})·4".format(
                    t.example["layers"], t.example["rows"], t.example["d"], t.example["f"]
                ),
                hint="The compiled program needs as much scratch memory as the activations of "
                "the whole local batch: some forward pass runs on all B/N rows at once (the "
                "gradient of the whole local batch, even if divided by n_micro), or a Python "
                "loop let XLA run every micro-batch's forward first. Slice one micro-batch per "
                "iteration of a lax.scan and differentiate only that.",
            )
        )
    return tuple(checks)


def _explain(name: str, kind: str) -> Callable[[list[Trial]], list[Any]]:
    """Per example: all-reduce bytes per call against the ring optimum and, for the
    accumulation, temporary memory against A."""

    def explain(trials: list[Trial]) -> list[Any]:
        columns = ["example", "all-reduce B per call", "ring optimum"]
        if kind == "accumulate":
            columns += ["temp per device", "A"]
        rows = []
        for t in trials:
            ex = t.example
            payload = params_bytes(ex) + (LOSS_BYTES if kind == "train" else 0)
            row = [
                format_example(ex),
                _bytes(sent) if (sent := all_reduce_bytes(t)) is not None else "?",
                _bytes(Fraction(2 * (ex["n"] - 1), ex["n"]) * payload),
            ]
            if kind == "accumulate":
                temp = (t.memory or {}).get("temp")
                a = activation_bytes(ex)
                row += [f"{temp:,} = {temp / a:.2f}·A" if temp is not None else "?", f"{a:,}"]
            rows.append(row)
        what = "the loss scalar" if kind == "train" else ""
        note = (
            f"{name}: all-reduce bytes each device sends per call, against the ring optimum "
            f"2(N − 1)/N · |params|{' + ' + what if what else ''}"
            + (
                ", and temporary memory against A = L·(B/N)·(D + F)·4"
                if kind == "accumulate"
                else ""
            )
        )
        return [Note(note), Table(columns, rows)]

    return explain


def _purpose(kind: str) -> Callable[[Example], str | None]:
    """What each fixed example is for (issue 45 §1), as :func:`_explicit` says: N = 4,
    then N = 3 (not a power of two), and for the accumulation n_micro ≠ N."""

    def purpose(ex: Example) -> str | None:
        n, rows = ex["n"], ex["rows"]
        on = f"N = {n}" if n & (n - 1) == 0 else f"N = {n} (not a power of two)"
        if kind == "accumulate":
            micro = ex["micro"]
            return (
                f"{on}, n_micro = {micro} ≠ N, micro-batches of {rows // micro} rows a device: the "
                f"mean gradient over all B = {n * rows} rows, one loop, one all-reduce after it"
            )
        on += f", B = {n * rows} rows"
        if kind == "train":
            return (
                f"{on}, lr = {ex['lr']}: every device takes the same step, with the mean "
                "gradient over all B rows, and returns the loss over all B"
            )
        sent = _bytes(Fraction(2 * (n - 1), n) * params_bytes(ex))
        return (
            f"{on}, L = {ex['layers']}: every device returns the mean gradient over all B "
            f"rows, 2(N − 1)/N·|params| = {sent} bytes all-reduced"
        )

    return purpose


def _exercise(name: str, kind: str) -> ExerciseSpec:
    return ExerciseSpec(
        name=name,
        strategy=_strategy(kind),
        explicit=_explicit(kind),
        run=_run(kind),
        checks=_checks(kind),
        max_examples=1,
        diagnose_error=_diagnose_error,
        explain=_explain(name, kind),
        purpose=_purpose(kind),
    )


SPEC = LessonSpec(
    exercises=(
        _exercise("dp_grads", "grads"),
        _exercise("dp_train_step", "train"),
        _exercise("dp_accumulate", "accumulate"),
    ),
)
