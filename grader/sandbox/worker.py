"""The grading worker: ``python -m grader.sandbox.worker --events-fd FD``.

Runs in its own process so that the ``course`` command never imports jax,
a student's program that never returns can be killed, and a crash in XLA
cannot take progress with it. The student's module is not imported here: it
runs in a process of its own that this one starts (:mod:`grader.sandbox.isolation`),
so nothing the student's code does can reach the checks, the expected
values, the data salt or this process's events channel. It reads one :class:`grader.sandbox.protocol.Request`
from stdin and writes one event per line to FD (see :mod:`grader.sandbox.protocol`).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import secrets
import sys
import threading
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, NoReturn

from grader.config import Sandbox
from grader.sandbox import forks
from grader.sandbox.channel import Channel
from grader.sandbox.lifeline import undumpable, watch_parent
from grader.sandbox.protocol import (
    REPORT,
    Event,
    GraderFailed,
    LessonFinished,
    Rejected,
    Request,
    Served,
    encode_event,
    sign,
)


def main(argv: list[str] | None = None) -> NoReturn:
    """Grade, then leave at once: ``os._exit`` skips the student's ``atexit``
    handlers and does not wait for threads it started.

    With ``--serve`` the worker stays: it reads one request per line and
    answers each with its events, the last one :class:`Served`, then waits for
    the next (``course watch``, the notebook). Each request brings its own
    events key and gets a data salt of its own; every grade runs the student's
    code in a fresh student's process (one is started ahead for the next)."""
    parser = argparse.ArgumentParser(prog="python -m grader.sandbox.worker")
    parser.add_argument("--events-fd", type=int, required=True)
    parser.add_argument("--serve", metavar="CONFIG", help="stay; JSON: devices, platform, …")
    args = parser.parse_args(argv)
    undumpable()  # the events key will be in this process's memory: before it is read
    events = Channel(os.fdopen(args.events_fd, "wb"))
    owner = os.getpid()
    watch_parent()
    from grader import phases

    state = Warm(Options.from_environment())  # the worker's edge: its switches read once
    if args.serve:
        state.start(json.loads(args.serve))
    lines = Channel(fd=sys.stdin.fileno()).lines() if args.serve else iter([sys.stdin.read()])
    for line in lines:
        request = Request.decode(line)
        state.drawn_ahead()  # what was drawn while it waited: finished before this grade
        signer = Signer(events, request.key, owner)
        try:
            grade(replace(request, key=""), signer.emit, state)
        except _Rejected as exc:
            signer.emit(Rejected(str(exc)))
        except Exception:
            signer.emit(GraderFailed(f"{traceback.format_exc().rstrip()}\n— {REPORT}"))
        sys.stdout.flush()
        sys.stderr.flush()
        phases.dump("worker", state.options.phases)
        if not args.serve:
            break
        state.ahead(request)  # the next grade's student's process starts now
        signer.emit(Served())
        state.draw_ahead(request)  # and its examples are drawn while this one waits
    state.spares.close()
    events.close()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


class Signer:
    """Writes one request's events, each signed with its key and place."""

    def __init__(self, events: Any, key: str, owner: int):
        self.events, self.key, self.owner, self.sent = events, key, owner, 0

    def emit(self, event: Event) -> None:
        if os.getpid() != self.owner:  # not ours to say (no code of the student's runs here)
            os._exit(0)
        self.events.send_line(f"{sign(self.key, self.sent, encode_event(event))}\n".encode())
        self.sent += 1


@dataclass(frozen=True)
class Options:
    """The worker's settings, read from its environment once, in :func:`main` (its
    edge), and handed down from there: its switches (to measure what a speed
    mechanism saves), the devices of a request that names none, where phases go,
    a course elsewhere, and the OS sandbox's settings."""

    ahead: bool = True
    """The sandbox's backend prepares each exercise's next example while one runs
    (:mod:`grader.sandbox.prepared`; ``COURSE_AHEAD=0``: examples one after another)."""
    helpers: int = 0
    """Helpers a serving worker starts with each student's process it starts ahead
    (:class:`grader.sandbox.spares.Spares`; ``COURSE_HELPERS``, by default one
    where the machine has two cores or more)."""
    warm_up: bool = True
    """:func:`warm_up_replay` runs (``COURSE_WORKER_WARM_UP=0``: it does not)."""
    fork_server: bool = True
    """A grade of several lessons may fork their student's processes from one
    server (:mod:`grader.sandbox.forks`; ``COURSE_FORK_SERVER=0``: never)."""
    devices: str = ""
    """``COURSE_DEVICES`` as given: the simulated CPU devices of a request that
    names none (parsed when a grade configures them, :meth:`Warm.configure`)."""
    platform: str = ""
    """``COURSE_PLATFORM`` as given: the platform of a request that names none."""
    root: str = ""
    """The course's files elsewhere (``COURSE_ROOT``; :func:`grader.repo.root`):
    its references are hidden from every student's process too."""
    phases: str = ""
    """Where each grade's phases are appended (``COURSE_PHASES``, :mod:`grader.phases`;
    ``""``: nowhere)."""
    sandbox: Sandbox = field(default_factory=Sandbox)
    """The OS sandbox's switch and memory (``COURSE_SANDBOX``, ``COURSE_SANDBOX_MEMORY``),
    handed to every student's process and cluster it starts (:attr:`Warm.spares`)."""

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] | None = None) -> Options:
        """The options ``environ`` (this process's environment by default) sets."""
        env = os.environ if environ is None else environ
        wanted = env.get(HELPERS, "")
        if wanted.strip().isdigit():
            helpers = min(int(wanted), 3)
        else:
            helpers = 1 if (os.cpu_count() or 1) >= 2 else 0
        return cls(
            ahead=env.get(AHEAD, "1") != "0", helpers=helpers,
            warm_up=env.get(WARM_UP, "1") != "0", fork_server=env.get(forks.SWITCH, "1") != "0",
            devices=env.get("COURSE_DEVICES", ""), platform=env.get("COURSE_PLATFORM", ""),
            phases=env.get("COURSE_PHASES", ""), root=env.get("COURSE_ROOT", ""),
            sandbox=Sandbox.from_environment(env),
        )  # fmt: skip


class Warm:
    """What a serving worker keeps between requests: its devices (configured
    once), the compilation cache, and the student's processes started ahead;
    ``options``: its switches."""

    def __init__(self, options: Options | None = None) -> None:
        from grader.sandbox import spares

        self.options = options or Options()
        self.spares = spares.Spares(sandbox=self.options.sandbox)
        """The student's processes started ahead, and the folders they must not see."""
        if self.options.root:  # a course elsewhere: its references too
            self.spares.hide(*_references(self.options.root))
        self._programs: Any = None
        self.configured: tuple | None = None
        self.cpu_only = False
        """Every lesson graded on the simulated CPU devices (``COURSE_PLATFORM=cpu``,
        ``--cpu``): handed down as :attr:`grader.config.GradeConfig.simulated`."""
        self.cached = False
        self._drawing: threading.Thread | None = None
        """The thread drawing the next grade's examples (:meth:`draw_ahead`)."""
        self.drawn: dict[str, list] = {}
        """The examples drawn so far, by what each draw depends on
        (:attr:`grader.spec.Draws.memo`: each drawn once for all grades)."""

    @property
    def programs(self) -> Any:
        """Programs handed back before, by their bytes (read once for all grades;
        :class:`grader.sandbox.isolation.Programs`, made once numpy is imported)."""
        if self._programs is None:
            from grader.sandbox import isolation

            self._programs = isolation.Programs()
        return self._programs

    def configure(self, request: Request) -> None:
        """Set the devices up for ``request`` (before jax is imported: the first
        time only; the course starts a fresh worker for other devices)."""
        from grader.measure import devices

        wanted = (request.devices, request.platform, request.cache_dir)
        if self.configured is None:
            count = request.devices
            if count is None:
                count = devices.parse_devices(self.options.devices)
            self.cpu_only = (
                devices.parse_platform(request.platform or self.options.platform) == "cpu"
            )
            devices.configure(
                count, "cpu" if self.cpu_only else None
            )  # --cpu: no accelerator opened
            self.configured = wanted
        elif wanted != self.configured:
            raise RuntimeError(f"this worker grades on {self.configured}, not {wanted}")

    def open_cache(self) -> None:
        """The compilation cache (imports jax: after the student's process is started)."""
        if self.configured and self.configured[2] and not self.cached:
            enable_compilation_cache(self.configured[2])
        self.cached = True

    def start(self, config: dict) -> None:
        """A serving worker, before its first request: devices up, jax and the
        engine imported, a student's process started for the lesson expected."""
        request = Request(
            lessons=(), directory=str(config.get("directory") or ""),
            devices=config.get("devices"), platform=config.get("platform"),
            cache_dir=config.get("cache_dir"),
        )  # fmt: skip
        self.configure(request)
        self.spares.hide(*config.get("hidden", ()), request.cache_dir)
        if request.directory and config.get("module"):
            self.spares.prestart(request.directory, str(config["module"]), load=False)
        self.spares.helpers = self.options.helpers  # from the second grade on: not the first
        self.open_cache()
        import grader.engine
        from grader.measure import devices

        devices.open_devices()  # the accelerator where it can be had, else the CPU, saying why
        if config.get("module"):
            with contextlib.suppress(Exception):
                grader.engine.load_spec(str(config["module"]))
        if self.options.warm_up:
            warm_up_replay()

    def draw_ahead(self, request: Request) -> None:
        """Draw, on a thread, the examples of the next grade like ``request``
        (``request.next_seed``: the seed ``course`` will send it with), into the
        draws every grade of this worker shares; :meth:`drawn_ahead` waits for
        it before a grade begins (hypothesis is not drawn on two threads at once).
        A grade of other lessons, or on another seed, draws its own as before."""
        if request.next_seed is None or request.example or not self.configured:
            return
        from grader import engine
        from grader.config import GradeConfig
        from grader.spec import Draws

        kept = (Path(request.examples_dir),) if request.examples_dir else ()
        config = GradeConfig(draws=Draws(kept=kept, memo=self.drawn), simulated=self.cpu_only)

        def draw() -> None:
            with contextlib.suppress(Exception):  # only speed: the grade draws what is missing
                for job in request.lessons:
                    engine.draw_ahead(job.module, job.exercises, request.next_seed, config,
                                      request.max_examples)  # fmt: skip

        self._drawing = threading.Thread(target=draw, name="draw ahead", daemon=True)
        self._drawing.start()

    def drawn_ahead(self) -> None:
        """Wait for :meth:`draw_ahead`'s thread, if one runs."""
        drawing, self._drawing = self._drawing, None
        if drawing is not None:
            drawing.join()

    def ahead(self, request: Request) -> None:
        """Start the student's process for a grade like ``request`` (jax imported,
        the lesson's spec too; the student's module not yet: it is imported when
        that grade begins, as it is saved then), and the clusters the lesson's
        last grade started (lesson 13: joined, the module not yet imported)."""
        for job in request.lessons[:1]:
            self.spares.prestart(request.directory, job.module, load=False)
            self.spares.clusters_ahead(request.directory, job.module)


def _references(given: str) -> list[str]:
    """The folders of the course at ``given`` (``COURSE_ROOT``) that hold a
    reference (:mod:`grader.sandbox.references`)."""
    from grader.repo import CODE, root, shipped
    from grader.sandbox import references

    repo = root(given)
    return [str(shipped(repo).solutions), *references.folders(CODE, repo)]


AHEAD = "COURSE_AHEAD"
"""``0``: examples one after another, none prepared ahead (to measure what it saves)."""
HELPERS = "COURSE_HELPERS"
"""How many helpers a serving worker starts with each student's process started
ahead (:class:`grader.sandbox.spares.Spares`); ``0``: none (to measure what
they save). By default one, where the machine has two cores or more."""
WARM_UP = "COURSE_WORKER_WARM_UP"
"""``0`` skips :func:`warm_up_replay` (to measure what it saves)."""


class _Rejected(Exception):
    """The request asks for something the exercise cannot take."""


def grade(request: Request, emit: Callable[[Event], None], state: Warm | None = None) -> None:
    state = state or Warm()
    first_request = state.configured is None
    state.configure(request)  # the student's process inherits the devices asked for
    salt = secrets.randbits(62) | 1  # the data is drawn here, from a secret of this grade's
    spares = state.spares
    spares.hide(*request.hidden, request.cache_dir)  # the student's process never needs them
    if request.directory and forks.wanted(len(request.lessons), state.options.fork_server):
        spares.fork_from(request.directory)  # each lesson's process forked: jax imported once
    try:
        _grade(request, emit, state, first_request, salt)
    finally:
        spares.stop_forks()


def _grade(request: Request, emit: Callable[[Event], None], state: Warm, first_request: bool,
           salt: int) -> None:  # fmt: skip
    from grader import phases

    spares = state.spares
    # the student's process imports jax and the module while this one imports jax
    first, *rest = [(request.directory, job.module) for job in request.lessons] or [("", "")]
    if first[1]:
        spares.prestart(*first, then=rest)
    with phases.phase("worker imports (jax, engine)"):
        from grader.sandbox import isolation

        state.open_cache()
        from grader import engine
        from grader.measure import devices

        devices.open_devices()  # the accelerator where it can be had, else the CPU, saying why

        if first_request and state.options.warm_up:
            warm_up_replay()  # while the student's process starts, imports and traces
    from grader.config import GradeConfig
    from grader.spec import Draws, parse_example

    kept = (Path(request.examples_dir),) if request.examples_dir else ()
    config = GradeConfig(draws=Draws(kept=kept, memo=state.drawn), simulated=state.cpu_only)

    example = parse_example(request.example) if request.example else None
    if example is not None:
        for job in request.lessons:
            for name in job.exercises:
                if why := engine.example_problem(job.module, name, example):
                    raise _Rejected(f"--example {request.example!r}: {why}")
    preparing = state.options.ahead
    for job in request.lessons:
        try:
            result = engine.grade_lesson(
                job.lesson,
                job.module,
                Path(request.directory),
                only=list(job.exercises),
                seed=request.seed,
                example=example,
                max_examples=request.max_examples,
                timeout=request.timeout,
                on_event=emit,
                backend=lambda directory, module: isolation.Isolated(
                    directory,
                    module,
                    salt=salt,
                    spares=spares,
                    programs=state.programs,
                    ahead=preparing,
                ),
                config=config,
            )
        except engine.BadExample as exc:
            raise _Rejected(f"--example {request.example!r}: {exc}") from None
        emit(LessonFinished(job.lesson, result.duration))
    spares.close(loaded_only=True)  # a process started ahead for a lesson that was not graded


def warm_up_replay() -> None:
    """Export, read, lower, compile (with the lessons' options: whether this XLA
    has each is found out then) and run one tiny ``shard_map`` program, so
    that the first exercise does not pay for jax's first export, lowering and
    compile here (about a second): done while this process would wait for the
    student's process to start, import the module and trace the first example."""
    import jax
    import jax.numpy as jnp
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P

    from grader.exported import read_exported
    from grader.runtime import known_options
    from grader.spec import FAST_COMPILE

    with contextlib.suppress(Exception):
        mesh = jax.make_mesh((1,), ("x",), devices=jax.devices()[:1])
        body = jax.shard_map(
            lambda a: jax.lax.psum(a, "x"), mesh=mesh, in_specs=P("x"), out_specs=P()
        )
        x = jax.device_put(jnp.zeros((2,), jnp.float32), NamedSharding(mesh, P("x")))
        blob = jax.export.export(jax.jit(body))(x).serialize()
        exported = jax.export.deserialize(blob)
        read_exported(exported)
        lowered = jax.jit(exported.call).trace(x).lower()
        lowered.compile(compiler_options=known_options(FAST_COMPILE))(x).block_until_ready()


def enable_compilation_cache(directory: str) -> None:
    """Keep compiled programs on disk: re-grading code that did not change
    (the other exercises of a lesson, a watch that re-runs everything) then
    skips XLA's compile. Entries are keyed by the program's HLO, so changed
    code never hits a stale entry."""
    import jax

    jax.config.update("jax_compilation_cache_dir", directory)
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)


if __name__ == "__main__":
    main()
