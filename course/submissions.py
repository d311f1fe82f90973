"""What ``course classroom`` does to keep one submission from harming another, or
the teacher (issue 19): names made printable, links that leave a submission
refused, a file with other names on disk (a hard link) refused, every submission
copied to a private folder before any is graded, and
results written by the parent alone, once grading is over, over whatever a
submission may have put in their place."""

from __future__ import annotations

import os
import re
import shutil
import tempfile
import unicodedata
from dataclasses import replace
from pathlib import Path

from grader.results import LessonResult

RESERVED = frozenset({"summary.csv", ".cache"})
"""The names ``course classroom`` writes at the top of RESULTS."""


def printable(name: str) -> str:
    """``name`` with every character a terminal, an XML file or a CSV cell could act
    on written out as an escape: control characters (ESC, newline, DEL, C1),
    format characters (bidirectional overrides, zero-width ones) and surrogates
    become ``\\xNN`` / ``\\uNNNN``; a backslash becomes ``\\\\``, so that two
    different names never print the same."""
    out = []
    for ch in name:
        if ch == "\\":
            out.append("\\\\")
        elif unicodedata.category(ch) in ("Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"):
            code = ord(ch)
            out.append(f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")
        else:
            out.append(ch)
    return "".join(out)


def output_names(names: list[str]) -> dict[str, str]:
    """Submission name → the folder its results go to in RESULTS: its printable name,
    with ``~2``, ``~3`` … added where that would be one of the course's own outputs
    (``summary.csv``) or another submission's folder."""
    taken = set(RESERVED) | {printable(n) for n in names}
    chosen: dict[str, str] = {}
    used: set[str] = set(RESERVED)
    for name in names:
        base = printable(name)
        if base in used:
            n = 2
            while f"{base}~{n}" in taken or f"{base}~{n}" in used:
                n += 1
            base = f"{base}~{n}"
        used.add(base)
        chosen[name] = base
    return chosen


def outside(folder: Path, file: Path) -> bool:
    """Whether ``file`` (found in ``folder``) is, once its links are followed, not in
    ``folder``: a link to a classmate's file or to the course's solutions."""
    try:
        file.resolve(strict=True).relative_to(folder.resolve(strict=True))
    except (ValueError, OSError):
        return True
    return False


def other_names(file: Path) -> int:
    """How many names besides its own the file ``file`` stands for has on disk (a
    hard link to a classmate's file or to a solution has one more, wherever it is)."""
    try:
        return max(file.stat().st_nlink - 1, 0)
    except OSError:
        return 0


def stage(root: Path, index: int, files: dict[str, Path]) -> Path:
    """Copy ``files`` (module → file) into a private folder ``root/index``, as
    ``<module>.py``; the submission is graded from there, never from its own folder."""
    folder = root / str(index)
    folder.mkdir(mode=0o700)
    for module, f in files.items():
        shutil.copyfile(f, folder / f"{module}.py", follow_symlinks=True)
    return folder


def own_paths(result: LessonResult, staged: Path, shown: dict[str, str]) -> LessonResult:
    """``result`` with the private copy's file paths (``staged/<module>.py``, which a
    syntax error or a traceback names) written as the submission's own: ``shown`` maps
    each module to its file's path inside the submission, as its author knows it."""
    pairs = [
        (os.path.join(base, f"{module}.py"), path)
        for module, path in shown.items()
        for base in dict.fromkeys((str(staged), str(staged.resolve())))
    ]

    def mapped(text: str | None) -> str | None:
        if text:
            for copy, own in pairs:
                text = text.replace(copy, own)
        return text

    return replace(result, exercises=tuple(
        replace(er, error=mapped(er.error), hint=mapped(er.hint),
                checks=tuple(replace(c, message=mapped(c.message), hint=mapped(c.hint))
                             for c in er.checks))
        for er in result.exercises
    ))  # fmt: skip


def private_root() -> Path:
    return Path(tempfile.mkdtemp(prefix="course-classroom-"))  # mode 0700


def write_file(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` in one step (a temporary file renamed over it):
    whatever stood there before — a file, a link a submission planted — is replaced,
    never followed; a folder there is removed first."""
    if path.is_symlink() or (path.exists() and not path.is_file()):
        _remove(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def output_folder(target: Path, name: str) -> Path:
    """``target/name`` as a real folder of ours (a link or file there is replaced)."""
    folder = target / name
    if folder.is_symlink() or (folder.exists() and not folder.is_dir()):
        _remove(folder)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _remove(path: Path) -> None:
    if path.is_symlink() or not path.is_dir():
        path.unlink()
    else:
        shutil.rmtree(path)


# ------------------------------------------------------------ finding a lesson's file

COPY_SUFFIX = re.compile(r"(?: ?\(\d{1,3}\)|-\d{1,3}| \d{1,3})$")
"""What a browser or a file manager adds to a second download or copy of a file:
``l01_meshes (1).py`` (Chrome, Edge), ``l01_meshes(1).py`` (Firefox), ``l01_meshes-1.py``
(Safari), ``l01_meshes 2.py`` (macOS Finder)."""


def _files(folder: Path, deep: bool) -> list[Path]:
    """The regular files of a submission (links included: refused later if they leave
    it), in path order, top first; no hidden folder's and no ``__MACOSX`` copy's."""
    found = folder.iterdir() if not deep else folder.rglob("*")
    out = []
    for p in found:
        parts = p.relative_to(folder).parts
        if any(x.startswith(".") or x == "__MACOSX" for x in parts[:-1]) or not p.is_file():
            continue
        out.append(p)
    return sorted(out, key=lambda p: (len(p.relative_to(folder).parts), str(p)))


def lesson_file(folder: Path, module: str, *, deep: bool = True) -> Path | None:
    """The submission's file for ``module``: ``module.py`` at the top, else deeper (an
    unzipped archive or an uploaded folder adds levels: ``homework-1/l01_meshes.py``),
    else a copy's name (:func:`copied_as`: ``l01_meshes (1).py``, ``l01 meshes (1).py``),
    top first, then in path order. None when there is none (see :func:`near_misses`)."""
    files = _files(folder, deep)
    exact = [p for p in files if p.name == f"{module}.py"]
    if exact:
        return exact[0]
    copies = [p for p in files if p.suffix == ".py" and copied_as(p.stem) == module]
    return copies[0] if copies else None


def copied_as(stem: str) -> str:
    """The module a copy's file name stands for: without the copy's suffix, and with each
    run of spaces as ``_``, as some systems rename on upload (``l02 collectives (1)`` →
    ``l02_collectives``). Case and hyphens stay: ``L01-Meshes`` is a near miss."""
    return re.sub(r" +", "_", COPY_SUFFIX.sub("", stem).strip())


def _stem(name: str) -> str:
    """A file name as someone may have meant a module's: lower case, ``-`` and spaces as
    ``_``, without its extensions and a copy's suffix (``L01-Meshes (2).py.txt`` → ``l01_meshes``)."""
    stem = COPY_SUFFIX.sub("", name.split(".", 1)[0].strip())
    return re.sub(r"[-\s]+", "_", stem.lower())


def near_misses(
    folder: Path, module: str, *, taken: Path | None = None, others: frozenset[str] = frozenset()
) -> list[str]:
    """Files of the submission (paths inside it, printable) whose names look meant for
    ``module`` but are not graded as it: ``l01-meshes.py``, ``L01_meshes.py``,
    ``l01_meshes.py.txt``, ``l01.py``, ``lo1_meshes.py``, ``l01_meshes.ipynb``; not a file named for one
    of the ``others`` (the course's other modules). At most five."""
    import difflib

    out = []
    for p in _files(folder, deep=True):
        if p == taken or p.name in {f"{m}.py" for m in others}:
            continue
        stem = _stem(p.name)
        same_number = stem.split("_", 1)[0] == module.split("_", 1)[0]  # l01…
        if same_number or difflib.SequenceMatcher(a=stem, b=module).ratio() >= 0.85:
            out.append(printable(str(p.relative_to(folder))))
    return out[:5]
