"""Held-back set 6, lesson 12 (see drafts/heldback6/__init__.py)."""

from __future__ import annotations

from drafts.heldback import Held

M = "l12_parallel_transformer"

HELD: list[Held] = [
    Held(
        id="hb6-l12-prediction-weights-times-the-layers",
        module=M,
        exercise="predict_step_bytes",
        what=(
            "Reading shapes as one layer's, the learner multiplies the weights' bytes by the "
            "number of layers, but each shape already holds every layer ([L, …]): the "
            "all-gather and reduce-scatter bytes come out L times too large (wherever data > 1)."
        ),
        cause=("layers", "L times", "n_layers", "already", "stacked"),
        kind="factor",
        patch=(
            (
                "    weights = sum(_size(shapes[k]) for k in NAMES) * itemsize // model  # one 'model' column",
                "    # every layer's weights, one 'model' column\n"
                '    weights = shapes["wq"][0] * sum(_size(shapes[k]) for k in NAMES) * itemsize // model',
            ),
        ),
    ),
    Held(
        id="hb6-l12-mlp-with-gelu",
        module=M,
        exercise="train_step",
        what=(
            "Used to GPT-style blocks, the learner's MLP uses jax.nn.gelu instead of the course "
            "model's tanh: the sharding and collectives are right, but the forward pass, the "
            "loss and the gradients are those of a different model."
        ),
        cause=("tanh", "gelu", "activation", "nonlinearity", "MLP"),
        kind="formula",
        patch=(
            (
                'return h + lax.psum(jnp.tanh(hv @ w["w_in"]) @ w["w_out"], "model")',
                'return h + lax.psum(jax.nn.gelu(hv @ w["w_in"]) @ w["w_out"], "model")',
            ),
        ),
    ),
    Held(
        id="hb6-l12-prediction-all-reduces-of-one-block",
        module=M,
        exercise="predict_step_bytes",
        what=(
            "The learner counts the four activation all-reduces of one block (two forward, two "
            "backward) but forgets that there is one block per layer: the all-reduce bytes are "
            "L times too small (wherever model > 1)."
        ),
        cause=("per layer", "n_layers", "layers", "every block", "L times"),
        kind="formula",
        patch=(
            (
                '"all-reduce": 4 * n_layers * 2 * (model - 1) * act // model',
                '"all-reduce": 4 * 2 * (model - 1) * act // model',
            ),
        ),
    ),
    Held(
        id="hb6-l12-prediction-loss-scalar-in-float32",
        module=M,
        exercise="predict_step_bytes",
        what=(
            "The learner counts the loss's all-reduce over 'data' at 4 bytes, taking the loss to "
            "be a float32 scalar, but it has the params' dtype (itemsize bytes): for bfloat16 "
            "params the all-reduce bytes are off by 2·(data − 1)·(4 − itemsize)/data (right at "
            "itemsize 4 or data = 1)."
        ),
        cause=("itemsize", "loss", "scalar", "float32", "dtype"),
        kind="dtype",
        patch=(
            (
                "        + 2 * (data - 1) * itemsize // data,",
                "        + 2 * (data - 1) * 4 // data,  # the loss: one float32 scalar",
            ),
        ),
    ),
]
