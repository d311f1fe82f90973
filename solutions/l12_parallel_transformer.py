"""Lesson 12 — the parallel transformer training step (reference solution).

Mesh ``('data', 'model')``. Over 'data': each device row holds 1/data of the
batch and 1/data of every weight (FSDP, split on the embedding dim D); over
'model': each device holds H/model whole heads and F/model columns of the
MLP (Megatron). In each block a device

1. all-gathers its layer's weight shards over 'data' (inside the remat, so
   the backward gathers them again instead of keeping them);
2. runs attention on its heads and the MLP on its columns: each sub-block
   ends with a row-parallel matmul, a partial sum over 'model', and one
   ``psum`` over 'model' adds the partials;
3. in the backward, ``jax.grad`` turns each gather into a reduce-scatter of
   the weight gradient over 'data', and each ``pcast`` of h to
   'model'-varying into the matching all-reduce of dh over 'model'.

So the weights move over 'data' only, the activations over 'model' only.
"""

import jax
import jax.numpy as jnp
from jax import lax
from jax.ad_checkpoint import checkpoint_name
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
NAMES = ("wq", "wk", "wv", "wo", "w_in", "w_out")
MID = "mid"
"""The name of h between attention and the MLP."""
SAVE_MID = jax.checkpoint_policies.save_only_these_names(MID)


def _spec(name: str) -> P:
    """The PartitionSpec of array ``name`` under RULES."""
    return P(*(RULES[axis] for axis in LOGICAL[name]))


def shard_params(params: dict, mesh: Mesh) -> dict:
    """Place every param on ``mesh`` by its logical axes and RULES."""
    return {k: jax.device_put(v, NamedSharding(mesh, _spec(k))) for k, v in params.items()}


def _gather(w: dict) -> dict:
    """One layer's weights gathered over 'data' on D: the FSDP all-gathers."""
    d_axis = {"wq": 0, "wk": 0, "wv": 0, "wo": 1, "w_in": 0, "w_out": 1}
    return {k: lax.all_gather(v, "data", axis=d_axis[k], tiled=True) for k, v in w.items()}


def _block(h: jax.Array, w: dict, dh: int) -> jax.Array:
    """One block on this device's heads and MLP columns; h replicated over 'model'."""
    w = _gather(w)
    b, s, _ = h.shape
    heads = w["wq"].shape[1] // dh  # H/model heads live here
    hv = lax.pcast(h, "model", to="varying")  # once: its transpose is one psum of dh

    def split(t):
        return t.reshape(b, s, heads, dh)

    q, k, v = split(hv @ w["wq"]), split(hv @ w["wk"]), split(hv @ w["wv"])
    o = jax.vmap(lambda q, k, v: attention(q, k, v, causal=True))(q, k, v)
    h = h + lax.psum(o.reshape(b, s, heads * dh) @ w["wo"], "model")
    h = checkpoint_name(h, MID)  # saved: the backward need not redo attention's psum
    hv = lax.pcast(h, "model", to="varying")
    return h + lax.psum(jnp.tanh(hv @ w["w_in"]) @ w["w_out"], "model")


def _local_loss(params: dict, x: jax.Array, y: jax.Array, dh: int, rows: int) -> jax.Array:
    """This device row's share of the loss: ½ · its squared errors / (all B·S rows)."""
    # remat: the backward gathers each layer again; of the block's insides only
    # the mid-block h is kept. (Saving "all but the gathered weights" by name
    # keeps the weights: the policy sees them again under other names.)
    block = jax.checkpoint(lambda h, w: _block(h, w, dh), policy=SAVE_MID)
    h, _ = lax.scan(lambda h, w: (block(h, w), None), x, params)
    err = h - y
    return 0.5 * jnp.sum(err * err) / rows


def train_step(
    params: dict, x: jax.Array, y: jax.Array, mesh: Mesh, lr: float, n_heads: int
) -> tuple[dict, jax.Array]:
    """One SGD step of the tiny transformer: (params − lr·grads, loss before the step).

    ``params`` as :func:`shard_params` places them, ``x, y: [B, S, D]``
    ``P('data', None, None)``. The new params keep their shardings; the loss
    is a replicated scalar.
    """
    dh = params["wq"].shape[2] // n_heads
    rows = x.shape[0] * x.shape[1]
    specs = {k: _spec(k) for k in params}
    batch = _spec("x")

    def body(p, xb, yb):
        local, g = jax.value_and_grad(_local_loss)(p, xb, yb, dh, rows)
        new = jax.tree.map(lambda w, gw: w - lr * gw, p, g)
        return new, lax.psum(local, "data")

    return jax.shard_map(body, mesh=mesh, in_specs=(specs, batch, batch), out_specs=(specs, P()))(
        params, x, y
    )


def predict_step_bytes(shapes: dict, mesh_shape: dict, itemsize: int) -> dict[str, int]:
    """Bytes one device sends per collective kind in one :func:`train_step`.

    ``shapes``: each param's shape and ``'x'``'s; ``mesh_shape``:
    ``{'data': …, 'model': …}``. Keys are HLO op names: ``'all-gather'``,
    ``'reduce-scatter'``, ``'all-reduce'``.
    """
    # Ring model: gathering or reduce-scattering n bytes over G devices sends
    # (G−1)/G·n; an all-reduce sends twice that.
    data, model = mesh_shape["data"], mesh_shape["model"]
    weights = sum(_size(shapes[k]) for k in NAMES) * itemsize // model  # one 'model' column
    b, s, d = shapes["x"]
    act = b // data * s * d * itemsize  # h on one device: [B/data, S, D]
    n_layers = shapes["wq"][0]
    out = {
        "all-gather": 2 * (data - 1) * weights // data,  # forward + the backward's re-gather
        "reduce-scatter": (data - 1) * weights // data,
        # 2 psums forward + their 2 transposes backward per block, and the loss scalar
        "all-reduce": 4 * n_layers * 2 * (model - 1) * act // model
        + 2 * (data - 1) * itemsize // data,
    }
    return {k: v for k, v in out.items() if v}


def _size(shape: tuple) -> int:
    n = 1
    for d in shape:
        n *= d
    return n
