"""Lesson 14: the reference cost model against published runs, the figures the
lesson text quotes, its diagnoses, and the bridge to lesson 12's measured bytes."""

from __future__ import annotations

import dataclasses
import math
import re

import pytest

from grader import engine
from grader.checks.scalar import RAISES, close
from grader.expected.l14_planning import cost, suspects
from grader.lessons.l14_planning import spec
from grader.lessons.l14_planning.records import HARDWARE, MODELS, Hardware, Model, Plan
from grader.loader import load_module
from grader.runtime import InProcess

H100, A100, V5P = HARDWARE["h100-sxm"], HARDWARE["a100-80gb"], HARDWARE["tpu-v5p"]


def cluster(hw, chips: int):
    return dataclasses.replace(hw, chips=chips)


# ------------------------------------------------------------------ the real world


@pytest.mark.parametrize(
    "name, published", [("llama-3-8b", 8e9), ("llama-3-70b", 70e9), ("llama-3-405b", 405e9)]
)
def test_param_count_is_within_one_percent_of_llama_3(name, published):
    """The Llama 3 Herd of Models (2024): 8B, 70B and 405B, from the configs of its table."""
    assert abs(cost.param_count(MODELS[name]) / published - 1) < 0.01


def test_llama_3_configs_are_the_published_ones():
    m = {k: dataclasses.astuple(v)[1:] for k, v in MODELS.items()}  # L, D, F, N, K, H, V, S
    assert m["llama-3-8b"] == (32, 4096, 14336, 32, 8, 128, 128256, 8192)
    assert m["llama-3-70b"] == (80, 8192, 28672, 64, 8, 128, 128256, 8192)
    assert m["llama-3-405b"] == (126, 16384, 53248, 128, 8, 128, 128256, 8192)


def test_the_scaling_books_llama_3_70b_example():
    """How to Scale Your Model, "Training LLaMA 3 on TPUs": about 70B parameters,
    6·P·T = 6.3e24 FLOPs for 15T tokens, 44 days on a v5p pod (8960 chips) at 40% MFU."""
    m, tokens = MODELS["llama-3-70b"], 15e12
    p = cost.param_count(m)
    assert abs(p / 70e9 - 1) < 0.01
    dense = 6 * p * tokens
    assert abs(dense / 6.3e24 - 1) < 0.01
    days = dense / (V5P.chips * V5P.peak_flops * 0.4) / 86400
    assert abs(days / 44 - 1) < 0.02 and round(days, 1) == 44.7
    # the lesson's addition: attention's FLOPs at S = 8192 make it 15% more, 51.5 days
    full = cost.train_flops(m, tokens)
    assert round(full / dense, 3) == 1.152
    assert round(full / (V5P.chips * V5P.peak_flops * 0.4) / 86400, 1) == 51.5


def test_the_llama_3_405b_run_beside_its_published_throughput():
    """The Llama 3 paper's 405B run on 8,192 H100s: TP 8, PP 16, DP 64, 16M tokens per batch,
    430 TFLOP/s per GPU. The lesson's figures for the reference's prediction."""
    m, hw = MODELS["llama-3-405b"], cluster(H100, 8192)
    batch = 16 * 2**20 // m.seq
    assert batch == 2048 and 64 * 8 * 16 == 8192
    plan = Plan(64, 1, 8, 16, 32, "block")  # one sequence per micro-batch: our assumption
    t, mem = cost.step_time(m, hw, plan, batch), cost.memory_per_chip(m, plan, batch)
    assert round(430e12 / H100.peak_flops, 3) == 0.435
    assert round(t["mfu"], 3) == 0.424 and round(t["total"], 2) == 12.89
    assert round(t["bubble"] / t["total"], 3) == 0.265
    assert round(mem["total"] / 1e9, 1) == 86.0 and mem["total"] > hw.hbm_bytes  # no ZeRO-1 here
    without = cost.step_time(m, hw, dataclasses.replace(plan, remat="none"), batch)
    assert round(without["mfu"], 3) == 0.564


def test_the_llama_3_405b_runs_like_for_like():
    """The text's table: remat "none" (the paper trained 8K sequences without activation
    checkpointing) on 8,192 GPUs (DP 64, 430 TFLOP/s) and 16,384 (DP 128, 400 TFLOP/s)."""
    m, batch = MODELS["llama-3-405b"], 2048
    rows = {}
    for gpus, dp, tflops in ((8192, 64, 430), (16384, 128, 400)):
        plan = Plan(dp, 1, 8, 16, batch // dp, "none")
        t = cost.step_time(m, cluster(H100, gpus), plan, batch)
        mem = cost.memory_per_chip(m, plan, batch)
        rows[gpus] = (round(t["total"], 2), round(t["mfu"], 3),
                      round(tflops * 1e12 / H100.peak_flops / t["mfu"], 2),
                      round(mem["total"] / 1e9))  # fmt: skip
        remat = cost.step_time(m, cluster(H100, gpus), dataclasses.replace(plan, remat="block"),
                               batch)  # fmt: skip
        rows[gpus] += (round(remat["mfu"], 3),)
    assert rows == {8192: (9.68, 0.564, 0.77, 236, 0.424), 16384: (6.25, 0.437, 0.93, 236, 0.33)}
    fsdp = cost.step_time(m, cluster(H100, 8192), Plan(1, 64, 8, 16, 32, "none"), batch)
    assert round(fsdp["fsdp"]) == 12


# Narayanan et al., "Efficient Large-Scale Language Model Training on GPU Clusters Using
# Megatron-LM" (SC'21, arXiv 2104.04473), Table 1: every GPT model, V = 51,200, S = 2,048, on
# DGX A100-80GB nodes. Columns: billions of parameters, heads, hidden size, layers, tensor- and
# pipeline-parallel size, GPUs, batch (sequences), TFLOP/s per GPU, % of peak, aggregate PFLOP/s.
MEGATRON_TABLE_1 = [
    (1.7, 24, 2304, 24, 1, 1, 32, 512, 137, 44, 4.4),
    (3.6, 32, 3072, 30, 2, 1, 64, 512, 138, 44, 8.8),
    (7.5, 32, 4096, 36, 4, 1, 128, 512, 142, 46, 18.2),
    (18.4, 48, 6144, 40, 8, 1, 256, 1024, 135, 43, 34.6),
    (39.1, 64, 8192, 48, 8, 2, 512, 1536, 138, 44, 70.8),
    (76.1, 80, 10240, 60, 8, 4, 1024, 1792, 140, 45, 143.8),
    (145.6, 96, 12288, 80, 8, 8, 1536, 2304, 148, 47, 227.1),
    (310.1, 128, 16384, 96, 8, 16, 1920, 2160, 155, 50, 297.4),
    (529.6, 128, 20480, 105, 8, 35, 2520, 2520, 163, 52, 410.2),
    (1008.0, 160, 25600, 128, 8, 64, 3072, 3072, 163, 52, 502.0),
]
GPT_VOCAB, GPT_SEQ = 51200, 2048

# What the lesson text's table quotes for each row (keeps the text and the reference in step):
# reference step (s), reference MFU.
MEGATRON_REFERENCE = {
    1.7: (1.95, 0.645), 3.6: (2.13, 0.604), 7.5: (2.35, 0.556), 18.4: (5.75, 0.541),
    39.1: (8.57, 0.567), 76.1: (9.52, 0.573), 145.6: (15.21, 0.584), 310.1: (23.94, 0.587),
    529.6: (36.45, 0.583), 1008.0: (68.72, 0.586),
}  # fmt: skip


def megatron_gpt(heads: int, hidden: int, layers: int) -> Model:
    """A GPT model of the table in this lesson's terms: multi-head attention (K = N, H = h/N),
    and F = 8·h/3 rounded, so that SwiGLU's 3·h·F holds the GPT MLP's 8·h² (two h×4h matrices)."""
    return Model(f"gpt-{layers}x{hidden}", layers, hidden, round(8 * hidden / 3), heads, heads,
                 hidden // heads, GPT_VOCAB, GPT_SEQ)  # fmt: skip


@pytest.mark.parametrize("row", MEGATRON_TABLE_1, ids=lambda r: f"{r[0]}B")
def test_the_megatron_lm_table_beside_the_reference(row):
    """Each row of Narayanan et al.'s Table 1, laid out as published (Megatron's data parallelism
    replicates the optimizer state: this lesson's dp, fsdp = 1), with the paper's activation
    recomputation (remat="block") and one sequence per micro-batch (our assumption)."""
    billions, heads, hidden, layers, tp, pp, gpus, batch, tflops, percent, aggregate = row
    v, s = GPT_VOCAB, GPT_SEQ
    # the published row is self-consistent: % of peak and the aggregate from TFLOP/s per GPU
    assert round(100 * tflops / A100.peak_flops * 1e12) == percent
    assert abs(aggregate * 1e3 / gpus - tflops) <= 0.5 + 0.05e3 / gpus
    # the table's sizes are the paper's formula, 12·l·h²·(1 + 13/(12h) + (V + s)/(12·l·h)):
    # tied embeddings, learned positions, biases and layer norms (13·l·h)
    paper_p = 12 * layers * hidden**2 + 13 * layers * hidden + (v + s) * hidden
    assert round(paper_p / 1e9, 1) == billions
    m = megatron_gpt(heads, hidden, layers)
    assert m.heads * m.head_dim == hidden
    p = cost.param_count(m)
    # the reference counts an untied unembedding (+V·h), no positions (−s·h), no biases or norms
    # (−13·l·h), and F's rounding: exactly these, and within 4% of the table (3.8% at 1.7B)
    rounding = layers * (3 * hidden * m.d_ff - 8 * hidden**2)
    assert p - paper_p == v * hidden - s * hidden - 13 * layers * hidden + rounding
    assert abs(p / (billions * 1e9) - 1) < 0.04
    if billions == 1.7:  # the text: +6.8% over the formula's 1.652B, +3.8% over the label
        assert (round(p / paper_p - 1, 3), round(p / 1.7e9 - 1, 3)) == (0.068, 0.038)
    # the published layout, in the reference
    hw = cluster(A100, gpus)
    dp = gpus // (tp * pp)
    plan = Plan(dp, 1, tp, pp, batch // dp, "block")
    assert cost.broken_rule(m, hw, plan, batch) is None
    assert cost.memory_per_chip(m, plan, batch)["total"] < hw.hbm_bytes
    t = cost.step_time(m, hw, plan, batch)
    # the published time per step: the paper's FLOPs per iteration (its Eq. 3, which counts the
    # recomputed forward) over what the GPUs did per second
    eq3 = 96 * batch * s * layers * hidden**2 * (1 + s / (6 * hidden) + v / (16 * layers * hidden))
    published_step = eq3 / (gpus * tflops * 1e12)
    # the reference is faster on every row (matmuls at peak, nothing else on the chip), but
    # within a factor of two
    assert 1.4 < published_step / t["total"] < 1.9
    # the published MFU-equivalent: the paper's hardware FLOPs are 4/3 of the model FLOPs (the
    # logits are not recomputed, so a little less); ×3/4 is within 2% of the model FLOPs of Eq. 3
    # without the recompute, 72·B·s·l·h²·(1 + s/(6h) + V/(12·l·h))
    published_mfu = tflops * 1e12 * 3 / 4 / A100.peak_flops
    model = (
        72 * batch * s * layers * hidden**2 * (1 + s / (6 * hidden) + v / (12 * layers * hidden))
    )
    assert abs(model / (gpus * A100.peak_flops * published_step) / published_mfu - 1) < 0.02
    assert t["mfu"] > published_mfu and 0.3 < published_mfu < 0.4
    # the reference's own HFU, beside the published % of peak
    hfu = t["mfu"] * cost.hardware_flops(m, plan, batch) / cost.train_flops(m, batch * s)
    assert hfu > tflops * 1e12 / A100.peak_flops
    assert (round(t["total"], 2), round(t["mfu"], 3)) == MEGATRON_REFERENCE[billions]


def test_the_megatron_1t_row_needs_its_recomputation():
    """Without remat the 1T layout needs more than 80 GB even by the reference's count."""
    m, hw, batch = megatron_gpt(160, 25600, 128), cluster(A100, 3072), 3072
    plan = Plan(6, 1, 8, 64, 512, "none")
    assert cost.memory_per_chip(m, plan, batch)["total"] > hw.hbm_bytes
    assert cost.memory_per_chip(m, dataclasses.replace(plan, remat="block"), batch)["total"] < 50e9


# Chowdhery et al., "PaLM: Scaling Language Modeling with Pathways" (arXiv 2204.02311). Table 1 and its
# caption: 118 layers, 48 heads of 256, d_model 18,432, d_ff = 4·d_model, 540.35B parameters, batch
# 512 → 1024 → 2048 sequences. §2: SwiGLU, "parallel" attention and MLP, multi-query attention (one
# key/value head), shared input and output embeddings, a 256k vocabulary. §4: two TPU v4 pods of 3,072
# chips; in each pod every weight is split 12 ways (model) by 256 ways (fully sharded data), the pods are
# two-way data parallel over the data-center network; weights are all-gathered over the data axis, one
# activation is kept per layer and the rest rematerialized; the gradient exchange is a burst of 81 Tbps
# across the 1,536 hosts. §4.1: 238.3K tokens/s at batch 2,048, MFU 45.7% without attention and 46.2%
# with it, HFU 57.8%. §5: sequences of 2,048 tokens. TPU v4 (Cloud TPU docs): 275 TFLOP/s bf16 and
# 32 GiB of HBM a chip. Our assumptions: 256k = 256,000 (which gives the 540.35B), ICI links of
# 400 Gb/s each way (50 GB/s: the TPU v4 paper, Jouppi et al., ISCA 2023), a pod as one "node", the
# DCN share of a chip the 81 Tbps burst over 6,144 chips, and no gradient accumulation (n_micro = 1).
PALM_540B = Model("palm-540b", 118, 18432, 4 * 18432, 48, 1, 256, 256000, 2048)
TPU_V4_PALM = Hardware("tpu-v4", 6144, 3072, 275e12, 32 * 2**30, 50e9, 1e-6, 81e12 / 8 / 6144, 5e-6)

# Jiang et al., "MegaScale: Scaling Large Language Model Training to More Than 10,000 GPUs" (NSDI '24,
# arXiv 2402.15627). Table 1: the 175B model has 128 heads, hidden size 12,288, 96 layers, TP 8, PP 8.
# §6.1: sequence 2,048, vocabulary 64,000, interleaved pipeline with 6 stages a GPU, Ampere GPUs.
# Table 2: batch 6,144 on 12,288 GPUs, 6.34 s an iteration, 1,984.0k tokens/s, MFU 55.2%. Our
# assumptions: the lesson's A100-80GB record, one sequence per micro-batch, fsdp = 1.
MEGASCALE_175B = Model("gpt-175b", 96, 12288, 8 * 12288 // 3, 128, 128, 96, 64000, 2048)

# What the lesson text's table quotes for each row: the reference's terms (s), its step and MFU, the
# published step, published/reference step, and memory a chip (GB).
OTHER_RUNS = {
    "palm": {"compute": 10.94, "bubble": 0.0, "tp": 7.86, "fsdp": 5.43, "dp": 0.22, "pp": 0.0,
             "total": 24.44, "mfu": 0.336, "published": 17.6, "ratio": 0.72, "memory": 40.0},
    "megascale": {"compute": 3.55, "bubble": 0.78, "tp": 0.47, "fsdp": 0.0, "dp": 0.44, "pp": 0.13,
                  "total": 5.37, "mfu": 0.662, "published": 6.34, "ratio": 1.18, "memory": 70.5},
}  # fmt: skip


def rounded(t: dict[str, float]) -> dict[str, float]:
    return {k: round(v, 3 if k == "mfu" else 2) for k, v in t.items()}


def test_palm_540b_on_its_own_layout():
    """PaLM's published figures are self-consistent in this lesson's terms, and the reference, on
    PaLM's layout (dp 2 across pods, fsdp 256, tp 12, remat), is slower than the published step."""
    m, hw, batch = PALM_540B, TPU_V4_PALM, 2048
    # the paper's count ties the embeddings (V·D once); param_count counts them twice (+0.9%)
    tied = cost.param_count(m) - m.vocab * m.d_model
    assert round(tied / 1e9, 2) == 540.35
    assert round(cost.param_count(m) / tied - 1, 3) == 0.009
    # the published MFU is 6·P (and PaLM's attention term, this lesson's) at 238.3K tokens/s
    tokens_per_s = 238.3e3
    peak = hw.chips * hw.peak_flops
    assert round(6 * tied * tokens_per_s / peak, 3) == 0.457
    attention = cost.attention_flops(m, 1)
    assert round((6 * tied + attention) * tokens_per_s / peak, 3) == 0.462
    plan = Plan(2, 256, 12, 1, 1, "block")
    assert cost.broken_rule(m, hw, plan, batch) is None
    # tp stays in a pod (ICI), fsdp's 12·256 chips are one pod, dp crosses the DCN
    assert [cost.within_node(hw, plan, a) for a in ("tp", "fsdp", "dp")] == [True, True, False]
    t = cost.step_time(m, hw, plan, batch)
    mem = cost.memory_per_chip(m, plan, batch)
    published = batch * m.seq / tokens_per_s
    row = {**rounded(t), "mfu": round(t["mfu"], 3), "published": round(published, 2),
           "ratio": round(published / t["total"], 2), "memory": round(mem["total"] / 1e9, 1)}  # fmt: skip
    assert row == OTHER_RUNS["palm"]
    # the reference's memory is over the 32 GiB: it keeps each block's input whole on every tp chip,
    # where PaLM keeps one fully sharded activation a layer
    assert mem["total"] > hw.hbm_bytes
    # the published step lies between the reference with all its communication and with none
    assert t["compute"] + t["dp"] < published < t["total"]
    assert (round(t["compute"] + t["dp"], 2), round(t["tp"] + t["fsdp"], 1)) == (11.16, 13.3)
    # the DCN share of a chip: the paper's 81 Tb/s burst over 6,144 chips, 1.6 GB/s
    assert round(hw.inter_bandwidth / 1e9, 1) == 1.6


def test_megascale_175b_on_12288_gpus():
    """MegaScale's 175B run at its published layout (TP 8, PP 8, DP 192): the reference with no
    recompute (it fits in 80 GB) is faster than the published 6.34 s; with remat it is slower."""
    m, hw, batch = MEGASCALE_175B, cluster(A100, 12288), 6144
    assert round(cost.param_count(m) / 1e9) == 176 and m.heads * m.head_dim == m.d_model
    # the published row is self-consistent: 6,144 sequences of 2,048 in 6.34 s are 1,984k tokens/s
    assert abs(batch * m.seq / 6.34 / 1984.0e3 - 1) < 0.001
    dp = hw.chips // (8 * 8)
    assert dp == 192
    plan = Plan(dp, 1, 8, 8, batch // dp, "none")
    assert cost.broken_rule(m, hw, plan, batch) is None
    t = cost.step_time(m, hw, plan, batch)
    mem = cost.memory_per_chip(m, plan, batch)
    row = {**rounded(t), "mfu": round(t["mfu"], 3), "published": 6.34,
           "ratio": round(6.34 / t["total"], 2), "memory": round(mem["total"] / 1e9, 1)}  # fmt: skip
    assert row == OTHER_RUNS["megascale"] and mem["total"] < hw.hbm_bytes
    assert round(t["mfu"] / 0.552, 2) == 1.2
    remat = cost.step_time(m, hw, dataclasses.replace(plan, remat="block"), batch)
    assert (round(remat["total"], 2), round(remat["mfu"], 3)) == (7.05, 0.504)
    assert round(6.34 / remat["total"], 2) == 0.9
    # compute at peak is 56% of the published step; the collectives the reference adds, 1.04 s
    assert round(t["compute"] / 6.34, 2) == 0.56
    assert round(t["tp"] + t["dp"] + t["pp"], 2) == 1.04
    # the bubble the reference charges, against MegaScale's 6 interleaved chunks a GPU
    assert round(t["bubble"] * 5 / 6, 2) == 0.65


def test_the_worked_example():
    """Section 6 of the text: LLaMA-3-70B on 64 H100s, 64 sequences."""
    m, hw = MODELS["llama-3-70b"], cluster(H100, 64)
    rows = cost.ranked(m, hw, 64)
    top = [(p, round(mem["total"] / 1e9, 1), round(t["total"], 2), round(t["mfu"], 3))
           for p, mem, t in rows[:3]]  # fmt: skip
    assert top == [
        (Plan(1, 1, 8, 8, 64, "none"), 77.7, 6.2, 0.652),
        (Plan(2, 1, 4, 8, 32, "block"), 47.0, 7.62, 0.53),
        (Plan(1, 1, 4, 16, 64, "block"), 29.3, 7.86, 0.514),
    ]
    best, mem, t = rows[0]
    assert {k: round(v / 1e9, 2) for k, v in mem.items()} == {
        "params": 2.2, "grads": 2.2, "optimizer": 13.23, "activations": 60.06, "total": 77.7,
    }  # fmt: skip
    assert {k: round(v, 3) for k, v in t.items()} == {
        "compute": 4.04, "bubble": 0.442, "tp": 1.372, "fsdp": 0.0, "dp": 0.0, "pp": 0.344,
        "total": 6.198, "mfu": 0.652,
    }  # fmt: skip
    assert len(cost.plans(m, hw, 64)) == 300 and len(rows) == 75
    unfit, mem, t = cost.ranked(m, hw, 64, fit=False)[0]
    assert (unfit, round(t["total"], 2), round(mem["total"] / 1e9)) == (
        Plan(8, 4, 2, 1, 1, "none"),
        5.2,
        364,
    )
    dp8 = cost.memory_per_chip(m, Plan(8, 1, 8, 1, 8, "none"), 64)
    assert round(dp8["total"] / 1e9) == 201 and round(dp8["optimizer"] / 1e9) == 106
    dp8 = cost.memory_per_chip(m, Plan(8, 1, 8, 1, 8, "block"), 64)
    assert round(dp8["total"] / 1e9, 1) == 152.6


def test_ring_time_is_lesson_3s():
    from grader.expected import l03_cost_model as l03_formulas
    from grader.lessons.l03_cost_model import spec as l03

    for kind in ("all_gather", "reduce_scatter", "all_reduce", "permute"):
        for n in (1, 2, 3, 8, 64):
            for link in l03.LINKS.values():
                want = l03_formulas.ring_time(kind, 3 * 2**20, n, link)
                assert cost.ring_time(kind, 3 * 2**20, n, link.bandwidth, link.latency) == want


def test_the_time_terms_are_the_bytes_over_the_bandwidth():
    """With no latency, each collective term of step_time is step_bytes over the link."""
    m = MODELS["llama-3-8b"]
    hw = dataclasses.replace(cluster(H100, 64), intra_latency=0.0, inter_latency=0.0)
    for plan in (Plan(2, 4, 8, 1, 2, "none"), Plan(4, 2, 2, 4, 8, "block")):
        t = cost.step_time(m, hw, plan, 64)
        act = cost.BF16 * cost.micro_tokens(m, plan, 64) * m.d_model
        b = cost.step_bytes(cost.BF16 * cost.param_count(m), act, m.layers, plan)
        bw = {a: cost.link(hw, plan, a)[0] for a in cost.AXES}
        assert close(t["fsdp"], (b["all-gather"] + b["reduce-scatter"]) / bw["fsdp"])
        dp_bytes = cost.ring_bytes(
            "all_reduce", cost.BF16 * cost.param_count(m) / cost.weight_shards(plan), plan.dp
        )
        assert dp_bytes > 0 and close(t["dp"], dp_bytes / bw["dp"])
        assert close(t["tp"], (b["all-reduce"] - dp_bytes) / bw["tp"])


# ------------------------------------------------------------------ the bridge to lesson 12


@pytest.mark.parametrize("mesh", [(4, 2)])
def test_the_cost_model_predicts_the_bytes_lesson_12s_step_moves(root, mesh):
    """Lesson 12's reference train_step, compiled and measured, against step_bytes: FSDP over
    'data', tp over 'model', one micro-batch, the activations kept (4 all-reduces per layer);
    within the 10% lesson 12 holds a prediction to."""
    from grader.lessons.l12_parallel_transformer import spec as l12

    sol = load_module(root / "solutions", "l12_parallel_transformer")
    ex = {**l12.explicit_examples(engine.context())[0], "mesh": mesh, "heads": 3 * mesh[1]}
    trial = l12.run_train(InProcess(ex), sol.train_step, ex)
    s = l12.sizes(ex)
    shapes = s.shapes()
    weights = sum(math.prod(shapes[k]) for k in l12.NAMES) * l12.ITEMSIZE
    b, seq, d = shapes["x"]
    act = b // s.data * seq * d * l12.ITEMSIZE
    plan = Plan(1, s.data, s.model, 1, 1, "none")
    want = cost.step_bytes(weights, act, shapes["wq"][0], plan)
    for kind in l12.KINDS:
        got = trial.comms.bytes(kind)
        assert abs(got - want[kind]) <= l12.SLACK * want[kind], (kind, got, want[kind])


# ------------------------------------------------------------------ diagnoses


PURE = {"param_count": spec.PARAM_COUNT, "train_flops": spec.TRAIN_FLOPS}


@pytest.mark.parametrize("exercise", sorted(PURE))
def test_every_number_suspect_is_caught_by_the_explicit_examples(exercise):
    scalar = PURE[exercise]
    caught, seen = set(), set()
    for ex in scalar.examples(None):
        right = scalar.want(ex)
        for value, hint in scalar.suspected(ex):
            seen.add(hint)
            if not close(value, right):
                caught.add(hint)
    assert seen - caught == set()


def _terms_caught(examples, right, suspected, keys):
    caught, seen = set(), set()
    for ex in examples:
        want = right(ex)
        if want == RAISES:
            continue
        for values, hint in suspected(ex):
            key = re.sub(r"\d+", "#", hint)[:40]  # hints may carry the example's numbers
            seen.add(key)
            if any(not close(values[k], want[k]) for k in keys):
                caught.add(key)
    return seen - caught


def test_every_memory_and_time_suspect_is_caught_by_the_explicit_examples():
    mem = _terms_caught(spec.MEMORY_EXPLICIT, lambda ex: cost.memory_per_chip(*spec._memory_args(ex)),
                        lambda ex: suspects.memory(*spec._memory_args(ex)), cost.MEMORY_KEYS)  # fmt: skip
    assert mem == set()

    def right(ex):
        m, hw, plan, batch = spec._time_args(ex)
        if plan.dp * plan.fsdp * plan.tp * plan.pp != hw.chips:
            return RAISES
        return cost.step_time(m, hw, plan, batch)

    time = _terms_caught(spec.TIME_EXPLICIT, right,
                         lambda ex: suspects.time(*spec._time_args(ex)), cost.TIME_KEYS)  # fmt: skip
    assert time == set()


def test_a_term_is_diagnosed_only_when_its_value_shows_the_mistake():
    ex = spec.MEMORY_EXPLICIT[0]
    want = cost.memory_per_chip(*spec._memory_args(ex))
    sus = suspects.memory(*spec._memory_args(ex))
    odd = {**want, "optimizer": want["optimizer"] * 1.5}
    odd["total"] = sum(odd[k] for k in cost.MEMORY_KEYS[:-1])
    assert suspects.matching(odd, want, cost.MEMORY_KEYS, sus) == ("optimizer", None)
    forgot = {**want, "optimizer": 0.0}
    forgot["total"] -= want["optimizer"]
    key, hint = suspects.matching(forgot, want, cost.MEMORY_KEYS, sus)
    assert key == "optimizer" and "optimizer state is forgotten" in hint
    assert suspects.matching(want, want, cost.MEMORY_KEYS, sus) == (None, None)


def test_each_trap_catches_the_rule_it_is_for():
    """The docstring of spec.TRAPS: with one rule off, the search finds another plan."""
    tp_trap, micro_trap, memory_trap = (spec._best_args(ex) for ex in spec.TRAPS)
    best = {i: cost.best_plan(*args) for i, args in enumerate((tp_trap, micro_trap, memory_trap))}
    assert cost.best_plan(*tp_trap, rules=cost.Rules(tp_in_node=False)) != best[0]
    assert cost.best_plan(*micro_trap, rules=cost.Rules(micro_at_least_stages=False)) != best[1]
    assert cost.ranked(*memory_trap, fit=False)[0][0] != best[2]


def test_ties_are_broken_by_the_stated_order():
    tie = spec._best_args(spec.BEST_EXPLICIT[4])
    rows = cost.ranked(*tie)
    tied = [p for p, _, t in rows if t["total"] <= rows[0][2]["total"] * (1 + cost.TIE)]
    assert len(tied) == 2 and tied[0].n_micro == 1 and tied[1].n_micro == 2


def test_nothing_fits_raises():
    with pytest.raises(ValueError, match="no plan fits"):
        cost.best_plan(*spec._best_args(spec.BEST_EXPLICIT[2]))


@pytest.mark.parametrize("folder", ["solutions", "exercises"])
def test_the_lesson_files_use_the_graders_records(root, folder):
    mod = load_module(root / folder, "l14_planning")
    assert mod.Plan is Plan and mod.MODELS is MODELS and mod.HARDWARE is HARDWARE


def test_the_solution_is_the_reference_on_drawn_examples(root):
    from grader.spec import FULL, draw_examples

    sol = load_module(root / "solutions", "l14_planning")
    for ex in draw_examples(spec._best_examples(FULL), 30, seed=3):
        args = spec._best_args(ex)
        rows = cost.ranked(*args)
        if rows:
            assert sol.best_plan(*args) == rows[0][0]
            for plan, mem, t in rows[:5]:
                assert sol.memory_per_chip(args[0], plan, args[2]) == pytest.approx(mem, rel=1e-12)
                assert sol.step_time(args[0], args[1], plan, args[2]) == pytest.approx(t, rel=1e-12)


def _trial(check_spec, ex, output):
    trial = check_spec.run(InProcess(ex), lambda *a: output, ex)
    return check_spec.checks[0](trial)


def test_a_dict_of_other_keys_or_types_is_refused():
    ex = spec.MEMORY_EXPLICIT[0]
    missing = _trial(spec.MEMORY, ex, {"params": 1.0})
    assert not missing.passed and "expected exactly params, grads" in missing.message
    assert not _trial(spec.MEMORY, ex, [1.0]).passed
    want = cost.memory_per_chip(*spec._memory_args(ex))
    flag = _trial(spec.MEMORY, ex, {**want, "grads": True})
    assert not flag.passed and "expected a number" in flag.message
    assert _trial(spec.MEMORY, ex, dict(want)).passed


def test_a_term_off_by_one_of_the_examples_counts_is_told_which_count():
    """No known mistake gives the answer, but its wrong term is exactly one of the
    example's own counts times the reference's: named (every count equal to it too); a
    ratio none of them is, only measured."""
    ex = spec.TIME_EXPLICIT[0]  # dp 2, fsdp 2, tp 8, pp 4, n_micro 8, nodes of 8
    want = cost.step_time(*spec._time_args(ex))
    per_micro = _trial(spec.TIME, ex, {**want, "dp": want["dp"] * 8})
    said = per_micro.hint
    assert "8× the reference's (the factor is tp = 8 (or n_micro = 8, or node = 8" in said, said
    assert "No known mistake gives your value" in per_micro.hint
    odd = _trial(spec.TIME, ex, {**want, "dp": want["dp"] * 1.37})
    assert "1.37× the reference's;" in odd.hint and "the factor is" not in odd.hint


def test_step_time_must_refuse_a_plan_of_other_chips():
    ex = spec.TIME_EXPLICIT[6]
    assert ex["chips"] != math.prod(ex["plan"][:4])
    r = _trial(spec.TIME, ex, {k: 1.0 for k in cost.TIME_KEYS})
    assert (
        not r.passed and "expected a ValueError" in r.message and "dp·fsdp·tp·pp = 32" in r.message
    )


def test_a_slower_plan_is_shown_beside_the_best_with_the_term_that_decided():
    ex = spec.BEST_EXPLICIT[0]
    slower = Plan(2, 1, 8, 4, 32, "block")
    r = _trial(spec.BEST, ex, slower)
    assert not r.passed and "per step, the best 6.198 s" in r.message
    assert "compute decided" in r.message
    table = r.evidence[0]
    assert table.columns == ["term", "best plan", "your plan"]
    assert ["time: compute", "4.04 s", "5.387 s"] in table.rows
    assert not _trial(spec.BEST, ex, (1, 1, 8, 8, 64, "none")).passed  # a tuple is not a Plan


# ------------------------------------------------------------------ each diagnosis alone


def _alone(examples, right, suspected, keys):
    """Every suspect, on the first explicit example where its value is wrong, is the only
    diagnosis a student's answer equal to it gets (no "One of these"), given that student's
    answers on the other examples (the same mistake made there: the grade's probes)."""
    firsts = {}
    for ex in examples:
        want = right(ex)
        if want == RAISES:
            continue
        for values, hint in suspected(ex):
            key = suspects.mistake_of(hint)
            if key not in firsts and any(not close(values[k], want[k]) for k in keys):
                firsts[key] = (ex, values, want, hint, suspected(ex))
    for key, (ex, values, want, hint, sus) in firsts.items():
        probes, agreed = [], []  # where the mistake shows, and where it leaves the answer right
        for other in (e for e in examples if e != ex and right(e) != RAISES):
            made = [v for v, h in suspected(other) if suspects.mistake_of(h) == key]
            if made and any(not close(made[0][k], right(other)[k]) for k in keys):
                probes.append((made[0], right(other), suspected(other)))
            else:
                agreed.append((right(other), suspected(other)))
        assert suspects.matching(values, want, keys, sus, probes, agreed)[1] == hint, hint
    return firsts


def test_a_probe_keeps_the_diagnosis_the_other_examples_show_and_only_it():
    """dp left out of the micro-batch and GPipe's n_micro held are both 3× on the first
    memory example (dp = 3 = n_micro/pp): one example says both; the student's answer on
    the second (remat: each block's input held, one block recomputed, where dp's factor
    reaches both parts and GPipe's only the first) keeps the one that gives it there (both
    ways)."""
    first, third = spec.MEMORY_EXPLICIT[0], spec.MEMORY_EXPLICIT[1]
    want, sus = (
        cost.memory_per_chip(*spec._memory_args(first)),
        suspects.memory(*spec._memory_args(first)),
    )
    gpipe = next(v for v, h in sus if "that is GPipe" in h)
    _, both = suspects.matching(gpipe, want, cost.MEMORY_KEYS, sus)
    assert both.startswith("One of these") and "dp = 3 splits the batch" in both, both
    right3, sus3 = (
        cost.memory_per_chip(*spec._memory_args(third)),
        suspects.memory(*spec._memory_args(third)),
    )
    gpipe3 = next(v for v, h in sus3 if "that is GPipe" in h)
    _, said = suspects.matching(gpipe, want, cost.MEMORY_KEYS, sus, [(gpipe3, right3, sus3)])
    assert "that is GPipe" in said and "splits the batch" not in said, said
    # an answer on the probe that no suspect gives keeps both (two mistakes at once, say)
    odd = {k: v * 1.5 for k, v in right3.items()}
    _, kept = suspects.matching(gpipe, want, cost.MEMORY_KEYS, sus, [(odd, right3, sus3)])
    assert kept == both


def test_each_memory_and_time_suspect_is_named_alone_where_it_first_shows():
    _alone(spec.MEMORY_EXPLICIT, lambda ex: cost.memory_per_chip(*spec._memory_args(ex)),
           lambda ex: suspects.memory(*spec._memory_args(ex)), cost.MEMORY_KEYS)  # fmt: skip

    def right(ex):
        m, hw, plan, batch = spec._time_args(ex)
        if plan.dp * plan.fsdp * plan.tp * plan.pp != hw.chips:
            return RAISES
        return cost.step_time(m, hw, plan, batch)

    _alone(spec.TIME_EXPLICIT, right, lambda ex: suspects.time(*spec._time_args(ex)),
           cost.TIME_KEYS)  # fmt: skip


def test_float32_activations_and_gpipe_differ_on_the_first_memory_example():
    """The issue's wrong diagnosis: with n_micro/pp = 2 both are 2×; here n_micro/pp = 3."""
    m, plan, batch = spec._memory_args(spec.MEMORY_EXPLICIT[0])
    assert plan.n_micro / plan.pp == 3 and plan.remat == "none"
    right = cost.activation_bytes(m, plan, batch)
    f32 = cost.activation_bytes(m, plan, batch, how=cost.Costing(act_bytes=4))
    gpipe = cost.activation_bytes(m, plan, batch, held=plan.n_micro)
    assert (f32 / right, gpipe / right) == (2, 3)


def test_fp32_gradients_are_18_bytes_per_parameter():
    m, plan = MODELS["llama-3-8b"], Plan(1, 1, 1, 1, 1, "none")
    p = cost.param_count(m)
    weights = {g: sum(v for k, v in cost.memory_per_chip(m, dataclasses.replace(plan, grads=g), 1)
                      .items() if k in ("params", "grads", "optimizer")) for g in ("bf16", "fp32")}  # fmt: skip
    assert (weights["bf16"] / p, weights["fp32"] / p) == (16, 18)


def test_the_hbm_equality_example_is_exact():
    """TIGHT: the best plan needs exactly the chip's HBM, every term a whole number of bytes
    (so the student's sum in any order is exact); with < the search returns another plan."""
    m, hw, batch = spec._best_args(spec.TIGHT)
    plan, mem, _ = cost.ranked(m, hw, batch)[0]
    assert mem["total"] == hw.hbm_bytes and all(float(v).is_integer() for v in mem.values())
    assert cost.best_plan(m, hw, batch, cost.Rules(fit_strictly=True)) != plan


def test_the_ideal_links_example_ties_where_loop_order_matters():
    args = spec._best_args(spec.MORE_TRAPS[0])
    best = cost.best_plan(*args)
    assert cost.best_plan(*args, rules=cost.Rules(order="dp-first")) != best
    assert cost.best_plan(*args, rules=cost.Rules(order="last")) != best


def test_the_scaling_books_pod_has_no_plan_and_8192_of_its_chips_have_one():
    """8960 = 2⁸·5·7 chips for LLaMA-3-70B with 512 sequences: tp | 64, pp | 80, dp·fsdp | 512
    leave no split, and the grader says so (divisibility, not memory)."""
    m, hw, batch = spec._best_args(spec.MORE_TRAPS[2])
    assert hw.chips == 8960 and not cost.plans(m, hw, batch)
    assert "no plan exists" in cost.empty_space(m, hw, batch)
    r = _trial(spec.BEST, spec.MORE_TRAPS[2], Plan(1, 8960, 1, 1, 1, "none"))
    assert not r.passed and "no plan exists" in r.message and "whatever the memory" in r.hint
    plan, mem, t = cost.ranked(m, cluster(V5P, 8192), batch)[0]  # the text's figures
    assert plan == Plan(256, 2, 16, 1, 1, "none")
    assert (round(mem["total"] / 1e9, 1), round(t["total"], 2), round(t["mfu"], 3)) == (
        86.8, 1.69, 0.321)  # fmt: skip


def test_a_wrong_param_count_changes_the_plan_and_is_named():
    ex = spec.MORE_TRAPS[3]
    m, hw, batch = spec._best_args(ex)
    tied = suspects.params(m)[0][0]
    wrong = cost.ranked(m, hw, batch, cost.Rules(
        memory=lambda p: cost.memory_per_chip(m, p, batch, params=tied)["total"]))[0][0]  # fmt: skip
    assert wrong != cost.best_plan(m, hw, batch)
    assert cost.ranked(m, hw, batch, fit=False)[0][0] != wrong  # not "no memory test"
    r = _trial(spec.BEST, ex, wrong)
    assert not r.passed and "param_count's own grade names it" in r.hint
    assert "must also fit" not in r.hint


def test_the_text_prints_the_other_runs_as_the_reference_computes_them(root):
    """§8's table of PaLM and MegaScale holds the figures the two tests above compute."""
    text = (root / "course" / "lessons" / "14_planning.md").read_text()
    for run, label in (("palm", "PaLM 540B, 6,144 TPU v4"), ("megascale", "MegaScale 175B")):
        line = next(x for x in text.splitlines() if x.startswith(f"| {label}"))
        cells = [c.strip() for c in line.strip("|").split("|")][1:]
        fig = OTHER_RUNS[run]
        want = [f"{fig[k]:.2f}" for k in ("compute", "bubble", "tp", "fsdp", "dp", "pp")]
        want += [f"{fig['total']:.2f} s", f"{fig['published']:.2f} s", f"{fig['ratio']:.2f}",
                 f"{100 * fig['mfu']:.1f}%"]  # fmt: skip
        assert cells[:10] == want, (run, cells)
        assert cells[11] == f"{fig['memory']:.1f} GB"


def test_a_pipeline_may_run_as_many_micro_batches_as_stages():
    """Issue 47: a search of n_micro > pp for pipelines (pp = 1 keeps n_micro = 1) passed
    every other example. Here the best plan has n_micro = pp = 8; that search returns
    another, named by its own words and not by the nearest searches' (n_micro > pp for
    every pp; n_micro < pp allowed)."""
    ex = spec.AS_MANY_MICRO_AS_STAGES
    assert ex in spec.BEST_EXPLICIT
    m, hw, batch = spec._best_args(ex)
    best = cost.best_plan(m, hw, batch)
    assert best.pp == best.n_micro == 8
    for other in spec.BEST_EXPLICIT:
        if other is not ex and (rows := cost.ranked(*spec._best_args(other))):
            assert not 1 < rows[0][0].pp == rows[0][0].n_micro, other
    wrong = cost.ranked(m, hw, batch, cost.Rules(pipeline_micro_more_than_stages=True))[0][0]
    assert wrong != best and wrong.pp == 1
    r = _trial(spec.BEST, ex, wrong)
    assert not r.passed and "n_micro = pp is allowed in a pipeline" in r.hint
    assert "pp = 1 runs with n_micro = 1" not in r.hint
    assert "at least p micro-batches." not in r.hint


def test_a_tie_between_remat_and_none_is_drawn_and_a_string_key_fails_it():
    """Issue 47: no example tied a plan with remat against one without, so a search that
    sorted the tie by the remat string ("block" < "none") passed. On the compute-free chip
    remat costs nothing: the best plan has no remat, that search's has, and the grade says
    the tie's first rule broke."""
    ex = spec.REMAT_TIE
    assert ex in spec.BEST_EXPLICIT
    m, hw, batch = spec._best_args(ex)
    rows = cost.ranked(m, hw, batch)
    tied = [p for p, _, t in rows if t["total"] <= rows[0][2]["total"] * (1 + cost.TIE)]
    best = cost.best_plan(m, hw, batch)
    assert best.remat == "none" and dataclasses.replace(best, remat="block") in tied
    by_string = min(tied, key=lambda p: (p.remat, p.pp, p.tp, p.fsdp, p.n_micro))
    assert by_string.remat == "block"
    for other in spec.BEST_EXPLICIT:  # nowhere else does that key pick another plan
        if other is not ex and (rows := cost.ranked(*spec._best_args(other))):
            top = [p for p, _, t in rows if t["total"] <= rows[0][2]["total"] * (1 + cost.TIE)]
            assert min(top, key=lambda p: (p.remat, p.pp, p.tp, p.fsdp, p.n_micro)) == top[0]
    r = _trial(spec.BEST, ex, by_string)
    assert not r.passed and "remat = 'block' (yours) against 'none'" in r.message
    assert 'puts "block" before "none"' in r.hint
    assert _trial(spec.BEST, ex, best).passed
