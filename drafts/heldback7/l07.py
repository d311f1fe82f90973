"""Held-back set 7, lesson 7 (see drafts/heldback7/__init__.py)."""

from __future__ import annotations

from drafts.heldback import Held

M = "l07_fsdp"

HELD: list[Held] = [
    Held(
        id="hb7-l07-forward-residual-added-twice",
        module=M,
        exercise="fsdp_forward",
        what=(
            "Taking tinymodels.layer for the MLP alone, the learner writes h + layer(h, w_in, "
            "w_out) in the layer loop, but layer already adds the residual: every layer "
            "computes 2·h + tanh(h·W_in)·W_out and the output grows like 2^L."
        ),
        cause=("residual", "twice", "layer already", "h + layer", "2·h"),
        kind="formula",
        patch=(
            (
                "    return layer(h, w_in, w_out)\n",
                "    return h + layer(h, w_in, w_out)  # the residual around the layer\n",
            ),
        ),
    ),
    Held(
        id="hb7-l07-forward-output-gathered-whole",
        module=M,
        exercise="fsdp_forward",
        what=(
            "To hand back the whole y the learner all-gathers the rows over 'data' at the end "
            "and returns y replicated (out_specs=P()): the values are right, but y should stay "
            "split by rows like x, P('data', None), and the gather moves (N − 1)/N of y."
        ),
        cause=("p('data', none)", "rows", "replicated", "all-gather of y", "like x"),
        kind="layout",
        code="""
def fsdp_forward(params: dict, x: jax.Array, mesh: Mesh) -> jax.Array:
    def body(p, xb):
        yb = _local_forward(p, xb)
        return lax.all_gather(yb, AXIS, axis=0, tiled=True, to="invarying")  # the whole y

    return jax.shard_map(body, mesh=mesh, in_specs=(PARAMS, BATCH), out_specs=P())(params, x)
""",
    ),
    Held(
        id="hb7-l07-grads-gathers-typed-invarying",
        module=M,
        exercise="fsdp_grads",
        what=(
            "Copying lesson 4's allgather case, the learner gathers each weight with "
            "to='invarying': the forward is the same, but the gathered weight is now typed "
            "the same on every device, so its gradient is summed by an all-reduce of the whole "
            "weight (the transpose of the implicit cast) and then sliced, instead of the "
            "reduce-scatter that the plain (varying) gather transposes to."
        ),
        cause=("invarying", "all-reduce", "reduce-scatter", "to='varying'", "transpose"),
        kind="collective",
        patch=(
            (
                "    w_in = lax.all_gather(w_in_blk, AXIS, axis=0, tiled=True)  # [D/N, F] -> [D, F]\n"
                "    w_out = lax.all_gather(w_out_blk, AXIS, axis=1, tiled=True)  # [F, D/N] -> [F, D]\n",
                '    w_in = lax.all_gather(w_in_blk, AXIS, axis=0, tiled=True, to="invarying")\n'
                '    w_out = lax.all_gather(w_out_blk, AXIS, axis=1, tiled=True, to="invarying")\n',
            ),
        ),
    ),
]
