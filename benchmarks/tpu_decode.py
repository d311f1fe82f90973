"""Lesson 16's decode-step model against a decode step on the chip.

    python benchmarks/tpu_decode.py [--json FILE] [--batches 1,8,32,64,128]

A LLaMA-like model of 0.85 B parameters (L=16, D=2048, SwiGLU F=5632, N=16 query
heads and K=4 key/value heads of 128, V=32000), bf16 weights and cache, context
2,048, on one chip: one decode step per call, the cache donated and written in
place, the layers in a ``fori_loop``. Three forms of the same step:

- ``repeat``: the cache ``[L, 2, B, S, K, Dh]`` (the lesson's layout), each key/value
  head repeated N/K times before attention (``jnp.repeat``), as a first port does;
- ``grouped``: the same cache, the queries grouped ``[B, K, N/K, Dh]`` against it: no copy;
- ``heads-major``: grouped, the cache laid out ``[L, 2, B, K, S, Dh]``: its last two
  dimensions (S, Dh) are long, where ``[.., S, K, Dh]``'s are (K = 4, Dh) (a TPU tiles
  the last two; measured, not padded 4× in HBM: B = 64's cache would not have fit);
- ``unrolled``: heads-major, the layers a Python loop: each layer's cache a slice at a
  static index (no copy of a dynamically indexed layer);
- ``layers``: heads-major, one cache array a layer (a tuple of L, each donated).

Each is timed (median of ``--runs`` steps) against the lesson's own
``decode_step_time`` for one v5e chip (1.97e14 FLOP/s, 8.2e11 B/s), with what XLA
says it reads and writes (``cost_analysis``'s bytes accessed) and its temporaries.
On a host without an accelerator it says so and exits 0.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from functools import partial

L, D, F, N, K, DH, V, S = 16, 2048, 5632, 16, 4, 128, 32000, 2048


def params(key):
    import jax
    import jax.numpy as jnp

    shapes = {"embed": (V, D), "unembed": (D, V), "wq": (L, D, N * DH), "wk": (L, D, K * DH),
              "wv": (L, D, K * DH), "wo": (L, N * DH, D), "w_gate": (L, D, F), "w_up": (L, D, F),
              "w_down": (L, F, D)}  # fmt: skip
    keys = jax.random.split(key, len(shapes))
    return {
        n: (jax.random.normal(k, s, jnp.bfloat16) * 0.02) for (n, s), k in zip(shapes.items(), keys)
    }


def step(p, cache, tok, pos, form: str):
    import jax
    import jax.numpy as jnp
    from jax import lax

    b = tok.shape[0]
    h = p["embed"][tok]  # [B, D]
    heads_major = form != "repeat" and form != "grouped"
    visible = jnp.arange(S) <= pos
    if form in SPLIT:  # a tuple of L (keys, values), each its own donated array
        caches = list(cache)
        for i in range(L):
            h, caches[i] = _split_layer(p, i, h, caches[i], pos, visible, form)
        return h @ p["unembed"], tuple(caches)
    if form == "layers":  # a tuple of L caches [2, B, K, S, Dh]
        caches = list(cache)
        for i in range(L):
            h, caches[i] = _layer(p, i, h, caches[i], pos, visible)
        return h @ p["unembed"], tuple(caches)
    if form == "unrolled":  # one cache, each layer's slice at a static index
        for i in range(L):
            h, layer_cache = _layer(p, i, h, cache[i], pos, visible)
            cache = cache.at[i].set(layer_cache)
        return h @ p["unembed"], cache

    def layer(i, carry):
        h, cache = carry
        w = {n: p[n][i] for n in ("wq", "wk", "wv", "wo", "w_gate", "w_up", "w_down")}
        q = (h @ w["wq"]).reshape(b, K, N // K, DH)
        k = (h @ w["wk"]).reshape(b, K, DH)
        v = (h @ w["wv"]).reshape(b, K, DH)
        new = jnp.stack([k, v])  # [2, B, K, Dh]
        if heads_major:
            cache = lax.dynamic_update_slice(cache, new[None, :, :, :, None], (i, 0, 0, 0, pos, 0))
            kv = cache[i]  # [2, B, K, S, Dh]
            scores = jnp.einsum("bkgd,bksd->bkgs", q, kv[0])
        else:
            cache = lax.dynamic_update_slice(cache, new[None, :, :, None], (i, 0, 0, pos, 0, 0))
            kv = cache[i]  # [2, B, S, K, Dh]
            if form == "repeat":
                keys = jnp.repeat(kv[0], N // K, axis=2)  # [B, S, N, Dh]
                scores = jnp.einsum("bnd,bsnd->bns", q.reshape(b, N, DH), keys)
                scores = scores.reshape(b, K, N // K, S)
            else:
                scores = jnp.einsum("bkgd,bskd->bkgs", q, kv[0])
        scores = jnp.where(visible, scores / jnp.sqrt(DH).astype(scores.dtype), -jnp.inf)
        probs = jax.nn.softmax(scores.astype(jnp.float32), axis=-1).astype(q.dtype)
        if heads_major:
            o = jnp.einsum("bkgs,bksd->bkgd", probs, kv[1])
        elif form == "repeat":
            values = jnp.repeat(kv[1], N // K, axis=2)
            o = jnp.einsum("bns,bsnd->bnd", probs.reshape(b, N, S), values)
        else:
            o = jnp.einsum("bkgs,bskd->bkgd", probs, kv[1])
        h = h + o.reshape(b, N * DH) @ w["wo"]
        h = h + (jax.nn.silu(h @ w["w_gate"]) * (h @ w["w_up"])) @ w["w_down"]
        return h, cache

    h, cache = lax.fori_loop(0, L, layer, (h, cache))
    return h @ p["unembed"], cache


SPLIT = ("kv-layers", "kt-layers", "paged")
"""Forms whose cache is one (keys, values) pair of arrays a layer:

- ``kv-layers``: keys and values ``[B, K, S, Dh]`` each;
- ``kt-layers``: keys ``[B, K, Dh, S]`` (each head's keys transposed, so the scores'
  contraction runs over the second-to-last dimension, as the MXU takes a matrix), values
  ``[B, K, S, Dh]``;
- ``paged``: keys and values ``[K, B·S/P, P, Dh]`` in pages of P = 128 tokens, sequence b
  holding pages b·S/P …, attended by JAX's own Pallas kernel for TPU decode
  (``jax.experimental.pallas.ops.tpu.paged_attention``), which reads each page from HBM
  once for the N/K query heads that share it; a sequence's 16 pages are one block of
  its grid (8 pages a block measured 4-10 % slower at B = 8 to 64)."""
PAGE = 128


def split_cache(canonical, form: str):
    """A heads-major cache ``[L, 2, B, K, S, Dh]`` in ``form``'s layout."""
    out = []
    for i in range(canonical.shape[0]):
        k, v = canonical[i, 0], canonical[i, 1]  # [B, K, S, Dh]
        if form == "kt-layers":
            k = k.swapaxes(-1, -2)
        elif form == "paged":
            b = k.shape[0]
            k, v = (x.swapaxes(0, 1).reshape(K, b * S // PAGE, PAGE, DH) for x in (k, v))
        out.append((k, v))
    return tuple(out)


def _split_layer(p, i, h, cache, pos, visible, form):
    import jax
    import jax.numpy as jnp
    from jax import lax

    b = h.shape[0]
    w = {n: p[n][i] for n in ("wq", "wk", "wv", "wo", "w_gate", "w_up", "w_down")}
    q = (h @ w["wq"]).reshape(b, K, N // K, DH)
    k = (h @ w["wk"]).reshape(b, K, DH)
    v = (h @ w["wv"]).reshape(b, K, DH)
    keys, values = cache
    if form == "paged":
        from jax.experimental.pallas.ops.tpu.paged_attention import paged_attention

        pages = jnp.arange(b, dtype=jnp.int32) * (S // PAGE) + pos // PAGE
        keys = keys.at[:, pages, pos % PAGE].set(k.swapaxes(0, 1))
        values = values.at[:, pages, pos % PAGE].set(v.swapaxes(0, 1))
        table = jnp.arange(b * S // PAGE, dtype=jnp.int32).reshape(b, S // PAGE)
        lengths = jnp.full((b,), pos + 1, jnp.int32)
        scaled = (q / jnp.sqrt(DH).astype(q.dtype)).reshape(b, N, DH)
        o = paged_attention(scaled, keys, values, lengths, table, pages_per_compute_block=S // PAGE)
    else:
        values = lax.dynamic_update_slice(values, v[:, :, None], (0, 0, pos, 0))
        if form == "kt-layers":
            keys = lax.dynamic_update_slice(keys, k[:, :, :, None], (0, 0, 0, pos))
            scores = jnp.einsum("bkgd,bkds->bkgs", q, keys)
        else:
            keys = lax.dynamic_update_slice(keys, k[:, :, None], (0, 0, pos, 0))
            scores = jnp.einsum("bkgd,bksd->bkgs", q, keys)
        scores = jnp.where(visible, scores / jnp.sqrt(DH).astype(q.dtype), -jnp.inf)
        probs = jax.nn.softmax(scores.astype(jnp.float32), axis=-1).astype(q.dtype)
        o = jnp.einsum("bkgs,bksd->bkgd", probs, values)
    h = h + o.reshape(b, N * DH) @ w["wo"]
    h = h + (jax.nn.silu(h @ w["w_gate"]) * (h @ w["w_up"])) @ w["w_down"]
    return h, (keys, values)


def check(p, batch: int, pos: int, forms: list[str]) -> list[dict]:
    """Each form's logits and next-step logits from one random cache (in its own layout)
    against ``heads-major``'s: the same step, so they agree to bf16's rounding."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    canonical = jax.random.normal(jax.random.key(1), (L, 2, batch, K, S, DH), jnp.bfloat16)
    tok = jnp.arange(batch, dtype=jnp.int32) * 7 + 3

    def two_steps(form):
        cache = split_cache(canonical, form) if form in SPLIT else canonical
        if form in ("repeat", "grouped"):
            cache = canonical.swapaxes(3, 4)  # [L, 2, B, S, K, Dh]
        elif form == "layers":
            cache = tuple(canonical[i] for i in range(L))
        run = jax.jit(partial(step, form=form))
        first, cache = run(p, cache, tok, jnp.int32(pos))
        second, _ = run(p, cache, tok + 1, jnp.int32(pos + 1))
        return np.asarray(first, np.float32), np.asarray(second, np.float32)

    want = two_steps("heads-major")
    rows = []
    for form in forms:
        got = two_steps(form)
        err = max(float(np.abs(g - w).max() / np.abs(w).max()) for g, w in zip(got, want))
        rows.append({"form": form, "batch": batch, "pos": pos, "max_rel_err": err})
        print(f"check {form:12s} B={batch} pos={pos}: logits of two steps vs heads-major, "
              f"max |diff| / max |logit| = {err:.2e}", flush=True)  # fmt: skip
    return rows


def _layer(p, i, h, cache, pos, visible):
    """One layer on its own cache ``[2, B, K, S, Dh]`` (heads-major), grouped queries."""
    import jax
    import jax.numpy as jnp
    from jax import lax

    b = h.shape[0]
    w = {n: p[n][i] for n in ("wq", "wk", "wv", "wo", "w_gate", "w_up", "w_down")}
    q = (h @ w["wq"]).reshape(b, K, N // K, DH)
    k = (h @ w["wk"]).reshape(b, K, DH)
    v = (h @ w["wv"]).reshape(b, K, DH)
    cache = lax.dynamic_update_slice(cache, jnp.stack([k, v])[:, :, :, None], (0, 0, 0, pos, 0))
    scores = jnp.einsum("bkgd,bksd->bkgs", q, cache[0]) / jnp.sqrt(DH).astype(q.dtype)
    scores = jnp.where(visible, scores, -jnp.inf)
    probs = jax.nn.softmax(scores.astype(jnp.float32), axis=-1).astype(q.dtype)
    o = jnp.einsum("bkgs,bksd->bkgd", probs, cache[1])
    h = h + o.reshape(b, N * DH) @ w["wo"]
    h = h + (jax.nn.silu(h @ w["w_gate"]) * (h @ w["w_up"])) @ w["w_down"]
    return h, cache


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--json", default="")
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--batches", default="1,8,32,64,128")
    parser.add_argument("--forms", default="repeat,grouped,heads-major,unrolled,layers,"
                        "kv-layers,kt-layers,paged")  # fmt: skip
    parser.add_argument(
        "--check", default="", help="forms whose logits to hold against heads-major's first"
    )
    parser.add_argument(
        "--hlo", default="", help="a folder for each program's optimised HLO at B = 64"
    )
    args = parser.parse_args()
    import jax
    import jax.numpy as jnp

    if jax.devices()[0].platform == "cpu":
        print("tpu_decode: no accelerator here: nothing to measure")
        return 0
    sys.path.insert(0, ".")
    from grader.lessons.l16_serving.records import Model, Slice
    from solutions.l16_serving import decode_step_time, param_count

    model = Model("llama-0.85b", L, D, F, N, K, DH, V)
    chip = Slice("v5e-1", 1, 1.97e14, 16 * 2**30, 8.2e11)
    print(f"model: {param_count(model) / 1e9:.3f} B parameters; context {S}; bf16")
    p = params(jax.random.key(0))
    rows = []
    if args.check:
        for pos in (1000, S - 2):  # printed, not kept in --json (its rows are timings)
            check(p, 8, pos, args.check.split(","))
    for form in args.forms.split(","):
        run = jax.jit(partial(step, form=form), donate_argnums=1)
        for b in (int(x) for x in args.batches.split(",")):
            shape = (L, 2, b, S, K, DH) if form in ("repeat", "grouped") else (L, 2, b, K, S, DH)
            row = {
                "form": form,
                "batch": b,
                "model_ms": decode_step_time(model, chip, b, S, 2) * 1e3,
            }
            try:
                # a form with one array a layer gets only those (not a whole cache first:
                # at B = 128 two caches are more than the chip's HBM)
                whole = form not in SPLIT and form != "layers"
                cache = jnp.zeros(shape, jnp.bfloat16) if whole else None
                if form == "layers":
                    cache = tuple(jnp.zeros(shape[1:], jnp.bfloat16) for _ in range(L))
                elif form in SPLIT:  # zeros in the form's layout: a whole cache at a time
                    cache = tuple(split_cache(jnp.zeros((1, *shape[1:]), jnp.bfloat16), form)[0]
                                  for _ in range(L))  # fmt: skip
                tok, pos = jnp.zeros((b,), jnp.int32), jnp.int32(S - 1)
                t0 = time.perf_counter()
                compiled = run.lower(p, cache, tok, pos).compile()
                row["compile_s"] = time.perf_counter() - t0
                cost = compiled.cost_analysis()
                cost = cost[0] if isinstance(cost, list) else cost
                row["gb_accessed"] = float(cost.get("bytes accessed", 0)) / 1e9
                row["temp_gb"] = compiled.memory_analysis().temp_size_in_bytes / 1e9
                if args.hlo and b == 64:
                    with open(f"{args.hlo}/{form}.hlo.txt", "w") as f:
                        f.write(compiled.as_text())
                logits, cache = run(p, cache, tok, pos)
                logits.block_until_ready()
                alone, queued = [], []
                for _ in range(5):  # one step waited for, then args.runs queued back to back
                    t = time.perf_counter()
                    logits, cache = run(p, cache, tok, pos)
                    logits.block_until_ready()
                    alone.append(time.perf_counter() - t)
                    t = time.perf_counter()
                    for _ in range(args.runs):
                        logits, cache = run(p, cache, tok, pos)
                    logits.block_until_ready()
                    queued.append((time.perf_counter() - t) / args.runs)
                row["ms_alone"] = statistics.median(alone) * 1e3
                row["ms"] = statistics.median(queued) * 1e3
                del cache, logits
            except Exception as exc:  # out of HBM, say
                row["error"] = str(exc).splitlines()[0][:160]
            rows.append(row)
            if args.json:  # as it goes: a run cut short keeps what it measured
                with open(args.json, "w") as f:
                    json.dump(rows, f, indent=1)
            measured = (
                f"{row['ms']:7.2f} ms ({row['ms'] / row['model_ms']:4.2f}x)"
                if "ms" in row
                else row["error"]
            )
            print(f"{form:12s} B={b:4d}: model {row['model_ms']:6.2f} ms, measured {measured}; "
                  f"XLA reads+writes {row.get('gb_accessed', 0):.2f} GB, temporaries {row.get('temp_gb', 0):.2f} GB")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
