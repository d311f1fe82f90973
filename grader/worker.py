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
from pathlib import Path

from grader.protocol import Event, LessonFinished, Request, encode_event


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m grader.worker")
    parser.add_argument("--events-fd", type=int, required=True)
    args = parser.parse_args(argv)
    request = Request.decode(sys.stdin.read())
    events = os.fdopen(args.events_fd, "w", buffering=1)

    def emit(event: Event) -> None:
        events.write(encode_event(event) + "\n")
        events.flush()

    from grader import devices

    devices.configure(request.devices, request.platform)
    if request.cache_dir:
        enable_compilation_cache(request.cache_dir)
    from grader import engine
    from grader.spec import parse_example

    example = parse_example(request.example) if request.example else None
    for job in request.lessons:
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
        emit(LessonFinished(job.lesson, result.duration))
    events.close()
    return 0


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
    sys.exit(main())
