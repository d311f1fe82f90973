"""The records lesson 16's cost model takes: a model and a serving slice.

The exercise and the solution import them from here, and the grader builds
the same classes, so a record crosses between the grading process and the
student's process as itself (``grader.sandbox.wire`` carries the grader's own
dataclasses). Plain Python: no JAX, no numpy.

Units: FLOP/s, bytes, bytes/s, seconds. Bytes are decimal (1 GB = 10⁹ B);
1 GiB = 2³⁰ B is written out where a source uses it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Model:
    """A decoder-only transformer: SwiGLU MLP (three D×F matrices), grouped-query
    attention, untied embeddings."""

    name: str
    layers: int  # L
    d_model: int  # D
    d_ff: int  # F
    heads: int  # N, query heads
    kv_heads: int  # K, key/value heads (K = N: plain multi-head attention)
    head_dim: int  # H
    vocab: int  # V


@dataclass(frozen=True)
class Slice:
    """``chips`` accelerators serving one model replica, tensor parallel over all of them.

    Per chip: peak FLOP/s (dense bf16), HBM capacity and HBM bandwidth."""

    name: str
    chips: int
    peak_flops: float
    hbm_bytes: float
    hbm_bandwidth: float


def param_count(m: Model) -> int:
    """2·D·V + L·(2·D·H·(N + K) + 3·D·F): embeddings, attention, SwiGLU; norms ignored."""
    attention = 2 * m.d_model * m.head_dim * (m.heads + m.kv_heads)
    return 2 * m.d_model * m.vocab + m.layers * (attention + 3 * m.d_model * m.d_ff)


# LLaMA-2-13B as the scaling book's inference chapter lists it (L, D, N = K, H, V) with the
# released config's F = 13,824 (the book writes F // D ≈ 2.7): 13,015,449,600 parameters.
# "gqa" is the book's what-if: 8 key/value heads "keeping the total number of params the
# same", here by a wider MLP (F = 16,555: 13,015,654,400 parameters, 0.002 % more).
MODELS = {
    "llama-2-13b": Model("llama-2-13b", 40, 5120, 13824, 40, 40, 128, 32000),
    "llama-2-13b-gqa": Model("llama-2-13b-gqa", 40, 5120, 16555, 40, 8, 128, 32000),
}

# TPU v5e as the scaling book gives it: 1.97e14 bf16 FLOP/s, 16 GiB of HBM and 8.2e11 B/s
# of HBM bandwidth per chip (the book's "0.82 TiB/s" is 8.2e11 B/s: its step times need it).
SLICES = {
    "tpu-v5e-8": Slice("tpu-v5e-8", 8, 1.97e14, 16 * 2**30, 8.2e11),
}
