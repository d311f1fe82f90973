"""Lesson 11 — mixture of experts over an ``('expert',)`` mesh (reference solution).

A mixture-of-experts layer replaces one MLP by E of them, the *experts*, and
a *router* that sends each token to one (top-1) or two (top-2) of them. With
E = N experts on N devices, device e holds expert e's weights and its own
T/N tokens. Each device routes its tokens into a buffer of C slots per
expert, ``[E, C, D]``; one all-to-all sends row e of that buffer to device
e; every device runs its expert on the ``[N, C, D]`` tokens it received;
a second all-to-all sends the results back where they came from; each
device combines its tokens' results, weighted by the router's softmax.

Routing is static-shaped: each expert takes at most ``capacity`` tokens
from each device, in token order, and the rest are *dropped* (their output
is 0; the residual connection around the layer carries them on).
"""

import jax
import jax.numpy as jnp
from jax import lax
from jax.sharding import Mesh
from jax.sharding import PartitionSpec as P

AXIS = "expert"
TOKENS = P(AXIS, None)  # x, y: [T, D], tokens split over 'expert'
EXPERTS = P(AXIS, None, None)  # w_in: [E, D, F], w_out: [E, F, D], one expert per device


def _slots(
    choice: jax.Array, n_experts: int, taken: jax.Array | int = 0
) -> tuple[jax.Array, jax.Array]:
    """One-hot ``[T, E]`` of each token's choice, and the slot it gets there: the
    tokens before it that chose the same expert, after ``taken`` slots already used."""
    onehot = jax.nn.one_hot(choice, n_experts, dtype=jnp.int32)
    earlier = jnp.cumsum(onehot, axis=0) - onehot  # exclusive: tokens before this one
    return onehot, jnp.sum((earlier + taken) * onehot, axis=-1)


def _dispatch(onehot: jax.Array, slot: jax.Array, capacity: int) -> jax.Array:
    """bool ``[T, E, C]``: token t sits in slot ``slot[t]`` of its expert, if it fits.
    ``one_hot`` of a slot ≥ C is all zeros: the token is dropped."""
    return (onehot[:, :, None] * jax.nn.one_hot(slot, capacity, dtype=jnp.int32)[:, None, :]) > 0


def top1_dispatch(logits: jax.Array, capacity: int) -> tuple[jax.Array, jax.Array]:
    """Top-1 routing of T tokens to E experts with ``capacity`` slots each.

    ``logits: [T, E]``. Returns ``(dispatch, combine)``, both ``[T, E, C]``:
    ``dispatch[t, e, c]`` (bool) is True when token t goes to expert
    e = argmax(logits[t]) (ties: the lowest index) into slot c = the number
    of earlier tokens routed to e; a token whose slot would be ≥ C is
    dropped (all False). ``combine`` is softmax(logits)[t, e] where
    ``dispatch`` is True, else 0, in the logits' dtype.
    """
    n_experts = logits.shape[-1]
    choice = jnp.argmax(logits, axis=-1)  # argmax returns the first maximum: lowest index
    onehot, slot = _slots(choice, n_experts)
    dispatch = _dispatch(onehot, slot, capacity)
    gates = jax.nn.softmax(logits, axis=-1)
    return dispatch, jnp.where(dispatch, gates[:, :, None], 0).astype(logits.dtype)


def moe_layer(
    x: jax.Array,
    router_w: jax.Array,
    w_in: jax.Array,
    w_out: jax.Array,
    mesh: Mesh,
    capacity: int,
) -> jax.Array:
    """A top-1 mixture-of-experts layer, one expert per device.

    ``x: [T, D]`` sharded ``P('expert', None)``; ``router_w: [D, E]``
    replicated; ``w_in: [E, D, F]`` and ``w_out: [E, F, D]`` sharded
    ``P('expert', None, None)``. Each device routes its own T/N tokens with
    :func:`top1_dispatch` (capacity C per expert), expert e computes
    ``tanh(h @ w_in[e]) @ w_out[e]``, and ``y[t]`` = gate · expert(x[t])
    for kept tokens, 0 for dropped ones. ``y: [T, D]`` sharded like x.
    Communication: two all-to-alls of the ``[E, C, D]`` buffer.
    """

    def body(x_rows, router, w_in_e, w_out_e):  # x_rows: [T/N, D]; w_in_e: [1, D, F]
        dispatch, combine = top1_dispatch(x_rows @ router, capacity)  # [T/N, E, C]
        sent = jnp.einsum("tec,td->ecd", dispatch.astype(x_rows.dtype), x_rows)  # [E, C, D]
        # row e goes to device e; what arrives is stacked by source device: [N, C, D]
        mine = lax.all_to_all(sent, AXIS, split_axis=0, concat_axis=0, tiled=True)
        done = jnp.tanh(mine @ w_in_e[0]) @ w_out_e[0]  # expert e on every device's tokens
        back = lax.all_to_all(done, AXIS, split_axis=0, concat_axis=0, tiled=True)  # [E, C, D]
        return jnp.einsum("tec,ecd->td", combine, back)  # gate · expert(x); dropped → 0

    return jax.shard_map(
        body, mesh=mesh, in_specs=(TOKENS, P(), EXPERTS, EXPERTS), out_specs=TOKENS
    )(x, router_w, w_in, w_out)


def top2_dispatch(logits: jax.Array, capacity: int) -> tuple[jax.Array, jax.Array]:
    """Top-2 routing (GShard order), same outputs as :func:`top1_dispatch`.

    The first choice is argmax(logits[t]); the second is the argmax over the
    other experts (ties: the lowest index). First choices take slots as in
    top-1; a second choice's slot counts every first choice routed to that
    expert, then the earlier second choices. ``combine`` is
    softmax(logits)[t, e] for each dispatched (t, e), not renormalised.
    """
    n_experts = logits.shape[-1]
    first = jnp.argmax(logits, axis=-1)
    others = jnp.where(jax.nn.one_hot(first, n_experts) > 0, -jnp.inf, logits)
    second = jnp.argmax(others, axis=-1)
    onehot1, slot1 = _slots(first, n_experts)
    onehot2, slot2 = _slots(second, n_experts, jnp.sum(onehot1, axis=0, keepdims=True))
    dispatch = _dispatch(onehot1, slot1, capacity) | _dispatch(onehot2, slot2, capacity)
    gates = jax.nn.softmax(logits, axis=-1)
    return dispatch, jnp.where(dispatch, gates[:, :, None], 0).astype(logits.dtype)
