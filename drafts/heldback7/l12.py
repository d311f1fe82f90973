"""Held-back set 7, lesson 12 (see drafts/heldback7/__init__.py)."""

from __future__ import annotations

from drafts.heldback import Held

M = "l12_parallel_transformer"

HELD: list[Held] = [
    Held(
        id="hb7-l12-shard-params-spec-of-one-layer",
        module=M,
        exercise="shard_params",
        what=(
            "Thinking of the spec as one layer's (the scan hands each step one layer), the "
            "learner builds every param's PartitionSpec from its logical axes without "
            "'layers': the entries shift one dimension left, so the layer axis is split over "
            "'data' and D (or H·Dh, F) over 'model' instead of D over 'data' and heads/F over "
            "'model'."
        ),
        cause=("layers", "leading dimension", "one entry per dimension", "shifted", "layer axis"),
        kind="layout",
        code="""
def shard_params(params: dict, mesh: Mesh) -> dict:
    def layer_spec(name):  # one layer's axes: the scan hands each step one layer
        return P(*(RULES[axis] for axis in LOGICAL[name] if axis != "layers"))

    return {k: jax.device_put(v, NamedSharding(mesh, layer_spec(k))) for k, v in params.items()}
""",
    ),
    Held(
        id="hb7-l12-block-mlp-added-to-the-block-input",
        module=M,
        exercise="train_step",
        what=(
            "Naming the mid-block activation h1, the learner feeds the MLP with h1 but adds its "
            "output to the block's input h: the block returns h + mlp(h + attn(h)) and the "
            "attention's output never reaches the residual stream."
        ),
        cause=("residual", "block input", "attention's output", "h + attn(h)", "mid-block"),
        kind="state",
        patch=(
            (
                '    h = h + lax.psum(o.reshape(b, s, heads * dh) @ w["wo"], "model")\n'
                "    h = checkpoint_name(h, MID)  # saved: the backward need not redo attention's psum\n"
                '    hv = lax.pcast(h, "model", to="varying")\n'
                '    return h + lax.psum(jnp.tanh(hv @ w["w_in"]) @ w["w_out"], "model")\n',
                '    h1 = h + lax.psum(o.reshape(b, s, heads * dh) @ w["wo"], "model")\n'
                "    h1 = checkpoint_name(h1, MID)  # saved: the backward need not redo attention's psum\n"
                '    hv = lax.pcast(h1, "model", to="varying")\n'
                '    return h + lax.psum(jnp.tanh(hv @ w["w_in"]) @ w["w_out"], "model")\n',
            ),
        ),
    ),
    Held(
        id="hb7-l12-prediction-activation-width-of-the-heads",
        module=M,
        exercise="predict_step_bytes",
        what=(
            "The learner sizes the all-reduced activation by the attention output's width, "
            "[B/data, S, H·Dh], but the psums carry o @ wo and the MLP's output, both "
            "[B/data, S, D]: wherever H·Dh ≠ D the all-reduce bytes are off by H·Dh/D."
        ),
        cause=("d_model", "[b/data, s, d]", "after wo", "embedding", "h·dh"),
        kind="shape",
        patch=(
            (
                "    act = b // data * s * d * itemsize  # h on one device: [B/data, S, D]\n",
                '    act = b // data * s * shapes["wq"][2] * itemsize  # o on one device: [B/data, S, H·Dh]\n',
            ),
        ),
    ),
]
