"""Realistic wrong implementations for lesson 16 (see tests/mistakes/__init__.py).

The cost model: N heads counted for K, K and V counted once, elements for bytes,
prefill without attention or with compute and memory added, decode without the
caches or with memory time only, the weights not subtracted from HBM or one
chip's HBM, one token per step, the critical batch without itemsize. The sharded
model: a psum forgotten, the cache gathered every step, the mask off by one at
the new position either way, positions not advanced, the cache replicated over
'model' (every head's keys on every device), the cache carried through
lax.scan or rewritten whole with jnp.where (copied each step), stacked again from its
layers or read as it came after the writes (copied each step), each layer rewritten
whole and written back (in place, but the whole cache written each step), the cache
returned in another dtype (not aliased). Grouped-query attention: the cache gathered instead
of the queries moved, the cache still split by heads with fewer key/value heads
than 'model' devices, the key/value heads tiled instead of repeated, the new token's keys and values or
this device's rows of h moved by all-to-all, the logits or h averaged over 'model'. The
cache kept in host memory between steps (a new buffer each step, not aliased). The
bonus: the residual left 0/0 where p = q.
"""

from __future__ import annotations

from tests.mistakes import Mistake

L16 = "l16_serving"


def _edit(id: str, exercise: str, old: str, new: str, says: tuple[str, ...], check: str = "values") -> Mistake:  # fmt: skip
    return Mistake(id=id, module=L16, exercise=exercise, status="failed", check=check,
                   says=says, patch=((old, new),))  # fmt: skip


KV = "return 2 * m.layers * m.kv_heads * m.head_dim * tokens * itemsize"
DECODE_VISIBLE = "visible = (jnp.arange(cache.shape[3]) <= pos)[None]  # [1, S]"
DECODE_WRITE = "cache = lax.dynamic_update_slice(cache, new, (i, 0, 0, pos, 0, 0))  # in place"
WHERE = """at = (jnp.arange(n_layers)[:, None, None, None, None, None] == i) & (
                jnp.arange(cache.shape[3])[None, None, None, :, None, None] == pos)
            cache = jnp.where(at, jnp.broadcast_to(new, cache.shape[:3] + (1,) + cache.shape[4:]), cache)"""
LAYER_REWRITTEN = (
    (
        "new = jnp.stack([k, v])[None]  # [1, 2, b, 1, h, dh]\n"
        "            cache = lax.dynamic_update_slice(cache, new, (i, 0, 0, pos, 0, 0))  # in place",
        "new = jnp.stack([k, v])  # [2, b, 1, h, dh]\n"
        "            slot = jnp.arange(cache.shape[3])[None, None, :, None, None]\n"
        "            layer = jnp.where(slot == pos, new, lax.dynamic_index_in_dim(cache, i, keepdims=False))\n"
        "            cache = lax.dynamic_update_slice(cache, layer[None], (i, 0, 0, 0, 0, 0))  # the whole layer",
    ),
)
"""Each layer's keys and values rewritten whole (a jnp.where at pos) and written back:
values right, aliased, one layer of temporaries, but the whole cache written each step."""
READ_AS_IT_CAME = (
    (
        'h, cache = carry\n            w = _layer_weights(p, i)\n            q, k, v = (_heads(h, w[n], dh) for n in ("wq", "wk", "wv"))\n            new',
        'h, out = carry\n            w = _layer_weights(p, i)\n            q, k, v = (_heads(h, w[n], dh) for n in ("wq", "wk", "wv"))\n            new',
    ),
    (
        "cache = lax.dynamic_update_slice(cache, new, (i, 0, 0, pos, 0, 0))  # in place\n"
        "            kv = lax.dynamic_index_in_dim(cache, i, keepdims=False)  # [2, b, S, h, dh]\n"
        "            return _block_out(h, _attend(q, kv[0], kv[1], visible), w), cache",
        "out = lax.dynamic_update_slice(out, new, (i, 0, 0, pos, 0, 0))\n"
        "            kv = lax.dynamic_index_in_dim(cache, i, keepdims=False)  # the cache as it came\n"
        "            kv = lax.dynamic_update_slice(kv, new[0], (0, 0, pos, 0, 0))\n"
        "            return _block_out(h, _attend(q, kv[0], kv[1], visible), w), out",
    ),
)
"""Each layer read from the cache as it came in (the function's argument), not the one
being written: XLA must keep the old cache beside the new, a copy of it each step."""
CONCATENATED = '''
def decode_step(params, cache, tokens, pos, mesh, n_heads):
    """Each layer updated apart and the cache stacked again from its layers."""
    n_layers, _, hdh = params["wq"].shape
    dh = hdh // n_heads

    def body(p, cache, tok, pos):
        h = (p["embed"][tok] + p["pos"][pos])[:, None]
        visible = (jnp.arange(cache.shape[3]) <= pos)[None]
        layers = []
        for i in range(n_layers):
            w = {k: p[k][i] for k in ("wq", "wk", "wv", "wo", "w_in", "w_out")}
            q, k, v = (_heads(h, w[n], dh) for n in ("wq", "wk", "wv"))
            kv = lax.dynamic_update_slice(cache[i], jnp.stack([k, v]), (0, 0, pos, 0, 0))
            layers.append(kv)
            h = _block_out(h, _attend(q, kv[0], kv[1], visible), w)
        return h[:, 0] @ p["unembed"], jnp.stack(layers)

    return jax.shard_map(
        body, mesh=mesh, in_specs=(PARAMS, CACHE, P(DATA), P()), out_specs=(P(DATA, None), CACHE)
    )(params, cache, tokens, pos)
'''
GQA_SPECS = "body, mesh=mesh, in_specs=(PARAMS_GQA, CACHE_GQA, P(DATA), P()),\n        out_specs=(P(DATA, None), CACHE_GQA),"
DECODE_READ = "kv = lax.dynamic_index_in_dim(cache, i, keepdims=False)  # [2, b, S, h, dh]"

GATHERED = """kv = lax.all_gather(lax.dynamic_index_in_dim(cache, i, keepdims=False), MODEL, axis=3, tiled=True)
            kv = lax.dynamic_slice_in_dim(kv, lax.axis_index(MODEL) * q.shape[2], q.shape[2], axis=3)"""

SCANNED = '''
def decode_step(params, cache, tokens, pos, mesh, n_heads):
    """Layers as a lax.scan over (weights, cache): the cache comes back as the scan's ys."""
    n_layers, _, hdh = params["wq"].shape
    dh = hdh // n_heads
    names = ("wq", "wk", "wv", "wo", "w_in", "w_out")

    def body(p, cache, tok, pos):
        h = (p["embed"][tok] + p["pos"][pos])[:, None]
        visible = (jnp.arange(cache.shape[3]) <= pos)[None]

        def layer(h, xs):
            w, kv = xs
            q, k, v = (_heads(h, w[n], dh) for n in ("wq", "wk", "wv"))
            kv = lax.dynamic_update_slice(kv, jnp.stack([k, v]), (0, 0, pos, 0, 0))
            return _block_out(h, _attend(q, kv[0], kv[1], visible), w), kv

        h, cache = lax.scan(layer, h, ({n: p[n] for n in names}, cache))
        return h[:, 0] @ p["unembed"], cache

    return jax.shard_map(
        body, mesh=mesh, in_specs=(PARAMS, CACHE, P(DATA), P()), out_specs=(P(DATA, None), CACHE)
    )(params, cache, tokens, pos)
'''

GQA_GATHERED = '''
def decode_step_gqa(params, cache, tokens, pos, mesh, n_heads):
    """No all-to-alls: every device gathers the layer's batch-split cache over 'model' and
    attends for all its B/data rows with its own query heads."""
    n_layers, _, hdh = params["wq"].shape
    dh = hdh // n_heads

    def body(p, cache, tok, pos):
        h = (p["embed"][tok] + p["pos"][pos])[:, None]
        rows = cache.shape[2]
        mine = lax.axis_index(MODEL) * rows
        visible = (jnp.arange(cache.shape[3]) <= pos)[None]

        def layer(i, carry):
            h, cache = carry
            w = _layer_weights(p, i)
            q = _heads(h, w["wq"], dh)  # [b, 1, N/model, dh]
            own = lax.dynamic_slice_in_dim(h, mine, rows, axis=0)
            k, v = (_heads(own, w[n], dh) for n in ("wk", "wv"))
            cache = lax.dynamic_update_slice(cache, jnp.stack([k, v])[None], (i, 0, 0, pos, 0, 0))
            kv = lax.all_gather(lax.dynamic_index_in_dim(cache, i, keepdims=False), MODEL,
                                axis=1, tiled=True)  # [2, b, S, K, dh]: every row
            kv = jnp.repeat(kv, n_heads // kv.shape[3], axis=3)  # [2, b, S, N, dh]
            kv = lax.dynamic_slice_in_dim(kv, lax.axis_index(MODEL) * q.shape[2], q.shape[2], axis=3)
            return _block_out(h, _attend(q, kv[0], kv[1], visible), w), cache

        h, cache = lax.fori_loop(0, n_layers, layer, (h, cache))
        return h[:, 0] @ p["unembed"], cache

    return jax.shard_map(
        body, mesh=mesh, in_specs=(PARAMS_GQA, CACHE_GQA, P(DATA), P()),
        out_specs=(P(DATA, None), CACHE_GQA),
    )(params, cache, tokens, pos)
'''

GQA_QUERIES_GATHERED = (
    (
        "q = lax.all_to_all(q, MODEL, 0, 2, tiled=True)  # [b/model, 1, N, dh]: my rows",
        "q = lax.dynamic_slice_in_dim(lax.all_gather(q, MODEL, axis=2, tiled=True), mine, rows, axis=0)",
    ),
    (
        "o = lax.all_to_all(o, MODEL, 2, 0, tiled=True)  # [b, 1, N/model, dh]: my heads",
        "o = lax.dynamic_slice_in_dim(lax.all_gather(o, MODEL, axis=0, tiled=True), lax.axis_index(MODEL) * (q.shape[2] // lax.axis_size(MODEL)), q.shape[2] // lax.axis_size(MODEL), axis=2)",
    ),
)
"""The queries and the output gathered whole, then sliced: right values, 'model' times the bytes."""

CACHE_REPLICATED = (
    ('local_heads = p["wq"].shape[2] // dh', "local_heads = n_heads"),
    (
        'cache = lax.pcast(cache, (DATA, MODEL), to="varying")',
        'cache = lax.pcast(cache, (DATA,), to="varying")',
    ),
    (
        "kv = jnp.stack([k, v])[None]  # [1, 2, b, T, h, dh]",
        'kv = lax.all_gather(jnp.stack([k, v])[None], MODEL, axis=4, tiled=True, to="invarying")',
    ),
    (
        "body, mesh=mesh, in_specs=(PARAMS, P(DATA, None)), out_specs=(P(DATA, None), CACHE)",
        "body, mesh=mesh, in_specs=(PARAMS, P(DATA, None)), out_specs=(P(DATA, None), P(None, None, DATA, None, None, None))",
    ),
)
"""Every 'model' device keeps every head's keys and values: the cache replicated over 'model'."""

TOKEN_BY_TOKEN = '''
def prefill(params, tokens, mesh, n_heads, max_len):
    """The prompt fed one token at a time, each a decode step against the cache so far."""
    n_layers, _, hdh = params["wq"].shape
    dh = hdh // n_heads

    def body(p, tok):
        b, t = tok.shape
        cache = jnp.zeros((n_layers, 2, b, max_len, p["wq"].shape[2] // dh, dh), jnp.float32)
        cache = lax.pcast(cache, (DATA, MODEL), to="varying")
        for pos in range(t):
            h = (p["embed"][tok[:, pos]] + p["pos"][pos])[:, None]
            visible = (jnp.arange(max_len) <= pos)[None]

            def layer(i, carry, pos=pos, visible=visible):
                h, cache = carry
                w = _layer_weights(p, i)
                q, k, v = (_heads(h, w[n], dh) for n in ("wq", "wk", "wv"))
                cache = lax.dynamic_update_slice(cache, jnp.stack([k, v])[None], (i, 0, 0, pos, 0, 0))
                kv = lax.dynamic_index_in_dim(cache, i, keepdims=False)
                return _block_out(h, _attend(q, kv[0], kv[1], visible), w), cache

            h, cache = lax.fori_loop(0, n_layers, layer, (h, cache))
        return h[:, 0] @ p["unembed"], cache

    return jax.shard_map(
        body, mesh=mesh, in_specs=(PARAMS, P(DATA, None)), out_specs=(P(DATA, None), CACHE)
    )(params, tokens)
'''

OFFLOADED = (
    (
        """    return jax.shard_map(
        body, mesh=mesh, in_specs=(PARAMS, CACHE, P(DATA), P()), out_specs=(P(DATA, None), CACHE)
    )(params, cache, tokens, pos)
""",
        """    on_device = jax.NamedSharding(mesh, CACHE, memory_kind="device")
    logits, cache = jax.shard_map(
        body, mesh=mesh, in_specs=(PARAMS, CACHE, P(DATA), P()), out_specs=(P(DATA, None), CACHE)
    )(params, jax.device_put(cache, on_device), tokens, pos)
    return logits, jax.device_put(cache, on_device.with_memory_kind("pinned_host"))
""",
    ),
)
"""The cache kept in host memory between steps (brought in, sent back out): every step
copies all of it twice, and the output cannot alias the donated input."""

GQA_OWN_KV = """            own = lax.dynamic_slice_in_dim(h, mine, rows, axis=0)
            k, v = (_heads(own, w[n], dh) for n in ("wk", "wv"))  # [b/model, 1, K, dh]
"""
GQA_KV_MOVED = """            k, v = (_heads(h, w[n], dh) for n in ("wk", "wv"))  # [b, 1, K, dh]: every row
            kv_heads = k.shape[2]  # moved to the rows' devices, as the queries are
            k, v = (lax.all_to_all(x, MODEL, 0, 2, tiled=True)[:, :, :kv_heads] for x in (k, v))
"""
"""The new token's keys and values computed for all B/data rows, then swapped to their
rows' devices like the queries (the first K heads of what arrives): right values, four
all-to-alls per layer."""
GQA_ROWS_MOVED = (
    (
        "own = lax.dynamic_slice_in_dim(h, mine, rows, axis=0)",
        "own = lax.all_to_all(h, MODEL, 0, 1, tiled=True)[:, :1]  # [b/model, 1, D]: my rows",
    ),
)
"""This device's rows of h handed over by an all-to-all instead of sliced: three a layer."""
GQA_LOGITS = """        h, cache = lax.fori_loop(0, n_layers, layer, (h, cache))
        return h[:, 0] @ p["unembed"], cache

    return jax.shard_map(
        body, mesh=mesh, in_specs=(PARAMS_GQA"""

MISTAKES: list[Mistake] = [
    # ---------------------------------------------------------------- the cost model
    _edit(
        "l16-kv-query-heads",
        "kv_cache_bytes",
        KV,
        "return 2 * m.layers * m.heads * m.head_dim * tokens * itemsize",
        ("K key/value heads",),
    ),
    _edit(
        "l16-kv-once",
        "kv_cache_bytes",
        KV,
        "return m.layers * m.kv_heads * m.head_dim * tokens * itemsize",
        ("both K and V",),
    ),
    _edit(
        "l16-kv-elements",
        "kv_cache_bytes",
        KV,
        "return 2 * m.layers * m.kv_heads * m.head_dim * tokens",
        ("Elements, not bytes",),
    ),
    _edit(
        "l16-prefill-without-attention",
        "prefill_time",
        "flops += 2.0 * m.layers * m.heads * m.head_dim * batch * tokens**2",
        "",
        ("attention term is missing",),
    ),
    _edit(
        "l16-prefill-compute-plus-memory",
        "prefill_time",
        "return max(flops / (s.chips * s.peak_flops), moved / (s.chips * s.hbm_bandwidth))",
        "return flops / (s.chips * s.peak_flops) + moved / (s.chips * s.hbm_bandwidth)",
        ("add compute and memory",),
    ),
    _edit(
        "l16-decode-without-caches",
        "decode_step_time",
        "return caches + weights",
        "return weights",
        ("caches are missing",),
    ),
    _edit(  # one cache read for the whole batch, as if the sequences shared it like the weights
        "l16-decode-one-cache-read-for-the-batch",
        "decode_step_time",
        "caches = batch * kv_cache_bytes(m, context, itemsize) / bandwidth",
        "caches = kv_cache_bytes(m, context, itemsize) / bandwidth",
        ("caches read term", "multiplied by 1/(batch = 16)"),
    ),
    _edit(
        "l16-decode-memory-only",
        "decode_step_time",
        "weights = max(2.0 * batch * p / (s.chips * s.peak_flops), p * itemsize / bandwidth)",
        "weights = p * itemsize / bandwidth",
        ("Memory time only",),
    ),
    _edit(
        "l16-max-batch-weights-kept",
        "max_batch",
        "free = s.chips * s.hbm_bytes - param_count(m) * itemsize",
        "free = s.chips * s.hbm_bytes",
        ("weights are not subtracted",),
    ),
    _edit(
        "l16-max-batch-one-chip",
        "max_batch",
        "free = s.chips * s.hbm_bytes - param_count(m) * itemsize",
        "free = s.hbm_bytes - param_count(m) * itemsize",
        ("One chip's HBM",),
    ),
    _edit(
        "l16-max-batch-weights-on-every-chip",
        "max_batch",
        "free = s.chips * s.hbm_bytes - param_count(m) * itemsize",
        "free = s.chips * (s.hbm_bytes - param_count(m) * itemsize)",
        ("A copy of the weights on every chip",),
    ),
    _edit(
        "l16-throughput-one-token-per-step",
        "throughput",
        "return batch / decode_step_time(m, s, batch, context, itemsize)",
        "return 1 / decode_step_time(m, s, batch, context, itemsize)",
        ("One token per step",),
    ),
    _edit(
        "l16-critical-batch-without-itemsize",
        "critical_batch",
        "return s.peak_flops * itemsize / (2.0 * s.hbm_bandwidth)",
        "return s.peak_flops / s.hbm_bandwidth",
        ("Without itemsize",),
    ),
    # ---------------------------------------------------------------- the sharded model
    Mistake(
        id="l16-mlp-psum-forgotten-unchecked",
        module=L16,
        exercise="prefill",
        status="failed",
        check="collectives",
        says=("never summed", "2·L"),
        patch=(
            (
                'return h + lax.psum(jnp.tanh(h @ w["w_in"]) @ w["w_out"], MODEL)',
                'return h + jnp.tanh(h @ w["w_in"]) @ w["w_out"]',
            ),
            (
                "body, mesh=mesh, in_specs=(PARAMS, P(DATA, None)), out_specs=(P(DATA, None), CACHE)",
                "body, mesh=mesh, in_specs=(PARAMS, P(DATA, None)), out_specs=(P(DATA, None), CACHE), check_vma=False",
            ),
        ),
    ),
    _edit(
        "l16-cache-gathered-every-step",
        "decode_step",
        DECODE_READ,
        GATHERED,
        ("the cache (or a gathered copy of it) crosses devices", "never moves"),
        check="cache traffic",
    ),
    _edit(
        "l16-mask-misses-the-new-token",
        "decode_step",
        DECODE_VISIBLE,
        "visible = (jnp.arange(cache.shape[3]) < pos)[None]  # [1, S]",
        ("does not attend to itself",),
    ),
    _edit(
        "l16-mask-sees-the-next-slot",
        "decode_step",
        DECODE_VISIBLE,
        "visible = (jnp.arange(cache.shape[3]) <= pos + 1)[None]  # [1, S]",
        ("empty slot",),
    ),
    _edit(
        "l16-positions-not-advanced",
        "decode_step",
        'h = (p["embed"][tok] + p["pos"][pos])[:, None]  # [b, 1, D]: this',
        'h = (p["embed"][tok] + p["pos"][:1])[:, None]  # [b, 1, D]: this',
        ("embedded at position 0",),
    ),
    Mistake(
        id="l16-cache-through-scan",
        module=L16,
        exercise="decode_step",
        status="failed",
        check="in place",
        says=("a copy of the cache is made each step",),
        code=SCANNED,
    ),
    _edit(
        "l16-cache-rewritten-with-where",
        "decode_step",
        DECODE_WRITE,
        WHERE,
        ("a copy of the cache is made each step", "jnp.where over the whole cache"),
        check="in place",
    ),
    Mistake(
        id="l16-cache-layer-rewritten-whole",
        module=L16,
        exercise="decode_step",
        status="failed",
        check="in place",
        says=("each layer of the cache is rewritten whole", "(i, 0, 0, pos, 0, 0)"),
        patch=LAYER_REWRITTEN,
    ),
    Mistake(
        id="l16-cache-read-as-it-came",
        module=L16,
        exercise="decode_step",
        status="failed",
        check="in place",
        says=("a copy of the cache is made each step", "reading the cache as it came"),
        patch=READ_AS_IT_CAME,
    ),
    Mistake(
        id="l16-cache-stacked-from-its-layers",
        module=L16,
        exercise="decode_step",
        status="failed",
        check="in place",
        says=("concatenate", "a copy of the cache is made each step"),
        code=CONCATENATED,
    ),
    _edit(
        "l16-cache-returned-in-bfloat16",
        "decode_step",
        'return h[:, 0] @ p["unembed"], cache\n\n    return jax.shard_map(\n        body, mesh=mesh, in_specs=(PARAMS, CACHE, P(DATA), P())',
        'return h[:, 0] @ p["unembed"], cache.astype(jnp.bfloat16)\n\n    return jax.shard_map(\n        body, mesh=mesh, in_specs=(PARAMS, CACHE, P(DATA), P())',
        ("returned the cache as bfloat16", "expected float32"),
        check="returns",
    ),
    Mistake(
        id="l16-prefill-cache-replicated-over-model",
        module=L16,
        exercise="prefill",
        status="failed",
        check="cache",
        says=("comes back sharded P(None, None, 'data', None, None, None)", "/(data·model)"),
        patch=CACHE_REPLICATED,
    ),
    _edit(
        "l16-prefill-cache-k-and-v-swapped",
        "prefill",
        "kv = jnp.stack([k, v])[None]  # [1, 2, b, T, h, dh]",
        "kv = jnp.stack([v, k])[None]  # [1, 2, b, T, h, dh]",
        ("differ from the prompt's keys and values", "cache[i, 0"),
        check="cache",
    ),
    Mistake(
        id="l16-gqa-cache-gathered-instead-of-queries-moved",
        module=L16,
        exercise="decode_step_gqa",
        status="failed",
        check="cache traffic",
        says=("the cache (or a gathered copy of it) crosses devices",),
        code=GQA_GATHERED,
    ),
    Mistake(  # K < model: the head-split layout of decode_step cannot hold K heads
        id="l16-gqa-cache-split-by-heads",
        module=L16,
        exercise="decode_step_gqa",
        status="error",
        check=None,
        says=(
            "the heads cannot be split",
            "P(None, None, ('data', 'model'), None, None, None)",
            "lax.all_to_all",
        ),
        patch=((GQA_SPECS, GQA_SPECS.replace("CACHE_GQA", "CACHE")),),
    ),
    Mistake(
        id="l16-gqa-queries-gathered-not-swapped",
        module=L16,
        exercise="decode_step_gqa",
        status="failed",
        check="collectives",
        says=("all-gather", "all of it, 'model' times", "all_to_all(q, 'model', 0, 2"),
        patch=GQA_QUERIES_GATHERED,
    ),
    Mistake(
        id="l16-cache-offloaded-to-host",
        module=L16,
        exercise="decode_step",
        status="failed",
        check="in place",
        says=("the cache you return is a new buffer (in pinned_host memory", "memory it came in"),
        patch=OFFLOADED,
    ),
    _edit(
        "l16-gqa-new-keys-moved-like-queries",
        "decode_step_gqa",
        GQA_OWN_KV,
        GQA_KV_MOVED,
        ("all-to-alls over 'model' sending", "expected 2·L = ", "keys or values are moved"),
        check="collectives",
    ),
    Mistake(
        id="l16-gqa-own-rows-moved-by-all-to-all",
        module=L16,
        exercise="decode_step_gqa",
        status="failed",
        check="collectives",
        says=("all-to-alls over 'model' sending", "each of [B/data, 1, N/model, Dh]"),
        patch=GQA_ROWS_MOVED,
    ),
    _edit(
        "l16-gqa-logits-summed",
        "decode_step_gqa",
        GQA_LOGITS,
        GQA_LOGITS.replace('h[:, 0] @ p["unembed"]', 'lax.pmean(h[:, 0] @ p["unembed"], MODEL)'),
        ("all-reduces over 'model' per program", "the logits: they come from h"),
        check="collectives",
    ),
    _edit(
        "l16-gqa-h-averaged-over-model",
        "decode_step_gqa",
        'q = _heads(h, w["wq"], dh)  # [b, 1, N/model, dh]: all rows, my heads',
        "h = lax.pmean(h, MODEL)  # the same h on every 'model' device\n            q = _heads(h, w[\"wq\"], dh)",
        ("all-reduces over 'model' per program", "Measured: all-reduces over 'model' of"),
        check="collectives",
    ),
    _edit(
        "l16-gqa-kv-heads-tiled",
        "decode_step_gqa",
        "keys, values = (jnp.repeat(kv[j], share, axis=2) for j in (0, 1))",
        "keys, values = (jnp.tile(kv[j], (1, 1, share, 1)) for j in (0, 1))",
        ("logits differ",),
    ),
    _edit(
        "l16-speculative-accept-unclamped",
        "verify_draft",
        "accept = min(1.0, float(p[token] / q[token]))",
        "accept = float(p[token] / q[token])",
        ("not clamped",),
        check="values",
    ),
    _edit(
        "l16-speculative-ratio-upside-down",
        "verify_draft",
        "accept = min(1.0, float(p[token] / q[token]))",
        "accept = min(1.0, float(q[token] / p[token])) if p[token] > 0 else 0.0",
        ("upside down",),
        check="distribution",
    ),
    _edit(
        "l16-speculative-resample-from-p",
        "verify_draft",
        "residual = np.maximum(p - q, 0.0)\n    total = residual.sum()\n    return accept, (residual / total if total > 0 else p.copy())",
        "return accept, p.copy()",
        ("draw from p itself",),
        check="distribution",
    ),
    _edit(
        "l16-speculative-residual-not-normalised",
        "verify_draft",
        "return accept, (residual / total if total > 0 else p.copy())",
        "return accept, residual",
        ("not normalised",),
        check="distribution",
    ),
    _edit(
        "l16-speculative-residual-undefined-where-p-equals-q",
        "verify_draft",
        "return accept, (residual / total if total > 0 else p.copy())",
        "return accept, residual / total",
        ("p = q", "0/0", "p itself"),
    ),
    _edit(
        "l16-speculative-expected-one-short",
        "expected_tokens",
        "return (1 - alpha ** (gamma + 1)) / (1 - alpha)",
        "return (1 - alpha**gamma) / (1 - alpha)",
        ("A term short", "i = 0 … γ"),
    ),
    Mistake(
        id="l16-prefill-token-by-token",
        module=L16,
        exercise="prefill",
        status="failed",
        check="collectives",
        says=("one token at a time", "T·2·L"),
        code=TOKEN_BY_TOKEN,
    ),
    Mistake(  # drafts/heldback4: |p − q| normalised where max(p − q, 0) belongs; no hint before
        id="l16-speculative-residual-absolute-difference",
        module="l16_serving",
        exercise="verify_draft",
        status="failed",
        check="values",
        says=("an absolute value where the reference keeps the positive part",),
        patch=(("residual = np.maximum(p - q, 0.0)", "residual = np.abs(p - q)"),),
    ),
    Mistake(  # drafts/heldback7: a cache of the prompt's length; the layout alone before
        id="l16-prefill-cache-sized-to-the-prompt",
        module="l16_serving",
        exercise="prefill",
        status="failed",
        check="cache",
        says=("the prompt's length T, where its full length S = 48 belongs",),
        patch=(
            (
                "        cache = jnp.zeros((n_layers, 2, b, max_len, local_heads, dh), h.dtype)\n",
                "        cache = jnp.zeros((n_layers, 2, b, t, local_heads, dh), h.dtype)  # the prompt's keys\n",
            ),
        ),
    ),
]
