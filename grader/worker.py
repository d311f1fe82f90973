"""The grading worker: ``python -m grader.worker REQUEST_JSON --events-fd FD``.

Runs in its own process so that the ``course`` command never imports jax,
a student's program that never returns can be killed, and a crash in XLA
cannot take progress with it. It writes one JSON event per line to FD:

``{"type": "lesson_start", "lesson": 2, "devices": "8 CPU devices (simulated)"}``
``{"type": "example", "lesson": 2, "exercise": "ring_all_gather", "index": 0, "example": "n=1 …"}``
``{"type": "exercise", "lesson": 2, "result": {...ExerciseResult.to_dict()...}}``
``{"type": "lesson_end", "lesson": 2, "duration": 1.9}``
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m grader.worker")
    parser.add_argument("request", help="JSON request (see grader.runner.Request)")
    parser.add_argument("--events-fd", type=int, required=True)
    args = parser.parse_args(argv)
    request = json.loads(args.request)
    events = os.fdopen(args.events_fd, "w", buffering=1)

    def emit(event: dict) -> None:
        events.write(json.dumps(event) + "\n")
        events.flush()

    from grader import devices

    devices.configure(request.get("devices"), request.get("platform"))
    if request.get("cache_dir"):
        enable_compilation_cache(request["cache_dir"])
    from grader import engine
    from grader.spec import parse_example

    example = parse_example(request["example"]) if request.get("example") else None
    for lesson in request["lessons"]:
        number = lesson["lesson"]
        emit({"type": "lesson_start", "lesson": number, "devices": devices.describe()})

        def on_event(event: dict, number: int = number) -> None:
            if event["type"] in ("example", "exercise"):
                emit({**event, "lesson": number})

        result = engine.grade_lesson(
            number,
            lesson["module"],
            Path(request["directory"]),
            only=lesson.get("only"),
            seed=request.get("seed", 0),
            example=example,
            max_examples=request.get("max_examples"),
            timeout=request.get("timeout"),
            on_event=on_event,
        )
        emit({"type": "lesson_end", "lesson": number, "duration": result.duration})
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
