"""Realistic wrong implementations for lesson 14 (see tests/mistakes/__init__.py).

One per way of getting a plan wrong that the lesson warns about: parameters
counted for another architecture, FLOPs without attention, optimizer state
or master weights forgotten, activations forgotten or counted without remat,
memory divided by an axis that does not shard it, a pipeline with fewer
micro-batches than stages, tensor parallelism across nodes, FSDP's bytes
counted once, MFU from 6·P·T, and searches that break a rule, ignore memory
or break ties another way.
"""

from __future__ import annotations

from tests.mistakes import Mistake

NO_TIE_RULE = """
def best_plan(m, hw, global_batch):
    found = []
    for dp in _divisors(hw.chips):
        for fsdp in _divisors(hw.chips // dp):
            if global_batch % (dp * fsdp):
                continue
            for tp in _divisors(hw.chips // (dp * fsdp)):
                if m.heads % tp or hw.chips_per_node % tp:
                    continue
                pp = hw.chips // (dp * fsdp * tp)
                if m.layers % pp:
                    continue
                for n_micro in _divisors(global_batch // (dp * fsdp)):
                    if n_micro < pp:
                        continue
                    for remat in ("none", "block"):
                        plan = Plan(dp, fsdp, tp, pp, n_micro, remat)
                        if memory_per_chip(m, plan, global_batch)["total"] <= hw.hbm_bytes:
                            found.append((step_time(m, hw, plan, global_batch)["total"], plan))
    if not found:
        raise ValueError("no plan fits")
    return min(found, key=lambda r: r[0])[1]
"""

L14 = "l14_planning"


def _edit(id: str, exercise: str, old: str, new: str, says: tuple[str, ...], check: str = "values", never: tuple[str, ...] = ()) -> Mistake:  # fmt: skip
    return Mistake(id=id, module=L14, exercise=exercise, status="failed", check=check,
                   says=says, never=never, patch=((old, new),))  # fmt: skip


MEMORY_RETURN = '"optimizer": ADAM * p / shards,'
ACT = "act = BF16 * global_batch / (plan.dp * plan.fsdp * plan.n_micro) * m.seq * m.d_model"
FITS = 'if memory_per_chip(m, plan, global_batch)["total"] <= hw.hbm_bytes:'
MFU = 'out["mfu"] = model_flops / (hw.chips * hw.peak_flops * out["total"])'

MISTAKES: list[Mistake] = [
    # ---------------------------------------------------------------- param_count
    _edit("l14-params-tied-embeddings", "param_count",
          "embeddings = 2 * d * m.vocab", "embeddings = d * m.vocab", ("untied", "2·D·V")),
    _edit("l14-params-without-grouped-query-attention", "param_count",
          "attention = 2 * d * h * (m.heads + m.kv_heads)", "attention = 4 * d * h * m.heads",
          ("Grouped-query attention", "K")),
    _edit("l14-params-two-matrix-mlp", "param_count",
          "mlp = 3 * d * m.d_ff", "mlp = 2 * d * m.d_ff", ("three matrices",)),
    # ---------------------------------------------------------------- train_flops
    _edit("l14-flops-without-attention", "train_flops",
          "return dense + attention", "return dense", ("6·P·T alone", "attention term")),
    _edit("l14-flops-attention-halved-for-the-mask", "train_flops",
          "attention = 12 * m.layers", "attention = 6 * m.layers", ("not halved",)),
    _edit("l14-flops-attention-over-kv-heads", "train_flops",
          "attention = 12 * m.layers * m.heads", "attention = 12 * m.layers * m.kv_heads",
          ("every query head",)),
    _edit("l14-flops-of-non-embedding-params", "train_flops",  # a scaling-law habit
          "dense = 6 * param_count(m) * tokens",
          "dense = 6 * (param_count(m) - 2 * m.d_model * m.vocab) * tokens",
          ("P is every parameter", "non-embedding")),
    # ---------------------------------------------------------------- memory_per_chip
    _edit("l14-memory-optimizer-state-forgotten", "memory_per_chip",
          MEMORY_RETURN, '"optimizer": 0.0,', ("optimizer state is forgotten", "12 bytes")),
    _edit("l14-memory-master-weights-forgotten", "memory_per_chip",
          MEMORY_RETURN, '"optimizer": 8 * p / shards,', ("master weights are forgotten",)),
    _edit("l14-memory-activations-forgotten", "memory_per_chip",
          '"activations": activations,', '"activations": 0.0,', ("activations are forgotten",)),
    _edit("l14-memory-activations-without-remat", "memory_per_chip",
          'if plan.remat == "none":', "if True:", ("Counted without remat",)),
    _edit("l14-memory-weights-divided-by-dp", "memory_per_chip",
          "shards = plan.fsdp * plan.tp * plan.pp",
          "shards = plan.dp * plan.fsdp * plan.tp * plan.pp",
          ("does not shard the weights", "fsdp·tp·pp")),
    _edit("l14-memory-residual-divided-by-tp", "memory_per_chip",
          "full_layer = BF16 * (whole + split)", "full_layer = BF16 * (whole / plan.tp + split)",
          ("does not shard the 4·D part",)),
    _edit("l14-memory-pipeline-holds-pp-micro-batches", "memory_per_chip",
          "held = min(plan.n_micro, plan.pp)", "held = plan.pp",
          ("n_micro = 3 < pp = 8", "min(n_micro, pp), not pp")),
    # from drafts/heldback (2026-12-06): on the first example fsdp = pp = 4 then, so this
    # got "fsdp = 4 splits the batch too", a wrong cause; that example now has pp = 5
    _edit("l14-activations-of-every-layer-on-a-stage", "memory_per_chip",
          "layers = m.layers / plan.pp", "layers = m.layers",
          ("only its own L/pp = 80/5 layers",), never=("splits the batch",)),
    _edit("l14-memory-gpipe-holds-every-micro-batch", "memory_per_chip",
          "held = min(plan.n_micro, plan.pp)", "held = plan.n_micro", ("that is GPipe",)),
    _edit("l14-memory-activations-in-float32", "memory_per_chip",
          "full_layer = BF16 * (whole + split)", "full_layer = 4 * (whole + split)",
          ("counted in float32", "bf16, 2 bytes")),
    _edit("l14-memory-fp32-gradients-ignored", "memory_per_chip",
          '"grads": GRADS[plan.grads] * p / shards,', '"grads": BF16 * p / shards,',
          ("grads = 'fp32'", "4 bytes per parameter")),
    _edit("l14-memory-elements-for-bytes", "memory_per_chip",
          '"params": BF16 * p / shards,', '"params": p / shards,', ("elements, not bytes",)),
    _edit("l14-memory-tokens-not-divided-by-fsdp", "memory_per_chip",
          "tokens = global_batch / (plan.dp * plan.fsdp * plan.n_micro) * m.seq",
          "tokens = global_batch / (plan.dp * plan.n_micro) * m.seq",
          ("splits the batch too", "B/(dp·fsdp·n_micro)"), never=("L/pp",)),
    # issue 45 audit: on the first example dp = 3 = n_micro/pp, so this was told "that is
    # GPipe" alone; both readings are said now
    _edit("l14-memory-tokens-not-divided-by-dp", "memory_per_chip",
          "tokens = global_batch / (plan.dp * plan.fsdp * plan.n_micro) * m.seq",
          "tokens = global_batch / (plan.fsdp * plan.n_micro) * m.seq",
          ("splits the batch: each chip's micro-batch", "not B/(fsdp·n_micro)")),
    # ---------------------------------------------------------------- step_time
    # issue 45 audit: dp = fsdp = 2 on the first example, so this was told "fsdp splits
    # the batch too" alone, quoting B/(dp·n_micro) back as the student's
    _edit("l14-time-tokens-not-divided-by-dp", "step_time", ACT,
          ACT.replace("plan.dp * plan.fsdp", "plan.fsdp"),
          ("dp = 2 splits the batch", "not B/(fsdp·n_micro)")),
    # drafts/heldback6: fp32 gradients sent at 4 bytes passed (no time example had them), then
    # was told "dp all-reduces the gradient shard after fsdp = 2…" (2× either way) though the
    # student's dp time was right on the plans with bf16 gradients, where that would not be
    _edit("l14-time-dp-gradients-at-their-kept-size", "step_time",
          'dp = _ring("all_reduce", BF16 * p / (plan.fsdp * plan.tp * plan.pp), plan.dp, dp_link)',
          'dp = _ring("all_reduce", GRADS[plan.grads] * p / (plan.fsdp * plan.tp * plan.pp), plan.dp, dp_link)',
          ("what the optimizer keeps (memory only)", "not 4"), never=("reduce-scattered it",)),
    # drafts/heldback6: fsdp = 2 = a bf16's bytes, so this was told "counted in elements", a
    # mistake that would have got the tp and pp times wrong too (they were right)
    _edit("l14-time-fsdp-ring-of-a-chip-s-shard", "step_time",
          "    stage = BF16 * p / (plan.tp * plan.pp)\n",
          "    stage = BF16 * p / (plan.tp * plan.pp * plan.fsdp)  # the stage's weights on this chip\n",
          ("not the shard one chip holds, V/fsdp = V/2",), never=("counted in elements",)),
    # drafts/heldback6: 3× the pp term (pp − 1 = 3), which no suspect gave before
    _edit("l14-time-pipeline-hops-at-every-boundary", "step_time",
          "        pp = 2 * plan.n_micro * (latency + act / bandwidth)",
          "        pp = 2 * plan.n_micro * (plan.pp - 1) * (latency + act / bandwidth)",
          ("not pp − 1 = 3 hops",)),
    # audit 67: a constant factor of one term, which a suspect that scales with fsdp
    # matched on the example (fsdp = 2); the probe at fsdp = 16 refutes it
    _edit("l14-time-fsdp-weights-in-elements", "step_time",
          "    stage = BF16 * p / (plan.tp * plan.pp)\n",
          "    stage = p / (plan.tp * plan.pp)\n",
          ("Measured: your 'fsdp'",), never=("not the shard one chip holds",)),
    _edit("l14-time-dp-gradients-always-fp32", "step_time",
          'dp = _ring("all_reduce", BF16 * p / (plan.fsdp * plan.tp * plan.pp), plan.dp, dp_link)',
          'dp = _ring("all_reduce", 4 * p / (plan.fsdp * plan.tp * plan.pp), plan.dp, dp_link)',
          ("your 'dp'",), never=("reduce-scattered it",)),
    # drafts/heldback7: fsdp's span read without tp inside it; "no known mistake" before
    _edit("l14-time-fsdp-ring-span-without-tp", "step_time",
          "    fsdp_link = _link(hw, plan.tp * plan.fsdp)\n",
          "    fsdp_link = _link(hw, plan.fsdp)\n",
          ("A group of fsdp spans the axes inside it too",)),
    _edit("l14-time-ring-of-n-steps", "step_time",
          'hops = {"all_gather": n - 1, "reduce_scatter": n - 1, "all_reduce": 2 * (n - 1)}[kind]',
          'hops = {"all_gather": n, "reduce_scatter": n, "all_reduce": 2 * n}[kind]',
          ("N − 1 steps", "not N")),
    Mistake(id="l14-time-elements-for-bytes", module=L14, exercise="step_time",
            status="failed", check="values", says=("elements, not bytes",),
            patch=((ACT, ACT.replace("BF16 * ", "")),
                   ("stage = BF16 * p / (plan.tp * plan.pp)", "stage = p / (plan.tp * plan.pp)"),
                   ('_ring("all_reduce", BF16 * p /', '_ring("all_reduce", p /'))),
    _edit("l14-time-dp-all-reduce-of-the-whole-gradient", "step_time",
          '_ring("all_reduce", BF16 * p / (plan.fsdp * plan.tp * plan.pp), plan.dp, dp_link)',
          '_ring("all_reduce", BF16 * p, plan.dp, dp_link)',
          ("not the whole model's gradient 2·P",)),
    _edit("l14-time-tokens-not-divided-by-fsdp", "step_time",
          ACT, ACT.replace("plan.dp * plan.fsdp * plan.n_micro", "plan.dp * plan.n_micro"),
          ("splits the batch too",)),
    _edit("l14-time-no-bubble", "step_time",
          "bubble = compute * (plan.pp - 1) / plan.n_micro", "bubble = 0.0",
          ("leave a bubble", "not 0")),
    _edit("l14-time-link-by-span-within-a-node", "step_time",
          "if hw.chips_per_node % span == 0:", "if span <= hw.chips_per_node:",
          ("tile the node", "straddle two nodes")),
    _edit("l14-time-tensor-parallel-across-nodes-on-nvlink", "step_time",
          "tp_link = _link(hw, plan.tp)", "tp_link = (hw.intra_bandwidth, hw.intra_latency)",
          ("Tensor parallelism across nodes", "tp = 16")),
    _edit("l14-time-fsdp-counted-once", "step_time",
          "fsdp = plan.n_micro * (2 * gather + scatter)", "fsdp = plan.n_micro * gather",
          ("FSDP's bytes counted once", "2 all-gathers + 1 reduce-scatter")),
    _edit("l14-time-mfu-from-6pt", "step_time",
          MFU, 'out["mfu"] = 6 * p * global_batch * m.seq / (hw.chips * hw.peak_flops * out["total"])',
          ("MFU from 6·P·T alone",)),
    _edit("l14-time-remat-recompute-forgotten", "step_time",
          'flops = model_flops * 4 / 3 if plan.remat == "block" else model_flops',
          "flops = model_flops", ("forward runs twice", "4/3")),
    _edit("l14-time-bubble-as-its-share", "step_time",
          "bubble = compute * (plan.pp - 1) / plan.n_micro",
          "bubble = compute * (plan.pp - 1) / (plan.n_micro + plan.pp - 1)",
          ("share of the whole", "compute · (p − 1)/m")),
    # ---------------------------------------------------------------- best_plan
    _edit("l14-search-tensor-parallel-across-nodes", "best_plan",
          "if m.heads % tp or hw.chips_per_node % tp:", "if m.heads % tp:",
          ("tp = 2 does not divide the 1 chips of a node", "stays inside a node"), check="plan"),
    _edit("l14-search-fewer-micro-batches-than-stages", "best_plan",
          "                    if n_micro < pp:\n                        continue\n", "",
          ("n_micro = 1 < pp = 3", "at least p micro-batches"), check="plan"),
    _edit("l14-search-ignores-memory", "best_plan",
          'if memory_per_chip(m, plan, global_batch)["total"] <= hw.hbm_bytes:', "if True:",
          ("more than the", "must also fit"), check="plan"),
    _edit("l14-search-keeps-the-last-of-a-tie", "best_plan",
          "    return min(tied, key=lambda p: (p.remat != \"none\", p.pp, p.tp, p.fsdp, p.n_micro))",
          "    return tied[-1]",
          ("a tie, and the order breaks it", "n_micro = 2 (yours) against 1"), check="plan"),
    _edit("l14-search-ties-sorted-by-the-remat-string", "best_plan",
          "key=lambda p: (p.remat != \"none\",", "key=lambda p: (p.remat,",
          ("remat = 'block' (yours) against 'none'", 'puts "block" before "none"'), check="plan"),
    Mistake(id="l14-search-with-no-tie-rule", module=L14, exercise="best_plan",
            status="failed", check="plan", code=NO_TIE_RULE,
            says=("a tie, and the order breaks it", "tp = 2 (yours) against 1")),
    _edit("l14-search-memory-strictly-below-hbm", "best_plan",
          FITS, FITS.replace("<=", "<"), ("(< where ≤)", "exactly"), check="plan"),
    _edit("l14-search-ten-percent-hbm-margin", "best_plan",
          FITS, FITS.replace("<= hw.hbm_bytes", "<= 0.9 * hw.hbm_bytes"),
          ("holds back a margin", "only 95% of hw.hbm_bytes"), check="plan"),
    _edit("l14-search-more-micro-batches-than-stages", "best_plan",
          "if n_micro < pp:", "if n_micro <= pp:", ("n_micro = pp is allowed",), check="plan"),
    _edit("l14-search-more-micro-batches-than-stages-in-a-pipeline", "best_plan",
          "if n_micro < pp:", "if n_micro < pp or 1 < pp == n_micro:",
          ("n_micro = pp is allowed in a pipeline",), check="plan"),
    _edit("l14-search-with-a-tied-embedding-count", "best_plan",
          "embeddings = 2 * d * m.vocab", "embeddings = d * m.vocab",
          ("param_count's own grade names it", "untied"), check="plan"),
    _edit("l14-search-without-the-optimizer-state", "best_plan",
          MEMORY_RETURN, '"optimizer": 0.0,',
          ("memory_per_chip's own grade names it", "optimizer state is forgotten"),
          check="plan"),
    # a memory mistake of MEMORY_MISTAKES' that a search is rebuilt with (it lacked this one)
    _edit("l14-search-with-tokens-not-divided-by-dp", "best_plan",
          "tokens = global_batch / (plan.dp * plan.fsdp * plan.n_micro) * m.seq",
          "tokens = global_batch / (plan.fsdp * plan.n_micro) * m.seq",
          ("memory_per_chip's own grade names it", "not B/(fsdp·n_micro)"), check="plan"),
    _edit("l14-search-returns-none-when-nothing-fits", "best_plan",
          'raise ValueError("no plan fits: every plan needs more than hbm_bytes on some chip")',
          "return None", ("expected a ValueError", "no plan fits"), check="plan"),
]  # fmt: skip
