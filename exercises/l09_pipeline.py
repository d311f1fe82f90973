"""Lesson 9 — pipeline parallelism: schedules and their execution.

The course model's L layers are split over p stages, one layer per stage,
and the batch into m micro-batches. A schedule says which op each stage runs
at each tick: ``schedule[tick][stage]`` is ``None`` (idle) or ``(kind,
micro)`` with kind ``"F"`` (forward), ``"B"`` (backward) or, when the
backward is split, ``"B"`` (input gradient) and ``"W"`` (weight gradient).
Every op takes one tick; F(s, i) needs F(s − 1, i), B(s, i) needs F(s, i) and
B(s + 1, i), W(s, i) needs B(s, i), each at a strictly earlier tick.

The grader simulates your schedules (every op once, one op per stage per
tick, dependencies, makespan, activation memory) on many (p, m), and runs
``pipeline_forward``/``pipeline_grads`` on a ``('stage',)`` mesh: values,
only collective-permutes of one micro-batch, m + p − 1 ticks in one loop,
weights that never move.

Read the lesson first: ``course show 9``. Grade with ``course grade 9``.
"""

import jax
import jax.numpy as jnp
from jax import lax
from jax.sharding import Mesh
from jax.sharding import PartitionSpec as P

import tinymodels

Op = tuple[str, int]
Schedule = list[list[Op | None]]
AXIS = "stage"


def gpipe_schedule(n_stages: int, n_micro: int) -> Schedule:
    """GPipe: every micro-batch's forward, then every backward.

    A forward phase of m + p − 1 ticks, then a backward phase as long:
    makespan 2(m + p − 1), and every stage keeps all m micro-batches alive.
    """
    # TODO: a grid of 2(m + p − 1) ticks × p stages, all None, then place
    #       F(s, i) and B(s, i) at the ticks the docstring gives.
    raise NotImplementedError("gpipe_schedule: TODO")


def one_f_one_b_schedule(n_stages: int, n_micro: int) -> Schedule:
    """1F1B: stage s runs min(p − 1 − s, m) warm-up forwards, then alternates
    one forward and one backward, then drains the remaining backwards.

    At most p − s micro-batches are alive on stage s (GPipe keeps m);
    makespan 2(m + p − 1), the same as GPipe.
    """
    # TODO: for each stage, the list of its ops in order (warm-up forwards,
    #       then F, B pairs, then the remaining B). Then walk the ticks: a
    #       stage runs its next op when what it needs ran at an earlier tick.
    raise NotImplementedError("one_f_one_b_schedule: TODO")


def bubble_fraction(schedule: Schedule) -> float:
    """Idle cells / all cells (ticks × stages)."""
    # TODO: count the None cells; divide by ticks × stages.
    raise NotImplementedError("bubble_fraction: TODO")


def peak_activations(schedule: Schedule) -> list[int]:
    """Per stage, the most micro-batches whose F has run and whose last
    backward op (B, or W where the schedule has W) has not."""
    # TODO: per stage, walk the ticks: +1 at an F, −1 at the last backward op
    #       (W if the schedule has any W, else B); keep the maximum.
    raise NotImplementedError("peak_activations: TODO")


def zero_bubble_schedule(n_stages: int, n_micro: int) -> Schedule:
    """ZB-H1: B split into B (input gradient, on the critical path) and W
    (weight gradient, needed by no other op), W filling the ticks 1F1B
    leaves idle. Makespan at most max(3m + p − 1, 2(m + p) − 1), at most p
    micro-batches alive per stage (a micro-batch lives from F to W).
    """
    # TODO (bonus): three kinds of op per micro-batch. One way: build it
    #       backwards from the last tick (an op is ready once everything
    #       that needs it is placed), preferring B, then F, then W.
    raise NotImplementedError("zero_bubble_schedule: TODO")


def pipeline_forward(params: dict, x: jax.Array, mesh: Mesh, n_micro: int) -> jax.Array:
    """``tinymodels.forward(params, x)``, stage s running layer s.

    ``params`` sharded ``P('stage', None, None)`` (stage s holds layer s),
    ``x: [B, D]`` replicated, the result replicated. Micro-batches of
    B/n_micro rows move to the next stage with ``lax.ppermute``: at tick t
    stage s runs micro-batch t − s, so m + p − 1 ticks run every micro-batch
    through every stage.
    """
    # TODO: jax.shard_map over 'stage' with in_specs (P('stage', None, None),
    #       P('stage', None, None), P()) and out_specs P(). Inside, a
    #       lax.fori_loop over m + p − 1 ticks: run your layer on the micro-batch
    #       you hold (stage 0 takes its own from x), lax.ppermute the result to
    #       the next stage, and let the last stage keep what comes out.
    raise NotImplementedError("pipeline_forward: TODO")


def pipeline_grads(params: dict, x: jax.Array, y: jax.Array, mesh: Mesh, n_micro: int) -> dict:
    """``jax.grad(tinymodels.loss)(params, x, y)``, sharded like ``params``.

    A GPipe forward (m + p − 1 ticks) keeps each stage's input of every
    micro-batch; a mirrored backward (m + p − 1 ticks) sends input gradients
    to the stage before with ``lax.ppermute`` and adds up each stage's
    weight gradients where they are. Nothing else crosses devices: no
    all-reduce, 2(m + p − 1) permutes of one micro-batch.
    """
    # TODO (bonus): a forward loop that keeps each stage's input per micro-batch,
    #       then a backward loop of m + p − 1 ticks: jax.vjp of your layer,
    #       gradient of the input to the stage before with lax.ppermute,
    #       weight gradients added up where they are.
    raise NotImplementedError("pipeline_grads: TODO")
