"""No reference is readable from the student's process (issue 39, item 1).

A probe module, graded through the real ``course grade`` in the sandbox, walks
every folder it can read, reads every file it can (up to 16 MiB; not shared
libraries, images or fonts), and looks for distinctive lines of every
reference (``solutions/lNN_*.py``, and the grader's side of the lessons,
``grader/expected/**.py``: formulas and the grader's own programs that answer
exercises): in the bytes as they are, inside zlib
streams (git's loose objects), gzip files (an sdist) and zip files (a wheel).
It lists every git repository it sees; the test then asks git, outside, whether
one holds a reference's blob (a pack's objects are compressed by offsets the
probe does not follow). Before this change it found the references in the
checkout's ``.git``, in the main worktree's ``solutions/`` and in every other
worktree of the repository (measured when this file was written, on a machine
where several worktrees of the course lived side by side).

The lines are chosen here, outside: those of a reference that occur in no
other file of the course's code, so that the stub, the lesson text, the
grader and the mistakes catalogue never count as a copy.
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

from tests import reports
from tests.sandboxed import needs_sandbox
from tests.test_faults import ROOT, leftovers

SKIPPED_TREES = {".git", ".venv", "solutions", "build", "dist", "workspace", "__pycache__",
                 ".hypothesis", ".pytest_cache", ".ruff_cache", ".cache"}  # fmt: skip


GRADER_SIDE = ROOT / "grader" / "expected"
"""The grader's side of the lessons (:mod:`grader.expected`): references too."""


def _course_text() -> str:
    """Every text file of the course but the references (and what is not the course's)."""
    parts = []
    for folder, dirs, files in os.walk(ROOT):
        dirs[:] = [d for d in dirs if d not in SKIPPED_TREES and not d.startswith(".venv")
                   and Path(folder, d) != GRADER_SIDE]  # fmt: skip
        for name in files:
            if name.endswith((".py", ".md", ".toml", ".txt", ".json", ".yml", ".yaml", ".sh")):
                parts.append(Path(folder, name).read_text(errors="replace"))
    return "\n".join(parts)


def markers() -> dict[str, list[str]]:
    """Up to three distinctive lines of each reference: 30 characters or more,
    found in no other file of the course."""
    others = _course_text()
    found = {}
    grader_side = [p for p in sorted(GRADER_SIDE.rglob("*.py")) if p.name != "__init__.py"]
    for ref in [*sorted((ROOT / "solutions").glob("l[0-9][0-9]_*.py")), *grader_side]:
        lines = sorted({s.strip() for s in ref.read_text().splitlines()}, key=len, reverse=True)
        own = [line for line in lines if len(line) >= 30 and line not in others]
        found[ref.relative_to(ROOT).as_posix() if ref in grader_side else ref.name] = own[:3]
    return found


PROBE = r'''
import gzip, json, os, stat, sys, time, zipfile, zlib
MARKERS = {name: [bytes.fromhex(h) for h in hexes] for name, hexes in __MARKERS_HEX__.items()}
SKIP = (".so", ".a", ".o", ".png", ".jpg", ".jpeg", ".gif", ".ttf", ".woff", ".woff2", ".mo",
        ".pyi", ".h", ".hpp", ".svg", ".ico")
LIMIT = 16 << 20
deadline = time.monotonic() + __SECONDS__
here = os.path.dirname(os.path.abspath(__file__))
report = {"found": [], "git": [], "files": 0, "complete": False, "roots_done": []}

def look(path, data, how):
    for name, lines in MARKERS.items():
        if any(line in data for line in lines):
            report["found"].append([path, name, how])

def examine(path, size):
    try:
        with open(path, "rb") as f:
            data = f.read(LIMIT)
    except OSError:
        return
    report["files"] += 1
    look(path, data, "text")
    if data[:1] == b"x":
        try:
            look(path, zlib.decompressobj().decompress(data, LIMIT), "zlib")
        except zlib.error:
            pass
    if data[:2] == b"\x1f\x8b":
        try:
            look(path, gzip.decompress(data)[:4 * LIMIT], "gzip")
        except (OSError, EOFError, zlib.error):
            pass
    if data[:4] == b"PK\x03\x04":
        try:
            with zipfile.ZipFile(path) as z:
                for info in z.infolist():
                    if info.file_size <= LIMIT:
                        look(f"{path}!{info.filename}", z.read(info), "zip")
        except (OSError, zipfile.BadZipFile, RuntimeError, ValueError, EOFError, zlib.error):
            pass

import re
LIKE = re.compile(r"(l[0-9][0-9]_\w+\.py|.*scaling[_-]course.*|.*solution.*)$", re.I)

def NAMED(name, folder):
    """A file that may hold a copy by its name: read wherever it is."""
    return bool(LIKE.match(name)) or (len(name) == 38 and len(os.path.basename(folder)) == 2)

def LIBRARY(path):
    """Outside the folders read whole (__CONTENT__: the checkout's neighbours, the home
    folder but its hidden toolchains), and Python's own files anywhere: read only
    where NAMED (time: a toolchain's 100,000 files of documentation)."""
    if any(part in path for part in ("/site-packages/", "/dist-packages/", "/lib/python3")):
        return True
    for top in __CONTENT__:
        if path.startswith(top.rstrip("/") + "/"):
            rest = path[len(top.rstrip("/")) + 1:]
            return top == __HOME__ and rest.startswith(".") and not rest.startswith(".cache")
    return True

seen_dirs = set()
def walk(top):
    for folder, dirs, files in os.walk(top, onerror=lambda e: None):
        if time.monotonic() > deadline:
            return False
        try:
            st = os.stat(folder)
        except OSError:
            dirs[:] = []
            continue
        if (st.st_dev, st.st_ino) in seen_dirs:
            dirs[:] = []
            continue
        seen_dirs.add((st.st_dev, st.st_ino))
        if folder == "/":
            dirs[:] = [d for d in dirs if d not in ("proc", "sys", "dev")]
        if folder == here:
            continue  # the probe itself
        if "HEAD" in files and "objects" in dirs:
            report["git"].append(folder)
        for name in files:
            if name.endswith(SKIP) or ".so." in name:
                continue
            path = os.path.join(folder, name)
            try:
                st = os.lstat(path)
            except OSError:
                continue
            if stat.S_ISREG(st.st_mode) and (NAMED(name, folder) or not LIBRARY(path)):
                examine(path, st.st_size)
    return True

for top in __ROOTS__:
    if not walk(top):
        break
    report["roots_done"].append(top)
else:
    report["complete"] = True
report["seconds"] = round(time.monotonic() - deadline + __SECONDS__, 1)
report["found"] = report["found"][:50]  # the relay is bounded: enough to name the copies
''' + reports.emit("report")


def _blobs() -> list[str]:
    """The git blob names of the references (what a repository holding them has)."""
    out = subprocess.run(["git", "hash-object", *sorted(map(str, (ROOT / "solutions").glob("l*.py")))],
                         capture_output=True, text=True, timeout=60, check=True)  # fmt: skip
    return out.stdout.split()


@pytest.fixture
def outside_tmp():
    """A workspace outside ``/tmp`` (which the sandbox replaces anyway)."""
    folder = Path(tempfile.mkdtemp(prefix=".course-references-test-", dir=Path.home()))
    try:
        yield folder.resolve()
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@needs_sandbox
def test_no_reference_is_readable_from_the_students_process(outside_tmp):
    found = markers()
    assert all(found.values()), {k: v for k, v in found.items() if not v}
    hexes = {name: [line.encode().hex() for line in lines] for name, lines in found.items()}
    content = [str(ROOT.parent), str(Path.home())]
    probe = (PROBE.replace("__MARKERS_HEX__", repr(hexes)).replace("__SECONDS__", "150")
             .replace("__ROOTS__", repr([*content, "/"])).replace("__CONTENT__", repr(content))
             .replace("__HOME__", repr(str(Path.home()))))  # fmt: skip
    home = outside_tmp / "home"
    (home / "exercises").mkdir(parents=True)
    (home / "exercises" / "l01_meshes.py").write_text(
        probe + (ROOT / "exercises" / "l01_meshes.py").read_text()
    )
    reference = (ROOT / "solutions" / "l02_collectives.py").read_text()
    # copies the course knows nothing of, outside /tmp (which the sandbox replaces anyway):
    # another clone of the course beside this workspace, a solved workspace kept elsewhere
    # (CI found its machine's other checkout of the course this way, beside its own)
    clone = outside_tmp / "another-clone"
    (clone / "solutions").mkdir(parents=True)
    (clone / "solutions" / "l02_collectives.py").write_text(reference)
    (outside_tmp / "solved" / "exercises").mkdir(parents=True)
    (outside_tmp / "solved" / "exercises" / "l02_collectives.py").write_text(reference)
    # and one the probe must find, in the student's own folder (its own to read): the
    # probe does look, and would have named the others
    (home / "exercises" / "notes").mkdir()
    (home / "exercises" / "notes" / "l02_collectives.py").write_text(reference)
    env = {**os.environ, "COURSE_HOME": str(home), "COURSE_PLATFORM": "cpu"}
    r = subprocess.run(
        [sys.executable, "-m", "course.cli", "grade", "1.shard_shape", "--json", "--timeout",
         "400"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert not leftovers(home)
    (lesson,) = json.loads(r.stdout)["lessons"]
    assert lesson["sandbox"] == "on"
    seen = reports.read(r.stderr)  # what the probe printed (its folder is read-only)
    assert seen["complete"], seen  # it walked everything it could see, in time
    assert seen["files"] > 100, seen  # Python's files and the course's code, at least
    own = str(home / "exercises" / "notes" / "l02_collectives.py")
    assert [own, "l02_collectives.py", "text"] in seen["found"], seen
    copies = [f for f in seen["found"] if f[0] != own]
    assert copies == [], copies[:20]
    if shutil.which("git") and (ROOT / ".git").exists():
        blobs = _blobs()
        holding = []
        for git in seen["git"]:
            for blob in blobs:
                has = subprocess.run(["git", "--git-dir", git, "cat-file", "-e", blob],
                                     capture_output=True, timeout=60)  # fmt: skip
                if has.returncode == 0:
                    holding.append(git)
                    break
        assert holding == [], holding
    assert (ROOT / "solutions" / "l01_meshes.py").is_file()  # they are there, outside
