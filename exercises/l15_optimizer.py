"""Lesson 15 — the optimizer at scale: AdamW in mixed precision, ZeRO-1 and ZeRO-2.

Parameters are one flat vector of Ψ numbers, as frameworks lay them out in
one contiguous buffer before they shard it. The model computes in bfloat16;
the optimizer keeps float32 master weights and Adam moments. The grader checks
every device's values against a float64 reference, the dtypes of the update
(read from the program you export), the collectives and their bytes against
the ring optimum, and what each device keeps (the compiled program's memory
analysis against the byte table).

``hp`` is a dict of hyperparameters: ``lr``, ``b1``, ``b2``, ``eps``,
``weight_decay`` for AdamW; ``lr``, ``momentum``, ``growth_interval`` for the
loss-scaled step.

Read the lesson first: ``course show 15``. Grade with ``course grade 15``.
"""

import jax
import jax.numpy as jnp
from jax import lax
from jax.sharding import Mesh
from jax.sharding import PartitionSpec as P

AXIS = "data"
STATE = {"master": P(AXIS), "m": P(AXIS), "v": P(AXIS), "step": P()}


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
    # TODO: convert grads to float32; update m and v; bias-correct both with
    #       t = step + 1; master ← master − lr·(m̂/(√v̂ + eps) + weight_decay·master);
    #       return (master as bfloat16, the new state with step + 1).
    raise NotImplementedError("adamw_step: TODO")


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
    # TODO: jax.shard_map with in_specs (P(), P('data'), STATE), out_specs (P(), STATE).
    #       In the body: sum g[0] (this device's [M, Ψ]) over M in float32,
    #       lax.psum_scatter(..., 'data', tiled=True), divide by N·M, update your
    #       slice as adamw_step does, then lax.all_gather the bfloat16 slice
    #       (tiled=True, to='invarying') for the new params.
    raise NotImplementedError("zero1_step: TODO")


def zero2_step(
    params: jax.Array, grads: jax.Array, state: dict, hp: dict, mesh: Mesh
) -> tuple[jax.Array, dict]:
    """ZeRO-2: as :func:`zero1_step`, with the gradient split over ``'data'`` too.

    Each micro-batch's bfloat16 gradient is reduce-scattered as soon as it
    exists (M reduce-scatters, in bfloat16), and only this device's slice is
    accumulated, in float32: no device ever holds a float32 gradient of the
    whole ``[Ψ]``. Same arguments, result and shardings as :func:`zero1_step`.
    """
    # TODO: as zero1_step, but lax.scan over the M micro-batch gradients: in each
    #       step psum_scatter the bfloat16 gradient and add it, as float32, to a
    #       float32 accumulator of Ψ/N (lax.pcast(jnp.zeros(...), 'data', to='varying')).
    raise NotImplementedError("zero2_step: TODO")


def clip_by_global_norm(grads: jax.Array, max_norm: jax.Array, mesh: Mesh) -> jax.Array:
    """Scale the gradient so that its global L2 norm is at most ``max_norm``.

    ``grads``: float32 ``[Ψ]``, ``P('data')`` (each device holds its slice, as
    after a reduce-scatter); ``max_norm``: a float32 scalar, ``P()`` (an array:
    compare it with jnp, not Python's ``if``). The norm is that of the whole vector,
    ``‖g‖ = √(Σ g²)`` over all Ψ; the result is ``g · max_norm / max(‖g‖,
    max_norm)``, sharded as it came. One all-reduce of one scalar.
    """
    # TODO: jax.shard_map with in_specs (P('data'), P()) for (grads, max_norm) and
    #       out_specs P('data'); the norm is the
    #       square root of the psum of every device's sum of squares.
    raise NotImplementedError("clip_by_global_norm: TODO")


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
    # TODO: jax.shard_map; one flag per device (1.0 where its slice is not all
    #       finite), lax.psum it; with jnp.where pick the skipped or the taken step:
    #       unscale in float32, momentum, master, then the scale and the counter.
    raise NotImplementedError("loss_scaled_step: TODO")


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
    # TODO: jax.shard_map, in_specs P('data'), out_specs P(). amax with lax.pmax
    #       of this slice's max |w|; scale = 448 / amax (jnp.finfo(jnp.float8_e4m3fn).max);
    #       quantise the slice, lax.all_gather it (tiled=True, to='invarying'),
    #       dequantise: float32(q) / scale.
    raise NotImplementedError("fp8_all_gather: TODO")
