"""Held-back set 8, lesson 11 (see drafts/heldback8/__init__.py)."""

from __future__ import annotations

from drafts.heldback import Held

M = "l11_expert_parallel"

HELD: list[Held] = [
    Held(
        id="hb8-l11-moe-expert-before-the-all-to-all",
        module=M,
        exercise="moe_layer",
        what="The learner runs its expert on the dispatch buffer before the first all-to-all (compute, then communicate): the round trip then brings back its own expert's results, so every token is processed by its own device's expert instead of the one it was routed to.",
        cause=("before the all-to-all", "own expert", "routed", "order", "after the first"),
        kind="other",
        code="""
def moe_layer(x, router_w, w_in, w_out, mesh, capacity):
    def body(x_rows, router, w_in_e, w_out_e):
        dispatch, combine = top1_dispatch(x_rows @ router, capacity)
        sent = jnp.einsum("tec,td->ecd", dispatch.astype(x_rows.dtype), x_rows)
        done = jnp.tanh(sent @ w_in_e[0]) @ w_out_e[0]  # compute first …
        mine = lax.all_to_all(done, AXIS, split_axis=0, concat_axis=0, tiled=True)  # … then send
        back = lax.all_to_all(mine, AXIS, split_axis=0, concat_axis=0, tiled=True)
        return jnp.einsum("tec,ecd->td", combine, back)

    return jax.shard_map(
        body, mesh=mesh, in_specs=(TOKENS, P(), EXPERTS, EXPERTS), out_specs=TOKENS
    )(x, router_w, w_in, w_out)
""",
    ),
    Held(
        id="hb8-l11-top1-gates-log-softmax",
        module=M,
        exercise="top1_dispatch",
        what="The learner takes the gates from jax.nn.log_softmax, the function its loss code uses, instead of softmax: the combine weights are log-probabilities (negative numbers) rather than probabilities.",
        cause=("log_softmax", "softmax", "probabilit", "negative", "log"),
        kind="formula",
        patch=(
            (
                "    dispatch = _dispatch(onehot, slot, capacity)\n    gates = jax.nn.softmax(logits, axis=-1)\n",
                "    dispatch = _dispatch(onehot, slot, capacity)\n    gates = jax.nn.log_softmax(logits, axis=-1)\n",
            ),
        ),
    ),
    Held(
        id="hb8-l11-top2-first-choices-masked-for-every-token",
        module=M,
        exercise="top2_dispatch",
        what="To exclude each token's first choice the learner writes logits.at[:, first].set(−inf), which masks every token's first choice in every row: a token's second choice can then not be any expert some token chose first (and is expert 0 when all were).",
        cause=("every token", "its own", "one_hot", "row", "first choice"),
        kind="index",
        patch=(
            (
                "    others = jnp.where(jax.nn.one_hot(first, n_experts) > 0, -jnp.inf, logits)\n",
                "    others = logits.at[:, first].set(-jnp.inf)\n",
            ),
        ),
    ),
]
