"""Held-back set 5, lesson 7 (see drafts/heldback5/__init__.py)."""

from __future__ import annotations

from drafts.heldback import Held

M = "l07_fsdp"

HELD: list[Held] = [
    Held(
        id="hb5-l07-every-layer-runs-layer-0",
        module=M,
        exercise="fsdp_forward",
        what=(
            "Copying lesson 9's w_in[0] (one layer per stage), the learner's scan step indexes "
            "the stacked shards at layer 0 instead of using the layer the scan hands it: every "
            "one of the L layers runs with layer 0's weights."
        ),
        cause=("layer 0", "first layer", "same weights", "every layer", "layer index"),
        kind="index",
        patch=(
            (
                'return gathered_layer(h, w["w_in"], w["w_out"]), None',
                'return gathered_layer(h, params["w_in"][0], params["w_out"][0]), None',
            ),
        ),
    ),
    Held(
        id="hb5-l07-gather-as-psum-of-zero-padded-shards",
        module=M,
        exercise="fsdp_forward",
        what=(
            "Not finding all_gather in lesson 2's toolbox, the learner builds each full weight "
            "as a zero buffer with its own shard written in its slot and psums it over 'data': "
            "the values are right, but every layer now runs an all-reduce of the whole weight "
            "(twice the bytes of an all-gather) where FSDP's forward holds only all-gathers."
        ),
        cause=("all-gather", "all_gather", "all-reduce", "psum", "zero"),
        kind="collective",
        code="""
def _gathered_layer(h, w_in_blk, w_out_blk):
    n, me = lax.axis_size(AXIS), lax.axis_index(AXIS)

    def gather(blk, axis):  # my shard in my slot, zeros elsewhere, summed over 'data'
        shape = blk.shape[:axis] + (n * blk.shape[axis],) + blk.shape[axis + 1 :]
        full = lax.dynamic_update_slice_in_dim(
            jnp.zeros(shape, blk.dtype), blk, me * blk.shape[axis], axis=axis
        )
        return lax.psum(full, AXIS)

    return layer(h, gather(w_in_blk, 0), gather(w_out_blk, 1))
""",
    ),
    Held(
        id="hb5-l07-step-loss-times-the-learning-rate",
        module=M,
        exercise="fsdp_train_step",
        what=(
            "The learner folds the learning rate into the objective, differentiating "
            "lr · loss so that the update is p − g, and returns that value as the loss: the new "
            "params are right, but the reported loss is lr times the full-batch loss."
        ),
        cause=("learning rate", "lr", "scaled", "loss value", "before the step"),
        kind="factor",
        patch=(
            (
                "        local, g = jax.value_and_grad(_local_loss)(p, xb, yb, batch)\n"
                "        new = jax.tree.map(lambda w, gw: w - lr * gw, p, g)",
                "        local, g = jax.value_and_grad(lambda *a: lr * _local_loss(*a))(p, xb, yb, batch)\n"
                "        new = jax.tree.map(lambda w, gw: w - gw, p, g)  # lr is in the gradient already",
            ),
        ),
    ),
]
