"""Grade a student's code that runs in a process of its own.

The grading process draws the examples, builds the real inputs (from a data
salt it keeps to itself: the :class:`Replaying` runtime's), computes
the references, runs the checks and reports. The student's module is
imported only in the student's process (:mod:`grader.sandbox.student`), which holds
none of that. For each example the grading process runs the spec as usual,
with the student's function replaced by a :class:`RemoteFunction`:

- when the spec compiles its first program (``rt.compile_and_run``), the
  :class:`Replaying` runtime asks the student's process to run the same spec
  once on decoy data: it sends every program the example calls, in order, as
  it exports it (there each ``compile_and_run`` returns decoy outputs of the
  traced shapes, dtypes and shardings, so a later program may take an earlier
  one's output). The k-th ``compile_and_run`` here takes the k-th program,
  checks it (its inputs are the example's, it calls nothing outside the
  devices: :mod:`grader.exported`), then compiles and runs it on the real data;
- when the spec calls the function directly (plain Python, eager placement),
  the call is made over there on copies of the arguments, and the result and
  the arguments as the function left them come back as plain values
  (:mod:`grader.sandbox.wire`): nothing from that process is unpickled or evaluated.

What the program's structure shows (the dtypes and loops the code asked for,
whether it used shard_map) is read here from the exported program's StableHLO
(:mod:`grader.measure.stablehlo`), never taken from what the student's process
says; values, communication and memory are measured here on the program
compiled here. Whatever that process reports is the student's error.
"""

from __future__ import annotations

import base64
import contextlib
import functools
import hashlib
import json
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from grader import phases
from grader import runtime as runtimes
from grader.backend import Backend, Examples, RuntimeFor
from grader.engine import LESSONS, load_spec
from grader.exported import (
    check_exported,
    platform_here,
    read_exported,
    read_kernels,
    theirs,
)
from grader.faults import (
    Abandoned,
    GraderFault,
    LoadError,
    NotStartedHere,
    StudentFault,
    StudentProcessDied,
)
from grader.runtime import SAID_UNCHECKED, Runtime
from grader.sandbox import jail, processes, wire
from grader.sandbox.book import Book
from grader.sandbox.channel import (
    LINE_LIMIT,
    Channel,
    ChannelEnded,
    LineTooLong,
    Overdue,
    Stopped,
)
from grader.sandbox.prepared import PreparedAhead, Turn
from grader.sandbox.processes import Started
from grader.sandbox.spares import Ahead, Ready
from grader.sandbox.wire import raise_from
from grader.spec import Example, ExerciseSpec, Trial

ANSWER_LIMIT = LINE_LIMIT
"""Longest answer line read from the student's process."""


class SandboxFailed(GraderFault):
    """The sandbox for the student's process could not be made, as the sandbox's
    own process said before any of the student's code ran (never the student's
    fault; the exit code alone cannot tell: the student's code may exit 125)."""

    def __init__(self, why: str):
        super().__init__(
            f"the sandbox for the process that runs your code could not be made: {why}"
        )


MOOT_LIMIT = 10.0
"""Seconds the answer to a question asked ahead and moot now (the exercise it was
for ended first) is waited for before the next exercise (:meth:`StudentProcess.settle`)."""


class StudentProcess:
    """The student's process, started on first use and again after it dies.

    Safe to use from several threads (the next example is prepared in one while the
    current one runs: :mod:`grader.sandbox.prepared`): questions are numbered and
    sent on its :class:`~grader.sandbox.channel.Channel`; one reader thread a
    process (:meth:`_read`) reads every line it sends and files it in the
    process's :class:`~grader.sandbox.book.Book`; each asking thread waits on one
    condition for its own answer (:meth:`receive`)."""

    def __init__(
        self, directory: str, module: str, spares: Ahead | None = None,
        given: Started | None = None, lessons: str = LESSONS,
    ) -> None:  # fmt: skip
        self.directory, self.module = str(Path(directory)), module
        self.lessons = lessons
        """The package the lesson's spec is in (:func:`grader.engine.load_spec`)."""
        self.spares = spares or Ahead()
        """Whatever was started ahead for it (:class:`grader.sandbox.spares.Ahead`):
        where its process comes from."""
        self._given = given
        """A helper's process (:meth:`Ahead.take_helpers`, asked to load already):
        the only one it ever runs; gone, it is not started again."""
        self.helper = given is not None
        self.proc: subprocess.Popen | None = None
        self.functions: set[str] = set()
        self.load_error: str | None = None
        self.channel: Channel | None = None
        """Its questions and answers, one line each (:mod:`grader.sandbox.channel`):
        written here, read by its reader thread only."""
        self._book = Book()
        """The running process's open questions and what came for them."""
        self._loaded = False
        self._loading: int | None = None
        self._seq = 0
        self._cv = threading.Condition(threading.RLock())
        """Held for every change of state (re-entrant: start → spawn → receive
        nest); waited on for answers (a wait releases every level)."""
        self.closed = False
        """The lesson's grading is over: never started again (by a thread still
        preparing an example nobody wants)."""
        self._owner = threading.current_thread()
        """The thread that starts it (and the spares after it): a process started
        from another thread would be killed when that thread ends (the sandbox's
        ``PR_SET_PDEATHSIG`` follows the thread that started it)."""

    @property
    def waiting(self) -> int:
        """Questions asked and not answered yet."""
        return len(self._book.pending)

    # -------------------------------------------------------------- life

    def spawn(self) -> None:
        """Start the process (or take the one started ahead) and wait until it has
        imported jax (its "ready" line, question 0): the machine's time, not the
        student's. The caller bounds it."""
        with self._cv:
            if self.proc is not None:
                return
            if self.closed:
                raise StudentProcessDied("the grading of this lesson is over")
            if self.helper and self._given is None:
                raise StudentProcessDied("a helper's process is not started again")
            if not self.helper and threading.current_thread() is not self._owner:
                raise NotStartedHere("it is not running, and only the grading thread starts it")
            if self.helper:  # started by the grading thread already: taken from any thread
                assert self._given is not None
                ready, self._given = Ready(self._given, asked=True), None
            else:
                ready = self.spares.ready(self.directory, self.module)
            asked = ready.asked  # asked to load this module when it started
            self.adopt(ready.started, pending=(0, 1) if asked else (0,))
            self._loading = 1 if asked else None
            """The load question asked and not yet answered."""
            self.receive(0)

    def adopt(
        self, channel: tuple[Any, Any, int], pending: tuple[int, ...] = (0,), *,
        loaded: bool = False,
    ) -> None:  # fmt: skip
        """Talk to a started process from now on: ``channel`` is (the process, the
        file its questions are written to, the descriptor its answers are read
        from); ``pending``: the questions whose answers are awaited from it (0: its
        "ready" line), the last one asked last; ``loaded``: it has imported the
        module already. What :meth:`spawn` does with the process it starts; a test
        hands over a pipe of its own. Its reader thread starts here."""
        with self._cv:
            proc = self.proc = channel[0]
            talk = self.channel = Channel(channel[1], channel[2], ANSWER_LIMIT)
            book = self._book = Book(pending)
            self._seq = max(pending)
            self._loaded = loaded
        threading.Thread(target=self._read, args=(proc, talk, book), daemon=True,
                         name="student's answers").start()  # fmt: skip

    def start(self) -> None:
        """:meth:`spawn`, then import the module in the process (the student's
        time: the caller bounds it with the exercise's limit)."""
        with self._cv:
            if self.proc is not None and self.proc.poll() is not None:
                self.stop()  # it ended while nobody waited for it (on a question asked ahead)
            if self.proc is not None and self._loaded:
                return
            self.spawn()
            seq = self._loading if self._loading is not None else self.send(self._load())
            self._loading = seq
            answer = self.receive(seq)
            self._loading, self._loaded = None, True
            self.load_error = answer.get("load_error")
            self.functions = set(answer.get("functions") or [])

    def stop(self) -> None:
        """Kill the process; whoever waits for it is told. Its reader closes the side
        it reads when it sees the stop (within a second)."""
        with self._cv:
            proc, self.proc = self.proc, None
            if proc is None:
                return
            assert self.channel is not None
            with contextlib.suppress(OSError):
                self.channel.out.close()  # type: ignore[union-attr]
            if proc.poll() is None:
                proc.send_signal(signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=10)
            processes.setup_failure(proc)  # its descriptor closed
            self._cv.notify_all()

    def close(self) -> None:
        """Stop it for good: the lesson's grading is over."""
        with self._cv:
            self.closed = True
            given, self._given = self._given, None
            if given is not None:
                processes.close(given)
            self.stop()

    def _load(self) -> dict:
        question = {"op": "load", "directory": self.directory, "module": self.module}
        return question if self.lessons == LESSONS else {**question, "lessons": self.lessons}

    # -------------------------------------------------------------- questions

    def export(self, exercise: str, example: Example, simulated: bool) -> int:
        """Ask for every program the spec builds for ``example``, exported in one
        run of the spec: program k comes with ``receive(seq, part=k)`` as soon as
        it is exported, the end of the run (what it raised) as the answer."""
        from grader.measure.devices import platforms

        return self.send({
            "op": "export", "exercise": exercise, "example": wire.encode(example),
            "simulated": simulated, "platforms": platforms(simulated),
        })  # fmt: skip

    def call(self, exercise: str, args: tuple, simulated: bool) -> dict:
        return self._ask({"op": "call", "exercise": exercise, "args": wire.encode(list(args)),
                          "simulated": simulated})  # fmt: skip

    def _ask(self, question: dict) -> dict:
        return self.receive(self.send(question))

    def send(self, question: dict) -> int:
        """Ask without waiting; :meth:`receive` takes the answer later."""
        with self._cv:
            if question.get("op") != "load":
                self.start()
            assert self.proc is not None
            self._seq += 1
            self._book.ask(self._seq)
            try:
                assert self.channel is not None
                self.channel.send({**question, "seq": self._seq})
            except OSError:  # its side closed: it is ending, its status known a moment later
                try:  # (polled at once, a loaded host's crash was told with no exit code)
                    code = self.proc.wait(timeout=2)
                except subprocess.TimeoutExpired:  # alive with its side closed: stopped
                    code = None
                self.stop()
                raise StudentProcessDied(_ended(code)) from None
            except BaseException:
                self.stop()
                raise
            return self._seq

    def receive(self, seq: int, deadline: float | None = None, part: int | None = None) -> dict:
        """The answer to question ``seq`` (answers to others are kept for their
        askers). ``deadline`` (``time.monotonic()``): :class:`Overdue` after it
        (the process is stopped). ``part``: the ``part``-th of the lines the
        process sends ahead of its answer (an export's programs, each sent as
        soon as it is exported), or the answer itself where it ended with fewer."""
        with self._cv:
            proc, book = self.proc, self._book
            while (answer := book.take(seq, part)) is None:
                if proc is None or self.proc is not proc:
                    if book.closed is not None:  # it ended, or said what is no answer
                        raise book.closed()
                    raise StudentProcessDied("it was stopped while the grader waited for it")
                wait = 1.0 if deadline is None else min(1.0, deadline - time.monotonic())
                try:
                    if wait <= 0:
                        raise Overdue()
                    self._cv.wait(wait)  # a time limit's signal ends it too
                except BaseException:  # a time limit, an interrupt: its state is unknown now
                    if self.proc is proc:
                        self.stop()
                    raise
        if "fault" in answer:
            raise StudentFault(str(answer["fault"]))
        return answer

    def forget(self, seq: int) -> None:
        """Nobody takes question ``seq``'s answer or what it sent ahead of it (an
        example's export pass once the example is over): dropped, now and as it comes."""
        with self._cv:
            if self.proc is not None:
                self._book.forget(seq)

    def settle(self, seq: int, limit: float = MOOT_LIMIT) -> None:
        """Wait up to ``limit`` seconds for the answer to question ``seq`` (asked
        ahead, moot now) and drop it. A process that ends meanwhile, or does not
        answer in time, is stopped (it is started afresh when next needed): what a
        moot question did to it is never charged to the next exercise."""
        with self._cv:
            taken = self.proc is None or self._book.settled(seq)
        if not taken:
            with contextlib.suppress(StudentProcessDied, StudentFault, SandboxFailed, Overdue):
                self.receive(seq, deadline=time.monotonic() + limit)
        self.forget(seq)  # what it sent ahead of its answer

    # -------------------------------------------------------------- its reader

    def _read(self, proc: Any, channel: Channel, book: Book) -> None:
        """The reader thread of ``proc``: every line it sends, filed in ``book``,
        until it ends or is stopped; then the side read is closed."""
        try:
            while True:
                try:
                    line = channel.read_line(stopped=lambda: self.proc is not proc)
                except Stopped:
                    return
                except ChannelEnded:
                    code = proc.wait()
                    with self._cv:
                        why = processes.setup_failure(proc)
                    if why is not None:
                        self._closed(proc, book, functools.partial(SandboxFailed, why))
                    else:
                        self._closed(
                            proc, book, functools.partial(StudentProcessDied, _ended(code))
                        )
                    return
                except LineTooLong:
                    self._closed(proc, book, functools.partial(
                        StudentProcessDied, "it sent an answer larger than the grader takes"))  # fmt: skip
                    return
                except OSError:  # its side closed under it: stopped
                    return
                try:
                    answer = json.loads(line)
                except (ValueError, RecursionError):
                    answer = None
                with self._cv:
                    if not book.file(answer):
                        self._closed(proc, book, functools.partial(
                            StudentProcessDied, "something wrote on the grader's channel to "
                            "it that is not the grader's answer"))  # fmt: skip
                        return
                    self._cv.notify_all()
        finally:
            channel.close()

    def _closed(self, proc: Any, book: Book, error: Callable[[], BaseException]) -> None:
        """Nothing more comes from ``proc``: its waiters raise ``error()``, and it is
        stopped (its state is unknown)."""
        with self._cv:
            book.closed = error
            if self.proc is proc:
                self.stop()
            self._cv.notify_all()


def _ended(code: int | None) -> str:
    if code is None:
        return "it ended"
    if code < 0:
        try:
            return f"it was killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"it was killed by signal {-code}"
    return f"it exited with code {code}"


# ------------------------------------------------------------------ the proxies


Asked = tuple["StudentProcess", Any, int]
"""A question asked: the student's process, its process then, the question's number."""


class Session:
    """One lesson's grading against the student's process (and its helpers: more
    student's processes that trace and export examples asked for ahead, where a
    :class:`~grader.sandbox.spares.Ahead` has them)."""

    def __init__(
        self, directory: str, module: str, spares: Ahead | None = None,
        programs: Programs | None = None, lessons: str = LESSONS,
    ) -> None:  # fmt: skip
        self.process = StudentProcess(directory, module, spares, lessons=lessons)
        spares = self.process.spares
        self.programs = programs or Programs()
        self.simulated = False
        self.ahead: dict[tuple[str, str], tuple[StudentProcess, Any, int]] = {}
        """Exports asked for ahead: (exercise, example) → (the student's process
        asked, its process then, the question)."""
        self.runs: dict[str, list[Asked]] = {}
        """Each exercise's export runs that the grader took programs from: what they
        send after it is dropped once the exercise is over (:meth:`end`)."""
        self.after: dict[tuple[str, str], Example | None] = {}
        """(exercise, example) → the example after it (as the engine said)."""
        self.moot: list[tuple[StudentProcess, int]] = []
        """Questions of exercises over, not taken: answered before the next asks."""
        self.helpers = [
            StudentProcess(directory, module, given=given, lessons=lessons)
            for given in spares.take_helpers(directory, module)
        ]
        self.usable: list[StudentProcess] = []
        """The helpers that have imported the student's module (as the first
        process did): asked for exports from then on."""
        for helper in self.helpers:
            threading.Thread(target=self._wake, args=(helper,), daemon=True,
                             name="student's helper").start()  # fmt: skip

    def _wake(self, helper: StudentProcess) -> None:
        """Wait (in a thread of its own) until ``helper`` has imported the module;
        usable from then on, unless that failed there."""
        try:
            helper.start()
        except BaseException:  # noqa: BLE001 — a helper that fails is not used, nothing more
            helper.close()
            return
        with self.process._cv:
            if helper.load_error is None and not helper.closed:
                self.usable.append(helper)

    def learn(
        self, exercise: str, example: Example, following: Example | None, simulated: bool
    ) -> None:
        """``following`` comes after ``example`` of ``exercise`` (asked ahead with it);
        ``simulated``: the lesson is graded on simulated devices. What an exercise
        over asked and did not take is answered first (:meth:`end`)."""
        with self.process._cv:
            self.after[(exercise, example_key(example))] = following
            self.simulated = simulated
            moot, self.moot = self.moot, []
        for sp, seq in moot:  # answered (or its process stopped) before this example asks
            sp.settle(seq)

    def end(self, exercise: str) -> None:
        """``exercise`` is over: what was asked for it and not taken is moot, waited
        for before the next example asks (:meth:`learn`; after the last exercise,
        never: the process is closed). The next exercise's first example may have
        been asked already (prepared while this one's last ran:
        :mod:`grader.sandbox.prepared`); it stays."""
        with self.process._cv:
            asked = [self.ahead.pop(key) for key in list(self.ahead) if key[0] == exercise]
            asked += self.runs.pop(exercise, [])
            self.moot += [(sp, seq) for sp, proc, seq in asked if proc is sp.proc]
            self.after = {key: ex for key, ex in self.after.items() if key[0] != exercise}

    def export(
        self, exercise: str, example: Example, index: int,
        following: tuple[str, Example] | None = None, turn: Turn | None = None,
        asked: Asked | None = None,
    ) -> tuple[dict, Asked]:  # fmt: skip
        """The ``index``-th program of ``example`` of ``exercise``, exported: the student's process
        runs the spec once per example and sends each program as it exports it
        (:mod:`grader.sandbox.student`), so program 0 asks (or takes the run asked
        ahead), and the later ones wait for that same run's next part. After the
        first, the run of ``following`` is asked for (the student's process
        traces it while this one compiles here), and with helpers the example
        after it too, each of the two from a process with fewer questions asked
        ahead. ``turn``: an example prepared ahead, which asks nothing once
        abandoned; ``asked``: the example's run, for programs after the first.
        The answer, ``{"ok", "blob", "said"}`` or what the run raised before it
        reached that program, and the run it came from. ``following``: the
        exercise and example after it (the next exercise's first after the last)."""
        with self.process._cv:
            if turn is not None and turn.abandoned:
                raise Abandoned()
            key = (exercise, example_key(example))
            if asked is None:
                asked = self.ahead.pop(key, None)
                if asked is None or asked[1] is not asked[0].proc:
                    seq = self.process.export(exercise, example, self.simulated)
                    asked = (self.process, self.process.proc, seq)
                self.runs.setdefault(exercise, []).append(asked)
            elif asked[1] is not asked[0].proc:
                raise StudentProcessDied("it was stopped while the grader waited for it")
            early = index == 0 and following is not None and self._helping()
            if early and not turn_abandoned(turn):  # the helpers are idle meanwhile
                self.ask_ahead(*following)
        with phases.phase("wait: student traces and exports"):
            try:
                answer = asked[0].receive(asked[2], part=index)
            except (StudentProcessDied, StudentFault):
                raise
            except BaseException:  # a time limit: what another process was asked is moot too
                self.stop()
                raise
        if "part" not in answer:  # the run ended before it reached this program
            answer = _ended_before(answer, index)
        self.process.spares.exported(self.process.module)
        if index == 0 and following is not None and not early:
            with self.process._cv:
                if not turn_abandoned(turn):
                    self.ask_ahead(*following)
        return answer, asked

    def _helping(self) -> list[StudentProcess]:
        """The helpers that can be asked now."""
        return [h for h in self.usable if h.proc is not None and not h.closed]

    def ask_ahead(self, exercise: str, following: Example) -> None:
        """Ask for ``following`` of ``exercise`` (and, with helpers, the example
        after it) ahead; called with the lock held."""
        wanted = [following]
        helpers = self._helping()
        if helpers and (after := self.after.get((exercise, example_key(following)))) is not None:
            wanted.append(after)
        for ex in wanted:
            nxt = (exercise, example_key(ex))
            if nxt in self.ahead:
                continue
            sp = min([self.process, *helpers], key=lambda p: p.waiting)  # the least asked
            try:
                seq = sp.export(exercise, ex, self.simulated)
            except StudentProcessDied:
                if sp is self.process:
                    raise
                continue  # a helper gone: the first process is asked in that example's turn
            self.ahead[nxt] = (sp, sp.proc, seq)

    def stop(self) -> None:
        """Stop the student's processes (an example's time limit): the first is
        started again when next needed, the helpers are not."""
        for helper in self.helpers:
            helper.stop()
        self.process.stop()

    def function(self, name: str) -> RemoteFunction:
        return RemoteFunction(self, name)

    def close(self) -> None:
        for helper in self.helpers:
            helper.close()
        self.process.close()


def _ended_before(answer: dict, index: int) -> dict:
    """The answer of an export run that ended before its ``index``-th program:
    what it raised then, or (it raised nothing) that it built no such program."""
    if isinstance(answer.get("raised"), dict):
        return {"raised": answer["raised"]}
    built = answer.get("programs")
    return {"raised": {
        "kind": "fault", "type": "RuntimeError", "called": 1,
        "message": "the spec built no program for this example" if not index else
        f"the spec built {built} programs for this example, where the grader's run of it "
        f"asks for program {index + 1}",
    }}  # fmt: skip


def turn_abandoned(turn: Turn | None) -> bool:
    return turn is not None and turn.abandoned


def example_key(example: Example) -> str:
    """An example as a key (of what was asked for it ahead, of the one after it)."""
    return json.dumps(wire.encode(example), sort_keys=True)


class RemoteFunction:
    """The student's function, called in the student's process."""

    def __init__(self, session: Session, name: str, runtime: Replaying | None = None):
        self.session, self.name, self.runtime = session, name, runtime
        self.__name__ = name

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        import jax

        rt = self.runtime
        if rt is not None and rt.turn is not None:  # prepared ahead: asks in its turn only
            rt.turn.wait()

        if kwargs or any(isinstance(a, jax.core.Tracer) for a in jax.tree.leaves(args)):
            raise GraderFault(
                f"the spec traced {self.name} in the grading process; it must compile "
                "through compile_and_run"
            )
        s = self.session
        answer = s.process.call(self.name, args, s.simulated)
        if "ok" not in answer:
            raise_from(answer)
        meshes = _meshes_in(args)
        try:
            result = wire.decode(answer["result"], mesh_for=_mesh_lookup(meshes))
            after = wire.decode(answer["args"], mesh_for=_mesh_lookup(meshes))
        except wire.WireError as exc:
            raise StudentProcessDied(
                f"it sent back a value the grader cannot take ({exc})"
            ) from None
        _write_back(args, after)
        return result


def _meshes_in(args: Any) -> list[Any]:
    from jax.sharding import Mesh

    out = []

    def visit(v: Any) -> None:
        if isinstance(v, Mesh):
            out.append(v)
        elif isinstance(v, list | tuple):
            for x in v:
                visit(x)
        elif isinstance(v, dict):
            for x in v.values():
                visit(x)

    visit(args)
    return out


def _mesh_lookup(meshes: list[Any]) -> Any:
    def find(r: dict) -> Any:
        for m in meshes:
            if (
                [int(s) for s in m.devices.shape] == r.get("shape")
                and [str(a) for a in m.axis_names] == r.get("axes")
                and [int(d.id) for d in m.devices.flat] == r.get("ids")
            ):
                return m
        return None

    return find


def _write_back(args: tuple, after: Any) -> None:
    """Leave the grader's arguments as the student's function left its copies
    (lists, dicts and arrays changed in place), so a check can see it."""
    import numpy as np

    if not isinstance(after, list) or len(after) != len(args):
        return
    for before, now in zip(args, after):
        try:
            if isinstance(before, list) and isinstance(now, list):
                before[:] = now
            elif isinstance(before, dict) and isinstance(now, dict):
                before.clear()
                before.update(now)
            elif (
                isinstance(before, np.ndarray) and isinstance(now, np.ndarray)
                and before.shape == now.shape and before.flags.writeable
            ):  # fmt: skip
                before[...] = now
        except Exception:
            pass


class Replaying(Runtime):
    """The runtime in the grading process: the student's program comes exported
    from the student's process, is checked, and runs here on the real data
    (this runtime's salt, which the student's process never sees)."""

    def __init__(
        self, session: Session, exercise: str, example: Example, salt: int,
        following: tuple[str, Example] | None = None,
    ):  # fmt: skip
        super().__init__(example, salt, functions=self._remote)
        self.session, self.index, self.exercise = session, 0, exercise
        self.following = following
        """The exercise and example after this one, asked of the student's process
        once this one's first program is back: the exercise's next, or (set by
        :class:`~grader.sandbox.prepared.PreparedAhead`) the next exercise's first."""
        self.turn: Turn | None = None
        """Set where its example is prepared ahead (:mod:`grader.sandbox.prepared`):
        what it waits for before it runs the student's program or asks anything
        but its first program."""
        self.answered = threading.Event()
        """Set once the student's process has handed back this example's first
        program (the next example's was asked for then), or once the example ran:
        the next example may be prepared. Never after a failure."""
        self.asked: Asked | None = None
        """The student's process's run of this example's spec (its first program asked)."""

    def interrupt(self) -> None:
        self.session.stop()

    def _remote(self, name: str) -> RemoteFunction | None:
        """The student's function ``name``, called in the student's process."""
        if name not in self.session.process.functions:
            return None
        return RemoteFunction(self.session, name, self)

    def student_program(self, program, args, mesh, compiler_options, extra) -> Trial:
        answer, blob = self._handed()
        started = time.perf_counter()
        digest = hashlib.sha256(blob).digest()
        known = self.session.programs.take(digest)
        exported = known.exported if known else _deserialize(blob)
        known = self.session.programs.keep(digest, known or Known(exported))
        program = known.program
        check_exported(exported, args, mesh, known.calls)
        said = answer.get("said")
        unchecked = said.get("unchecked_shard_maps") if isinstance(said, dict) else None
        if isinstance(unchecked, int) and not isinstance(unchecked, bool):
            # What the student's process says (it traced check_vma, which no exported
            # program shows): wording for a hint at most, never a verdict.
            extra = {**extra, SAID_UNCHECKED: unchecked}
        with theirs("lower"):
            lowered = known.jitted.trace(*args).lower()
        phases.add("read, check and lower the exported program", time.perf_counter() - started)
        with theirs("compile or run"):
            return runtimes.run_compiled(  # looked up here: the GPU check spies on it
                lowered,
                program,
                args,
                mesh,
                self.example,
                compiler_options,
                extra,
                self.salt,
                before_run=self.turn.wait if self.turn is not None else None,
                reads=known.reads,
                read_as=_inputs_key(args, mesh, compiler_options),
                memory_limit=replay_limit(mesh, self.session.process.spares.sandbox.memory),
            )

    def student_kernels(self, program, args, mesh) -> tuple:
        """The program exported for a TPU by the student's process, read here, never run
        (:meth:`Runtime.kernels`): its place among the example's programs is asked for as
        any program's is."""
        return read_kernels(_deserialize(self._handed()[1]), args, mesh)

    def _handed(self) -> tuple[dict, bytes]:
        """The example's next program as the student's process hands it over: its
        answer and the program's bytes (its exception raised here where it failed)."""
        k, self.index = self.index, self.index + 1
        if k and self.turn is not None:  # only the first program is asked for ahead
            self.turn.wait()
        answer, self.asked = self.session.export(
            self.exercise, self.example, k, self.following, self.turn, self.asked
        )
        if "ok" not in answer:
            raise_from(answer)
        self.answered.set()  # exported: the next example is prepared (not after a failure)
        try:
            return answer, base64.b64decode(str(answer["blob"]))
        except Exception as exc:
            raise _unreadable(exc) from None


def _deserialize(blob: bytes) -> Any:
    """A program handed over, read (the student's process's fault where it cannot be)."""
    import jax

    try:
        return jax.export.deserialize(bytearray(blob))
    except Exception as exc:
        raise _unreadable(exc) from None


def _unreadable(exc: Exception) -> StudentProcessDied:
    return StudentProcessDied(f"it handed back a program the grader cannot read ({exc})")


def replay_limit(mesh: Any, memory: str = "") -> int | None:
    """What a student's program may need on all its devices together, where they
    are the host's memory (simulated CPU devices): what the student's process may
    allocate (``memory``, :attr:`grader.config.Sandbox.memory`: the worker's
    ``COURSE_SANDBOX_MEMORY``; "": the default). An accelerator's own memory is bounded
    by the accelerator (its refusal is the student's error, :func:`theirs`)."""
    here = mesh.devices.flat[0].platform if mesh is not None else platform_here()
    try:
        return jail.memory_limit(memory) if here == "cpu" else None
    except ValueError:  # not a size: the sandbox is off and says why
        return None


class Known:
    """A program handed back before, by its bytes: what reading it gave."""

    def __init__(self, exported: Any):
        import jax

        self.exported = exported
        read = read_exported(exported)
        self.calls, self.program = read.calls, read.program
        self.jitted = jax.jit(exported.call, donate_argnums=read.donated)
        """Kept, so that tracing and lowering it again come from jax's own caches. It
        donates what the program donates (lesson 16's cache), so that the program
        compiled here aliases what it aliased where it was traced."""
        self.reads: dict[Any, Any] = {}
        """What reading its compiled HLO and memory gave, by the inputs it was
        lowered for (:func:`_inputs_key`): the same compiled program each time."""


def _inputs_key(args: tuple, mesh: Any, options: dict[str, Any] | None) -> Any:
    """What a program's lowering and compile depend on beyond the program: its
    inputs' shapes, dtypes and placement (each shard's device and slice), the
    mesh's devices, the options."""
    import jax

    def leaf(x: Any) -> tuple:
        shards = getattr(x, "addressable_shards", None)
        placed = tuple((s.device.id, str(s.index)) for s in shards) if shards else None
        return (tuple(x.shape), str(x.dtype), repr(getattr(x, "sharding", None)), placed)

    devices = None
    if mesh is not None:
        devices = (tuple(mesh.axis_names), tuple(d.id for d in mesh.devices.flat))
    return (
        repr(jax.tree.structure(args)), tuple(leaf(x) for x in jax.tree.leaves(args)), devices,
        repr(sorted((options or {}).items())),
    )  # fmt: skip


class Programs:
    """Programs handed back before, by their bytes' SHA-256 (what reading them
    gave): the same bytes are the same program, so a re-grade of unchanged code
    reads, traces and lowers nothing anew (what depends on the example is still
    checked each time). A serving worker keeps one for all its grades."""

    LIMIT = 512
    """Programs kept (a serving worker re-grades unchanged code)."""

    def __init__(self) -> None:
        self._known: dict[bytes, Known] = {}
        self._lock = threading.Lock()

    def take(self, digest: bytes) -> Known | None:
        with self._lock:
            return self._known.pop(digest, None)

    def keep(self, digest: bytes, known: Known) -> Known:
        with self._lock:
            self._known[digest] = known  # most recent last
            while len(self._known) > self.LIMIT:
                del self._known[next(iter(self._known))]
        return known


class Isolated(Backend):
    """The engine's backend in the grading worker: the student's module lives in
    a process of its own (:class:`StudentProcess`), and every example runs with
    a :class:`Replaying` runtime on data from ``salt``."""

    def __init__(
        self, directory: Path, module: str, *, salt: int, spares: Ahead | None = None,
        programs: Programs | None = None, lessons: str = LESSONS, ahead: bool = True,
    ) -> None:  # fmt: skip
        self.ahead = ahead
        """Whether an exercise's next example is prepared while one runs
        (:meth:`examples`; the worker's ``COURSE_AHEAD=0`` turns it off, to
        measure what it saves)."""
        self.session = Session(str(directory), module, spares, programs, lessons)
        self.module, self.salt, self.lessons = module, salt, lessons
        self.sandbox = jail.state(self.session.process.spares.sandbox)
        self.clusters: Any = None

    def prepare(self) -> None:
        """The student's process up, jax imported (the machine's time)."""
        try:
            self.session.process.spawn()
        except StudentProcessDied as exc:
            raise LoadError(f"the process for your code ended as it started: {exc}") from None

    def load(self) -> Any:
        """A stand-in holding the student's process's functions."""
        from types import SimpleNamespace

        try:
            self.session.process.start()
        except StudentProcessDied as exc:
            raise LoadError(
                f"importing {self.module}.py ended the process it ran in: {exc}"
            ) from None
        if self.session.process.load_error:
            raise LoadError(self.session.process.load_error)
        return SimpleNamespace(
            **{n: self.session.function(n) for n in self.session.process.functions}
        )

    def examples(
        self, spec: ExerciseSpec, examples: list[Example], fn: Callable[[], Callable[..., Any]],
        runtime: RuntimeFor,
    ) -> Examples:  # fmt: skip
        """Each example after the first prepared while the one before it runs, and
        the first while the exercise before runs its last
        (:class:`~grader.sandbox.prepared.PreparedAhead`), unless ``ahead`` is off
        or the exercise runs on a cluster. Once it is over, what was asked ahead
        for it and not taken is moot (:meth:`Session.end`)."""
        ended = functools.partial(self.session.end, spec.name)
        if self.ahead and spec.cluster is None:
            return PreparedAhead(spec, examples, fn, runtime, ended=ended)
        return Examples(spec, examples, fn, runtime, ended=ended)

    def runtime(
        self, exercise: str, example: Example, following: Example | None, simulated: bool = False
    ) -> Runtime:
        self.session.learn(exercise, example, following, simulated)
        self.session.process.start()  # after a hang or a crash: started again here, not in run
        after = (exercise, following) if following is not None else None
        rt = Replaying(self.session, exercise, example, self.salt, after)
        rt.memory_limit = functools.partial(
            replay_limit, memory=self.session.process.spares.sandbox.memory
        )
        if self.clusters is None:
            process = self.session.process
            self.clusters = process.spares.clusters(process.directory, self.module)
        rt.clusters = self.clusters
        self.clusters.form(load_spec(self.module, self.lessons).exercise(exercise), example)
        return rt

    def close(self) -> None:
        self.session.close()
        if self.clusters is not None:
            if self.clusters.keys():
                self.session.process.spares.clustered(self.module, self.clusters.keys())
            self.clusters.close()
