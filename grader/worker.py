"""The grading worker: ``python -m grader.worker --events-fd FD``.

Runs in its own process so that the ``course`` command never imports jax,
a student's program that never returns can be killed, and a crash in XLA
cannot take progress with it. It reads one :class:`grader.protocol.Request`
from stdin and writes one event per line to FD (see :mod:`grader.protocol`).
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import NoReturn

from grader.protocol import (
    REPORT,
    Event,
    ExerciseGraded,
    GraderFailed,
    ImportStarted,
    LessonFinished,
    Rejected,
    Request,
    encode_event,
    sign,
)
from grader.results import ExerciseResult, Status


def main(argv: list[str] | None = None) -> NoReturn:
    """Grade, then leave at once: ``os._exit`` skips the student's ``atexit``
    handlers and does not wait for threads it started."""
    parser = argparse.ArgumentParser(prog="python -m grader.worker")
    parser.add_argument("--events-fd", type=int, required=True)
    args = parser.parse_args(argv)
    events = os.fdopen(args.events_fd, "w", buffering=1)
    owner = os.getpid()
    request = Request.decode(sys.stdin.read())
    key, sent = request.key, 0

    seal = Seal()

    def emit(event: Event) -> None:
        nonlocal sent
        if os.getpid() != owner:  # a child the student's code forked: it has no say
            os._exit(0)
        if isinstance(event, ImportStarted):
            seal.take()
        elif isinstance(event, ExerciseGraded) and (changed := seal.broken()):
            event = ExerciseGraded(event.lesson, tampered(event.result, changed))
        events.write(sign(key, sent, encode_event(event)) + "\n")
        events.flush()
        sent += 1

    _watch_parent()
    try:
        grade(replace(request, key=""), emit)
    except _Rejected as exc:
        emit(Rejected(str(exc)))
    except Exception:
        emit(GraderFailed(f"{traceback.format_exc().rstrip()}\n— {REPORT}"))
    events.close()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


class _Rejected(Exception):
    """The request asks for something the exercise cannot take."""


def grade(request: Request, emit: Callable[[Event], None]) -> None:
    from grader import devices

    devices.configure(request.devices, request.platform)
    if request.cache_dir:
        enable_compilation_cache(request.cache_dir)
    from grader import engine
    from grader.spec import parse_example

    example = parse_example(request.example) if request.example else None
    if example is not None:
        for job in request.lessons:
            for name in job.exercises:
                if why := engine.example_problem(job.module, name, example):
                    raise _Rejected(f"--example {request.example!r}: {why}")
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
            )
        except engine.BadExample as exc:
            raise _Rejected(f"--example {request.example!r}: {exc}") from None
        emit(LessonFinished(job.lesson, result.duration))


WATCHED = ("json", "hmac", "numpy", "numpy.testing")
"""Modules besides the grader's whose functions checks and events rely on."""


class Seal:
    """Which functions and classes the grader (and what it relies on) had
    before the student's module was imported, to notice code that patches
    them (``grader.checks.Values.__call__ = …``). A mitigation: code that
    patches and restores them, or patches what is not watched, goes unseen."""

    def __init__(self) -> None:
        self.seen: dict[str, int] = {}

    def take(self) -> None:
        """Add what is loaded now (and was not seen before) to the seal."""
        for name, value in _callables().items():
            self.seen.setdefault(name, value)

    def broken(self) -> list[str]:
        """Names whose function or class is no longer the one sealed."""
        now = _callables()
        changed = [name for name, v in self.seen.items() if now.get(name, v) != v]
        self.take()  # grader modules imported lazily since are sealed from here on
        return changed


def _callables() -> dict[str, int]:
    out: dict[str, int] = {}
    for name, module in list(sys.modules.items()):
        if not (name in WATCHED or name == "__main__" or name.split(".")[0] == "grader"):
            continue
        for attr, value in list(vars(module).items()):
            if callable(value):
                out[f"{name}.{attr}"] = id(value)
                out[f"{name}.{attr}.__code__"] = id(getattr(value, "__code__", None))
            if isinstance(value, type) and value.__module__ == name:
                for member, v in list(vars(value).items()):
                    if callable(v) or isinstance(v, staticmethod | classmethod | property):
                        out[f"{name}.{attr}.{member}"] = id(v)
    return out


def tampered(result: ExerciseResult, changed: list[str]) -> ExerciseResult:
    shown = ", ".join(changed[:3]) + (" …" if len(changed) > 3 else "")
    return ExerciseResult(
        result.lesson, result.exercise, Status.ERROR, example=result.example,
        error=f"Your code changed the grader's own code ({shown}); an exercise graded "
        "that way is not trusted. Grade code that leaves the grader alone.",
    )  # fmt: skip


def _watch_parent() -> None:
    """Leave when the ``course`` process is gone (killed with SIGKILL, say),
    instead of grading on for no one."""
    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(1.0)
        os._exit(1)

    threading.Thread(target=watch, daemon=True, name="watch-parent").start()


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
