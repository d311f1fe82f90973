"""Lesson 14 — planning a training run at scale.

Given a model, a cluster and a global batch (in sequences), count the
parameters and FLOPs, the bytes each chip holds, the seconds a step takes,
and search every plan — data, fully sharded data, tensor and pipeline
parallelism, micro-batches, remat — for the fastest one that fits.

Units throughout: FLOPs, bytes, seconds, FLOP/s and bytes/s.

Read the lesson first: ``course show 14``. Grade with ``course grade 14``.
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
    # TODO: embeddings 2·D·V, then per layer attention 2·D·H·(N + K) and SwiGLU 3·D·F.
    raise NotImplementedError("param_count: TODO")


def train_flops(m: Model, tokens: float) -> float:
    """Model FLOPs of training on ``tokens`` tokens: 6·P·T + 12·L·N·H·S·T.

    6·P·T for the matmuls with weights (forward 2, backward 4 per parameter
    and token), plus attention's Q·Kᵀ and P·V over the whole S×S, forward and
    backward (the convention of the PaLM paper's appendix B: no halving for
    the causal mask, no remat).
    """
    # TODO: 6 FLOPs per parameter and token, plus attention's 12·L·N·H·S per token.
    raise NotImplementedError("train_flops: TODO")


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
    # TODO: weights (bf16), gradients (GRADS[plan.grads]) and Adam (12 bytes) per
    #       parameter, divided by the axes that split them; activations per the remat policy (course show 14).
    raise NotImplementedError("memory_per_chip: TODO")


def step_time(m: Model, hw: Hardware, plan: Plan, global_batch: int) -> dict[str, float]:
    """Seconds of one step: ``compute``, ``bubble``, ``tp``, ``fsdp``, ``dp``, ``pp``,
    their ``total``, and ``mfu``.

    Compute at peak on every chip (a third more with remat); the bubble
    compute·(pp − 1)/n_micro; each collective by lesson 3's ring model on the
    link its axis crosses (mesh order tp, fsdp, dp, pp, innermost first);
    no overlap. MFU is train_flops over chips·peak·total. ValueError when
    dp·fsdp·tp·pp is not the number of chips.
    """
    # TODO: compute and bubble, then each axis's collectives by lesson 3's ring
    #       model on the link that axis crosses; total and MFU.
    raise NotImplementedError("step_time: TODO")


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
    # TODO: loop over tp, pp, fsdp (dp follows), n_micro and remat; keep the plans
    #       that fit HBM; the fastest wins, ties broken in the order above.
    raise NotImplementedError("best_plan: TODO")
