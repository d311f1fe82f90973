"""Realistic wrong implementations for lesson 11 (see tests/mistakes/__init__.py)."""

from __future__ import annotations

from tests.mistakes import Mistake

L11 = "l11_expert_parallel"

ARGMAX = "choice = jnp.argmax(logits, axis=-1)  # argmax returns the first maximum: lowest index"
ARGSORT = "choice = jnp.argsort(logits, axis=-1)[:, -1]  # the largest logit"
SECOND_A2A = "back = lax.all_to_all(done, AXIS, split_axis=0, concat_axis=0, tiled=True)"

MISTAKES: list[Mistake] = [
    # ---------------------------------------------------------------- top1_dispatch
    Mistake(
        id="top1-float32-combine-for-bfloat16-logits",
        module=L11,
        exercise="top1_dispatch",
        status="failed",
        check="returns",
        says=("combine of dtype float32 for bfloat16 logits", ".astype(logits.dtype)"),
        code="""
def top1_dispatch(logits, capacity):
    choice = jnp.argmax(logits, axis=-1)
    onehot, slot = _slots(choice, logits.shape[-1])
    dispatch = _dispatch(onehot, slot, capacity)
    gates = jax.nn.softmax(logits.astype(jnp.float32), axis=-1)  # gates in float32 …
    return dispatch, jnp.where(dispatch, gates[:, :, None], 0.0)  # … and returned so
""",
    ),
    Mistake(
        id="moe-ties-to-the-highest-index",
        module=L11,
        exercise="top1_dispatch",
        code="",
        status="failed",
        check="dispatch",
        says=("routed differently", "highest index", "argsort"),
        patch=((ARGMAX, ARGSORT),),
    ),
    Mistake(
        id="moe-slots-start-at-one",
        module=L11,
        exercise="top1_dispatch",
        code="",
        status="failed",
        check="dispatch",
        says=("slots start at 1", "exclusive cumsum"),
        patch=(
            (
                "earlier = jnp.cumsum(onehot, axis=0) - onehot",
                "earlier = jnp.cumsum(onehot, axis=0)",
            ),
        ),
    ),
    Mistake(
        id="moe-overflow-clipped-into-the-last-slot",
        module=L11,
        exercise="top1_dispatch",
        code="""
def top1_dispatch(logits, capacity):
    n_experts = logits.shape[-1]
    onehot, slot = _slots(jnp.argmax(logits, axis=-1), n_experts)
    slot = jnp.minimum(slot, capacity - 1)  # keep the slot in range
    dispatch = _dispatch(onehot, slot, capacity)
    gates = jax.nn.softmax(logits, axis=-1)
    return dispatch, jnp.where(dispatch, gates[:, :, None], 0).astype(logits.dtype)
""",
        status="failed",
        check="dispatch",
        says=("squeezed into the last slot",),
    ),
    Mistake(
        id="moe-combine-is-the-logits",
        module=L11,
        exercise="top1_dispatch",
        code="""
def top1_dispatch(logits, capacity):
    n_experts = logits.shape[-1]
    onehot, slot = _slots(jnp.argmax(logits, axis=-1), n_experts)
    dispatch = _dispatch(onehot, slot, capacity)
    return dispatch, jnp.where(dispatch, logits[:, :, None], 0)  # the router's scores
""",
        status="failed",
        check="combine",
        says=("raw logits", "softmax"),
    ),
    # ---------------------------------------------------------------- moe_layer
    Mistake(
        id="moe-slots-counted-over-all-devices",
        module=L11,
        exercise="moe_layer",
        code="""
def moe_layer(x, router_w, w_in, w_out, mesh, capacity):
    def body(x_rows, router, w_in_e, w_out_e):
        rows = x_rows.shape[0]
        logits = lax.all_gather(x_rows @ router, AXIS, tiled=True)  # one router, every token
        dispatch, combine = top1_dispatch(logits, capacity)
        start = lax.axis_index(AXIS) * rows
        dispatch = lax.dynamic_slice_in_dim(dispatch, start, rows)  # my tokens' rows
        combine = lax.dynamic_slice_in_dim(combine, start, rows)
        sent = jnp.einsum("tec,td->ecd", dispatch.astype(x_rows.dtype), x_rows)
        mine = lax.all_to_all(sent, AXIS, split_axis=0, concat_axis=0, tiled=True)
        done = jnp.tanh(mine @ w_in_e[0]) @ w_out_e[0]
        back = lax.all_to_all(done, AXIS, split_axis=0, concat_axis=0, tiled=True)
        return jnp.einsum("tec,ecd->td", combine, back)

    return jax.shard_map(
        body, mesh=mesh, in_specs=(TOKENS, P(), EXPERTS, EXPERTS), out_specs=TOKENS
    )(x, router_w, w_in, w_out)
""",
        status="failed",
        check="values",
        says=("counted across all devices' tokens", "T/N = 6 tokens"),
    ),
    Mistake(
        id="moe-dropped-tokens-passed-through",
        module=L11,
        exercise="moe_layer",
        code="",
        status="failed",
        check="values",
        says=("Dropped tokens came out as their input", "residual"),
        patch=(
            (
                'return jnp.einsum("tec,ecd->td", combine, back)  # gate · expert(x); dropped → 0',
                "kept = jnp.any(dispatch, axis=(1, 2))[:, None]  # dropped tokens skip the expert\n"
                '        return jnp.where(kept, jnp.einsum("tec,ecd->td", combine, back), x_rows)',
            ),
        ),
    ),
    Mistake(
        id="moe-gate-before-the-expert",
        module=L11,
        exercise="moe_layer",
        code="",
        status="failed",
        check="values",
        says=("gate is applied before the expert", "not linear"),
        patch=(
            (
                'sent = jnp.einsum("tec,td->ecd", dispatch.astype(x_rows.dtype), x_rows)',
                'sent = jnp.einsum("tec,td->ecd", combine, x_rows)  # weighted on the way in',
            ),
            (
                'return jnp.einsum("tec,ecd->td", combine, back)',
                'return jnp.einsum("tec,ecd->td", dispatch.astype(back.dtype), back)',
            ),
        ),
    ),
    Mistake(
        id="moe-all-gathers-the-tokens",
        module=L11,
        exercise="moe_layer",
        code="""
def moe_layer(x, router_w, w_in, w_out, mesh, capacity):
    def body(x_rows, router, w_in_e, w_out_e):
        n, rows = lax.axis_size(AXIS), x_rows.shape[0]
        xs = lax.all_gather(x_rows, AXIS, tiled=True)  # every token, on every expert
        logits = (xs @ router).reshape(n, rows, -1)  # each device's tokens routed on their own
        _, combine = jax.vmap(lambda l: top1_dispatch(l, capacity))(logits)
        gate = combine.sum(axis=-1)[:, :, lax.axis_index(AXIS)].reshape(-1, 1)  # 0: not mine
        mine = gate * (jnp.tanh(xs @ w_in_e[0]) @ w_out_e[0])
        return lax.psum_scatter(mine, AXIS, scatter_dimension=0, tiled=True)

    return jax.shard_map(
        body, mesh=mesh, in_specs=(TOKENS, P(), EXPERTS, EXPERTS), out_specs=TOKENS
    )(x, router_w, w_in, w_out)
""",
        status="failed",
        check="collectives",
        says=("all-gather", "all-gathered the tokens to every expert", "[E, C, D]"),
    ),
    Mistake(
        id="moe-results-never-sent-back",
        module=L11,
        exercise="moe_layer",
        code="",
        status="failed",
        check="values",
        says=("never came back", "second all-to-all"),
        patch=((SECOND_A2A, "back = done  # already [E, C, D]"),),
    ),
    Mistake(
        id="moe-bfloat16-expert-inside-float32",
        module=L11,
        exercise="moe_layer",
        code="",
        status="failed",
        check="values",
        says=("bfloat16", "float32"),
        patch=(
            (
                "done = jnp.tanh(mine @ w_in_e[0]) @ w_out_e[0]",
                "half = jnp.bfloat16  # the expert in half precision, 'to save memory'\n"
                "        done = (jnp.tanh(mine.astype(half) @ w_in_e[0].astype(half))"
                " @ w_out_e[0].astype(half)).astype(mine.dtype)",
            ),
        ),
    ),
    Mistake(
        id="moe-bfloat16-buffer-sent-as-float32",
        module=L11,
        exercise="moe_layer",
        code="",
        status="failed",
        check="bytes",
        # every collective counts at the widest item the program sends (jaxpr): float32
        says=("2.00×", "2·(N − 1)/N · |[E, C, D] buffer|"),
        patch=(
            (
                "mine = lax.all_to_all(sent, AXIS, split_axis=0, concat_axis=0, tiled=True)",
                "wide = sent.astype(jnp.float32)  # 'more accurate' in transit\n"
                "        mine = lax.all_to_all(wide, AXIS, split_axis=0, concat_axis=0, tiled=True)"
                ".astype(sent.dtype)",
            ),
        ),
    ),
    Mistake(
        id="moe-layer-ties-to-the-highest-index",
        module=L11,
        exercise="moe_layer",
        code="",
        status="failed",
        check="values",
        says=("highest index", "every third token"),
        patch=((ARGMAX, ARGSORT),),
    ),
    # ---------------------------------------------------------------- top2_dispatch
    Mistake(
        id="moe-top2-gates-renormalised",
        module=L11,
        exercise="top2_dispatch",
        code="""
_correct_top2 = top2_dispatch

def top2_dispatch(logits, capacity):
    dispatch, combine = _correct_top2(logits, capacity)
    total = combine.sum(axis=(1, 2), keepdims=True)  # the two gates add up to 1
    return dispatch, jnp.where(total > 0, combine / jnp.where(total > 0, total, 1), 0)
""",
        status="failed",
        check="combine",
        says=("renormalised",),
    ),
    Mistake(
        id="moe-top2-slots-token-by-token",
        module=L11,
        exercise="top2_dispatch",
        code="""
def top2_dispatch(logits, capacity):
    n_experts = logits.shape[-1]
    first = jnp.argmax(logits, axis=-1)
    second = jnp.argmax(jnp.where(jax.nn.one_hot(first, n_experts) > 0, -jnp.inf, logits), -1)
    both = jnp.stack([first, second], axis=1).reshape(-1)  # t0's two choices, then t1's …
    onehot, slot = _slots(both, n_experts)
    dispatch = _dispatch(onehot, slot, capacity).reshape(logits.shape[0], 2, n_experts, -1)
    dispatch = jnp.any(dispatch, axis=1)
    gates = jax.nn.softmax(logits, axis=-1)
    return dispatch, jnp.where(dispatch, gates[:, :, None], 0).astype(logits.dtype)
""",
        status="failed",
        check="dispatch",
        says=("token by token", "GShard order"),
    ),
    Mistake(
        id="moe-top2-second-choices-count-from-zero",
        module=L11,
        exercise="top2_dispatch",
        code="",
        status="failed",
        check="dispatch",
        says=("count their slots from 0",),
        patch=(
            (
                "_slots(second, n_experts, jnp.sum(onehot1, axis=0, keepdims=True))",
                "_slots(second, n_experts)",
            ),
        ),
    ),
    # ---------------------------------------------------------------- sharding type errors
    Mistake(
        id="moe-top1-dispatch-on-the-global-array",
        module=L11,
        exercise="moe_layer",
        code="""
def moe_layer(x, router_w, w_in, w_out, mesh, capacity):
    dispatch, combine = top1_dispatch(x @ router_w, capacity)  # routed once, globally

    def body(x_rows, d, c, w_in_e, w_out_e):
        sent = jnp.einsum("tec,td->ecd", d.astype(x_rows.dtype), x_rows)
        mine = lax.all_to_all(sent, AXIS, split_axis=0, concat_axis=0, tiled=True)
        done = jnp.tanh(mine @ w_in_e[0]) @ w_out_e[0]
        back = lax.all_to_all(done, AXIS, split_axis=0, concat_axis=0, tiled=True)
        return jnp.einsum("tec,ecd->td", c, back)

    spec = P(AXIS, None, None)
    return jax.shard_map(
        body, mesh=mesh, in_specs=(TOKENS, spec, spec, EXPERTS, EXPERTS), out_specs=TOKENS
    )(x, dispatch, combine, w_in, w_out)
""",
        status="error",
        check=None,
        says=("top1_dispatch on the global array outside shard_map", "each device on its own"),
    ),
    # ---------------------------------------------------------------- issue 18 §4: value failures
    Mistake(
        id="moe-keeps-the-last-tokens",
        module=L11,
        exercise="top1_dispatch",
        status="failed",
        check="dispatch",
        says=("routed differently", "keeps its last C tokens", "number of tokens before it"),
        patch=(
            (
                "earlier = jnp.cumsum(onehot, axis=0) - onehot  # exclusive: tokens before this one",
                "earlier = jnp.cumsum(onehot[::-1], axis=0)[::-1] - onehot  # tokens after this one",
            ),
        ),
    ),
    Mistake(
        id="moe-gate-applied-twice",
        module=L11,
        exercise="moe_layer",
        status="failed",
        check="values",
        says=("gate is applied twice", "gate·expert(gate·x)"),
        patch=(
            (
                'sent = jnp.einsum("tec,td->ecd", dispatch.astype(x_rows.dtype), x_rows)',
                'sent = jnp.einsum("tec,td->ecd", combine, x_rows)',
            ),
        ),
    ),
    Mistake(
        id="moe-capacity-divided-by-n",
        module=L11,
        exercise="moe_layer",
        status="failed",
        check="values",
        says=("C // N", "do not divide it by N"),
        patch=(
            (
                "dispatch, combine = top1_dispatch(x_rows @ router, capacity)",
                "per_device = max(1, capacity // mesh.shape[AXIS])  # C shared by the N devices\n"
                "        dispatch, combine = top1_dispatch(x_rows @ router, per_device)",
            ),
        ),
    ),
    Mistake(  # found by the wrong-cause audit of stop 64: told "combine with the combine
        # tensor, not with dispatch", which this layer does — its router's combine holds 1
        id="moe-router-combine-holds-one",
        module=L11,
        exercise="moe_layer",
        status="failed",
        check="values",
        says=("not weighted by its gate", "the combine your router returned holds 1"),
        never=("not with dispatch.",),
        patch=(
            (
                "    return dispatch, jnp.where(dispatch, gates[:, :, None], 0).astype(logits.dtype)"
                "\n\n\ndef moe_layer(",
                "    return dispatch, dispatch.astype(logits.dtype)  # the expert's output, whole"
                "\n\n\ndef moe_layer(",
            ),
        ),
    ),
    Mistake(  # the layer's own slip that gives the same output: both readings are said
        id="moe-combined-with-dispatch",
        module=L11,
        exercise="moe_layer",
        status="failed",
        check="values",
        says=("not weighted by its gate", "your layer combined with dispatch"),
        patch=(
            (
                'return jnp.einsum("tec,ecd->td", combine, back)',
                'return jnp.einsum("tec,ecd->td", dispatch.astype(back.dtype), back)',
            ),
        ),
    ),
    Mistake(  # drafts/heldback4: σ(logit) gates, some recent routers'; no hint before
        id="l11-top1-sigmoid-gates",
        module="l11_expert_parallel",
        exercise="top1_dispatch",
        status="failed",
        check="combine",
        says=("a sigmoid of each entry where the reference takes a softmax",),
        patch=(
            (
                "gates = jax.nn.softmax(logits, axis=-1)\n"
                "    return dispatch, jnp.where(dispatch, gates[:, :, None], 0).astype(logits.dtype)\n"
                "\n\ndef moe_layer",
                "gates = jax.nn.sigmoid(logits)\n"
                "    return dispatch, jnp.where(dispatch, gates[:, :, None], 0).astype(logits.dtype)\n"
                "\n\ndef moe_layer",
            ),
        ),
    ),
    Mistake(  # drafts/heldback7: a top-1 token in every slot was told of a "second choice"
        id="l11-top1-kept-mask-broadcast-over-the-slots",
        module="l11_expert_parallel",
        exercise="top1_dispatch",
        status="failed",
        check="dispatch",
        says=("sit in several slots of one expert", "broadcast over the C slots"),
        never=("second choice",),
        patch=(
            (
                "    return (onehot[:, :, None] * jax.nn.one_hot(slot, capacity, dtype=jnp.int32)[:, None, :]) > 0\n",
                "    kept = (onehot * (slot < capacity)[:, None]) > 0  # [T, E]: routed there, not dropped\n"
                "    return jnp.broadcast_to(kept[:, :, None], (*kept.shape, capacity))\n",
            ),
        ),
    ),
    Mistake(  # drafts/heldback7: logits cast to float32 for the router leak into y
        id="l11-moe-router-in-float32-leaks-into-y",
        module="l11_expert_parallel",
        exercise="moe_layer",
        status="failed",
        check="values",
        says=("converts a bfloat16 value to float32, and a matrix product returns float32",),
        patch=(
            (
                "        dispatch, combine = top1_dispatch(x_rows @ router, capacity)  # [T/N, E, C]\n",
                "        logits = (x_rows @ router).astype(jnp.float32)  # route in float32\n"
                "        dispatch, combine = top1_dispatch(logits, capacity)  # [T/N, E, C]\n",
            ),
        ),
    ),
    Mistake(  # drafts/heldback8: gates from log_softmax; no hint before
        id="l11-top1-gates-log-softmax",
        module="l11_expert_parallel",
        exercise="top1_dispatch",
        status="failed",
        check="combine",
        says=("a log-softmax where the reference takes a softmax",),
        patch=(
            (
                "    dispatch = _dispatch(onehot, slot, capacity)\n    gates = jax.nn.softmax(logits, axis=-1)\n",
                "    dispatch = _dispatch(onehot, slot, capacity)\n    gates = jax.nn.log_softmax(logits, axis=-1)\n",
            ),
        ),
    ),
]
