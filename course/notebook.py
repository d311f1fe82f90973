"""Grade from a notebook cell: ``from course.notebook import grade; grade("2")``.

Grading still runs in a worker process, so a kernel that has already
imported jax (with whatever devices it has) does not matter; the report is
a rich renderable, which Jupyter displays.
"""

from __future__ import annotations

from typing import Any


def grade(target: str | int | None = None, **options: Any) -> bool:
    """Grade like ``course grade TARGET``; True when everything passed.

    Options are those of the command: ``solutions``, ``path``, ``seed``,
    ``example``, ``timeout``, ``devices``, ``cpu``, ``max_examples``.
    """
    from course.commands.common import make_app
    from course.commands.grade import grade as run

    target = None if target is None else str(target)
    return run(make_app(None, None), target, **options) == 0
