"""What each process of a lesson-13 cluster runs (:mod:`grader.sandbox.cluster`).

Imported only in the student's processes, after ``jax.distributed.initialize``:
every process of the cluster runs the same task at the same time, each with
its own devices. A task is ``task(fn, payload, salt) -> plain data`` (what
crosses between processes as plain values); ``fn`` is the student's function.
The spec declares which tasks each exercise runs (its ``tasks``). Nothing
here holds an expected value or a check: the grading worker judges what comes
back, and the compiled programs it measures it runs itself (``export``).

Meshes are ``('host', 'local')`` of shape (P, D), row i holding process i's
devices (:func:`cluster_mesh`): the worker builds the same shape from its own
devices, so an exported program's device positions mean the same there.
"""

from __future__ import annotations

import base64
from typing import Any

import numpy as np

HOST, LOCAL = "host", "local"
ROWS = (HOST, LOCAL)
"""Rows split over both axes, host-major: process i holds the i-th block of rows."""


def cluster_mesh() -> Any:
    """The (P, D) mesh of every process's devices, row i = process i's, Explicit axes."""
    import jax
    from jax.sharding import AxisType, Mesh

    devs = sorted(jax.devices(), key=lambda d: (d.process_index, d.id))
    grid = np.array(devs, dtype=object).reshape(jax.process_count(), -1)
    return Mesh(grid, (HOST, LOCAL), axis_types=(AxisType.Explicit,) * 2)


def slices(fn: Any, payload: dict, salt: int) -> dict:
    """``host_local_slices`` for every process index, asked in this process; and
    the process's own block as jax says it (its addressable devices' indices)."""
    import jax
    from jax.sharding import NamedSharding

    mesh = cluster_mesh()
    shape, spec = tuple(payload["shape"]), payload["spec"]
    answers = []
    for q in range(jax.process_count()):
        try:
            answers.append({"slices": fn(shape, mesh, spec, q)})
        except ValueError as exc:
            answers.append({"raised": "ValueError", "message": str(exc)[:500]})
    held = NamedSharding(mesh, spec).addressable_devices_indices_map(shape)
    return {"answers": answers, "process": jax.process_index(),
            "addressable": [tuple(ix) for ix in held.values()]}  # fmt: skip


def shards_of(value: Any) -> dict:
    """A jax array as this process holds it: global shape, dtype, sharding, and
    each addressable shard (device id, index, data); anything else by its type."""
    import jax
    from jax.sharding import NamedSharding

    if not isinstance(value, jax.Array):
        return {"type": type(value).__name__}
    sharding = value.sharding
    return {
        "type": "Array",
        "shape": tuple(value.shape),
        "dtype": np.dtype(value.dtype).name,
        "spec": tuple(sharding.spec) if isinstance(sharding, NamedSharding) else None,
        "shards": [
            (int(s.device.id), tuple(s.index), np.asarray(s.data)) for s in value.addressable_shards
        ],  # fmt: skip
        "local_devices": [int(d.id) for d in jax.local_devices()],
        "process": jax.process_index(),
    }


DEVICE_PUT_DIFFERS = "passed to device_put is not the same on each process"
"""JAX's assertion when processes device_put different values (each its own rows):
its message prints both values whole, which :func:`_ShortErrors` leaves out."""


class _ShortErrors:
    """Re-raise JAX's device_put assertion with its values left out (the same
    exception class and traceback; the values are this process's rows)."""

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: Any, exc: Any, tb: Any) -> bool:
        if isinstance(exc, AssertionError) and DEVICE_PUT_DIFFERS in str(exc):
            head = str(exc).split(". Expected:")[0]
            raise AssertionError(
                f"{head} (the values, printed whole by JAX, are left out here)"
            ).with_traceback(tb) from None
        return False


def _unchecked(sent: list[np.ndarray]) -> Any:
    """For the call: jax's check that a host value ``jax.device_put`` places on
    devices of every process is the same in every process (``multihost_utils.
    assert_equal`` called from jax's own device_put) does nothing for a value equal
    to one of ``sent`` (the params the grader sent every process alike: the check
    has nothing to find there). It gathers the value from every process, bytes the
    grader measures between processes: the step's params, about P times their
    size (12.8 KB of 19.9 KB measured for the solution's step at P = 2, D = 4).
    Any other value (a process's own rows) is checked as jax checks it, and called
    from anywhere else (the student's own ``assert_equal``, ``sync_global_devices``)
    it runs. Device_put's call is known by what jax asks it to say on failure
    (:data:`DEVICE_PUT_DIFFERS`, the words :class:`_ShortErrors` already reads) from
    a frame of jax's own, not by the name of jax's private function. Undone after."""
    import contextlib
    import sys

    @contextlib.contextmanager
    def patched() -> Any:
        from jax.experimental import multihost_utils

        saved = multihost_utils.assert_equal

        def assert_equal(*args: Any, **kwargs: Any) -> Any:
            caller = sys._getframe(1)
            said = str(kwargs.get("fail_message", ""))
            if DEVICE_PUT_DIFFERS in said and _jax_own_frame(caller) and args:
                with contextlib.suppress(Exception):
                    value = np.asarray(args[0])
                    if any(value.shape == v.shape and np.array_equal(value, v) for v in sent):
                        return None
            return saved(*args, **kwargs)

        multihost_utils.assert_equal = assert_equal
        try:
            yield
        finally:
            multihost_utils.assert_equal = saved

    return patched()


def _jax_own_frame(frame: Any) -> bool:
    return str(frame.f_globals.get("__name__", "")).split(".")[0] in ("jax", "jaxlib")


def batch(fn: Any, payload: dict, salt: int) -> dict:
    """``global_batch`` on this process's own rows (sent to it alone)."""
    with _ShortErrors():
        return shards_of(fn(payload["rows"], cluster_mesh()))


def _allreduce_program(fn: Any, mesh: Any) -> Any:
    import jax
    from jax.sharding import PartitionSpec as P

    def body(x: Any) -> Any:
        return fn(x, HOST, LOCAL)

    return jax.jit(jax.shard_map(body, mesh=mesh, in_specs=P(ROWS), out_specs=P(ROWS)))


def _decoy(payload: dict, salt: int, mesh: Any) -> Any:
    """This process's rows of decoy data (its own salt), as the global array."""
    import jax
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P

    rows, cols = payload["shape"]
    local = mesh.devices.shape[1]
    rng = np.random.default_rng([salt, jax.process_index()])
    data = rng.integers(-4, 5, size=(rows * local, cols)).astype(payload["dtype"])
    return jax.make_array_from_process_local_data(NamedSharding(mesh, P(ROWS)), data)


def allreduce_export(fn: Any, payload: dict, salt: int) -> dict:
    """Trace ``hierarchical_all_reduce`` under shard_map over the cluster's mesh
    and export it (nothing runs: processes that traced different programs must
    not be made to run them, they would wait for each other for ever)."""
    import jax

    mesh = cluster_mesh()
    x = _decoy(payload, salt, mesh)
    program = _allreduce_program(fn, mesh)
    spec = jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=x.sharding)
    exported = jax.export.export(program, platforms=["cpu"])(spec)
    return {"blob": base64.b64encode(bytes(exported.serialize())).decode("ascii")}


def allreduce_run(fn: Any, payload: dict, salt: int) -> dict:
    """Run the same program here, on decoy data, across the processes: it must
    come back in every process (a program that deadlocks across processes does not)."""
    import jax

    mesh = cluster_mesh()
    out = _allreduce_program(fn, mesh)(_decoy(payload, salt, mesh))
    jax.block_until_ready(out)
    return {"shards": len(out.addressable_shards)}


MAX_PROGRAMS = 4
"""At most this many programs are exported from one call (the first ones)."""


def _global(x: Any) -> bool:
    """A concrete jax array spanning processes (not a tracer: a jit inside a
    traced function is part of the outer program)."""
    import jax

    return (isinstance(x, jax.Array) and not isinstance(x, jax.core.Tracer)
            and not x.is_fully_addressable)  # fmt: skip


def _global_call(args: tuple, kwargs: dict) -> bool:
    import jax

    return any(_global(v) for v in jax.tree.leaves((args, kwargs)))


def _jax_own(fun: Any) -> bool:
    module = str(getattr(fun, "__module__", None) or "")
    return module.split(".")[0] in ("jax", "jaxlib")


class _Recorder:
    """What ``multihost_train_step`` runs on global arrays, exported as it is
    called: every ``jax.jit``-ed function (and every ``shard_map`` called
    outside one) whose arguments include a global array is called as the
    student wrote it, then exported with ``jax.export`` at those arguments'
    shapes, dtypes and shardings (public API only, the same on jax 0.10 and
    0.12). Nothing here changes what runs; jax's own helpers are not wrapped."""

    def __init__(self, exporting: bool = True) -> None:
        self.exporting = exporting
        """False: calls are counted and noted, nothing is exported (the worker
        replays process 0's programs only; exporting costs a second lowering)."""
        self.blobs: list[str] = []
        self.notes: list[str] = []
        self.calls = 0
        self.outputs: list[set[int]] = []
        """For each exported program, the ids of the arrays that call returned."""
        self.closed = False
        """Set when the call is over (a wrapper the student kept records nothing later)."""
        self.round: int | None = None
        """The task's number, the same in every process: each global call's program is
        compared across processes before it runs (:func:`_agree`); None: not compared."""
        self.compared = 0

    def record(self, jitted: Any, args: tuple, kwargs: dict, out: Any = None) -> None:
        import jax

        if self.closed or not _global_call(args, kwargs):
            return
        self.calls += 1
        if kwargs:
            self.notes.append(f"a call with keyword arguments ({', '.join(sorted(kwargs))}): not exported")  # fmt: skip
            return
        if len(self.blobs) >= MAX_PROGRAMS or not self.exporting:
            return
        try:  # at the arguments themselves: a jitted function's trace keeps its static ones
            exported = jax.export.export(jitted, platforms=["cpu"])(*args)
            self.blobs.append(base64.b64encode(bytes(exported.serialize())).decode("ascii"))
            self.outputs.append({id(v) for v in jax.tree.leaves(out)})
        except Exception as exc:  # what it was cannot be exported: said, not fatal
            self.notes.append(f"{type(exc).__name__}: {str(exc)[:200]}")

    def jit(self, original: Any) -> Any:
        recorder = self

        def jit(fun: Any = None, /, **options: Any) -> Any:
            if fun is None:
                return lambda f: jit(f, **options)
            if _jax_own(fun):  # jax's own helpers (device_put's checks across processes)
                return original(fun, **options)
            return _Wrapped(original(fun, **options), recorder)

        return jit

    def shard_map(self, original: Any) -> Any:
        recorder = self

        def shard_map(f: Any = None, /, **options: Any) -> Any:
            if f is None:
                return lambda g: shard_map(g, **options)
            import jax

            mapped = original(f, **options)
            if _jax_own(f):
                return mapped
            return _Wrapped(mapped, recorder, jitted=jax.jit(mapped))

        return shard_map


class DivergentPrograms(RuntimeError):
    """The processes traced different programs for the same call: run, they would
    wait for each other's collectives until the collectives' deadline."""


AGREE_WAIT_MS = 30_000
"""How long a process waits for the others' fingerprints of a call before it
runs the call unchecked (a process that never makes the call is not named here:
the cluster's own limit names it)."""

_rounds = iter(range(1 << 62))
"""Each ``train`` task's number, the same in every process (every process runs
every task, in the same order): the fingerprints' keys of one call never meet another's."""


_AGREED: set[str] = set()
"""Hashes of programs every process was found to trace alike: compared once per
process's life, so a repeated call (the grader's measured second call of a step)
sends nothing through the coordination service."""


def fingerprint(module: Any) -> str:
    """A hash of a lowered program (its ``ir.Module``, read through jaxlib's MLIR
    bindings as :mod:`grader.measure.stablehlo` reads programs: no text printed or
    parsed): every operation in walk order, nested regions included, by its name,
    its results' types and its attributes — a constant's value left out (the
    ``value`` of an op named ``*.constant``), and locations, which are no
    attributes, never read. Processes that differ only in a constant's values
    (their own rows closed over, say) run the same collectives and hash alike."""
    import hashlib

    from jaxlib.mlir import ir

    digest = hashlib.sha256()

    def visit(op: Any) -> Any:
        digest.update(op.name.encode() + b"(")
        for result in op.results:
            digest.update(str(result.type).encode() + b",")
        constant = op.name.endswith(".constant")
        attributes = op.attributes
        for named in (attributes[i] for i in range(len(attributes))):  # (name, value) pairs
            if not (constant and named.name == "value"):
                digest.update(f"{named.name}={named.attr};".encode())
        digest.update(b")")
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    return digest.hexdigest()


def _agree(jitted: Any, args: tuple, kwargs: dict, key: str) -> None:
    """Raise :class:`DivergentPrograms` when this call's program, as traced here,
    is not every other process's (compared through the coordination service's
    key-value store by its :func:`fingerprint`, before anything runs: the branch
    on ``jax.process_index()`` inside a step is named at once instead of after the
    collectives' deadline). The lowering is jax's own for the call that follows
    (``jit(f).lower`` and the call share jax's cache of lowered programs): hashing
    it costs a walk of the module. Says nothing when it cannot compare."""
    import jax

    try:
        from jax._src import distributed

        client = distributed.global_state.client
        module = jitted.lower(*args, **kwargs).compiler_ir("stablehlo")
    except Exception:  # not lowerable here (the call itself will say why), or no client
        return
    if client is None:
        return
    try:
        mine = fingerprint(module)
    except Exception:  # a form the bindings cannot walk: run it unchecked
        return
    if mine in _AGREED:  # compared before: a call repeated moves nothing more between processes
        return
    me, count = jax.process_index(), jax.process_count()
    try:
        client.key_value_set(f"{key}/{me}", mine)
        theirs = [client.blocking_key_value_get(f"{key}/{q}", AGREE_WAIT_MS) for q in range(count)]
    except Exception:  # a process that never makes the call: run it unchecked
        return
    differ = [q for q, h in enumerate(theirs) if h != theirs[0]]
    if differ:
        raise DivergentPrograms(
            f"the processes traced different programs for this jitted call (process "
            f"{differ[0]}'s is not process 0's): run, each would wait for ever for collectives "
            "the other never starts, so it was not run"
        )
    _AGREED.add(mine)


_ACTIVE: list[_Recorder] = []
"""The recorder of the call under way (none between calls): a wrapped function
made in one call and kept (``functools.lru_cache``, a dict) records into the
call it runs in, never into the closed one it was made in."""


class _Wrapped:
    """A jitted (or shard_mapped) function that records its global calls."""

    def __init__(self, fn: Any, recorder: _Recorder, jitted: Any = None) -> None:
        self._fn, self._recorder = fn, recorder
        self._jitted = fn if jitted is None else jitted

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        recorder = _ACTIVE[-1] if _ACTIVE else self._recorder
        if recorder.round is not None and not recorder.closed and _global_call(args, kwargs):
            recorder.compared += 1
            _agree(self._jitted, args, kwargs, f"course-l13/{recorder.round}/{recorder.compared}")
        out = self._fn(*args, **kwargs)  # first: the export after it reuses its trace (½ the time)
        try:
            recorder.record(self._jitted, args, kwargs, out)
        except Exception as exc:  # never the student's call's fault: said, not raised
            recorder.notes.append(f"{type(exc).__name__}: {str(exc)[:200]}")
        return out

    def __getattr__(self, name: str) -> Any:
        return getattr(self._fn, name)


def _recording(fn: Any, recorder: _Recorder) -> Any:
    """Patch ``jax.jit``/``jax.shard_map`` and the module's own names for them
    (and its module-level jitted functions) for the call; undone after."""
    import contextlib
    import inspect

    import jax

    @contextlib.contextmanager
    def patched() -> Any:
        jit, smap = jax.jit, jax.shard_map
        pjit_type = type(jit(lambda: 0))
        names = getattr(inspect.unwrap(fn), "__globals__", {})  # the student's module's names
        saved = dict(names)
        _ACTIVE.append(recorder)
        try:
            jax.jit, jax.shard_map = recorder.jit(jit), recorder.shard_map(smap)
            for k, v in saved.items():
                if v is jit:
                    names[k] = jax.jit
                elif v is smap:
                    names[k] = jax.shard_map
                elif isinstance(v, pjit_type):
                    names[k] = _Wrapped(v, recorder)
            yield
        finally:
            _ACTIVE.remove(recorder)
            recorder.closed = True
            jax.jit, jax.shard_map = jit, smap
            for k in saved:
                names[k] = saved[k]

    return patched()


def train(fn: Any, payload: dict, salt: int) -> dict:
    """``multihost_train_step`` on this process's own rows; what it returns as
    this process holds it (every leaf's addressable shards), and the programs it
    ran on global arrays, exported where ``payload["export"]`` says so (process
    0: :class:`_Recorder`; the worker replays them on its own devices and reads
    their collectives there; the other processes count their calls only)."""
    import jax

    params = {k: np.asarray(v) for k, v in payload["params"].items()}
    recorder = _Recorder(exporting=bool(payload.get("export", True)))
    recorder.round = next(_rounds)
    with _recording(fn, recorder), _ShortErrors(), _unchecked(list(params.values())):
        out = fn(params, payload["x"], payload["y"], cluster_mesh(), float(payload["lr"]))
    returned = {id(v) for v in jax.tree.leaves(out)}
    by = [k for k, ids in enumerate(recorder.outputs) if returned and returned <= ids]
    programs = {"programs": recorder.blobs, "calls": recorder.calls, "notes": recorder.notes,
                "returned_by": by[-1] if by else None}  # fmt: skip
    if not isinstance(out, tuple | list) or len(out) != 2:
        return {"returned": type(out).__name__, **programs}
    new, loss = out
    if not isinstance(new, dict):
        return {"returned": f"({type(new).__name__}, …)", **programs}
    jax.block_until_ready((new, loss))
    return {"params": {str(k): shards_of(v) for k, v in new.items()}, "loss": shards_of(loss),
            **programs}  # fmt: skip


def replay(fn: Any, payload: dict, salt: int) -> dict:
    """Run an exported program (one the step ran on global arrays, as process 0
    recorded it) here, in every process, on inputs placed without any exchange
    between processes (zeros of its input shapes, at its input shardings): what
    crosses between processes while it runs is what that program moves, which
    the worker measures around this task (:attr:`grader.sandbox.cluster.Cluster.traffic`).
    ``fn`` (the student's function) is not called."""
    import jax

    exported = jax.export.deserialize(bytearray(base64.b64decode(payload["blob"])))
    mesh = cluster_mesh()
    args = []
    for aval, sharding in zip(exported.in_avals, exported.in_shardings_jax(mesh)):
        if sharding is None:
            from jax.sharding import NamedSharding
            from jax.sharding import PartitionSpec as P

            sharding = NamedSharding(mesh, P())
        zeros = np.zeros(aval.shape, aval.dtype)
        args.append(jax.make_array_from_callback(aval.shape, sharding, lambda ix, z=zeros: z[ix]))
    args_tree, kwargs = jax.tree.unflatten(exported.in_tree, args)
    jax.block_until_ready(exported.call(*args_tree, **kwargs))
    return {"ran": True}


replay.measures_alone = True  # type: ignore[attr-defined]
"""The worker runs it in the grader's own clusters (``Cluster.measure_alone``):
they are started ahead, with the exercise's clusters."""
