"""Lesson 14 — planning a training run at scale (reference solution).

Given a model, a cluster and a global batch (in sequences), count the
parameters and FLOPs, the bytes each chip holds, the seconds a step takes,
and search every plan — data, fully sharded data, tensor and pipeline
parallelism, micro-batches, remat — for the fastest one that fits.

Units throughout: FLOPs, bytes, seconds, FLOP/s and bytes/s.
"""

from grader.lessons.l14_planning.records import HARDWARE, MODELS, Hardware, Model, Plan

__all__ = ["HARDWARE", "MODELS", "Hardware", "Model", "Plan"]

BF16 = 2  # bytes of a bf16 weight, gradient or activation
ADAM = 12  # float32 m, v and master copy, per parameter
GRADS = {"bf16": 2, "fp32": 4}  # bytes of a gradient, by plan.grads
TIE = 1e-9  # step times this close to the fastest are a tie


def param_count(m: Model) -> int:
    """Parameters: 2·D·V + L·(2·D·H·(N + K) + 3·D·F), norms ignored.

    Untied embedding and unembedding (D·V each); per layer W_q and W_o
    (D·N·H each), W_k and W_v (D·K·H each), and SwiGLU's gate, up and down
    (D·F each).
    """
    d, h = m.d_model, m.head_dim
    embeddings = 2 * d * m.vocab
    attention = 2 * d * h * (m.heads + m.kv_heads)
    mlp = 3 * d * m.d_ff
    return embeddings + m.layers * (attention + mlp)


def train_flops(m: Model, tokens: float) -> float:
    """Model FLOPs of training on ``tokens`` tokens: 6·P·T + 12·L·N·H·S·T.

    6·P·T for the matmuls with weights (forward 2, backward 4 per parameter
    and token), plus attention's Q·Kᵀ and P·V over the whole S×S, forward and
    backward (the convention of the PaLM paper's appendix B: no halving for
    the causal mask, no remat).
    """
    dense = 6 * param_count(m) * tokens
    attention = 12 * m.layers * m.heads * m.head_dim * m.seq * tokens
    return dense + attention


def memory_per_chip(m: Model, plan: Plan, global_batch: int) -> dict[str, float]:
    """Bytes one chip holds: ``params``, ``grads``, ``optimizer``, ``activations``, ``total``.

    Weights in bf16, gradients in bf16 or float32 as ``plan.grads`` says
    (2 or 4 bytes), Adam's two float32 moments and float32 master copy
    (12 bytes per parameter), each divided by fsdp·tp·pp.
    Activations of the first stage under 1F1B: min(n_micro, pp) micro-batches
    of B/(dp·fsdp·n_micro) sequences, over its L/pp layers; per token and
    layer 2·(4·D + (2·H·(N + K) + 3·F)/tp) bytes without remat, 2·D with
    ``remat="block"`` plus one layer's full activations of one micro-batch.
    """
    p = param_count(m)
    shards = plan.fsdp * plan.tp * plan.pp
    tokens = global_batch / (plan.dp * plan.fsdp * plan.n_micro) * m.seq
    layers = m.layers / plan.pp
    held = min(plan.n_micro, plan.pp)
    whole = 4 * m.d_model  # each block's input and its norm's output: whole on every tp chip
    split = (2 * m.head_dim * (m.heads + m.kv_heads) + 3 * m.d_ff) / plan.tp
    full_layer = BF16 * (whole + split)  # bytes per token
    if plan.remat == "none":
        activations = held * tokens * layers * full_layer
    else:
        activations = held * tokens * layers * BF16 * m.d_model + tokens * full_layer
    out = {
        "params": BF16 * p / shards,
        "grads": GRADS[plan.grads] * p / shards,
        "optimizer": ADAM * p / shards,
        "activations": activations,
    }
    out["total"] = sum(out.values())
    return out


def _ring(kind: str, nbytes: float, n: int, link: tuple[float, float]) -> float:
    """Lesson 3's ring time; ``link`` is (bandwidth, latency)."""
    if n == 1:
        return 0.0
    bandwidth, latency = link
    hops = {"all_gather": n - 1, "reduce_scatter": n - 1, "all_reduce": 2 * (n - 1)}[kind]
    return hops * (latency + nbytes / (n * bandwidth))


def _link(hw: Hardware, span: int) -> tuple[float, float]:
    """The link a ring whose groups span ``span`` consecutive chips crosses."""
    if hw.chips_per_node % span == 0:
        return hw.intra_bandwidth, hw.intra_latency
    return hw.inter_bandwidth, hw.inter_latency


def step_time(m: Model, hw: Hardware, plan: Plan, global_batch: int) -> dict[str, float]:
    """Seconds of one step: ``compute``, ``bubble``, ``tp``, ``fsdp``, ``dp``, ``pp``,
    their ``total``, and ``mfu``.

    Compute at peak on every chip (a third more with remat); the bubble
    compute·(pp − 1)/n_micro; each collective by lesson 3's ring model on the
    link its axis crosses (mesh order tp, fsdp, dp, pp, innermost first);
    no overlap. MFU is train_flops over chips·peak·total. ValueError when
    dp·fsdp·tp·pp is not the number of chips.
    """
    chips = plan.dp * plan.fsdp * plan.tp * plan.pp
    if chips != hw.chips:
        raise ValueError(f"dp·fsdp·tp·pp = {chips}, not the {hw.chips} chips")
    p = param_count(m)
    model_flops = train_flops(m, global_batch * m.seq)
    flops = model_flops * 4 / 3 if plan.remat == "block" else model_flops
    compute = flops / (hw.chips * hw.peak_flops)
    bubble = compute * (plan.pp - 1) / plan.n_micro

    act = BF16 * global_batch / (plan.dp * plan.fsdp * plan.n_micro) * m.seq * m.d_model
    # tp: 4 all-reduces of [tokens, D] per layer and micro-batch, 6 with remat
    per_layer = 6 if plan.remat == "block" else 4
    tp_link = _link(hw, plan.tp)
    tp = per_layer * m.layers / plan.pp * plan.n_micro * _ring("all_reduce", act, plan.tp, tp_link)
    # fsdp: per micro-batch gather the stage's weights twice, reduce-scatter the gradients once
    stage = BF16 * p / (plan.tp * plan.pp)
    fsdp_link = _link(hw, plan.tp * plan.fsdp)
    gather = _ring("all_gather", stage, plan.fsdp, fsdp_link)
    scatter = _ring("reduce_scatter", stage, plan.fsdp, fsdp_link)
    fsdp = plan.n_micro * (2 * gather + scatter)
    # dp: all-reduce each chip's gradient shard once per step
    dp_link = _link(hw, plan.tp * plan.fsdp * plan.dp)
    dp = _ring("all_reduce", BF16 * p / (plan.fsdp * plan.tp * plan.pp), plan.dp, dp_link)
    # pp: each micro-batch's activation forward and its gradient back, one hop each
    pp = 0.0
    if plan.pp > 1:
        bandwidth, latency = _link(hw, chips)
        pp = 2 * plan.n_micro * (latency + act / bandwidth)

    out = {"compute": compute, "bubble": bubble, "tp": tp, "fsdp": fsdp, "dp": dp, "pp": pp}
    out["total"] = sum(out.values())
    out["mfu"] = model_flops / (hw.chips * hw.peak_flops * out["total"])
    return out


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def best_plan(m: Model, hw: Hardware, global_batch: int) -> Plan:
    """The fastest plan whose memory_per_chip total fits ``hw.hbm_bytes``.

    Searched: every dp·fsdp·tp·pp = chips with tp dividing chips_per_node and
    the heads, pp dividing the layers, dp·fsdp dividing the batch, n_micro
    dividing each replica's batch and at least pp, remat "none" or "block";
    gradients in bf16 (the Plan's default: fp32 ones only cost memory).
    Step times within 1e-9 (relative) of the fastest tie; among them: no
    remat first, then the fewest stages, the smallest tp, the smallest fsdp,
    the fewest micro-batches. ValueError when no plan fits, or when no plan
    exists at all (the chips cannot be split by those rules).
    """
    found, exists = [], False
    for tp in _divisors(hw.chips):
        if m.heads % tp or hw.chips_per_node % tp:
            continue
        for pp in _divisors(hw.chips // tp):
            if m.layers % pp:
                continue
            for fsdp in _divisors(hw.chips // (tp * pp)):
                dp = hw.chips // (tp * pp * fsdp)
                if global_batch % (dp * fsdp):
                    continue
                for n_micro in _divisors(global_batch // (dp * fsdp)):
                    if n_micro < pp:
                        continue
                    for remat in ("none", "block"):
                        exists = True
                        plan = Plan(dp, fsdp, tp, pp, n_micro, remat)
                        if memory_per_chip(m, plan, global_batch)["total"] <= hw.hbm_bytes:
                            found.append((step_time(m, hw, plan, global_batch)["total"], plan))
    if not exists:
        raise ValueError(f"no plan exists: {hw.chips} chips cannot be split by the rules")
    if not found:
        raise ValueError("no plan fits: every plan needs more than hbm_bytes on some chip")
    fastest = min(t for t, _ in found)
    tied = [p for t, p in found if t <= fastest * (1 + TIE)]
    return min(tied, key=lambda p: (p.remat != "none", p.pp, p.tp, p.fsdp, p.n_micro))
