"""Grading spec for lesson 12: the parallel transformer training step.

Mesh ``('data', 'model')``; the tiny causal transformer of
:mod:`tinymodels.transformer` (params ``wq, wk, wv [L, D, H·Dh]``,
``wo [L, H·Dh, D]``, ``w_in [L, D, F]``, ``w_out [L, F, D]``), float32.
Shardings (the grader's own, never the student's RULES): weights split on D
over 'data' (FSDP) and on heads / F over 'model' (Megatron); ``x, y: [B, S, D]``
``P('data', None, None)``.

What one reference ``train_step`` sends per device (ring model, float32,
|params|/m the params of one 'model' column, act = |[B/data, S, D]|):

==============  ================================  ==========
kind            bytes                             over
==============  ================================  ==========
all-gather      2·(data−1)/data·|params|/m        'data'
reduce-scatter  (data−1)/data·|params|/m          'data'
all-reduce      4·L·2(m−1)/m·act + the loss       'model'
==============  ================================  ==========

The all-gathers are the forward's and the backward's re-gather (remat); the
all-reduces are each sub-block's psum over 'model' and its transpose in the
backward, plus 2(data−1)/data·4 bytes of the scalar loss over 'data'.
Measured = this formula, byte for byte, at every mesh of the examples
(``tests/test_l12.py``), with each all-reduce's 2(m−1)/m rounded down per op as
the measurement counts it (``reference_bytes`` of
:mod:`grader.expected.l12_parallel_transformer`, the grader's side; the report's "reference"
column). A program passes with all-gather and reduce-scatter
within 10% of these and all-reduce at most 1.3× the Megatron optimum: a
correct program that casts h to 'model'-varying before each matmul instead
of once per sub-block (or recomputes attention's psum in the backward) sends
1.25–1.75× the optimum, the syllabus measured (here: 1.25× for a plain
checkpoint, which passes; 1.50× for a cast before each matmul, which does
not — ``python benchmarks/parallel_transformer.py``).

Temporaries per device stay below |params|/(2·m), checked from data = 4 (the
gradient shards alone are |params|/(data·m)). Values: tolerance
16·u·√K·max|ref| per array, K = B·S + L·(2D + F + H·Dh + S): the reference
reaches 0.08–0.16 of u·√K·max|ref|, a bfloat16 gather 1,428–3,377
(``python benchmarks/tolerance_l12.py``, five examples). When they are
wrong, :class:`Divergence` names the first layer and param, walking the
backward from the last layer, whose gradient differs.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from hypothesis import strategies as st

from grader.checks import InputsUntouched, OutputSharding, TempMemory, Values, vma
from grader.checks.groups import grouped, replica_groups, show_groups, spanned_axes
from grader.checks.program import precision_hint
from grader.checks.trees import PerLeaf
from grader.evidence import KindBytes, KindBytesRow, Table
from grader.later import expected, later, resolved
from grader.lessons.l12_parallel_transformer import transformer as model
from grader.measure import jaxpr
from grader.reference import training
from grader.results import CheckResult
from grader.runtime import SAID_UNCHECKED, Runtime, StudentReturnError
from grader.spec import FAST_COMPILE, Check, Context, Example, ExerciseSpec, LessonSpec, Trial

DATA, MODEL = "data", "model"
ALL_GATHER, REDUCE_SCATTER, ALL_REDUCE = "all-gather", "reduce-scatter", "all-reduce"
KINDS = (ALL_GATHER, REDUCE_SCATTER, ALL_REDUCE)
ITEMSIZE = 4
LR = 0.5
NAMES = model.NAMES

F = expected("l12_parallel_transformer")
"""The grader's side (``reference_bytes``: what the reference step sends per kind,
``predict_step_bytes``'s answer; the predictions' known slips), hidden from the
student's process, which imports this module: imported when first used, in the worker."""
BACKWARD = tuple(reversed(NAMES))
"""The order the backward pass produces a block's gradients."""
MEMORY_FROM = 4
"""Temporaries are checked from data = 4: below it the gradient shards alone
(|params|/(data·m)) come near the |params|/(2m) bound."""
TINY = 64
"""Bytes under which a collective kind is ignored (the scalar loss)."""
SLACK = 0.10
"""All-gather and reduce-scatter within 10% of the reference's."""
ALL_REDUCE_CAP = 1.3
"""All-reduce at most 1.3× the Megatron optimum."""

LAYOUT = {
    "wq": (None, DATA, MODEL), "wk": (None, DATA, MODEL), "wv": (None, DATA, MODEL),
    "wo": (None, MODEL, DATA), "w_in": (None, DATA, MODEL), "w_out": (None, MODEL, DATA),
    "x": (DATA, None, None),
}  # fmt: skip
"""Each array's PartitionSpec, as the lesson's RULES give them."""
LOGICAL = {
    "wq": ("layers", "embed", "heads"), "wk": ("layers", "embed", "heads"),
    "wv": ("layers", "embed", "heads"), "wo": ("layers", "heads", "embed"),
    "w_in": ("layers", "embed", "mlp"), "w_out": ("layers", "mlp", "embed"),
}  # fmt: skip
"""Each param's logical axes, as the stub gives them (for naming a wrong rule)."""
ARRAY_AXES = ("batch", "seq", "act_embed")
"""The logical axes of x and y, [B, S, D], as the stub gives them."""


# ------------------------------------------------------------------ examples


def example_strategy(ctx: Context):
    meshes = [m for m in ((2, 2), (2, 4), (4, 2), (1, 2), (2, 1)) if m[0] * m[1] <= ctx.n_devices]
    return st.sampled_from(meshes or [(1, 1)]).flatmap(
        lambda m: st.fixed_dictionaries(
            {
                "mesh": st.just(m),
                "layers": st.sampled_from([8, 12]),
                "rows": st.sampled_from([1, 2, 3]),  # B / data, never L
                "seq": st.sampled_from([4, 8]),
                "dblock": st.sampled_from([8, 16]),  # D / data
                "heads": st.just(3 * m[1]),  # H ≠ model
                "dh": st.sampled_from([4, 8]),
                "fcols": st.sampled_from([16, 32]),  # F / model
                "seed": st.integers(0, 2**16),
            }
        )
    )


def explicit_examples(ctx: Context) -> list[Example]:
    """4×2, where memory is checked, and 2×3 (model not a power of two).

    Two explicit examples and one drawn, as issue 10 allows: each program
    compiles in 1–2 s."""
    shapes = [((4, 2), 1, 8, 6), ((2, 3), 2, 16, 6)]
    fitting = [s for s in shapes if s[0][0] * s[0][1] <= ctx.n_devices] or [((1, 1), 2, 8, 2)]
    return [
        {"mesh": m, "layers": 8, "rows": rows, "seq": 4, "dblock": dblock, "heads": heads,
         "dh": 4, "fcols": 32, "seed": i}
        for i, (m, rows, dblock, heads) in enumerate(fitting)
    ]  # fmt: skip


SHARD_PURPOSE = {
    (4, 2): "a 4 × 2 mesh (data = 4, model = 2), D = 32, H = 6 heads, F = 64: each weight split "
    "on D over 'data' and on heads or F over 'model', 1/8 of it per device",
    (2, 3): "a 2 × 3 mesh, model = 3 not a power of two: each 'model' device holds 2 of the "
    "H = 6 heads and 32 of F = 96, each 'data' device half of D = 32",
    (1, 1): "a 1 × 1 mesh (too few devices for 4 × 2 or 2 × 3): one device holds every "
    "weight whole",
}
"""What each mesh of :func:`explicit_examples` holds, for shard_params (issue 45 §1)."""
STEP_PURPOSE = {
    (4, 2): "a 4 × 2 mesh, B = 4 rows: weights gathered over data = 4 (FSDP), each sub-block "
    "all-reduced over model = 2; temporaries stay below |params|/(2·model)",
    (2, 3): "a 2 × 3 mesh, model = 3 not a power of two: 2 of the H = 6 heads and 32 of "
    "F = 96 per 'model' device, B = 4 rows split over data = 2",
    (1, 1): "a 1 × 1 mesh (too few devices for 4 × 2 or 2 × 3): one device, nothing to send, "
    "one plain SGD step",
}
"""What each mesh of :func:`explicit_examples` holds, for train_step (issue 45 §1)."""


@dataclass(frozen=True)
class Sizes:
    data: int
    model: int
    n_layers: int
    batch: int
    seq: int
    d: int
    heads: int
    dh: int
    f: int

    @property
    def hdh(self) -> int:
        return self.heads * self.dh

    def shapes(self) -> dict[str, tuple[int, ...]]:
        return {**model.shapes(self.n_layers, self.d, self.hdh, self.f),
                "x": (self.batch, self.seq, self.d)}  # fmt: skip

    @property
    def params_bytes(self) -> int:
        per_layer = 4 * self.d * self.hdh + 2 * self.d * self.f
        return self.n_layers * per_layer * ITEMSIZE

    @property
    def reduction(self) -> int:
        """K of the tolerance: the rows, plus every reduction of a block, L deep."""
        return self.batch * self.seq + self.n_layers * (2 * self.d + self.f + self.hdh + self.seq)


def sizes(ex: Example) -> Sizes:
    data, m = ex["mesh"]
    return Sizes(data, m, ex["layers"], data * ex["rows"], ex["seq"], data * ex["dblock"],
                 ex["heads"], ex["dh"], m * ex["fcols"])  # fmt: skip


# ------------------------------------------------------------------ running


def _sharding(mesh: Any, name: str) -> Any:
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P

    return NamedSharding(mesh, P(*LAYOUT[name]))


def draw(ex: Example, rng: np.random.Generator) -> tuple[Sizes, dict, np.ndarray, np.ndarray]:
    s = sizes(ex)
    params = model.draw_params(rng, s.n_layers, s.d, s.hdh, s.f)
    x, y = model.draw_batch(rng, s.batch, s.seq, s.d)
    return s, params, x, y


def _run_shard(rt: Runtime, fn: Callable[..., Any], ex: Example) -> Trial:
    mesh = rt.mesh(ex["mesh"], (DATA, MODEL))
    _, params, _, _ = draw(ex, rt.rng())
    out = fn({k: v.copy() for k, v in params.items()}, mesh)
    _check_dict(out, "shard_params", "the placed params")
    return Trial(example=ex, output=out, expected=params, mesh=mesh,
                 extra={"dtype": "float32", "shardings": {k: _sharding(mesh, k) for k in NAMES}})  # fmt: skip


def run_train(rt: Runtime, fn: Callable[..., Any], ex: Example) -> Trial:
    import jax
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P

    mesh = rt.mesh(ex["mesh"], (DATA, MODEL))
    s, params, x, y = draw(ex, rt.rng())
    placed = {k: jax.device_put(params[k], _sharding(mesh, k)) for k in NAMES}
    batch = _sharding(mesh, "x")
    args = (placed, jax.device_put(x, batch), jax.device_put(y, batch))
    heads = s.heads
    jitted = jax.jit(lambda p, xb, yb: fn(p, xb, yb, mesh, LR, heads))
    trial = rt.compile_and_run(jitted, args, mesh, compiler_options=FAST_COMPILE,
                            before=params, dtype="float32",
                            shardings={k: _sharding(mesh, k) for k in NAMES},
                            replicated=NamedSharding(mesh, P()))  # fmt: skip
    out = trial.output
    if not (isinstance(out, (tuple, list)) and len(out) == 2):
        raise StudentReturnError(
            f"train_step returned {type(out).__name__}; expected a pair (new params, loss)",
            hint="Return both: `return new_params, loss`.",
        )
    _check_dict(out[0], "train_step", "the new params")
    # the float64 references, computed where a check reads them: in the worker only
    trial.expected = later(_expected, params, x, y, heads)
    trial.extra["grads"] = later(lambda: model.grads(params, x, y, heads)[1])
    trial.extra["batch"] = (x, y)
    # the student's predict_step_bytes from the same module, for the report's "predicted"
    # column only (its own exercise grades it)
    trial.extra["predict"] = rt.function("predict_step_bytes")
    return trial


def _expected(params: dict, x: np.ndarray, y: np.ndarray, heads: int) -> tuple[dict, np.float64]:
    """The float64 step: (new params, loss before it)."""
    new, value = model.sgd_step(params, x, y, LR, heads)
    return new, np.float64(value)


def _check_dict(out: Any, fname: str, what: str) -> None:
    if not (isinstance(out, dict) and set(out) == set(NAMES)):
        keys = sorted(map(str, out)) if isinstance(out, dict) else type(out).__name__
        raise StudentReturnError(
            f"{fname} returned {keys} for {what}; expected a dict with keys {', '.join(NAMES)}",
            hint="Keep the params dict's structure: jax.tree.map over it, or a dict comprehension.",
        )


def _leaf_extra(trial: Trial, path: str) -> dict[str, Any]:
    name = next((k for k in NAMES if f"'{k}'" in path), None)
    if name is None:  # the loss
        return {"sharding": trial.extra["replicated"], "param": None}
    return {"sharding": trial.extra["shardings"][name], "param": name}


# ------------------------------------------------------------------ values


def _atol(trial: Trial) -> float:
    return training.SAFETY * training.U32 * float(np.sqrt(sizes(trial.example).reduction))


def _local_mean(trial: Trial) -> list[tuple[str, Callable[[tuple, tuple], Any]]]:
    """The loss averaged over each device's own rows: gradients data× too large."""
    data, name = trial.example["mesh"][0], trial.extra["param"]
    if data == 1 or name is None:
        return []
    before = np.asarray(trial.extra["before"][name], np.float64)
    wrong = before - data * (before - np.asarray(trial.expected))
    same = [f"{k} = {v}" for k, v in trial.example.items()
            if k not in ("mesh", "seed") and type(v) is int and v == data]  # fmt: skip
    if same:  # the factor is not evidence of the local mean alone: said as measured
        return [
            (
                f"Every gradient is data = {data} times too large (or {', or '.join(same)} "
                "times: equal on this example). The loss is ½·Σ err² over all "
                "B·S rows, divided once by the global B·S: averaging over each device's own "
                f"B/data·S rows gives data times, and so does any divisor {data} times too "
                "small. Divide the summed squared errors by the global B·S (read x.shape "
                "outside shard_map).",
                lambda coord, index: wrong[index],
            )
        ]
    return [
        (
            f"Every gradient is data = {data} times too large: each device averaged its squared "
            "errors over its own B/data·S rows, and the reduce-scatter over 'data' then adds "
            f"{data} local means. Divide the summed squared errors by the global B·S (read "
            "x.shape outside shard_map).",
            lambda coord, index: wrong[index],
        )
    ]


@dataclass(frozen=True)
class Divergence(Check):
    """Values of the new params and loss; when wrong, the first layer and param
    (walking the backward from the last layer) whose gradient differs."""

    name: str = "values"

    def __call__(self, trial: Trial) -> CheckResult:
        inner = PerLeaf(inner=Values(atol=_atol, alternatives=_local_mean), leaf_extra=_leaf_extra)
        result = inner(trial)
        if result.passed or not isinstance(trial.output[0], dict):
            return result
        table, first = self._bisect(trial)
        loss_ok = self._loss_ok(trial)
        if first is not None:
            layer, name = first
            every = all("✗" in cell for row in table.rows for cell in row[1:])
            where = (
                "every layer's gradients differ"
                if every
                else f"gradients first differ at layer {layer}, {name} (walking back from the "
                "last layer)"
            )
            result = replace(result, message=(
                f"{where}; the loss {'agrees' if loss_ok else 'differs too'}. {result.message}"
            ))  # fmt: skip
        narrow = precision_hint(
            trial,
            "Gathering in bfloat16 halves the bytes but changes every gradient: keep every "
            "array float32.",
            detail=" (a cast inside it)",
        )
        if (result.hint or "").startswith("Every gradient"):
            pass  # a known wrong result was recognised
        elif stride := self._heads_stride(trial):
            result = replace(result, hint=stride)
        elif narrow:
            result = replace(result, hint=narrow)
        elif not loss_ok and self._twice(trial):
            result = replace(result, hint=(
                "Your loss is exactly 2 × the reference and every gradient 2 × too: the loss "
                "has lost its ½. It is ½ · Σ (h − y)² / (B·S): the ½ makes the gradient of ½·err² "
                "exactly err."
            ))  # fmt: skip
        elif not loss_ok and first is None:  # every update right: the forward is too
            result = replace(result, hint=self._loss_only_hint(trial))
        elif not loss_ok:
            result = replace(
                result,
                hint=self._forward_hint(trial) + (UNCHECKED_TOO if _unchecked(trial) else ""),
            )
        elif _unchecked(trial):
            result = replace(result, hint=UNCHECKED_GRADS)
        if first is not None:
            result = replace(result, evidence=[table, *result.evidence])
        return result

    @staticmethod
    def _loss_only_hint(trial: Trial) -> str:
        """Every parameter's update is right and only the returned loss differs: the forward
        and the backward are right, so how the loss is combined or reported is where it
        parts; its ratio to the reference's, named where it is a mesh axis's size."""
        s = sizes(trial.example)
        got, want = float(np.asarray(trial.output[1], np.float64)), float(trial.expected[1])
        lead = ("Every parameter's update is right and only the loss you return differs, so "
                "the forward and the backward are right")  # fmt: skip
        if "batch" in trial.extra:  # the loss of the params the step returns
            x, y = trial.extra["batch"]
            new = {k: np.asarray(v, np.float64) for k, v in trial.output[0].items()}
            after = model.loss(new, x, y, s.heads)
            if abs(got - after) <= _atol(trial) * abs(after) + 1e-30 and abs(after - want) > (
                _atol(trial) * abs(want)
            ):
                return (f"{lead}: the loss you return is the loss of the updated params "
                        f"({after:.6g}), taken after the step. Return the loss of the params "
                        "the step started from, the value jax.value_and_grad gives with the "
                        "gradients.")  # fmt: skip
        said = (f"{lead}: what parts is how the returned loss is combined over the devices, "
                "or where it is taken")  # fmt: skip
        if want == 0.0:
            return f"{said}."
        ratio = got / want
        for label, size in (("data", s.data), ("model", s.model)):
            for factor, words in (
                (size, f"{size} = '{label}'"),
                (1 / size, f"1/{size} = 1/'{label}'"),
            ):
                if size > 1 and abs(ratio - factor) <= 1e-6 * abs(factor):
                    return (f"{said}: measured, yours is {words} × the reference's. Each "
                            "device's share is ½ · its squared errors / (all B·S rows), and "
                            "the shares add up over 'data' (lax.psum).")  # fmt: skip
        return f"{said}: measured, yours is {ratio:.4g} × the reference's."

    @staticmethod
    def _forward_hint(trial: Trial) -> str:
        """The loss before the step differs: the cause a measurement shows, else what was
        measured. The mask left out (the loss equals the unmasked model's); an all-reduce
        short of the reference's step: with check_vma off, a forward psum never taken (the
        backward adds none of its own); with it on, a backward one (a forward psum left out
        is a type error there): a cast of h to varying not made where h enters a matmul;
        else the bytes agree
        and each device's own computation is where it parts."""
        s = sizes(trial.example)
        lead = "The loss before the step already differs, so the forward pass is wrong"
        if "batch" in trial.extra:
            x, y = trial.extra["batch"]
            unmasked = model.loss(trial.extra["before"], x, y, s.heads, causal=False)
            got = np.asarray(trial.output[1], np.float64)
            if got.shape == () and abs(float(got) - unmasked) <= _atol(trial) * abs(unmasked):
                return (
                    f"{lead}: measured, your loss equals the model's without the causal mask "
                    f"({unmasked:.6g}), where every position also attends to later ones. Mask "
                    "the scores where the key comes after the query (attention(..., "
                    "causal=True))."
                )
        ref = F.reference_bytes(s.shapes(), s.data, s.model, ITEMSIZE)
        got_bytes = _measured(trial)
        mine, theirs = got_bytes.get(ALL_REDUCE), ref.get(ALL_REDUCE, 0)
        if mine is not None and mine < theirs * (1 - SLACK):
            fewer = (f"{lead}. Your step all-reduces {mine:,} B per device where the "
                     f"reference's sends {theirs:,} B ({theirs - mine:,} B fewer)")  # fmt: skip
            if _unchecked(trial):  # no implicit psums in the backward: the forward's are short
                return (
                    f"{fewer}: with check_vma=False autodiff adds no all-reduce for a cast "
                    "to varying, so what is missing is a psum your forward never took: a "
                    "row-parallel matmul (o @ wo, or tanh(h @ w_in) @ w_out) leaves a partial "
                    "sum over 'model' that is never all-reduced: psum it over 'model' before "
                    "adding it to h."
                )
            return (
                f"{fewer}. Under check_vma a row-parallel matmul's psum cannot be left out (h "
                "would vary over 'model': a type error), so what is missing is in the "
                "backward: the all-reduce over 'model' that the transpose of each cast of h "
                "to varying adds where h enters a 'model'-split matmul (the q, k, v "
                "projections, h @ w_in). Each such matmul of yours must read the h of its own "
                "sub-block, cast there; one of them reads a value cast elsewhere."
            )
        moved = ", ".join(f"{k} {got_bytes.get(k) or 0:,} B" for k in KINDS)
        if all(got_bytes.get(k) == ref.get(k, 0) for k in KINDS):
            return (
                f"{lead}. Your step moves what the reference's moves per device ({moved}), so "
                "the communication is not where the two part: what each device computes on "
                "its own differs (attention, the MLP or the loss)."
            )
        theirs_all = ", ".join(f"{k} {ref.get(k, 0):,} B" for k in KINDS)
        return f"{lead}. Per device your step moves {moved}; the reference's {theirs_all}."

    @staticmethod
    def _twice(trial: Trial) -> bool:
        """The loss and every update exactly twice the reference's (a loss without its ½)."""
        frac, before = _atol(trial), trial.extra["before"]
        got = np.asarray(trial.output[1], np.float64)
        want = 2 * float(trial.expected[1])
        if got.shape != () or abs(float(got) - want) > frac * abs(want) + 1e-30:
            return False
        for name in NAMES:
            b = np.asarray(before[name], np.float64)
            doubled = b - 2 * (b - np.asarray(trial.expected[0][name], np.float64))
            new = np.asarray(trial.output[0][name], np.float64)
            scale = float(np.max(np.abs(doubled))) or 1.0
            if new.shape != doubled.shape or np.max(np.abs(new - doubled)) > 4 * frac * scale:
                return False
        return True

    @staticmethod
    def _heads_stride(trial: Trial) -> str | None:
        """The hint when the step and loss are exactly those of a model whose heads are
        read at the head-fastest stride: each device's H/model·Dh columns as [Dh, H/model]
        swapped, when splitting q, k, v, when merging before wo, or both."""
        s = sizes(trial.example)
        per = s.heads // s.model
        if per < 2 or s.dh < 2 or "batch" not in trial.extra:
            return None  # every stride reads the same columns
        local = np.arange(per * s.dh).reshape(s.dh, per).T.reshape(-1)
        perm = np.concatenate([i * per * s.dh + local for i in range(s.model)])
        inverse = np.argsort(perm)
        before = trial.extra["before"]
        x, y = trial.extra["batch"]
        frac = _atol(trial)
        got = np.asarray(trial.output[1], np.float64)
        for names, hint in STRIDES:
            axis = {k: 2 if k in QKV else 1 for k in names}  # the H·Dh axis
            permuted = {
                k: np.take(v, perm, axis=axis[k]) if k in names else v for k, v in before.items()
            }
            new, value = model.sgd_step(permuted, x, y, LR, s.heads)
            if got.shape != () or abs(float(got) - value) > frac * abs(value) + 1e-30:
                continue
            wrong = {
                k: np.take(v, inverse, axis=axis[k]) if k in names else v for k, v in new.items()
            }
            if all(
                np.shape(trial.output[0][k]) == wrong[k].shape
                and np.max(np.abs(np.asarray(trial.output[0][k], np.float64) - wrong[k]))
                <= 4 * frac * (float(np.max(np.abs(wrong[k]))) or 1.0)
                for k in NAMES
            ):
                return hint
        return None

    @staticmethod
    def _loss_ok(trial: Trial) -> bool:
        got = np.asarray(trial.output[1], np.float64)
        want = float(trial.expected[1])
        return got.shape == () and abs(float(got) - want) <= _atol(trial) * abs(want) + 1e-30

    @staticmethod
    def _bisect(trial: Trial) -> tuple[Table, tuple[int, str] | None]:
        """Per layer and param: the gradient's error (implied by the step) over its allowance."""
        new, before, g_ref = trial.output[0], trial.extra["before"], resolved(trial.extra["grads"])
        frac = _atol(trial)
        ratios = {}
        for name in NAMES:
            got = np.asarray(new[name], np.float64)
            if got.shape != before[name].shape:
                continue
            implied = (np.asarray(before[name], np.float64) - got) / LR
            allow = frac * float(np.abs(np.asarray(trial.expected[0][name])).max()) / LR
            err = np.abs(np.nan_to_num(implied - g_ref[name], nan=np.inf)).reshape(len(got), -1)
            ratios[name] = err.max(axis=1) / allow
        layers = len(before["wq"])
        first = next(
            ((i, n) for i in reversed(range(layers)) for n in BACKWARD
             if n in ratios and ratios[n][i] > 1.0),
            None,
        )  # fmt: skip
        rows = [[str(i), *(_ratio(ratios[n][i]) if n in ratios else "?" for n in NAMES)]
                for i in range(layers)]  # fmt: skip
        table = Table(["layer", *NAMES], rows)
        return table, first


QKV = ("wq", "wk", "wv")
HEAD_MAJOR = (
    "Head h is the contiguous columns h·Dh … (h+1)·Dh: reshape to [B, S, H/model, Dh] and "
    "back to H/model·Dh columns directly, no swap."
)
STRIDES = (
    (
        QKV,
        "Your loss and every update are exactly those of heads split at one stride and "
        "merged at another: each device's H/model·Dh columns of q, k and v were reshaped to "
        "[B, S, Dh, H/model] and swapped to [B, S, H/model, Dh], so your head h is every "
        "H/model-th column (c·H/model + h), while the output is merged head-major before wo. "
        + HEAD_MAJOR,
    ),
    (
        ("wo",),
        "Your loss and every update are exactly those of heads split head-major but "
        "merged at another stride: the heads' outputs [B, S, H/model, Dh] were swapped to "
        "[B, S, Dh, H/model] before the reshape, so head h's dim c meets row c·H/model + h of "
        "your wo block instead of h·Dh + c. " + HEAD_MAJOR,
    ),
    (
        (*QKV, "wo"),
        "Your loss and every update are exactly those of heads split (and merged) "
        "at the wrong stride: your head h is every H/model-th column (c·H/model + h) of your "
        "q, k, v and wo blocks, so each head mixes the columns of all of them. " + HEAD_MAJOR,
    ),
)
"""(the params whose H·Dh axis is read at the head-fastest stride, the hint)."""


def _ratio(r: float) -> str:
    return "ok" if r <= 1.0 else (f"{r:,.0f}× ✗" if np.isfinite(r) else "nan ✗")


def _rules_hint(trial: Trial) -> str | None:
    """Which logical axes went to the wrong mesh axis, read from every param's sharding."""
    wrong: dict[str, set[str]] = {}
    example = None
    for name in NAMES:
        spec = getattr(getattr(trial.output[name] if isinstance(trial.output, dict) else None,
                               "sharding", None), "spec", None)  # fmt: skip
        if spec is None:
            continue
        got = tuple(spec) + (None,) * (3 - len(spec))
        for axis, have, want in zip(LOGICAL[name], got, LAYOUT[name]):
            if have != want:
                wrong.setdefault(axis, set()).add(repr(have))
                example = example or (name, got)
    if not wrong or example is None:
        return None
    said = ", ".join(f"{axis} on {' and '.join(sorted(v))}" for axis, v in sorted(wrong.items()))
    name, got = example
    return (
        f"Your rules put {said}: {name} comes out P{got}, expected P{LAYOUT[name]}. The RULES "
        "are: batch and embed → 'data' (FSDP splits every weight on D), heads and mlp → "
        "'model' (Megatron), layers, seq and act_embed → None."
    )


def _param_shardings() -> PerLeaf:
    """Every param (and the loss) sharded as promised; a wrong rule named."""
    return PerLeaf(inner=OutputSharding(expected=lambda t: t.extra["sharding"]),
                   leaf_extra=_leaf_extra,
                   explain_failure=lambda t: _rules_hint(_params_trial(t)))  # fmt: skip


def _params_trial(trial: Trial) -> Trial:
    """The trial with its params as output (train_step returns them paired with the loss)."""
    from dataclasses import replace

    out = trial.output
    return replace(trial, output=out[0]) if isinstance(out, (tuple, list)) else trial


# ------------------------------------------------------------------ shard_params


@dataclass(frozen=True)
class HeldBytes(Check):
    """Each device holds |params|/(data·model) bytes of params, no more."""

    name: str = "argument memory"

    def __call__(self, trial: Trial) -> CheckResult:
        s = sizes(trial.example)
        want = s.params_bytes // (s.data * s.model)
        held: dict[Any, int] = {}
        for arr in trial.output.values():
            for shard in getattr(arr, "addressable_shards", []):
                held[shard.device] = held.get(shard.device, 0) + shard.data.nbytes
        got = max(held.values(), default=0)
        rows = [["params bytes per device", f"{want:,}", f"{got:,}"]]
        evidence = [Table(["", "|params|/(data·model)", "yours (largest)"], rows)]
        if got <= want:
            return CheckResult(self.name, True, f"{got:,} bytes of params per device",
                               evidence=evidence)  # fmt: skip
        return CheckResult(
            self.name, False,
            f"a device holds {got:,} bytes of params; |params|/(data·model) = {want:,}",
            evidence=evidence,
            hint="Some param is replicated over an axis: every weight is split twice, its "
            "embedding dim over 'data' and its heads or F dim over 'model'.",
        )  # fmt: skip


# ------------------------------------------------------------------ communication


@dataclass(frozen=True)
class AxisCollectives(Check):
    """Weights all-gathered over 'data', gradients reduce-scattered over 'data',
    activations all-reduced over 'model'; nothing else moves more than a scalar."""

    name: str = "collectives per axis"

    def __call__(self, trial: Trial) -> CheckResult:
        try:
            collectives = grouped(trial)
        except ValueError as exc:
            return CheckResult(self.name, False, str(exc))
        evidence = [replica_groups(trial, collectives)]
        shape, names = tuple(trial.mesh.devices.shape), tuple(trial.mesh.axis_names)
        allowed = {ALL_GATHER: {DATA}, REDUCE_SCATTER: {DATA}, ALL_REDUCE: {MODEL}}
        for c, groups in collectives:
            axes = spanned_axes(groups, shape, names)
            total = c.total() or 0
            if c.kind in allowed and axes <= allowed[c.kind]:
                continue
            if c.kind == ALL_REDUCE and total < TINY:
                continue  # the scalar loss
            over = " and ".join(f"'{a}'" for a in sorted(axes))
            return CheckResult(
                self.name, False,
                f"{c.kind} of {c.shape} over {over} (groups {show_groups(groups)})",
                evidence=evidence, hint=_axis_hint(c.kind, axes),
            )  # fmt: skip
        kinds = {c.kind for c, _ in collectives}
        data, m = trial.example["mesh"]
        missing = [k for k, need in ((ALL_GATHER, data > 1), (REDUCE_SCATTER, data > 1),
                                     (ALL_REDUCE, m > 1)) if need and k not in kinds]  # fmt: skip
        if missing:
            return CheckResult(
                self.name, False, f"no {', no '.join(missing)}", evidence=evidence,
                hint=_axis_hint(missing[0], set()),
            )  # fmt: skip
        return CheckResult(
            self.name, True,
            "weights gathered and gradients scattered over 'data', activations reduced over 'model'",
            evidence=evidence,
        )  # fmt: skip


def _axis_hint(kind: str, axes: set[str]) -> str:
    if kind == ALL_REDUCE and DATA in axes:
        return (
            "The gradients are all-reduced over 'data': every device then holds the whole "
            "gradient of its 'model' column and keeps a slice of it — twice the reduce-scatter's "
            "bytes, and a full-size gradient in memory. Gather the weights inside the function "
            "you differentiate: jax.grad turns the all-gather into a reduce-scatter."
        )
    if kind == ALL_GATHER and MODEL in axes:
        return (
            "Weights are gathered over 'model' too: every device then holds whole heads and "
            "the whole MLP, which tensor parallelism exists to avoid. Gather over 'data' only "
            "(the FSDP split of D) and keep each device's heads and F columns."
        )
    if kind == ALL_REDUCE:
        return (
            "No all-reduce over 'model': the row-parallel matmuls (o @ wo, and the MLP's "
            "@ w_out) leave partial sums over 'model' that must be added: psum over 'model'."
        )
    return (
        "FSDP over 'data': gather each layer's weight shards over 'data' inside the "
        "checkpointed block; their gradients then come back reduce-scattered over 'data'."
    )


def _measured(trial: Trial) -> dict[str, int | None]:
    return {k: trial.comms.bytes(k) for k in KINDS}


@dataclass(frozen=True)
class StepBytes(Check):
    """All-gather and reduce-scatter within 10% of the reference's, all-reduce ≤ 1.3× Megatron."""

    name: str = "bytes"

    def __call__(self, trial: Trial) -> CheckResult:
        s = sizes(trial.example)
        ref = F.reference_bytes(s.shapes(), s.data, s.model, ITEMSIZE)
        got = _measured(trial)
        evidence = [kind_bytes(trial)]
        if any(v is None for v in got.values()):
            return CheckResult(self.name, False, "bytes unknown: a loop of unknown trip count",
                               evidence=evidence, hint="Loop over the layers with lax.scan.")  # fmt: skip
        cap = ALL_REDUCE_CAP * F.megatron(s.shapes(), s.data, s.model, ITEMSIZE) + TINY
        for kind in (ALL_GATHER, REDUCE_SCATTER):
            want, have = ref.get(kind, 0), got[kind] or 0
            if abs(have - want) > SLACK * want:
                return CheckResult(
                    self.name, False,
                    f"{have:,} bytes of {kind} per device; the reference sends {want:,} (±10%)",
                    evidence=evidence,
                    hint=(kind == ALL_GATHER and have > want and _batch_gathered(trial))
                    or _bytes_hint(kind, have, want),
                )  # fmt: skip
        if (got[ALL_REDUCE] or 0) > cap:
            return CheckResult(
                self.name, False,
                f"{got[ALL_REDUCE]:,} bytes of all-reduce per device; at most 1.3× the Megatron "
                f"optimum 4·L·2(m−1)/m·|[B/data, S, D]| = {int(cap - TINY):,}",
                evidence=evidence, hint=_all_reduce_hint(trial),
            )  # fmt: skip
        return CheckResult(self.name, True, "bytes per kind as the reference's", evidence=evidence)


def _all_reduce_hint(trial: Trial) -> str:
    """What the extra all-reduce bytes carry, from the shapes: activations are [B/data, S, D]
    (or that many elements in another shape, D last); an all-reduce of anything else that is
    not a scalar carries weights or their gradients. Only then, for activation-shaped ones,
    the remat and pcast advice, with its precondition said."""
    s = sizes(trial.example)
    act = (s.batch // s.data) * s.seq * s.d
    moving = [c for c in trial.comms.collectives
              if c.kind == ALL_REDUCE and c.count and c.moves_data and c.operand_elements > 1]  # fmt: skip
    if s.data > 1 and any(_activations(c.shape, act * s.data, s.d) for c in moving):
        return (
            "The all-reduces over 'model' carry activations of the whole batch, [B, S, D], "
            "not of one 'data' row's B/data sequences: the batch was gathered over 'data'. "
            "It never moves: each 'data' row runs its own rows, and only the weights are "
            "gathered over 'data'."
        )
    other = [c for c in moving if not _activations(c.shape, act, s.d)]
    if other:
        shown = re.sub(r"\{[^}]*\}", "", other[0].shape)[:80]
        return (
            f"Some all-reduces carry arrays shaped like weights or their gradients "
            f"({shown}), not activations [B/data, S, D]: gradients "
            "reduced over 'model' (or weights summed)? Each 'model' device's gradient is "
            "already that of its own heads and F columns, and 'data' reduce-scatters them; "
            "over 'model' only the activations are all-reduced."
        )
    return (
        "The all-reduces carry activations, more than two per block each way. The backward "
        "redoes psums when h is cast to 'model'-varying more than once per sub-block (each "
        "pcast's transpose is a psum of dh) or when the remat does not save the mid-block h "
        "(attention's psum then runs again): cast h once per sub-block and save the "
        "mid-block h."
    )


def _activations(shape: str, act: int, d: int) -> bool:
    """Every array of the (maybe tuple) shape is one activation: ``act`` elements, D last."""
    arrays = [[int(x) for x in g.split(",") if x] for g in re.findall(r"\[([\d,]*)\]", shape)]
    return bool(arrays) and all(a and a[-1] == d and math.prod(a) == act for a in arrays)


def _batch_gathered(trial: Trial) -> str | None:
    """An all-gather whose result has the batch's shape over 'data' ([B, S, D], or
    [B·S, D]): the extra bytes carry the input rows, not weights. No weight has D last and
    B·S·D elements in the drawn shapes (B·S ≤ 16·… is below the L·… of every stacked
    weight, and a layer's weights have H·Dh or F, never S, beside D)."""
    s = sizes(trial.example)
    hits = [c for c in trial.comms.collectives
            if c.kind == ALL_GATHER and c.count and c.moves_data
            and _activations(c.shape, s.batch * s.seq * s.d, s.d)]  # fmt: skip
    if not hits:
        return None
    return (
        f"An all-gather returns the whole batch ({re.sub(r'{[^}]*}', '', hits[0].shape)}): "
        "it carries the input rows over 'data', not weights. The batch never moves: each "
        "'data' row of the mesh runs its own B/data sequences; only the weights are gathered "
        "over 'data'."
    )


def _bytes_hint(kind: str, have: int, want: int) -> str:
    if kind == ALL_GATHER and have < want:
        return ("Fewer gathers than forward + backward: without remat (or with a remat "
                "policy that saves them) the gathered layers are kept for the backward; see "
                "the memory check.")  # fmt: skip
    if kind == ALL_GATHER:
        return "Each layer's weights are gathered more than twice (forward, backward's re-gather)."
    return ("Each weight's gradient is reduce-scattered once over 'data'; more or fewer "
            "bytes mean some gradient is summed another way.")  # fmt: skip


def kind_bytes(trial: Trial) -> KindBytes:
    """Report evidence: per kind, the student's prediction, what was measured, the reference."""
    s = sizes(trial.example)
    shapes = s.shapes()
    ref = F.reference_bytes(shapes, s.data, s.model, ITEMSIZE)
    got = _measured(trial)
    predicted = _try_predict(trial.extra.get("predict"), shapes, s)
    rows = [KindBytesRow(k, None if predicted is None else predicted.get(k, 0), got[k],
                         ref.get(k, 0)) for k in KINDS]  # fmt: skip
    return KindBytes(example=_mesh_text(trial.example), rows=rows)


def _try_predict(fn: Any, shapes: dict, s: Sizes) -> dict[str, int] | None:
    if fn is None:
        return None
    try:
        out = fn(dict(shapes), {DATA: s.data, MODEL: s.model}, ITEMSIZE)
    except Exception:  # not started, or wrong: the predict exercise says so
        return None
    return {str(k): int(v) for k, v in out.items()} if isinstance(out, dict) else None


def _mesh_text(ex: Example) -> str:
    from grader.spec import format_example

    return format_example(ex)


# ------------------------------------------------------------------ memory


def _memory_bound(trial: Trial) -> int:
    s = sizes(trial.example)
    return s.params_bytes // (2 * s.model)


def _memory_skip(trial: Trial) -> str | None:
    data = trial.example["mesh"][0]
    return None if data >= MEMORY_FROM else f"checked from data = {MEMORY_FROM}"


def _memory_hint(trial: Trial) -> str:
    """Which known way of holding too much this program took, from its collectives."""
    s = sizes(trial.example)
    spans = _spans(trial)
    if any(k == ALL_GATHER and MODEL in axes for k, axes, _ in spans):
        return (
            "The weights are gathered over 'model' too: each device holds whole heads and the "
            "whole MLP of every layer. Gather over 'data' only and keep your heads and F columns."
        )
    if any(k == ALL_REDUCE and DATA in axes and n >= TINY for k, axes, n in spans):
        return (
            "The gradients are all-reduced over 'data', so each device materialises the whole "
            "gradient of its 'model' column (and the weights were gathered outside the function "
            "you differentiate, all layers at once). Gather each layer inside the checkpointed "
            "block: the gradients then come back reduce-scattered, 1/data each."
        )
    ref = F.reference_bytes(s.shapes(), s.data, s.model, ITEMSIZE).get(ALL_GATHER, 0)
    if (trial.comms.bytes(ALL_GATHER) or 0) < ref:
        remat = trial.program.counts
        if remat["remat2"] or remat["checkpoint"]:
            return (
                "Your jax.checkpoint's policy still saves the gathered weights: saving "
                '"everything except the gathered weights\' names" still saves them, because '
                "the all_gather's own result, before checkpoint_name, is another value without "
                "those names, and the backward reuses it instead of gathering again. Save only "
                "the mid-block h: policy=save_only_these_names('mid')."
            )
        return (
            "No remat: the backward does not gather again, so every layer's gathered weights "
            "are kept from the forward. Wrap 'gather + block' in jax.checkpoint."
        )
    batch = _batch_gathered(trial)
    if batch:
        return (
            batch + " Each device then keeps the whole batch's activations for the backward, "
            "data times its share."
        )
    return (
        "Something as large as half a 'model' column of the weights is held at once: gather "
        "one layer at a time, over 'data' only, and keep the gradients reduce-scattered."
    )


def _spans(trial: Trial) -> list[tuple[str, set[str], int]]:
    """(kind, mesh axes spanned, bytes per device) of every collective that moves data."""
    shape, names = tuple(trial.mesh.devices.shape), tuple(trial.mesh.axis_names)
    try:
        return [(c.kind, spanned_axes(g, shape, names), c.total() or 0) for c, g in grouped(trial)]
    except ValueError:
        return []


@dataclass(frozen=True)
class StepMemory(Check):
    name: str = "memory"

    def __call__(self, trial: Trial) -> CheckResult:
        result = TempMemory(bound=_memory_bound, what="|params|/(2·model)", skip=_memory_skip)(
            trial
        )
        if not result.passed:
            result = replace(result, hint=_memory_hint(trial))
        return result


def _explain(trials: list[Trial]) -> list[Any]:
    return [kind_bytes(t) for t in trials if t.comms is not None][:2]


# ------------------------------------------------------------------ predict_step_bytes


PREDICT_EXPLICIT = [
    {"mesh": (4, 2), "layers": 8, "batch": 4, "seq": 4, "d": 32, "hdh": 24, "f": 64},
    {"mesh": (2, 3), "layers": 8, "batch": 4, "seq": 4, "d": 32, "hdh": 24, "f": 96},
    {"mesh": (1, 2), "layers": 12, "batch": 2, "seq": 8, "d": 16, "hdh": 12, "f": 32},
    {"mesh": (3, 1), "layers": 8, "batch": 6, "seq": 4, "d": 24, "hdh": 8, "f": 16},
    {"mesh": (2, 2), "layers": 1, "batch": 16, "seq": 8, "d": 8, "hdh": 8, "f": 16},
]
"""4×2 and 2×3 as train_step's; 1×2 (no FSDP traffic) and 3×1 (no Megatron traffic); 2×2
with a batch larger than the weights (x of 1,024 elements, 512 params), where a count of
the weights that takes x for one is 3× the all-gather (on the others x is under the 10%
the prediction is held to)."""
PREDICT_PURPOSE = {
    (4, 2): "train_step's 4 × 2 example: all-gathers and a reduce-scatter over data = 4, "
    "all-reduces of [B/data, S, D] activations over model = 2",
    (2, 3): "train_step's 2 × 3 example: model = 3 not a power of two, FSDP traffic over "
    "data = 2, Megatron all-reduces over model = 3",
    (1, 2): "a 1 × 2 mesh, data = 1: no FSDP traffic (no all-gather, no reduce-scatter), only "
    "the all-reduces over model = 2",
    (3, 1): "a 3 × 1 mesh, model = 1: no Megatron traffic, only FSDP's all-gathers and "
    "reduce-scatter over data = 3 (and the scalar loss's few bytes)",
    (2, 2): "a 2 × 2 mesh, one layer, a batch larger than the weights: x [16, 8, 8] is 1,024 "
    "elements against 512 params, and only the params are gathered",
}
"""What each example of :data:`PREDICT_EXPLICIT` holds, by mesh (issue 45 §1)."""


def _predict_shapes(ex: Example) -> dict[str, tuple[int, ...]]:
    return {**model.shapes(ex["layers"], ex["d"], ex["hdh"], ex["f"]),
            "x": (ex["batch"], ex["seq"], ex["d"])}  # fmt: skip


def _run_predict(rt: Runtime, fn: Callable[..., Any], ex: Example) -> Trial:
    data, m = ex["mesh"]
    shapes = _predict_shapes(ex)
    out = fn(dict(shapes), {DATA: data, MODEL: m}, ITEMSIZE)
    if not isinstance(out, dict) or not all(
        isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in out.values()
    ):
        raise StudentReturnError(
            f"predict_step_bytes returned {out!r}; expected a dict of kind → int bytes",
            hint="Return e.g. {'all-gather': …, 'reduce-scatter': …, 'all-reduce': …} with int "
            "values (use // for the (G−1)/G factors).",
        )
    try:  # the same call at half the item size: a prediction in elements does not change
        half = fn(dict(shapes), {DATA: data, MODEL: m}, ITEMSIZE // 2)
        half = {str(k): int(v) for k, v in half.items()}
    except Exception:  # report material only: the verdict rests on the call above
        half = None
    other = _probe(ex)  # another mesh: a slip named must give the prediction there too
    try:
        seen = fn(dict(_predict_shapes(other)), {DATA: other["mesh"][0], MODEL: other["mesh"][1]},
                  ITEMSIZE)  # fmt: skip
        probe = (other, {str(k): int(v) for k, v in seen.items()})
    except Exception:  # report material only, as above
        probe = None
    return Trial(example=ex, output={str(k): int(v) for k, v in out.items()},
                 expected=F.reference_bytes(shapes, data, m, ITEMSIZE),
                 extra={"half": half, "probe": probe})  # fmt: skip


def _probe(ex: Example) -> Example:
    """The example on a mesh twice as large along both axes, every split dimension grown
    to match (B and D with 'data', F with 'model'): where two slips give one value on the
    example (½ of the all-reduce on model = 2: a forward-only count, a missing 2, or the
    activations divided by model), they part on it."""
    data, m = ex["mesh"]
    return {**ex, "mesh": (2 * data, 2 * m), "batch": 2 * ex["batch"], "d": 2 * ex["d"],
            "f": 2 * ex["f"]}  # fmt: skip


@dataclass(frozen=True)
class Prediction(Check):
    """Each kind within 10% of what the reference train_step sends (kinds under 64 B ignored).

    The 10% is bounded by the nearest known slip, the ring factor (G−1)/G left out: on the
    meshes drawn (G ≤ 4 per axis) it makes a prediction G/(G−1) ≥ 4/3 of the step's, 33%
    off; every other slip of ``F.prediction_factors`` is a factor of 2 or more."""

    name: str = "prediction"

    def __call__(self, trial: Trial) -> CheckResult:
        got, want = trial.output, trial.expected
        rows = [KindBytesRow(k, got.get(k, 0), None, want.get(k, 0))
                for k in sorted(set(got) | set(want), key=_kind_order)]  # fmt: skip
        evidence = [KindBytes(example=_mesh_text(trial.example), rows=rows)]
        for row in rows:
            mine, ref = row.predicted or 0, row.reference or 0
            if max(mine, ref) < TINY or abs(mine - ref) <= SLACK * ref:
                continue
            return CheckResult(
                self.name, False,
                f"{row.kind}: you predict {mine:,} bytes per device; the reference's step "
                f"sends {ref:,}" + (f" ({mine / ref:.2f}×)" if ref else ""),
                evidence=evidence,
                hint=_prediction_hint(row.kind, mine, ref, trial.example,
                                      _itemless(trial, row.kind), trial.extra.get("probe")),
            )  # fmt: skip
        half, ex = trial.extra.get("half"), trial.example
        if half is not None:  # the same shapes at half the item size (bfloat16): every kind
            # the step sends has the params' dtype, so each prediction halves with it
            small = ITEMSIZE // 2
            there = F.reference_bytes(_predict_shapes(ex), *ex["mesh"], small)
            for kind in sorted(set(half) | set(there), key=_kind_order):
                mine, ref = half.get(kind, 0), there.get(kind, 0)
                if max(mine, ref) < TINY or abs(mine - ref) <= SLACK * ref:
                    continue
                return CheckResult(
                    self.name, False,
                    f"{kind}: at itemsize = {small} (bfloat16) you predict {mine:,} bytes per "
                    f"device; the step sends {ref:,}" + (f" ({mine / ref:.2f}×)" if ref else ""),
                    evidence=evidence,
                    hint=(f"Your {kind} prediction is right at itemsize {ITEMSIZE} and not at "
                          f"{small}"
                          + (", where it does not change: a fixed 4 bytes (float32's) where "
                             "the itemsize given belongs" if mine == got.get(kind) else "")
                          + ". The weights, their gradients and the activations all have the "
                          "params' dtype: every kind's bytes are the itemsize given times the "
                          "elements."),
                )  # fmt: skip
        return CheckResult(self.name, True, "every kind within 10% of the reference's step, "
                           f"at itemsize {ITEMSIZE} and {ITEMSIZE // 2}", evidence=evidence)  # fmt: skip


def _kind_order(kind: str) -> int:
    return KINDS.index(kind) if kind in KINDS else len(KINDS)


def _itemless(trial: Trial, kind: str) -> bool:
    """The prediction for ``kind`` is the same at half the item size: counted in elements."""
    half = trial.extra.get("half")
    return half is not None and half.get(kind) == trial.output.get(kind) != 0


ELEMENTS = "Counted in elements, not bytes"


def _prediction_hint(kind: str, mine: int, ref: int, ex: Example, itemless: bool = False,
                     probe: tuple[Example, dict[str, int]] | None = None) -> str:  # fmt: skip
    """Known slips whose value yours equals, on this example and, where the grader could
    call yours there, on :func:`_probe`'s mesh too (two slips equal on one mesh are not
    evidence of either: a third gives it as well); "elements, not bytes" only when
    measured (your prediction did not change with the item size), since other slips give
    1/4 too."""
    if not ref:
        return f"This step sends no {kind} on a {ex['mesh'][0]}×{ex['mesh'][1]} mesh (a group of one moves nothing)."
    there = F.prediction_factors(kind, probe[0]) if probe is not None else None

    def also(i: int) -> bool:  # the slip gives your prediction on the other mesh too
        if there is None:
            return True
        value, got = there[i][0], probe[1].get(kind, 0)
        return abs(got - value) <= SLACK * max(value, 1)

    here = [(i, why) for i, (value, why) in enumerate(F.prediction_factors(kind, ex))
            if abs(mine - value) <= SLACK * max(value, 1) and abs(value - ref) > SLACK * ref
            and (itemless or not why.startswith(ELEMENTS))]  # fmt: skip
    named = [why for i, why in here if also(i)]
    if itemless and not any(why.startswith(ELEMENTS) for why in named):
        named.insert(0, f"{ELEMENTS}: your prediction is the same at half the item size; "
                     "multiply by itemsize.")  # fmt: skip
    if named:
        named = list(dict.fromkeys(named))
        return named[0] if len(named) == 1 else "One of these: " + " Or: ".join(named)
    apart = "a factor none of the known slips gives"
    if here and probe is not None:  # slips that give it here, none there
        (pd, pm), theirs = probe[0]["mesh"], F.reference_bytes(
            _predict_shapes(probe[0]), *probe[0]["mesh"], ITEMSIZE).get(kind, 0)  # fmt: skip
        ratio = probe[1].get(kind, 0) / theirs if theirs else None
        there_ratio = f"{ratio:.3g}×" if ratio is not None else "not 0"
        both = next((f" — on both, {words}" for words, a, b in (
            ("'model' times", ex["mesh"][1], pm), ("1/'model'", 1 / ex["mesh"][1], 1 / pm),
            ("'data' times", ex["mesh"][0], pd), ("1/'data'", 1 / ex["mesh"][0], 1 / pd))
            if ratio is not None and a != b and abs(mine / ref - a) <= 1e-3 * a
            and abs(ratio - b) <= 1e-3 * b), "")  # fmt: skip
        apart = (f"and on a {pd}×{pm} mesh {there_ratio}{both}: the known slips that give "
                 f"{mine / ref:.3g}× here give other values there")  # fmt: skip
    return (
        f"Yours is {mine / ref:.3g}× the step's, {apart}. Per "
        "device, ring model: gathering or reduce-scattering n bytes over G devices sends "
        "(G−1)/G·n, an all-reduce 2(G−1)/G·n; FSDP moves one 'model' column of the weights, "
        "|params|/m, over 'data', twice for the gathers (forward, backward) and once for the "
        "reduce-scatter; Megatron moves [B/data, S, D] activations over 'model', 4 times a "
        "block."
    )


def _predict_strategy(ctx: Context):
    return example_strategy(ctx).map(
        lambda ex: {"mesh": ex["mesh"], "layers": ex["layers"], "batch": ex["mesh"][0] * ex["rows"],
                    "seq": ex["seq"], "d": ex["mesh"][0] * ex["dblock"],
                    "hdh": ex["heads"] * ex["dh"], "f": ex["mesh"][1] * ex["fcols"]}
    )  # fmt: skip


def _unchecked(trial: Trial) -> int:
    """Shard_maps traced with check_vma=False: from the traced program in one process;
    in the grader's worker, what the student's process says (the exported program
    cannot show it), used for a hint's wording only."""
    return trial.program.counts[jaxpr.UNCHECKED] or trial.extra.get(SAID_UNCHECKED, 0)


UNCHECKED_GRADS = (
    "Your shard_map runs with check_vma=False. Without the varying/invariant types, autodiff "
    "no longer inserts the psums the types imply (the transpose of each implicit cast to "
    "varying), and this step's gradients come out wrong even where the forward is right "
    "(measured: the reference, changed only to "
    "check_vma=False, gets every layer's gradients wrong and the loss right). Keep "
    "check_vma=True."
)
UNCHECKED_TOO = (
    " Put check_vma back to True as well: with it, a missing psum is a type error that names "
    "the output, and with it off even the psum'd forward gets wrong gradients."
)


H_VARIES = (
    "h, the residual stream, must be the same on every 'model' device between sub-blocks "
    "(each 'model' device then computes its own heads and F columns from the whole h), and "
    "here it comes out varying over 'model'. What makes it vary: a row-parallel product "
    "(… @ wo after attention, … @ w_out after the MLP) added to h without lax.psum over "
    "'model' (each device holds a partial sum of it), a psum taken before the row-parallel "
    "matmul instead of after it (psum(tanh(h @ w_in)) sums different columns, and @ w_out "
    "then gives a partial sum again), or a weight all_gathered over 'model' (weights stay "
    "split over 'model' in this step). For the first two, put the psum over 'model' on the "
    "row-parallel product, once per sub-block; for the third, gather over 'data' only and add "
    "no psum (a psum of products of whole gathered weights is 'model' times too large). A "
    "lax.pcast of h (or of the scan's initial h) to varying would only silence the error and "
    "carry partial sums."
)
"""Lesson 12's cause of a carry h that gains 'model', or a pcast of h over 'model' refused: every
known mistake that makes h vary over 'model' (tests/mistakes/l12.py: the attention's psum
forgotten, the MLP's psum before w_out), and the one fix that fits them all."""


def _h_varies(found: vma.VmaError, exc: BaseException) -> bool:
    """The error is about h varying over 'model': a scan carry gaining 'model', or a
    pcast to varying over 'model' (the source line names the axis) of a value that varies."""
    if found.kind == vma.CARRY:
        return any("model" in c.gained for c in found.carries)
    if found.kind == vma.PCAST:
        line = next((ln for _, ln in reversed(vma.frames(exc)) if "pcast" in ln), "")
        return "'model'" in line or '"model"' in line
    return False


def _train_error(exc: BaseException, ex: Example, passed: list[Example]) -> str | None:
    """in_specs (from the student's RULES) that differ from the params' placement: which dim,
    and the logical axes that dim can be, read from the error; h varying over 'model'."""
    found = vma.read(exc)
    if found is not None and _h_varies(found, exc):
        return H_VARIES
    if found is None or found.kind != vma.IN_SPECS:
        return None
    mine, placed = vma.spec_entries(found.spec), vma.spec_entries(found.placed)
    if mine is None or placed is None or len(mine) != len(placed):
        return None
    dims = re.match(r"\w+\[((?:\d+(?:@(?:\([^)]*\)|\w+))?,?)*)\]", found.arg or "")
    shape = tuple(int(d) for d in re.findall(r"(?:^|,)(\d+)", dims.group(1))) if dims else None
    shapes = sizes(ex).shapes()
    logical = {**LOGICAL, "x": ARRAY_AXES}
    names = [n for n in logical if LAYOUT[n] == tuple(placed)]
    names = [n for n in names if shapes[n] == shape] or names  # the shape narrows it down
    said = []
    for dim, (have, want) in enumerate(zip(mine, placed)):
        if have != want:
            axes = sorted({logical[n][dim] for n in names})
            said.append(f"{' or '.join(axes) or f'dim {dim}'} on {have!r}")
    if not said:
        return None
    what = "x (or y)" if names == ["x"] else "a param"
    return (
        f"Your rules put {', '.join(said)}: train_step's in_specs say {found.spec} for {what} "
        f"that arrives placed {found.placed}, as the lesson's layout places it. The RULES are: "
        "batch and embed → 'data', heads and mlp → 'model', layers, seq and act_embed → None."
    )


# ------------------------------------------------------------------ exercises

SPEC = LessonSpec(
    exercises=(
        ExerciseSpec(
            name="shard_params",
            strategy=example_strategy,
            explicit=explicit_examples,
            run=_run_shard,
            checks=(
                PerLeaf(inner=Values(atol=lambda t: 0.0), leaf_extra=_leaf_extra),
                _param_shardings(),
                HeldBytes(),
            ),
            max_examples=1,
            purpose=lambda ex: SHARD_PURPOSE.get(ex["mesh"]),
        ),
        ExerciseSpec(
            name="train_step",
            strategy=example_strategy,
            explicit=explicit_examples,
            run=run_train,
            checks=(
                Divergence(),
                _param_shardings(),
                InputsUntouched(),
                AxisCollectives(),
                StepMemory(),
                StepBytes(),
            ),
            max_examples=1,
            purpose=lambda ex: STEP_PURPOSE.get(ex["mesh"]),
            explain=_explain,
            diagnose_error=_train_error,
        ),
        ExerciseSpec(
            name="predict_step_bytes",
            strategy=_predict_strategy,
            explicit=lambda ctx: [
                e for e in PREDICT_EXPLICIT if e["mesh"][0] * e["mesh"][1] <= ctx.n_devices
            ],
            run=_run_predict,
            checks=(Prediction(),),
            max_examples=4,
            purpose=lambda ex: PREDICT_PURPOSE.get(ex["mesh"]),
        ),
    ),
)
