"""Where things are: the course's own files, and the student's workspace.

The course's files (stubs, references, lesson texts) are found by
:func:`grader.repo.shipped`: a checkout's ``exercises/`` and ``solutions/``,
or the package data of an installed wheel. The student works in a workspace,
which gets a copy of every stub the first time it is needed and the progress
database; ``course reset`` copies a stub back.

Which workspace (the README says the same):

1. ``--home DIR`` or ``COURSE_HOME`` (read at the edge, the command line's option or the
   notebook's call, and handed in as ``home``);
2. else the nearest folder, from the current one upwards, that ``course init``
   made (it holds :data:`MARKER`);
3. else, in a checkout, ``workspace/`` inside it;
4. else none: the commands that need one ask for ``course init``. Nothing is
   ever written inside an installed package.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

from grader.repo import CODE, root, shipped

__all__ = ["MARKER", "Workspace", "cache_switch", "find_workspace", "root", "workspace"]

MARKER = ".course-workspace"
"""The file ``course init`` leaves in a workspace, so that commands run inside it find it."""


@dataclass(frozen=True)
class Workspace:
    home: Path
    db: Path
    caching: bool = True
    """Compiled programs are kept between gradings (``COURSE_COMPILE_CACHE``, read at
    the edge: :func:`cache_switch`)."""

    @property
    def exercises(self) -> Path:
        return self.home / "exercises"

    @property
    def compile_cache(self) -> Path | None:
        """Where compiled programs are kept between gradings; None when not kept."""
        return self.home / ".cache" / "jax" if self.caching else None

    def exercise_file(self, module: str) -> Path:
        return self.exercises / f"{module}.py"

    def ensure(self, modules: list[str], repo: Path = CODE) -> list[Path]:
        """Copy the stub of every module the workspace lacks (from the course at
        ``repo``, :func:`grader.repo.root`); return those copied."""
        copied = []
        self.exercises.mkdir(parents=True, exist_ok=True)
        stubs = shipped(repo).stubs
        for module in modules:
            target = self.exercise_file(module)
            source = stubs / f"{module}.py"
            if not target.exists() and source.exists():
                shutil.copyfile(source, target)
                copied.append(target)
        return copied


def find_workspace(start: Path) -> Path | None:
    """The nearest folder from ``start`` upwards that ``course init`` made."""
    for folder in (start, *start.parents):
        if (folder / MARKER).is_file():
            return folder
    return None


def cache_switch(value: str | None) -> bool:
    """Whether compiled programs are kept, from ``COURSE_COMPILE_CACHE``'s value
    (``off``, ``0`` or ``no``: not kept), which the edge reads."""
    return (value or "on").lower() not in ("off", "0", "no")


def workspace(
    home: str | Path | None = None, db: str | Path | None = None, repo: Path = CODE,
    caching: bool = True,
) -> Workspace | None:  # fmt: skip
    """The workspace by the rules above (``repo``: the course's checkout,
    :func:`grader.repo.root`; ``home`` and ``db``: what the edge was given, an
    option or ``COURSE_HOME`` and ``COURSE_DB``); None when there is none."""
    chosen = home or find_workspace(Path.cwd().resolve())
    if not chosen and shipped(repo).checkout:
        chosen = repo / "workspace"
    if not chosen:
        return None
    h = Path(chosen).resolve()
    d = Path(db or h / "progress.db").resolve()
    return Workspace(h, d, caching)


def inside_installed_package(folder: Path, repo: Path = CODE) -> bool:
    """True for a folder inside the installed course (site-packages), where nothing is
    written (``repo``: the course's checkout, :func:`grader.repo.root`)."""
    return not shipped(repo).checkout and folder.resolve().is_relative_to(CODE)
