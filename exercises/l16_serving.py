"""Lesson 16 — serving: sharded inference.

First a cost model of serving (plain Python, as lessons 3 and 14): the bytes of
the KV cache, prefill and decode times on the roofline, the largest batch that
fits, throughput and the critical batch size. Then the course's tiny
transformer served on a ``('data', 'model')`` mesh: ``prefill`` runs the prompt
and fills a KV cache laid out ``[layers, 2, batch, seq, kv_heads, head_dim]``
(batch over 'data', heads over 'model'); ``decode_step`` adds one token per
sequence, reading and updating that cache in place.

Read the lesson first: ``course show 16``. Grade with ``course grade 16``.
"""

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.sharding import Mesh
from jax.sharding import PartitionSpec as P

from grader.lessons.l16_serving.records import MODELS, SLICES, Model, Slice, param_count

__all__ = ["MODELS", "SLICES", "Model", "Slice", "param_count"]

DATA, MODEL = "data", "model"
CACHE = P(None, None, DATA, None, MODEL, None)
"""The KV cache [L, 2, B, S, K, Dh]: batch over 'data', kv heads over 'model'."""
PARAMS = {
    "embed": P(), "pos": P(), "unembed": P(),  # small: every device holds them whole
    "wq": P(None, None, MODEL), "wk": P(None, None, MODEL), "wv": P(None, None, MODEL),
    "wo": P(None, MODEL, None), "w_in": P(None, None, MODEL), "w_out": P(None, MODEL, None),
}  # fmt: skip
"""Megatron: heads and F over 'model'; the embeddings replicated."""


# ------------------------------------------------------------------ the cost model


def kv_cache_bytes(m: Model, tokens: int, itemsize: int) -> int:
    """Bytes of one sequence's KV cache holding ``tokens`` tokens, ``itemsize`` bytes a number.

    K and V, for every layer and key/value head: 2·L·K·H·tokens·itemsize.
    """
    # TODO: 2 (K and V) · layers · kv_heads · head_dim · tokens · itemsize.
    raise NotImplementedError("kv_cache_bytes: TODO")


def prefill_time(m: Model, s: Slice, batch: int, tokens: int, itemsize: int) -> float:
    """Seconds to prefill ``batch`` prompts of ``tokens`` tokens on the slice (roofline).

    FLOPs: 2·P per token, plus causal attention 2·L·N·H·T² per sequence. Bytes: the
    weights read once (P·itemsize) and the caches written. The time is the larger of
    FLOPs / (chips·peak) and bytes / (chips·bandwidth).
    """
    # TODO: the larger of FLOPs / (chips·peak) and bytes / (chips·bandwidth).
    raise NotImplementedError("prefill_time: TODO")


def decode_step_time(m: Model, s: Slice, batch: int, context: int, itemsize: int) -> float:
    """Seconds of one decode step: every sequence adds one token to a ``context``-token cache.

    The caches are read at HBM bandwidth (attention is always memory-bound); the
    weights take the larger of their FLOPs (2·B·P at peak) and their bytes
    (P·itemsize at bandwidth). All over the slice's chips.
    """
    # TODO: caches at bandwidth + max(weights' FLOPs at peak, weights' bytes at bandwidth).
    raise NotImplementedError("decode_step_time: TODO")


def max_batch(m: Model, s: Slice, context: int, itemsize: int) -> int:
    """The most sequences of ``context`` tokens whose caches fit in the slice's HBM
    beside one copy of the weights (0 when the weights alone do not fit)."""
    # TODO: (chips·HBM − one copy of the weights) // one sequence's cache, never below 0.
    raise NotImplementedError("max_batch: TODO")


def throughput(m: Model, s: Slice, batch: int, context: int, itemsize: int) -> float:
    """Tokens per second the slice generates at this batch: batch / decode_step_time."""
    # TODO: every step gives each of the batch's sequences one token.
    raise NotImplementedError("throughput: TODO")


def critical_batch(s: Slice, itemsize: int) -> float:
    """The batch at which reading the weights takes as long as their FLOPs:
    2·B·P / peak = P·itemsize / bandwidth, so B = peak·itemsize / (2·bandwidth)."""
    # TODO: solve 2·B·P / peak = P·itemsize / bandwidth for B.
    raise NotImplementedError("critical_batch: TODO")


# ------------------------------------------------------------------ the sharded model


def prefill(
    params: dict, tokens: jax.Array, mesh: Mesh, n_heads: int, max_len: int
) -> tuple[jax.Array, jax.Array]:
    """Run the prompts ``tokens: int32[B, T]`` (``P('data', None)``) through the model.

    Returns the logits of each prompt's last token, ``[B, V]`` ``P('data', None)``, and
    the KV cache ``[L, 2, B, max_len, H, Dh]`` sharded ``CACHE``: positions 0 … T−1
    hold the prompts' keys and values, the rest zeros.
    """
    # TODO: jax.shard_map over (PARAMS, P('data', None)) → (P('data', None), CACHE). In the body, embed the tokens and add pos[:T]; start a zero cache [L, 2, b, max_len, H/model, Dh] (lax.pcast it to varying over both axes); loop over the layers (lax.fori_loop): q, k, v of the local heads, write k and v at positions 0…T−1 of layer i, causal attention, psum o @ wo over 'model', then the MLP with its own psum. Logits of the last token: h[:, -1] @ unembed.
    raise NotImplementedError("prefill: TODO")


def decode_step(
    params: dict, cache: jax.Array, tokens: jax.Array, pos: jax.Array, mesh: Mesh, n_heads: int
) -> tuple[jax.Array, jax.Array]:
    """One token more per sequence: ``tokens: int32[B]`` (``P('data')``) at position
    ``pos`` (an int32 scalar, replicated: every prompt has ``pos`` tokens cached).

    Writes the new keys and values at ``pos`` into ``cache`` (sharded ``CACHE``; the
    caller donates it) and returns the next-token logits ``[B, V]`` ``P('data', None)``
    and the cache, sharded as it came.
    """
    # TODO: jax.shard_map over (PARAMS, CACHE, P('data'), P()) → (P('data', None), CACHE). In the body, embed the token and add pos_embedding[pos]; in each layer compute q, k, v for the one new token, write k and v at position pos of layer i with lax.dynamic_update_slice (in place), attend over that layer's cached keys ≤ pos, then psum as in prefill.
    raise NotImplementedError("decode_step: TODO")


CACHE_GQA = P(None, None, (DATA, MODEL), None, None, None)
"""With fewer key/value heads than 'model' devices: the cache split by batch over both axes."""
PARAMS_GQA = {**PARAMS, "wk": P(), "wv": P()}
"""wk and wv replicated (K·Dh columns, small); the rest as PARAMS."""


def decode_step_gqa(
    params: dict, cache: jax.Array, tokens: jax.Array, pos: jax.Array, mesh: Mesh, n_heads: int
) -> tuple[jax.Array, jax.Array]:
    """``decode_step`` for grouped-query attention with fewer key/value heads than
    'model' devices: ``wk, wv [L, D, K·Dh]`` replicated (``PARAMS_GQA``), the cache
    ``[L, 2, B, S, K, Dh]`` split by batch over ('data', 'model') (``CACHE_GQA``).

    Around attention, one all-to-all over 'model' turns each device's query heads for
    its B/data rows into all heads for its own B/(data·model) rows, and one turns the
    output back; key/value head j serves query heads j·N/K … (j+1)·N/K − 1.
    """
    # TODO: as decode_step, with in_specs (PARAMS_GQA, CACHE_GQA, P('data'), P()). In each
    #       layer: q of your heads → lax.all_to_all(q, 'model', 0, 2, tiled=True); k, v of your
    #       own rows only, written at pos; attention with each kv head repeated N/K times;
    #       lax.all_to_all(o, 'model', 2, 0, tiled=True); then wo and the MLP as before.
    raise NotImplementedError("decode_step_gqa: TODO")


# ------------------------------------------------------------------ bonus: speculative sampling


def verify_draft(p: np.ndarray, q: np.ndarray, token: int) -> tuple[float, np.ndarray]:
    """The draft model proposed ``token`` from its distribution ``q``; the target's is ``p``
    (both [V], summing to 1). Return the probability of keeping the token and the
    distribution to draw from when it is rejected, so that the token emitted follows p
    exactly: min(1, p[x]/q[x]), and max(p − q, 0) normalised (p itself where p = q).
    """
    # TODO: the acceptance probability, and the residual max(p − q, 0) / its sum.
    raise NotImplementedError("verify_draft: TODO")


def expected_tokens(alpha: float, gamma: int) -> float:
    """Tokens one verification step emits on average when each of ``gamma`` drafted tokens
    is accepted with probability ``alpha``, independently, until the first rejection:
    1 + α + … + α^γ = (1 − α^(γ+1)) / (1 − α), and γ + 1 at α = 1.
    """
    # TODO: the geometric sum, with α = 1 apart.
    raise NotImplementedError("expected_tokens: TODO")
