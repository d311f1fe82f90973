"""Lesson 14's reference cost model, the grader's own (never imported from solutions/;
hidden from the student's process: :mod:`grader.expected`).

Every term of ``course/lessons/14_planning.md`` is one function, so the
grader's suspects (:mod:`.suspects`) can rebuild what a known mistake gives
by changing one piece. Lesson 3's ring model is re-stated in :func:`ring_time`
(``tests/test_l14.py`` holds it equal to lesson 3's).

Conventions (the text explains each):

* bf16 weights (2 bytes), gradients in bf16 or float32 as the plan says
  (``Plan.grads``: 2 or 4 bytes), Adam with two float32 moments and a float32
  master copy (12 bytes per parameter): 16 or 18 bytes per parameter in all;
  the collectives carry bf16 either way;
* model FLOPs 6·P·T + 12·L·N·H·S·T (PaLM's appendix B); with ``remat="block"``
  the hardware also redoes the forward, a third of that;
* mesh order, innermost first: tp, fsdp, dp, pp. An axis's ring stays inside
  a node when one group of it (its size times the axes inside it) tiles a node;
* no overlap: the step is compute + bubble + every collective.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from grader.lessons.l14_planning.records import (
    GRADS,
    MEMORY_KEYS,
    REMAT,
    TIME_KEYS,
    Hardware,
    Model,
    Plan,
)

__all__ = ["MEMORY_KEYS", "TIME_KEYS"]  # the keys, the student's side: re-exported

BF16 = 2
"""Bytes of a bf16 weight, gradient or activation."""
ADAM = 12
"""Bytes of optimizer state per parameter: float32 m and v, and the float32 master copy."""
TIE = 1e-9
"""Step times within this relative distance of the fastest are a tie."""


@dataclass(frozen=True)
class Costing:
    """How the model counts. The defaults are the lesson's; each known mistake of
    :mod:`.suspects` changes one field, so its value is rebuilt by the same code."""

    weight_bytes: float = BF16
    """Bytes per weight in memory (a mistake counts elements: 1)."""
    act_bytes: float = BF16
    """Bytes per activation element (a mistake keeps them in float32: 4)."""
    wire_bytes: float = BF16
    """Bytes per element a collective carries (a mistake counts elements: 1)."""
    extra_hop: int = 0
    """Ring steps beyond N − 1 (a mistake counts N steps: 1)."""
    link_by_span: bool = False
    """A ring stays in a node when its span is at most a node (a mistake), not when it tiles one."""
    dp_volume: str = "shard"
    """What dp all-reduces: each chip's gradient shard; a mistake: the replica's ``column``
    (not divided by fsdp) or the whole ``model``."""
    tokens_over_fsdp: bool = True
    """fsdp splits the batch too (a mistake divides by dp only)."""
    tokens_over_dp: bool = True
    """dp splits the batch (a mistake divides by fsdp only)."""
    bubble: bool = True
    """The bubble is counted (a mistake leaves it out)."""
    fsdp_volume_of_a_chip: bool = False
    """fsdp's rings take V, the whole stage's weights they gather (a mistake: the shard one
    chip holds, V/fsdp)."""
    grads_sent_as_kept: bool = False
    """dp sends the gradients at their wire size, bf16 (a mistake: at ``plan.grads``'s size,
    4 bytes for fp32 gradients, which cost memory only)."""
    span_without_inner: tuple[str, ...] = ()
    """A group of an axis spans the axes inside it too, inner·size chips (a mistake, for the
    axes named: its own size alone, as if its groups were consecutive chips)."""
    pp_hops_of_the_line: bool = False
    """A chip sends each micro-batch's activation one hop (a mistake: pp − 1 hops, the
    whole line's boundaries, in a time that is one chip's)."""


REFERENCE = Costing()


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


def micro_tokens(m: Model, plan: Plan, global_batch: int, how: Costing = REFERENCE) -> float:
    """Tokens of one micro-batch on one chip: B/(dp·fsdp·n_micro) sequences of S."""
    fsdp = plan.fsdp if how.tokens_over_fsdp else 1
    dp = plan.dp if how.tokens_over_dp else 1
    return global_batch / (dp * fsdp * plan.n_micro) * m.seq


def layer_bytes_per_token(
    m: Model, tp: int, replicated_over_tp: bool = True, how: Costing = REFERENCE
) -> float:
    """What one layer keeps for its backward, per token, with no remat:
    2·(4·D + (2·H·(N + K) + 3·F)/tp) bytes. The 4·D (each block's input and
    its norm's output) is whole on every tp chip; Q, K, V, the attention
    output and SwiGLU's gate, up and product are split over tp."""
    split = (2 * m.head_dim * (m.heads + m.kv_heads) + 3 * m.d_ff) / tp
    whole = 4 * m.d_model / (tp if not replicated_over_tp else 1)
    return how.act_bytes * (whole + split)


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
    how: Costing = REFERENCE,
    layers: float | None = None,
) -> float:
    """Activations on one chip (the first pipeline stage, which holds the most).

    ``none``: in_flight · tokens · L/pp · layer_bytes_per_token.
    ``block``: in_flight · tokens · L/pp · 2·D (each block's input), plus one
    layer's full activations for one micro-batch while it is recomputed.
    The keywords rebuild known mistakes (another remat, another count held).
    """
    remat = plan.remat if remat is None else remat
    held = in_flight(plan) if held is None else held
    tokens = micro_tokens(m, plan, global_batch, how)
    layers = m.layers / plan.pp if layers is None else layers
    full = layer_bytes_per_token(m, plan.tp, replicated_over_tp, how)
    if remat == "none":
        return held * tokens * layers * full
    return held * tokens * layers * how.act_bytes * m.d_model + tokens * full


def memory_per_chip(
    m: Model, plan: Plan, global_batch: int, how: Costing = REFERENCE, params: int | None = None
) -> dict[str, float]:
    """Bytes on one chip, by term, and their total. ``params`` replaces param_count(m)
    (to rebuild what a wrong count gives)."""
    p = param_count(m) if params is None else params
    w = weight_shards(plan)
    grad = GRADS[plan.grads] * how.weight_bytes / BF16
    out = {
        "params": how.weight_bytes * p / w,
        "grads": grad * p / w,
        "optimizer": ADAM * how.weight_bytes / BF16 * p / w,
        "activations": activation_bytes(m, plan, global_batch, how=how),
    }
    return with_total(out)


def with_total(terms: dict[str, float]) -> dict[str, float]:
    return {**terms, "total": sum(terms.values())}


# ------------------------------------------------------------------ time


def ring_time(
    kind: str, v: float, n: int, bandwidth: float, latency: float, extra_hop: int = 0
) -> float:
    """Lesson 3's ring: V the whole array's bytes, N devices, α per hop."""
    if n == 1:
        return 0.0
    step = latency + v / (n * bandwidth)
    hops = {"all_gather": n - 1, "reduce_scatter": n - 1, "all_reduce": 2 * (n - 1), "permute": 1}
    return (hops[kind] + extra_hop * (2 if kind == "all_reduce" else 1)) * step


AXES = ("tp", "fsdp", "dp", "pp")
"""The mesh's axes, innermost (neighbouring chips) first."""


def inner(plan: Plan, axis: str) -> int:
    """Chips between two neighbours of ``axis``: the product of the axes inside it."""
    out = 1
    for a in AXES[: AXES.index(axis)]:
        out *= getattr(plan, a)
    return out


def within_node(hw: Hardware, plan: Plan, axis: str, how: Costing = REFERENCE) -> bool:
    """One group of ``axis`` spans inner·size consecutive chips; it stays in a node
    when that many chips tile a node."""
    span = (1 if axis in how.span_without_inner else inner(plan, axis)) * getattr(plan, axis)
    if how.link_by_span:
        return span <= hw.chips_per_node
    return hw.chips_per_node % span == 0


def link(hw: Hardware, plan: Plan, axis: str, how: Costing = REFERENCE) -> tuple[float, float]:
    """(bandwidth, latency) of the link ``axis``'s ring crosses."""
    if within_node(hw, plan, axis, how):
        return hw.intra_bandwidth, hw.intra_latency
    return hw.inter_bandwidth, hw.inter_latency


def tp_all_reduces(m: Model, plan: Plan) -> float:
    """All-reduces over tp per step: 4 per layer per micro-batch (2 forward, 2 backward),
    6 with remat (the recomputed forward does its 2 again)."""
    per_layer = 4 + (2 if plan.remat == "block" else 0)
    return per_layer * m.layers / plan.pp * plan.n_micro


def tp_time(
    m: Model, hw: Hardware, plan: Plan, global_batch: int, *, over=None, how: Costing = REFERENCE
) -> float:
    act = how.wire_bytes * micro_tokens(m, plan, global_batch, how) * m.d_model
    bw, lat = link(hw, plan, "tp", how) if over is None else over
    ring = ring_time("all_reduce", act, plan.tp, bw, lat, how.extra_hop)
    return tp_all_reduces(m, plan) * ring


def stage_weight_bytes(m: Model, plan: Plan) -> float:
    """One stage's tp column of the weights, whole: what FSDP gathers, 2·P/(tp·pp)."""
    return BF16 * param_count(m) / (plan.tp * plan.pp)


def fsdp_time(
    m: Model,
    hw: Hardware,
    plan: Plan,
    *,
    gathers: int = 2,
    scatters: int = 1,
    how: Costing = REFERENCE,
) -> float:
    """Per micro-batch: all-gather the weights for the forward, again for the backward,
    and reduce-scatter the gradients."""
    w = stage_weight_bytes(m, plan) * how.wire_bytes / BF16
    if how.fsdp_volume_of_a_chip:
        w /= plan.fsdp
    bw, lat = link(hw, plan, "fsdp", how)
    one = ring_time("all_gather", w, plan.fsdp, bw, lat, how.extra_hop)
    rs = ring_time("reduce_scatter", w, plan.fsdp, bw, lat, how.extra_hop)
    return plan.n_micro * (gathers * one + scatters * rs)


def dp_time(m: Model, hw: Hardware, plan: Plan, how: Costing = REFERENCE) -> float:
    """Once per step: all-reduce each chip's gradient shard, 2·P/(fsdp·tp·pp), over dp."""
    split = {"shard": weight_shards(plan), "column": plan.tp * plan.pp, "model": 1}
    wire = how.wire_bytes * (GRADS[plan.grads] / BF16 if how.grads_sent_as_kept else 1)
    g = wire * param_count(m) / split[how.dp_volume]
    bw, lat = link(hw, plan, "dp", how)
    return ring_time("all_reduce", g, plan.dp, bw, lat, how.extra_hop)


def pp_time(
    m: Model, hw: Hardware, plan: Plan, global_batch: int, how: Costing = REFERENCE
) -> float:
    """Per micro-batch, one activation [tokens, D] forward and its gradient back, one hop each."""
    if plan.pp == 1:
        return 0.0
    act = how.wire_bytes * micro_tokens(m, plan, global_batch, how) * m.d_model
    bw, lat = link(hw, plan, "pp", how)
    hops = plan.pp - 1 if how.pp_hops_of_the_line else 1
    return 2 * plan.n_micro * hops * (lat + act / bw)


def hardware_flops(m: Model, plan: Plan, global_batch: int) -> float:
    """Model FLOPs, and a third more with remat (the forward runs twice)."""
    f = train_flops(m, global_batch * m.seq)
    return f * 4 / 3 if plan.remat == "block" else f


def step_time(
    m: Model, hw: Hardware, plan: Plan, global_batch: int, how: Costing = REFERENCE
) -> dict[str, float]:
    """Seconds of one step by term, their total, and the MFU."""
    if plan.dp * plan.fsdp * plan.tp * plan.pp != hw.chips:
        raise ValueError(
            f"dp·fsdp·tp·pp = {plan.dp * plan.fsdp * plan.tp * plan.pp}, not the {hw.chips} chips"
        )
    compute = hardware_flops(m, plan, global_batch) / (hw.chips * hw.peak_flops)
    terms = {
        "compute": compute,
        "bubble": compute * (plan.pp - 1) / plan.n_micro if how.bubble else 0.0,
        "tp": tp_time(m, hw, plan, global_batch, how=how),
        "fsdp": fsdp_time(m, hw, plan, how=how),
        "dp": dp_time(m, hw, plan, how),
        "pp": pp_time(m, hw, plan, global_batch, how),
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
    """The search's rules; the defaults are the lesson's, and a known mistake changes one."""

    tp_in_node: bool = True
    micro_at_least_stages: bool = True
    micro_more_than_stages: bool = False
    """A mistake: n_micro > pp where the rule is n_micro ≥ pp."""
    pipeline_micro_more_than_stages: bool = False
    """A mistake: n_micro > pp where pp > 1 (pp = 1 keeps n_micro = 1), where the rule is
    n_micro ≥ pp."""
    hbm_share: float = 1.0
    """The share of HBM a plan may use (a mistake holds back a margin)."""
    fit_strictly: bool = False
    """A mistake: memory < HBM where the rule is ≤."""
    order: str = "key"
    """How ties are broken: by :func:`tie_key`; a mistake takes the first one its loops
    meet (``"dp-first"``: dp, fsdp, tp, pp, n_micro ascending) or the ``"last"``."""
    memory: Callable[[Plan], float] | None = None
    """The memory a plan is held to, in place of memory_per_chip's total (a mistake's)."""


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
    if plan.grads != "bf16":
        return f"grads = {plan.grads!r}: the search keeps bf16 gradients (the default)"
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
                    if rules.micro_more_than_stages and n_micro <= pp:
                        continue
                    if rules.pipeline_micro_more_than_stages and 1 < pp == n_micro:
                        continue
                    out += [Plan(dp, fsdp, tp, pp, n_micro, r) for r in REMAT]
    return out


def empty_space(m: Model, hw: Hardware, global_batch: int) -> str:
    """Why no plan exists at all (the cluster's size, not memory, rules every plan out)."""
    tps = [t for t in divisors(hw.chips) if m.heads % t == 0 and hw.chips_per_node % t == 0]
    return (
        f"no plan exists: {hw.chips} chips cannot be split as dp·fsdp·tp·pp with tp dividing "
        f"the {m.heads} heads and the {hw.chips_per_node} chips of a node (tp ∈ {tps}), pp "
        f"dividing the {m.layers} layers, dp·fsdp dividing the batch of {global_batch} "
        "sequences and n_micro ≥ pp dividing each replica's share; plan on fewer chips "
        "(leave some idle) or change the batch"
    )


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
    limit = hw.hbm_bytes * rules.hbm_share
    for plan in plans(m, hw, global_batch, rules):
        mem = memory_per_chip(m, plan, global_batch)
        held = mem["total"] if rules.memory is None else rules.memory(plan)
        if fit and (held > limit or (rules.fit_strictly and held >= limit)):
            continue
        rows.append((plan, mem, step_time(m, hw, plan, global_batch)))
    if not rows:
        return rows
    fastest = min(t["total"] for _, _, t in rows)
    tied = [r for r in rows if r[2]["total"] <= fastest * (1 + TIE)]
    rest = [r for r in rows if r[2]["total"] > fastest * (1 + TIE)]
    if rules.order == "dp-first":
        tied.sort(key=lambda r: (r[0].dp, r[0].fsdp, r[0].tp, r[0].pp, r[0].n_micro))
    elif rules.order == "last":
        tied.reverse()
    else:
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
