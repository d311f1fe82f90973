"""What the student's process may write is bounded in total (issue 39, item 4).

In the sandbox it may write only its private ``/tmp`` and ``/dev/shm``, a tmpfs
of 512 MiB each (counted in the cgroup's memory where there is one), gone with
the sandbox; the submission's folder is the host's, bound read-only
(:mod:`grader.sandbox.jail`). Before, the folder was bound writable with only
``RLIMIT_FSIZE`` (1 GiB a file): a probe wrote 1.2 GiB there in files of any
number. An overlay of the folder (writes landing in ``/tmp``) was tried and
dropped: it does not see a file the student's editor replaces while a process
runs (overlayfs keeps its lower layer's entries), so a kept process would grade
stale code. Held here by the real ``course grade`` on a module that writes into
its folder and one that fills ``/tmp``, and by a process kept running in the
sandbox while its folder's file is saved over.
"""

from __future__ import annotations

import errno
import os
import subprocess
import sys
import threading
from pathlib import Path

from grader.loader import format_student_error, read_only_note, space_note
from grader.results import Status
from grader.sandbox import jail, student
from tests.sandboxed import SANDBOX, needs_sandbox
from tests.test_faults import course, states, status_of, workspace

CAP = jail._bytes(jail.SCRATCH) >> 20
"""MiB each of /tmp and /dev/shm may hold in the sandbox."""

WRITE = """
import os as _os

def ring_all_gather(x, axis_name):
    _here = _os.path.dirname(_os.path.abspath(__file__))
    with open(_os.path.join(_here, "scratch.bin"), "wb") as _f:
        _f.write(b"x" * (1 << 20))
    raise RuntimeError("it wrote into its folder")

def ring_all_reduce(x, axis_name):
    for _n in range(8):  # 800 MiB, past the cap
        with open(f"/tmp/filler-{_n}.bin", "wb") as _f:
            for _ in range(100):
                _f.write(b"x" * (1 << 20))
    raise RuntimeError("all 8 files of 100 MiB were written")
"""
"""Lesson 2 solved, but for ``ring_all_gather``, which writes into its folder, and
``ring_all_reduce``, which fills ``/tmp``; ``ring_reduce_scatter`` still passes."""


@needs_sandbox
def test_its_folder_is_read_only_and_tmp_is_capped_as_the_students_errors_and_the_rest_is_recorded(
    tmp_path,
):
    home = workspace(tmp_path / "home", WRITE)
    r = course(home, "grade", "2", "--json", timeout=300)
    ro = status_of(r, "ring_all_gather")
    assert ro.status == Status.ERROR, (ro.status, ro.error)  # the student's, not a grader fault
    assert "Read-only file system" in ro.error and "wrote" not in ro.error, ro.error
    said = " ".join(ro.error.split())
    assert "Your folder is read-only while it is graded" in said, ro.error
    assert f"write scratch files to /tmp (at most {CAP} MiB)" in said, ro.error
    full = status_of(r, "ring_all_reduce")
    assert full.status == Status.ERROR, (full.status, full.error)
    assert "No space left on device" in full.error and "were written" not in full.error, full.error
    said = " ".join(full.error.split())
    assert f"write at most {CAP} MiB to /tmp, kept in memory" in said, full.error
    assert f"it holds {CAP} MiB now" in said, full.error
    other = status_of(r, "ring_reduce_scatter")
    assert other.status == Status.PASSED, other.error
    recorded = states(home)
    assert recorded.get((2, "ring_reduce_scatter")) == "passed", (recorded, r.stdout[-3000:])
    assert recorded[(2, "ring_all_gather")] != "passed", recorded
    assert not (home / "exercises" / "scratch.bin").exists()  # never on disk


KEPT = r"""
import sys
for line in sys.stdin:  # each line: read the file again, as a kept worker imports it again
    with open(sys.argv[1]) as f:
        print(f.read(), flush=True)
"""


@needs_sandbox
def test_a_process_kept_in_the_sandbox_sees_each_save_of_its_folder(tmp_path):
    """Saved by rename (a temporary file replacing it, as vim and many editors do)
    and then in place, the folder's file reads anew in a process started before:
    the folder is the host's (an overlay kept reading the first version)."""
    folder = tmp_path / "exercises"
    folder.mkdir()
    target = folder / "l02_collectives.py"
    target.write_text("v1")
    proc = subprocess.Popen(
        jail.wrap([sys.executable, "-I", "-c", KEPT, str(target)], sandbox=SANDBOX,
                  readable=jail.python_paths(), writable=[str(folder)]),
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    watchdog = threading.Timer(120, proc.kill)
    watchdog.start()

    def read() -> str:
        proc.stdin.write("read\n")
        proc.stdin.flush()
        return proc.stdout.readline().strip()

    try:
        assert read() == "v1"
        (folder / ".l02_collectives.py.swp").write_text("v2")
        os.replace(folder / ".l02_collectives.py.swp", target)  # the editor's save
        assert read() == "v2"
        target.write_text("v3")  # and one in place
        assert read() == "v3"
    finally:
        watchdog.cancel()
        proc.kill()
        proc.wait()


def _filled(full: set[str]):
    """``os.statvfs`` as the sandbox's tmpfs of 512 MiB show it: ``full`` ones full."""

    def statvfs(path) -> os.statvfs_result:
        blocks, free = 131072, 0 if str(path) in full else 100000
        return os.statvfs_result((4096, 4096, blocks, free, free, 0, 0, 0, 0, 255))

    return statvfs


def test_the_notes_name_the_cap_and_only_in_the_sandbox(tmp_path, monkeypatch):
    """Both ways: "no space" in the sandbox names the full one (/tmp or /dev/shm)
    with its cap and what it holds, "read-only" says where to write instead;
    neither full, another OSError, or no sandbox (no cap: the student's process read no
    ``COURSE_SANDBOX_WRITES`` at its start): none."""
    from grader import loader

    full = OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    read_only = OSError(errno.EROFS, os.strerror(errno.EROFS))
    other = OSError(errno.EACCES, os.strerror(errno.EACCES))
    monkeypatch.setattr(loader.os, "statvfs", _filled({"/tmp"}))
    assert space_note(0) == read_only_note(0) == ""
    assert "sandbox" not in format_student_error(full, tmp_path)
    assert "sandbox" not in format_student_error(read_only, tmp_path)
    cap = 512 << 20
    assert student._scratch({jail.WRITES_VARIABLE: str(cap)}) == cap  # its main's edge
    assert student._scratch({}) == 0
    said = " ".join(format_student_error(full, tmp_path, cap).split())
    assert "No space left on device" in said
    assert "write at most 512 MiB to /tmp, kept in memory" in said, said
    assert "it holds 512 MiB now" in said, said
    said = " ".join(format_student_error(read_only, tmp_path, cap).split())
    assert "Read-only file system" in said and "No space" not in said, said
    assert "Your folder is read-only while it is graded" in said, said
    assert "write scratch files to /tmp (at most 512 MiB)" in said, said
    assert "sandbox" not in format_student_error(other, tmp_path, cap)
    assert "sandbox" not in format_student_error(MemoryError(), Path(tmp_path), cap)
    monkeypatch.setattr(loader.os, "statvfs", _filled({"/dev/shm"}))
    said = " ".join(format_student_error(full, tmp_path, cap).split())
    assert "write at most 512 MiB to /dev/shm," in said and "/tmp" not in said, said
    assert "read-only" not in said, said
    monkeypatch.setattr(loader.os, "statvfs", _filled(set()))
    assert space_note(cap) == ""


def test_the_cap_the_note_names_is_the_sandboxs_to_set_never_inherited():
    """A ``COURSE_SANDBOX_WRITES`` in the caller's environment does not reach the
    student's process (it would name a cap where none binds: the sandbox off)."""
    given = {jail.WRITES_VARIABLE: "1024", "COURSE_PLATFORM": "cpu", "PATH": "/bin"}
    assert jail.environment(given) == {"COURSE_PLATFORM": "cpu", "PATH": "/bin"}
