"""The next example of an exercise, prepared while the one before it runs.

The engine is single-threaded: it hands a backend an exercise's examples in
order (:class:`grader.backend.Examples`: each one started, then run in its turn),
and tells each exercise's examples which exercise's come next
(:meth:`~grader.backend.Examples.followed_by`).
The sandbox's backend (:class:`grader.sandbox.isolation.Isolated`) hands back
:class:`PreparedAhead`, which prepares each example after the first in a thread
of its own, here in the sandbox, while the one before it runs (the next
exercise's first example while this exercise's last runs): its inputs and
references built, its first program asked for (as the student's process is asked
for it ahead anyway), received, checked, lowered and compiled. Everything else
it does (run the program, ask the student's process anything more) waits for its
turn (:class:`Turn`): the engine's :meth:`PreparedAhead.run` of it, once the
example before it passed its checks. So two compiles overlap, and nothing else
changes: the same questions in the same order (a serving worker's helpers take
some of the exports asked ahead: :class:`grader.sandbox.isolation.Session`), one
student's program running at a time, the same verdicts and events, the example's
time limit counted from its turn (the engine's signal, in the grading thread,
around :meth:`PreparedAhead.run`).
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import Any

from grader import phases
from grader.backend import Examples
from grader.faults import Abandoned, NotStartedHere
from grader.spec import Example, ExerciseSpec


class Turn:
    """When an example prepared ahead may go on past its first program's compile:
    run that program, ask the student's process anything more. So the student's
    process is asked the same questions in the same order as when the examples
    run one after another, and no two student's programs run at once."""

    def __init__(self) -> None:
        self._go = threading.Event()
        self.abandoned = False

    def allow(self) -> None:
        """The example before it is checked: this one goes on."""
        self._go.set()

    def abandon(self) -> None:
        self.abandoned = True
        self._go.set()

    def wait(self) -> None:
        """Until :meth:`allow`; raises :class:`Abandoned` once abandoned."""
        self._go.wait()
        if self.abandoned:
            raise Abandoned()


class InTurn:
    """The student's function for an example prepared ahead: called in its turn."""

    def __init__(self, fn: Callable[..., Any], turn: Turn):
        functools.update_wrapper(self, fn)
        self.fn, self.turn = fn, turn

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self.turn.wait()
        return self.fn(*args, **kwargs)


class Prepared:
    """One example, prepared in a thread once ``after`` is set (the example before
    it handed back its program, or ran), on ``rt`` (a replaying runtime, which
    waits for ``rt.turn`` before it runs a program or asks anything but its first
    one). ``called``: the engine's function for it (it counts the calls)."""

    def __init__(
        self, spec: ExerciseSpec, called: Callable[..., Any], rt: Any, example: Example,
        after: threading.Event,
    ) -> None:  # fmt: skip
        self.rt, self.example, self.after, self.called = rt, example, after, called
        rt.turn = Turn()
        self.trial: Any = None
        self.error: BaseException | None = None
        self.done = threading.Event()
        self.thread = threading.Thread(
            target=self._run, args=(spec, InTurn(called, rt.turn)), daemon=True,
            name=f"prepare {spec.name}",
        )  # fmt: skip
        self.thread.start()

    def _run(self, spec: ExerciseSpec, fn: Callable[..., Any]) -> None:
        try:
            self.after.wait()
            if self.rt.turn.abandoned:
                return
            self.trial = spec.run(self.rt, fn, self.example)
        except BaseException as exc:  # noqa: BLE001 — raised again in its turn
            self.error = exc
        finally:
            self.done.set()

    def result(self) -> Any:
        """Its trial, once it has run in its turn (or what it raised)."""
        self.rt.turn.allow()
        try:
            with phases.phase("wait: the example prepared ahead finishes"):
                self.done.wait()
        except BaseException:  # the example's time limit: stop what it waits for
            self.rt.interrupt()
            self.thread.join()  # stuck in compiled code: the runner's deadline ends us, as before
            raise
        if self.error is not None:
            raise self.error
        return self.trial

    def abandon(self) -> None:
        self.rt.turn.abandon()
        self.after.set()  # it may not have started: it ends now


class PreparedAhead(Examples):
    """An exercise's examples, each after the first prepared (:class:`Prepared`)
    while the one before it runs, and the next exercise's first while this one's
    last runs (where that exercise's are a :class:`PreparedAhead` too). Its
    runtimes are replaying ones (:class:`grader.sandbox.isolation.Replaying`):
    ``rt.answered`` is set once the student's process handed back the example's
    first program, or once it ran."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.pending: dict[int, Prepared] = {}
        """Examples prepared ahead, by index: the next one at most."""
        self.current: Prepared | None = None
        """The started example, where it was prepared ahead."""
        self.next: PreparedAhead | None = None
        """The next exercise's examples (:meth:`followed_by`)."""
        self.last_ran = False
        """Whether the last example ran to a trial (the student's process was not
        stopped in it): only then is the next exercise's first, prepared on the
        same process meanwhile, kept."""

    def followed_by(self, nxt: Examples) -> None:
        self.next = nxt if isinstance(nxt, PreparedAhead) else None

    def prepare_first(self, after: threading.Event) -> None:
        """Prepare this exercise's first example once ``after`` is set (the previous
        exercise's last example handed back its program, or ran)."""
        if 0 in self.pending or not self.examples:
            return
        try:  # made again in its turn where it cannot be made now
            rt = self.runtime(self.examples[0], self.following(0))
        except Exception:  # noqa: BLE001
            return
        self.pending[0] = Prepared(self.spec, self.fn(), rt, self.examples[0], after)

    def abandon_first(self) -> None:
        """The exercise before this one stopped in its last example: its first is
        made afresh in its turn."""
        prepared = self.pending.pop(0, None)
        if prepared is not None:
            prepared.abandon()

    def start(self, index: int) -> Callable[..., Any]:
        self.current = self.pending.pop(index, None)
        if self.current is not None:
            called = self.current.called
            self.now = (self.current.rt, called)
        else:
            called = super().start(index)
        rt = self.now[0] if self.now is not None else None
        following = self.following(index)
        if following is not None and rt is not None:
            try:  # made again in its turn where it cannot be made now
                nxt = self.runtime(following, self.following(index + 1))
            except Exception:  # noqa: BLE001
                nxt = None
            if nxt is not None:
                if self.following(index + 1) is None:
                    self._lead(nxt)
                prepared = Prepared(self.spec, self.fn(), nxt, following, rt.answered)
                self.pending[index + 1] = prepared
        elif following is None and rt is not None and self.next is not None:
            if self.current is None:
                self._lead(rt)
            self.next.prepare_first(rt.answered)
        return called

    def _lead(self, rt: Any) -> None:
        """The last example's runtime asks the student's process for the next
        exercise's first example once its own first program is back, as it asks
        for the exercise's next example otherwise."""
        if self.next is not None and self.next.examples:
            rt.following = (self.next.spec.name, self.next.examples[0])

    def run(self, index: int) -> Any:
        assert self.now is not None
        rt, called = self.now
        if self.current is None:
            trial = super().run(index)
        else:
            try:
                trial = self.current.result()
            except NotStartedHere:  # no process was running: run now, in its turn
                ex = self.examples[index]
                trial = self.spec.run(self.runtime(ex, self.following(index)), called, ex)
        rt.answered.set()  # it ran (even if it handed back no program): the next one may start
        self.last_ran = index == len(self.examples) - 1
        return trial

    def close(self) -> None:
        for prepared in self.pending.values():  # the example before it failed: not wanted
            prepared.abandon()
        self.pending.clear()
        if self.next is not None and not self.last_ran:
            self.next.abandon_first()  # the process it was asked of may have been stopped
        super().close()
