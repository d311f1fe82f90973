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
import os
import secrets
import sys
import traceback
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import NoReturn

from grader.sandbox.lifeline import undumpable, watch_parent
from grader.sandbox.protocol import (
    REPORT,
    Event,
    GraderFailed,
    LessonFinished,
    Rejected,
    Request,
    encode_event,
    sign,
)


def main(argv: list[str] | None = None) -> NoReturn:
    """Grade, then leave at once: ``os._exit`` skips the student's ``atexit``
    handlers and does not wait for threads it started."""
    parser = argparse.ArgumentParser(prog="python -m grader.sandbox.worker")
    parser.add_argument("--events-fd", type=int, required=True)
    args = parser.parse_args(argv)
    events = os.fdopen(args.events_fd, "w", buffering=1)
    owner = os.getpid()
    request = Request.decode(sys.stdin.read())
    key, sent = request.key, 0

    def emit(event: Event) -> None:
        nonlocal sent
        if os.getpid() != owner:  # not ours to say (no code of the student's runs here)
            os._exit(0)
        events.write(sign(key, sent, encode_event(event)) + "\n")
        events.flush()
        sent += 1

    watch_parent()
    undumpable()  # the events key is in this process's memory
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
    from grader.measure import devices
    from grader.sandbox import isolation

    devices.configure(request.devices, request.platform)
    salt = secrets.randbits(62) | 1  # the data is drawn here, from a secret of this run's
    isolation.hide(*request.hidden, request.cache_dir)  # the student's process never needs them
    spares = isolation.Spares()
    # the student's process imports jax and the module while this one imports jax
    first, *rest = [(request.directory, job.module) for job in request.lessons] or [("", "")]
    if first[1]:
        spares.prestart(*first, then=rest)
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
                backend=lambda directory, module: isolation.Isolated(
                    directory, module, salt=salt, spares=spares
                ),
            )
        except engine.BadExample as exc:
            raise _Rejected(f"--example {request.example!r}: {exc}") from None
        emit(LessonFinished(job.lesson, result.duration))
    spares.close()  # a process started ahead for a lesson that was not graded


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
