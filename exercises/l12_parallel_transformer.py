"""Lesson 12 — the parallel transformer training step (putting it together).

Mesh ``('data', 'model')``. Data parallelism and FSDP over 'data' (each
device row holds 1/data of the batch and of every weight, split on the
embedding dim D), tensor parallelism over 'model' (H/model whole heads and
F/model MLP columns per device), for the tiny causal transformer of
:mod:`tinymodels.transformer`. The grader checks the values against the
unsharded SGD step (and, when they are wrong, names the first layer and
param whose gradient differs), that params keep their shardings, each
device's memory, which collectives run over which mesh axis, and the bytes
of each kind against the reference's and your own prediction.

Read the lesson first: ``course show 12``. Grade with ``course grade 12``.
"""

import jax
import jax.numpy as jnp
from jax import lax
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from tinymodels.attention import attention

LOGICAL = {
    "wq": ("layers", "embed", "heads"),
    "wk": ("layers", "embed", "heads"),
    "wv": ("layers", "embed", "heads"),
    "wo": ("layers", "heads", "embed"),
    "w_in": ("layers", "embed", "mlp"),
    "w_out": ("layers", "mlp", "embed"),
    "x": ("batch", "seq", "act_embed"),
}
"""Each array's logical axes, one name per dimension."""
RULES = {
    "batch": "data",
    "embed": "data",  # FSDP: every weight split over 'data' on D
    "heads": "model",
    "mlp": "model",
    "layers": None,
    "seq": None,
    "act_embed": None,  # activations keep D whole
}
"""Logical axis → mesh axis (None: not split)."""


def shard_params(params: dict, mesh: Mesh) -> dict:
    """Place every param on ``mesh`` by its logical axes and RULES."""
    # TODO: for each param, P(*(RULES[a] for a in LOGICAL[name])) and
    #       jax.device_put(value, NamedSharding(mesh, spec)).
    raise NotImplementedError("shard_params: TODO")


def train_step(
    params: dict, x: jax.Array, y: jax.Array, mesh: Mesh, lr: float, n_heads: int
) -> tuple[dict, jax.Array]:
    """One SGD step of the tiny transformer: (params − lr·grads, loss before the step).

    ``params`` as :func:`shard_params` places them, ``x, y: [B, S, D]``
    ``P('data', None, None)``. The new params keep their shardings; the loss
    is a replicated scalar.
    """
    # TODO: jax.shard_map with in_specs (param specs, batch, batch) and
    #       out_specs (param specs, P()). In the body, lax.scan over the
    #       layers; each step all-gathers its weights over 'data' (on D),
    #       runs attention on the local heads and the MLP on the local F
    #       columns, and psums each sub-block's output over 'model'. Wrap
    #       the block in jax.checkpoint (saving only the mid-block h), take
    #       jax.value_and_grad of ½ · this device's squared errors / (B·S)
    #       (the global B·S; the ½ is the reference's), update p − lr·g, and
    #       psum the loss over 'data'.
    raise NotImplementedError("train_step: TODO")


def predict_step_bytes(shapes: dict, mesh_shape: dict, itemsize: int) -> dict[str, int]:
    """Bytes one device sends per collective kind in one :func:`train_step`.

    ``shapes``: each param's shape and ``'x'``'s; ``mesh_shape``:
    ``{'data': …, 'model': …}``. Keys are HLO op names: ``'all-gather'``,
    ``'reduce-scatter'``, ``'all-reduce'``.
    """
    # TODO: ring model — gathering or reduce-scattering n bytes over G devices
    #       sends (G−1)/G·n, an all-reduce 2(G−1)/G·n. Count the forward and
    #       the backward (remat gathers again; every psum has a transpose).
    raise NotImplementedError("predict_step_bytes: TODO")
