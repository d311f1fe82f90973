"""Import the module under test from a directory, and explain failures.

Nothing imports ``exercises`` or ``solutions`` by name: the grader is told
which directory to grade and loads ``<dir>/<module>.py`` from its path.
"""

from __future__ import annotations

import importlib.util
import sys
import traceback
from pathlib import Path
from types import ModuleType


class ExampleTimeout(Exception):
    """Raised inside the student's code (or its module's import) when it runs past its limit."""


class LoadError(Exception):
    """The module could not be imported; ``str()`` is the student-facing message."""


def load_module(directory: Path, module: str, *, interrupts_are_theirs: bool = False) -> ModuleType:
    """Import ``directory/module.py``; any failure is a :class:`LoadError` in the
    student's words, but a ``KeyboardInterrupt`` (the user's Ctrl-C, here) and a
    time limit, which are raised again. ``interrupts_are_theirs``: a process no
    terminal's Ctrl-C reaches (the student's process): a KeyboardInterrupt there is
    the module's own failure."""
    path = Path(directory) / f"{module}.py"
    if not path.exists():
        raise LoadError(f"{path} does not exist")
    name = f"_course_under_test_.{module}_{abs(hash(str(path.resolve())))}"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    try:
        spec.loader.exec_module(mod)
    except SyntaxError as exc:
        sys.modules.pop(name, None)
        detail = "".join(traceback.format_exception_only(type(exc), exc)).rstrip()
        raise LoadError(f"{path.name} has a syntax error (line {exc.lineno}):\n{detail}") from None
    except BaseException as exc:  # any import-time failure is the student's
        sys.modules.pop(name, None)
        if isinstance(exc, ExampleTimeout) or (
            isinstance(exc, KeyboardInterrupt) and not interrupts_are_theirs
        ):
            raise
        raise LoadError(
            f"importing {path.name} failed:\n{format_student_error(exc, path.parent)}"
        ) from None
    return mod


def format_student_error(exc: BaseException, directory: Path) -> str:
    """The exception with only the frames from files in ``directory`` (an
    exception from the student's process comes formatted already)."""
    text = getattr(exc, "student_text", None)
    if isinstance(text, str):
        return text
    root = str(Path(directory).resolve())
    frames = [
        f
        for f in traceback.extract_tb(exc.__traceback__)
        if str(Path(f.filename).resolve()).startswith(root)
    ]
    lines = []
    if frames:
        lines.append("Traceback (your code, most recent call last):")
        lines.extend(traceback.format_list(frames))
    message = "".join(traceback.format_exception_only(type(exc), exc)).strip()
    # jax appends a long "The stack trace below excludes JAX-internal frames" note; keep it short.
    cut = message.find("\n--------------------")
    lines.append(message if cut < 0 else message[:cut])
    if isinstance(exc, MemoryError) and (note := memory_note()):
        lines.append(note)
    return "\n".join(line.rstrip("\n") for line in lines)


def memory_note() -> str:
    """What a MemoryError means in the sandbox, which limits what this process
    may allocate (``RLIMIT_DATA``, :mod:`grader.sandbox.jail`); "" without a limit."""
    try:
        import resource

        limit = resource.getrlimit(resource.RLIMIT_DATA)[0]
    except (ImportError, OSError, ValueError):
        return ""
    if limit == resource.RLIM_INFINITY:
        return ""
    return (
        f"The grader's sandbox lets the process your code runs in allocate at most "
        f"{limit / 2**30:.1f} GiB; this allocation did not fit."
    )
