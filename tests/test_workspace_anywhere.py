"""A workspace anywhere, graded from anywhere (issue 39, item 8).

The sandbox replaces ``/tmp`` and ``/dev/shm`` with fresh ones of its own and
binds back what the student's process must see there; a worker started with
the current folder ``/tmp`` had ``/tmp`` on its path, which the sandbox bound
back over its fresh ``/tmp``, and every exercise was a grader fault ("cannot
mount /proc/self/fd/16 on /tmp/…/exercises: No such file or directory"). Each
case runs the real ``course grade`` with ``COURSE_HOME`` at the workspace and
the current folder named, and holds that the reference passes, in the sandbox
where one can be made, and that the progress file is not shown to the
student's process (a worker started inside the workspace has it on its path).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from grader.sandbox import jail
from tests.sandboxed import SANDBOX
from tests.test_faults import ROOT, leftovers

PEEK = """
import os as _os
_home = _os.path.dirname(_os.path.dirname(__file__))
if _os.path.exists(_os.path.join(_home, "progress.db")):
    raise RuntimeError("the progress file is visible from the student's process")
"""

CASES = {
    # workspace under, current folder
    "tmp-from-tmp": ("/tmp", "/tmp"),
    "var-tmp-with-spaces-from-workspace": ("/var/tmp", "workspace"),
    "dev-shm-another-mount-from-root": ("/dev/shm", "/"),
    "home-with-spaces-from-tmp": ("~", "/tmp"),
}


@pytest.fixture(params=list(CASES), ids=list(CASES))
def case(request):
    base, cwd = CASES[request.param]
    base = os.path.expanduser(base)
    if not os.access(base, os.W_OK):
        pytest.skip(f"{base} cannot be written here")
    spaced = "spaces" in request.param
    folder = Path(tempfile.mkdtemp(prefix="course ws " if spaced else "course-ws-", dir=base))
    try:
        yield folder, (folder if cwd == "workspace" else Path(cwd))
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def test_a_workspace_anywhere_graded_from_anywhere_passes(case):
    home, cwd = case
    (home / "exercises").mkdir()
    (home / "exercises" / "l01_meshes.py").write_text(
        PEEK + (ROOT / "solutions" / "l01_meshes.py").read_text()
    )
    env = {**os.environ, "COURSE_HOME": str(home), "COURSE_PLATFORM": "cpu",
           "PYTHONPATH": str(ROOT)}  # fmt: skip
    r = subprocess.run(
        [sys.executable, "-m", "course.cli", "grade", "1.shard_shape",
         "--json"], cwd=cwd, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert not leftovers(home)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    (lesson,) = json.loads(r.stdout)["lessons"]
    assert [e["status"] for e in lesson["exercises"]] == ["passed"], lesson
    assert lesson["sandbox"] == ("on" if jail.on(SANDBOX) else lesson["sandbox"])
    assert (home / "progress.db").is_file()
