"""Lesson 11 — mixture of experts over an ``('expert',)`` mesh.

E = N experts, one per device. Each device routes its own T/N tokens into a
buffer of C slots per expert (``top1_dispatch``), sends row e of that buffer
to device e with an all-to-all, runs its expert on what arrives, and sends
the results back with a second all-to-all (``moe_layer``). The grader checks
the routing token by token against a reference (ties, dropped tokens), the
layer's output on every device against a float64 reference with the same
per-device drop rule, that the compiled program holds exactly two
all-to-alls and nothing else, and that they send 2·(N − 1)/N · |[E, C, D]|
bytes per device.

Read the lesson first: ``course show 11``. Grade with ``course grade 11``.
"""

import jax
import jax.numpy as jnp
from jax import lax
from jax.sharding import Mesh
from jax.sharding import PartitionSpec as P


def top1_dispatch(logits: jax.Array, capacity: int) -> tuple[jax.Array, jax.Array]:
    """Top-1 routing of T tokens to E experts with ``capacity`` slots each.

    ``logits: [T, E]``. Returns ``(dispatch, combine)``, both ``[T, E, C]``:
    ``dispatch[t, e, c]`` (bool) is True when token t goes to expert
    e = argmax(logits[t]) (ties: the lowest index) into slot c = the number
    of earlier tokens routed to e; a token whose slot would be ≥ C is
    dropped (all False). ``combine`` is softmax(logits)[t, e] where
    ``dispatch`` is True, else 0, in the logits' dtype.
    """
    # TODO: choice = jnp.argmax(logits, axis=-1); one-hot it over E; a token's slot
    #       is the number of EARLIER tokens with the same choice (an exclusive
    #       cumsum). Slots >= capacity are dropped. combine = the softmax gate
    #       where dispatch is True, 0 elsewhere.
    raise NotImplementedError("top1_dispatch: TODO")


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
    # TODO: jax.shard_map over 'expert' with in_specs (P('expert', None), P(),
    #       P('expert', None, None), P('expert', None, None)). Inside: route your
    #       tokens with top1_dispatch, pack them into an [E, C, D] buffer,
    #       lax.all_to_all it, run your expert, all_to_all the results back,
    #       and combine them with the gates.
    raise NotImplementedError("moe_layer: TODO")


def top2_dispatch(logits: jax.Array, capacity: int) -> tuple[jax.Array, jax.Array]:
    """Top-2 routing (GShard order), same outputs as :func:`top1_dispatch`.

    The first choice is argmax(logits[t]); the second is the argmax over the
    other experts (ties: the lowest index). First choices take slots as in
    top-1; a second choice's slot counts every first choice routed to that
    expert, then the earlier second choices. ``combine`` is
    softmax(logits)[t, e] for each dispatched (t, e), not renormalised.
    """
    # TODO: first choice as in top-1; the second is the argmax once the first
    #       is masked out. Slots in GShard order: all first choices, then the
    #       second choices counting after every first choice at that expert.
    raise NotImplementedError("top2_dispatch: TODO")
