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
    return 2 * m.layers * m.kv_heads * m.head_dim * tokens * itemsize


def prefill_time(m: Model, s: Slice, batch: int, tokens: int, itemsize: int) -> float:
    """Seconds to prefill ``batch`` prompts of ``tokens`` tokens on the slice (roofline).

    FLOPs: 2·P per token, plus causal attention 2·L·N·H·T² per sequence. Bytes: the
    weights read once (P·itemsize) and the caches written. The time is the larger of
    FLOPs / (chips·peak) and bytes / (chips·bandwidth).
    """
    flops = 2.0 * param_count(m) * batch * tokens
    flops += 2.0 * m.layers * m.heads * m.head_dim * batch * tokens**2
    moved = param_count(m) * itemsize + batch * kv_cache_bytes(m, tokens, itemsize)
    return max(flops / (s.chips * s.peak_flops), moved / (s.chips * s.hbm_bandwidth))


def decode_step_time(m: Model, s: Slice, batch: int, context: int, itemsize: int) -> float:
    """Seconds of one decode step: every sequence adds one token to a ``context``-token cache.

    The caches are read at HBM bandwidth (attention is always memory-bound); the
    weights take the larger of their FLOPs (2·B·P at peak) and their bytes
    (P·itemsize at bandwidth). All over the slice's chips.
    """
    bandwidth = s.chips * s.hbm_bandwidth
    caches = batch * kv_cache_bytes(m, context, itemsize) / bandwidth
    p = param_count(m)
    weights = max(2.0 * batch * p / (s.chips * s.peak_flops), p * itemsize / bandwidth)
    return caches + weights


def max_batch(m: Model, s: Slice, context: int, itemsize: int) -> int:
    """The most sequences of ``context`` tokens whose caches fit in the slice's HBM
    beside one copy of the weights (0 when the weights alone do not fit)."""
    free = s.chips * s.hbm_bytes - param_count(m) * itemsize
    return max(0, int(free // kv_cache_bytes(m, context, itemsize)))


def throughput(m: Model, s: Slice, batch: int, context: int, itemsize: int) -> float:
    """Tokens per second the slice generates at this batch: batch / decode_step_time."""
    return batch / decode_step_time(m, s, batch, context, itemsize)


def critical_batch(s: Slice, itemsize: int) -> float:
    """The batch at which reading the weights takes as long as their FLOPs:
    2·B·P / peak = P·itemsize / bandwidth, so B = peak·itemsize / (2·bandwidth)."""
    return s.peak_flops * itemsize / (2.0 * s.hbm_bandwidth)


# ------------------------------------------------------------------ the sharded model


def _attend(q: jax.Array, k: jax.Array, v: jax.Array, visible: jax.Array) -> jax.Array:
    """q [b, T, h, dh] over k, v [b, S, h, dh]; ``visible`` [T, S] bool."""
    scores = jnp.einsum("bthd,bshd->bhts", q, k) / jnp.sqrt(q.shape[-1]).astype(q.dtype)
    scores = jnp.where(visible, scores, -jnp.inf)
    return jnp.einsum("bhts,bshd->bthd", jax.nn.softmax(scores, axis=-1), v)


def _heads(x: jax.Array, w: jax.Array, dh: int) -> jax.Array:
    b, t, _ = x.shape
    return (x @ w).reshape(b, t, -1, dh)  # [b, T, H/model, Dh], head-major columns


def _layer_weights(p: dict, i: jax.Array) -> dict:
    return {k: p[k][i] for k in ("wq", "wk", "wv", "wo", "w_in", "w_out")}


def _block_out(h: jax.Array, o: jax.Array, w: dict) -> jax.Array:
    """The rest of a block after attention: wo, residual, MLP, residual; one psum each."""
    b, t = h.shape[:2]
    h = h + lax.psum(o.reshape(b, t, -1) @ w["wo"], MODEL)
    return h + lax.psum(jnp.tanh(h @ w["w_in"]) @ w["w_out"], MODEL)


def prefill(
    params: dict, tokens: jax.Array, mesh: Mesh, n_heads: int, max_len: int
) -> tuple[jax.Array, jax.Array]:
    """Run the prompts ``tokens: int32[B, T]`` (``P('data', None)``) through the model.

    Returns the logits of each prompt's last token, ``[B, V]`` ``P('data', None)``, and
    the KV cache ``[L, 2, B, max_len, H, Dh]`` sharded ``CACHE``: positions 0 … T−1
    hold the prompts' keys and values, the rest zeros.
    """
    n_layers, _, hdh = params["wq"].shape
    dh = hdh // n_heads

    def body(p: dict, tok: jax.Array) -> tuple[jax.Array, jax.Array]:
        b, t = tok.shape
        h = p["embed"][tok] + p["pos"][:t]  # [b, T, D]
        local_heads = p["wq"].shape[2] // dh
        cache = jnp.zeros((n_layers, 2, b, max_len, local_heads, dh), h.dtype)
        cache = lax.pcast(cache, (DATA, MODEL), to="varying")
        causal = jnp.tril(jnp.ones((t, t), bool))

        def layer(i: jax.Array, carry: tuple) -> tuple:
            h, cache = carry
            w = _layer_weights(p, i)
            q, k, v = (_heads(h, w[n], dh) for n in ("wq", "wk", "wv"))
            kv = jnp.stack([k, v])[None]  # [1, 2, b, T, h, dh]
            cache = lax.dynamic_update_slice(cache, kv, (i, 0, 0, 0, 0, 0))
            return _block_out(h, _attend(q, k, v, causal), w), cache

        h, cache = lax.fori_loop(0, n_layers, layer, (h, cache))
        return h[:, -1] @ p["unembed"], cache

    return jax.shard_map(
        body, mesh=mesh, in_specs=(PARAMS, P(DATA, None)), out_specs=(P(DATA, None), CACHE)
    )(params, tokens)


def decode_step(
    params: dict, cache: jax.Array, tokens: jax.Array, pos: jax.Array, mesh: Mesh, n_heads: int
) -> tuple[jax.Array, jax.Array]:
    """One token more per sequence: ``tokens: int32[B]`` (``P('data')``) at position
    ``pos`` (an int32 scalar, replicated: every prompt has ``pos`` tokens cached).

    Writes the new keys and values at ``pos`` into ``cache`` (sharded ``CACHE``; the
    caller donates it) and returns the next-token logits ``[B, V]`` ``P('data', None)``
    and the cache, sharded as it came.
    """
    n_layers, _, hdh = params["wq"].shape
    dh = hdh // n_heads

    def body(p: dict, cache: jax.Array, tok: jax.Array, pos: jax.Array) -> tuple:
        h = (p["embed"][tok] + p["pos"][pos])[:, None]  # [b, 1, D]: this token's position
        visible = (jnp.arange(cache.shape[3]) <= pos)[None]  # [1, S]: the cache up to pos

        def layer(i: jax.Array, carry: tuple) -> tuple:
            h, cache = carry
            w = _layer_weights(p, i)
            q, k, v = (_heads(h, w[n], dh) for n in ("wq", "wk", "wv"))
            new = jnp.stack([k, v])[None]  # [1, 2, b, 1, h, dh]
            cache = lax.dynamic_update_slice(cache, new, (i, 0, 0, pos, 0, 0))  # in place
            kv = lax.dynamic_index_in_dim(cache, i, keepdims=False)  # [2, b, S, h, dh]
            return _block_out(h, _attend(q, kv[0], kv[1], visible), w), cache

        h, cache = lax.fori_loop(0, n_layers, layer, (h, cache))
        return h[:, 0] @ p["unembed"], cache

    return jax.shard_map(
        body, mesh=mesh, in_specs=(PARAMS, CACHE, P(DATA), P()), out_specs=(P(DATA, None), CACHE)
    )(params, cache, tokens, pos)


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
    n_layers, _, hdh = params["wq"].shape
    dh = hdh // n_heads

    def body(p: dict, cache: jax.Array, tok: jax.Array, pos: jax.Array) -> tuple:
        h = (p["embed"][tok] + p["pos"][pos])[:, None]  # [b, 1, D], b = B/data
        rows = cache.shape[2]  # B/(data·model): this device's sequences
        mine = lax.axis_index(MODEL) * rows
        visible = (jnp.arange(cache.shape[3]) <= pos)[None]

        def layer(i: jax.Array, carry: tuple) -> tuple:
            h, cache = carry
            w = _layer_weights(p, i)
            q = _heads(h, w["wq"], dh)  # [b, 1, N/model, dh]: all rows, my heads
            q = lax.all_to_all(q, MODEL, 0, 2, tiled=True)  # [b/model, 1, N, dh]: my rows
            own = lax.dynamic_slice_in_dim(h, mine, rows, axis=0)
            k, v = (_heads(own, w[n], dh) for n in ("wk", "wv"))  # [b/model, 1, K, dh]
            cache = lax.dynamic_update_slice(cache, jnp.stack([k, v])[None], (i, 0, 0, pos, 0, 0))
            kv = lax.dynamic_index_in_dim(cache, i, keepdims=False)  # [2, b/model, S, K, dh]
            share = q.shape[2] // kv.shape[3]  # query heads per key/value head
            keys, values = (jnp.repeat(kv[j], share, axis=2) for j in (0, 1))
            o = _attend(q, keys, values, visible)  # [b/model, 1, N, dh]
            o = lax.all_to_all(o, MODEL, 2, 0, tiled=True)  # [b, 1, N/model, dh]: my heads
            return _block_out(h, o, w), cache

        h, cache = lax.fori_loop(0, n_layers, layer, (h, cache))
        return h[:, 0] @ p["unembed"], cache

    return jax.shard_map(
        body, mesh=mesh, in_specs=(PARAMS_GQA, CACHE_GQA, P(DATA), P()),
        out_specs=(P(DATA, None), CACHE_GQA),
    )(params, cache, tokens, pos)  # fmt: skip


# ------------------------------------------------------------------ bonus: speculative sampling


def verify_draft(p: np.ndarray, q: np.ndarray, token: int) -> tuple[float, np.ndarray]:
    """The draft model proposed ``token`` from its distribution ``q``; the target's is ``p``
    (both [V], summing to 1). Return the probability of keeping the token and the
    distribution to draw from when it is rejected, so that the token emitted follows p
    exactly: min(1, p[x]/q[x]), and max(p − q, 0) normalised (p itself where p = q).
    """
    accept = min(1.0, float(p[token] / q[token]))
    residual = np.maximum(p - q, 0.0)
    total = residual.sum()
    return accept, (residual / total if total > 0 else p.copy())


def expected_tokens(alpha: float, gamma: int) -> float:
    """Tokens one verification step emits on average when each of ``gamma`` drafted tokens
    is accepted with probability ``alpha``, independently, until the first rejection:
    1 + α + … + α^γ = (1 − α^(γ+1)) / (1 − α), and γ + 1 at α = 1.
    """
    if alpha == 1:
        return float(gamma + 1)
    return (1 - alpha ** (gamma + 1)) / (1 - alpha)
