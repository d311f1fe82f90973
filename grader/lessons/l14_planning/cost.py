"""Lesson 14's reference cost model, written here (never imported from solutions/).

Every term of ``course/lessons/14_planning.md`` is one function, so the
grader's suspects (:mod:`.suspects`) can rebuild what a known mistake gives
by changing one piece. Lesson 3's ring model is re-stated in :func:`ring_time`
(``tests/test_l14.py`` holds it equal to lesson 3's).

Conventions (the text explains each):

* bf16 weights and gradients (2 bytes), Adam with two float32 moments and a
  float32 master copy (12 bytes per parameter);
* model FLOPs 6·P·T + 12·L·N·H·S·T (PaLM's appendix B); with ``remat="block"``
  the hardware also redoes the forward, a third of that;
* mesh order, innermost first: tp, fsdp, dp, pp. An axis's ring stays inside
  a node when one group of it (its size times the axes inside it) tiles a node;
* no overlap: the step is compute + bubble + every collective.
"""

from __future__ import annotations

from dataclasses import dataclass

from grader.lessons.l14_planning.records import REMAT, Hardware, Model, Plan

BF16 = 2
"""Bytes of a bf16 weight, gradient or activation."""
ADAM = 12
"""Bytes of optimizer state per parameter: float32 m and v, and the float32 master copy."""
TIE = 1e-9
"""Step times within this relative distance of the fastest are a tie."""
MEMORY_KEYS = ("params", "grads", "optimizer", "activations", "total")
TIME_KEYS = ("compute", "bubble", "tp", "fsdp", "dp", "pp", "total", "mfu")


# ------------------------------------------------------------------ counting


def param_count(m: Model) -> int:
    """2·D·V + L·(2·D·H·(N + K) + 3·D·F): embeddings and unembedding, q/o and k/v, SwiGLU."""
    d, h = m.d_model, m.head_dim
    return 2 * d * m.vocab + m.layers * (2 * d * h * (m.heads + m.kv_heads) + 3 * d * m.d_ff)


def attention_flops(m: Model, tokens: float) -> float:
    """12·L·N·H·S·T: Q·Kᵀ and P·V, forward and backward, the whole S×S (no causal halving)."""
    return 12 * m.layers * m.heads * m.head_dim * m.seq * tokens


def train_flops(m: Model, tokens: float) -> float:
    """Model FLOPs of training on ``tokens`` tokens: 6·P·T + 12·L·N·H·S·T."""
    return 6 * param_count(m) * tokens + attention_flops(m, tokens)


# ------------------------------------------------------------------ memory


def weight_shards(plan: Plan) -> int:
    """The axes that split the weights, their gradients and optimizer state: fsdp·tp·pp."""
    return plan.fsdp * plan.tp * plan.pp


def micro_tokens(m: Model, plan: Plan, global_batch: int) -> float:
    """Tokens of one micro-batch on one chip: B/(dp·fsdp·n_micro) sequences of S."""
    return global_batch / (plan.dp * plan.fsdp * plan.n_micro) * m.seq


def layer_bytes_per_token(m: Model, tp: int, replicated_over_tp: bool = True) -> float:
    """What one layer keeps for its backward, per token, with no remat:
    2·(4·D + (2·H·(N + K) + 3·F)/tp) bytes. The 4·D (each block's input and
    its norm's output) is whole on every tp chip; Q, K, V, the attention
    output and SwiGLU's gate, up and product are split over tp."""
    split = (2 * m.head_dim * (m.heads + m.kv_heads) + 3 * m.d_ff) / tp
    whole = 4 * m.d_model / (tp if not replicated_over_tp else 1)
    return BF16 * (whole + split)


def in_flight(plan: Plan) -> int:
    """Micro-batches whose activations a stage holds at once under 1F1B: min(n_micro, pp)."""
    return min(plan.n_micro, plan.pp)


def activation_bytes(
    m: Model,
    plan: Plan,
    global_batch: int,
    *,
    remat: str | None = None,
    held: int | None = None,
    replicated_over_tp: bool = True,
) -> float:
    """Activations on one chip (the first pipeline stage, which holds the most).

    ``none``: in_flight · tokens · L/pp · layer_bytes_per_token.
    ``block``: in_flight · tokens · L/pp · 2·D (each block's input), plus one
    layer's full activations for one micro-batch while it is recomputed.
    The keywords rebuild known mistakes (another remat, another count held).
    """
    remat = plan.remat if remat is None else remat
    held = in_flight(plan) if held is None else held
    tokens = micro_tokens(m, plan, global_batch)
    layers = m.layers / plan.pp
    full = layer_bytes_per_token(m, plan.tp, replicated_over_tp)
    if remat == "none":
        return held * tokens * layers * full
    return held * tokens * layers * BF16 * m.d_model + tokens * full


def memory_per_chip(m: Model, plan: Plan, global_batch: int) -> dict[str, float]:
    """Bytes on one chip, by term, and their total."""
    p, w = param_count(m), weight_shards(plan)
    out = {
        "params": BF16 * p / w,
        "grads": BF16 * p / w,
        "optimizer": ADAM * p / w,
        "activations": activation_bytes(m, plan, global_batch),
    }
    return with_total(out)


def with_total(terms: dict[str, float]) -> dict[str, float]:
    return {**terms, "total": sum(terms.values())}


# ------------------------------------------------------------------ time


def ring_time(kind: str, v: float, n: int, bandwidth: float, latency: float) -> float:
    """Lesson 3's ring: V the whole array's bytes, N devices, α per hop."""
    if n == 1:
        return 0.0
    step = latency + v / (n * bandwidth)
    hops = {"all_gather": n - 1, "reduce_scatter": n - 1, "all_reduce": 2 * (n - 1), "permute": 1}
    return hops[kind] * step


AXES = ("tp", "fsdp", "dp", "pp")
"""The mesh's axes, innermost (neighbouring chips) first."""


def inner(plan: Plan, axis: str) -> int:
    """Chips between two neighbours of ``axis``: the product of the axes inside it."""
    out = 1
    for a in AXES[: AXES.index(axis)]:
        out *= getattr(plan, a)
    return out


def within_node(hw: Hardware, plan: Plan, axis: str) -> bool:
    """One group of ``axis`` spans inner·size consecutive chips; it stays in a node
    when that many chips tile a node."""
    span = inner(plan, axis) * getattr(plan, axis)
    return hw.chips_per_node % span == 0


def link(hw: Hardware, plan: Plan, axis: str) -> tuple[float, float]:
    """(bandwidth, latency) of the link ``axis``'s ring crosses."""
    if within_node(hw, plan, axis):
        return hw.intra_bandwidth, hw.intra_latency
    return hw.inter_bandwidth, hw.inter_latency


def tp_all_reduces(m: Model, plan: Plan) -> float:
    """All-reduces over tp per step: 4 per layer per micro-batch (2 forward, 2 backward),
    6 with remat (the recomputed forward does its 2 again)."""
    per_layer = 4 + (2 if plan.remat == "block" else 0)
    return per_layer * m.layers / plan.pp * plan.n_micro


def tp_time(m: Model, hw: Hardware, plan: Plan, global_batch: int, *, over=None) -> float:
    act = BF16 * micro_tokens(m, plan, global_batch) * m.d_model
    bw, lat = link(hw, plan, "tp") if over is None else over
    return tp_all_reduces(m, plan) * ring_time("all_reduce", act, plan.tp, bw, lat)


def stage_weight_bytes(m: Model, plan: Plan) -> float:
    """One stage's tp column of the weights, whole: what FSDP gathers, 2·P/(tp·pp)."""
    return BF16 * param_count(m) / (plan.tp * plan.pp)


def fsdp_time(m: Model, hw: Hardware, plan: Plan, *, gathers: int = 2, scatters: int = 1) -> float:
    """Per micro-batch: all-gather the weights for the forward, again for the backward,
    and reduce-scatter the gradients."""
    w = stage_weight_bytes(m, plan)
    bw, lat = link(hw, plan, "fsdp")
    one = ring_time("all_gather", w, plan.fsdp, bw, lat)
    rs = ring_time("reduce_scatter", w, plan.fsdp, bw, lat)
    return plan.n_micro * (gathers * one + scatters * rs)


def dp_time(m: Model, hw: Hardware, plan: Plan) -> float:
    """Once per step: all-reduce each chip's gradient shard, 2·P/(fsdp·tp·pp), over dp."""
    g = BF16 * param_count(m) / weight_shards(plan)
    bw, lat = link(hw, plan, "dp")
    return ring_time("all_reduce", g, plan.dp, bw, lat)


def pp_time(m: Model, hw: Hardware, plan: Plan, global_batch: int) -> float:
    """Per micro-batch, one activation [tokens, D] forward and its gradient back, one hop each."""
    if plan.pp == 1:
        return 0.0
    act = BF16 * micro_tokens(m, plan, global_batch) * m.d_model
    bw, lat = link(hw, plan, "pp")
    return 2 * plan.n_micro * (lat + act / bw)


def hardware_flops(m: Model, plan: Plan, global_batch: int) -> float:
    """Model FLOPs, and a third more with remat (the forward runs twice)."""
    f = train_flops(m, global_batch * m.seq)
    return f * 4 / 3 if plan.remat == "block" else f


def step_time(m: Model, hw: Hardware, plan: Plan, global_batch: int) -> dict[str, float]:
    """Seconds of one step by term, their total, and the MFU."""
    if plan.dp * plan.fsdp * plan.tp * plan.pp != hw.chips:
        raise ValueError(
            f"dp·fsdp·tp·pp = {plan.dp * plan.fsdp * plan.tp * plan.pp}, not the {hw.chips} chips"
        )
    compute = hardware_flops(m, plan, global_batch) / (hw.chips * hw.peak_flops)
    terms = {
        "compute": compute,
        "bubble": compute * (plan.pp - 1) / plan.n_micro,
        "tp": tp_time(m, hw, plan, global_batch),
        "fsdp": fsdp_time(m, hw, plan),
        "dp": dp_time(m, hw, plan),
        "pp": pp_time(m, hw, plan, global_batch),
    }
    return finish(m, hw, terms, global_batch)


def finish(m: Model, hw: Hardware, terms: dict[str, float], global_batch: int) -> dict[str, float]:
    total = sum(terms.values())
    mfu = train_flops(m, global_batch * m.seq) / (hw.chips * hw.peak_flops * total)
    return {**terms, "total": total, "mfu": mfu}


# ------------------------------------------------------------------ the search


def divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


@dataclass(frozen=True)
class Rules:
    """The search space's rules; a mistake turns one off."""

    tp_in_node: bool = True
    micro_at_least_stages: bool = True


def broken_rule(m: Model, hw: Hardware, plan: Plan, global_batch: int) -> str | None:
    """Why ``plan`` is not in the search space, or None."""
    axes = (plan.dp, plan.fsdp, plan.tp, plan.pp, plan.n_micro)
    if not all(isinstance(a, int) and not isinstance(a, bool) and a >= 1 for a in axes):
        return "dp, fsdp, tp, pp and n_micro are whole numbers ≥ 1"
    if plan.remat not in REMAT:
        return f"remat is one of {', '.join(map(repr, REMAT))}, not {plan.remat!r}"
    n = plan.dp * plan.fsdp * plan.tp * plan.pp
    if n != hw.chips:
        return f"dp·fsdp·tp·pp = {n}: a plan uses every one of the {hw.chips} chips"
    if hw.chips_per_node % plan.tp:
        return (
            f"tp = {plan.tp} does not divide the {hw.chips_per_node} chips of a node: its groups "
            "would straddle nodes, and tensor parallelism's all-reduces (4 per layer) would "
            "cross the slow inter-node link"
        )
    if m.heads % plan.tp:
        return f"tp = {plan.tp} does not divide the {m.heads} heads"
    if m.layers % plan.pp:
        return f"pp = {plan.pp} does not divide the {m.layers} layers"
    replicas = plan.dp * plan.fsdp
    if global_batch % replicas:
        return f"dp·fsdp = {replicas} does not divide the batch of {global_batch} sequences"
    if (global_batch // replicas) % plan.n_micro:
        return (
            f"n_micro = {plan.n_micro} does not divide the {global_batch // replicas} sequences "
            "of each replica"
        )
    if plan.n_micro < plan.pp:
        return (
            f"n_micro = {plan.n_micro} < pp = {plan.pp}: a pipeline needs at least as many "
            "micro-batches as stages, or some stages never work at the same time as the others"
        )
    return None


def plans(m: Model, hw: Hardware, global_batch: int, rules: Rules = Rules()) -> list[Plan]:
    """Every plan of the search space, in the tie-break order's loop order."""
    out = []
    for tp in divisors(hw.chips):
        if m.heads % tp or (rules.tp_in_node and hw.chips_per_node % tp):
            continue
        for pp in divisors(hw.chips // tp):
            if m.layers % pp:
                continue
            for fsdp in divisors(hw.chips // (tp * pp)):
                dp = hw.chips // (tp * pp * fsdp)
                if global_batch % (dp * fsdp):
                    continue
                for n_micro in divisors(global_batch // (dp * fsdp)):
                    if rules.micro_at_least_stages and n_micro < pp:
                        continue
                    out += [Plan(dp, fsdp, tp, pp, n_micro, r) for r in REMAT]
    return out


def tie_key(plan: Plan) -> tuple:
    """Among plans as fast as the fastest: no remat first, then fewest stages, then the
    smallest tp, then the smallest fsdp (the most plain data parallelism), then the
    fewest micro-batches."""
    return (plan.remat != "none", plan.pp, plan.tp, plan.fsdp, plan.n_micro)


def ranked(
    m: Model, hw: Hardware, global_batch: int, rules: Rules = Rules(), fit: bool = True
) -> list[tuple[Plan, dict[str, float], dict[str, float]]]:
    """(plan, memory, time) of every plan that fits HBM (all of them with ``fit=False``),
    fastest first, ties broken by :func:`tie_key`."""
    rows = []
    for plan in plans(m, hw, global_batch, rules):
        mem = memory_per_chip(m, plan, global_batch)
        if fit and mem["total"] > hw.hbm_bytes:
            continue
        rows.append((plan, mem, step_time(m, hw, plan, global_batch)))
    if not rows:
        return rows
    fastest = min(t["total"] for _, _, t in rows)
    tied = [r for r in rows if r[2]["total"] <= fastest * (1 + TIE)]
    rest = [r for r in rows if r[2]["total"] > fastest * (1 + TIE)]
    tied.sort(key=lambda r: tie_key(r[0]))
    rest.sort(key=lambda r: (r[2]["total"], tie_key(r[0])))
    return tied + rest


def best_plan(m: Model, hw: Hardware, global_batch: int, rules: Rules = Rules()) -> Plan:
    rows = ranked(m, hw, global_batch, rules)
    if not rows:
        raise ValueError("no plan fits")
    return rows[0][0]


# ------------------------------------------------------------------ bytes


def ring_bytes(kind: str, v: float, n: int) -> float:
    """What one device sends in lesson 3's ring: hops · V/N (the bandwidth term of
    :func:`ring_time`, times the bandwidth)."""
    hops = {"all_gather": n - 1, "reduce_scatter": n - 1, "all_reduce": 2 * (n - 1)}[kind]
    return hops * v / n


def step_bytes(
    weights: float, act: float, layers: int, plan: Plan, tp_per_layer: int | None = None
) -> dict[str, float]:
    """Bytes one chip sends per collective kind in one step, by the terms of
    :func:`step_time`: ``weights`` the whole model's bytes, ``act`` one
    micro-batch's [tokens, D] on one chip. FSDP gathers one stage's tp column,
    weights/(tp·pp), twice and reduce-scatters it once per micro-batch; tp
    all-reduces ``act`` 4 times per layer and micro-batch (6 with remat), dp
    all-reduces the gradient shard weights/(fsdp·tp·pp) once."""
    per_layer = tp_per_layer or (4 + (2 if plan.remat == "block" else 0))
    column = weights / (plan.tp * plan.pp)
    return {
        "all-gather": plan.n_micro * 2 * ring_bytes("all_gather", column, plan.fsdp),
        "reduce-scatter": plan.n_micro * ring_bytes("reduce_scatter", column, plan.fsdp),
        "all-reduce": per_layer * layers / plan.pp * plan.n_micro
        * ring_bytes("all_reduce", act, plan.tp)
        + ring_bytes("all_reduce", column / plan.fsdp, plan.dp),
    }  # fmt: skip
