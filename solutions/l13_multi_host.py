"""Lesson 13 — many hosts: multi-controller JAX (reference solution).

On a cluster every host runs this same program, as one process with its own
devices; ``jax.distributed.initialize`` joins the processes into one set of
devices, and a mesh over all of them spans hosts. The grader starts P
processes (P = 2, 3 or 4) with D CPU devices each, joins them on loopback
before your module is imported, and runs your functions in every process at
once. Meshes are ``('host', 'local')`` of shape (P, D), row i holding process
i's devices.

Each process holds only its own rows: an array over the whole mesh is
*global*, and a process can read only its addressable shards
(``x.addressable_shards``). Every process must run the same collectives in the
same order, or one of them waits for ever.

Read the lesson first: ``course show 13``. Grade with ``course grade 13``.
"""

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

import tinymodels

ROWS = P(("host", "local"))  # rows split over both axes, host-major: process i's rows on row i


def host_local_slices(
    global_shape: tuple[int, ...], mesh: Mesh, spec: P, process_index: int
) -> tuple[slice, ...]:
    """The block of a ``global_shape`` array that process ``process_index`` holds.

    With ``NamedSharding(mesh, spec)``, each device holds one block
    (``sharding.devices_indices_map(global_shape)``); a process holds the
    union of its devices' blocks (its devices: ``d.process_index``). Return
    that union as one slice per dimension, ``slice(start, stop)`` with whole
    numbers; ``ValueError`` when the union is not one rectangular block
    (e.g. rows split over ``('local', 'host')``: process 0 then holds rows
    0, P, 2P, …).
    """
    blocks = NamedSharding(mesh, spec).devices_indices_map(tuple(global_shape))
    mine = {  # distinct (start, stop) per dimension of each of this process's devices
        tuple(s.indices(n)[:2] for s, n in zip(index, global_shape))
        for device, index in blocks.items()
        if device.process_index == process_index
    }
    if not mine:
        raise ValueError(f"process {process_index} holds no device of this mesh")
    lo = [min(b[d][0] for b in mine) for d in range(len(global_shape))]
    hi = [max(b[d][1] for b in mine) for d in range(len(global_shape))]
    box = int(np.prod([h - s for s, h in zip(lo, hi)]))
    held = sum(int(np.prod([stop - start for start, stop in b])) for b in mine)
    if held != box:  # the blocks leave holes in their bounding box: not one block
        raise ValueError(
            f"process {process_index}'s blocks under {spec} are not one block of {tuple(global_shape)}"
        )
    return tuple(slice(s, h) for s, h in zip(lo, hi))


def global_batch(local_rows: np.ndarray, mesh: Mesh) -> jax.Array:
    """The global batch from each process's own rows, sharded over ('host', 'local').

    Every process passes only its ``local_rows`` ([B/P, …], the same shape in
    every process); the result is one global array [B, …] whose rows are
    process 0's, then process 1's, …, split over the mesh's devices with
    ``P(('host', 'local'))``. No process sends its rows anywhere: each
    device gets its block from its own process
    (``jax.make_array_from_process_local_data``).
    """
    # each device's block comes from its own process's rows: nothing moves between hosts
    return jax.make_array_from_process_local_data(NamedSharding(mesh, ROWS), local_rows)


def loader_indices(
    step: int, global_batch: int, dataset_size: int, process_index: int, process_count: int
) -> np.ndarray:
    """The dataset rows process ``process_index`` loads at ``step``.

    The single-process loader reads, at step s, the global batch of rows
    ``(s·B + k) mod dataset_size`` for k = 0 … B−1 (B = ``global_batch``).
    With ``process_count`` processes, process i loads the i-th contiguous
    part of it, B/P rows: so the processes' parts, in process order, are
    exactly the single-process batch, with no overlap. Returns an int array
    of B/P indices; ``ValueError`` when P does not divide B.
    """
    if global_batch % process_count:
        raise ValueError(f"{process_count} processes cannot split a batch of {global_batch}")
    per = global_batch // process_count
    start = step * global_batch + process_index * per  # this process's part of the step's batch
    return (start + np.arange(per)) % dataset_size


def hierarchical_all_reduce(x: jax.Array, host_axis: str, local_axis: str) -> jax.Array:
    """Body under ``shard_map`` over the 2-D mesh: the sum of ``x`` over every device.

    In three steps, so that only 1/D of the data crosses hosts:
    reduce-scatter ``x`` over ``local_axis`` (within a host; each device gets
    1/D of the sum of its host, along dimension 0), all-reduce that part
    over ``host_axis`` (across hosts, one device per host in each group),
    all-gather over ``local_axis`` (within a host again). Equal to
    ``lax.psum(x, (host_axis, local_axis))``; x: [n, m] per device, n
    divisible by the local axis size.
    """
    part = lax.psum_scatter(x, local_axis, scatter_dimension=0, tiled=True)  # [n/D, m], in-host
    part = lax.psum(part, host_axis)  # 1/D of the data crosses hosts, one device per host
    # [n, m], in-host; the same on every device now (invarying), as psum's result would be
    return lax.all_gather(part, local_axis, axis=0, tiled=True, to="invarying")


def multihost_train_step(
    params: dict, local_x: np.ndarray, local_y: np.ndarray, mesh: Mesh, lr: float
) -> tuple[dict, jax.Array]:
    """One SGD step of ``tinymodels`` on the global batch, every process feeding its own rows.

    ``params`` (the same in every process, numpy), ``local_x`` and
    ``local_y`` (this process's rows, [B/P, D] each) and the (P, D) mesh.
    Returns ``(new_params, loss)``: params ``p − lr·g`` with g the gradient
    of the mean loss over all B rows, replicated on every device of every
    process, and the loss before the step (a replicated float32 scalar).
    Reduce the gradients hierarchically (within hosts, then across).
    """
    rows = NamedSharding(mesh, ROWS)
    x = jax.make_array_from_process_local_data(rows, local_x)
    y = jax.make_array_from_process_local_data(rows, local_y)
    params = jax.device_put(params, NamedSharding(mesh, P()))  # the same in every process
    n_devices = mesh.size
    local = mesh.shape["local"]

    def body(p, x_rows, y_rows):
        pv = lax.pcast(p, ("host", "local"), to="varying")  # keep each device's gradient its own
        loss, g = jax.value_and_grad(tinymodels.loss)(pv, x_rows, y_rows)
        leaves, tree = jax.tree.flatten(g)
        flat = jnp.concatenate([leaf.ravel() for leaf in leaves])  # one reduction for all
        pad = (-flat.size) % local
        flat = hierarchical_all_reduce(jnp.pad(flat, (0, pad))[:, None], "host", "local")
        flat = flat[: flat.shape[0] - pad, 0] / n_devices  # sum of local means → global mean
        sizes = np.cumsum([leaf.size for leaf in leaves])[:-1]
        parts = jnp.split(flat, sizes)
        g = jax.tree.unflatten(tree, [q.reshape(leaf.shape) for q, leaf in zip(parts, leaves)])
        new = jax.tree.map(lambda w, d: w - lr * d, p, g)
        return new, lax.pmean(loss, ("host", "local"))

    step = jax.shard_map(body, mesh=mesh, in_specs=(P(), ROWS, ROWS), out_specs=(P(), P()))
    return jax.jit(step)(params, x, y)


def allreduce_time(
    nbytes: float, hosts: int, local: int, ici: float, dcn: float, hierarchical: bool
) -> float:
    """Seconds to all-reduce ``nbytes`` over ``hosts`` × ``local`` devices.

    Lesson 3's ring model, two link classes: ``ici`` bytes/s per device
    within a host, ``dcn`` bytes/s per device across hosts. A flat ring over
    all N = hosts·local devices moves 2(N−1)/N · nbytes per device and runs
    at its slowest link (``dcn`` when hosts > 1, else ``ici``). The
    hierarchical one: reduce-scatter and all-gather within hosts,
    2(local−1)/local · nbytes over ``ici``, plus an all-reduce across hosts of
    nbytes/local, 2(hosts−1)/hosts · nbytes/local over ``dcn``.
    """
    n = hosts * local
    if not hierarchical:
        if n == 1:
            return 0.0
        return 2 * (n - 1) / n * nbytes / (dcn if hosts > 1 else ici)
    within = 2 * (local - 1) / local * nbytes / ici  # reduce-scatter + all-gather in a host
    across = 2 * (hosts - 1) / hosts * (nbytes / local) / dcn  # 1/local of the data crosses
    return within + across
