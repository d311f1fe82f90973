"""Realistic wrong implementations for lesson 10 (see tests/mistakes/__init__.py)."""

from __future__ import annotations

from tests.mistakes import Mistake

L10 = "l10_context_parallel"

RING_STEP = "return acc, lax.ppermute(kv, AXIS, _right(n))  # … while it moves on"

FLASH = """
def ring_attention(q, k, v, mesh, causal):
    # flash attention's online softmax (running max m, running sum l, accumulator acc in
    # float32); q scaled in its own dtype, p cast to V's dtype for the p·V product
    def body(q_blk, k_blk, v_blk):
        n, me = lax.axis_size(AXIS), lax.axis_index(AXIS)
        b, h, dh = q_blk.shape
        qs = q_blk * jnp.asarray(dh**-0.5, q_blk.dtype)
        rows = me * b + jnp.arange(b)

        def attend(step, m, l, acc, k_j, v_j):
            sc = jnp.einsum("qhd,khd->hqk", qs, k_j, preferred_element_type=jnp.float32)
            if causal:
                j = (me - step) % n
                sc = jnp.where(rows[:, None] >= (j * b + jnp.arange(b))[None, :], sc, -jnp.inf)
            m_new = jnp.maximum(m, sc.max(-1))
            safe = jnp.where(jnp.isneginf(m_new), 0.0, m_new)
            alpha = jnp.exp(m - safe)
            p = jnp.exp(sc - safe[..., None])
            l = l * alpha + p.sum(-1)
            pv = jnp.einsum("hqk,khd->hqd", p.astype(v_j.dtype), v_j,
                            preferred_element_type=jnp.float32)
            return m_new, l, acc * alpha[..., None] + pv

        def step(i, carry):
            m, l, acc, (k_j, v_j) = carry
            m, l, acc = attend(i, m, l, acc, k_j, v_j)
            return m, l, acc, lax.ppermute((k_j, v_j), AXIS, _right(n))

        m = jnp.full((h, b), -jnp.inf, jnp.float32)
        l = jnp.zeros((h, b), jnp.float32)
        acc = jnp.zeros((h, b, dh), jnp.float32)
        m, l, acc = (lax.pcast(x, AXIS, to="varying") for x in (m, l, acc))
        m, l, acc, (k_j, v_j) = lax.fori_loop(0, n - 1, step, (m, l, acc, (k_blk, v_blk)))
        m, l, acc = attend(n - 1, m, l, acc, k_j, v_j)
        out = acc / jnp.where(l == 0, 1.0, l)[..., None]
        return out.transpose(1, 0, 2).astype(q_blk.dtype)

    return jax.shard_map(body, mesh=mesh, in_specs=(ROWS, ROWS, ROWS), out_specs=ROWS)(q, k, v)
"""
"""A correct external form (flash attention's online softmax): the statistics
in float32, q, K, V and the result in the inputs' dtype (tests/test_l10.py grades it)."""

MISTAKES: list[Mistake] = [
    # ---------------------------------------------------------------- merge_partials
    Mistake(
        id="merge-nan-where-no-key-seen",
        module=L10,
        exercise="merge_partials",
        code="""
def merge_partials(o1, lse1, o2, lse2):
    lse = jnp.logaddexp(lse1, lse2)
    w1 = jnp.exp(lse1 - lse)[..., None]  # −inf − (−inf) where neither saw a key
    w2 = jnp.exp(lse2 - lse)[..., None]
    return w1 * o1 + w2 * o2, lse
""",
        status="failed",
        check="values",
        says=("NaN", "exp(−inf − (−inf))"),
    ),
    Mistake(
        id="merge-exponentials-overflow",
        module=L10,
        exercise="merge_partials",
        code="""
def merge_partials(o1, lse1, o2, lse2):
    e1, e2 = jnp.exp(lse1)[..., None], jnp.exp(lse2)[..., None]
    total = e1 + e2
    o = jnp.where(total > 0, (e1 * o1 + e2 * o2) / jnp.where(total > 0, total, 1.0), 0.0)
    return o, jnp.log(total[..., 0])
""",
        status="failed",
        check="values",
        says=("overflows float32",),
    ),
    Mistake(
        id="merge-adds-the-outputs",
        module=L10,
        exercise="merge_partials",
        code="""
def merge_partials(o1, lse1, o2, lse2):
    return o1 + o2, jnp.logaddexp(lse1, lse2)
""",
        status="failed",
        check="values",
        says=("added the two outputs",),
    ),
    # ---------------------------------------------------------------- ring_attention
    Mistake(
        id="ring-all-gathers-k-and-v",
        module=L10,
        exercise="ring_attention",
        code="""
def ring_attention(q, k, v, mesh, causal):
    def body(q_blk, k_blk, v_blk):
        keys = lax.all_gather(k_blk, AXIS, tiled=True)
        values = lax.all_gather(v_blk, AXIS, tiled=True)
        b = q_blk.shape[0]
        rows = lax.axis_index(AXIS) * b + jnp.arange(b)
        mask = rows[:, None] >= jnp.arange(keys.shape[0])[None, :] if causal else None
        return _block_attention(q_blk, keys, values, mask)[0].astype(q_blk.dtype)

    return jax.shard_map(body, mesh=mesh, in_specs=(ROWS, ROWS, ROWS), out_specs=ROWS)(q, k, v)
""",
        status="failed",
        check="collectives",
        says=("all-gather", "whole K and V"),
    ),
    Mistake(
        id="ring-collects-every-block",
        module=L10,
        exercise="ring_attention",
        code="""
def ring_attention(q, k, v, mesh, causal):
    def body(q_blk, k_blk, v_blk):
        n, me = lax.axis_size(AXIS), lax.axis_index(AXIS)
        b = q_blk.shape[0]
        kv, keys, values = (k_blk, v_blk), [k_blk], [v_blk]
        for _ in range(n - 1):  # N − 1 permutes of one block each, every block kept
            kv = lax.ppermute(kv, AXIS, _right(n))
            keys.append(kv[0])
            values.append(kv[1])
        held = jnp.concatenate([((me - s) % n) * b + jnp.arange(b) for s in range(n)])
        rows = me * b + jnp.arange(b)
        mask = rows[:, None] >= held[None, :] if causal else None
        o, _ = _block_attention(q_blk, jnp.concatenate(keys), jnp.concatenate(values), mask)
        return o.astype(q_blk.dtype)

    return jax.shard_map(body, mesh=mesh, in_specs=(ROWS, ROWS, ROWS), out_specs=ROWS)(q, k, v)
""",
        status="failed",
        check="memory",
        says=("as large as the whole K and V",),
    ),
    Mistake(
        id="ring-softmax-per-block-summed",
        module=L10,
        exercise="ring_attention",
        code="",
        status="failed",
        check="values",
        says=("normalised over its own keys", "merge_partials"),
        patch=(
            (
                "return merge_partials(*acc, *_block_attention(q_blk, *kv, mask))",
                "o_blk, _ = _block_attention(q_blk, *kv, mask)\n"
                "            return acc[0] + o_blk, acc[1]  # each block's softmax, added up",
            ),
        ),
    ),
    Mistake(
        id="ring-causal-mask-by-local-positions",
        module=L10,
        exercise="ring_attention",
        code="",
        status="failed",
        check="values",
        says=("local row numbers", "global positions"),
        patch=(
            (
                "mask = rows[:, None] >= (j * b + jnp.arange(b))[None, :] if causal else None",
                "mask = jnp.arange(b)[:, None] >= jnp.arange(b)[None, :] if causal else None",
            ),
        ),
    ),
    Mistake(
        id="ring-rotates-k-but-not-v",
        module=L10,
        exercise="ring_attention",
        code="",
        status="failed",
        check="values",
        says=("V does not",),
        patch=((RING_STEP, "return acc, (lax.ppermute(kv[0], AXIS, _right(n)), kv[1])"),),
    ),
    Mistake(
        id="ring-n-rotations",
        module=L10,
        exercise="ring_attention",
        code="",
        status="failed",
        check="steps",
        says=("One rotation too many",),
        patch=(
            (
                "acc, kv = lax.fori_loop(0, n - 1, step, (_empty(q_blk), (k_blk, v_blk)))\n"
                "        o, _ = attend(acc, kv, n - 1)  # the last block needs no onward send",
                "(o, _), _ = lax.fori_loop(0, n, step, (_empty(q_blk), (k_blk, v_blk)))",
            ),
        ),
    ),
    Mistake(
        id="ring-turns-the-wrong-way",
        module=L10,
        exercise="ring_attention",
        code="",
        status="failed",
        check="values",
        says=("other way round the ring",),
        patch=(
            (RING_STEP, "return acc, lax.ppermute(kv, AXIS, [(i, (i - 1) % n) for i in range(n)])"),
        ),
    ),
    Mistake(
        id="ring-bfloat16-scores-in-float32",
        module=L10,
        exercise="ring_attention",
        code="",
        status="failed",
        check="values",
        says=("bfloat16", "float32"),
        patch=(
            (
                'jnp.einsum("qhd,khd->hqk", q, k, preferred_element_type=jnp.float32)',
                'jnp.einsum("qhd,khd->hqk", q.astype(jnp.bfloat16), k.astype(jnp.bfloat16), '
                "preferred_element_type=jnp.float32)",
            ),
        ),
    ),
    Mistake(
        id="ring-sends-upcast-blocks",
        module=L10,
        exercise="ring_attention",
        code="",
        status="failed",
        check="bytes",
        says=("upcast",),
        patch=(
            (
                "step, (_empty(q_blk), (k_blk, v_blk)))",
                "step, (_empty(q_blk), (k_blk.astype(jnp.float32), v_blk.astype(jnp.float32))))",
            ),
        ),
    ),
    Mistake(
        id="ring-carry-not-cast-to-varying",
        module=L10,
        exercise="ring_attention",
        code="",
        status="error",
        check=None,
        says=("invariant over 'seq'", "lax.pcast"),
        patch=(
            (
                'return lax.pcast(o, AXIS, to="varying"), lax.pcast(lse, AXIS, to="varying")',
                "return o, lse",
            ),
        ),
    ),
    # ---------------------------------------------------------------- zigzag_ring_attention
    Mistake(
        id="zigzag-masked-plain-ring",
        module=L10,
        exercise="zigzag_ring_attention",
        code="""
def zigzag_ring_attention(q, k, v, mesh):
    def body(q_blk, k_blk, v_blk):
        n, me = lax.axis_size(AXIS), lax.axis_index(AXIS)
        c = q_blk.shape[0] // 2

        def positions(d):
            return jnp.concatenate([d * c + jnp.arange(c), (2 * n - 1 - d) * c + jnp.arange(c)])

        mine = positions(me)

        def step(s, carry):  # the whole block at every step, masked
            acc, kv = carry
            mask = mine[:, None] >= positions((me - s) % n)[None, :]
            acc = merge_partials(*acc, *_block_attention(q_blk, *kv, mask))
            return acc, lax.ppermute(kv, AXIS, _right(n))

        acc, kv = lax.fori_loop(0, n - 1, step, (_empty(q_blk), (k_blk, v_blk)))
        mask = mine[:, None] >= positions((me + 1) % n)[None, :]
        o, _ = merge_partials(*acc, *_block_attention(q_blk, *kv, mask))
        return o.astype(q_blk.dtype)

    return jax.shard_map(body, mesh=mesh, in_specs=(ROWS, ROWS, ROWS), out_specs=ROWS)(q, k, v)
""",
        status="failed",
        check="balance",
        says=("whole", "half a block"),
    ),
    # ---------------------------------------------------------------- issue 18 §4: value failures
    Mistake(
        id="ring-causal-diagonal-strict",
        module=L10,
        exercise="ring_attention",
        status="failed",
        check="values",
        says=("causal mask is strict", "q_pos >= k_pos"),
        patch=(
            (
                "mask = rows[:, None] >= (j * b + jnp.arange(b))[None, :] if causal else None",
                "mask = rows[:, None] > (j * b + jnp.arange(b))[None, :] if causal else None",
            ),
        ),
    ),
    Mistake(
        id="ring-causal-flag-ignored",
        module=L10,
        exercise="ring_attention",
        status="failed",
        check="values",
        says=("causal=False", "whatever the flag says"),
        patch=(
            (
                "mask = rows[:, None] >= (j * b + jnp.arange(b))[None, :] if causal else None",
                "mask = rows[:, None] >= (j * b + jnp.arange(b))[None, :]  # always causal",
            ),
        ),
    ),
    Mistake(
        id="ring-last-block-never-attended",
        module=L10,
        exercise="ring_attention",
        status="failed",
        check="values",
        says=("Only N − 1 = 5 of the N K/V blocks", "attend once more"),
        patch=(
            ("o, _ = attend(acc, kv, n - 1)  # the last block needs no onward send", "o, _ = acc"),
        ),
    ),
    Mistake(
        id="zigzag-condition-reversed",
        module=L10,
        exercise="zigzag_ring_attention",
        status="failed",
        check="values",
        says=("two cases swapped", "for j < i both query chunks"),
        patch=(
            (
                "lax.cond(j < me, earlier, later, acc, kv)",
                "lax.cond(j > me, earlier, later, acc, kv)",
            ),
        ),
    ),
    Mistake(
        id="zigzag-branches-exchanged",
        module=L10,
        exercise="zigzag_ring_attention",
        status="failed",
        check="values",
        says=("two cases swapped", "branches exchanged"),
        patch=(
            (
                "lax.cond(j < me, earlier, later, acc, kv)",
                "lax.cond(j < me, later, earlier, acc, kv)",
            ),
        ),
    ),
    Mistake(
        id="zigzag-causal-diagonal-strict",
        module=L10,
        exercise="zigzag_ring_attention",
        status="failed",
        check="values",
        says=("diagonal block is masked strictly", "pos[:, None] >= pos[None, :]"),
        patch=(("pos[:, None] >= pos[None, :]", "pos[:, None] > pos[None, :]"),),
    ),
    Mistake(
        id="zigzag-last-block-never-attended",
        module=L10,
        exercise="zigzag_ring_attention",
        status="failed",
        check="values",
        says=("never attends to the last block", "all N − 1 of them"),
        patch=(("lax.fori_loop(1, n, step,", "lax.fori_loop(1, n - 1, step,"),),
    ),
    # ---------------------------------------------------------------- issue 18 §6: precision
    Mistake(
        id="ring-bfloat16-scores",
        module=L10,
        exercise="ring_attention",
        status="failed",
        check="precision",
        says=("your scores q·kᵀ are bfloat16", "preferred_element_type=jnp.float32"),
        patch=(
            (
                'jnp.einsum("qhd,khd->hqk", q, k, preferred_element_type=jnp.float32)',
                'jnp.einsum("qhd,khd->hqk", q, k)',
            ),
        ),
    ),
    Mistake(
        id="ring-bfloat16-accumulator",
        module=L10,
        exercise="ring_attention",
        status="failed",
        check="precision",
        says=("your output accumulator is bfloat16", "inside the ring's loop"),
        patch=(("o = jnp.zeros(q.shape, jnp.float32)", "o = jnp.zeros(q.shape, q.dtype)"),),
    ),
    Mistake(
        id="ring-bfloat16-running-sum",
        module=L10,
        exercise="ring_attention",
        status="failed",
        check="precision",
        says=("your running softmax statistics are bfloat16", "running sum of exponentials"),
        code=FLASH.replace(
            "l = jnp.zeros((h, b), jnp.float32)", "l = jnp.zeros((h, b), q_blk.dtype)"
        ).replace("l = l * alpha + p.sum(-1)", "l = (l * alpha + p.sum(-1)).astype(k_j.dtype)"),
    ),
    Mistake(
        id="ring-bfloat16-exponentials",
        module=L10,
        exercise="ring_attention",
        status="failed",
        check="precision",
        says=("your exponentials e^(s − max) are bfloat16",),
        code=FLASH.replace(
            "p = jnp.exp(sc - safe[..., None])",
            "p = jnp.exp((sc - safe[..., None]).astype(q_blk.dtype))",
        ),
    ),
]

FLASH_FOR_TESTS = FLASH

# ---------------------------------------------------------------- issue 37: the loop unrolled
MISTAKES += [
    Mistake(
        id="ring-attention-python-loop-keeps-every-block",
        module=L10,
        exercise="ring_attention",
        patch=(
            (
                "        acc, kv = lax.fori_loop(0, n - 1, step, (_empty(q_blk), (k_blk, v_blk)))",
                "        carry = (_empty(q_blk), (k_blk, v_blk))\n"
                "        for s in range(n - 1):\n"
                "            carry = step(s, carry)  # a plain loop: n is a Python int here\n"
                "        acc, kv = carry",
            ),
        ),
        status="failed",
        check="memory",
        says=("unrolled", "lax.fori_loop"),
    ),
    Mistake(  # held back in drafts/heldback until its hint was made right (issue 45)
        id="l10-ring-nan-on-fully-masked-blocks",
        module="l10_context_parallel",
        exercise="ring_attention",
        status="failed",
        check="values",
        says=("inf − inf",),
        patch=(
            (
                "    m = jnp.where(jnp.isneginf(m), 0.0, m)  # a fully masked row: exp(−inf − 0) = 0\n",
                "",
            ),
        ),
    ),
    Mistake(  # issue 45: only the devices that merge are wrong, and what only they do
        id="l10-ring-block-scale-inside-the-exp-only",
        module="l10_context_parallel",
        exercise="ring_attention",
        status="failed",
        check="values",
        says=("Only device 0's rows are right", "the lse each block returns (lse = m + log"),
        never=("Only device(s)",),
        patch=(
            (  # the scale moved into the exp; the lse's max is left unscaled
                'jnp.einsum("qhd,khd->hqk", q, k, preferred_element_type=jnp.float32) * scale',
                'jnp.einsum("qhd,khd->hqk", q, k, preferred_element_type=jnp.float32)',
            ),
            ("p = jnp.exp(s - m)", "p = jnp.exp((s - m) * scale)"),
        ),
    ),
    Mistake(  # issue 45 audit: global positions, but one block index for both sides
        id="l10-ring-mask-block-index-never-advanced",
        module="l10_context_parallel",
        exercise="ring_attention",
        status="failed",
        check="values",
        says=("global positions with one block index for both sides",),
        patch=(
            (
                "            j = (me - s) % n  # sending to i + 1: after s steps we hold block i − s\n",
                "            j = me  # the block's index\n",
            ),
        ),
    ),
    Mistake(  # issue 45 audit: V rotates with K, but the device's own V is attended with
        id="l10-ring-attends-with-its-own-v",
        module="l10_context_parallel",
        exercise="ring_attention",
        status="failed",
        check="values",
        says=("your own V block", "the V that arrived is never read"),
        patch=(
            (
                "            return merge_partials(*acc, *_block_attention(q_blk, *kv, mask))",
                "            k_cur, _ = kv\n"
                "            return merge_partials(*acc, *_block_attention(q_blk, k_cur, v_blk, mask))",
            ),
        ),
    ),
    Mistake(  # drafts/heldback6: lesson 2's owner (i − s − 1) for the block held (i − s)
        id="l10-ring-mask-of-the-block-received",
        module="l10_context_parallel",
        exercise="ring_attention",
        status="failed",
        check="values",
        says=(
            "K/V block 1 with the causal mask of the diagonal",
            "mask chosen by another one's index",
        ),
        patch=(
            (
                "j = (me - s) % n  # sending to i + 1: after s steps we hold block i − s",
                "j = (me - s - 1) % n  # the block received at step s started on i − s − 1",
            ),
        ),
    ),
    Mistake(  # drafts/heldback5: the last block's mask as step n's (its own diagonal's)
        id="l10-ring-last-block-masked-as-step-n",
        module="l10_context_parallel",
        exercise="ring_attention",
        status="failed",
        check="values",
        says=("K/V block 1 with the causal mask of the diagonal", "which is in these rows' future"),
        patch=(
            (
                "o, _ = attend(acc, kv, n - 1)  # the last block needs no onward send",
                "o, _ = attend(acc, kv, n)  # the last block needs no onward send",
            ),
        ),
    ),
    Mistake(  # drafts/heldback7: the reference point zeroed where either lse is −inf
        id="l10-merge-reference-zeroed-where-either-is-empty",
        module="l10_context_parallel",
        exercise="merge_partials",
        status="failed",
        check="values",
        says=("Wrong only in rows where exactly one partial is empty",),
        never=("Never form e^lse1",),
        patch=(
            (
                "    ref = jnp.where(jnp.isneginf(lse), 0.0, lse)  # both −inf: weights e^−inf = 0, not NaN\n",
                "    ref = jnp.where(jnp.isneginf(lse1) | jnp.isneginf(lse2), 0.0, lse)  # no NaN\n",
            ),
        ),
    ),
]
