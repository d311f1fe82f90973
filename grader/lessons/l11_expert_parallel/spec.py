"""Grading spec for lesson 11: mixture of experts over an ``('expert',)`` mesh.

Routing (``top1_dispatch``, ``top2_dispatch``). The student's router gets
``logits: [T, E]`` and a static capacity; ``dispatch`` must equal
:mod:`grader.lessons.l11_expert_parallel.routing`'s reference exactly and ``combine`` within float32
rounding of softmax (checks in :mod:`grader.lessons.l11_expert_parallel.checks`). Logits are
drawn on a coarse grid (many ties) or as normal floats, with capacities from
1 to T, so ties and dropped tokens are the common case, not the corner.

The layer (``moe_layer``). E = N experts, one per device; each device routes
its own T/N tokens with capacity C per expert. The output is held, on every
device, to the float64 reference with the same per-device drop rule;
routing-exact draws keep float rounding from flipping a choice: only the
first ``ROUTED`` dims of x feed the router (its other rows are 0), and those
dims and the router's weights lie on a ¼ grid, so every logit is a multiple
of 1/16 of magnitude ≤ 2, exact in float32 and bfloat16 whatever the
summation order; every third token has those dims at 0, so it ties all E
experts (it goes to expert 0); the explicit examples' capacities drop tokens
(tests/test_l11.py holds both). The compiled program
may hold two all-to-alls (none at N = 1) and nothing else, sending exactly
2·(N − 1)/N · |[E, C, D] buffer| per device: in float32 from the HLO; in
bfloat16, which XLA:CPU widens to float32 in transit, the HLO's element
count at the item size the traced program's collectives send.

Tolerance of the layer: ``|y − ref| ≤ SAFETY·u·√K·max|ref|`` with K = D + F
+ E (the expert's two matmuls and the softmax), as in
:mod:`grader.reference.training`; bfloat16 examples are held to
``BF16_SAFETY·2⁻⁸·max|ref|`` against the reference on the bfloat16 inputs.
Measured (``python benchmarks/moe_tolerance.py``; N = 2, 3, 4, 8, D 8–16,
F 16–32): the float32 reference 0.18–0.42 units of u·√K (SAFETY = 16 leaves
it under 3% of the allowance); a bfloat16 expert inside a float32 example
5951–10231 units (370× the allowance or more); bfloat16 examples 0.56–2.2
units of 2⁻⁸ over 24 examples (BF16_SAFETY = 8, i.e. 3% of max|ref|, far
below what any wrong layer below changes).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from hypothesis import strategies as st

from grader.checks import Bytes, InputsUntouched, OnlyCollectives, OutputSharding, Values, vma
from grader.checks.program import precision_hint
from grader.checks.trees import PerLeaf
from grader.checks.values import Behaviour
from grader.evidence import Evidence, ExpertLoad
from grader.later import later
from grader.lessons.l11_expert_parallel import routing as moe_routing
from grader.lessons.l11_expert_parallel.checks import AllToAllCount, Combine, Dispatch
from grader.reference import training
from grader.runtime import Runtime, StudentReturnError
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

MODULE = "l11_expert_parallel"
AXIS = "expert"
ALL_TO_ALL = "all-to-all"
ITEMSIZE = {"float32": 4, "bfloat16": 2}
ROUTED = 2
"""Dims of x the router reads; the others meet zero router weights."""
GRID = 4
"""Routed values are multiples of 1/GRID in [−1, 1]."""
TIE_EVERY = 3
"""Every TIE_EVERY-th token has its routed dims at 0: equal logits for every expert."""
BF16_SAFETY = 8.0
"""bfloat16 allowance in units of 2⁻⁸·max|ref| (see the module docstring)."""


# ------------------------------------------------------------------ routing exercises


def _dispatch_strategy(k: int) -> Callable[[Context], Any]:
    def strategy(ctx: Context):
        return st.integers(k, 8).flatmap(
            lambda e: st.integers(1, 16).flatmap(
                lambda t: st.fixed_dictionaries({
                    "t": st.just(t),
                    "e": st.just(e),
                    "capacity": st.integers(1, t),
                    "logits": st.sampled_from(["ties", "normal"]),
                    "dtype": st.sampled_from(["float32", "bfloat16"]),
                    "seed": st.integers(0, 2**16),
                })
            )
        )  # fmt: skip

    return strategy


def _dispatch_explicit(k: int) -> Callable[[Context], list[Example]]:
    """Drops with ties (the common case) and C = 1; for top-1 a single expert
    (everything goes to it, the rest dropped), for top-2 a capacity nothing
    overflows; then bfloat16 logits (combine comes back in bfloat16)."""

    def explicit(ctx: Context) -> list[Example]:
        cases = [(8, 4, 2, "ties", "float32"), (7, 3, 1, "ties", "float32")]
        cases.append((5, 1, 3, "normal", "float32") if k == 1 else (6, 3, 6, "normal", "float32"))
        cases.append((6, 3, 2, "normal", "bfloat16"))
        return [
            {"t": t, "e": e, "capacity": c, "logits": kind, "dtype": dtype, "seed": i}
            for i, (t, e, c, kind, dtype) in enumerate(cases)
        ]

    return explicit


def logits_for(ex: Example, rng: np.random.Generator) -> np.ndarray:
    """[T, E] logits in the example's dtype (bfloat16 through ml_dtypes): the
    reference routes these very values (bfloat16-rounded, exactly as the program sees
    them)."""
    import ml_dtypes  # noqa: F401 - registers bfloat16 with numpy

    shape = (ex["t"], ex["e"])
    if ex["logits"] == "ties":  # 4 values: most tokens have a tie somewhere
        drawn = (rng.integers(0, 4, shape) / 2).astype(np.float32)
    else:
        drawn = rng.standard_normal(shape).astype(np.float32)
    return drawn.astype(np.dtype(ex.get("dtype", "float32")))


def _dispatch_run(k: int) -> Run:
    def run(rt: Runtime, fn: Callable[..., Any], ex: Example) -> Trial:
        import jax

        logits = logits_for(ex, rt.rng())
        capacity = ex["capacity"]
        placed = jax.device_put(logits)
        trial = rt.compile_and_run(
            jax.jit(lambda lg: fn(lg, capacity)), (placed,), None,
            compiler_options=FAST_COMPILE, logits=logits.astype(np.float64),
        )  # fmt: skip
        _check_router_output(
            trial.output, (ex["t"], ex["e"], capacity), fn.__name__, ex.get("dtype", "float32")
        )
        trial.expected = later(moe_routing.route, logits.astype(np.float64), capacity, k)
        return trial

    return run


def _check_router_output(
    out: Any, shape: tuple[int, int, int], fname: str, logits_dtype: str = "float32"
) -> None:
    import jax

    if not (isinstance(out, (tuple, list)) and len(out) == 2):
        what = f"a {type(out).__name__}" + (
            f" of {len(out)} items" if isinstance(out, (tuple, list)) else ""
        )
        raise StudentReturnError(
            f"{fname} returned {what}; expected a pair (dispatch, combine)",
            hint="Return both tensors: `return dispatch, combine`.",
        )
    for name, a, dtype in zip(("dispatch", "combine"), out, ("bool", logits_dtype)):
        if not isinstance(a, jax.Array) or tuple(a.shape) != shape:
            got = f"shape {tuple(a.shape)}" if hasattr(a, "shape") else type(a).__name__
            raise StudentReturnError(
                f"{fname} returned {name} of {got}; expected shape {shape} = [T, E, C]",
                hint="Both tensors are [T, E, C]: one row per token, one column per expert, "
                "one entry per slot.",
            )
        if a.dtype.name != dtype and name == "combine":
            raise StudentReturnError(
                f"{fname} returned combine of dtype {a.dtype.name} for {logits_dtype} logits; "
                f"expected {dtype}, the logits' dtype",
                hint="combine keeps the logits' dtype: compute the softmax as you like (in "
                "float32 for accuracy), then cast the gates back with "
                ".astype(logits.dtype) — a float32 combine in a bfloat16 model doubles the "
                "bytes of every gate and promotes the expert outputs it multiplies to float32.",
            )
        if a.dtype.name != dtype:
            raise StudentReturnError(
                f"{fname} returned {name} of dtype {a.dtype.name}; expected {dtype}",
                hint="dispatch is a bool mask (compare with > 0, or .astype(bool)); combine "
                "keeps the logits' dtype.",
            )


DISPATCH_PURPOSE: dict[tuple[int, int, int, int, str], str] = {
    # (k, T, E, C, dtype)
    (1, 8, 4, 2, "float32"): "T = 8, E = 4, C = 2, logits on a grid of 0, ½, 1, 3/2 (ties "
    "common): a tie goes to the lowest expert, a token past its expert's 2 slots is dropped",
    (1, 7, 3, 1, "float32"): "C = 1, T = 7 tokens with tied logits over E = 3 experts: each "
    "expert keeps only the first token routed to it, at least 4 of 7 are dropped",
    (1, 5, 1, 3, "float32"): "a single expert (E = 1, C = 3): all 5 tokens choose it, tokens "
    "0, 1, 2 take its slots, tokens 3 and 4 are dropped; every gate is 1",
    (1, 6, 3, 2, "bfloat16"): "bfloat16 logits, T = 6, E = 3, C = 2: combine comes back in "
    "bfloat16, each gate the softmax of the rounded logits",
    (2, 8, 4, 2, "float32"): "top-2, T = 8, E = 4, C = 2, tied logits: slots go to every "
    "first choice, in token order, before any second choice; 16 choices for 8 slots",
    (2, 7, 3, 1, "float32"): "top-2, C = 1, T = 7 tokens with tied logits over E = 3 experts: "
    "3 slots for 14 choices, first choices served first, ties to the lowest expert",
    (2, 6, 3, 6, "float32"): "top-2, C = 6 = T: no expert overflows, every token keeps both "
    "choices, each gated by its softmax over all 3 experts (the two sum to less than 1)",
    (2, 6, 3, 2, "bfloat16"): "top-2, bfloat16 logits, T = 6, E = 3, C = 2: 12 choices for 6 "
    "slots; combine comes back in bfloat16",
}
"""What each fixed example of :func:`_dispatch_explicit` holds (issue 45 §1)."""


def _dispatch_exercise(name: str, k: int) -> ExerciseSpec:
    return ExerciseSpec(
        name=name,
        strategy=_dispatch_strategy(k),
        explicit=_dispatch_explicit(k),
        run=_dispatch_run(k),
        checks=(Dispatch(), Combine()),
        max_examples=2,
        diagnose_error=_diagnose_error,
        explain=_explain_dispatch,
        purpose=lambda ex: DISPATCH_PURPOSE.get((k, ex["t"], ex["e"], ex["capacity"], ex["dtype"])),
    )


# ------------------------------------------------------------------ the layer: examples


def _layer_strategy(ctx: Context):
    sizes = [n for n in ctx.mesh_sizes if n >= 2] or [1]
    return st.integers(2, 8).flatmap(
        lambda rows: st.fixed_dictionaries({
            "n": st.sampled_from(sizes),
            "rows": st.just(rows),
            "d": st.sampled_from([8, 16]),
            "f": st.sampled_from([16, 32]),
            "capacity": st.integers(1, max(1, rows // 2)),
            "dtype": st.sampled_from(["float32", "bfloat16"]),
            "seed": st.integers(0, 2**16),
        })
    )  # fmt: skip


def layer_explicit(ctx: Context) -> list[Example]:
    """N = 4 in float32 with drops (every wrong layer of the spec differs there);
    N = 1 (no all-to-all); N = 3 in bfloat16 (not a power of two; bytes at the
    program's item size)."""
    cases = [(4, 6, 2, "float32"), (1, 4, 2, "float32"), (3, 6, 2, "bfloat16")]
    return [
        {"n": n, "rows": rows, "d": 8, "f": 16, "capacity": c, "dtype": dtype, "seed": i}
        for i, (n, rows, c, dtype) in enumerate(cases)
        if n in ctx.mesh_sizes
    ]


def _layer_purpose(ex: Example) -> str | None:
    """What each fixed example of :func:`layer_explicit` holds (issue 45 §1)."""
    return {
        4: "N = 4 experts, one per device, float32: each device routes its own 6 tokens with "
        "C = 2 slots per expert, a dropped token's output is 0; two all-to-alls",
        1: "N = 1: the one device holds the one expert, routes its 4 tokens there, keeps "
        "tokens 0 and 1 (C = 2) and sends nothing",
        3: "N = 3 in bfloat16, not a power of two: each device routes its own 6 tokens with "
        "C = 2; the all-to-alls' bytes count at the item size sent",
    }.get(ex["n"])


def layer_inputs(ex: Example, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """x [T, D], router_w [D, E], w_in [E, D, F], w_out [E, F, D] in the example's
    dtype (numpy, bfloat16 through ml_dtypes), routing-exact (module docstring)."""
    import ml_dtypes  # noqa: F401 - registers bfloat16 with numpy

    n, d = ex["n"], ex["d"]
    params = training.draw_params(rng, n, d, ex["f"])  # [E, D, F], [E, F, D], 1/√fan-in
    x, _ = training.draw_batch(rng, n * ex["rows"], d)
    x[:, :ROUTED] = rng.integers(-GRID, GRID + 1, (len(x), ROUTED)) / GRID
    x[::TIE_EVERY, :ROUTED] = 0.0  # these tokens' logits are all 0: a tie of every expert
    router = np.zeros((d, n), np.float32)
    router[:ROUTED] = rng.integers(-GRID, GRID + 1, (ROUTED, n)) / GRID
    dtype = np.dtype(ex["dtype"])
    return {
        "x": x.astype(dtype), "router_w": router.astype(dtype),
        "w_in": params["w_in"].astype(dtype), "w_out": params["w_out"].astype(dtype),
    }  # fmt: skip


def reference(ex: Example, inputs: dict[str, np.ndarray], **variant: Any) -> np.ndarray:
    """The layer in float64 with each device's own routing (or a wrong ``variant``)."""
    return moe_routing.moe_layer(
        *(inputs[k] for k in ("x", "router_w", "w_in", "w_out")),
        groups=variant.pop("groups", ex["n"]), capacity=variant.pop("capacity", ex["capacity"]),
        **variant,
    )  # fmt: skip


def _layer_run(rt: Runtime, fn: Callable[..., Any], ex: Example) -> Trial:
    import jax
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P

    mesh = rt.mesh((ex["n"],), (AXIS,))
    inputs = layer_inputs(ex, rt.rng())
    specs = {"x": P(AXIS, None), "router_w": P(), "w_in": P(AXIS, None, None)}
    specs["w_out"] = specs["w_in"]
    args = tuple(jax.device_put(a, NamedSharding(mesh, specs[k])) for k, a in inputs.items())
    capacity = ex["capacity"]
    jitted = jax.jit(lambda x, r, a, b: fn(x, r, a, b, mesh, capacity))
    trial = rt.compile_and_run(
        jitted, args, mesh, compiler_options=FAST_COMPILE, inputs=inputs,
        dtype=ex["dtype"], sharding=NamedSharding(mesh, specs["x"]),
    )  # fmt: skip
    trial.expected = later(reference, ex, inputs)  # in the worker only
    return trial


# ------------------------------------------------------------------ the layer: checks


def _atol(trial: Trial) -> float:
    ex = trial.example
    if ex["dtype"] == "bfloat16":
        return BF16_SAFETY * 2.0**-8
    k = ex["d"] + ex["f"] + ex["n"]
    return training.SAFETY * training.U32 * float(np.sqrt(k))


def layer_mistakes(trial: Trial) -> list[tuple[str, Callable[[tuple, tuple], np.ndarray]]]:
    """Known wrong layers (as Values alternatives: shard(coord, index) → array)."""
    ex, inputs = trial.example, trial.extra["inputs"]
    n, c = ex["n"], ex["capacity"]
    known = [
        (
            "Slots were counted across all devices' tokens, as if one router saw the whole "
            f"batch: tokens on later devices find the experts full. Each device routes its own "
            f"T/N = {ex['rows']} tokens with C = {c} slots per expert (top1_dispatch inside "
            "shard_map, on the local logits), so its [E, C, D] buffer is its own.",
            dict(groups=1),
        ),
        (
            "Slots were counted across all devices' tokens with N·C slots per expert: one "
            "router over the whole batch. Each device routes its own T/N tokens with C slots "
            "per expert (top1_dispatch inside shard_map, on the local logits).",
            dict(groups=1, capacity=n * c),
        ),
        (
            "Dropped tokens came out as their input x: a token beyond the capacity gets no "
            "expert, and its output is 0 (the residual connection around the layer carries x "
            "on). Combining with the combine tensor gives that for free.",
            dict(dropped="pass"),
        ),
        (
            "The gate is applied before the expert: expert(gate·x) ≠ gate·expert(x), the "
            "expert is not linear. Send the tokens as they are and multiply the outputs by "
            "the gate when combining (einsum('tec,ecd->td', combine, results)).",
            dict(gate="before"),
        ),
        (  # two programs give it: the layer's combine, or the router's (the lesson's own)
            Behaviour(
                "Your output is each token's expert output, not weighted by its gate: either "
                "your layer combined with dispatch (combine with the combine tensor, which "
                "holds the gate where a token is dispatched), or the combine your router "
                "returned holds 1 there, where it should hold the gate softmax(logits)[t, e]."
            ),
            dict(gate="none"),
        ),
        (
            "Ties are broken toward the highest index: every third token here has all-equal "
            "logits and must go to expert 0. jnp.argmax returns the first maximum (the lowest "
            "index); jnp.argsort(...)[:, -1] returns the last.",
            dict(ties=moe_routing.HIGHEST),
        ),
        (
            "Your outputs never came back: each device combined the results its own expert "
            "computed for other devices' tokens. A second all-to-all sends the [N, C, D] "
            "results home, so row e of the buffer again holds expert e's outputs for your "
            "tokens.",
            dict(returned=False),
        ),
    ]
    known.append((
        "The gate is applied twice: the tokens were scaled by it on the way in (dispatched "
        "with combine, for instance) and the outputs again on the way out, gate·expert(gate·x). Send the "
        "tokens with dispatch, as they are, and weight the outputs once, with combine.",
        dict(gate="twice"),
    ))  # fmt: skip
    if n > 1 and max(1, c // n) != c:
        known.append((
            f"Your layer keeps the tokens that C // N = {max(1, c // n)} slots per expert "
            f"would keep, not C = {c}: capacity is already per device (each device routes its "
            f"own T/N tokens into C slots of every expert); do not divide it by N.",
            dict(capacity=max(1, c // n)),
        ))  # fmt: skip
    out = []
    for why, variant in known:
        wrong = reference(ex, inputs, **variant)
        out.append((why, lambda coord, index, w=wrong: w[index]))
    return out


@dataclass(frozen=True)
class Experts:
    """Which expert each wrong token of a device's block went through (a
    ``Values(families=…)`` family): a token's output is its gate times the expert it was routed
    to; a token whose output is exactly its gate times another expert's is told which,
    and where all such tokens went through the expert the device holds, that is said."""

    trial: Trial

    def said(self, coord: tuple, got: np.ndarray, close: Any, what: str) -> str | None:
        ex, inputs = self.trial.example, self.trial.extra["inputs"]
        i, n = coord[0], ex["n"]
        x = np.split(np.asarray(inputs["x"], np.float64), n)[i]
        r, w_in, w_out = (np.asarray(inputs[k], np.float64) for k in ("router_w", "w_in", "w_out"))
        routing = moe_routing.route(x @ r, ex["capacity"])
        outs = np.stack([moe_routing.expert(x, w_in[e], w_out[e]) for e in range(len(w_in))])
        went = {}  # wrong token → the expert its output is the gated output of
        for t, (e, kept) in enumerate(zip(routing.choice[:, 0], routing.kept[:, 0])):
            gate = routing.gates[t, e]
            if not kept or np.all(close(got[t], gate * outs[e, t])):
                continue
            alike = [o for o in range(len(outs)) if np.all(close(got[t], gate * outs[o, t]))]
            if len(alike) != 1:
                return None  # a token no expert (or more than one) explains
            went[t] = (alike[0], int(e))
        if len(went) < 2:
            return None
        t, (o, e) = next(iter(went.items()))
        first = f"first, its token {t}, row {i * len(x) + t} of x: expert {o}'s where expert {e}'s belongs"
        if all(o == i for o, _ in went.values()):
            return (f"{what}: each of its {len(went)} wrong tokens' outputs is exactly its "
                    f"gate times the output of expert {i}, the expert this device holds, not "
                    f"of the expert it was routed to ({first})")  # fmt: skip
        return (
            f"{what}: each of its {len(went)} wrong tokens' outputs is exactly its gate "
            f"times another expert's output than the one it was routed to ({first})"
        )


def _experts(trial: Trial) -> list[Experts]:
    return [Experts(trial)]


def _precision_hint(trial: Trial) -> str | None:
    return precision_hint(trial, "Keep the input's dtype (build buffers with dtype=x.dtype).")


def _itemsize(trial: Trial) -> int:
    """Bytes per element the student's collectives send (jaxpr; the widest, if they
    differ): XLA:CPU widens bfloat16 in transit, so the HLO's own element size is not
    what a GPU or TPU would move. A buffer widened to float32 by the student counts at
    4 bytes, against the optimum at the exercise's own item size."""
    import jax.numpy as jnp

    sent = [jnp.dtype(d).itemsize for s in trial.program.collectives for d in s.dtypes]
    return max(sent, default=ITEMSIZE[trial.example["dtype"]])


def buffer_bytes(ex: Example, itemsize: int) -> int:
    """|[E, C, D]|: one device's dispatch buffer."""
    return ex["n"] * ex["capacity"] * ex["d"] * itemsize


def optimum_bytes(trial: Trial) -> int:
    """2·(N − 1)/N · |[E, C, D]| in the example's dtype (an integer: E = N). Measured
    bytes count at the width the program sends (:func:`_itemsize`): a bfloat16 buffer
    widened to float32 before the all-to-all sends twice this."""
    ex = trial.example
    return 2 * (ex["n"] - 1) * buffer_bytes(ex, ITEMSIZE[ex["dtype"]]) // ex["n"]


def _collective_advice(kind: str, trial: Trial) -> str | None:
    if kind == "all-gather":
        return (
            "You all-gathered the tokens to every expert: each device receives all T tokens, "
            "though its expert needs at most N·C of them. Pack each device's tokens into an "
            "[E, C, D] buffer and lax.all_to_all it: device e receives only expert e's tokens, "
            "and a second all-to-all brings the results back."
        )
    if kind in ("all-reduce", "reduce-scatter"):
        return (
            f"An {kind} adds the experts' outputs over the devices: a token's output comes "
            "from one expert, so nothing needs adding. Send the results back with a second "
            "all-to-all, the mirror of the first."
        )
    return None


def _layer_checks() -> tuple[Check, ...]:
    return (
        PerLeaf(
            inner=Values(atol=_atol, alternatives=layer_mistakes, families=_experts),
            explain_failure=_precision_hint,
        ),
        OutputSharding(expected=lambda t: t.extra["sharding"]),
        InputsUntouched(),
        OnlyCollectives(
            frozenset({ALL_TO_ALL}),
            why="An expert layer sends each expert its tokens and the results back: two "
            "all-to-alls.",
            advice=_collective_advice,
        ),
        AllToAllCount(n_devices=lambda t: t.example["n"]),
        Bytes(
            expected=optimum_bytes,
            what="2·(N − 1)/N · |[E, C, D] buffer|",
            itemsize=_itemsize,
        ),
    )


def _diagnose_error(exc: BaseException, ex: Example, passed: list[Example]) -> str | None:
    name = type(exc).__name__
    if name in (
        "TracerArrayConversionError",
        "ConcretizationTypeError",
        "TracerBoolConversionError",
    ):
        return (
            "The grader runs your function under jax.jit, where arrays are traced, not "
            "computed: np.asarray, float(), int() or a Python if on one cannot work. Keep to "
            "jnp operations (jnp.argmax, jnp.cumsum, jax.nn.one_hot, jnp.where); only the "
            "capacity is a Python int."
        )
    found = vma.read(exc)
    if found is not None and found.kind == vma.SHARDING:
        names = [f for f, _ in vma.frames(exc)]
        routed = next((f for f in ("top1_dispatch", "top2_dispatch") if f in names), None)
        said = (
            f"You called {routed} on the global array outside shard_map"
            if routed
            else "An operation ran on the global arrays outside shard_map"
        )
        return (
            f"{said}: x is sharded over 'expert', and JAX cannot say how the result would be "
            f"sharded ({found.message}). Even where it runs, a router that sees the whole batch "
            "counts slots across every device's tokens. Route inside the shard_map body, each "
            "device on its own T/N tokens: top1_dispatch(x_rows @ router, capacity)."
        )
    if "all_to_all" in str(exc) and "divisible" in str(exc):
        return (
            "lax.all_to_all splits split_axis into N equal chunks: split the expert axis "
            "(axis 0 of the [E, C, D] buffer, E = N)."
        )
    return None


# ------------------------------------------------------------------ report material


def _load(ex: Example, routings: list[Any]) -> ExpertLoad:
    """Tokens routed and kept per expert, summed over the routing groups."""
    routed, kept = np.sum([r.load() for r in routings], axis=0).T
    return ExpertLoad(
        example=format_example(ex), capacity=ex["capacity"], groups=len(routings),
        routed=[int(v) for v in routed], kept=[int(v) for v in kept],
    )  # fmt: skip


def _explain_dispatch(trials: list[Trial]) -> list[Evidence]:
    """The first example that drops tokens (or the only one there is)."""
    trial = next((t for t in trials if not t.expected.kept.all()), trials[0])
    return [_load(trial.example, [trial.expected])]


def layer_routings(ex: Example, inputs: dict[str, np.ndarray]) -> list[Any]:
    """Each device's routing of its own tokens (the reference's)."""
    logits = np.asarray(inputs["x"], np.float64) @ np.asarray(inputs["router_w"], np.float64)
    return [moe_routing.route(b, ex["capacity"]) for b in np.split(logits, ex["n"])]


def explain_layer(trials: list[Trial]) -> list[Evidence]:
    """The largest mesh among the trials: per expert, over every device's tokens."""
    trial = max(trials, key=lambda t: t.example["n"])
    return [_load(trial.example, layer_routings(trial.example, trial.extra["inputs"]))]


SPEC = LessonSpec(
    exercises=(
        _dispatch_exercise("top1_dispatch", 1),
        ExerciseSpec(
            name="moe_layer",
            strategy=_layer_strategy,
            explicit=layer_explicit,
            run=_layer_run,
            checks=_layer_checks(),
            max_examples=1,
            diagnose_error=_diagnose_error,
            explain=explain_layer,
            purpose=_layer_purpose,
        ),
        _dispatch_exercise("top2_dispatch", 2),
    ),
)
