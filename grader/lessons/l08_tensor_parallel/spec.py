"""Grading spec for lesson 8: Megatron-style tensor and sequence parallelism.

Every exercise gets float inputs placed on the mesh (normal, weights scaled
by 1/√fan-in) and is held against a float64 reference computed on the host,
in float32 only, with the tolerance of :mod:`grader.reference.training`:
|got − ref| ≤ SAFETY·u·√K·max|ref| (u = 2⁻²⁴, SAFETY = 16), K the lengths of
the sums chained behind one output (D + F for the MLP) — at most 1.2e-5·max|ref|
on the shapes drawn, below 1e-4·max|ref|. Measured with
``python benchmarks/tolerance_l08.py`` (in units of u·√K·max|ref|): the
references 0.15–1.35, the MLPs with bfloat16 matmuls inside 4,000–34,000, so
a bfloat16 cast fails on values (and gets its own hint, :class:`Values32`).

Communication is read from the compiled program:

- ``tp_mlp``, ``tp_attention``: one all-reduce carrying |y| — the arrays it
  carries, not the number of psum calls, because XLA merges a psum per head
  into one tuple all-reduce — and 2(N − 1)/N·|y| bytes per device.
- ``sp_mlp``: one all-gather and one reduce-scatter, each carrying |x|, no
  all-reduce; 2(N − 1)/N·|x| bytes in all, the bytes of one all-reduce.
- ``dp_tp_mlp``: as ``tp_mlp`` per row of the mesh, and every collective's
  replica groups stay within one ``'model'`` group (never across ``'data'``).
- Weights never move: no collective carries more than the activation it is
  for. Shapes are drawn so that every gathered weight is larger than that
  activation (F > B; H·Dh > B·S), so a gathered weight cannot hide.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from hypothesis import strategies as st

from grader.checks import (
    Bytes,
    InputsUntouched,
    OnlyCollectives,
    OutputSharding,
    Values,
    diagnose,
    vma,
)
from grader.checks.groups import GroupsWithin, grouped, replica_groups
from grader.checks.hinted import Hinted
from grader.evidence import DeviceMap, Evidence
from grader.later import Later, expected, later
from grader.lessons.l08_tensor_parallel.checks import Carries, WeightsStay, arrays
from grader.measure.hlo import Collective
from grader.reference import training
from grader.results import CheckResult
from grader.runtime import Runtime
from grader.spec import FAST_COMPILE, Context, Example, ExerciseSpec, LessonSpec, Run, Trial

MODULE = "l08_tensor_parallel"
ITEMSIZE = 4  # float32
ALL_REDUCE, ALL_GATHER, REDUCE_SCATTER = "all-reduce", "all-gather", "reduce-scatter"
MESHES_2D = ((2, 2), (1, 2), (2, 4), (4, 2), (1, 4))
"""(data, model) shapes drawn for dp_tp_mlp on top of the explicit 2×1, 2×3 and
3×2, simplest first (hypothesis starts there); those that fit the devices."""

# Layouts, as tuples of axis names (None = not split).
REPLICATED: tuple = ()
COLUMNS = (None, "model")
ROWS = ("model", None)
BATCH = ("data", None)


# ------------------------------------------------------------------ references (float64)

_REFERENCE = expected("l08_tensor_parallel")
"""The unsharded MLP and attention in float64 (:mod:`grader.expected.l08_tensor_parallel`),
hidden from the student's process: imported when called, in the worker."""
mlp = _REFERENCE.fn("mlp")
"""tanh(x @ w_in) @ w_out, float64."""
attention = _REFERENCE.fn("attention")
"""Softmax attention, no mask, float64 (``scale`` and ``softmax_axis``: mistakes)."""
_wrong_stride = _REFERENCE.fn("wrong_stride")
"""y when every device reads its H/N·Dh columns at the head-fastest stride."""


def _mlp32(x: np.ndarray, w_in: np.ndarray, w_out: np.ndarray) -> np.ndarray:
    """The expected MLP output: float64, rounded to the program's float32. By the
    exercise's own argument names, which a failing check's changes of them say
    (:mod:`grader.checks.variants`)."""
    return mlp(*_f64(x, w_in, w_out)).astype(np.float32)


def _attention32(
    x: np.ndarray, wq: np.ndarray, wk: np.ndarray, wv: np.ndarray, wo: np.ndarray,
    n_heads: int, softmax_axis: int = -1, causal: bool = False,
) -> np.ndarray:  # fmt: skip
    """The expected attention output, as :func:`_mlp32` (``softmax_axis``: the keys';
    ``causal``: no mask, as the exercise says; a change of it names a decoder's mask)."""
    return attention(*_f64(x, wq, wk, wv, wo), n_heads,
                     softmax_axis=softmax_axis, causal=causal).astype(np.float32)  # fmt: skip


# ------------------------------------------------------------------ examples


@dataclass(frozen=True)
class Setup:
    """One example, ready to run: mesh, inputs with their layouts, the expected y."""

    mesh: Any
    inputs: tuple[np.ndarray, ...]
    layouts: tuple[tuple, ...]
    out: tuple
    expected: Later
    """y in float64 (as float32), computed when a check first reads it: in the worker."""
    static: tuple = ()
    """Extra arguments after the mesh (``n_heads``)."""


def _normal(rng: np.random.Generator, shape: tuple[int, ...], fan_in: int = 1) -> np.ndarray:
    return (rng.standard_normal(shape) / np.sqrt(fan_in)).astype(np.float32)


def mlp_inputs(ex: Example, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rows, d, f = ex["shape"]  # rows: B, or S for sp_mlp
    return _normal(rng, (rows, d)), _normal(rng, (d, f), d), _normal(rng, (f, d), f)


def attention_inputs(ex: Example, rng: np.random.Generator) -> tuple[np.ndarray, ...]:
    b, s, d = ex["shape"]
    hd = ex["heads"] * ex["dh"]
    x = _normal(rng, (b, s, d))
    return (x, *(_normal(rng, (d, hd), d) for _ in range(3)), _normal(rng, (hd, d), hd))


def _f64(*xs: np.ndarray) -> list[np.ndarray]:
    return [a.astype(np.float64) for a in xs]


def setup_example(
    name: str, ex: Example, rng: np.random.Generator, simulated: bool = False
) -> Setup:
    """``simulated``: the mesh of simulated CPU devices (the runtime's ``simulated``)."""
    from grader.measure import devices

    if name == "dp_tp_mlp":
        mesh = devices.make_mesh(tuple(ex["mesh"]), ("data", "model"), simulated)
    else:
        mesh = devices.make_mesh((ex["n"],), ("model",), simulated)
    if name == "tp_attention":
        inputs = attention_inputs(ex, rng)
        expected = later(_attention32, *inputs, ex["heads"])
        layouts = (REPLICATED, COLUMNS, COLUMNS, COLUMNS, ROWS)
        return Setup(mesh, inputs, layouts, REPLICATED, expected, (ex["heads"],))
    inputs = mlp_inputs(ex, rng)
    expected = later(_mlp32, *inputs)
    x_and_y = {"tp_mlp": REPLICATED, "sp_mlp": ROWS, "dp_tp_mlp": BATCH}[name]
    return Setup(mesh, inputs, (x_and_y, COLUMNS, ROWS), x_and_y, expected)


def _drawn_sizes(ctx: Context) -> tuple[int, ...]:
    """Mesh sizes to draw: N = 1 is an explicit example already."""
    return tuple(n for n in ctx.mesh_sizes if n > 1) or ctx.mesh_sizes


def _one_d(ctx: Context, draw_shape: Callable[[int], Any]) -> Any:
    return st.sampled_from(_drawn_sizes(ctx)).flatmap(
        lambda n: st.fixed_dictionaries(
            {"n": st.just(n), "shape": draw_shape(n), "seed": st.integers(0, 2**16)}
        )
    )


def _tp_strategy(ctx: Context) -> Any:
    # F = N·{8, 16} > B ∈ {2, 4}: a gathered w_in [D, F] is larger than y [B, D]
    return _one_d(
        ctx,
        lambda n: st.tuples(
            st.sampled_from([2, 4]), st.sampled_from([8, 16]), st.sampled_from([8 * n, 16 * n])
        ),
    )


def _sp_strategy(ctx: Context) -> Any:
    # S = N·{1, 2} rows, F = N·{8, 16} > S: a gathered weight is larger than x [S, D]
    return _one_d(
        ctx,
        lambda n: st.tuples(
            st.sampled_from([n, 2 * n]), st.sampled_from([8, 16]), st.sampled_from([8 * n, 16 * n])
        ),
    )


def _attention_strategy(ctx: Context) -> Any:
    def full(n: int) -> Any:
        return st.fixed_dictionaries(
            {
                "n": st.just(n),
                "shape": st.tuples(st.sampled_from([1, 2]), st.sampled_from([3, 5]), st.just(8)),
                "heads": st.sampled_from([n, 2 * n]),
                "dh": st.sampled_from([2, 4]),
                "seed": st.integers(0, 2**16),
            }
        )

    # H·Dh > B·S: a gathered wq [D, H·Dh] is larger than y [B, S, D]
    return (
        st.sampled_from(_drawn_sizes(ctx))
        .flatmap(full)
        .filter(lambda ex: ex["heads"] * ex["dh"] > ex["shape"][0] * ex["shape"][1])
    )


def _dp_tp_strategy(ctx: Context) -> Any:
    meshes = [m for m in MESHES_2D if m[0] * m[1] <= ctx.n_devices] or [(1, 1)]
    return st.sampled_from(meshes).flatmap(
        lambda m: st.fixed_dictionaries(
            {
                "mesh": st.just(m),
                "shape": st.tuples(
                    st.sampled_from([m[0], 2 * m[0]]),  # B: 1–2 rows per 'data' group
                    st.sampled_from([8, 16]),
                    st.sampled_from([4 * m[1], 8 * m[1]]),  # F > B/data
                ),
                "seed": st.integers(0, 2**16),
            }
        )
    )


def _explicit_1d(shapes: dict[int, dict[str, Any]]) -> Callable[[Context], list[Example]]:
    """One device (nothing may move), N = 4, then N = 3 (not a power of two)."""

    def explicit(ctx: Context) -> list[Example]:
        return [
            {"n": n, **shapes[n], "seed": i}
            for i, n in enumerate(n for n in (1, 4, 3) if n in ctx.mesh_sizes)
        ]

    return explicit


def _dp_tp_explicit(ctx: Context) -> list[Example]:
    """A 'data' axis alone (nothing may move), then 2×3 and 3×2."""
    cases = [((2, 1), (4, 8, 8)), ((2, 3), (4, 8, 24)), ((3, 2), (3, 16, 16))]
    return [
        {"mesh": m, "shape": s, "seed": i}
        for i, (m, s) in enumerate(cases)
        if m[0] * m[1] <= ctx.n_devices
    ]


# ------------------------------------------------------------------ running


def _run(name: str) -> Run:
    def run(rt: Runtime, fn: Callable[..., Any], ex: Example) -> Trial:
        import jax
        from jax.sharding import NamedSharding
        from jax.sharding import PartitionSpec as P

        setup = setup_example(name, ex, rt.rng(), rt.simulated)
        mesh = setup.mesh
        args = tuple(
            jax.device_put(a, NamedSharding(mesh, P(*lay)))
            for a, lay in zip(setup.inputs, setup.layouts)
        )
        trial = rt.compile_and_run(
            jax.jit(lambda *a: fn(*a, mesh, *setup.static)), args, mesh,
            dtype="float32", sharding=NamedSharding(mesh, P(*setup.out)), name=name,
        )  # fmt: skip
        trial.expected = setup.expected
        return trial

    return run


# ------------------------------------------------------------------ sizes


def _model(ex: Example) -> int:
    """Devices on the 'model' axis."""
    return ex["mesh"][1] if "mesh" in ex else ex["n"]


def _activation(t: Trial) -> int:
    """Bytes of the activation the collectives carry: y (per 'data' group), or x for sp_mlp."""
    ex = t.example
    if "heads" in ex:
        return int(np.prod(ex["shape"])) * ITEMSIZE
    rows, d, _ = ex["shape"]
    if "mesh" in ex:
        rows //= ex["mesh"][0]
    return rows * d * ITEMSIZE


def ring_all_reduce_bytes(t: Trial) -> int:
    m = _model(t.example)
    return 2 * (m - 1) * _activation(t) // m


def _weights(t: Trial) -> dict[str, tuple[int, ...]]:
    ex = t.example
    if "heads" in ex:
        d, hd = ex["shape"][2], ex["heads"] * ex["dh"]
        return {"wq": (d, hd), "wk": (d, hd), "wv": (d, hd), "wo": (hd, d)}
    _, d, f = ex["shape"]
    return {"w_in": (d, f), "w_out": (f, d)}


def reduce_size(ex: Example) -> int:
    """K: the lengths of the sums chained behind one output element (D, then F; for
    attention D, Dh, S and H·Dh), for the float32 tolerance of :mod:`grader.reference.training`."""
    if "heads" in ex:
        _, s, d = ex["shape"]
        return d + ex["dh"] + s + ex["heads"] * ex["dh"]
    _, d, f = ex["shape"]
    return d + f


def _atol(t: Trial) -> float:
    return training.SAFETY * training.U32 * float(np.sqrt(reduce_size(t.example)))


# ------------------------------------------------------------------ hints


def _all_reduce_advice(found: list[Collective], t: Trial) -> str | None:
    y = _activation(t)
    runs = sum(c.count or 0 for c in found)
    if not found:
        return (
            "No all-reduce: each device's tanh(x @ w_in_cols) @ w_out_rows is only a partial "
            "sum of y over its slice of the hidden layer, and the partial sums are never added "
            "(or a weight was gathered so that there are none — see 'weights stay')."
        )
    if runs > 1:
        return (
            f"{runs} all-reduces where Megatron needs one. The first matmul is column-parallel: "
            "tanh(x @ w_in_cols) is this device's own columns of the hidden layer, complete, "
            "and tanh acts on each column alone — nothing to add there. Only the row-parallel "
            "second matmul leaves partial sums: psum once, at the end."
        )
    (c,) = found
    n_arrays = len(arrays(c))
    if n_arrays > 1:
        return (
            f"XLA merged {n_arrays} psums into this one all-reduce of {n_arrays} arrays: you psum "
            "each head's output separately. Add your heads' contributions on the device first "
            "(one matmul of all your heads' outputs by your rows of wo), then psum once: "
            "|y| bytes instead of H/N·|y|."
        )
    if c.operand_bytes > y:
        return (
            f"The all-reduce carries {c.operand_bytes:,} bytes, more than |y| = {y:,}: you sum "
            "something larger than the output — the hidden layer? Sum the output's partial sums."
        )
    return None


def _advice_sp(kind: str, t: Trial) -> str | None:
    if kind == ALL_REDUCE and ALL_GATHER not in t.comms.kinds():
        return (
            "The program all-reduces and has no all-gather: sequence parallelism gathers x "
            "over 'model' first (lax.all_gather(x, 'model', axis=0, tiled=True)), so that "
            "each device's matmuls see every token, and reduce-scatters the partial y after "
            "the row-parallel matmul (lax.psum_scatter)."
        )
    if kind == ALL_REDUCE:  # gathered: a psum and a slice where a reduce-scatter belongs
        return (
            "A psum of the partial y followed by slicing out your rows moves 2(N − 1)/N·|y| and "
            "leaves the whole y on every device for a moment; lax.psum_scatter(partial, 'model', "
            "scatter_dimension=0, tiled=True) sums and keeps your rows in one reduce-scatter of "
            "(N − 1)/N·|y| — together with the all-gather, the bytes of one all-reduce."
        )
    return None


def _advice_tp(kind: str, t: Trial) -> str | None:
    if kind == ALL_GATHER:
        return (
            "An all-gather in tensor parallelism usually gathers a weight: the inputs are "
            "replicated, the weights split so that no device needs another's block. Multiply by "
            "your own blocks and psum the output once."
        )
    if kind == REDUCE_SCATTER:
        return (
            "The output is replicated here: every device needs all of y, so psum, not psum_scatter."
        )
    return None


def _dp_tp_alternatives(t: Trial) -> list[tuple[str, Callable[[tuple, tuple], Any]]]:
    """Partial sums added over 'data' as well: every batch block becomes the sum of all of them."""
    ex = t.example
    data = ex["mesh"][0]
    if data < 2:
        return []
    y = mlp(*_f64(*mlp_inputs(ex, t.rng())))
    total = sum(np.split(y, data))
    return [
        (
            "Each batch block holds the sum of every 'data' group's y: the psum runs over "
            "'data' as well as 'model'. Only the partial sums over the hidden layer (split over "
            "'model') need adding; the batch rows of different 'data' groups are different "
            "examples.",
            lambda coord, index: total[:, index[1]],
        )
    ]


def _attention_alternatives(t: Trial) -> list[tuple[str, Callable[[tuple, tuple], Any]]]:
    ex = t.example
    n, heads, dh, d = ex["n"], ex["heads"], ex["dh"], ex["shape"][2]
    inputs = _f64(*attention_inputs(ex, t.rng()))
    out: list[tuple[str, np.ndarray]] = []
    if heads // n >= 2 and dh >= 2:  # else every stride reads the same columns
        out.append((
            "The heads are split at the wrong stride: head h is the contiguous columns "
            "h·Dh … (h+1)·Dh, so a device's H/N·Dh columns reshape to [B, S, H/N, Dh] (head "
            "first); [B, S, Dh, H/N] interleaves the heads' columns.",
            _wrong_stride(*inputs, heads, n),
        ))  # fmt: skip
        out.append((
            "Your heads are split at one stride and merged at another: each device's "
            "H/N·Dh columns were reshaped to [B, S, Dh, H/N] and swapped to [B, S, H/N, Dh], "
            "so your head h is every H/N-th column (c·H/N + h), while the output is merged "
            "head-major before wo. Head h is the contiguous columns h·Dh … (h+1)·Dh: "
            "reshape to [B, S, H/N, Dh] directly, no swap.",
            _wrong_stride(*inputs, heads, n, merge=False),
        ))  # fmt: skip
        out.append((
            "Your heads are split head-major but merged at another stride: the heads' "
            "outputs [B, S, H/N, Dh] were swapped to [B, S, Dh, H/N] before the reshape to "
            "H/N·Dh columns, so head h's dim c meets row c·H/N + h of your wo block instead of "
            "h·Dh + c. Merge as you split: o.reshape(B, S, H/N·Dh), no swap.",
            _wrong_stride(*inputs, heads, n, split=False),
        ))  # fmt: skip
    widths: dict[int, list[str]] = {}
    for width, what in ((d, "D, the model width"), (heads // n * dh, "H/N·Dh, your columns")):
        if width != dh:
            widths.setdefault(width, []).append(what)
    for width, whats in widths.items():
        out.append((
            f"The scores are scaled by 1/√{width} ({' or '.join(whats)}): scale by 1/√Dh, the "
            "width of one head, Dh = wq.shape[1] // n_heads from the global shapes.",
            attention(*inputs, heads, scale=1 / np.sqrt(width)),
        ))  # fmt: skip
    out.append((
        "The softmax runs over the queries (axis −2 of the [B, H, Sq, Sk] scores), not over "
        "the keys: each query's weights over the keys must sum to 1, softmax(scores, axis=-1).",
        attention(*inputs, heads, softmax_axis=-2),
    ))  # fmt: skip
    if n > 1 and dh % n == 0:  # Dh = wq.shape[1] // n_heads read inside shard_map: Dh/N
        out.append((
            f"Your heads are Dh/N = {dh // n} wide, not Dh = {dh}: inside shard_map wq.shape[1] "
            "is the local H/N·Dh, so wq.shape[1] // n_heads there gives Dh/N (and N·H heads in "
            "all). Take Dh = wq.shape[1] // n_heads from the global shapes, outside the body.",
            attention(*inputs, heads * n),
        ))  # fmt: skip
    return [(why, lambda coord, index, y=y: y[index]) for why, y in out]


_CONTRACTING = re.compile(
    r"dot_general requires contracting dimensions to have the same shape, got \((\d+),?\) "
    r"and \((\d+),?\)"
)


def _contracting(text: str, n: int) -> str | None:
    """A matmul whose contracting sizes differ by N: which operand was gathered along the
    dimension the matmul contracts (read from the error's two sizes)."""
    m = _CONTRACTING.search(text)
    if not m or n < 2:
        return None
    a, b = int(m.group(1)), int(m.group(2))
    if a == n * b:
        return (
            f"A matmul's left operand has {a} = N × {b} along the dimension it contracts: it was "
            "all-gathered along dimension 1 (the features, which no device splits), not along "
            "its rows. Gather the sequence: lax.all_gather(x_rows, 'model', axis=0, tiled=True)."
        )
    if b == n * a:
        return (
            f"A matmul's right operand has {b} = N × {a} along the dimension it contracts: a "
            "weight was all-gathered along its rows (dimension 0, the D it contracts over). "
            "The weights are not gathered in tensor parallelism; if you meant to gather x, "
            "gather it along its rows, axis=0."
        )
    return None


def _shape_hint(trial: Trial, result: CheckResult) -> str | None:
    out, want = getattr(trial.output, "shape", None), getattr(trial.expected, "shape", None)
    if out is None or want is None:
        return None
    return diagnose.split_along(out, want, trial.example.get("n", 1))


def _diagnose_error(exc: BaseException, ex: Example, passed: list[Example]) -> str | None:
    text = str(exc)
    said = _contracting(text, ex.get("n", 1))
    if said:
        return said
    if type(exc).__name__ == "ShardingTypeError":
        why = (
            "a plain matmul of a column-split hidden layer by a row-split weight leaves partial "
            "sums JAX will not add for you"
            if "Contracting" in text
            else "x's rows and w_in's columns are split over the same axis, so no device can "
            "form its block of x @ w_in without gathering one of them"
        )
        return (
            f"On this Explicit mesh {why}. Write the body under jax.shard_map and choose the "
            "collective yourself: the one the exercise names."
        )
    found = vma.read(exc)
    if found and found.kind == vma.OUT_SPECS and "model" in found.varying_axes:
        o = next(o for o in found.outputs if "model" in o.axes)
        wrong_axis = (
            " If you summed over 'data', that adds other rows' results into yours: the hidden "
            "layer is split over 'model', so psum over 'model' only."
            if "data" in found.mesh_axes
            else ""
        )
        return (
            f"{vma.where(o).capitalize()} (out_specs {o.spec}) varies over 'model', which its "
            "spec says it does not. In this lesson the error comes from one of two things, and "
            "its text cannot tell which: (1) the partial sums of the row-parallel matmul were "
            "never added: lax.psum(..., 'model'), once, at the end; (2) you all-gathered w_in "
            "and w_out (an all_gather's result varies unless to='invarying'), and all-gathering "
            "them is itself the mistake: in tensor parallelism the weights stay where they are "
            "and only the partial results are summed. Never psum a result computed from "
            "gathered weights: every device holds all of it already, and the sum is N times "
            "too large." + wrong_axis
        )
    if "out_specs" in text and ("replicat" in text or "vary" in text.lower()):
        return (
            "shard_map says your result varies over an axis out_specs promises it does not: "
            "the partial sums over the hidden layer were not added (psum over 'model'), or "
            "were added over the wrong axis."
        )
    return None


# ------------------------------------------------------------------ the lesson


BF16_BAND = (1e-4, 5e-2)
"""Errors, as a fraction of max|ref|, that bfloat16 rounding inside a float32
program makes here: 4,000–34,000 u·√K with K = 16 … 144 (benchmarks/tolerance_l08.py),
i.e. about 1e-3 to 2e-2; a wrong formula errs by O(1)."""


@dataclass(frozen=True)
class Values32(Values):
    """:class:`Values`, plus a hint when the error has the size of bfloat16 rounding."""

    def __call__(self, trial: Trial) -> CheckResult:
        result = super().__call__(trial)
        found = [e for e in result.evidence if isinstance(e, DeviceMap)]
        if result.passed or result.hint or not found:
            return result
        scale = float(np.max(np.abs(trial.expected))) or 1.0
        error = found[0].max_abs_err / scale
        if BF16_BAND[0] <= error <= BF16_BAND[1]:
            result = replace(result, hint=(
                f"The largest error is {error:.1e} of max|y|: the size of bfloat16 rounding "
                "(8 bits of mantissa), far above float32's. Is something cast to bfloat16 "
                "inside? This exercise computes in float32 throughout."
            ))  # fmt: skip
        return result


def _common(alternatives=None) -> list:
    return [
        Hinted(inner=Values32(atol=_atol, alternatives=alternatives), explain=_shape_hint),
        OutputSharding(expected=lambda t: t.extra["sharding"]),
        InputsUntouched(),
    ]


def _one_all_reduce(what: str) -> Carries:
    return Carries(
        kind=ALL_REDUCE,
        size=_activation,
        what=what,
        needed=lambda t: _model(t.example) > 1,
        advice=_all_reduce_advice,
        name="one all-reduce",
    )


def _tp_checks(name: str, alternatives=None, what: str = "|y|") -> tuple:
    return (
        *_common(alternatives),
        OnlyCollectives(
            frozenset({ALL_REDUCE}),
            why="Tensor parallelism needs one all-reduce of the output, nothing else.",
            advice=_advice_tp,
        ),
        _one_all_reduce(what),
        Bytes(
            expected=ring_all_reduce_bytes, what=f"one ring all-reduce of {what}, 2(N − 1)/N·{what}"
        ),
        WeightsStay(bound=_activation, what=what, weights=_weights),
    )


def _sp_checks() -> tuple:
    n = lambda t: t.example["n"]  # noqa: E731
    return (
        *_common(),
        OnlyCollectives(
            frozenset({ALL_GATHER, REDUCE_SCATTER}),
            why="Sequence parallelism needs one all-gather of x and one reduce-scatter of y.",
            advice=_advice_sp,
        ),
        Carries(
            kind=ALL_GATHER,
            size=_activation,
            what="the gathered x, |x|",
            needed=lambda t: n(t) > 1,
            name="one all-gather",
        ),  # fmt: skip
        Carries(
            kind=REDUCE_SCATTER,
            size=_activation,
            what="the partial y, |y| = |x|",
            needed=lambda t: n(t) > 1,
            name="one reduce-scatter",
        ),  # fmt: skip
        Bytes(expected=ring_all_reduce_bytes, what="2(N − 1)/N·|x|, the bytes of one all-reduce"),
        WeightsStay(bound=_activation, what="|x|", weights=_weights),
    )


def _dp_tp_checks() -> tuple:
    return (
        *_tp_checks("dp_tp_mlp", _dp_tp_alternatives, what="|y| of one 'data' group"),
        GroupsWithin(
            frozenset({"model"}),
            hint="The partial sums of y are spread over the devices of one 'model' group (one "
            "row of the mesh); psum over 'model' only. Summing over 'data' too adds different "
            "examples' outputs together.",
        ),
    )


def _explain(trials: list[Trial]) -> list[Evidence]:
    """The collectives of the largest mesh graded, drawn on it with their groups."""
    trial = max(trials, key=lambda t: t.mesh.size)
    return [replica_groups(trial, grouped(trial))]


def _purpose(name: str) -> Callable[[Example], str | None]:
    """What each fixed example is for (issue 45 §1), as :func:`_explicit_1d` and
    :func:`_dp_tp_explicit` say: one device or a 'data' axis alone (nothing may move),
    N = 4, then N = 3 (not a power of two); for dp_tp_mlp 2×3 and 3×2."""

    def _rows(k: int) -> str:
        return f"{k} row" if k == 1 else f"{k} rows"

    def purpose(ex: Example) -> str | None:
        if name == "dp_tp_mlp":
            (data, model), (b, d, f) = ex["mesh"], ex["shape"]
            on = f"mesh data×model = {data}×{model}, B×D×F = {b}×{d}×{f}"
            if model == 1:
                return f"{on}: whole weights and B/{data} = {_rows(b // data)} per device, nothing sent"
            return (
                f"{on}: B/{data} = {_rows(b // data)} per 'data' group, F/{model} = {f // model} "
                f"columns per device, one all-reduce of y within each 'model' group of {model}"
            )
        n = ex["n"]
        if n == 1:
            return "N = 1: every weight is whole on the one device, y computed with nothing sent"
        on = f"N = {n}" if n & (n - 1) == 0 else f"N = {n} (not a power of two)"
        if name == "tp_attention":
            heads, dh = ex["heads"], ex["dh"]
            return (
                f"{on}, H = {heads}, Dh = {dh}: each device holds H/N = {heads // n} whole heads "
                f"({dh} contiguous columns each), scores scaled by 1/√Dh, one all-reduce of y"
            )
        rows, d, f = ex["shape"]
        if name == "sp_mlp":
            return (
                f"{on}, S×D×F = {rows}×{d}×{f}, S/N = {_rows(rows // n)} each: x all-gathered, "
                "y reduce-scattered back to rows, no all-reduce, the weights stay put"
            )
        return (
            f"{on}, B×D×F = {rows}×{d}×{f}: F/N = {f // n} columns of w_in and rows of w_out "
            f"per device, one all-reduce of y [{rows}, {d}], the weights stay put"
        )

    return purpose


def _exercise(name: str, strategy, explicit, checks) -> ExerciseSpec:
    return ExerciseSpec(
        name=name,
        strategy=strategy,
        explicit=explicit,
        run=_run(name),
        checks=checks,
        max_examples=1,  # on top of 3 explicit ones: about 4 compiles an exercise
        diagnose_error=_diagnose_error,
        explain=_explain,
        purpose=_purpose(name),
    )


SPEC = LessonSpec(
    exercises=(
        _exercise(
            "tp_mlp",
            _tp_strategy,
            _explicit_1d(
                {1: {"shape": (2, 8, 8)}, 4: {"shape": (4, 8, 32)}, 3: {"shape": (2, 16, 24)}}
            ),  # fmt: skip
            _tp_checks("tp_mlp"),
        ),
        _exercise(
            "tp_attention",
            _attention_strategy,
            _explicit_1d(
                {
                    1: {"shape": (1, 3, 8), "heads": 2, "dh": 4},
                    4: {"shape": (2, 3, 8), "heads": 8, "dh": 4},
                    3: {"shape": (1, 5, 8), "heads": 6, "dh": 2},
                }
            ),  # fmt: skip
            _tp_checks("tp_attention", _attention_alternatives),
        ),
        _exercise(
            "sp_mlp",
            _sp_strategy,
            _explicit_1d(
                {1: {"shape": (2, 8, 8)}, 4: {"shape": (8, 8, 32)}, 3: {"shape": (3, 16, 24)}}
            ),  # fmt: skip
            _sp_checks(),
        ),
        _exercise("dp_tp_mlp", _dp_tp_strategy, _dp_tp_explicit, _dp_tp_checks()),
    ),
    compiler_options=FAST_COMPILE,
)
