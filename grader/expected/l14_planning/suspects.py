"""What each known mistake gives on an example: (value, diagnosis) pairs.

A diagnosis is named only when the student's answer equals the mistake's
value and the right answer differs from it (:class:`grader.checks.scalar.Suspicion`
for numbers, :func:`matching` for a dict of terms, term by term).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Any

from grader.checks.scalar import close
from grader.expected.l14_planning import cost
from grader.lessons.l14_planning.records import GRADS, Hardware, Model, Plan

# ------------------------------------------------------------------ param_count


def params(m: Model) -> list[tuple[Any, str]]:
    d, h, n, k, f, v, layers = (m.d_model, m.head_dim, m.heads, m.kv_heads, m.d_ff, m.vocab,
                                m.layers)  # fmt: skip
    attn, mlp = 2 * d * h * (n + k), 3 * d * f
    return [
        (d * v + layers * (attn + mlp), "The embeddings are untied: the input embedding and the "
         "output projection are two D×V matrices, 2·D·V."),
        (layers * (attn + mlp), "The embedding and the unembedding are parameters too: 2·D·V."),
        (2 * d * v + layers * (4 * d * h * n + mlp), "Grouped-query attention: W_k and W_v have K "
         "heads (kv_heads), not N: 2·D·H·(N + K) per layer."),
        (2 * d * v + layers * (2 * d * d + 2 * d * h * k + mlp), "W_q and W_o are D×(N·H): N·H "
         "need not equal D (use heads · head_dim)."),
        (2 * d * v + layers * (attn + 2 * d * f), "SwiGLU has three matrices (gate, up, down), "
         "3·D·F per layer, not two."),
    ]  # fmt: skip


def params_terms(m: Model) -> Any:
    """``param_count``'s answer as named terms (:mod:`grader.checks.terms`): the untied
    embeddings, and the layers (attention and MLP), in parameters."""
    from grader.checks.terms import Sum, Term

    d, h, n, k, f, v, layers = (m.d_model, m.head_dim, m.heads, m.kv_heads, m.d_ff, m.vocab,
                                m.layers)  # fmt: skip
    return Sum(Term("embeddings, 2·D·V", 2 * d * v, "parameters"),
               Term("layers, L·(2·D·H·(N + K) + 3·D·F)", layers * (2 * d * h * (n + k) + 3 * d * f),
                    "parameters"))  # fmt: skip


def params_quantities(m: Model) -> dict[str, float]:
    """The model's counts a term may be off by, beside the example's fields (which hold
    the model only as a tuple)."""
    return {f"L = layers ({m.layers})": float(m.layers), f"N = heads ({m.heads})": float(m.heads),
            f"K = kv_heads ({m.kv_heads})": float(m.kv_heads)}  # fmt: skip


# ------------------------------------------------------------------ train_flops


def flops_terms(m: Model, tokens: int) -> Any:
    """:func:`cost.train_flops` as named terms (:mod:`grader.checks.terms`)."""
    from grader.checks.terms import Sum, Term

    return Sum(Term("weights, 6·P·T", 6 * cost.param_count(m) * tokens, "FLOPs"),
               Term("attention, 12·L·N·H·S·T", cost.attention_flops(m, tokens), "FLOPs"))  # fmt: skip


def flops_quantities(m: Model) -> dict[str, float]:
    """:func:`params_quantities`, and the 3 of a training step over its forward pass
    (forward + backward, the backward twice the forward: 6 = 3·2 and 12 = 3·4)."""
    return {**params_quantities(m), "3 (a training step over its forward pass)": 3.0}


def flops(m: Model, tokens: int) -> list[tuple[Any, str]]:
    p6 = 6 * cost.param_count(m) * tokens
    attn = cost.attention_flops(m, tokens)
    per = attn / m.heads  # one head's share
    return [
        (p6, "That is 6·P·T alone: the attention term 12·L·N·H·S·T is dropped. Q·Kᵀ and P·V "
         "multiply activations by activations, so no parameter counts them."),
        ((p6 + attn) / 3, "That is the forward pass only: training adds the backward, twice "
         "the forward: 6·P·T + 12·L·N·H·S·T."),
        (p6 + attn / 2, "The convention counts the whole S×S score matrix (PaLM's appendix B): "
         "12·L·N·H·S·T, not halved for the causal mask."),
        (p6 + per * m.kv_heads, "Scores are computed for every query head: N, not the K "
         "key/value heads."),
        (p6 + 12 * m.layers * m.d_model * m.seq * tokens, "The attention term has N·H (heads · "
         "head_dim), which need not equal D."),
        (p6 - 6 * 2 * m.d_model * m.vocab * tokens + attn, "P is every parameter: the "
         "embeddings (2·D·V, the input embedding and the unembedding) count in 6·P·T too. "
         "The scaling-law habit of non-embedding parameters leaves out the unembedding, a "
         "real D×V matmul every token pays."),
    ]  # fmt: skip


# ------------------------------------------------------------------ memory_per_chip


def memory(m: Model, plan: Plan, batch: int) -> list[tuple[dict[str, float], str]]:
    return list(memory_variants(m, plan, batch).values())


def memory_variants(m: Model, plan: Plan, batch: int) -> dict[str, tuple[dict[str, float], str]]:
    """Each known memory mistake's terms on this plan, by a name that does not depend on
    the plan (so a search can be rebuilt with one mistake in it: :func:`searches`)."""
    right = cost.memory_per_chip(m, plan, batch)
    p, w = cost.param_count(m), cost.weight_shards(plan)

    def variant(**terms: float) -> dict[str, float]:
        base = {k: right[k] for k in cost.MEMORY_KEYS[:-1]}
        return cost.with_total({**base, **terms})

    acts = lambda **kw: cost.activation_bytes(m, plan, batch, **kw)  # noqa: E731
    grad = GRADS[plan.grads]
    out = {}
    if plan.grads == "fp32":
        out["grads-bf16"] = (variant(grads=2 * p / w), "grads = 'fp32': the gradients are "
                             "kept in float32, 4 bytes per parameter, not 2 (16 + 2 = 18 "
                             "bytes per parameter in all).")  # fmt: skip
    else:
        out["grads-fp32"] = (variant(grads=4 * p / w), "grads = 'bf16': the gradients are "
                             "bf16, 2 bytes per parameter; 4 is for grads = 'fp32'.")  # fmt: skip
    out["elements"] = (variant(params=p / w, grads=grad / 2 * p / w, optimizer=3 * p / w),
                       "Counted in elements, not bytes: a bf16 weight is 2 bytes, a float32 "
                       "moment or master weight 4.")  # fmt: skip
    out["act-fp32"] = (variant(activations=acts(how=cost.Costing(act_bytes=4))),
                       "The activations are counted in float32 (4 bytes): the lesson keeps "
                       "them in bf16, 2 bytes per element.")  # fmt: skip
    if plan.fsdp > 1:
        out["tokens-fsdp"] = (variant(activations=acts(how=cost.Costing(tokens_over_fsdp=False))),
                              f"fsdp = {plan.fsdp} splits the batch too: each chip's "
                              "micro-batch is B/(dp·fsdp·n_micro) sequences, not "
                              "B/(dp·n_micro).")  # fmt: skip
    if plan.dp > 1:
        out["tokens-dp"] = (variant(activations=acts(how=cost.Costing(tokens_over_dp=False))),
                            f"dp = {plan.dp} splits the batch: each chip's micro-batch is "
                            "B/(dp·fsdp·n_micro) sequences, not B/(fsdp·n_micro).")  # fmt: skip
    out.update({
        "no-optimizer": (variant(optimizer=0.0), "The optimizer state is forgotten: Adam "
         "keeps two float32 moments and a float32 master copy of every weight, 12 bytes per "
         "parameter."),
        "no-master": (variant(optimizer=8 * p / w), "The float32 master weights are forgotten: "
         "besides m and v (8 bytes), mixed precision keeps a float32 copy of every weight, 12 "
         "bytes in all."),
        "no-activations": (variant(activations=0.0), "The activations are forgotten: the "
         "backward needs what the forward computed, min(n_micro, pp) micro-batches of it per "
         "stage."),
        "dp-shards": (variant(params=right["params"] / plan.dp, grads=right["grads"] / plan.dp,
                              optimizer=right["optimizer"] / plan.dp),
         f"dp = {plan.dp} does not shard the weights: every data-parallel replica holds the "
         "same copy. Only fsdp·tp·pp divide params, grads and optimizer state."),
        "tp-residual": (variant(activations=acts(replicated_over_tp=False)), f"tp = {plan.tp} "
         "does not shard the 4·D part: each block's input and its norm's output are whole on "
         "every tp chip (Megatron without sequence parallelism); only Q, K, V, the attention "
         "output and SwiGLU's activations are split."),
        "gpipe": (variant(activations=acts(held=plan.n_micro)), "1F1B holds min(n_micro, pp) "
         "micro-batches on the first stage, not all n_micro (that is GPipe)."),
    })  # fmt: skip
    if plan.remat == "block":
        out["no-remat"] = (variant(activations=acts(remat="none")), "Counted without remat: "
                           "with remat='block' a layer keeps only its input, 2·D bytes per "
                           "token, and recomputes the rest in the backward.")  # fmt: skip
        out["no-recompute-layer"] = (variant(activations=acts() - micro_layer(m, plan, batch)),
                                     "With remat, one layer's full activations of one "
                                     "micro-batch are alive while it is recomputed: add tokens "
                                     "· 2·(4·D + (2·H·(N + K) + 3·F)/tp).")  # fmt: skip
    if plan.pp > 1:
        out["layers-all"] = (variant(activations=acts(layers=m.layers)), f"A stage holds "
                             f"only its own L/pp = {m.layers}/{plan.pp} layers, and their "
                             f"activations: not all L = {m.layers} of them.")  # fmt: skip
    if plan.n_micro < plan.pp:
        out["held-pp"] = (variant(activations=acts(held=plan.pp)), f"With n_micro = "
                          f"{plan.n_micro} < pp = {plan.pp} micro-batches, a stage holds only "
                          f"the {plan.n_micro} there are: min(n_micro, pp), not pp.")  # fmt: skip
    return out


def micro_layer(m: Model, plan: Plan, batch: int) -> float:
    return cost.micro_tokens(m, plan, batch) * cost.layer_bytes_per_token(m, plan.tp)


# ------------------------------------------------------------------ step_time


def time(m: Model, hw: Hardware, plan: Plan, batch: int) -> list[tuple[dict[str, float], str]]:
    right = cost.step_time(m, hw, plan, batch)

    def variant(**terms: float) -> dict[str, float]:
        base = {k: right[k] for k in cost.TIME_KEYS[:-2]}
        return cost.finish(m, hw, {**base, **terms}, batch)

    model = cost.train_flops(m, batch * m.seq)

    def costed(**how: Any) -> dict[str, float]:
        return cost.step_time(m, hw, plan, batch, cost.Costing(**how))

    out = [
        (costed(extra_hop=1), "A ring of N devices takes N − 1 steps (2·(N − 1) for an "
         "all-reduce), not N: after N − 1 hops every block has reached every device."),
        (costed(wire_bytes=1), "The collectives are counted in elements, not bytes: each "
         "element of a bf16 activation or weight is 2 bytes on the wire."),
    ]  # fmt: skip
    if plan.dp > 1 and cost.weight_shards(plan) > 1:
        out.append((costed(dp_volume="model"), "dp all-reduces each chip's gradient shard, "
                    "2·P/(fsdp·tp·pp), not the whole model's gradient 2·P: fsdp, tp and pp have "
                    "already split it."))  # fmt: skip
    if plan.dp > 1 and plan.fsdp > 1:
        out.append((costed(dp_volume="column"), f"dp all-reduces the gradient shard after fsdp "
                    f"= {plan.fsdp} has reduce-scattered it: 2·P/(fsdp·tp·pp), not "
                    "2·P/(tp·pp)."))  # fmt: skip
    if plan.dp > 1 and plan.grads != "bf16":
        out.append((costed(grads_sent_as_kept=True), f"grads = {plan.grads!r} is what the "
                    "optimizer keeps (memory only): dp all-reduces the gradients in bf16, 2 "
                    f"bytes an element, not {GRADS[plan.grads]}."))  # fmt: skip
    if plan.fsdp > 1:
        out.append((costed(fsdp_volume_of_a_chip=True), "fsdp's rings take V, the whole "
                    "stage's weights each all-gather builds (and each reduce-scatter starts "
                    f"from), 2·P/(tp·pp): not the shard one chip holds, V/fsdp = V/{plan.fsdp}."))  # fmt: skip
        out.append((costed(tokens_over_fsdp=False), f"fsdp = {plan.fsdp} splits the batch too: "
                    "a chip's micro-batch is B/(dp·fsdp·n_micro) sequences, not B/(dp·n_micro)."))  # fmt: skip
    if plan.dp > 1:
        out.append((costed(tokens_over_dp=False), f"dp = {plan.dp} splits the batch: a chip's "
                    "micro-batch is B/(dp·fsdp·n_micro) sequences, not B/(fsdp·n_micro)."))  # fmt: skip
    if plan.pp > 2:
        out.append((costed(pp_hops_of_the_line=True), f"A chip sends each micro-batch's "
                    "activation one hop, to the next stage (and its gradient one hop back): "
                    f"not pp − 1 = {plan.pp - 1} hops, the line's boundaries — they are other "
                    "chips' sends, at the same time."))  # fmt: skip
    if plan.pp > 1:
        out.append((costed(bubble=False), f"pp = {plan.pp} stages leave a bubble: "
                    "compute·(pp − 1)/n_micro seconds of idle stages per step, not 0."))  # fmt: skip
    for axis in ("fsdp", "dp", "pp"):  # an axis's span without the axes inside it
        if getattr(plan, axis) > 1 and costed(span_without_inner=(axis,)) != right:
            inside = {"fsdp": "tp", "dp": "tp·fsdp", "pp": "tp·fsdp·dp"}[axis]
            out.append((costed(span_without_inner=(axis,)), f"A group of {axis} spans the "
                        f"axes inside it too (mesh order tp, fsdp, dp, pp, innermost first): "
                        f"{inside}·{axis} = {cost.inner(plan, axis) * getattr(plan, axis)} "
                        f"chips, not {axis} = {getattr(plan, axis)} alone. Whether its ring "
                        "stays in a node is read from that span."))  # fmt: skip
    if costed(link_by_span=True) != right:
        out.append((costed(link_by_span=True), "A ring stays inside a node only when its groups "
                    "tile the node (the node's size is a multiple of the span: inner axes × the "
                    "axis); a span smaller than a node that does not divide it makes some groups "
                    "straddle two nodes."))  # fmt: skip
    if not cost.within_node(hw, plan, "tp"):
        intra = (hw.intra_bandwidth, hw.intra_latency)
        nodes = -(-plan.tp // hw.chips_per_node)
        out.append((variant(tp=cost.tp_time(m, hw, plan, batch, over=intra)),
                    f"Tensor parallelism across nodes: tp = {plan.tp} groups do not fit the "
                    f"{hw.chips_per_node} chips of a node (they span {nodes}), so its "
                    "all-reduces cross the inter-node link, not NVLink."))  # fmt: skip
    if plan.remat == "block":
        c = right["compute"] * 3 / 4
        out += [
            (variant(compute=c, bubble=c * (plan.pp - 1) / plan.n_micro), "With remat the "
             "forward runs twice: the hardware does 4/3 of the model FLOPs."),
            (variant(tp=right["tp"] * 4 / 6), "With remat the recomputed forward does its two "
             "all-reduces again: 6 per layer and micro-batch, not 4."),
        ]  # fmt: skip
    if plan.pp > 1:
        out.append((variant(bubble=right["compute"] * (plan.pp - 1) / (plan.n_micro + plan.pp - 1)),
                    "(p − 1)/(m + p − 1) is the bubble's share of the whole pipelined step; "
                    "the bubble itself is compute · (p − 1)/m."))  # fmt: skip
    if plan.fsdp > 1:
        fs = lambda g, s: cost.fsdp_time(m, hw, plan, gathers=g, scatters=s)  # noqa: E731
        out += [
            (variant(fsdp=fs(1, 0)), "FSDP's bytes counted once: per micro-batch the weights are "
             "all-gathered for the forward, all-gathered again for the backward, and the "
             "gradients reduce-scattered: 2 all-gathers + 1 reduce-scatter."),
            (variant(fsdp=fs(1, 1)), "FSDP counted as two passes of its ring per micro-batch, "
             "not three (an all-gather and a reduce-scatter take the same time here, so the "
             "value cannot tell which is missing): the weights are gathered for the forward, "
             "gathered again for the backward (they were freed after the forward), and the "
             "gradients reduce-scattered: 2 all-gathers + 1 reduce-scatter."),
        ]  # fmt: skip
        if plan.n_micro > 1:
            out.append((variant(fsdp=fs(2, 1) / plan.n_micro), "FSDP gathers and "
                        "reduce-scatters for every micro-batch: n_micro times per step."))  # fmt: skip
    out += [
        ({**right, "mfu": 6 * cost.param_count(m) * batch * m.seq
          / (hw.chips * hw.peak_flops * right["total"])},
         "MFU from 6·P·T alone: the attention term 12·L·N·H·S·T is model FLOPs too; take "
         "train_flops."),
    ]  # fmt: skip
    if plan.remat == "block":
        out.append(({**right, "mfu": model * 4 / 3 / (hw.chips * hw.peak_flops * right["total"])},
                    "MFU counts model FLOPs only: the recomputed forward is work the hardware "
                    "does (that ratio is HFU), not model FLOPs."))  # fmt: skip
    return out


# ------------------------------------------------------------------ matching


def matching(
    got: dict[str, float],
    want: dict[str, float],
    keys: tuple[str, ...],
    suspects: list,
    probes: Sequence[tuple[dict[str, float], dict[str, float], list]] = (),
    agreed: Sequence[tuple[dict[str, float], list]] = (),
) -> tuple[str | None, str | None]:
    """(the first key whose value differs, the diagnoses whose value for it is the student's).
    ``probes``: (the student's answer, the right one, the suspects) on other examples where
    the answer is wrong; where several diagnoses match here, only those that give the
    student's answer on every probe too are named (all of them where none does: two
    mistakes at once, say). ``agreed``: (the right answer, the suspects) on other examples
    the student got right: a diagnosis whose mistake gets one of them wrong is never named
    (a dp time twice too long, with fsdp = 2, is no fsdp left out where the plan with no
    fsdp has the right dp time)."""
    first, hints = matches(got, want, keys, suspects)
    hints = [h for h in hints if not any(_wrong_there(h, right, there, keys)
                                         for right, there in agreed)]  # fmt: skip
    if len(hints) > 1 and probes:
        hints = [h for h in hints if all(_gives(h, *probe, keys) for probe in probes)] or hints
    if first is not None and want.get(first):  # your factor constant, the mistake's not
        ratio = got[first] / want[first]
        hints = [h for h in hints
                 if not any(_refuted(h, first, ratio, *probe) for probe in probes)]  # fmt: skip
    if not hints:
        return first, None
    return first, hints[0] if len(hints) == 1 else "One of these: " + " Or: ".join(hints)


def mistake_of(hint: str) -> str:
    """A diagnosis with its example's numbers left out: the mistake it names, the same on
    every example (``"dp = # splits the batch: …"``)."""
    return re.sub(r"\d+", "#", hint)


def _wrong_there(hint: str, right: dict[str, float], suspects: list,
                 keys: tuple[str, ...]) -> bool:  # fmt: skip
    """The mistake ``hint`` names gets this example wrong, where the student got it right."""
    same = [values for values, h in suspects if mistake_of(h) == mistake_of(hint)]
    return any(any(not close(v[k], right[k]) for k in keys if k in v) for v in same)


def _refuted(hint: str, key: str, ratio: float, got: dict[str, float],
             want: dict[str, float], suspects: list) -> bool:  # fmt: skip
    """The student's ``key`` (the term ``hint`` was named by) is the same factor ``ratio``
    of the right one on this probe as on the example, and the mistake ``hint`` names gives
    another factor here: a constant slip, not that mistake (fsdp's rings on one chip's
    shard give 1/fsdp: ½ at fsdp = 2, 1/16 at fsdp = 16, where the student's is ½ on
    both). A factor of the student's that varies too is not read (a mistake in part of
    the term: activations in float32 in the recomputed layer only)."""
    same = [values for values, h in suspects if mistake_of(h) == mistake_of(hint)]
    if not same or not want.get(key) or not got.get(key) or ratio <= 0:
        return False
    mine = abs(math.log(got[key] / want[key] / ratio))  # how far your factor moved

    def moved(v: dict[str, float]) -> float:  # how far the mistake's factor moves
        return abs(math.log(v[key] / want[key] / ratio)) if v.get(key, 0) > 0 else math.inf

    # (a latency term no factor reaches moves yours a little: ½ becomes 0.5001)
    return all(key in v and not close(v[key], got[key]) and moved(v) > 4 * mine + 0.05
               for v in same)  # fmt: skip


def _gives(hint: str, got: dict[str, float], want: dict[str, float], suspects: list,
           keys: tuple[str, ...]) -> bool:  # fmt: skip
    """The mistake ``hint`` names gives the student's (wrong) answer on this probe: its
    value there equals the student's on the first wrong term."""
    first = next((k for k in keys if not close(got[k], want[k])), None)
    same = [values for values, h in suspects if mistake_of(h) == mistake_of(hint)]
    return first is not None and any(close(v[first], got[first]) for v in same)


def matches(
    got: dict[str, float], want: dict[str, float], keys: tuple[str, ...], suspects: list
) -> tuple[str | None, list[str]]:
    """(the first key whose value differs, every diagnosis whose value for it is the
    student's: those that give every term as the student's where any does)."""
    first = next(
        (k for k in keys if not close(got[k], want[k]) and not both_zero(got[k], want[k])), None
    )
    if first is None:
        return None, []
    hints, whole = [], []
    for values, hint in suspects:
        shown = close(values[first], got[first]) and not close(values[first], want[first])
        if shown and hint not in hints:
            hints.append(hint)
            if all(close(values[k], got[k]) or both_zero(values[k], got[k]) for k in keys):
                whole.append(hint)
    return first, whole or hints  # a suspect giving every term as the student's explains more


def both_zero(a: float, b: float) -> bool:
    return abs(a) <= 1e-300 and abs(b) <= 1e-300


# ------------------------------------------------------------------ best_plan


MEMORY_MISTAKES = ("elements", "act-fp32", "tokens-fsdp", "tokens-dp", "no-optimizer",
                   "no-master", "no-activations", "dp-shards", "tp-residual", "gpipe",
                   "no-remat", "no-recompute-layer", "held-pp")  # fmt: skip
"""The memory mistakes a search can be rebuilt with (:func:`memory_variants`' names)."""


def searches(m: Model, hw: Hardware, batch: int) -> list[tuple[cost.Rules, Any]]:
    """Each known way of searching wrongly: the rules of a search that makes it, and its
    diagnosis (a text, or a function of the student's plan). ``BestPlan`` names those whose
    best plan is the student's (and not the right one), every one of them when several are."""
    out: list[tuple[cost.Rules, Any]] = [
        (cost.Rules(fit_strictly=True), "A plan fits when its memory_per_chip total is at "
         "most hw.hbm_bytes (≤): the best plan needs exactly that much here, and your search "
         "dropped it (< where ≤)."),
        (cost.Rules(micro_more_than_stages=True), "n_micro = pp is allowed: a pipeline needs at "
         "least pp micro-batches (n_micro ≥ pp), not more than pp (and pp = 1 runs with "
         "n_micro = 1)."),
        (cost.Rules(pipeline_micro_more_than_stages=True), "n_micro = pp is allowed in a "
         "pipeline: pp stages need at least pp micro-batches (n_micro ≥ pp), not more than pp. "
         "The best plan here runs exactly as many micro-batches as stages, and your search "
         "skipped it."),
        (cost.Rules(micro_at_least_stages=False), "Search only n_micro ≥ pp: a pipeline of p "
         "stages needs at least p micro-batches."),
        (cost.Rules(tp_in_node=False), "Tensor parallelism stays inside a node: search only tp "
         "that divide hw.chips_per_node (and the heads)."),
    ]  # fmt: skip
    for share in (0.95, 0.9, 0.85, 0.8):
        out.append((cost.Rules(hbm_share=share), f"Your search holds back a margin: your plan "
                    f"is the best when only {share:.0%} of hw.hbm_bytes may be used (or less). "
                    "A plan fits when its memory_per_chip total is at most hw.hbm_bytes, "
                    "nothing held back."))  # fmt: skip
    for name in MEMORY_MISTAKES:

        def held(plan: Plan, name: str = name) -> float:
            v = memory_variants(m, plan, batch).get(name)
            return (v[0] if v else cost.memory_per_chip(m, plan, batch))["total"]

        def says(got: Plan, want: Plan, name: str = name) -> str:
            # the mistake may change other plans' memory and not yours (tokens not divided
            # by dp where your dp = 1): then it is said of the best plan, which it dropped
            for plan, on in (
                (got, ""),
                (want, f" (it changes the memory of the best plan, {want}, not of yours)"),
            ):
                hint = memory_variants(m, plan, batch).get(name)
                if hint is not None:
                    return ("Your plan is the best one when memory is counted with this "
                            f"mistake{on} (memory_per_chip's own grade names it): {hint[1]}")  # fmt: skip
            return ("Your plan is the best one when memory is counted with one of "
                    "memory_per_chip's mistakes (its own grade names it).")  # fmt: skip

        out.append((cost.Rules(memory=held), says))
    for value, hint in params(m):
        out.append((cost.Rules(memory=lambda plan, v=value: cost.memory_per_chip(
            m, plan, batch, params=v)["total"]), "Your plan is the best one when the parameters "
            f"are counted with this mistake (param_count's own grade names it): {hint}"))  # fmt: skip
    return out


def search_matches(m: Model, hw: Hardware, batch: int, got: Plan, want: Plan) -> list[str]:
    """The diagnoses of :func:`searches` whose search returns ``got`` (and not ``want``)."""
    hints = []
    for rules, hint in searches(m, hw, batch):
        rows = cost.ranked(m, hw, batch, rules)
        if rows and rows[0][0] == got != want:
            text = hint(got, want) if callable(hint) else hint
            margin = "holds back a margin" in text
            if text not in hints and not (margin and any("holds back" in h for h in hints)):
                hints.append(text)  # one margin: the largest share that gives the plan
    return hints
