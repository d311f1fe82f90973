"""Where things are: the course's own files, and the student's workspace.

The repository (``root``: :func:`grader.repo.root`, which honours
``COURSE_ROOT``) holds the pristine stubs in ``exercises/``, the references
in ``solutions/`` and the lesson texts. The student works in a
workspace (``home``, default ``<root>/workspace``), which gets a copy of every
stub the first time it is needed and the progress database; ``course reset``
copies a stub back from ``root``.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from grader.repo import root

__all__ = ["Workspace", "root", "workspace"]


@dataclass(frozen=True)
class Workspace:
    home: Path
    db: Path

    @property
    def exercises(self) -> Path:
        return self.home / "exercises"

    @property
    def compile_cache(self) -> Path | None:
        """Compiled programs kept between gradings; ``COURSE_COMPILE_CACHE=off`` disables it."""
        if os.environ.get("COURSE_COMPILE_CACHE", "on").lower() in ("off", "0", "no"):
            return None
        return self.home / ".cache" / "jax"

    def exercise_file(self, module: str) -> Path:
        return self.exercises / f"{module}.py"

    def ensure(self, modules: list[str]) -> list[Path]:
        """Copy the stub of every module the workspace lacks; return those copied."""
        copied = []
        self.exercises.mkdir(parents=True, exist_ok=True)
        for module in modules:
            target = self.exercise_file(module)
            source = root() / "exercises" / f"{module}.py"
            if not target.exists() and source.exists():
                shutil.copyfile(source, target)
                copied.append(target)
        return copied


def workspace(home: str | Path | None = None, db: str | Path | None = None) -> Workspace:
    h = Path(home or os.environ.get("COURSE_HOME") or root() / "workspace").resolve()
    d = Path(db or os.environ.get("COURSE_DB") or h / "progress.db").resolve()
    return Workspace(h, d)
