"""Lesson 15 — the optimizer at scale (reference solution).

Parameters are one flat vector of Ψ numbers, as frameworks lay them out in
one contiguous buffer before they shard it. The model computes in bfloat16;
the optimizer keeps float32 master weights and Adam moments, 12 bytes per
parameter. ZeRO-1 and ZeRO-2 split that state over the ``'data'`` axis; ZeRO-2
splits the gradient too, by reduce-scattering each micro-batch's gradient as
soon as it exists. Clipping needs the norm of the whole gradient (one scalar
all-reduce); fp16 training needs a loss scale that backs off on overflow.

``hp`` is a dict of hyperparameters: ``lr``, ``b1``, ``b2``, ``eps``,
``weight_decay`` for AdamW; ``lr``, ``momentum``, ``growth_interval`` for the
loss-scaled step.
"""

import jax
import jax.numpy as jnp
from jax import lax
from jax.sharding import Mesh
from jax.sharding import PartitionSpec as P

AXIS = "data"
STATE = {"master": P(AXIS), "m": P(AXIS), "v": P(AXIS), "step": P()}


def _adamw(master, m, v, step, g, hp):
    """One AdamW update in float32 on whatever slice of the state this device holds."""
    t = (step + 1).astype(jnp.float32)  # the update about to be made, counted from 1
    m = hp["b1"] * m + (1 - hp["b1"]) * g
    v = hp["b2"] * v + (1 - hp["b2"]) * g * g
    m_hat = m / (1 - hp["b1"] ** t)  # bias correction: both moments start at zero
    v_hat = v / (1 - hp["b2"] ** t)
    update = m_hat / (jnp.sqrt(v_hat) + hp["eps"])
    master = master - hp["lr"] * (update + hp["weight_decay"] * master)  # decoupled decay
    return master, m, v


def adamw_step(
    params: jax.Array, grads: jax.Array, state: dict, hp: dict
) -> tuple[jax.Array, dict]:
    """One AdamW step with float32 master weights for bfloat16 params.

    ``params``, ``grads``: bfloat16 ``[Ψ]``. ``state``: ``master``, ``m``,
    ``v`` float32 ``[Ψ]`` and ``step`` an int32 scalar, the updates made so far.
    With ``t = step + 1``: ``m ← b1·m + (1−b1)·g``, ``v ← b2·v + (1−b2)·g²``,
    ``master ← master − lr·(m/(1−b1ᵗ) / (√(v/(1−b2ᵗ)) + eps) + weight_decay·master)``,
    all in float32. Returns ``(bfloat16(master), new state)`` with ``step + 1``.
    The inputs may be sharded: every operation is element by element.
    """
    g = grads.astype(jnp.float32)
    master, m, v = _adamw(state["master"], state["m"], state["v"], state["step"], g, hp)
    new = {"master": master, "m": m, "v": v, "step": state["step"] + 1}
    return master.astype(jnp.bfloat16), new


def _finish(master, m, v, step, params):
    """Cast the updated master shard to bfloat16 and gather it: every device's new params."""
    new_params = lax.all_gather(master.astype(params.dtype), AXIS, tiled=True, to="invarying")
    return new_params, {"master": master, "m": m, "v": v, "step": step + 1}


def zero1_step(
    params: jax.Array, grads: jax.Array, state: dict, hp: dict, mesh: Mesh
) -> tuple[jax.Array, dict]:
    """ZeRO-1: AdamW with the optimizer state split over ``'data'``.

    ``params``: bfloat16 ``[Ψ]``, replicated (``P()``). ``grads``: bfloat16
    ``[N, M, Ψ]``, ``P('data', None, None)``: device i's M micro-batch
    gradients, each the mean over its micro-batch. The step's gradient is the
    mean of all N·M. ``state`` as :func:`adamw_step`'s, ``master``/``m``/``v``
    ``P('data')`` (device i holds elements i·Ψ/N … (i+1)·Ψ/N), ``step`` ``P()``.
    Each device sums its micro-batch gradients into a float32 buffer of the
    whole ``[Ψ]``; one reduce-scatter leaves it its own slice; it updates its
    slice of the state, and an all-gather of the bfloat16 slices gives every
    device the new params. Returns ``(params, state)``, sharded as they came.
    """

    def body(p, g, s):
        acc = jnp.sum(g[0].astype(jnp.float32), axis=0)  # [M, Ψ] -> [Ψ]: the full fp32 buffer
        n_terms = lax.axis_size(AXIS) * g.shape[1]
        shard = lax.psum_scatter(acc, AXIS, tiled=True) / n_terms  # [Ψ] -> [Ψ/N]
        master, m, v = _adamw(s["master"], s["m"], s["v"], s["step"], shard, hp)
        return _finish(master, m, v, s["step"], p)

    return jax.shard_map(body, mesh=mesh, in_specs=(P(), P(AXIS), STATE), out_specs=(P(), STATE))(
        params, grads, state
    )


def zero2_step(
    params: jax.Array, grads: jax.Array, state: dict, hp: dict, mesh: Mesh
) -> tuple[jax.Array, dict]:
    """ZeRO-2: as :func:`zero1_step`, with the gradient split over ``'data'`` too.

    Each micro-batch's bfloat16 gradient is reduce-scattered as soon as it
    exists (M reduce-scatters, in bfloat16), and only this device's slice is
    accumulated, in float32: no device ever holds a float32 gradient of the
    whole ``[Ψ]``. Same arguments, result and shardings as :func:`zero1_step`.
    """

    def body(p, g, s):
        def add(acc, g_micro):  # g_micro: [Ψ] bfloat16
            return acc + lax.psum_scatter(g_micro, AXIS, tiled=True).astype(jnp.float32), None

        start = jnp.zeros(s["master"].shape, jnp.float32)
        acc, _ = lax.scan(add, lax.pcast(start, AXIS, to="varying"), g[0])
        shard = acc / (lax.axis_size(AXIS) * g.shape[1])
        master, m, v = _adamw(s["master"], s["m"], s["v"], s["step"], shard, hp)
        return _finish(master, m, v, s["step"], p)

    return jax.shard_map(body, mesh=mesh, in_specs=(P(), P(AXIS), STATE), out_specs=(P(), STATE))(
        params, grads, state
    )


def clip_by_global_norm(grads: jax.Array, max_norm: jax.Array, mesh: Mesh) -> jax.Array:
    """Scale the gradient so that its global L2 norm is at most ``max_norm``.

    ``grads``: float32 ``[Ψ]``, ``P('data')`` (each device holds its slice, as
    after a reduce-scatter); ``max_norm``: a float32 scalar, ``P()`` (an array:
    compare it with jnp, not Python's ``if``). The norm is that of the whole vector,
    ``‖g‖ = √(Σ g²)`` over all Ψ; the result is ``g · max_norm / max(‖g‖,
    max_norm)``, sharded as it came. One all-reduce of one scalar.
    """

    def body(g, limit):
        norm = jnp.sqrt(lax.psum(jnp.sum(g * g), AXIS))  # squares add; norms do not
        return g * (limit / jnp.maximum(norm, limit))

    return jax.shard_map(body, mesh=mesh, in_specs=(P(AXIS), P()), out_specs=P(AXIS))(
        grads, max_norm
    )


def loss_scaled_step(
    state: dict, grads: jax.Array, scaler: dict, hp: dict, mesh: Mesh
) -> tuple[dict, dict]:
    """One SGD-with-momentum step of an fp16 run with dynamic loss scaling.

    ``state``: ``master``, ``m`` float32 ``[Ψ]``, ``P('data')``. ``grads``:
    float16 ``[Ψ]``, ``P('data')``: this device's slice of the gradient of
    ``scale · loss`` (inf or nan where the backward overflowed). ``scaler``:
    ``scale`` float32 and ``good`` int32 scalars, ``P()``: clean steps in a row.
    If any element on any device is not finite: the state is left as it was,
    ``scale`` halves and ``good`` becomes 0. Otherwise, with ``g = grads / scale``
    in float32: ``m ← momentum·m + g``, ``master ← master − lr·m``, ``good + 1``;
    when that reaches ``growth_interval``, ``scale`` doubles and ``good`` becomes
    0. Whether to skip is found with one all-reduce of one scalar.
    Returns ``(state, scaler)``, sharded as they came.
    """

    def body(s, g, sc):
        bad_here = jnp.logical_not(jnp.all(jnp.isfinite(g))).astype(jnp.float32)
        skip = lax.psum(bad_here, AXIS) > 0  # the one scalar all-reduce
        g = g.astype(jnp.float32) / sc["scale"]  # unscale in float32: fp16 would underflow
        m = hp["momentum"] * s["m"] + g
        master = s["master"] - hp["lr"] * m
        good = sc["good"] + 1
        grow = good >= hp["growth_interval"]
        scale = jnp.where(skip, sc["scale"] / 2, jnp.where(grow, sc["scale"] * 2, sc["scale"]))
        good = jnp.where(skip | grow, 0, good)
        new = {
            "master": jnp.where(skip, s["master"], master),
            "m": jnp.where(skip, s["m"], m),
        }
        return new, {"scale": scale, "good": good}

    spec = {"master": P(AXIS), "m": P(AXIS)}
    scal = {"scale": P(), "good": P()}
    return jax.shard_map(body, mesh=mesh, in_specs=(spec, P(AXIS), scal), out_specs=(spec, scal))(
        state, grads, scaler
    )


def fp8_all_gather(w: jax.Array, mesh: Mesh) -> jax.Array:
    """Bonus: all-gather float32 weights in float8 (e4m3) with one per-tensor scale.

    ``w``: float32 ``[Ψ]``, ``P('data')``. The scale maps the largest magnitude of
    the whole tensor onto float8_e4m3fn's largest value: ``scale = 448 / amax``
    with ``amax = max |w|`` over every device (one all-reduce of one scalar).
    Each device sends ``float8_e4m3fn(w_slice · scale)`` (float32 arithmetic, then
    one rounding to float8); every device returns the gathered ``[Ψ]`` as
    ``float32(q) / scale``, replicated (``P()``). The all-gather's operand is
    float8: a quarter of float32's bytes.
    """

    def body(blk):
        amax = lax.pmax(jnp.max(jnp.abs(blk)), AXIS)  # the one scalar all-reduce
        scale = jnp.float32(jnp.finfo(jnp.float8_e4m3fn).max) / amax
        q = (blk * scale).astype(jnp.float8_e4m3fn)  # [Ψ/N], one byte each
        whole = lax.all_gather(q, AXIS, tiled=True, to="invarying")  # [Ψ] float8
        return whole.astype(jnp.float32) / scale

    return jax.shard_map(body, mesh=mesh, in_specs=P(AXIS), out_specs=P())(w)
