"""Import the module under test from a directory, and explain failures.

Nothing imports ``exercises`` or ``solutions`` by name: the grader is told
which directory to grade and loads ``<dir>/<module>.py`` from its path.

Source only (issue 39): the module is compiled from its source text, never
from bytecode in a ``__pycache__`` the student can write (an unchecked
hash-based ``.pyc`` is loaded whatever the source says), and so is every
module imported from that directory afterwards (a sibling the module imports);
nothing there is written either.
"""

from __future__ import annotations

import errno
import importlib.machinery
import importlib.util
import os
import sys
import traceback
from pathlib import Path
from types import ModuleType

from grader.faults import ExampleTimeout, LoadError


class SourceOnlyLoader(importlib.machinery.SourceFileLoader):
    """Compiles the module from its source text each time: no ``__pycache__`` is
    read, none is written."""

    def get_code(self, fullname: str):  # noqa: ANN201 — a code object, as the base class's
        path = self.get_filename(fullname)
        return self.source_to_code(self.get_data(path), path)

    def set_data(self, path: str, data: bytes, *, _mode: int = 0o666) -> None:
        return None  # never write bytecode


_SOURCE_ONLY: set[str] = set()
"""Folders whose modules are imported from source only (the graded ones)."""


def _source_only_finder(path: str) -> importlib.machinery.FileFinder:
    """The path hook for the graded folders (and below them): ``.py`` files and
    packages only, compiled from source; any other folder: not ours (ImportError)."""
    try:
        real = os.path.realpath(path or ".")
    except (OSError, ValueError):
        raise ImportError(path) from None
    if not any(real == d or real.startswith(d.rstrip("/") + "/") for d in _SOURCE_ONLY):
        raise ImportError(path)
    return importlib.machinery.FileFinder(path, (SourceOnlyLoader, [".py"]))


def source_only(directory: Path) -> None:
    """Import every module under ``directory`` from its source text only, from now
    on in this process (a sibling module the student's module imports by putting
    its folder on ``sys.path``)."""
    real = os.path.realpath(directory)
    if _source_only_finder not in sys.path_hooks:
        sys.path_hooks.insert(0, _source_only_finder)
    if real not in _SOURCE_ONLY:
        _SOURCE_ONLY.add(real)
        for cached in list(sys.path_importer_cache):  # found with the usual finder before
            try:
                found = os.path.realpath(cached or ".")
            except (OSError, ValueError, TypeError):
                continue
            if found == real or found.startswith(real.rstrip("/") + "/"):
                del sys.path_importer_cache[cached]


def load_module(
    directory: Path, module: str, *, interrupts_are_theirs: bool = False, scratch: int = 0
) -> ModuleType:
    """Import ``directory/module.py``; any failure is a :class:`LoadError` in the
    student's words, but a ``KeyboardInterrupt`` (the user's Ctrl-C, here) and a
    time limit, which are raised again. ``interrupts_are_theirs``: a process no
    terminal's Ctrl-C reaches (the student's process): a KeyboardInterrupt there is
    the module's own failure."""
    path = Path(directory) / f"{module}.py"
    if not path.exists():
        raise LoadError(f"{path} does not exist")
    name = f"_course_under_test_.{module}_{abs(hash(str(path.resolve())))}"
    source_only(path.parent)
    spec = importlib.util.spec_from_file_location(
        name, path, loader=SourceOnlyLoader(name, str(path))
    )
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
            f"importing {path.name} failed:\n{format_student_error(exc, path.parent, scratch)}"
        ) from None
    return mod


def format_student_error(exc: BaseException, directory: Path, scratch: int = 0) -> str:
    """The exception with only the frames from files in ``directory`` (an
    exception from the student's process comes formatted already). ``scratch``:
    the bytes each of the sandbox's ``/tmp`` and ``/dev/shm`` may hold (0: no
    sandbox), which a failed write's note names."""
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
    if isinstance(exc, OSError) and (note := space_note(scratch) if exc.errno == errno.ENOSPC
                                     else read_only_note(scratch) if exc.errno == errno.EROFS
                                     else ""):  # fmt: skip
        lines.append(note)
    return "\n".join(line.rstrip("\n") for line in lines)


def read_only_note(cap: int) -> str:
    """What "read-only file system" means in the sandbox, whose ``/tmp`` and
    ``/dev/shm`` hold ``cap`` bytes each: the process may write only there; its
    folder (the host's, so that a save is seen at once) and everything else are
    read-only. "" outside it (``cap`` 0)."""
    if not cap:
        return ""
    return (
        f"Your folder is read-only while it is graded (the grader's sandbox lets the "
        f"process your code runs in write only to /tmp and /dev/shm): write scratch "
        f"files to /tmp (at most {cap / 2**20:.0f} MiB), or keep them in memory."
    )


def space_note(cap: int) -> str:
    """What "no space left" means in the sandbox: its ``/tmp`` and ``/dev/shm``
    are tmpfs of ``cap`` bytes each; the one found full is named, with its size
    and what it holds. "" outside the sandbox (``cap`` 0), or where neither is full."""
    if not cap:
        return ""
    for where in ("/tmp", "/dev/shm"):
        try:
            st = os.statvfs(where)
        except OSError:
            continue
        if st.f_bavail * st.f_frsize >= 1 << 20:
            continue  # room left: not the one that filled
        size = st.f_blocks * st.f_frsize
        held = (st.f_blocks - st.f_bfree) * st.f_frsize
        return (
            f"The grader's sandbox lets the process your code runs in write at most "
            f"{size / 2**20:.0f} MiB to {where}, kept in memory and discarded when it "
            f"ends; it holds {held / 2**20:.0f} MiB now and this write did not fit."
        )
    return ""


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
