"""Realistic wrong implementations for lesson 13 (see tests/mistakes/__init__.py).

One per way of getting multi-controller code wrong that the lesson warns
about: a flat psum over both axes, the hierarchy in the wrong order, a
process-dependent branch (the processes trace different programs), every
process loading the whole batch or the same rows, rows in the wrong process
order, a global array read whole in one process, a gradient not reduced
across hosts, and the time model's links mixed up.
"""

from __future__ import annotations

from tests.mistakes import Mistake

L13 = "l13_multi_host"


def _edit(id: str, exercise: str, old: str, new: str, says: tuple[str, ...], check: str | None = "values", status: str = "failed", never: tuple[str, ...] = ()) -> Mistake:  # fmt: skip
    return Mistake(id=id, module=L13, exercise=exercise, status=status, check=check,
                   says=says, never=never, patch=((old, new),))  # fmt: skip


def _code(id: str, exercise: str, code: str, says: tuple[str, ...], check: str | None, status: str = "failed") -> Mistake:  # fmt: skip
    return Mistake(id=id, module=L13, exercise=exercise, status=status, check=check,
                   says=says, code=code)  # fmt: skip


STEP_HEAD = """
def _flatten(g):
    leaves, tree = jax.tree.flatten(g)
    sizes = [leaf.size for leaf in leaves]

    def unravel(flat):
        parts = jnp.split(flat, np.cumsum(sizes)[:-1])
        return jax.tree.unflatten(tree, [q.reshape(leaf.shape) for q, leaf in zip(parts, leaves)])

    return jnp.concatenate([leaf.ravel() for leaf in leaves]), unravel


def _hier(flat, local):  # the solution's padded hierarchical all-reduce of a flat vector
    pad = (-flat.size) % local
    out = hierarchical_all_reduce(jnp.pad(flat, (0, pad))[:, None], "host", "local")
    return out[: out.shape[0] - pad, 0]


def multihost_train_step(params, local_x, local_y, mesh, lr):
    rows = NamedSharding(mesh, ROWS)
    x = jax.make_array_from_process_local_data(rows, local_x)
    y = jax.make_array_from_process_local_data(rows, local_y)
    params = jax.device_put(params, NamedSharding(mesh, P()))
    local = mesh.shape["local"]
"""
RS = "part = lax.psum_scatter(x, local_axis, scatter_dimension=0, tiled=True)"

MISTAKES: list[Mistake] = [
    # ---------------------------------------------------------------- host_local_slices
    _edit(
        "l13-slices-every-device",
        "host_local_slices",
        "if device.process_index == process_index",
        "if device is not None",
        ("the whole array", "its own devices"),
        check="block",
    ),
    _edit(
        "l13-loader-asserts-the-split",
        "loader_indices",
        "    if global_batch % process_count:\n        raise ValueError(",
        "    if global_batch % process_count:\n        raise AssertionError(",
        ("refused the batch, but with AssertionError", "3 does not divide the batch of 10"),
        check="rows",
        never=("did not refuse",),
    ),
    _edit(
        "l13-loader-drops-the-remainder",
        "loader_indices",
        "    if global_batch % process_count:\n        raise ValueError(",
        "    if False:\n        raise ValueError(",
        ("did not refuse the batch", "its 3 processes hold 3 + 3 + 3 = 9 rows of the 10"),
        check="rows",
        never=("but with",),
    ),
    _edit(
        "l13-slices-holes-not-refused",
        "host_local_slices",
        "if held != box:",
        "if False:",
        ("leave holes", "raise ValueError"),
        check="block",
    ),
    # ---------------------------------------------------------------- global_batch
    _code(
        "l13-batch-wrong-process-order",
        "global_batch",
        """
def global_batch(local_rows, mesh):
    # the mesh's rows upside down: process i's rows land where process P-1-i's belong
    flipped = Mesh(mesh.devices[::-1], mesh.axis_names, axis_types=mesh.axis_types)
    return jax.make_array_from_process_local_data(NamedSharding(flipped, ROWS), local_rows)
""",
        ("wrong process order",),
        check="placement",
    ),
    _code(
        "l13-batch-read-whole-global-array",
        "global_batch",
        """
def global_batch(local_rows, mesh):
    out = jax.make_array_from_process_local_data(NamedSharding(mesh, ROWS), local_rows)
    assert np.isfinite(np.asarray(out)).all()  # reads every process's rows: not possible
    return out
""",
        ("read a global array whole", "addressable_shards"),
        check=None,
        status="error",
    ),
    _code(
        "l13-batch-device-put-local-rows",
        "global_batch",
        """
def global_batch(local_rows, mesh):
    return jax.device_put(local_rows, NamedSharding(mesh, ROWS))  # this process's rows as the whole
""",
        (
            "make_array_from_process_local_data",
            "local rows",
            "values, printed whole by JAX, are left out",
        ),
        check=None,
        status="error",
    ),
    # ---------------------------------------------------------------- loader_indices
    _edit(
        "l13-loader-whole-batch",
        "loader_indices",
        "return (start + np.arange(per)) % dataset_size",
        "return (step * global_batch + np.arange(global_batch)) % dataset_size",
        ("every process loads the whole global batch",),
        check="rows",
    ),
    _edit(
        "l13-loader-same-rows",
        "loader_indices",
        "start = step * global_batch + process_index * per",
        "start = step * global_batch",
        ("every process loads the same rows", "process index"),
        check="rows",
    ),
    _edit(
        "l13-loader-wrong-process-order",
        "loader_indices",
        "start = step * global_batch + process_index * per",
        "start = step * global_batch + (process_count - 1 - process_index) * per",
        ("not in process order",),
        check="rows",
    ),
    _edit(
        "l13-loader-stride-of-one-process",
        "loader_indices",
        "start = step * global_batch + process_index * per",
        "start = step * per + process_index * per",
        ("each step moves on by the global batch",),
        check="rows",
    ),
    _edit(
        "l13-loader-no-modulo",
        "loader_indices",
        "return (start + np.arange(per)) % dataset_size",
        "return start + np.arange(per)",
        ("past the dataset's", "wraps around"),
        check="rows",
    ),
    # ---------------------------------------------------------------- hierarchical_all_reduce
    _code(
        "l13-allreduce-flat-psum",
        "hierarchical_all_reduce",
        """
def hierarchical_all_reduce(x, host_axis, local_axis):
    return lax.psum(x, (host_axis, local_axis))  # right values, one ring over every device
""",
        ("flat psum over both axes", "2(PD−1)/(PD)", "2(P−1)/P·|x|/D"),
        check="groups",
    ),
    _code(
        "l13-allreduce-wrong-order",
        "hierarchical_all_reduce",
        """
def hierarchical_all_reduce(x, host_axis, local_axis):
    whole = lax.psum(x, local_axis)  # the whole x summed within the host first
    part = lax.psum_scatter(whole, host_axis, scatter_dimension=0, tiled=True)
    return lax.all_gather(part, host_axis, axis=0, tiled=True, to="invarying")
""",
        ("wrong order", "|x|/D"),
        check="groups",
    ),
    _code(
        "l13-allreduce-branch-on-process",
        "hierarchical_all_reduce",
        """
def hierarchical_all_reduce(x, host_axis, local_axis):
    part = lax.psum_scatter(x, local_axis, scatter_dimension=0, tiled=True)
    if jax.process_index() == 0:  # only process 0 runs this all-reduce: the others never meet it
        part = lax.psum(part, host_axis)
    return lax.all_gather(part, local_axis, axis=0, tiled=True, to="invarying")
""",
        ("traced different programs", "jax.process_index()"),
        check="returns",
    ),
    _code(
        "l13-allreduce-within-hosts-only",
        "hierarchical_all_reduce",
        """
def hierarchical_all_reduce(x, host_axis, local_axis):
    return lax.psum(x, local_axis)  # each host's sum: never across hosts
""",
        ("this host's devices only",),
        check="values",
    ),
    _edit(
        "l13-allreduce-untiled-gather",
        "hierarchical_all_reduce",
        'return lax.all_gather(part, local_axis, axis=0, tiled=True, to="invarying")',
        'return lax.all_gather(part, local_axis, axis=0, to="invarying")',
        ("stacked as", "tiled=True"),
    ),
    _edit(
        "l13-allreduce-pmean-across-hosts",
        "hierarchical_all_reduce",
        "part = lax.psum(part, host_axis)",
        "part = lax.pmean(part, host_axis)",
        ("the sum divided by P", "lax.pmean over host_axis"),
    ),
    # ---------------------------------------------------------------- multihost_train_step
    _code(
        "l13-train-not-reduced-across-hosts",
        "multihost_train_step",
        """
def multihost_train_step(params, local_x, local_y, mesh, lr):
    rows = NamedSharding(mesh, ROWS)
    x = jax.make_array_from_process_local_data(rows, local_x)
    y = jax.make_array_from_process_local_data(rows, local_y)
    params = jax.device_put(params, NamedSharding(mesh, P()))

    def body(p, xr, yr):
        loss, g = jax.value_and_grad(tinymodels.loss)(p, xr, yr)
        g = jax.tree.map(lambda v: lax.pmean(v, "local"), g)  # within the host only
        return jax.tree.map(lambda w, d: w - lr * d, p, g), lax.pmean(loss, "local")

    step = jax.shard_map(body, mesh=mesh, in_specs=(P(), ROWS, ROWS), out_specs=(P(), P()),
                         check_vma=False)
    return jax.jit(step)(params, x, y)
""",
        ("other", "reduced across hosts"),
        check="same everywhere",
    ),
    _code(
        "l13-train-flat-psum",
        "multihost_train_step",
        """
def multihost_train_step(params, local_x, local_y, mesh, lr):
    rows = NamedSharding(mesh, ROWS)
    x = jax.make_array_from_process_local_data(rows, local_x)
    y = jax.make_array_from_process_local_data(rows, local_y)
    params = jax.device_put(params, NamedSharding(mesh, P()))

    def body(p, xr, yr):
        pv = lax.pcast(p, ("host", "local"), to="varying")
        loss, g = jax.value_and_grad(tinymodels.loss)(pv, xr, yr)
        g = jax.tree.map(lambda v: lax.pmean(v, ("host", "local")), g)  # one ring over every device
        return jax.tree.map(lambda w, d: w - lr * d, p, g), lax.pmean(loss, ("host", "local"))

    step = jax.shard_map(body, mesh=mesh, in_specs=(P(), ROWS, ROWS), out_specs=(P(), P()))
    return jax.jit(step)(params, x, y)
""",
        ("flat psum over both axes", "2(PD−1)/(PD)·|g|", "2(P−1)/P·|g|/D"),
        check="hierarchical",
    ),
    _code(
        "l13-train-eager",
        "multihost_train_step",
        """
def multihost_train_step(params, local_x, local_y, mesh, lr):
    rows = NamedSharding(mesh, ROWS)
    x = jax.make_array_from_process_local_data(rows, local_x)
    y = jax.make_array_from_process_local_data(rows, local_y)
    params = jax.device_put(params, NamedSharding(mesh, P()))
    with jax.set_mesh(mesh):  # eager, op by op: no program the grader can measure
        loss, g = jax.value_and_grad(tinymodels.loss)(params, x, y)
        return jax.tree.map(lambda w, d: w - lr * d, params, g), loss
""",
        ("ran no jitted program on global arrays", "cannot be measured"),
        check="hierarchical",
    ),
    _code(
        "l13-train-branch-on-process",
        "multihost_train_step",
        STEP_HEAD
        + """
    def body(p, xr, yr):
        pv = lax.pcast(p, ("host", "local"), to="varying")
        loss, g = jax.value_and_grad(tinymodels.loss)(pv, xr, yr)
        flat, unravel = _flatten(g)
        if jax.process_index() == 0:  # only process 0 traces the reduction: the others never meet it
            flat = _hier(flat, local)
        return jax.tree.map(lambda w, d: w - lr * d, p, unravel(flat / mesh.size)), lax.pmean(loss, ("host", "local"))

    step = jax.shard_map(body, mesh=mesh, in_specs=(P(), ROWS, ROWS), out_specs=(P(), P()),
                         check_vma=False)
    return jax.jit(step)(params, x, y)
""",
        ("traced different programs", "jax.process_index()"),
        check=None,
        status="error",
    ),
    _code(
        "l13-train-params-never-varying",
        "multihost_train_step",
        STEP_HEAD
        + """
    def body(p, xr, yr):  # p stays invariant: autodiff sums its gradient over every device already
        loss, g = jax.value_and_grad(tinymodels.loss)(p, xr, yr)
        flat, unravel = _flatten(g)
        flat = _hier(flat, local) / mesh.size  # ...and this sums it again
        return jax.tree.map(lambda w, d: w - lr * d, p, unravel(flat)), lax.pmean(loss, ("host", "local"))

    step = jax.shard_map(body, mesh=mesh, in_specs=(P(), ROWS, ROWS), out_specs=(P(), P()))
    return jax.jit(step)(params, x, y)
""",
        ("sums the gradient twice", "to='varying'"),
        check="values",
    ),
    _code(
        "l13-train-reshape-without-padding",
        "multihost_train_step",
        STEP_HEAD
        + """
    def body(p, xr, yr):
        pv = lax.pcast(p, ("host", "local"), to="varying")
        loss, g = jax.value_and_grad(tinymodels.loss)(pv, xr, yr)
        leaves, tree = jax.tree.flatten(g)
        flat = jnp.concatenate([leaf.ravel() for leaf in leaves])
        flat = hierarchical_all_reduce(flat.reshape(local, -1), "host", "local").ravel()  # D | n?
        flat = flat / mesh.size
        parts = jnp.split(flat, np.cumsum([leaf.size for leaf in leaves])[:-1])
        g = jax.tree.unflatten(tree, [q.reshape(leaf.shape) for q, leaf in zip(parts, leaves)])
        return jax.tree.map(lambda w, d: w - lr * d, p, g), lax.pmean(loss, ("host", "local"))

    step = jax.shard_map(body, mesh=mesh, in_specs=(P(), ROWS, ROWS), out_specs=(P(), P()))
    return jax.jit(step)(params, x, y)
""",
        ("D = 4 (devices per host) does not divide", "Pad it to a multiple of D"),
        check=None,
        status="error",
    ),
    _code(
        "l13-train-loss-not-reduced",
        "multihost_train_step",
        STEP_HEAD
        + """
    def body(p, xr, yr):
        pv = lax.pcast(p, ("host", "local"), to="varying")
        loss, g = jax.value_and_grad(tinymodels.loss)(pv, xr, yr)
        flat, unravel = _flatten(g)
        new = jax.tree.map(lambda w, d: w - lr * d, p, unravel(_hier(flat, local) / mesh.size))
        return new, loss  # each device's own rows' loss

    step = jax.shard_map(body, mesh=mesh, in_specs=(P(), ROWS, ROWS), out_specs=(P(), P()),
                         check_vma=False)
    return jax.jit(step)(params, x, y)
""",
        ("the params agree everywhere", "lax.pmean(loss"),
        check="same everywhere",
    ),
    _code(
        "l13-train-pmean-across-hosts",
        "multihost_train_step",
        STEP_HEAD
        + """
    def body(p, xr, yr):
        pv = lax.pcast(p, ("host", "local"), to="varying")
        loss, g = jax.value_and_grad(tinymodels.loss)(pv, xr, yr)
        flat, unravel = _flatten(g)
        pad = (-flat.size) % local
        part = lax.psum_scatter(jnp.pad(flat, (0, pad))[:, None], "local", scatter_dimension=0, tiled=True)
        part = lax.pmean(part, "host")  # a mean across hosts where the sum belongs
        out = lax.all_gather(part, "local", axis=0, tiled=True, to="invarying")[: flat.size, 0]
        new = jax.tree.map(lambda w, d: w - lr * d, p, unravel(out / mesh.size))
        return new, lax.pmean(loss, ("host", "local"))

    step = jax.shard_map(body, mesh=mesh, in_specs=(P(), ROWS, ROWS), out_specs=(P(), P()))
    return jax.jit(step)(params, x, y)
""",
        (
            "exactly 1/P = 1/2 of the single-process step's",
            "a mean over 'host' where the sum belongs",
        ),
        check="values",
    ),
    # ---------------------------------------------------------------- allreduce_time
    _edit(
        "l13-time-across-on-all-bytes",
        "allreduce_time",
        "across = 2 * (hosts - 1) / hosts * (nbytes / local) / dcn",
        "across = 2 * (hosts - 1) / hosts * nbytes / dcn",
        ("nbytes/local",),
    ),
    _edit(
        "l13-time-flat-at-ici",
        "allreduce_time",
        "return 2 * (n - 1) / n * nbytes / (dcn if hosts > 1 else ici)",
        "return 2 * (n - 1) / n * nbytes / ici",
        ("slowest link",),
    ),
    _edit(
        "l13-time-flat-one-phase",
        "allreduce_time",
        "return 2 * (n - 1) / n * nbytes / (dcn if hosts > 1 else ici)",
        "return (n - 1) / n * nbytes / (dcn if hosts > 1 else ici)",
        ("a reduce-scatter then an all-gather", "2(N−1)/N in all"),
    ),
    _edit(
        "l13-time-within-one-phase",
        "allreduce_time",
        "within = 2 * (local - 1) / local * nbytes / ici",
        "within = (local - 1) / local * nbytes / ici",
        ("2(local−1)/local in all",),
    ),
    Mistake(  # drafts/heldback5: process i offset by i·P, the process count, not i·B/P
        id="l13-loader-offset-by-process-count",
        module="l13_multi_host",
        exercise="loader_indices",
        status="failed",
        check="rows",
        says=("a step of 2, the process count P, where B/P = 4",),
        patch=(
            (
                "start = step * global_batch + process_index * per",
                "start = step * global_batch + process_index * process_count",
            ),
        ),
    ),
    Mistake(  # its neighbour: a step of B/P − 1, no quantity of the example: not "process count"
        id="l13-loader-offset-one-row-short",
        module="l13_multi_host",
        exercise="loader_indices",
        status="failed",
        check="rows",
        says=("a step of 3 where B/P = 4",),
        never=("process count",),
        patch=(
            (
                "start = step * global_batch + process_index * per",
                "start = step * global_batch + process_index * (per - 1)",
            ),
        ),
    ),
    Mistake(  # drafts/heldback7: the first device's block, not the union; message only before
        id="l13-slices-of-one-device-only",
        module="l13_multi_host",
        exercise="host_local_slices",
        status="failed",
        check="block",
        says=("That is one device's block, [0:1, 0:8], of the 4",),
        code="""
def host_local_slices(
    global_shape: tuple[int, ...], mesh: Mesh, spec: P, process_index: int
) -> tuple[slice, ...]:
    blocks = NamedSharding(mesh, spec).devices_indices_map(tuple(global_shape))
    for device, index in blocks.items():
        if device.process_index == process_index:  # this process's device holds this block
            return tuple(slice(*s.indices(n)[:2]) for s, n in zip(index, global_shape))
    raise ValueError(f"process {process_index} holds no device of this mesh")
""",
    ),
]
