"""What each known mistake gives on an example: (value, diagnosis) pairs.

A diagnosis is named only when the student's answer equals the mistake's
value and the right answer differs from it (:class:`grader.checks.scalar.Suspicion`
for numbers, :func:`matching` for a dict of terms, term by term).
"""

from __future__ import annotations

from typing import Any

from grader.checks.scalar import close
from grader.lessons.l14_planning import cost
from grader.lessons.l14_planning.records import Hardware, Model, Plan

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


# ------------------------------------------------------------------ train_flops


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
    ]  # fmt: skip


# ------------------------------------------------------------------ memory_per_chip


def memory(m: Model, plan: Plan, batch: int) -> list[tuple[dict[str, float], str]]:
    right = cost.memory_per_chip(m, plan, batch)
    p, w = cost.param_count(m), cost.weight_shards(plan)

    def variant(**terms: float) -> dict[str, float]:
        base = {k: right[k] for k in cost.MEMORY_KEYS[:-1]}
        return cost.with_total({**base, **terms})

    acts = lambda **kw: cost.activation_bytes(m, plan, batch, **kw)  # noqa: E731
    out = [
        (variant(optimizer=0.0), "The optimizer state is forgotten: Adam keeps two float32 "
         "moments and a float32 master copy of every weight, 12 bytes per parameter."),
        (variant(optimizer=8 * p / w), "The float32 master weights are forgotten: besides m and "
         "v (8 bytes), mixed precision keeps a float32 copy of every weight, 12 bytes in all."),
        (variant(activations=0.0), "The activations are forgotten: the backward needs what the "
         "forward computed, min(n_micro, pp) micro-batches of it per stage."),
        (variant(params=right["params"] / plan.dp, grads=right["grads"] / plan.dp,
                 optimizer=right["optimizer"] / plan.dp),
         f"dp = {plan.dp} does not shard the weights: every data-parallel replica holds the "
         "same copy. Only fsdp·tp·pp divide params, grads and optimizer state."),
        (variant(activations=acts(replicated_over_tp=False)), f"tp = {plan.tp} does not shard "
         "the 4·D part: each block's input and its norm's output are whole on every tp chip "
         "(Megatron without sequence parallelism); only Q, K, V, the attention output and "
         "SwiGLU's activations are split."),
        (variant(activations=acts(held=plan.n_micro)), "1F1B holds min(n_micro, pp) "
         "micro-batches on the first stage, not all n_micro (that is GPipe)."),
    ]  # fmt: skip
    if plan.remat == "block":
        out += [
            (variant(activations=acts(remat="none")), "Counted without remat: with "
             "remat='block' a layer keeps only its input, 2·D bytes per token, and recomputes "
             "the rest in the backward."),
            (variant(activations=acts() - micro_layer(m, plan, batch)), "With remat, one "
             "layer's full activations of one micro-batch are alive while it is recomputed: "
             "add tokens · 2·(4·D + (2·H·(N + K) + 3·F)/tp)."),
        ]  # fmt: skip
    if plan.n_micro < plan.pp:
        out.append((variant(activations=acts(held=plan.pp)), f"With n_micro = {plan.n_micro} < "
                    f"pp = {plan.pp} micro-batches, a stage holds only the {plan.n_micro} there "
                    "are: min(n_micro, pp), not pp."))  # fmt: skip
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
    out = []
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
            (variant(fsdp=fs(1, 1)), "The backward gathers the weights again (they were freed "
             "after the forward): 2 all-gathers + 1 reduce-scatter per micro-batch."),
            (variant(fsdp=fs(2, 0)), "The gradients are reduce-scattered over fsdp too: 2 "
             "all-gathers + 1 reduce-scatter per micro-batch."),
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
    got: dict[str, float], want: dict[str, float], keys: tuple[str, ...], suspects: list
) -> tuple[str | None, str | None]:
    """(the first key whose value differs, the diagnoses whose value for it is the student's)."""
    first = next(
        (k for k in keys if not close(got[k], want[k]) and not both_zero(got[k], want[k])), None
    )
    if first is None:
        return None, None
    hints = []
    for values, hint in suspects:
        shown = close(values[first], got[first]) and not close(values[first], want[first])
        if shown and hint not in hints:
            hints.append(hint)
    if not hints:
        return first, None
    return first, hints[0] if len(hints) == 1 else "One of these: " + " Or: ".join(hints)


def both_zero(a: float, b: float) -> bool:
    return abs(a) <= 1e-300 and abs(b) <= 1e-300
