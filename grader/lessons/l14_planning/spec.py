"""Grading spec for lesson 14: planning a training run at scale.

Graded like lesson 3: every function is pure, so the grader holds each answer
against its own formula (:mod:`grader.expected.l14_planning.cost`, never
solutions/; hidden from the student's process) on explicit and
hypothesis-drawn models and clusters, awkward ones included (heads not
divisible by 8, prime layer counts, a single node, a partial node). Integers
exactly, floats within 1e-9 relative; a dict of terms term by term.

``best_plan`` is held against an exhaustive search under the reference cost
model (``cost.ranked``), ties broken by ``cost.tie_key``. A wrong
plan is named by the rule it breaks (tp across nodes, n_micro < pp …), or by
its memory (more than HBM), or shown beside the best one with every term of
both, and the term that decided.

A wrong answer is held against the values known mistakes give on the same
example (``grader.expected.l14_planning.suspects``); a match names the mistake, otherwise the message
says what was measured. Examples are plain fields, so ``--example`` repeats
one: ``model`` = L×D×F×N×K×H×V×S, ``chip`` a preset (``toy`` has round
figures the student's presets lack), ``chips``, ``node`` (chips per node),
``plan`` = dp×fsdp×tp×pp×n_micro, ``remat``, ``batch`` (sequences).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from hypothesis import strategies as st

from grader.checks import relate
from grader.checks.scalar import PROBES, RAISES, Scalar, answers_on, close, fmt
from grader.evidence import Note, Table
from grader.later import expected
from grader.lessons.l14_planning.records import (
    GRADS,
    HARDWARE,
    MEMORY_KEYS,
    MODELS,
    REMAT,
    TIME_KEYS,
    Hardware,
    Model,
    Plan,
)
from grader.results import CheckResult
from grader.runtime import Runtime, call_pure
from grader.spec import Check, Context, Example, ExerciseSpec, LessonSpec, Trial

cost, suspects, explain = (expected(f"l14_planning.{n}") for n in ("cost", "suspects", "explain"))
"""The grader's side (``grader/expected/l14_planning/``, hidden from the student's
process, which imports this module): imported when first used, in the worker."""

CHIPS = {
    **HARDWARE,
    "toy": Hardware("toy", 1, 1, 1e12, 16e9, 1e9, 1e-5, 1e8, 1e-4),
    "toy-1228800": Hardware("toy-1228800", 1, 1, 1e12, 1_228_800, 1e9, 1e-5, 1e8, 1e-4),
    "ideal": Hardware("ideal", 1, 1, 1e12, 16e9, 1e30, 0.0, 1e30, 0.0),
    "free-compute": Hardware("free-compute", 1, 1, 1e30, 16e9, 1e9, 1e-5, 1e8, 1e-4),
}
"""The presets, and toy chips with round figures (their names are not in the student's
HARDWARE): ``toy``; ``toy-1228800``, whose HBM is exactly what the best plan of
``TIGHT`` needs (every term a whole number of bytes, so any order of summing gives it
exactly); ``ideal``, whose links cost nothing (1e30 B/s, no latency), so plans that
differ only in how they communicate tie and the tie-break decides; ``free-compute``, whose
compute costs nothing (1e30 FLOP/s) and links what ``toy``'s cost, so a plan with remat ties
the same plan without it (remat only adds compute, and tp = 1 adds no all-reduce)."""

PRESETS = {
    (m.layers, m.d_model, m.d_ff, m.heads, m.kv_heads, m.head_dim, m.vocab, m.seq): m
    for m in MODELS.values()
}
L8, L70, L405 = (next(k for k, m in PRESETS.items() if m.name == n) for n in MODELS)


def model_of(t: tuple) -> Model:
    t = tuple(t)
    if t in PRESETS:
        return PRESETS[t]
    return Model("model-" + "x".join(map(str, t)), *t)


def hardware_of(chip: str, chips: int, node: int) -> Hardware:
    return dataclasses.replace(CHIPS[chip], chips=chips, chips_per_node=node)


def plan_of(t: tuple, remat: str, grads: str = "bf16") -> Plan:
    return Plan(*tuple(t), remat, grads)


def show_model(m: Model) -> str:
    return m.name if m.name in MODELS else (
        f"Model(L={m.layers}, D={m.d_model}, F={m.d_ff}, N={m.heads}, K={m.kv_heads}, "
        f"H={m.head_dim}, V={m.vocab}, S={m.seq})"
    )  # fmt: skip


def show_hw(h: Hardware) -> str:
    return f"{h.name}×{h.chips} ({h.chips_per_node} per node)"


# ------------------------------------------------------------------ drawing

_LAYERS = st.sampled_from([1, 2, 3, 4, 5, 7, 8, 11, 12, 13, 16, 24, 32])


@st.composite
def _models(draw) -> tuple:
    heads = draw(st.sampled_from([1, 2, 3, 4, 6, 8, 12, 14, 16, 20, 24, 32]))
    kv = draw(st.sampled_from([k for k in (1, 2, 3, 4, 8, heads) if heads % k == 0]))
    head_dim = draw(st.sampled_from([32, 64, 80, 128]))
    d = draw(st.sampled_from([256, 512, 768, 1024, 2048]))
    f = draw(st.sampled_from([2 * d, 3 * d, 4 * d, 8 * d // 3 // 64 * 64]))
    vocab = draw(st.sampled_from([1000, 32000, 51200, 128256]))
    seq = draw(st.sampled_from([128, 512, 1024, 2048]))
    return (draw(_LAYERS), d, f, heads, kv, head_dim, vocab, seq)


MODEL_TWISTS = (
    (3, 48, 96, 3, 1, 16, 100, 32),  # N·H = D, K < N, three layers
    (7, 1000, 2688, 6, 6, 160, 5000, 64),  # N·H ≠ D, K = N, seven layers
)


def _pure_models(ctx: Context):
    return st.fixed_dictionaries({"model": _models()})


def _flop_models(ctx: Context):
    return st.fixed_dictionaries(
        {"model": _models(), "tokens": st.sampled_from([1, 1000, 2**20, 10**9, 15 * 10**12])}
    )


@st.composite
def _planned(draw, with_hw: bool) -> Example:
    m = draw(_models())
    layers, heads = m[0], m[3]
    tp = draw(st.sampled_from([t for t in (1, 2, 3, 4, 8) if heads % t == 0]))
    pp = draw(st.sampled_from([p for p in (1, 2, 3, 4) if layers % p == 0]))
    dp, fsdp = draw(st.sampled_from([1, 2, 3])), draw(st.sampled_from([1, 2, 4]))
    n_micro = draw(st.sampled_from([1, 2, 4, 8]))
    batch = dp * fsdp * n_micro * draw(st.sampled_from([1, 2, 3]))
    ex: Example = {"model": m, "plan": (dp, fsdp, tp, pp, n_micro),
                   "remat": draw(st.sampled_from(REMAT)), "batch": batch}  # fmt: skip
    if not with_hw:
        ex["grads"] = draw(st.sampled_from(sorted(GRADS)))
    if with_hw:
        ex = {"model": m, "chip": draw(st.sampled_from(sorted(CHIPS))),
              "chips": dp * fsdp * tp * pp, "node": draw(st.sampled_from([1, 2, 4, 6, 8])),
              **{k: ex[k] for k in ("plan", "remat", "batch")}}  # fmt: skip
    return ex


def _memory_examples(ctx: Context):
    return _planned(False)


def _time_examples(ctx: Context):
    return _planned(True)


def _best_examples(ctx: Context):
    @st.composite
    def example(draw) -> Example:
        m = draw(_models())
        chips = draw(st.sampled_from([1, 2, 3, 4, 6, 8, 12, 16]))
        node = draw(st.sampled_from([1, 2, 4, 6, 8]))
        batch = draw(st.sampled_from([1, 2, 4, 6, 8, 12, 16]))
        return {"model": m, "chip": draw(st.sampled_from(sorted(CHIPS))), "chips": chips,
                "node": node, "batch": batch}  # fmt: skip

    return example()


# ------------------------------------------------------------------ param_count and train_flops


def _told(pairs: list[tuple[Example, str]]) -> Callable[[Example], str | None]:
    """What a fixed example is for (issue 45 §1): the sentence paired with it, found by
    equality (None for a drawn one)."""
    return lambda ex: next((said for fixed, said in pairs if fixed == ex), None)


PARAMS_PURPOSE = {
    L8: "LLaMA-3-8B as published: K = 8 key/value heads for N = 32 query heads, N·H = D, "
    "untied embeddings (2·D·V): P = 8,029,995,008",
    L70: "LLaMA-3-70B as published: K = 8 key/value heads for N = 64 query heads, N·H = D, "
    "untied embeddings: P = 70,552,387,584",
    L405: "LLaMA-3-405B as published: K = 8 key/value heads for N = 128 query heads, 126 "
    "layers, N·H = D: P = 405,849,243,648",
    (1,) * 8: "every dimension 1: each matrix counts once, P = 2·1·1 + 1·(2·1·1·(1 + 1) + "
    "3·1·1) = 9",
    MODEL_TWISTS[0]: "three layers, N·H = 3·16 = 48 = D, K = 1 key/value head for N = 3 query "
    "heads: P = 69,504",
    MODEL_TWISTS[1]: "seven layers, N·H = 6·160 = 960 ≠ D = 1000, K = N = 6 (plain multi-head): "
    "W_q and W_o are D×(N·H), P = 93,328,000",
}
"""What each fixed example of param_count is for, by its model (issue 45 §1)."""

FLOPS_PURPOSE = {
    L70: "LLaMA-3-70B on its 15·10¹² training tokens: 7.32·10²⁴ FLOPs, the attention term "
    "12·L·N·H·S·T 13 % of them",
    L8: "LLaMA-3-8B on 2²⁰ tokens of sequences of S = 8192: the attention term 12·L·N·H·S·T is "
    "21 % of the total",
    (1,) * 8: "every dimension 1 and one token: 6·P·T = 6·9 = 54 and 12·L·N·H·S·T = 12, 66 in all",
    MODEL_TWISTS[0]: "three layers, K = 1 key/value head for N = 3 query heads, N·H = D, 4096 "
    "tokens: the attention term counts all N heads, 12 % of the total",
    MODEL_TWISTS[1]: "seven layers, N·H = 960 ≠ D = 1000, 4096 tokens: the attention term "
    "12·L·N·H·S·T has N·H = 960, 0.9 % of the total",
}
"""What each fixed example of train_flops is for, by its model (issue 45 §1)."""


def _params_formula(model: tuple) -> str:
    m = model_of(model)
    return (
        f"2·D·V + L·(2·D·H·(N + K) + 3·D·F) = 2·{m.d_model}·{m.vocab} + {m.layers}·"
        f"(2·{m.d_model}·{m.head_dim}·({m.heads} + {m.kv_heads}) + 3·{m.d_model}·{m.d_ff})"
    )


PARAM_COUNT = Scalar(
    "param_count", int, _pure_models,
    explicit=({"model": L8}, {"model": L70}, {"model": L405}, {"model": (1,) * 8},
              *({"model": t} for t in MODEL_TWISTS)),
    answer=lambda model: cost.param_count(model_of(model)),
    args=lambda model: (model_of(model),),
    call=lambda model: f"param_count({show_model(model_of(model))})",
    formula=_params_formula,
    suspects=lambda model: suspects.params(model_of(model)),
    terms=lambda model: suspects.params_terms(model_of(model)),
    quantities=lambda model: suspects.params_quantities(model_of(model)),
    max_examples=12,
    purpose=lambda ex: PARAMS_PURPOSE.get(ex["model"]),
)  # fmt: skip


def _flops_formula(model: tuple, tokens: int) -> str:
    m = model_of(model)
    p = cost.param_count(m)
    return (
        f"6·P·T + 12·L·N·H·S·T = 6·{p}·{tokens} + 12·{m.layers}·{m.heads}·{m.head_dim}·"
        f"{m.seq}·{tokens} (model FLOPs, PaLM's convention)"
    )


TRAIN_FLOPS = Scalar(
    "train_flops", float, _flop_models,
    explicit=({"model": L70, "tokens": 15 * 10**12}, {"model": L8, "tokens": 2**20},
              {"model": (1,) * 8, "tokens": 1}, *({"model": t, "tokens": 4096} for t in MODEL_TWISTS)),
    answer=lambda model, tokens: cost.train_flops(model_of(model), tokens),
    args=lambda model, tokens: (model_of(model), tokens),
    call=lambda model, tokens: f"train_flops({show_model(model_of(model))}, tokens={tokens})",
    formula=_flops_formula,
    suspects=lambda model, tokens: suspects.flops(model_of(model), tokens),
    terms=lambda model, tokens: suspects.flops_terms(model_of(model), tokens),
    quantities=lambda model, tokens: suspects.flops_quantities(model_of(model)),
    max_examples=12,
    purpose=lambda ex: FLOPS_PURPOSE.get(ex["model"]),
)  # fmt: skip


# ------------------------------------------------------------------ a dict of terms


@dataclass(frozen=True)
class Terms(Check):
    """A dict with exactly ``keys``, each within 1e-9 of the reference's; a wrong one is
    diagnosed from the suspects, term by term (the first wrong term in ``keys``' order)."""

    keys: tuple[str, ...]
    formulas: Callable[[Example], dict[str, str]]
    suspects: Callable[[Example], list]
    name: str = "values"

    def __call__(self, trial: Trial) -> CheckResult:
        got, want, call = trial.output, trial.expected, trial.extra["call"]
        if want == RAISES:
            if isinstance(got, ValueError):
                return CheckResult(self.name, True, "raised ValueError, as due")
            what = (
                f"raised {type(got).__name__}: {got}"
                if isinstance(got, BaseException)
                else f"returned {got!r}"
            )
            return CheckResult(self.name, False, f"{call} {what}; expected a ValueError "
                               f"({trial.extra['why']})",
                               hint="Check dp·fsdp·tp·pp against hw.chips first and raise "
                               "ValueError when they differ.")  # fmt: skip
        problem = _not_terms(got, self.keys)
        if problem:
            return CheckResult(self.name, False, f"{call} {problem}",
                               hint="Return a dict with exactly these keys: "
                               + ", ".join(self.keys) + " (floats).")  # fmt: skip
        got = {k: float(got[k]) for k in self.keys}
        wrong = [k for k in self.keys if not close(got[k], want[k])]
        table = Table(columns=["term", "formula", "expected", "yours"],
                      rows=[[k, self.formulas(trial.example).get(k, ""), fmt(want[k], got[k]),
                             fmt(got[k], want[k])] for k in self.keys])  # fmt: skip
        if not wrong:
            return CheckResult(self.name, True, "every term agrees with the grader's formula")
        key, hint = suspects.matching(got, want, self.keys, self.suspects(trial.example),
                                      [(theirs, right, self.suspects(other))
                                       for other, theirs, right in trial.extra.get(PROBES, ())],
                                      [(right, self.suspects(other))
                                       for other, right in trial.extra.get(AGREED, ())])  # fmt: skip
        key = key or wrong[0]
        if hint is None:
            ratio = _ratio(got[key], want[key], trial.example)
            hint = (
                f"Measured: your {key!r} is {fmt(got[key], want[key])}{ratio}; the formula is "
                f"{self.formulas(trial.example).get(key, '')}. No known mistake gives your value."
            )
        return CheckResult(
            self.name, False,
            f"{call}: {key!r} is {fmt(got[key], want[key])}; expected {fmt(want[key], got[key])}"
            + (f" (wrong terms: {', '.join(wrong)})" if len(wrong) > 1 else ""),
            evidence=[table], hint=hint,
        )  # fmt: skip


def _ratio(got: float, want: float, ex: Example) -> str:
    """``", 8× the reference's (the factor is n_micro = 8 …)"``: the ratio, named where it
    is one of the example's own quantities (its plan's and model's counts among them:
    :func:`grader.checks.relate.name_factor`), or ``""`` where the reference is 0."""
    if not want:
        return ""
    c = got / want
    extra = {f"L, the layer count ({model_of(ex['model']).layers})": model_of(ex["model"]).layers}
    if "plan" in ex:
        extra |= {
            f"{f} = {v}": v for f, v in zip(("dp", "fsdp", "tp", "pp", "n_micro"), ex["plan"])
        }
    known = relate.quantities({k: v for k, v in ex.items() if k != "plan"}, extra=extra)
    q = relate.name_factor(c, known, rel=1e-9)
    return f", {c:.4g}× the reference's" + (f" (the factor is {q.name})" if q else "")


def _not_terms(out: Any, keys: tuple[str, ...]) -> str | None:
    if not isinstance(out, dict):
        return f"returned {type(out).__name__} {out!r:.80}; expected a dict of {', '.join(keys)}"
    missing, extra = [k for k in keys if k not in out], [k for k in out if k not in keys]
    if missing or extra:
        return (f"returned a dict with keys {sorted(map(str, out))}; expected exactly "
                f"{', '.join(keys)}")  # fmt: skip
    bad = [k for k in keys if isinstance(out[k], (bool, np.bool_))
           or not isinstance(out[k], (int, float, np.integer, np.floating))]  # fmt: skip
    if bad:
        return f"returned {bad[0]!r}: {out[bad[0]]!r}; expected a number"
    return None


# ------------------------------------------------------------------ memory_per_chip


def _memory_args(ex: Example) -> tuple:
    return model_of(ex["model"]), plan_of(ex["plan"], ex["remat"], ex["grads"]), ex["batch"]


def _memory_formulas(ex: Example) -> dict[str, str]:
    m, plan, batch = _memory_args(ex)
    p, w = cost.param_count(m), cost.weight_shards(plan)
    act = ("held·tokens·L/pp·2·(4·D + (2·H·(N + K) + 3·F)/tp)" if plan.remat == "none" else
           "held·tokens·L/pp·2·D + tokens·2·(4·D + (2·H·(N + K) + 3·F)/tp)")  # fmt: skip
    tokens = cost.micro_tokens(m, plan, batch)
    return {
        "params": f"2·P/(fsdp·tp·pp) = 2·{p}/{w}",
        "grads": f"{GRADS[plan.grads]}·P/(fsdp·tp·pp) = {GRADS[plan.grads]}·{p}/{w} "
        f"(grads = {plan.grads!r})",
        "optimizer": f"12·P/(fsdp·tp·pp) = 12·{p}/{w}",
        "activations": f"{act}, held = min(n_micro, pp) = {cost.in_flight(plan)}, tokens = "
        f"B/(dp·fsdp·n_micro)·S = {tokens:g}",
        "total": "the sum of the four",
    }


def _call_memory(ex: Example) -> str:
    m, plan, batch = _memory_args(ex)
    return f"memory_per_chip({show_model(m)}, {plan}, global_batch={batch})"


AGREED = "agreed"
"""Trial extra: the other fixed examples the student's answer got right, with the right
answers: a mistake that would have got one of them wrong is not the student's."""


def _probes(fn: Callable[..., Any], ex: Example, fixed: list[Example],
            args: Callable[[Example], tuple], right: Callable[..., Any],
            keys: tuple[str, ...]) -> dict[str, list]:  # fmt: skip
    """The student's answers on the other fixed examples, with the right ones
    (:func:`grader.checks.scalar.answers_on`): the wrong ones (:data:`PROBES`) and the
    right ones (:data:`AGREED`) tell apart mistakes one example cannot
    (:func:`suspects.matching`). A malformed answer is left out."""

    def read(theirs: Any, want: dict) -> dict | None:
        return None if _not_terms(theirs, keys) else {k: float(theirs[k]) for k in keys}

    found = answers_on(fn, [e for e in fixed if e != ex], args, lambda _, a: right(*a), read)
    agrees = [all(close(theirs[k], want[k]) for k in keys) for _, theirs, want in found]
    return {PROBES: [f for f, a in zip(found, agrees) if not a],
            AGREED: [(other, want) for (other, _, want), a in zip(found, agrees) if a]}  # fmt: skip


def _run_memory(rt: Runtime, fn: Callable[..., Any], ex: Example) -> Trial:
    args = _memory_args(ex)
    out = call_pure(fn, args, False)
    probes = _probes(fn, ex, MEMORY_EXPLICIT, _memory_args, cost.memory_per_chip, MEMORY_KEYS)
    return Trial(ex, output=out, expected=cost.memory_per_chip(*args),
                 extra={"call": _call_memory(ex), **probes})  # fmt: skip


MEMORY_EXPLICIT = [
    {"model": L70, "plan": (3, 4, 8, 5, 15), "remat": "none", "batch": 180, "grads": "bf16"},
    {"model": L70, "plan": (3, 4, 8, 5, 15), "remat": "block", "batch": 180, "grads": "fp32"},
    {"model": L70, "plan": (1, 3, 8, 8, 3), "remat": "none", "batch": 9, "grads": "bf16"},
    {"model": L8, "plan": (1, 1, 1, 1, 1), "remat": "none", "batch": 1, "grads": "bf16"},
    {"model": MODEL_TWISTS[1], "plan": (3, 1, 3, 7, 2), "remat": "block", "batch": 12,
     "grads": "fp32"},
]  # fmt: skip
"""dp, fsdp, tp and pp all above 1, without and with remat, bf16 and fp32 gradients;
n_micro < pp; one chip; three heads split three ways over seven stages (seven layers).
Drawn so that the suspects differ where they first show: in the first, activations in
float32 give 2×, GPipe's n_micro micro-batches 3× (n_micro/pp = 3), tokens not divided by
fsdp 4×, all L layers on a stage 5× (pp = 5), and weights counted as elements ½ against
dp = 3 not sharding them ⅓; in the third, pp micro-batches held give 8/3× (n_micro = 3),
all L layers 8×, fsdp's 3× and float32's 2× (``tests/test_l14.py`` holds every suspect
alone where it first shows). Two coincide in the first: dp left out of the micro-batch is
3× as GPipe's is; the student's answer on the second (remat: dp's factor reaches the
recomputed block, GPipe's does not) tells them apart (the grade's probes, :func:`_probes`)."""
MEMORY_PURPOSE = [
    (
        MEMORY_EXPLICIT[0],
        "dp = 3, fsdp = 4, tp = 8, pp = 5, all above 1, n_micro = 15, no remat, "
        "bf16 gradients: weights over fsdp·tp·pp = 160, pp = 5 micro-batches held",
    ),
    (
        MEMORY_EXPLICIT[1],
        "the same plan with remat = 'block' and fp32 gradients (4 bytes a "
        "parameter): each block's input held, one block's activations recomputed",
    ),
    (
        MEMORY_EXPLICIT[2],
        "n_micro = 3 < pp = 8 (fsdp = 3, tp = 8), 9 sequences: three micro-batches "
        "in flight, held = min(n_micro, pp) = 3",
    ),
    (
        MEMORY_EXPLICIT[3],
        "one chip (every axis 1), LLaMA-3-8B, one sequence: nothing is divided, "
        "165 GB in all on the chip",
    ),
    (
        MEMORY_EXPLICIT[4],
        "seven layers over pp = 7 stages, six heads split tp = 3 ways (N·H = 960 "
        "≠ D), dp = 3, remat and fp32 gradients: held = min(2, 7) = 2",
    ),
]
"""What each fixed example of memory_per_chip is for (issue 45 §1), as the docstring above
says."""


def _explain_memory(trials: list[Trial]) -> list[Any]:
    out = []
    for t in trials[:1]:
        if isinstance(t.expected, dict):
            out.append(explain.memory_bars(_call_memory(t.example), t.expected, 80e9,
                                           note="HBM of an 80 GB chip for scale"))  # fmt: skip
    return out


# ------------------------------------------------------------------ step_time


def _time_args(ex: Example) -> tuple:
    return (model_of(ex["model"]), hardware_of(ex["chip"], ex["chips"], ex["node"]),
            plan_of(ex["plan"], ex["remat"], ex.get("grads", "bf16")), ex["batch"])  # fmt: skip


def _time_formulas(ex: Example) -> dict[str, str]:
    m, hw, plan, batch = _time_args(ex)
    where = {a: "in a node" if cost.within_node(hw, plan, a) else "across nodes"
             for a in cost.AXES}  # fmt: skip
    return {
        "compute": "train_flops·(4/3 with remat)/(chips·peak)",
        "bubble": "compute·(pp − 1)/n_micro",
        "tp": f"(4, or 6 with remat)·L/pp·n_micro all-reduces of 2·tokens·D over tp ({where['tp']})",
        "fsdp": f"n_micro·(2 all-gathers + 1 reduce-scatter) of 2·P/(tp·pp) over fsdp ({where['fsdp']})",
        "dp": f"1 all-reduce of 2·P/(fsdp·tp·pp) over dp ({where['dp']})",
        "pp": f"2·n_micro·(α + 2·tokens·D/W), {where['pp']}",
        "total": "the sum of the six (no overlap)",
        "mfu": "train_flops/(chips·peak·total)",
    }


def _call_time(ex: Example) -> str:
    m, hw, plan, batch = _time_args(ex)
    return f"step_time({show_model(m)}, {show_hw(hw)}, {plan}, global_batch={batch})"


def _run_time(rt: Runtime, fn: Callable[..., Any], ex: Example) -> Trial:
    args = _time_args(ex)
    m, hw, plan, batch = args
    n = plan.dp * plan.fsdp * plan.tp * plan.pp
    if n != hw.chips:
        out = call_pure(fn, args, True)
        return Trial(ex, output=out, expected=RAISES, extra={
            "call": _call_time(ex), "why": f"dp·fsdp·tp·pp = {n}, the cluster has {hw.chips}"})  # fmt: skip
    out = call_pure(fn, args, False)
    probes = _probes(fn, ex, TIME_EXPLICIT, _time_args, cost.step_time, TIME_KEYS)
    return Trial(ex, output=out, expected=cost.step_time(*args),
                 extra={"call": _call_time(ex), **probes})  # fmt: skip


TIME_EXPLICIT = [
    {"model": L70, "chip": "h100-sxm", "chips": 128, "node": 8, "plan": (2, 2, 8, 4, 8),
     "remat": "block", "batch": 64},
    {"model": L70, "chip": "a100-80gb", "chips": 16, "node": 8, "plan": (1, 1, 16, 1, 1),
     "remat": "none", "batch": 4},
    {"model": L8, "chip": "h100-sxm", "chips": 1, "node": 8, "plan": (1, 1, 1, 1, 1),
     "remat": "none", "batch": 2},
    {"model": L8, "chip": "h100-sxm", "chips": 64, "node": 8, "plan": (4, 16, 1, 1, 2),
     "remat": "none", "batch": 256},
    {"model": MODEL_TWISTS[1], "chip": "toy", "chips": 42, "node": 6, "plan": (2, 1, 3, 7, 7),
     "remat": "none", "batch": 28},
    {"model": MODEL_TWISTS[0], "chip": "toy", "chips": 12, "node": 8, "plan": (2, 3, 2, 1, 2),
     "remat": "none", "batch": 24},
    {"model": L8, "chip": "h100-sxm", "chips": 64, "node": 8, "plan": (2, 2, 8, 1, 1),
     "remat": "none", "batch": 8},
    {"model": L70, "chip": "h100-sxm", "chips": 128, "node": 8, "plan": (2, 2, 8, 4, 8),
     "remat": "block", "batch": 64, "grads": "fp32"},
]  # fmt: skip
"""Everything at once with remat; tp = 16 across two nodes; one chip; fsdp across nodes with
two micro-batches; a toy chip with three heads split three ways and seven stages; fsdp's
groups spanning 6 chips of a node of 8 (fewer than a node, but they do not tile it: some
straddle two nodes); a plan of 32 chips for a cluster of 64 (ValueError); the first plan
with float32 gradients (they cost memory only: the all-reduces still send bf16)."""
TIME_PURPOSE = [
    (
        TIME_EXPLICIT[0],
        "dp = 2, fsdp = 2, tp = 8, pp = 4 on 128 H100s with remat: all six terms "
        "non-zero, tp inside a node, fsdp, dp and pp across nodes",
    ),
    (
        TIME_EXPLICIT[1],
        "tp = 16 on nodes of 8 (LLaMA-3-70B on 16 A100s, no other axis split): "
        "tp's all-reduces cross nodes, over the inter-node link",
    ),
    (
        TIME_EXPLICIT[2],
        "one chip (every axis 1): the bubble and every communication term are 0, "
        "the step is compute alone and MFU = 1",
    ),
    (
        TIME_EXPLICIT[3],
        "fsdp = 16 over two nodes of 8 with n_micro = 2 (dp = 4, LLaMA-3-8B on 64 "
        "H100s): fsdp's collectives run once a micro-batch, across nodes",
    ),
    (
        TIME_EXPLICIT[4],
        "a toy chip, six heads split tp = 3 ways, pp = 7 stages with n_micro = 7 on "
        "42 chips in nodes of 6: tp and dp stay in a node, pp crosses nodes",
    ),
    (
        TIME_EXPLICIT[5],
        "fsdp = 3 over tp = 2: groups of 6 neighbouring chips in nodes of 8, which "
        "do not tile a node (some straddle two), so fsdp crosses nodes",
    ),
    (
        TIME_EXPLICIT[6],
        "dp·fsdp·tp·pp = 32 on a cluster of 64 chips: the plan leaves chips out, "
        "and a ValueError is due",
    ),
    (
        TIME_EXPLICIT[7],
        "the first example's plan with grads = 'fp32': float32 gradients cost memory only "
        "(the optimizer reads them); the gradients sent are bf16, so every time is the first "
        "example's",
    ),
]
"""What each fixed example of step_time is for (issue 45 §1), as the docstring above says."""


# ------------------------------------------------------------------ best_plan


def _best_args(ex: Example) -> tuple:
    return model_of(ex["model"]), hardware_of(ex["chip"], ex["chips"], ex["node"]), ex["batch"]


def _call_best(ex: Example) -> str:
    m, hw, batch = _best_args(ex)
    return f"best_plan({show_model(m)}, {show_hw(hw)}, global_batch={batch})"


def _run_best(rt: Runtime, fn: Callable[..., Any], ex: Example) -> Trial:
    args = _best_args(ex)
    rows = cost.ranked(*args)
    want = rows[0][0] if rows else RAISES
    out = call_pure(fn, args, want == RAISES)
    return Trial(ex, output=out, expected=want, extra={"call": _call_best(ex), "ranked": rows})


def _plan_fields_differ(a: Plan, b: Plan) -> str:
    order = ("remat", "pp", "tp", "fsdp", "n_micro")
    first = next(f for f in order if getattr(a, f) != getattr(b, f))
    return f"{first} = {getattr(a, first)!r} (yours) against {getattr(b, first)!r}"


def _tie_hint(got: Plan, want: Plan) -> str:
    hint = ("Collect every plan within 1e-9 (relative) of the fastest time, then take the "
            "first in the stated order.")  # fmt: skip
    if got.remat == "block" and want.remat == "none":
        hint += (' Its first rule is no remat: a key on the string plan.remat puts "block" '
                 'before "none"; key on plan.remat != "none" instead.')  # fmt: skip
    return hint


TIE_ORDER = ("no remat first, then the fewest stages (pp), then the smallest tp, then the "
             "smallest fsdp, then the fewest micro-batches")  # fmt: skip


@dataclass(frozen=True)
class BestPlan(Check):
    """The plan equals the exhaustive search's; a wrong one is explained by the rule it
    breaks, its memory, a tie broken another way, or every term beside the best one's."""

    name: str = "plan"

    def __call__(self, trial: Trial) -> CheckResult:
        got, want, call = trial.output, trial.expected, trial.extra["call"]
        m, hw, batch = _best_args(trial.example)
        if want == RAISES:
            empty = not cost.plans(m, hw, batch)
            why = (cost.empty_space(m, hw, batch) if empty
                   else f"no plan fits in {explain.gb(hw.hbm_bytes)} per chip")  # fmt: skip
            if isinstance(got, ValueError):
                return CheckResult(self.name, True, f"raised ValueError: {why}")
            what = (
                f"raised {type(got).__name__}: {got}"
                if isinstance(got, BaseException)
                else f"returned {got}"
            )
            hint = ("When the search space is empty, raise ValueError: no split of these chips "
                    "follows the rules, whatever the memory." if empty else
                    "When no plan of the search space fits HBM, raise ValueError instead of "
                    "returning the least bad one.")  # fmt: skip
            return CheckResult(self.name, False, f"{call} {what}; expected a ValueError: {why}",
                               evidence=[] if empty else self._smallest(m, hw, batch),
                               hint=hint)  # fmt: skip
        if not isinstance(got, Plan):
            return CheckResult(self.name, False, f"{call} returned {type(got).__name__} "
                               f"{got!r:.100}; expected a Plan",
                               hint="Return Plan(dp, fsdp, tp, pp, n_micro, remat), the "
                               "record the exercise file imports.")  # fmt: skip
        if got == want:
            return CheckResult(
                self.name, True, f"the fastest plan that fits: {explain.plan_text(got)}"
            )
        best = trial.extra["ranked"][0]
        broken = cost.broken_rule(m, hw, got, batch)
        lead = (
            f"{call} returned {explain.plan_text(got)}; the best plan is {explain.plan_text(want)}"
        )
        if broken:
            mine = self._terms(m, hw, got, batch)
            evidence = [explain.side_by_side(best, mine, hw.hbm_bytes)] if mine else []
            return CheckResult(self.name, False, f"{lead}. Yours is not in the search space: "
                               f"{broken}", evidence=evidence, hint=_rule_hint(broken))  # fmt: skip
        mine = self._terms(m, hw, got, batch)
        evidence = [explain.side_by_side(best, mine, hw.hbm_bytes)]
        known = suspects.search_matches(m, hw, batch, got, want)
        if mine[1]["total"] > hw.hbm_bytes:
            worst = max(MEMORY_KEYS[:-1], key=lambda k: mine[1][k])
            unfit = cost.ranked(m, hw, batch, fit=False)
            if unfit and unfit[0][0] == got:
                known.insert(0, "The fastest plan must also fit: keep only plans whose "
                             "memory_per_chip total is at most hw.hbm_bytes.")  # fmt: skip
            hint = _one_of(known) or (
                "By the lesson's memory_per_chip your plan does not fit. Either your search "
                "does not hold each plan to hw.hbm_bytes, or the memory it holds them to "
                "undercounts this plan (your memory_per_chip or param_count: compare them with "
                "the table; their own grades say whether they agree with the lesson's)."
            )
            return CheckResult(self.name, False, f"{lead}. Yours needs "
                               f"{explain.gb(mine[1]['total'])} per chip, more than the "
                               f"{explain.gb(hw.hbm_bytes)} of HBM (its largest term: {worst}, "
                               f"{explain.gb(mine[1][worst])})", evidence=evidence,
                               hint=hint)  # fmt: skip
        bt, yt = best[2], mine[2]
        if yt["total"] <= bt["total"] * (1 + cost.TIE):
            return CheckResult(self.name, False, f"{lead}. Both take {explain.seconds(bt['total'])}"
                               f" per step: a tie, and the order breaks it: {TIE_ORDER}; here "
                               f"{_plan_fields_differ(got, want)}", evidence=evidence,
                               hint=_tie_hint(got, want))  # fmt: skip
        fit = f" The best plan needs {explain.gb(best[1]['total'])}, within the " \
              f"{explain.gb(hw.hbm_bytes)} of HBM" + (" exactly" if close(
                  best[1]["total"], hw.hbm_bytes) else "") + "."  # fmt: skip
        return CheckResult(self.name, False, f"{lead}. Yours takes {explain.seconds(yt['total'])}"
                           f" per step, the best {explain.seconds(bt['total'])}: "
                           + explain.decided_by(bt, yt) + "." + fit,
                           evidence=[*evidence, Note(explain.decided_by(bt, yt))],
                           hint=_one_of(known) or "Both plans fit and follow the rules, so "
                           "the search missed the faster one, or costs or holds a plan "
                           "differently (a margin below hw.hbm_bytes, say): compare your "
                           "step_time and memory_per_chip on both plans with the table.")  # fmt: skip

    @staticmethod
    def _terms(m: Model, hw: Hardware, plan: Plan, batch: int) -> tuple | None:
        try:
            mem = cost.memory_per_chip(m, plan, batch)
            t = cost.step_time(m, hw, plan, batch)
        except (ValueError, ZeroDivisionError, TypeError, AttributeError):
            return None
        return plan, mem, t

    @staticmethod
    def _smallest(m: Model, hw: Hardware, batch: int) -> list:
        rows = cost.ranked(m, hw, batch, fit=False)
        if not rows:
            return [Note("The search space is empty here.")]
        plan, mem, _ = min(rows, key=lambda r: r[1]["total"])
        return [explain.memory_bars(explain.plan_text(plan), mem, hw.hbm_bytes,
                                    note="the plan that needs the least memory")]  # fmt: skip


def _one_of(hints: list[str]) -> str | None:
    if not hints:
        return None
    return hints[0] if len(hints) == 1 else "One of these: " + " Or: ".join(hints)


def _rule_hint(broken: str) -> str:
    if broken.startswith("tp"):
        return ("Tensor parallelism stays inside a node: search only tp that divide "
                "hw.chips_per_node (and the heads).")  # fmt: skip
    if broken.startswith("n_micro") and "<" in broken:
        return "Search only n_micro ≥ pp: a pipeline of p stages needs at least p micro-batches."
    return "Search only plans that follow every rule of the search space (course show 14)."


def _explain_best(trials: list[Trial]) -> list[Any]:
    for t in trials:
        rows = t.extra.get("ranked")
        if rows:
            plan, mem, _ = rows[0]
            return [Note(f"The plans that fit, fastest first · {t.extra['call']}"),
                    *explain.ranking(rows),
                    explain.memory_bars(explain.plan_text(plan), mem, _best_args(t.example)[1].hbm_bytes)]  # fmt: skip
    return []


BEST_EXPLICIT = [
    {"model": L70, "chip": "h100-sxm", "chips": 64, "node": 8, "batch": 64},
    {"model": L8, "chip": "h100-sxm", "chips": 8, "node": 8, "batch": 16},
    {"model": L405, "chip": "toy", "chips": 8, "node": 8, "batch": 8},
    {"model": MODEL_TWISTS[1], "chip": "toy", "chips": 6, "node": 6, "batch": 12},
    {"model": (1, 256, 512, 2, 2, 128, 1000, 128), "chip": "h100-sxm", "chips": 4, "node": 8,
     "batch": 8},
]  # fmt: skip
"""A realistic cluster; one node; nothing fits (ValueError); heads not divisible by 8, seven
layers, a node of six; a partial node where micro-batches tie (the order decides)."""

TRAPS = [
    {"model": L8, "chip": "tpu-v5p", "chips": 2, "node": 1, "batch": 32},
    {"model": MODEL_TWISTS[0], "chip": "toy", "chips": 6, "node": 2, "batch": 32},
    {
        "model": (32, 4096, 11008, 32, 32, 128, 32000, 4096),
        "chip": "tpu-v5p",
        "chips": 2,
        "node": 8,
        "batch": 4,
    },
]
"""Where a search that breaks a rule finds a faster plan (found by searching with each rule
off, ``tests/test_l14.py`` holds them so): tp = 2 across two one-chip nodes; n_micro = 1
< pp = 3; and the fastest plan of all (dp = 2) that does not fit HBM."""
BEST_EXPLICIT += TRAPS

TIGHT = {"model": MODEL_TWISTS[0], "chip": "toy-1228800", "chips": 8, "node": 8, "batch": 8}
"""The best plan (dp = 8, no remat) needs exactly the chip's HBM: ≤ keeps it, < does not."""
MORE_TRAPS = [
    {"model": MODEL_TWISTS[1], "chip": "ideal", "chips": 8, "node": 8, "batch": 8},
    TIGHT,
    {"model": L70, "chip": "tpu-v5p", "chips": 8960, "node": 8960, "batch": 512},
    {
        "model": (12, 2048, 8192, 32, 2, 128, 32000, 2048),
        "chip": "ideal",
        "chips": 1,
        "node": 4,
        "batch": 4,
    },
]
"""Free links: dp = 8, fsdp = 4·tp = 2 … all tie, and a search that keeps the first plan
its loops meet (dp first) or the last returns another; HBM met exactly; the scaling
book's LLaMA-3-70B on a whole v5p pod with its 4M-token batch: 8960 = 2⁸·5·7 chips and no
split follows the rules (the search space is empty: ValueError, for divisibility, not
memory); one chip where counting the embedding once (0.5 GB less) lets one micro-batch
of 4 sequences seem to fit: a wrong param_count changes the plan (to one that is not the
fastest of all, so "no memory test" does not explain it)."""
BEST_EXPLICIT += MORE_TRAPS

AS_MANY_MICRO_AS_STAGES = {"model": L70, "chip": "a100-80gb", "chips": 64, "node": 8, "batch": 8}
"""LLaMA-3-70B on eight nodes of eight A100-80GB, 8 sequences a step: the best plan is tp = 8
inside each node and pp = 8 across them, with n_micro = pp = 8 (one sequence each). No other
example's best plan has n_micro = pp > 1, so a search of n_micro > pp (for pipelines only)
passed them all; it returns fsdp = 8, tp = 8, pp = 1 here, 11 % slower (3.71 s against
3.34 s a step). On a grid of the presets (LLaMA-3 8B/70B/405B; A100, H100, v5p; 2–64 chips
in nodes of 8; batch 1–32) the best plan has n_micro = pp > 1 in 6 cases."""
BEST_EXPLICIT.append(AS_MANY_MICRO_AS_STAGES)

REMAT_TIE = {"model": MODEL_TWISTS[0], "chip": "free-compute", "chips": 4, "node": 4, "batch": 8}
"""Compute free: dp = 4 with remat takes exactly the time of dp = 4 without it, so the tie's
first rule (no remat first) decides. No other fixed example ties a plan with remat against one
without, so a search that sorts the tie by the remat string ("block" < "none") passed them all;
it returns remat = "block" here."""
BEST_EXPLICIT.append(REMAT_TIE)

BEST_PURPOSE = [
    (
        BEST_EXPLICIT[0],
        "LLaMA-3-70B on 64 H100s in nodes of 8, 64 sequences: the best plan is "
        "tp = 8 in each node, pp = 8 across nodes, n_micro = 64",
    ),
    (
        BEST_EXPLICIT[1],
        "LLaMA-3-8B on one node of 8 H100s, 16 sequences: the best plan is dp = 2, "
        "fsdp = 2, tp = 2, n_micro = 2",
    ),
    (
        BEST_EXPLICIT[2],
        "LLaMA-3-405B on 8 toy chips of 16 GB: plans exist but none fits (the "
        "smallest needs 847 GB a chip), so a ValueError is due",
    ),
    (
        BEST_EXPLICIT[3],
        "six heads and seven layers on a node of 6 toy chips, 12 sequences: pp "
        "can only be 1, and the best plan is tp = 6",
    ),
    (
        BEST_EXPLICIT[4],
        "one layer on 4 chips of a node of 8, 8 sequences: dp = 4 with n_micro = 1 and with "
        "n_micro = 2 tie, and the stated order takes the fewer micro-batches, 1",
    ),
    (
        TRAPS[0],
        "nodes of one chip (LLaMA-3-8B on 2 v5p chips): tp = 2 would be faster but "
        "crosses nodes; the best plan is fsdp = 2, n_micro = 2, with remat",
    ),
    (
        TRAPS[1],
        "three layers on 6 toy chips in nodes of 2: n_micro = 1 < pp = 3 would be faster "
        "but is outside the rules; the best plan is dp = 2, pp = 3, n_micro = 4",
    ),
    (
        TRAPS[2],
        "2 v5p chips of 95 GB, 4 sequences: the fastest plan of all, dp = 2, needs 142 GB "
        "a chip; the best that fits is tp = 2, n_micro = 2",
    ),
    (
        MORE_TRAPS[0],
        "free links (the ideal chip), 8 chips: ten plans take exactly the same time, "
        "and the stated order picks dp = 8, n_micro = 1",
    ),
    (
        TIGHT,
        "the best plan (dp = 8, no remat) needs exactly the 1,228,800 B of this chip's HBM: "
        "a plan that needs exactly HBM fits",
    ),
    (
        MORE_TRAPS[2],
        "LLaMA-3-70B on a whole v5p pod, 8960 = 2⁸·5·7 chips, 512 sequences: no "
        "split follows the rules, so a ValueError is due (divisibility, not memory)",
    ),
    (
        MORE_TRAPS[3],
        "one chip of 16 GB, 4 sequences: one micro-batch with remat needs 16.27 GB, "
        "just over HBM; the best plan is n_micro = 2 with remat (15.72 GB)",
    ),
    (
        AS_MANY_MICRO_AS_STAGES,
        "LLaMA-3-70B on eight nodes of eight A100s, 8 sequences: the best "
        "plan is tp = 8 in a node, pp = 8 across nodes and n_micro = pp = 8",
    ),
    (
        REMAT_TIE,
        "compute free (the free-compute chip), 4 chips: dp = 4 with remat takes exactly "
        "the time of dp = 4 without, and the tie's first rule picks no remat",
    ),
]
"""What each fixed example of best_plan is for (issue 45 §1), as the docstrings above say."""


# ------------------------------------------------------------------ exercises

MEMORY = ExerciseSpec(
    name="memory_per_chip",
    strategy=_memory_examples,
    explicit=lambda ctx: list(MEMORY_EXPLICIT),
    run=_run_memory,
    checks=(
        Terms(MEMORY_KEYS, _memory_formulas, lambda ex: suspects.memory(*_memory_args(ex))),
    ),  # fmt: skip
    max_examples=12,
    explain=_explain_memory,
    purpose=_told(MEMORY_PURPOSE),
)
TIME = ExerciseSpec(
    name="step_time",
    strategy=_time_examples,
    explicit=lambda ctx: list(TIME_EXPLICIT),
    run=_run_time,
    checks=(Terms(TIME_KEYS, _time_formulas, lambda ex: suspects.time(*_time_args(ex))),),
    max_examples=12,
    purpose=_told(TIME_PURPOSE),
)


def _fits_somewhere(ex: Example) -> bool:
    return bool(cost.ranked(*_best_args(ex)))


BEST = ExerciseSpec(
    name="best_plan",
    strategy=lambda ctx: _best_examples(ctx).filter(_fits_somewhere),
    explicit=lambda ctx: list(BEST_EXPLICIT),
    run=_run_best,
    checks=(BestPlan(),),
    max_examples=6,
    explain=_explain_best,
    purpose=_told(BEST_PURPOSE),
)

SPEC = LessonSpec(
    exercises=(PARAM_COUNT.spec(), TRAIN_FLOPS.spec(), MEMORY, TIME, BEST),
)
