"""The student's process: ``python -m grader.sandbox.student --fds R W``.

The only process that imports the student's module. It holds no checks, no
expected values, no progress file and no key to the ``course`` process's
events channel; the grading process (:mod:`grader.sandbox.isolation`) asks it, one
JSON line at a time on fd R, and reads one answer per question on fd W:

``load``    import the module; answer which names in it are callable.
``export``  run the exercise's spec once on an example, with data drawn from a
            random salt of this process's own (decoy data); each program the
            spec hands to ``rt.compile_and_run`` (the :class:`Exporting`
            runtime) is traced and sent at once, exported (:mod:`jax.export`,
            shardings included), one line per program (``"part": k``) ahead of
            the answer; there ``compile_and_run`` returns decoy outputs of the
            traced shapes, dtypes and shardings, so a later program may take
            an earlier one's output. The answer says how many programs there
            were and what the run raised. The grader reads the programs
            itself, not anything said about them here, and replays them in
            order on its own data. Nothing is compiled or run here.
``call``    call the student's function on the arguments sent (exercises
            that are plain Python, or that place arrays eagerly) and answer
            its result and its arguments as they are afterwards.
``task``    (cluster mode only) run one of the lesson's process-side functions
            (``module:name``, one the exercise's spec declares: its ``tasks``)
            on the student's function and the payload sent; answer its plain result.

In cluster mode (``--cluster ADDRESS P I D``, started by
:mod:`grader.sandbox.cluster`) the process is process I of P, with D CPU
devices, and joins the others with ``jax.distributed.initialize`` before it
says it is ready: before the student's module is imported.

Host callbacks (``jax.pure_callback``, ``io_callback``) do not export, so a
program cannot reach back into this process while the grader runs it;
``jax.debug.print`` and ``jax.debug.callback`` are turned into no-ops here
for the same reason (their output would come from the decoy data anyway).
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import json
import os
import secrets
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NoReturn

import numpy as np

from grader.runtime import Runtime
from grader.sandbox import wire
from grader.sandbox.channel import Channel
from grader.sandbox.lifeline import watch_parent
from grader.spec import LESSONS, Example, Trial


class Exporting(Runtime):
    """The runtime in the student's process: the spec's ``run`` runs once for
    the example, and every program it hands to ``rt.compile_and_run`` is traced
    and exported (``send(program)``, in order), never compiled or run. Each call
    returns a decoy :class:`~grader.spec.Trial` whose output has the traced
    shapes, dtypes and shardings (:func:`decoys`), so a later program may take an
    earlier one's output. The data comes from this process's own random salt
    (decoy data)."""

    exporting = True

    def __init__(self, example: Example, salt: int, send: Any,
                 platforms: Mapping[str, str] | None = None):  # fmt: skip
        super().__init__(example, salt)
        self.send, self.exported = send, 0
        self.platforms = dict(platforms or {})
        """Where the worker runs a program over a mesh (``mesh``) and one on a
        single device (``single``): this process has the CPU only
        (:data:`grader.measure.devices.CPU_ONLY`) and exports for those."""

    def student_program(self, program, args, mesh, compiler_options, extra) -> Trial:
        import jax

        from grader.measure import jaxpr

        jitted = program if hasattr(program, "lower") else jax.jit(program)
        traced = jitted.trace(*args)  # the student's own errors surface here, as theirs
        said = {"unchecked_shard_maps": int(jaxpr.read(traced.jaxpr).counts[jaxpr.UNCHECKED])}
        platform = _platform(args, mesh, self.platforms)
        try:
            exported = jax.export.export(jitted, platforms=[platform])(*args)
            blob = exported.serialize()
        except Exception as exc:
            raise NotExportable(_why_not_exportable(exc)) from None
        self.send(bytes(blob), said)
        self.exported += 1
        rng = np.random.default_rng([self.salt, self.exported])
        shapes = getattr(traced, "out_info", None) or jax.eval_shape(jitted, *args)
        return Trial(self.example, output=decoys(shapes, args, mesh, rng), mesh=mesh,
                     extra=extra, salt=self.salt)  # fmt: skip

    def student_kernels(self, program, args, mesh) -> tuple:
        from grader.runtime import export_for_tpu

        blob = export_for_tpu(program, args, mesh).serialize()  # what fails is the student's
        self.send(bytes(blob), {})
        self.exported += 1
        return ()  # nothing is read here (Runtime.kernels)


def decoys(out_info: Any, args: Any, mesh: Any, rng: np.random.Generator) -> Any:
    """Arrays shaped, typed and placed as a traced program's outputs, holding
    random values: what its ``compile_and_run`` returns in the student's process,
    where nothing runs (a later program traced on them is traced as the worker
    will call it, on the real outputs)."""
    import jax
    from jax.sharding import NamedSharding, Sharding

    def placed(info: Any) -> Any:
        sharding = getattr(info, "sharding", None)
        if isinstance(sharding, NamedSharding) and not isinstance(sharding.mesh, jax.sharding.Mesh):
            concrete = mesh if mesh is not None else _mesh_of(args)
            sharding = NamedSharding(concrete, sharding.spec) if concrete is not None else None
        if not isinstance(sharding, Sharding):
            concrete = mesh if mesh is not None else _mesh_of(args)
            sharding = NamedSharding(concrete, jax.sharding.PartitionSpec()) if concrete else None
        try:
            dtype = np.dtype(info.dtype)
            if np.issubdtype(dtype, np.floating):
                value = rng.standard_normal(info.shape).astype(dtype)
            elif np.issubdtype(dtype, np.integer):
                value = rng.integers(0, 4, size=info.shape).astype(dtype)
            else:
                value = np.zeros(info.shape, dtype)
            return jax.device_put(value, sharding)
        except Exception:  # a dtype numpy lacks (a PRNG key's): zeros of it, else its shape
            try:
                return jax.numpy.zeros(info.shape, info.dtype, device=sharding)
            except Exception:
                return info

    return jax.tree.map(placed, out_info)


def _mesh_of(args: Any) -> Any:
    """The mesh an argument is placed on, if any."""
    import jax
    from jax.sharding import NamedSharding

    for leaf in jax.tree.leaves(args):
        sharding = getattr(leaf, "sharding", None)
        if isinstance(sharding, NamedSharding) and isinstance(sharding.mesh, jax.sharding.Mesh):
            return sharding.mesh
    return None


class NotExportable(Exception):
    """The program holds something that cannot leave this process."""


def _why_not_exportable(exc: Exception) -> str:
    text = str(exc)
    if "callback" in text or "custom call" in text.lower():
        return (
            "your program calls back into Python on the host (jax.pure_callback or "
            "io_callback); the grader runs programs on the devices only: compute with jax "
            f"operations. ({text.splitlines()[0][:200]})"
        )
    return f"your program could not be exported for grading: {text.splitlines()[0][:300]}"


def _platform(args: Any, mesh: Any, platforms: Mapping[str, str]) -> str:
    """The platform the program is exported for: the one the worker runs it on
    (``platforms``, the worker's: over a mesh, or on one device), else where its
    inputs are here (a question that names none)."""
    import jax

    devices = mesh.devices.size if mesh is not None else 1
    platform = jax.devices()[0].platform
    for leaf in jax.tree.leaves(args) if mesh is None else ():
        if isinstance(leaf, jax.Array):
            devices, platform = len(leaf.devices()), next(iter(leaf.devices())).platform
            break
    if mesh is not None:
        platform = mesh.devices.flat[0].platform
    wanted = platforms.get("mesh" if mesh is not None or devices > 1 else "single")
    if wanted:
        return wanted
    if platform == "gpu":  # jax.export names GPU platforms by their runtime
        return jax.export.default_export_platform()
    return platform


# ------------------------------------------------------------------ the loop


class Session:
    """What the student's process answers the worker's questions with (``load``,
    ``export``, ``call``, ``task``: the module docstring), one at a time."""

    def __init__(self, salt: int, cluster: bool = False, scratch: int = 0) -> None:
        self.salt = salt
        self.scratch = scratch
        """The bytes each of the sandbox's ``/tmp`` and ``/dev/shm`` may hold (0: no
        sandbox): a failed write's note names it (:func:`grader.loader.space_note`)."""
        self.cluster = cluster
        """A process of a cluster: asked tasks, never exports (no spec needed)."""
        """Decoy data: drawn from this salt, random per process and never the worker's."""
        self.module: Any = None
        self.directory = Path(".")
        self.spec: Any = None
        self.module_name = ""

    def handle(self, req: dict, part: Any = None) -> dict:
        """The answer to ``req``; ``part(k, line)`` sends a line ahead of it."""
        op = req.get("op")
        if op == "load":
            return self.load(req)
        if op == "export":
            return self.export(req, part)
        if op == "call":
            return self.call(req)
        if op == "task":
            return self.task(req)
        return {"fault": f"unknown request {op!r}"}

    def load(self, req: dict) -> dict:
        from grader.loader import LoadError, load_module
        from grader.spec import load_spec

        self.directory = Path(req["directory"])
        self.spec = (
            None if self.cluster else load_spec(req["module"], str(req.get("lessons", LESSONS)))
        )
        self.module_name = str(req["module"])
        _silence_debug_callbacks()
        try:
            # no terminal's Ctrl-C reaches this process: a KeyboardInterrupt is the module's
            self.module = load_module(
                self.directory, req["module"], interrupts_are_theirs=True, scratch=self.scratch
            )
        except LoadError as exc:
            return {"load_error": str(exc)}
        names = [n for n, v in vars(self.module).items() if callable(v) and not n.startswith("__")]
        return {"ok": True, "functions": names}

    def _function(self, name: str) -> Any:
        fn = getattr(self.module, name, None)
        if not callable(fn):
            raise LookupError(name)
        return fn

    def export(self, req: dict, part: Any = None) -> dict:
        """Run the exercise's spec once on the example: each program it builds
        goes out as it is exported (``part(k, line)``), before the answer, which
        says how many there were and what the run raised, if anything."""
        ex_spec = self.spec.exercise(req["exercise"])
        example = wire.decode(req["example"])
        called = _Counted(self._function(req["exercise"]))
        sent: list[int] = []

        def send(blob: bytes, said: dict) -> None:
            line = {"ok": True, "blob": base64.b64encode(blob).decode("ascii"), "said": said}
            if part is not None:
                part(len(sent), line)
            sent.append(len(blob))

        rt = Exporting(example, self.salt, send, req.get("platforms"))
        rt.simulated = bool(req.get("simulated"))  # the worker's, sent with the question
        try:
            ex_spec.run(rt, called, example)
        except BaseException as exc:
            return {"programs": len(sent), "raised": self.raised(exc, called.count)}
        return {"programs": len(sent)}

    def call(self, req: dict) -> dict:
        fn = self._function(req["exercise"])
        args = wire.decode(req["args"])  # meshes by their devices' ids: simulated or not
        try:
            result = fn(*args)
        except BaseException as exc:
            return {"raised": self.raised(exc, 1)}
        return {"ok": True, "result": wire.encode(result), "args": wire.encode(args)}

    def task(self, req: dict) -> dict:
        """A lesson's process-side function (cluster mode), named by the worker as
        ``module:name`` from what the exercise's spec declares
        (:attr:`grader.spec.ExerciseSpec.tasks`): a function of a lesson's module only."""
        import importlib

        module, _, name = str(req["task"]).partition(":")
        if not module.startswith(f"{LESSONS}.") or not name.isidentifier():
            return {"fault": f"not a lesson's task: {req['task']!r}"}
        task = getattr(importlib.import_module(module), name)
        called = _Counted(self._function(req["exercise"]))
        payload = wire.decode(req["payload"])
        try:
            result = task(called, payload, self.salt)
        except BaseException as exc:
            return {"raised": self.raised(exc, called.count)}
        return {"ok": True, "result": wire.encode(result)}

    def raised(self, exc: BaseException, called: int) -> dict:
        from grader.faults import GraderFault
        from grader.loader import format_student_error
        from grader.runtime import StudentReturnError

        if isinstance(exc, KeyboardInterrupt | SystemExit):
            kind = "exit"
        elif isinstance(exc, GraderFault):  # the spec's own code, here: said as such
            kind = "grader"
        elif isinstance(exc, NotImplementedError):
            kind = "not_started"
        elif isinstance(exc, StudentReturnError):
            kind = "return"
        elif isinstance(exc, NotExportable):
            kind = "not_exportable"
        else:
            kind = "error"
        return {
            "kind": kind,
            "type": type(exc).__name__,
            "message": str(exc)[:20000],
            "hint": getattr(exc, "hint", None)
            if isinstance(getattr(exc, "hint", None), str)
            else None,
            "text": format_student_error(exc, self.directory, self.scratch)[:20000],
            "called": called,
        }


class _Counted:
    def __init__(self, fn: Any):
        self.fn, self.count = fn, 0
        self.__name__ = getattr(fn, "__name__", "fn")
        self.__wrapped__ = fn

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self.count += 1
        return self.fn(*args, **kwargs)


def _silence_debug_callbacks() -> None:
    import jax

    def quiet(*args: Any, **kwargs: Any) -> None:
        return None

    jax.debug.print = quiet
    jax.debug.callback = quiet
    jax.debug.breakpoint = quiet


def main(argv: list[str] | None = None) -> NoReturn:
    parser = argparse.ArgumentParser(prog="python -m grader.sandbox.student")
    parser.add_argument("--fds", type=int, nargs=2, required=True)
    parser.add_argument("--cluster", nargs=4, metavar=("ADDRESS", "PROCESSES", "INDEX", "DEVICES"))
    parser.add_argument("--prepare", default="", help="the lesson whose spec to import ahead")
    parser.add_argument(
        "--ahead",
        action="store_true",
        help="trace a first program ahead too (a cluster's: run one, locally)",
    )
    args = parser.parse_args(argv)
    channel = Channel(os.fdopen(args.fds[1], "wb"), args.fds[0])
    watch_parent()
    if args.cluster:
        _join(args.cluster[0], *map(int, args.cluster[1:]))
    # ahead of the first question: it is started before it is needed
    _warm_up(args.prepare, cluster=bool(args.cluster))
    traced = args.ahead and (warm_up_cluster() if args.cluster else _warm_up_tracing())
    channel.send({"seq": 0, "ready": True})  # jax is imported: what follows is the student's
    session = Session(salt=secrets.randbits(62) | 1, cluster=bool(args.cluster),
                      scratch=_scratch(os.environ))  # fmt: skip
    for line in channel.lines():
        seq = None
        try:
            question = json.loads(line)
            seq = question.get("seq")

            def part(k: int, line: dict, seq: Any = seq) -> None:
                sys.stdout.flush()
                sys.stderr.flush()
                channel.send({**line, "seq": seq, "part": k})

            answer = session.handle(question, part)
        except BaseException as exc:  # the grader's side of this process failed
            answer = {"fault": f"{type(exc).__name__}: {exc}"[:4000]}
        answer["seq"] = seq
        sys.stdout.flush()
        sys.stderr.flush()
        channel.send(answer)
        if seq == 1 and not traced:
            traced = _warm_up_tracing()
    sys.stdout.flush()
    os._exit(0)


def _scratch(environ: Mapping[str, str]) -> int:
    """The bytes each of ``/tmp`` and ``/dev/shm`` may hold, as the sandbox's own
    process set them in this one's environment (``COURSE_SANDBOX_WRITES``, never
    inherited from the worker: :func:`grader.sandbox.jail.environment`); read in
    :func:`main`, this process's edge. 0 outside the sandbox."""
    from grader.sandbox.jail import WRITES_VARIABLE

    cap = environ.get(WRITES_VARIABLE, "")
    return int(cap) if cap.isdigit() else 0


JOIN_SECONDS = 120
"""How long ``jax.distributed.initialize`` waits for the other processes."""


def _join(address: str, processes: int, index: int, local: int) -> None:
    """Become process ``index`` of ``processes``, with ``local`` CPU devices."""
    import jax

    jax.config.update("jax_platforms", "cpu")
    jax.config.update("jax_num_cpu_devices", local)
    with contextlib.suppress(Exception):  # the default where it exists; older jax: the flag
        jax.config.update("jax_cpu_collectives_implementation", "gloo")
    jax.distributed.initialize(address, processes, index, initialization_timeout=JOIN_SECONDS)


def _warm_up(lesson: str = "", cluster: bool = False) -> None:
    """Import what every question needs, before the first one comes: jax, the
    engine and ``lesson``'s spec (the grader's code, never the student's)."""
    import jax

    jax.devices()
    if cluster:  # tasks only: no spec, no hypothesis
        return
    with contextlib.suppress(Exception):
        import hypothesis.strategies  # noqa: F401  (every spec imports it)

        import grader.engine

        if lesson:
            grader.engine.load_spec(lesson)


def warm_up_cluster() -> bool:
    """Trace, lower, compile, run and export one small program of the kind a
    cluster's tasks run (a jitted shard_map taking a gradient, the three
    collectives of the hierarchical all-reduce, an array from process-local
    data), on this process's own devices only: no other process takes part, so
    none can wait for it. Done ahead (a cluster started between two grades),
    it pays jax's first-use costs before the grade: measured, the lesson-13
    re-grade's clusters spent 12–20 % less CPU on their tasks. Whether it ran."""
    import jax
    import numpy as np
    from jax import lax
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P

    try:
        devices = jax.local_devices()
        n = len(devices)
        mesh = jax.make_mesh((1, n), ("a", "b"), devices=devices)

        def body(w: Any, x: Any) -> Any:
            wv = lax.pcast(w, ("a", "b"), to="varying")
            loss, g = jax.value_and_grad(lambda v, r: (jax.numpy.tanh(r @ v) ** 2).mean())(wv, x)
            part = lax.psum_scatter(g, "b", scatter_dimension=0, tiled=True)
            whole = lax.all_gather(lax.psum(part, "a"), "b", axis=0, tiled=True)
            return w - 0.1 * lax.psum(g, ("a", "b")), whole, lax.pmean(loss, ("a", "b"))

        rows = P(("a", "b"))
        step = jax.jit(jax.shard_map(body, mesh=mesh, in_specs=(P(), rows),
                                     out_specs=(P(), rows, P())))  # fmt: skip
        w = jax.device_put(np.ones((2 * n, 2), np.float32), NamedSharding(mesh, P()))
        x = jax.make_array_from_process_local_data(
            NamedSharding(mesh, rows), np.ones((n, 2 * n), np.float32)
        )
        jax.block_until_ready(step(w, x))
        jax.export.export(step, platforms=["cpu"])(w, x).serialize()
    except Exception:
        return False
    return True


def _warm_up_tracing() -> bool:
    """Trace and export one small program, so that the first exercise does not
    pay for jax's first trace; done while the grader prepares that exercise."""
    import jax
    import jax.numpy as jnp
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P

    with contextlib.suppress(Exception):
        mesh = jax.make_mesh((1,), ("x",), devices=jax.local_devices()[:1])
        body = jax.shard_map(
            lambda a: jax.lax.psum(a, "x"), mesh=mesh, in_specs=P("x"), out_specs=P()
        )
        arg = jax.ShapeDtypeStruct((2,), jnp.float32, sharding=NamedSharding(mesh, P("x")))
        jax.export.export(jax.jit(body))(arg).serialize()
    return True


if __name__ == "__main__":
    main()
