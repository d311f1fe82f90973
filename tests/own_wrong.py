"""Wrong programs of issue 45's helper (not in tests/mistakes): kinds nobody catalogued,
each a one-line edit of the solution, for tests/test_relate.py (the feedback they get)."""

from __future__ import annotations

from tests.mistakes import Mistake

ADAM_NEW = 'new = {"master": master, "m": m, "v": v, "step": state["step"] + 1}'

OWN = [
    Mistake(  # stop 64: a ratio half the formula's was told "the gradient is bf16" alone
        id="own-l03-dp-compute-of-one-matrix", module="l03_cost_model",
        exercise="dp_is_compute_bound", status="failed", check="values",
        says=("ratio half the formula's", "the gradient is bf16", "both matrices"),
        patch=(("compute = 6 * batch_per_device * params / chip.peak_flops",
                "compute = 6 * batch_per_device * d_model * d_ff / chip.peak_flops"),),
    ),
    Mistake(  # stop 64: lr·g N times was told the gradient was summed twice, alone
        id="own-l06-step-lr-scaled-by-n", module="l06_data_parallel",
        exercise="dp_train_step", status="failed", check="values",
        says=("moved w_in N = 4 times as far", "either your learning rate is N times"),
        patch=(("new = jax.tree.map(lambda w, g: w - lr * (g / n), p, summed)",
                "new = jax.tree.map(lambda w, g: w - (lr * n) * (g / n), p, summed)"),),
    ),
    Mistake(  # stop 64: a global batch read from the width (B/D = 1/N here) was told "a mean
        # where a sum belongs" alone; the change of the reference now goes first
        id="own-l07-grads-batch-from-the-width", module="l07_fsdp",
        exercise="fsdp_grads", status="failed", check="values",
        says=("`1` in place of `0`", "`b = err.shape[0]`", "a mean (pmean) where a sum belongs gives"),
        patch=(("    batch = x.shape[0]\n\n    def body(p, xb, yb):\n        return jax.grad",
                "    batch = x.shape[1]\n\n    def body(p, xb, yb):\n        return jax.grad"),),
    ),
    Mistake(  # stop 64: told "weights move" for a transfer no whole number of weights
        id="own-l09-forward-gathers-every-stage-output", module="l09_pipeline",
        exercise="pipeline_forward", status="failed", check="weights",
        says=("4 whole batches of activations", "yours moves 4"), never=("weights move",),
        patch=(("return lax.psum(out, AXIS).reshape(b, d)",
                'return lax.all_gather(out, AXIS, to="invarying")[-1].reshape(b, d)'),),
    ),
    Mistake(
        id="own-adam-m-not-stored", module="l15_optimizer", exercise="adamw_step",
        status="failed", check="values",
        says=("your [1]['m'] equals the input argument",),
        patch=((ADAM_NEW, ADAM_NEW.replace('"m": m', '"m": state["m"]')),),
    ),
    Mistake(
        id="own-adam-m-v-swapped", module="l15_optimizer", exercise="adamw_step",
        status="failed", check="values",
        says=("your [1]['m'] equals the expected leaf [1]['v']", "leaves wrong: [1]['m'], [1]['v']"),
        patch=((ADAM_NEW, ADAM_NEW.replace('"m": m, "v": v', '"m": v, "v": m')),),
    ),
    Mistake(
        id="own-zero1-mean-over-micro-only", module="l15_optimizer", exercise="zero1_step",
        status="failed", check="values",
        says=("leaves wrong: [0], [1]['m'], [1]['master'], [1]['v']; right: [1]['step']",),
        patch=(("n_terms = lax.axis_size(AXIS) * g.shape[1]", "n_terms = g.shape[1]"),),
    ),
    Mistake(
        id="own-adam-keeps-bias-corrected-moments", module="l15_optimizer",
        exercise="adamw_step", status="failed", check="values",
        says=("the factor is 1/(1 − b1ᵗ)", "the bias correction of m at t = "),
        patch=(("    return master, m, v\n", "    return master, m_hat, v_hat\n"),),
    ),
    Mistake(
        id="own-dp-step-ascends", module="l06_data_parallel", exercise="dp_train_step",
        status="failed", check="values",
        says=("(your update) is exactly -1× the expected update", "sign flipped"),
        patch=(("w - lr * (g / n)", "w + lr * (g / n)"),),
    ),
    Mistake(
        id="own-fsdp-step-divides-by-n-again", module="l07_fsdp", exercise="fsdp_train_step",
        status="failed", check="values",
        says=("(your update) is exactly", "× the expected update", "the factor is 1/(N, the size of mesh axis 'data'"),
        patch=(("w - lr * gw", "w - lr * gw / lax.axis_size('data')"),),
    ),
    Mistake(
        id="own-clip-pmean-of-squares", module="l15_optimizer", exercise="clip_by_global_norm",
        status="failed", check="values",
        says=("Your program all-reduces", "‖g‖/√N"),
        patch=(("lax.psum(jnp.sum(g * g), AXIS)", "lax.pmean(jnp.sum(g * g), AXIS)"),),
    ),
    Mistake(
        id="own-l04-scatter-out-specs-rows", module="l04_sharded_matmul",
        exercise="matmul_reducescatter", status="failed", check="values",
        says=("has its blocks along the wrong dimension", "put together along dimension 1 (columns) instead, are the expected value exactly",
              "your output's sharding P('x', None) splits dimension 0 (rows)"),
        patch=(('in_specs=(P(None, "x"), P("x", None)), out_specs=P(None, "x")',
                'in_specs=(P(None, "x"), P("x", None)), out_specs=P("x", None)'),),
    ),
    Mistake(
        id="own-l05-last-block-own-columns", module="l05_collective_matmul",
        exercise="allgather_matmul", status="failed", check="values",
        says=("is exactly a sum of block products, but not the right one", "no term takes X's column block"),
        patch=(("return (y + partial(w_last, n - 1)).astype", "return (y + partial(w_last, 0)).astype"),),
    ),
    Mistake(
        id="own-l05-scatter-blocks-counted-the-other-way", module="l05_collective_matmul",
        exercise="matmul_reducescatter", status="failed", check="values",
        says=("is exactly a sum of block products, but not the right one", "F block"),
        patch=(("return acc + product((me - s - 2) % n)", "return acc + product((me + s + 2) % n)"),),
    ),
    Mistake(
        id="own-fsdp-loss-not-divided-by-the-batch", module="l07_fsdp",
        exercise="fsdp_train_step", status="failed", check="values",
        says=("(your update) is exactly 8× the expected update", "the factor is B = 8, the global batch"),
        patch=(("0.5 * jnp.sum(err * err) / batch", "0.5 * jnp.sum(err * err)"),),
    ),
    Mistake(
        id="own-l10-ring-mask-on-the-diagonal-only", module="l10_context_parallel",
        exercise="ring_attention", status="failed", check="values",
        # the learner masks the block it started with, taking every other block for the past
        says=("is exactly softmax attention over other K/V blocks than the right ones",
              "once, which is in these rows' future"),
        patch=(("mask = rows[:, None] >= (j * b + jnp.arange(b))[None, :] if causal else None",
                "mask = jnp.where(j == me, rows[:, None] >= (j * b + jnp.arange(b))[None, :], "
                "True) if causal else None"),),
    ),
    Mistake(
        id="own-l10-zigzag-later-block-for-both-query-chunks", module="l10_context_parallel",
        exercise="zigzag_ring_attention", status="failed", check="values",
        # a later device's block given to both query chunks, as an earlier one's is
        says=("in its rows of query chunk", "is exactly softmax attention over other key chunks",
              "which is in these rows' future"),
        patch=(("            return acc[0], merge_partials(*acc[1], *_block_attention(q_blk[c:], *kv, None))\n",
                "            o, lse = _block_attention(q_blk, *kv, None)\n"
                "            return merge_partials(*acc[0], o[:c], lse[:c]), merge_partials(*acc[1], o[c:], lse[c:])\n"),),
    ),
    Mistake(
        id="own-l11-second-choice-slots-of-the-first", module="l11_expert_parallel",
        exercise="top2_dispatch", status="failed", check="dispatch",
        # the second one-hot built from `first`, a name one line up
        says=("token(s) sit twice in one expert", "its second choice is its first expert again"),
        patch=(("onehot2, slot2 = _slots(second, n_experts,", "onehot2, slot2 = _slots(first, n_experts,"),),
    ),
    Mistake(
        id="own-l11-expert-before-the-first-all-to-all", module="l11_expert_parallel",
        exercise="moe_layer", status="failed", check="values",
        # the expert applied to the buffer before it is sent: both all-to-alls then move
        # results that were computed on the tokens' own device
        says=("wrong tokens' outputs is exactly its gate times the output of expert",
              "the expert this device holds, not of the expert it was routed to"),
        patch=(("        mine = lax.all_to_all(sent, AXIS, split_axis=0, concat_axis=0, tiled=True)\n"
                "        done = jnp.tanh(mine @ w_in_e[0]) @ w_out_e[0]",
                "        sent = jnp.tanh(sent @ w_in_e[0]) @ w_out_e[0]  # the expert, first\n"
                "        done = lax.all_to_all(sent, AXIS, split_axis=0, concat_axis=0, tiled=True)"),),
    ),
    Mistake(
        id="own-l16-prefill-logits-one-token-early", module="l16_serving",
        exercise="prefill", status="failed", check="values",
        # the token before the last: the logits that predicted the last token, not the next
        says=("Your logits are exactly the reference's for the prompt's token at position",
              "in every row, where those of its last token (position"),
        patch=(('return h[:, -1] @ p["unembed"], cache', 'return h[:, -2] @ p["unembed"], cache'),),
    ),
    Mistake(
        id="own-l06-accumulate-loop-one-short", module="l06_data_parallel",
        exercise="dp_accumulate", status="failed", check="values",
        # the scan over all micro-batches but the last (a range(n_micro - 1) habit)
        says=("is exactly a sum of the micro-batches' gradients (each device's k-th, averaged), "
              "but not the right one: it lacks micro-batch",),
        patch=(("total, _ = lax.scan(step, zeros, (xs, ys))",
                "total, _ = lax.scan(step, zeros, (xs[:-1], ys[:-1]))"),),
    ),
    Mistake(
        id="own-clip-condition-inverted", module="l15_optimizer",
        exercise="clip_by_global_norm", status="failed", check="values",
        # rescales where the norm is below max_norm and leaves a longer gradient as it is;
        # the norm is right (psum): the hint must not tell it to psum
        says=("the gradient came back as it came, though its norm over every device is",
              "or the factor it applied was 1"),
        patch=(("return g * (limit / jnp.maximum(norm, limit))",
                "return jnp.where(norm > limit, g, g * limit / norm)"),),
    ),
    Mistake(
        id="own-l12-mlp-reads-the-first-cast", module="l12_parallel_transformer",
        exercise="train_step", status="failed", check="values",
        # one pcast per block, the MLP reading the pre-attention h: under check_vma the
        # all-reduce missing is the second cast's transpose, not a forward psum
        says=("(4,096 B fewer)", "what is missing is in the backward",
              "one of them reads a value cast elsewhere"),
        never=("psum it over 'model'",),
        patch=(('    hv = lax.pcast(h, "model", to="varying")\n    return h + lax.psum(',
                "    return h + lax.psum("),),
    ),
    Mistake(
        id="own-l02-reduce-scatter-mask-for-mod", module="l02_collectives",
        exercise="ring_reduce_scatter", status="failed", check="values",
        # a bit mask as a fast modulo: right on rings of 1, 2, 4, 8 devices only
        says=("examples before this one passed, all with n a power of two (", "this is the "
              "first with n = 3"),
        patch=(("acc = chunk((me - 1) % n)", "acc = chunk((me - 1) & (n - 1))"),
               ("acc + chunk((me - s - 2) % n)", "acc + chunk((me - s - 2) & (n - 1))")),
    ),
]  # fmt: skip


VARIANTS = [
    Mistake(
        id="own-adamw-weight-decay-never-applied",
        module="l15_optimizer",
        exercise="adamw_step",
        status="failed",
        check="values",
        says=(
            "is exactly what the reference computes with hp['weight_decay'] = 0 in place of 0.1",
        ),
        patch=(
            (
                'master = master - hp["lr"] * (update + hp["weight_decay"] * master)',
                'master = master - hp["lr"] * update',
            ),
        ),
    ),
    Mistake(
        id="own-dp-grads-inputs-and-targets-swapped",
        module="l06_data_parallel",
        exercise="dp_grads",
        status="failed",
        check="values",
        says=("is exactly what the reference computes with x and y swapped",),
        patch=(
            (
                "summed = jax.grad(tinymodels.loss)(p, x_rows, y_rows)",
                "summed = jax.grad(tinymodels.loss)(p, y_rows, x_rows)",
            ),
        ),
    ),
    Mistake(
        id="own-top2-second-choices-never-dispatched",
        module="l11_expert_parallel",
        exercise="top2_dispatch",
        status="failed",
        check="dispatch",
        says=(
            "Your dispatch is exactly what the reference computes with k = 1 in place of 2 (one less)",
        ),
        patch=(
            (
                "dispatch = _dispatch(onehot1, slot1, capacity) | _dispatch(onehot2, slot2, capacity)",
                "dispatch = _dispatch(onehot1, slot1, capacity)",
            ),
        ),
    ),
    Mistake(
        id="own-l16-decode-cache-holds-the-new-token-too",
        module="l16_serving",
        exercise="decode_step_time",
        status="failed",
        check="values",
        says=("is exactly what the formula gives with context = 8193 in place of 8192 (one more)",),
        patch=(
            (
                "caches = batch * kv_cache_bytes(m, context, itemsize) / bandwidth",
                "caches = batch * kv_cache_bytes(m, context + 1, itemsize) / bandwidth",
            ),
        ),
    ),
    Mistake(
        id="own-l10-merge-drops-the-second-output",
        module="l10_context_parallel",
        exercise="merge_partials",
        status="failed",
        check="values",
        says=("Your (o, lse) is exactly what the reference computes with o2 all zeros",),
        patch=(
            (
                "return (w1 * o1 + w2 * o2).astype(o1.dtype), lse",
                "return (w1 * o1).astype(o1.dtype), lse",
            ),
        ),
    ),
    Mistake(
        id="own-l04-allgather-stacked-and-reshaped",
        module="l04_sharded_matmul",
        exercise="matmul_allgather",
        status="failed",
        check="values",
        # an untiled gather of A's column blocks, reshaped to A's shape: the shape fits
        says=(
            "Your value is exactly what the reference computes with a read as its",
            "blocks along axis 1 stacked on a new first axis and reshaped to",
        ),
        patch=(
            (
                'a_full = lax.all_gather(a_blk, "x", axis=1, tiled=True, to="invarying")',
                'a_full = lax.all_gather(a_blk, "x", to="invarying").reshape(a_blk.shape[0], -1)',
            ),
        ),
    ),
    Mistake(
        id="own-zero1-slices-dealt-strided",
        module="l15_optimizer",
        exercise="zero1_step",
        status="failed",
        check="values",
        # the buffer reduce-scattered as the rows of its [N, Ψ/N] transpose: device i gets
        # elements i, i + N, … while its state holds a contiguous slice (zero2's bfloat16
        # reduce-scatters round past the float32 moments' tolerance a change is held to)
        says=(
            "is exactly what the reference computes with g dealt to",
            "devices strided along axis 0 (device i: elements i, i + ",
        ),
        patch=(
            (
                "shard = lax.psum_scatter(acc, AXIS, tiled=True) / n_terms",
                "dealt = acc.reshape(-1, lax.axis_size(AXIS)).T  # [N, Ψ/N]\n"
                "        shard = lax.psum_scatter(dealt, AXIS, tiled=True).reshape(-1) / n_terms",
            ),
        ),
    ),
]
"""Wrong programs whose values are the reference's on changed arguments, for
tests/test_variants.py (:mod:`grader.checks.variants`)."""

FORMULAS = [
    Mistake(
        id="own-fp8-dequantised-times-the-scale",
        module="l15_optimizer",
        exercise="fp8_all_gather",
        status="failed",
        check="values",
        says=(
            "is exactly what the reference computes with a product where the reference divides"
            " — `q.astype(np.float32) * scale` in place of `q.astype(np.float32) / scale`",
            "(in `fp8_round_trip`, which the reference calls)",
        ),
        patch=(
            (
                "return whole.astype(jnp.float32) / scale",
                "return whole.astype(jnp.float32) * scale",
            ),
        ),
    ),
    Mistake(
        id="own-adamw-v-from-g-not-squared",
        module="l15_optimizer",
        exercise="adamw_step",
        status="failed",
        check="values",
        says=("with a factor left out — `(1 - b2) * g` in place of `(1 - b2) * g * g`",),
        # its NaNs (√ of negatives) are not a bias correction's 1 − β⁰ = 0: never said so
        never=("1 − β^t is 0", "NaN or Inf in the output"),
        patch=(
            (
                'v = hp["b2"] * v + (1 - hp["b2"]) * g * g',
                'v = hp["b2"] * v + (1 - hp["b2"]) * g',
            ),
        ),
    ),
    Mistake(
        id="own-tp-mlp-without-its-nonlinearity",
        module="l08_tensor_parallel",
        exercise="tp_mlp",
        status="failed",
        check="values",
        says=("with `np.tanh` left out — `x @ w_in` in place of `np.tanh(x @ w_in)`",),
        patch=(("    return jnp.tanh(x @ w_in) @ w_out\n", "    return x @ w_in @ w_out\n"),),
    ),
    Mistake(
        id="own-decode-position-one-on",
        module="l16_serving",
        exercise="decode_step",
        status="failed",
        check="values",
        says=(
            "Your logits of every decode step so far are exactly what the reference's cached "
            "decoding computes with an index one on — `where + 1` in place of `where`",
        ),
        patch=(
            (
                'h = (p["embed"][tok] + p["pos"][pos])[:, None]  # [b, 1, D]: this token',
                'h = (p["embed"][tok] + p["pos"][pos + 1])[:, None]  # [b, 1, D]: this token',
            ),
        ),
    ),
    Mistake(
        id="own-top2-gates-exponentiated-not-normalised",
        module="l11_expert_parallel",
        exercise="top2_dispatch",
        status="failed",
        check="combine",
        # top-1 gives 1 at every dispatched place: the catalogued "combine is 1" says it;
        # a second choice's gate exp(l₂ − l₁) is not 1
        says=(
            "Your combine is exactly what the reference computes with a factor left out — `z` "
            "in place of `z / z.sum(axis=-1, keepdims=True)`",
            "(in `softmax`, which the reference calls)",
        ),
        patch=(
            (
                "_dispatch(onehot2, slot2, capacity)\n    gates = jax.nn.softmax(logits, axis=-1)",
                "_dispatch(onehot2, slot2, capacity)\n"
                "    gates = jnp.exp(logits - logits.max(axis=-1, keepdims=True))  # not / its sum",
            ),
        ),
    ),
    Mistake(
        id="own-l16-prefill-mask-one-key-ahead",
        module="l16_serving",
        exercise="prefill",
        status="failed",
        check="values",
        says=(
            "Your logits are exactly what the reference computes with one more — `k=1` in "
            "place of `k=0`",
            "(in `_attention`, which the reference calls)",
        ),
        patch=(
            (
                "causal = jnp.tril(jnp.ones((t, t), bool))",
                "causal = jnp.tril(jnp.ones((t, t), bool), k=1)",
            ),
        ),
    ),
    Mistake(
        id="own-l13-flat-ring-factor-of-the-hosts",
        module="l13_multi_host",
        exercise="allreduce_time",
        status="failed",
        check="values",
        # a flat ring across hosts given the hosts' ring factor, not that of all N devices
        # `n = hosts * local` with its factor left out, found first, gives the same value
        # (the other number read in place of `n`, found after it, is said beside it where
        # the search's 0.1 s after the first find reaches it: not on a loaded host)
        says=("with a factor left out — `hosts` in place of `hosts * local`",),
        patch=(
            (
                "return 2 * (n - 1) / n * nbytes / (dcn if hosts > 1 else ici)",
                "return 2 * (hosts - 1) / hosts * nbytes / (dcn if hosts > 1 else ici)",
            ),
        ),
    ),
]
"""Wrong programs whose values a change of the reference's formula gives
(grader/checks/mutants.py), each a kind no catalogued mistake has."""
