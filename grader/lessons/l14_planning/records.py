"""The records lesson 14's functions take: a model, a cluster, a plan.

The exercise and the solution import them from here, and the grader builds
the same classes, so a record crosses between the grading process and the
student's process as itself (``grader.sandbox.wire`` carries the grader's own
dataclasses and nothing else). Plain Python: no JAX, no numpy.

Units: FLOP/s, bytes, bytes/s, seconds.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Model:
    """A decoder-only transformer: SwiGLU MLP, grouped-query attention, untied embeddings."""

    name: str
    layers: int  # L
    d_model: int  # D
    d_ff: int  # F, the SwiGLU hidden size (three matrices: gate, up, down)
    heads: int  # N, query heads
    kv_heads: int  # K, key/value heads (K = N: plain multi-head attention)
    head_dim: int  # H
    vocab: int  # V
    seq: int  # S, tokens per sequence


@dataclass(frozen=True)
class Hardware:
    """A cluster: ``chips`` accelerators in nodes of ``chips_per_node``.

    Inside a node chips talk over ``intra_*`` (NVLink, or a TPU pod's ICI);
    between nodes over ``inter_*`` (InfiniBand, one port per chip). Bandwidths
    are what one chip sends into a ring, one way; latencies are per hop.
    """

    name: str
    chips: int
    chips_per_node: int
    peak_flops: float  # dense bf16 FLOP/s of one chip
    hbm_bytes: float  # memory of one chip
    intra_bandwidth: float
    intra_latency: float
    inter_bandwidth: float
    inter_latency: float


@dataclass(frozen=True)
class Plan:
    """How a step is laid out: dp·fsdp·tp·pp = chips.

    ``dp`` replicas, each split ``fsdp`` ways (ZeRO-3), ``tp`` ways (Megatron)
    and into ``pp`` pipeline stages; each replica's batch runs as ``n_micro``
    micro-batches; ``remat`` is ``"none"`` or ``"block"`` (keep only each
    block's input and recompute the rest in the backward); ``grads`` is the
    gradients' precision in memory, ``"bf16"`` (2 bytes per parameter) or
    ``"fp32"`` (4: Megatron's and DeepSpeed's default of accumulating
    gradients in float32).
    """

    dp: int
    fsdp: int
    tp: int
    pp: int
    n_micro: int
    remat: str
    grads: str = "bf16"


REMAT = ("none", "block")
GRADS = {"bf16": 2, "fp32": 4}
"""Bytes of one gradient per parameter, by ``Plan.grads``."""

# Published configurations (the lesson text cites each): the Llama 3 paper's
# table of hyperparameters, with the vocabulary and head size of the released
# configs, and sequences of 8192 tokens.
MODELS = {
    "llama-3-8b": Model("llama-3-8b", 32, 4096, 14336, 32, 8, 128, 128256, 8192),
    "llama-3-70b": Model("llama-3-70b", 80, 8192, 28672, 64, 8, 128, 128256, 8192),
    "llama-3-405b": Model("llama-3-405b", 126, 16384, 53248, 128, 8, 128, 128256, 8192),
}

# One node of each kind; make a cluster with dataclasses.replace(h, chips=…).
# Peak and HBM from the vendors' datasheets (dense bf16), links as lesson 3.
# A TPU v5p pod is one ICI domain: its "node" is the whole pod.
HARDWARE = {
    "a100-80gb": Hardware("a100-80gb", 8, 8, 312e12, 80e9, 300e9, 1e-6, 25e9, 5e-6),
    "h100-sxm": Hardware("h100-sxm", 8, 8, 989e12, 80e9, 450e9, 1e-6, 50e9, 5e-6),
    "tpu-v5p": Hardware("tpu-v5p", 8960, 8960, 459e12, 95e9, 90e9, 1e-6, 90e9, 1e-6),
}

MEMORY_KEYS = ("params", "grads", "optimizer", "activations", "total")
"""The keys of ``memory_per_chip``'s answer, in the order the report shows them."""
TIME_KEYS = ("compute", "bubble", "tp", "fsdp", "dp", "pp", "total", "mfu")
"""The keys of ``step_time``'s answer, in the order the report shows them."""
