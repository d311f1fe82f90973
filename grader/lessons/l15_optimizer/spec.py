"""Grading spec for lesson 15: the optimizer at scale.

Params are one flat vector of Ψ = N·chunk numbers. Every output leaf is held
against the float64 reference of :mod:`.reference` on every device, in the dtype
the docstring promises (bfloat16 params; float32 master weights and moments;
int32 counters), and its sharding against the promise.

What each compiled program may communicate (elements per device, ring model):

=================  =========================================  ==================
exercise           reduce-scatter                             all-gather
=================  =========================================  ==================
adamw_step         none (element by element)                  none
zero1_step         1 × (N−1)/N·Ψ, float32 (the summed buffer) 1 × (N−1)/N·Ψ, bf16
zero2_step         M × (N−1)/N·Ψ, bfloat16 (each micro-batch) 1 × (N−1)/N·Ψ, bf16
=================  =========================================  ==================

``clip_by_global_norm`` and ``loss_scaled_step`` all-reduce one scalar and
nothing else; the bonus ``fp8_all_gather`` one scalar (the amax) and one
all-gather of (N−1)/N·Ψ float8_e4m3fn elements. Bytes are elements (from the compiled HLO, loop trip counts
multiplied in) times the width the exported program sends (its StableHLO):
XLA:CPU widens bfloat16 collectives to float32 in the compiled program, so the
width is read from the program the student wrote.

The dtypes of the update are read from the exported program too: no addition,
subtraction, multiplication, division, square root, maximum or sum in a 16-bit float
(the moments, g², the master update and the gradient sum are float32 work). ZeRO-2 must never compute a float32
array of Ψ elements (the whole gradient's buffer that ZeRO-2 exists to drop);
the same program read shows ZeRO-1's. Memory per device: the outputs of the
compiled program (its memory analysis) hold the bfloat16 params and 12·Ψ/N
bytes of optimizer state (:mod:`.byte_table`), within a few bytes of the
output tuple's own table.

Tolerances (fractions of max|expected|, rtol 0): master weights 1e-6 plus
1 % of the step lr·max|m̂/(√v̂+ε)| (a bfloat16 reduce-scatter rounds the
gradient by 2⁻⁹; the known mistakes move the master by 10 % of a step or more);
bfloat16 params the master's tolerance plus 2⁻⁷ of each element (one bfloat16 step
of it, where the float32 master rounds the other way: the params passed in, an
update of lr·|m̂/(√v̂+ε)| ≈ 0.01 behind, differ by more wherever |w| < 0.5); moments 2⁻⁷ of what this step adds to them
((1−b1)·max|g| for m, 2(1−b2)·max g² for v: the gradient's own bfloat16
rounding); clipping 10⁻⁵; the fp8 round trip 10⁻⁶ (the same float32
arithmetic and one rounding, where a float8 step is 2⁻³); counters exactly.

A wrong value is named only by a known mistake's result (:func:`_known_mistake`)
that the example can tell from the right one, matched on the leaves that can
tell (master weights and moments, not the bfloat16 params).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from hypothesis import strategies as st

from grader.checks import InputsUntouched, OnlyCollectives, OutputSharding, Values, vma
from grader.checks.comms import communication
from grader.checks.hinted import Hinted
from grader.checks.trees import PerLeaf
from grader.checks.values import Behaviour, as_numpy, within
from grader.evidence import Note, Table
from grader.later import Later, later, resolved
from grader.lessons.l15_optimizer import byte_table, reference
from grader.lessons.l15_optimizer.reference import HP, SCALER_HP, as64, fp8_round_trip
from grader.results import CheckResult
from grader.runtime import Runtime, StudentReturnError
from grader.spec import (
    FAST_COMPILE,
    Check,
    Context,
    Example,
    ExerciseSpec,
    LessonSpec,
    Trial,
)

AXIS = "data"
ALL_GATHER, REDUCE_SCATTER, ALL_REDUCE = "all-gather", "reduce-scatter", "all-reduce"
NARROW = ("bfloat16", "float16")
ARITHMETIC = ("add", "sub", "mul", "div", "sqrt", "rsqrt", "max", "reduce_sum", "reduce_max")
"""Tracked operations that are the update's arithmetic (converts are not): g² in bfloat16
rounds v's every new term, as a bfloat16 sum rounds the gradient."""


WIDTH = {"float8_e4m3fn": 1, "float8_e5m2": 1, "bfloat16": 2, "float16": 2, "float32": 4,
         "float64": 8}  # fmt: skip
"""Bytes of one element of the dtypes this lesson names (the figures read it too)."""


def width(dtype: str) -> int:
    """Bytes of one element of the dtype named (numpy's names; ml_dtypes' for bfloat16
    and every float8): what the exported program sends, not the compiled program's
    widened type."""
    if dtype in WIDTH:
        return WIDTH[dtype]
    import ml_dtypes

    return int(np.dtype(getattr(ml_dtypes, dtype, None) or dtype).itemsize)


# ------------------------------------------------------------------ examples


def psi(ex: Example) -> int:
    """Ψ, the number of parameters: N·chunk."""
    return ex["n"] * ex["chunk"]


def _sizes(ctx: Context, *explicit: int) -> list[int]:
    return [n for n in explicit if n in ctx.mesh_sizes] or [max(ctx.mesh_sizes)]


def _adamw_examples(ctx: Context) -> list[Example]:
    """A fresh optimizer (step 0: the bias correction matters most; a quarter of its
    gradients near 1e-6, see :func:`_adam_grads`) on 3 devices, a later step on 6."""
    return [
        {"n": n, "chunk": 64, "step": step, "seed": i}
        for i, (n, step) in enumerate(zip(_sizes(ctx, 3, 6), (0, 3)))
    ]


def _adamw_strategy(ctx: Context):
    return st.fixed_dictionaries({
        "n": st.sampled_from(ctx.mesh_sizes), "chunk": st.sampled_from([16, 48, 64]),
        "step": st.sampled_from([0, 1, 2, 7]), "seed": st.integers(0, 2**16),
    })  # fmt: skip


def _zero_examples(ctx: Context) -> list[Example]:
    """N = 4 with 2 micro-batches, N = 6 with 3: ZeRO-1 and ZeRO-2 send different counts."""
    return [
        {"n": n, "chunk": 128, "micro": micro, "step": step, "seed": i}
        for i, (n, micro, step) in enumerate(zip(_sizes(ctx, 4, 6), (2, 3), (1, 4)))
    ]


def _zero_strategy(ctx: Context):
    return st.fixed_dictionaries({
        "n": st.sampled_from([n for n in ctx.mesh_sizes if n > 1] or ctx.mesh_sizes),
        "chunk": st.sampled_from([32, 96]), "micro": st.sampled_from([1, 2, 3]),
        "step": st.sampled_from([1, 2, 5]), "seed": st.integers(0, 2**16),
    })  # fmt: skip


CLIP_CASES = ("between", "clip", "keep")
"""max_norm between every device's own norm and the whole norm (a local norm never
clips), below both (clipped), above the whole norm (left alone)."""


def _clip_examples(ctx: Context) -> list[Example]:
    """Between the local and the global norm on 4 devices (a local norm never clips, a sum
    of norms clips too much), above the whole norm on 6 (a gradient always rescaled to
    max_norm is told from one left alone only there); "clip", below every norm, is drawn
    (it tells apart no known mistake that "between" does not)."""
    return [
        {"n": n, "chunk": 32, "case": case, "seed": i}
        for i, (n, case) in enumerate(zip(_sizes(ctx, 4, 6), ("between", "keep")))
    ]


def _clip_strategy(ctx: Context):
    return st.fixed_dictionaries({
        "n": st.sampled_from([n for n in ctx.mesh_sizes if n > 1] or ctx.mesh_sizes),
        "chunk": st.sampled_from([8, 32]), "case": st.sampled_from(CLIP_CASES),
        "seed": st.integers(0, 2**16),
    })  # fmt: skip


SCALE_CASES = ("overflow", "underflow", "clean", "nan")
"""An inf on one device's slice; gradients whose true size is below float16's smallest
subnormal (only the scaled ones are representable); ordinary ones; a nan."""


def _scaled_examples(ctx: Context) -> list[Example]:
    """A nan (no inf) on 4 devices, one clean step short of growing the scale; underflow on
    3 with a scale that then grows; an inf on 2, one clean step short of growing; the clean
    case is drawn. Both kinds of non-finite gradient are fixed: a skip test written with
    isinf alone (or |g| > 65504) applies the nan, one written with isnan alone applies the
    inf (the drawn example is an overflow one time in four), and every mistake the inf
    told apart (the skip that still advances the momentum, the skip decided locally) the
    nan tells apart too; good not 0 on both: a skip that leaves good as it was is seen.
    The nan one short of the interval: a skip that lets good reach growth_interval is seen;
    the inf two or more short (good 1 of 4): a skip that still adds one to good and resets
    it only when that reaches the interval is seen (one short, the reset hides it). And a
    clean step two short of growing, on the underflow example's program (same N, Ψ and
    interval): a scale grown one clean step early doubles there (at k − 1 every step
    grows). Before it, a clean step three short (good 1 of 4): a scale that grows on every
    clean step (no condition, or a threshold of 1) doubles there, a scale grown one step
    early does not — so where only the later one fails, one step early is what was seen."""
    rows = (
        ("nan", 4, 2, 1, 0),
        ("underflow", 3, 3, 2, 1),
        ("overflow", 2, 4, 1, 2),
        ("clean", 3, 4, 1, 4),
        ("clean", 3, 3, 1, 3),
    )  # (case, N, k, good, seed)
    return [
        {"n": _sizes(ctx, size)[0], "chunk": 32, "case": case, "interval": k, "good": good,
         "seed": seed}
        for case, size, k, good, seed in rows
    ]  # fmt: skip


INTERVALS = ((2, 0), (2, 1), (3, 0), (3, 1), (3, 2), (4, 0), (4, 2), (4, 3))
"""(growth_interval k, clean steps so far): none yet, k − 2 (a scale grown a step early
grows here) or k − 1 (this step grows the scale)."""


def _scaled_strategy(ctx: Context):
    # one sampled pair, not a flatmap over k: a flatmap builds a strategy per draw, and
    # drawing this exercise's pool took 1.5–2× as long (70 against 48 ms; loaded, 180 against 93)
    return st.fixed_dictionaries({
        "n": st.sampled_from([n for n in ctx.mesh_sizes if n > 1] or ctx.mesh_sizes),
        "chunk": st.sampled_from([8, 32]), "case": st.sampled_from(SCALE_CASES),
        "counters": st.sampled_from(INTERVALS), "seed": st.integers(0, 2**16),
    }).map(_with_counters)  # fmt: skip


def _with_counters(d: dict[str, Any]) -> Example:
    k, good = d["counters"]
    return {"n": d["n"], "chunk": d["chunk"], "case": d["case"], "interval": k, "good": good,
            "seed": d["seed"]}  # fmt: skip


def _fp8_examples(ctx: Context) -> list[Example]:
    return [{"n": n, "chunk": 64, "seed": i} for i, n in enumerate(_sizes(ctx, 4, 3))]


def _fp8_strategy(ctx: Context):
    return st.fixed_dictionaries({
        "n": st.sampled_from([n for n in ctx.mesh_sizes if n > 1] or ctx.mesh_sizes),
        "chunk": st.sampled_from([16, 64]), "seed": st.integers(0, 2**16),
    })  # fmt: skip


# ------------------------------------------------------------------ inputs


def _adam_state(rng: np.random.Generator, size: int, step: int) -> dict[str, np.ndarray]:
    """float32 master weights, and moments as a run at ``step`` would hold them (zero at 0)."""
    master = rng.standard_normal(size).astype(np.float32)
    if step == 0:
        m = v = np.zeros(size, np.float32)
    else:
        m = (0.3 * rng.standard_normal(size) * (1 - HP["b1"] ** step)).astype(np.float32)
        v = (rng.uniform(0.05, 1.0, size) * (1 - HP["b2"] ** step)).astype(np.float32)
    return {"master": master, "m": m, "v": v}


def _bf16(a: np.ndarray) -> np.ndarray:
    """``a`` rounded to bfloat16 in numpy (ml_dtypes: round to nearest even, as XLA's
    convert), not with jnp: a jnp conversion compiles a program for every new shape,
    nine per grade, in the worker and in the student's process alike."""
    import ml_dtypes

    return np.asarray(a).astype(ml_dtypes.bfloat16)


def _put(mesh: Any, spec: Any) -> Callable[[Any], Any]:
    import jax
    from jax.sharding import NamedSharding

    return lambda a: jax.device_put(a, NamedSharding(mesh, spec))


def _run_adam(kind: str) -> Callable[[Runtime, Callable[..., Any], Example], Trial]:
    """adamw_step (kind 'adamw'), zero1_step or zero2_step ('zero1', 'zero2')."""

    def run(rt: Runtime, fn: Callable[..., Any], ex: Example) -> Trial:
        import jax
        from jax.sharding import NamedSharding
        from jax.sharding import PartitionSpec as P

        mesh = rt.mesh((ex["n"],), (AXIS,))
        rng, size = rt.rng(), psi(ex)
        state = _adam_state(rng, size, ex["step"])
        params = _bf16(state["master"])
        micro = ex.get("micro", 1)
        if kind == "adamw":
            grads = _bf16(_adam_grads(rng, size, ex["step"]))
            g64 = as64(grads)
            param_spec, grad_spec = P(AXIS), P(AXIS)
        else:
            grads = _bf16(rng.standard_normal((ex["n"], micro, size)))
            g64 = as64(grads).mean(axis=(0, 1))
            param_spec, grad_spec = P(), P(AXIS)
        shard, whole = _put(mesh, P(AXIS)), _put(mesh, P())
        args = (
            _put(mesh, param_spec)(params), _put(mesh, grad_spec)(grads),
            shard(state["master"]), shard(state["m"]), shard(state["v"]),
            whole(np.int32(ex["step"])),
        )  # fmt: skip

        def program(p, g, master, m, v, step):
            s = {"master": master, "m": m, "v": v, "step": step}
            return fn(p, g, s, dict(HP)) if kind == "adamw" else fn(p, g, s, dict(HP), mesh)

        shardings = {
            "params": NamedSharding(mesh, param_spec), "state": NamedSharding(mesh, P(AXIS)),
            "step": NamedSharding(mesh, P()),
        }  # fmt: skip
        trial = rt.compile_and_run(
            jax.jit(program), args, mesh, kind=kind, shardings=shardings,
        )  # fmt: skip
        _pair(trial.output, fn_name(kind), "(new params, new state)")
        # the float64 step, computed where a check reads it: in the worker only
        step = later(reference.adamw, as64(state["master"]), as64(state["m"]),
                     as64(state["v"]), ex["step"], g64)  # fmt: skip
        trial.expected = later(_adamw_expected, step, ex["step"])
        trial.extra.update(
            before={k: as64(a) for k, a in state.items()}, g=g64,
            direction=later(lambda: step.value()[3]),
            grads=as64(grads),
        )  # fmt: skip
        return trial

    return run


TINY = 2e-6
"""Where a fresh optimizer's gradients are scaled to (see :func:`_adam_grads`)."""


def _adam_grads(rng: np.random.Generator, size: int, step: int) -> np.ndarray:
    """Gradients around 0.5; on a fresh optimizer (step 0) every fourth one near 1e-6. At
    step 0, v̂ = g²: where |g| ≲ √eps = 1e-4 the place of eps shows. m̂/(√v̂ + eps) is
    ±0.99 there, m̂/√(v̂ + eps) ±0.01 (eps inside the square root): the master weights
    then move by lr·0.98 apart, 100 times the tolerance. With v from U(0.05, 1) alone no
    element gets near eps, and both forms agree to 10⁻⁸."""
    g = 0.5 * rng.standard_normal(size)
    if step == 0:
        g[::4] *= TINY
    return g


def _adamw_expected(step: Later, before: int) -> tuple[np.ndarray, dict[str, Any]]:
    """(new params, new state) from the float64 step (new master, m, v, direction)."""
    new, m, v, _ = step.value()
    return new, {"m": m, "master": new, "step": np.int32(before + 1), "v": v}


def fn_name(kind: str) -> str:
    return {"adamw": "adamw_step", "zero1": "zero1_step", "zero2": "zero2_step",
            "clip": "clip_by_global_norm", "scaled": "loss_scaled_step",
            "fp8": "fp8_all_gather"}[kind]  # fmt: skip


def _pair(out: Any, name: str, what: str) -> None:
    if not (isinstance(out, (tuple, list)) and len(out) == 2):
        kind = type(out).__name__ if out is not None else "None"
        raise StudentReturnError(
            f"{name} returned {kind}; expected a pair {what}",
            hint="Return both, as a tuple: `return new_params, new_state`.",
        )


def _run_clip(rt: Runtime, fn: Callable[..., Any], ex: Example) -> Trial:
    import jax
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P

    mesh = rt.mesh((ex["n"],), (AXIS,))
    rng, n = rt.rng(), ex["n"]
    g = rng.standard_normal(psi(ex)).astype(np.float32)
    g64 = as64(g)
    norm = float(np.sqrt(np.sum(g64 * g64)))
    local = np.sqrt((g64.reshape(n, -1) ** 2).sum(axis=1))
    if ex["case"] == "between":
        max_norm = (float(local.max()) + norm) / 2 if n > 1 else 0.5 * norm
    else:
        max_norm = 0.5 * float(local.min()) if ex["case"] == "clip" else 2.0 * norm
    max_norm = float(np.float32(max_norm))
    args = (_put(mesh, P(AXIS))(g), _put(mesh, P())(np.float32(max_norm)))
    trial = rt.compile_and_run(  # max_norm is an input: it depends on the data
        jax.jit(lambda grads, limit: fn(grads, limit, mesh)), args, mesh,
        kind="clip", sharding=NamedSharding(mesh, P(AXIS)), dtype="float32",
    )  # fmt: skip
    trial.expected = later(reference.clip, g64, max_norm)  # in the worker only
    trial.extra.update(g=g64, max_norm=max_norm, norm=norm, local=local)
    return trial


def _fp8_expected(w: np.ndarray) -> np.ndarray:
    """The expected gathered weights, float64, by the exercise's argument name: a failing
    check's changes of it and of the round trip are said so (:mod:`grader.checks.variants`)."""
    return fp8_round_trip(w).astype(np.float64)


def _run_fp8(rt: Runtime, fn: Callable[..., Any], ex: Example) -> Trial:
    import jax
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P

    mesh = rt.mesh((ex["n"],), (AXIS,))
    rng = rt.rng()
    w = rng.standard_normal(psi(ex)).astype(np.float32)
    w[int(rng.integers(0, w.size))] *= 8  # one outlier sets the scale, on one device
    trial = rt.compile_and_run(
        jax.jit(lambda a: fn(a, mesh)), (_put(mesh, P(AXIS))(w),), mesh,
        kind="fp8", sharding=NamedSharding(mesh, P()), dtype="float32",
    )  # fmt: skip
    trial.expected = later(_fp8_expected, w)
    trial.extra.update(w=w)
    return trial


def _scaled_inputs(rng: np.random.Generator, ex: Example) -> dict[str, Any]:
    """fp16 gradients of scale·loss for the example's case, and the state around them."""
    size = psi(ex)
    master = rng.standard_normal(size).astype(np.float32)
    if ex["case"] == "underflow":
        scale = 2.0**15
        true = 2e-8 * rng.standard_normal(size)  # below float16's smallest subnormal, 6e-8
        m = (2e-8 * rng.standard_normal(size)).astype(np.float32)
    else:
        scale = 2.0**12
        true = 1e-3 * rng.standard_normal(size)
        m = (1e-3 * rng.standard_normal(size)).astype(np.float32)
    grads = (true * scale).astype(np.float16)
    if ex["case"] in ("overflow", "nan"):
        where = int(rng.integers(0, size))  # one element of one device's slice
        grads[where] = np.float16(np.inf if ex["case"] == "overflow" else np.nan)
    return {"master": master, "m": m, "grads": grads, "scale": np.float32(scale)}


def _run_scaled(rt: Runtime, fn: Callable[..., Any], ex: Example) -> Trial:
    import jax
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P

    mesh = rt.mesh((ex["n"],), (AXIS,))
    d = _scaled_inputs(rt.rng(), ex)
    hp = {**SCALER_HP, "growth_interval": ex["interval"]}
    shard, whole = _put(mesh, P(AXIS)), _put(mesh, P())
    args = (
        shard(d["master"]), shard(d["m"]), shard(d["grads"]),
        whole(d["scale"]), whole(np.int32(ex["good"])),
    )  # fmt: skip

    def program(master, m, grads, scale, good):
        return fn({"master": master, "m": m}, grads, {"scale": scale, "good": good}, hp, mesh)

    shardings = {"state": NamedSharding(mesh, P(AXIS)), "scalar": NamedSharding(mesh, P())}
    trial = rt.compile_and_run(jax.jit(program), args, mesh, kind="scaled", shardings=shardings)
    _pair(trial.output, "loss_scaled_step", "(new state, new scaler)")
    trial.expected = later(_scaled_expected, d, ex)  # in the worker only
    trial.extra.update(inputs=d, hp=hp)
    return trial


def _scaled_expected(d: dict[str, Any], ex: Example) -> tuple[dict, dict]:
    """(new state, new scaler) of the float64 loss-scaled step."""
    master, m, scale, good = reference.loss_scaled(
        as64(d["master"]), as64(d["m"]), as64(d["grads"]), float(d["scale"]), ex["good"],
        ex["interval"],
    )  # fmt: skip
    return {"m": m, "master": master}, {"good": np.int32(good), "scale": np.float32(scale)}


# ------------------------------------------------------------------ leaves


LEAF_DTYPES = {"'master'": "float32", "'m'": "float32", "'v'": "float32",
               "'step'": "int32", "'good'": "int32", "'scale'": "float32"}  # fmt: skip


def _leaf(path: str) -> str:
    """``[1]['master']`` → ``master``; ``[0]`` → ``params``."""
    for key in LEAF_DTYPES:
        if key in path:
            return key.strip("'")
    return "params"


def _leaf_extra(trial: Trial, path: str) -> dict[str, Any]:
    name, kind = _leaf(path), trial.extra["kind"]
    if kind in ("clip", "fp8"):
        return {"name": kind, "dtype": "float32", "sharding": trial.extra["sharding"]}
    sh = trial.extra["shardings"]
    if kind == "scaled":
        sharding = sh["scalar"] if name in ("good", "scale") else sh["state"]
        return {"name": name, "dtype": LEAF_DTYPES[f"'{name}'"], "sharding": sharding}
    if name == "params":
        return {"name": name, "dtype": "bfloat16", "sharding": sh["params"]}
    sharding = sh["step"] if name == "step" else sh["state"]
    return {"name": name, "dtype": LEAF_DTYPES[f"'{name}'"], "sharding": sharding}


def _atol(trial: Trial) -> float:
    """Fraction of max|expected| (see the module's docstring)."""
    name, kind = trial.extra["name"], trial.extra["kind"]
    want = np.abs(np.asarray(trial.expected, np.float64))
    top = float(want.max()) if want.size else 0.0
    if name in ("step", "good"):
        return 0.0
    if kind == "clip":
        return 1e-5
    if kind == "fp8":  # the same float32 arithmetic and one rounding: a float8 step is 2⁻³
        return 1e-6
    if kind == "scaled":
        return 1e-5 if name in ("scale", "m") else 1e-6 + 1e-3 * SCALER_HP["lr"] * _m_top(trial)
    if name == "params":  # the master's tolerance, carried through the rounding (_rtol)
        return _master_atol(trial, top)
    if name in ("m", "v"):  # the gradient's own rounding, 2⁻⁸ of it, carried into the moment
        g = float(np.max(np.abs(trial.extra["g"])))
        moved = (1 - HP["b1"]) * g if name == "m" else 2 * (1 - HP["b2"]) * g * g
        return 1e-6 + 2**-7 * moved / max(top, 1e-30)
    return _master_atol(trial, top)


def _master_atol(trial: Trial, top: float) -> float:
    """1e-6 plus 1 % of the step lr·max|m̂/(√v̂+ε)|, as a fraction of ``top``."""
    step = HP["lr"] * float(np.max(np.abs(resolved(trial.extra["direction"]))))
    return 1e-6 + 1e-2 * step / max(top, 1e-30)


PARAMS_RTOL = 2**-7
"""The bfloat16 params against the float64 master: one bfloat16 step of each element
(rounding to nearest is half a step, 2⁻⁸ of the element at most; a float32 master
within its tolerance may round the other way). 1 % of the largest element, the
tolerance before, let the params passed in through: at step sizes of lr = 0.01 the
update is within 1 % of a weight of 3."""


def _rtol(trial: Trial) -> float:
    """rtol beside :func:`_atol`: the bfloat16 params' own rounding, element by element."""
    kind = trial.extra["kind"]
    return PARAMS_RTOL if trial.extra["name"] == "params" and kind in ADAM_KINDS else 0.0


ADAM_KINDS = ("adamw", "zero1", "zero2")


def _m_top(trial: Trial) -> float:
    top = float(np.max(np.abs(np.asarray(trial.expected)))) or 1.0
    return float(np.max(np.abs(trial.extra["inputs"]["m"]))) / top


# ------------------------------------------------------------------ known mistakes


ADAMW_WORDS = {
    "bias-t": "The bias correction is one step behind: you divided by 1 − β^t with t = step, "
    "the updates made before this one. This update is number step + 1: t = step + 1.",
    "bias-t+2": "The bias correction is one step ahead: t = step + 2. The update being made is "
    "number step + 1 (step counts the updates already made).",
    "l2": "The weight decay is inside the Adam update: you added weight_decay·master to the "
    "gradient (Adam with L2), so the moments and √v̂ rescale it. AdamW's decay is decoupled: "
    "master − lr·(m̂/(√v̂ + eps) + weight_decay·master).",
    "decay-no-lr": "The weight decay is not scaled by the learning rate: master − lr·update − "
    "weight_decay·master. Decoupled decay is lr·weight_decay·master.",
    "eps-in-sqrt": "eps is inside the square root: m̂/√(v̂ + eps). Where v̂ is at or below eps (a "
    "fresh optimizer's tiny gradients: v̂ = g²) that divides by √eps = 10⁻⁴ instead of |g|, "
    "and the step shrinks a hundredfold. AdamW adds eps after the root: m̂/(√v̂ + eps).",
    "no-bias": "No bias correction: the moments start at zero, so early m and v are too "
    "small; divide m by 1 − b1^t and v by 1 − b2^t with t = step + 1.",
}


def _adam_alternatives(trial: Trial) -> list[tuple[str, np.ndarray]]:
    """Wrong results of the known AdamW and ZeRO mistakes, for the leaf being checked."""
    name, kind, ex = trial.extra["name"], trial.extra["kind"], trial.example
    if name == "step":
        return [(STEP_NOT_ADVANCED, np.asarray(ex["step"], np.float64))]
    before, g = trial.extra["before"], trial.extra["g"]
    if name == "params":  # bfloat16 params cannot tell a 10 % smaller step: the master does
        return [(STALE_PARAMS, as64(_bf16(before["master"])))] if _not_cast(trial) else []
    out: list[tuple[str, np.ndarray]] = []

    def leaf_of(result: tuple) -> np.ndarray:
        new, m, v, _ = result
        return {"params": new, "master": new, "m": m, "v": v}[name]

    def add(words: str, wrong: np.ndarray) -> None:
        if np.all(np.isfinite(wrong)):
            out.append((words, wrong))

    for variant, words in ADAMW_WORDS.items():
        if variant == "bias-t" and ex["step"] == 0:
            continue  # t = 0 divides by zero: nothing finite to match
        add(words, leaf_of(reference.adamw(before["master"], before["m"], before["v"],
                                           ex["step"], g, variant=variant)))  # fmt: skip
    if name == "master":
        add(
            "The master weights are never updated: your new state holds the master weights "
            "it came with. Update the float32 master and cast it for the params; updating "
            "the bfloat16 params themselves rounds away every change below 2⁻⁸ of a weight.",
            before["master"],
        )
    if kind in ("zero1", "zero2"):
        n, micro = ex["n"], ex["micro"]
        for factor, words in _mean_mistakes(n, micro):
            add(words, leaf_of(reference.adamw(before["master"], before["m"], before["v"],
                                               ex["step"], g * factor)))  # fmt: skip
    return out


def _not_cast(trial: Trial) -> bool:
    """The params the student returned are not bfloat16 of the master it returned (more
    than a rounding apart): only then can params equal to the old ones be a cast not made
    — a master whose update is below a bfloat16 step gives them too (issue 45 audit)."""
    master = next((v for k, v in trial.extra.get("whole", {}).items() if "'master'" in k), None)
    if master is None:
        return True
    got = as64(as_numpy(trial.output))
    cast = as64(_bf16(as_numpy(master)))
    return got.shape != cast.shape or not np.allclose(got, cast, rtol=PARAMS_RTOL, atol=0)


STEP_NOT_ADVANCED = (
    "The step counter is not advanced: your new state's step is the one it came with. It "
    "counts the updates made, this one included: return step + 1 (the next update's bias "
    "correction uses it)."
)
GOOD_NOT_ADVANCED = (
    "good is not advanced: your new scaler's good is the one it came with, after a clean "
    "step. A clean step adds 1 to it (and resets it to 0 when the scale grows)."
)
GOOD_NOT_RESET = (
    "good is not reset: your new scaler's good is the one it came with, after a skipped "
    "step. A step skipped for a non-finite gradient resets it to 0."
)
STALE_PARAMS = (
    "The params you returned are the params you were given: the master weights were "
    "updated, but the bfloat16 params were not made from them. Return bfloat16(master), "
    "the new master cast: the model computes with that copy."
)


def _mean_mistakes(n: int, micro: int) -> list[tuple[float, str]]:
    """Gradients summed where a mean is asked for: × N·M, × N, × M (when those differ from 1)."""
    said = "The step's gradient is the mean of all N·M micro-batch gradients"
    cases = [
        (n * micro, f"{said}; you summed them (N·M = {n * micro} times too large). Divide "
         "the reduce-scattered sum by N·M."),
        (n, f"{said}; you divided by M only (N = {n} times too large): the reduce-scatter "
         "adds N devices' gradients."),
        (micro, f"{said}; you divided by N only (M = {micro} times too large): each device "
         "added M micro-batches."),
    ]  # fmt: skip
    seen: set[float] = {1.0}
    kept = []
    for factor, words in cases:
        if float(factor) not in seen:
            seen.add(float(factor))
            kept.append((float(factor), words))
    return kept


def _clip_alternatives(trial: Trial) -> list[tuple[str, np.ndarray]]:
    g, max_norm, n = trial.extra["g"], trial.extra["max_norm"], trial.example["n"]
    if n == 1:
        return []
    blocks = g.reshape(n, -1)
    local = np.concatenate([reference.clip(b, max_norm) for b in blocks])
    norms = float(np.sqrt((blocks**2).sum(axis=1)).sum())
    summed = reference.clip(g, max_norm, norm=norms)
    always = g * (max_norm / trial.extra["norm"])
    return [
        (
            "You rescaled the gradient to norm max_norm although its norm is below it: "
            "clipping only shrinks. g · max_norm / max(‖g‖, max_norm) leaves a gradient "
            "whose norm is at most max_norm as it is (jnp.maximum, not a plain division).",
            always,
        ),
        _local_norm(trial, local),
        (
            "You added the devices' norms: norms do not add (√a + √b ≥ √(a + b)), squares do. "
            "psum the sum of squares, then take one square root.",
            summed,
        ),
    ]


def _local_norm(trial: Trial, local: np.ndarray) -> tuple[str, np.ndarray]:
    """Values clipped slice by slice. Where each slice's own clip leaves it as it is (the
    "between" case) they are the gradient unclipped, which a norm too small for any reason
    gives too: the slice's own norm is named only where the program all-reduces nothing
    (measured in its HLO, issue 45 §5); with an all-reduce, what the values show is said,
    and the mean of squares only as the norm ‖g‖/√N it would give, measured against max_norm."""
    kinds = trial.comms.kinds() if trial.comms is not None else set()
    if "all-reduce" not in kinds:
        return (
            "You clipped each device's slice by its own norm: each device's norm is that of "
            "Ψ/N elements, smaller than the whole gradient's. All-reduce the sum of squares "
            "(lax.psum(jnp.sum(g * g), 'data')) and take the square root of the total.",
            local,
        )
    n, norm, max_norm = trial.example["n"], trial.extra["norm"], trial.extra["max_norm"]
    mean, top = norm / np.sqrt(n), float(np.max(trial.extra["local"]))
    readings = []
    if mean <= max_norm:
        readings.append(f"a mean of the squares, lax.pmean, gives ‖g‖/√N = {mean:.4g}")
    if top <= max_norm:  # measured: the largest slice's norm, and so each slice's, fits
        readings.append(f"the largest slice's norm, lax.pmax of the devices' norms, is "
                        f"{top:.4g}, and a device's own slice's at most that")  # fmt: skip
    fits = f" ({'; '.join(readings)})" if readings else ""
    return (
        Behaviour(
            f"Your program all-reduces, but the gradient came back as it came, though its "
            f"norm over every device is {norm:.4g}, above max_norm = {max_norm:.4g}: clipped, "
            f"it is scaled by max_norm/‖g‖ = {max_norm / norm:.4g}. So either the norm your "
            f"program compared with max_norm was at most max_norm{fits}, or the factor it "
            "applied was 1."
        ),
        local,
    )


def _scaled_alternatives(trial: Trial) -> list[tuple[str, np.ndarray]]:
    name, ex, d = trial.extra["name"], trial.example, trial.extra["inputs"]
    if name == "good":
        skipped = not bool(np.all(np.isfinite(as64(d["grads"]))))
        return [
            (GOOD_NOT_RESET if skipped else GOOD_NOT_ADVANCED, np.asarray(ex["good"], np.float64))
        ]
    if name not in ("master", "m", "scale"):
        return []
    grads, master, m = as64(d["grads"]), as64(d["master"]), as64(d["m"])
    scale, k, good = float(d["scale"]), ex["interval"], ex["good"]
    out: list[tuple[str, np.ndarray]] = []

    def add(words: str, result: tuple) -> None:
        wrong = np.asarray(result[("master", "m", "scale").index(name)], np.float64)
        if np.all(np.isfinite(wrong)):
            out.append((words, wrong))

    skip = not bool(np.all(np.isfinite(grads)))
    if name == "scale":
        if not skip:
            add(
                f"The scale grew one clean step early: good was {good} before this step and "
                f"growth_interval is {k}, so this clean step makes good {good + 1}, and the "
                "scale doubles only when good reaches growth_interval. Yours doubled at "
                f"{good + 1} = growth_interval − 1: compare the count after this step "
                "(good + 1) with growth_interval once.",
                reference.loss_scaled(master, m, grads, scale, good + 1, k),
            )  # fmt: skip
        return out
    add(
        "The loss scale is not undone before the update: the gradients you were given are "
        "those of scale·loss. Divide them by scale (in float32) before they reach the moments.",
        reference.loss_scaled(master, m, grads, scale, good, k, unscale=False),
    )  # fmt: skip
    if skip:
        add(
            "A skipped step still advanced the momentum (m ← momentum·m): a step skipped for "
            "an overflow must leave the whole optimizer state as it was.",
            (master, SCALER_HP["momentum"] * m),
        )
    else:
        narrow = (d["grads"].astype(np.float16) / np.float16(scale)).astype(np.float64)
        add(
            "You unscaled in float16: grads / scale rounds to float16, whose smallest "
            "subnormal is 6·10⁻⁸, so small gradients become 0 — what the loss scale was there "
            "to prevent. Convert to float32 first, then divide.",
            reference.loss_scaled(master, m, narrow, 1.0, good, k),
        )
    return out


def _fp8_alternatives(trial: Trial) -> list[tuple[str, np.ndarray]]:
    w, n = trial.extra["w"], trial.example["n"]
    amax = float(np.max(np.abs(w)))
    local = _own_amax_seen_by_first_device(w, n)
    summed = reference.fp8_round_trip(w, float(np.abs(w).reshape(n, -1).max(axis=1).sum()))
    scale = np.float32(reference.E4M3_MAX) / np.float32(amax)
    kept = reference.fp8_round_trip(w) * scale
    return [
        (
            "Each device scaled by its own slice's amax: the scale must be one for the whole "
            "tensor, from lax.pmax of every device's max |w|, or the gathered blocks are "
            "dequantised with scales their receivers do not know.",
            local,
        ),
        (
            "You added the devices' amaxes (a psum): the scale is then too small and the "
            "values use fewer of float8's levels. The amax of the whole tensor is the max "
            "of the devices' maxima: lax.pmax.",
            summed,
        ),
        ("The scale is not undone: divide the gathered float8 values by scale.", kept),
    ]


def _own_amax_seen_by_first_device(w: np.ndarray, n: int) -> np.ndarray:
    """Each device quantises its slice with 448 / its own amax and dequantises the
    gathered blocks with that same scale of its own: what the first device returns (a
    P() result is read from it). Only a program with check_vma=False gets this far:
    with the check on, the varying scale is refused (see :func:`_diagnose`)."""
    import ml_dtypes

    blocks = np.asarray(w, np.float32).reshape(n, -1)
    scales = np.float32(reference.E4M3_MAX) / np.abs(blocks).max(axis=1).astype(np.float32)
    q = (blocks * scales[:, None]).astype(ml_dtypes.float8_e4m3fn).astype(np.float32)
    return (q / scales[0]).reshape(-1).astype(np.float64)


def _alternatives(trial: Trial) -> list[tuple[str, np.ndarray]]:
    kind = trial.extra["kind"]
    if kind == "fp8":
        return _fp8_alternatives(trial)
    if kind == "clip":
        return _clip_alternatives(trial)
    if kind == "scaled":
        return _scaled_alternatives(trial)
    return _adam_alternatives(trial)


def _leaf_hint(trial: Trial, result: CheckResult) -> str | None:
    """A leaf in the wrong dtype: what it must be kept in, and why; a fresh optimizer's
    step that is not finite: what 1 − β^t is then."""
    name = trial.extra["name"]
    if "returned dtype" not in result.message:
        out = np.asarray(trial.output, np.float64) if hasattr(trial.output, "shape") else None
        fresh = trial.extra["kind"] in ("adamw", "zero1", "zero2") and trial.example["step"] == 0
        if fresh and out is not None and _as_t_equals_step(trial, out):
            return (
                f"Your {name} is not finite on a fresh optimizer (step = 0), where the moments "
                "are zero, at exactly the elements where an update with t = step is: 1 − β^t "
                "is 0 for t = 0, so a bias correction with t = step divides by zero. This "
                "update is number step + 1: t = step + 1."
            )
        return _known_mistake(trial, out) if out is not None else None
    if name in ("m", "v"):
        return (
            f"The moments are kept in {np.asarray(trial.output).dtype}: Adam's moments must be "
            "float32. v holds squares of small gradients (bfloat16 keeps 8 bits: v's updates "
            "of (1 − b2)·g² = 0.001·g² round away), and √v divides every step."
        )
    if name == "master":
        return "The master weights must stay float32: they are the copy that keeps small updates."
    if name == "params":
        return "Return the params in bfloat16: bfloat16(master), the model's compute copy."
    return None


def _as_t_equals_step(trial: Trial, out: np.ndarray) -> bool:
    """The output is not finite at exactly the elements where the reference's update with
    t = step (``bias-t``) is: measured, not assumed from a non-finite value alone (a v
    of unsquared gradients takes the square root of negatives too)."""
    name, before, g = trial.extra["name"], trial.extra.get("before"), trial.extra.get("g")
    if np.all(np.isfinite(out)) or before is None or g is None or name == "step":
        return False
    new, m, v, _ = reference.adamw(before["master"], before["m"], before["v"],
                                   trial.example["step"], g, variant="bias-t")  # fmt: skip
    wrong = {"params": new, "master": new, "m": m, "v": v}.get(name)
    return wrong is not None and np.shape(wrong) == out.shape and bool(
        np.array_equal(np.isfinite(out), np.isfinite(wrong)))  # fmt: skip


def _known_mistake(trial: Trial, out: np.ndarray) -> str | None:
    """The words of the known mistake whose result the output equals everywhere: within the
    check's own tolerance, or that fraction of the wrong result's size (a mistake's result
    may be far larger or smaller than the right one). A mistake whose result this example
    cannot tell from the right one is never named."""
    right = np.asarray(trial.expected, np.float64)
    want = np.abs(right)
    top = float(want.max()) if want.size else 0.0
    frac, rtol = _atol(trial), _rtol(trial)
    for words, wrong in _alternatives(trial):
        wrong = np.asarray(wrong, np.float64)
        if wrong.shape != out.shape or not wrong.size:
            continue
        if np.all(np.abs(wrong - right) <= frac * top + rtol * want):
            continue  # this example cannot tell that mistake from the right answer
        atol = max(frac * top, frac * float(np.max(np.abs(wrong))))
        if np.all(within(out, wrong, atol, rtol)):  # an infinite result matches only inf
            return words
    return None


HINTED_LEAVES = {"adamw": ("master", "m", "v", "params", "step"),
                 "zero1": ("master", "m", "v", "params", "step"),
                 "zero2": ("master", "m", "v", "params", "step"),
                 "scaled": ("master", "m", "scale", "good"), "clip": ("",), "fp8": ("",)}  # fmt: skip
"""The leaves whose values can name a known mistake, in the order they are tried (the
params last: a wrong master shows in them too)."""


def _trial_mistake(trial: Trial) -> str | None:
    """The known mistake the whole output shows (in the leaves that can tell), whichever
    leaf failed first: a wrong master weight names it even when the bfloat16 params,
    checked first, are off too."""
    import jax

    try:
        got = dict(
            (jax.tree_util.keystr(p), leaf)
            for p, leaf in jax.tree_util.tree_flatten_with_path(trial.output)[0]
        )
        want = jax.tree_util.tree_flatten_with_path(trial.expected)[0]
    except Exception:  # a malformed output: the checks say what is wrong with it
        return None
    if trial.extra["kind"] == "scaled" and (words := _non_finite_applied(trial, got)):
        return words
    for name in HINTED_LEAVES[trial.extra["kind"]]:
        for path, expected in want:
            where = jax.tree_util.keystr(path)
            if (name and _leaf(where) != name) or where not in got:
                continue
            out = np.asarray(got[where]).astype(np.float64)
            extra = {**trial.extra, **_leaf_extra(trial, where), "whole": got}
            leaf = Trial(trial.example, got[where], expected, extra=extra, comms=trial.comms)
            if out.shape == np.shape(expected) and (words := _known_mistake(leaf, out)):
                return words
    return None


def _non_finite_applied(trial: Trial, got: dict[str, Any]) -> str | None:
    """What was measured when a gradient holding a nan and no inf, or an inf and no nan,
    reached the state: the step was not skipped (whatever the test that missed it: isinf
    alone or |g| > 65504 for the nan, isnan alone for the inf, none for either)."""
    grads = as64(trial.extra["inputs"]["grads"])
    nans, infs = int(np.isnan(grads).sum()), int(np.isinf(grads).sum())
    if bool(nans) == bool(infs):
        return None
    for where, leaf in got.items():
        name = next((n for n in ("master", "m") if f"'{n}'" in where), None)
        out = np.asarray(leaf, np.float64) if name else None
        if out is None or out.shape != grads.shape or np.all(np.isfinite(out)):
            continue
        held = f"a nan (and no inf) at {nans}" if nans else f"an inf (and no nan) at {infs}"
        missed = (
            "jnp.isinf misses nan, and a nan compares false with everything (|g| > 65504 "
            "misses it too)" if nans else "jnp.isnan misses inf"
        )  # fmt: skip
        return (
            f"The gradient held {held} element{'s' if max(nans, infs) > 1 else ''} of one "
            f"device's slice, and your {name} is not finite at "
            f"{int((~np.isfinite(out)).sum())} of its {out.size} elements: "
            f"{'a nan' if nans else 'an overflowed'} gradient was applied. The step should "
            "have been skipped: any element that is not finite, nan as well as inf, leaves "
            f"the state as it was and halves the scale. jnp.isfinite is false for both; {missed}. "
            "jnp.isfinite misses it too where the test asks whether every element is bad (all where "
            "any belongs), or where the skip is taken the wrong way round (on clean steps)."
        )
    return None


# ------------------------------------------------------------------ program checks


@dataclass(frozen=True)
class UpdatePrecision(Check):
    """No addition, subtraction, multiplication, division, square root, maximum or sum
    in a 16-bit float in the exported program: the optimizer's arithmetic is float32 (read from the program the
    student wrote, since XLA:CPU widens narrow types in the compiled one)."""

    name: str = "precision"

    def __call__(self, trial: Trial) -> CheckResult:
        narrow = sorted(
            {(c.op, c.dtype, c.size) for c in trial.program.computed
             if c.op in ARITHMETIC and c.dtype in NARROW},
            key=lambda t: -t[2],
        )  # fmt: skip
        if not narrow:
            return CheckResult(self.name, True, "the update's arithmetic is float32")
        rows = [[op, dtype, f"{size:,}"] for op, dtype, size in narrow[:6]]
        ops = ", ".join(sorted({f"{op} in {dtype}" for op, dtype, _ in narrow}))
        return CheckResult(
            self.name, False,
            f"your program computes {ops}: the optimizer's arithmetic must be float32",
            evidence=[Table(["operation", "dtype", "elements"], rows)],
            hint="Part of the update runs in a 16-bit float: convert the gradients (and "
            "anything bfloat16) to float32 first, keep the moments and the master weights "
            "float32, sum micro-batch gradients in float32, and cast to bfloat16 only the new "
            "params at the end. A bfloat16 weight cannot take an update below 2⁻⁸ of itself.",
        )  # fmt: skip


@dataclass(frozen=True)
class NoWholeGradient(Check):
    """ZeRO-2: no float32 array of Ψ elements or more is computed (read from the exported
    program): only this device's slice of the gradient is ever float32."""

    name: str = "gradient buffer"

    def __call__(self, trial: Trial) -> CheckResult:
        whole = psi(trial.example)
        big = sorted(
            {(c.op, c.size) for c in trial.program.computed
             if c.dtype == "float32" and c.size >= whole and trial.example["n"] > 1},
            key=lambda t: -t[1],
        )  # fmt: skip
        if not big:
            return CheckResult(
                self.name, True, f"no float32 array of Ψ = {whole:,} elements is computed"
            )
        rows = [[op, f"{size:,}"] for op, size in big[:6]]
        return CheckResult(
            self.name, False,
            f"your program computes float32 arrays of {big[0][1]:,} elements; Ψ = {whole:,}: "
            "a float32 copy of the whole vector",
            evidence=[Table(["operation (float32)", "elements"], rows)],
            hint="ZeRO-2 exists to drop ZeRO-1's full float32 gradient buffer (4·Ψ bytes per "
            "device): reduce-scatter each micro-batch's bfloat16 gradient first "
            "(lax.psum_scatter(g_micro, 'data', tiled=True)) and convert and accumulate only "
            "your Ψ/N slice in float32. The table names the operations that made the array.",
        )  # fmt: skip


# ------------------------------------------------------------------ communication


def ring_elements(ex: Example) -> int:
    """Elements one device sends to reduce-scatter (or all-gather) a vector of Ψ: (N−1)/N·Ψ."""
    return (ex["n"] - 1) * psi(ex) // ex["n"]


def wire_dtypes(trial: Trial, primitive: str) -> list[str]:
    """The dtypes the exported program's collectives of ``primitive`` send."""
    kind = {"reduce_scatter": REDUCE_SCATTER, "all_gather": ALL_GATHER}[primitive]
    return sorted({d for s in trial.program.collectives if s.kind == kind
                   for d in s.dtypes})  # fmt: skip


@dataclass(frozen=True)
class WireBytes(Check):
    """``kind`` runs ``count(ex)`` times and sends ``count·(N−1)/N·Ψ`` elements per device
    in ``dtype``: bytes against the ring optimum."""

    kind: str = REDUCE_SCATTER
    primitive: str = "reduce_scatter"
    count: Callable[[Example], int] = lambda ex: 1
    dtype: str = "float32"
    what: str = ""
    too_many: str = ""

    @property
    def name(self) -> str:  # type: ignore[override]
        return f"{self.kind} bytes"

    def __call__(self, trial: Trial) -> CheckResult:
        ex = trial.example
        want_n, want_el = self.count(ex), self.count(ex) * ring_elements(ex)
        want = want_el * width(self.dtype)
        got_n, got_el = trial.comms.count(self.kind), trial.comms.bytes(self.kind, 1)
        sent = wire_dtypes(trial, self.primitive)
        each = max((width(d) for d in sent), default=width(self.dtype))
        got = None if got_el is None else got_el * each
        evidence = [
            communication(trial, each),
            Table(
                [self.kind, "executions", "elements per device", "sent as", "bytes"],
                [
                    ["the ring optimum", str(want_n), f"{want_el:,}", self.dtype, f"{want:,}"],
                    ["yours", _n(got_n), _n(got_el), ", ".join(sent) or "—", _n(got)],
                ],
            ),
        ]
        if ex["n"] == 1:
            return CheckResult(self.name, True, "one device: nothing to send", evidence=evidence)
        if got is None or got_n is None:
            return CheckResult(
                self.name, False,
                f"{self.kind} bytes unknown: it sits in a loop of unknown trip count",
                evidence=evidence, hint="Loop over the micro-batches with lax.scan.",
            )  # fmt: skip
        if got == want and got_n == want_n:
            return CheckResult(
                self.name, True,
                f"{got_n} × {self.kind}, {got:,} bytes per device in "
                f"{', '.join(sent) or self.dtype} ({self.what})",
                evidence=evidence,
            )  # fmt: skip
        return CheckResult(
            self.name, False,
            f"{got_n} × {self.kind} sending {got:,} bytes per device ({', '.join(sent) or '?'}); "
            f"the ring optimum is {want_n} × {want // max(want_n, 1):,} = {want:,} bytes "
            f"({self.what})",
            evidence=evidence, hint=self._hint(ex, got_n, want_n, got_el, want_el, sent),
        )  # fmt: skip

    def _hint(self, ex: Example, got_n: int, want_n: int, got_el: int, want_el: int,
              sent: list[str]) -> str | None:  # fmt: skip
        if sent and self.dtype not in sent:
            return (
                f"Your {self.kind} sends {', '.join(sent)}; this one sends {self.dtype}. "
                + self.too_many
            )
        if got_el > want_el and got_n == want_n:
            return (
                f"Each {self.kind} carries more than Ψ = {psi(ex):,} elements: send the flat "
                "vector once, as a whole (tiled=True), not a stacked or repeated copy."
            )
        if got_n != want_n:
            return self.too_many
        return None


def _n(x: int | None) -> str:
    return "unknown" if x is None else f"{x:,}"


ALL_REDUCED = (
    "An all-reduce of the gradients: every device then holds the whole summed gradient "
    "(what plain data parallelism does) and moves 2(N−1)/N·Ψ elements, twice a "
    "reduce-scatter's. ZeRO needs each device's slice only: lax.psum_scatter(g, 'data', "
    "tiled=True)."
)


def _zero_comm_checks(kind: str) -> list[Check]:
    micro_words = (
        "once, after the micro-batches are summed" if kind == "zero1" else
        "once per micro-batch, as each gradient exists"
    )  # fmt: skip
    return [
        OnlyCollectives(
            frozenset({ALL_GATHER, REDUCE_SCATTER}),
            why="ZeRO reduce-scatters the gradients and all-gathers the new params.",
            advice=lambda k, t: ALL_REDUCED if k == ALL_REDUCE else None,
        ),
        WireBytes(
            REDUCE_SCATTER,
            "reduce_scatter",
            (lambda ex: 1) if kind == "zero1" else (lambda ex: ex["micro"]),
            RS_WIRE[1 if kind == "zero1" else 2],
            f"the gradient reduce-scattered {micro_words}",
            too_many=(
                "ZeRO-1 sums the M micro-batch gradients into one float32 buffer on each "
                "device and reduce-scatters it once."
                if kind == "zero1"
                else "ZeRO-2 reduce-scatters each micro-batch's bfloat16 gradient as soon as it "
                "exists (M reduce-scatters) and accumulates only its float32 slice."
            ),
        ),  # fmt: skip
        WireBytes(
            ALL_GATHER,
            "all_gather",
            lambda ex: 1,
            "bfloat16",
            "the new bfloat16 params gathered once",
            too_many="Gather the bfloat16 params (master.astype(jnp.bfloat16)), once: the "
            "float32 master weights stay sharded, and gathering them sends twice the bytes.",
        ),
    ]


@dataclass(frozen=True)
class OneScalarAllReduce(Check):
    """Exactly one all-reduce, of one element (from N = 2 on)."""

    what: str = "the decision"
    name: str = "all-reduce"

    def __call__(self, trial: Trial) -> CheckResult:
        if trial.example["n"] == 1:
            return CheckResult(self.name, True, "one device: nothing to reduce")
        found = [c for c in trial.comms.collectives
                 if c.kind == ALL_REDUCE and c.moves_data and c.count != 0]  # fmt: skip
        count = trial.comms.count(ALL_REDUCE)
        rows = [[c.name, _n(c.count), f"{c.operand_elements:,}"] for c in found]
        evidence = [Table(["all-reduce", "executions", "elements"], rows)]
        widest = max((c.operand_elements for c in found), default=0)
        if count == 1 and widest == 1:
            return CheckResult(
                self.name, True, f"one all-reduce of one scalar ({self.what})", evidence=evidence
            )
        if widest > 1:
            return CheckResult(
                self.name, False,
                f"an all-reduce of {widest:,} elements; {self.what} needs one scalar",
                evidence=evidence,
                hint="Reduce each device's slice to one number first (its sum of squares, or "
                "whether it holds a non-finite value), then all-reduce that scalar: the "
                "gradient itself never needs to cross devices here.",
            )  # fmt: skip
        return CheckResult(
            self.name, False,
            f"{_n(count)} all-reduces executed; {self.what} needs exactly one, of one scalar",
            evidence=evidence,
            hint="Compute everything that needs the other devices from one reduced scalar: "
            "one lax.psum, used for every decision.",
        )  # fmt: skip


# ------------------------------------------------------------------ memory


@dataclass(frozen=True)
class StateMemory(Check):
    """The compiled program's outputs per device: the bfloat16 params (2·Ψ), the state's
    share 12·Ψ/N and a 4-byte counter (the byte table), within ``SLACK`` bytes."""

    name: str = "memory"

    def __call__(self, trial: Trial) -> CheckResult:
        ex, mem = trial.example, trial.memory
        size = psi(ex)
        state = byte_table.adam_state_bytes(size, ex["n"])
        want = 2 * size + state + 4
        rows = [
            ["params (bfloat16, every device)", f"{2 * size:,}"],
            ["master + m + v (float32, 1/N each)", f"{state:,}"],
            ["step (int32)", "4"],
            ["the byte table's total", f"{want:,}"],
        ]
        if mem is None or mem.get("output") is None:
            return CheckResult(self.name, True, "memory analysis unavailable on this backend")
        got = mem["output"]
        rows.append(["yours (outputs per device)", f"{got:,}"])
        evidence = [Table(["what each device keeps", "bytes"], rows)]
        if want <= got <= want + SLACK:
            return CheckResult(
                self.name, True,
                f"{got:,} output bytes per device = 2·Ψ + 12·Ψ/N + 4 (+ {got - want} of the "
                "output table)",
                evidence=evidence,
            )  # fmt: skip
        whole = got >= 2 * size + 12 * size
        return CheckResult(
            self.name, False,
            f"{got:,} output bytes per device; the byte table says 2·Ψ + 12·Ψ/N + 4 = {want:,}",
            evidence=evidence,
            hint="The whole optimizer state is on every device (12·Ψ bytes): return master, m "
            "and v sharded P('data'), each device its own Ψ/N slice." if whole else
            "Return exactly what the docstring asks, shaped and sharded as it says.",
        )  # fmt: skip


SLACK = 256
"""Bytes of the output tuple's own table (8 per output on XLA:CPU) and alignment."""


# ------------------------------------------------------------------ the report


def _times(count: int, what: str) -> str:
    return f"{count} {what}{'' if count == 1 else 's'}"


def stage_collectives(stage: int, micro: int) -> dict[str, int]:
    """How many reduce-scatters and all-gathers of one unit, (N−1)/N·Ψ elements each, one
    step of ZeRO stage ``stage`` (0: none) runs with ``micro`` micro-batches. No sharding's
    all-reduce counts as a reduce-scatter and an all-gather (what a ring runs)."""
    scatters = micro if stage >= 2 else 1
    return {"reduce-scatter": scatters, "all-gather": 2 * micro if stage == 3 else 1}


RS_WIRE = {1: "float32", 2: "bfloat16", 3: "bfloat16"}
"""The dtype each stage's reduce-scatter sends in this lesson's mix: ZeRO-1's float32
buffer, ZeRO-2's (and ZeRO-3's) bfloat16 gradient of each micro-batch. Every all-gather
sends the bfloat16 params."""


def stage_rows(
    ex: Example,
    measured: tuple[int | None, int | None] = (None, None),
    counts: tuple[int | None, int | None] = (None, None),
) -> list[list[str]]:
    """Per ZeRO stage, for the example's Ψ, N and M micro-batches in this lesson's mix:
    the bytes each device keeps (the byte table) and the elements it sends per step (the
    ring model, in units of (N−1)/N·Ψ). None and ZeRO-1 reduce once, after the M
    micro-batches are summed: 2 units. ZeRO-2 reduce-scatters each micro-batch: M + 1.
    ZeRO-3 as lesson 7 builds it gathers the params for each micro-batch's forward and
    again for its backward, and reduce-scatters each micro-batch's gradient: 3·M (for
    M = 1, 3 against 2: what ``tests/test_l15.py`` measures on lesson 7's reference).
    ``measured``: (reduce-scatter, all-gather) elements of this exercise's program;
    ``counts``: how many of each it ran."""
    n, size, micro = ex["n"], psi(ex), ex.get("micro", 1)
    unit = ring_elements(ex)
    sends = {s: sum(stage_collectives(s, micro).values()) * unit for s in range(4)}
    once = "reduce-scatter + all-gather"
    how = {0: "all-reduce", 1: once,
           2: f"{_times(micro, 'reduce-scatter')} + all-gather",
           3: f"{_times(2 * micro, 'all-gather')} + {_times(micro, 'reduce-scatter')}"}  # fmt: skip
    rows = [
        [f"ZeRO-{s}" if s else "none", f"{byte_table.per_device(byte_table.THIS_LESSON, s, n) * size:,.0f}",
         how[s], f"{sends[s]:,}"]
        for s in range(4)
    ]  # fmt: skip
    rs, ag = measured
    if rs is not None and ag is not None:
        rs_n, ag_n = counts
        ran = (
            once if rs_n is None or ag_n is None
            else f"{_times(rs_n, 'reduce-scatter')} + {_times(ag_n, 'all-gather')}"
        )  # fmt: skip
        rows.append([f"yours (ZeRO-2), M = {micro}", "", ran, f"{rs + ag:,}"])
    return rows


STAGE_COLUMNS = ["stage", "bytes kept per device", "collectives per step", "elements sent"]


def _explain_stages(trials: list[Trial]) -> list[Any]:
    """The byte table and the step's collectives by stage, for the largest example that
    ran, with what this program sent beside them."""
    trial = max(trials, key=lambda t: (t.example["n"], psi(t.example)))
    ex = trial.example
    comms = trial.comms
    measured = (
        (comms.bytes(REDUCE_SCATTER, 1), comms.bytes(ALL_GATHER, 1)) if comms else (None, None)
    )
    counts = (comms.count(REDUCE_SCATTER), comms.count(ALL_GATHER)) if comms else (None, None)
    return [
        Note(
            f"ZeRO by stage for Ψ = {psi(ex):,} parameters on N = {ex['n']} devices, "
            f"M = {ex.get('micro', 1)} micro-batches per step ({byte_table.THIS_LESSON.name}: "
            f"{byte_table.THIS_LESSON.total} bytes per parameter; ZeRO-3 as lesson 7 builds it, the "
            "params gathered for each micro-batch's forward and again for its backward)"
        ),
        Table(STAGE_COLUMNS, stage_rows(ex, measured, counts)),
    ]


# ------------------------------------------------------------------ errors


def _diagnose(kind: str) -> Callable[[BaseException, Example, list[Example]], str | None]:
    def diagnose(exc: BaseException, ex: Example, passed: list[Example]) -> str | None:
        found = vma.read(exc)
        if found is None or found.kind != vma.OUT_SPECS or not found.outputs:
            return None
        paths = " ".join(o.path for o in found.outputs)
        if kind == "scaled" and ("scale" in paths or "good" in paths):
            return (
                "The new scale varies over 'data': each device decided from its own slice "
                "whether the gradient overflowed. One device's inf must skip the step "
                "everywhere: all-reduce the flag (lax.psum of 1.0 where this slice has a "
                "non-finite value) and decide from the total."
            )
        if kind == "fp8":
            return (
                "The gathered weights have out_specs P() but vary over 'data'. One of two "
                "things varies: the scale, if amax is this device's own max |w| (the amax "
                "must be the whole tensor's, the same on every device: lax.pmax of every "
                "device's max over 'data'; a psum of them is too large), or the gathered "
                "float8 values, if lax.all_gather was called without to='invarying'."
            )
        if kind in ("zero1", "zero2") and "[0]" in paths:
            return (
                "The new params (output [0]) have out_specs P() but vary over 'data': gather "
                "the bfloat16 slices with lax.all_gather(..., 'data', tiled=True, "
                "to='invarying'), which says the result is the same on every device."
            )
        return None

    return diagnose


# ------------------------------------------------------------------ exercises


def _quantities(trial: Trial) -> dict[str, float]:
    """The bias corrections of this example's update t = step + 1, for a factor the
    relations name (issue 45 §3): m or v kept bias-corrected is 1/(1 − βᵗ) times too large."""
    if trial.extra.get("kind") not in ("adamw", "zero1", "zero2"):
        return {}
    t = trial.example["step"] + 1
    return {
        f"1/(1 − b1ᵗ) = {1 / (1 - HP['b1'] ** t):.6g}, the bias correction of m at t = {t}": 1
        / (1 - HP["b1"] ** t),
        f"1/(1 − b2ᵗ) = {1 / (1 - HP['b2'] ** t):.6g}, the bias correction of v at t = {t}": 1
        / (1 - HP["b2"] ** t),
    }


def _value_checks() -> list[Check]:
    return [
        PerLeaf(
            inner=Hinted(Values(atol=_atol, rtol=_rtol, quantities=_quantities), _leaf_hint),
            leaf_extra=_leaf_extra,
            explain_failure=_trial_mistake,
        ),
        PerLeaf(
            inner=OutputSharding(expected=lambda t: t.extra["sharding"]),
            leaf_extra=_leaf_extra,
        ),
        InputsUntouched(),
    ]


def _exercise(name: str, kind: str, run: Any, strategy: Any, explicit: Any,
              checks: list[Check]) -> ExerciseSpec:  # fmt: skip
    return ExerciseSpec(
        name=name, strategy=strategy, explicit=explicit, run=run,
        checks=tuple(_value_checks() + checks), max_examples=1, diagnose_error=_diagnose(kind),
        explain=_explain_stages if kind == "zero2" else None, purpose=_purpose(kind),
    )  # fmt: skip


SCALED_PURPOSE = {
    "nan": "a nan (no inf) in the gradient: the step is skipped on every device, the scale "
    "halves and good resets to 0 (a nan is not inf and compares false with any bound)",
    "underflow": "gradients below float16's smallest subnormal, representable only scaled: "
    "unscaled after the float32 cast, and a clean step that grows the scale",
    "overflow": "an inf on one device's slice only, good 1 of 4: the step is skipped on "
    "every device and good resets to 0 (not 2: a skip is no clean step)",
}
"""The loss-scaling examples' contrasts, by case (:func:`_scaled_examples`)."""


def _purpose(kind: str) -> Callable[[Example], str | None]:
    """What each fixed example of ``kind`` is for (issue 45 §1), from the contrasts its
    examples' docstrings name."""

    def purpose(ex: Example) -> str | None:
        if kind == "adamw":
            return (
                "a fresh optimizer (step 0, t = 1): the bias correction matters most, and a "
                "quarter of the gradients are near 1e-6"
                if ex["step"] == 0
                else f"a later step (step {ex['step']}, t = {ex['step'] + 1}) on "
                f"{ex['n']} devices: moments carried from earlier steps"
            )
        if kind in ("zero1", "zero2"):
            return (
                f"N = {ex['n']} devices with M = {ex['micro']} micro-batches at step "
                f"{ex['step']}: the mean is over all N·M gradients, and ZeRO-1 and ZeRO-2 "
                "send different counts"
            )
        if kind == "clip":
            return {
                "between": "max_norm between every device's own norm and the whole norm: "
                "the whole gradient is clipped, by max_norm over the whole norm, though no "
                "device's own slice is longer than max_norm",
                "keep": "max_norm above the whole norm: the gradient must come back as it is",
                "clip": "max_norm below every norm: every slice is scaled by one factor",
            }.get(ex["case"])
        if kind == "scaled" and ex["case"] == "clean":
            short = ex["interval"] - ex["good"]
            return (f"a clean step {short} short of growing the scale (good {ex['good']} of "
                    f"growth_interval {ex['interval']}): good rises by one and the scale "
                    "stays as it is")  # fmt: skip
        if kind == "scaled":
            return SCALED_PURPOSE.get(ex["case"])
        if kind == "fp8":
            return (
                f"{ex['n']} devices, one outlier on one device sets the scale: one amax over "
                "every device (lax.pmax), not each slice's own"
            )
        return None

    return purpose


SPEC = LessonSpec(
    exercises=(
        _exercise(
            "adamw_step",
            "adamw",
            _run_adam("adamw"),
            _adamw_strategy,
            _adamw_examples,
            [
                OnlyCollectives(frozenset(), why="AdamW works element by element."),
                UpdatePrecision(),
            ],
        ),  # fmt: skip
        _exercise(
            "zero1_step",
            "zero1",
            _run_adam("zero1"),
            _zero_strategy,
            _zero_examples,
            [UpdatePrecision(), *_zero_comm_checks("zero1"), StateMemory()],
        ),
        _exercise(
            "zero2_step",
            "zero2",
            _run_adam("zero2"),
            _zero_strategy,
            _zero_examples,
            [UpdatePrecision(), *_zero_comm_checks("zero2"), NoWholeGradient(), StateMemory()],
        ),
        _exercise(
            "clip_by_global_norm",
            "clip",
            _run_clip,
            _clip_strategy,
            _clip_examples,
            [
                OnlyCollectives(frozenset({ALL_REDUCE}), why="The norm needs one scalar psum."),
                OneScalarAllReduce(what="the global norm"),
            ],
        ),  # fmt: skip
        _exercise(
            "loss_scaled_step",
            "scaled",
            _run_scaled,
            _scaled_strategy,
            _scaled_examples,
            [
                OnlyCollectives(frozenset({ALL_REDUCE}), why="Only the overflow flag crosses."),
                OneScalarAllReduce(what="the skip decision"),
            ],
        ),  # fmt: skip
        _exercise(
            "fp8_all_gather",
            "fp8",
            _run_fp8,
            _fp8_strategy,
            _fp8_examples,
            [
                OnlyCollectives(
                    frozenset({ALL_REDUCE, ALL_GATHER}),
                    why="One scalar amax, then the float8 weights.",
                ),
                OneScalarAllReduce(what="the amax"),
                WireBytes(
                    ALL_GATHER,
                    "all_gather",
                    lambda ex: 1,
                    "float8_e4m3fn",
                    "the weights gathered once, one byte each",
                    too_many="Quantise before you gather: (w_slice · scale)"
                    ".astype(jnp.float8_e4m3fn), then lax.all_gather the float8 slice; "
                    "gathering float32 and quantising after sends four times the bytes.",
                ),
            ],
        ),  # fmt: skip
    ),
    # benchmarks/fast_compile.py --only 15: 45 programs (solution and catalogue), collectives
    # and memory identical under both options; compile 25.1 → 19.8 s (level 0), 29.0 → 18.3 s
    # (emitters), on a machine at load ~15
    compiler_options=FAST_COMPILE,
)
