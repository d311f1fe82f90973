"""The student's programs are the student's (issue 39, items 4 and 5): what the
worker cannot read, lower or run on this platform in a handed-back program, and
a program that needs more memory than the grader lets it use, are the
student's errors said in a sentence, never "grader fault" (exit 3, the attempt
not recorded). Each runs the real ``course grade`` on lesson 2's reference
with one change, bounded in time. Before: the first two ended as grader
faults; the third ran for minutes (the worker replays with no memory bound).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.test_faults import ROOT, leftovers

SOLUTION = (ROOT / "solutions" / "l02_collectives.py").read_text()

FLOAT4 = """
_reference = ring_all_gather


def ring_all_gather(x, axis_name):
    import jax.numpy as _jnp

    return _reference(x.astype(_jnp.float4_e2m1fn).astype(x.dtype), axis_name)
"""

CUDA = """
import sys as _sys

_sys.modules["__main__"]._platform = lambda *args: "cuda"  # exported for another platform
"""

SORTS = """
_reference = ring_all_gather


def ring_all_gather(x, axis_name):
    import jax.numpy as _jnp

    out = _reference(x, axis_name)
    big = _jnp.sort(_jnp.tile(x.ravel(), (64 * 2**20) // x.size))  # 64 Mi floats per device
    return out + (big[0] * 0).astype(out.dtype)
"""


def _grade(tmp_path: Path, code: str, **env: str) -> tuple[subprocess.CompletedProcess, dict]:
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "l02_collectives.py").write_text(SOLUTION + "\n" + code)
    home = tmp_path / "home"
    run = {**os.environ, "COURSE_HOME": str(home), "COURSE_PLATFORM": "cpu", **env}
    r = subprocess.run(
        [sys.executable, "-m", "course.cli", "grade", "2.ring_all_gather", "--path",
         str(tmp_path / "sub"), "--json", "--example", "n=8 rows=8 cols=4 dtype=float32 seed=0"],
        cwd=ROOT, env=run, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert not leftovers(home)
    (lesson,) = json.loads(r.stdout)["lessons"]
    (exercise,) = lesson["exercises"]
    return r, exercise


def _message(exercise: dict) -> str:
    return " ".join(c["message"] for c in exercise["checks"] if not c["passed"])


@pytest.mark.parametrize(
    ("code", "says"),
    [
        # the grader reads float4 (jaxlib's bindings know it) and runs it: the rounding
        # is the student's, and their values are wrong
        (FLOAT4, "hold wrong values"),
        (CUDA, "your program was exported for cuda, and this grade runs on cpu"),
    ],
    ids=["float4", "exported-for-cuda"],
)  # fmt: skip
def test_what_the_worker_cannot_run_here_is_the_students_error(tmp_path, code, says):
    r, exercise = _grade(tmp_path, code)
    assert r.returncode == 1, r.stdout[-2000:] + r.stderr[-2000:]  # not 3: no grader fault
    assert exercise["status"] == "failed", exercise
    assert says in _message(exercise), exercise


def test_a_program_that_needs_more_memory_than_allowed_is_refused_with_the_figure(tmp_path):
    r, exercise = _grade(tmp_path, SORTS, COURSE_SANDBOX_MEMORY="1G")
    assert r.returncode == 1, r.stdout[-2000:] + r.stderr[-2000:]
    assert exercise["status"] == "failed", exercise
    message = _message(exercise)
    assert "your program needs" in message and "GiB of memory to run" in message, exercise
    assert "on each of 8 devices" in message
    assert "more than the 1.0 GiB the grader lets a student's program use" in message
    need = float(message.split("your program needs ")[1].split(" GiB")[0])
    assert need >= 2.0  # 8 devices x 256 MiB to sort, at least
