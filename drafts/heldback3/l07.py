"""Held-back set 3, lesson 7 (see drafts/heldback3/__init__.py)."""

from __future__ import annotations

from drafts.heldback import Held

M = "l07_fsdp"

HELD: list[Held] = [
    Held(
        id="hb3-l07-local-loss-without-its-half",
        module=M,
        exercise="fsdp_grads",
        what=(
            "The learner's local loss is Σ err² / B without the ½ of tinymodels.loss, so "
            "every gradient comes back twice the expected one."
        ),
        cause=("0.5", "half", "½", "factor 2", "twice"),
        kind="factor",
        patch=(
            (
                "return 0.5 * jnp.sum(err * err) / batch",
                "return jnp.sum(err * err) / batch",
            ),
        ),
    ),
    Held(
        id="hb3-l07-train-step-updates-w-in-only",
        module=M,
        exercise="fsdp_train_step",
        what=(
            "Writing the SGD update leaf by leaf, the learner updates w_in and passes w_out "
            "through unchanged: half of the model never learns."
        ),
        cause=("w_out", "every leaf", "unchanged", "not updated", "tree"),
        kind="leaf",
        patch=(
            (
                "new = jax.tree.map(lambda w, gw: w - lr * gw, p, g)",
                'new = {"w_in": p["w_in"] - lr * g["w_in"], "w_out": p["w_out"]}',
            ),
        ),
    ),
    Held(
        id="hb3-l07-layer-without-residual",
        module=M,
        exercise="fsdp_forward",
        what=(
            "Writing the layer out by hand after the gathers, the learner computes "
            "tanh(h·W_in)·W_out and drops the residual h +: the course layer is residual."
        ),
        cause=("residual", "h +", "skip", "tinymodels.layer", "add the input"),
        kind="formula",
        patch=(
            (
                "return layer(h, w_in, w_out)",
                "return jnp.tanh(h @ w_in) @ w_out",
            ),
        ),
    ),
]
