"""Limits that bind (issue 39, item 4), each held by the real ``course grade``
on a module that goes past one at import, bounded in time.

- processes and threads: a pids cgroup of the sandbox's own where one can be
  made (``pids.max`` binds root too), else ``RLIMIT_NPROC`` (it binds any user
  but root), else, for root, the sandbox's outer process counts them and stops
  them all; before: 1,500 threads started as root against a limit of 1,024;
- memory, memfds and ``/dev/shm`` included: the cgroup's memory limit, where
  one can be made: what one process may allocate and the private ``/tmp`` and
  ``/dev/shm`` full (2 GiB with ``COURSE_SANDBOX_MEMORY=1G``); before: 2.4 GiB
  of memfds, or 0.9 GiB of ``/tmp`` and ``/dev/shm`` and two 700 MiB memfds, were held.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from grader.sandbox import jail
from tests.sandboxed import needs_sandbox
from tests.test_faults import ROOT, leftovers

THREADS = """
import threading
threading.stack_size(1 << 16)
_stop = threading.Event()
_n = 0
try:
    for _ in range(1500):
        threading.Thread(target=_stop.wait, daemon=True).start()
        _n += 1
finally:
    _stop.set()
raise RuntimeError(f"started all {_n} threads")
"""

MEMFDS = """
import os
_held = []
for _ in range(4):
    _fd = os.memfd_create("held")
    for _ in range(600):
        os.write(_fd, b"x" * (1 << 20))
    _held.append(_fd)
raise RuntimeError("all 4 memfds of 600 MiB are held")
"""

SHM = """
import os
for _where in ("/dev/shm/held", "/tmp/held"):
    with open(_where, "wb") as _f:
        for _ in range(450):
            _f.write(b"x" * (1 << 20))
_fds = [os.memfd_create("more"), os.memfd_create("more")]  # under 1 GiB each (RLIMIT_FSIZE)
for _ in range(700):
    for _fd in _fds:
        os.write(_fd, b"x" * (1 << 20))
raise RuntimeError("all 2.3 GiB are held: /dev/shm, /tmp and memfds")
"""


def _grade(tmp_path: Path, code: str, **env: str) -> dict:
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "l01_meshes.py").write_text(code)
    home = tmp_path / "home"
    run = {**os.environ, "COURSE_HOME": str(home), "COURSE_PLATFORM": "cpu", **env}
    r = subprocess.run(
        [sys.executable, "-m", "course.cli", "grade", "1.shard_shape", "--path",
         str(tmp_path / "sub"), "--json"], cwd=ROOT, env=run, capture_output=True, text=True,
        timeout=300,
    )  # fmt: skip
    assert not leftovers(home)
    (lesson,) = json.loads(r.stdout)["lessons"]
    assert lesson["sandbox"] == "on"
    (exercise,) = lesson["exercises"]
    return exercise


def _cgroup() -> tuple[bool, bool]:
    """Whether a pids and a memory cgroup can be made here (in another process:
    making one moves the process in)."""
    code = ("from grader.sandbox import jail; g = jail.Cgroup(64, 1 << 30); "
            "print(bool(g.pids), bool(g.memory)); g.remove()")  # fmt: skip
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60, cwd=ROOT, check=True)  # fmt: skip
    pids, memory = out.stdout.split()
    return pids == "True", memory == "True"


@needs_sandbox
def test_more_threads_than_the_limit_do_not_start(tmp_path):
    exercise = _grade(tmp_path, THREADS)
    assert exercise["status"] == "error", exercise
    error = exercise["error"]
    assert "started all" not in error
    assert "can't start new thread" in error or (
        f"started more than {jail.PROCESSES} processes and threads" in error
    ), error


@needs_sandbox
@pytest.mark.parametrize("code", [MEMFDS, SHM], ids=["memfd", "dev-shm-and-memfd"])
def test_memory_held_in_memfds_and_shared_memory_is_bounded(tmp_path, code):
    if not _cgroup()[1]:
        pytest.skip("no memory cgroup can be made here (README: not airtight)")
    exercise = _grade(tmp_path, code, COURSE_SANDBOX_MEMORY="1G")
    assert exercise["status"] == "error", exercise
    error = exercise["error"]
    assert "are held" not in error, error
    assert "killed by SIGKILL" in error, error
    assert "held more than 2.0 GiB of memory (the sandbox's limit" in error, error
