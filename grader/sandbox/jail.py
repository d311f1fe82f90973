"""The OS sandbox the student's process runs in (Linux; issue 19).

:func:`wrap` turns the command that starts the student's process into one
that starts it in a sandbox, when :func:`state` says one can be made here:

- its own **user, PID, network, IPC and mount namespaces** (``unshare(2)``,
  unprivileged where user namespaces are allowed). It sees only its own
  processes (a fresh ``/proc``), so it cannot signal, trace or read the
  worker or ``course``; it has no network (a namespace with a loopback that
  is down); it has a session of its own, so ``kill(0, …)`` reaches only it.
- **every process it starts dies with it**: it is the namespace's first
  process (PID 1), and when it ends the kernel kills all the others, detached
  (``setsid``) or not; it is killed when its parent (the small process this
  module runs as, which the worker started) ends, by ``PR_SET_PDEATHSIG``.
- a **read-only view of the file system**, except a private ``/tmp`` and
  ``/dev/shm`` (fresh tmpfs of ``SCRATCH`` each, counted in the cgroup's memory
  where there is one): all it may write, bounded in total (issue 39). The
  submission's own directory is read-only too, the host's folder itself (a bind,
  not a copy: a file the student's editor replaces, by rename or in place, is
  seen at once by a process kept running); of
  it, the system's folders (``SYSTEM``, ``SOFTWARE``) and, of every other
  top-level folder (:func:`elsewhere`: ``/home``, ``/root``, ``/var``…), only
  what it must read (Python, the course's code, the submission).
  Paths it must read that lay under ``/tmp`` (the course's code or a
  submission in a temporary folder) are bound into the fresh ``/tmp``.
- **hidden folders**: the course's ``solutions/``, a classroom's submissions
  and results, the workspace with the progress file and the compile cache
  (``hidden``) are covered by an empty read-only tmpfs; what it must see
  inside one (its own folder, the course's code) is bound back over it.
- **no capability**: inside the namespace it is not root, so it cannot
  undo a mount (and a namespace it makes itself gets them locked);
  ``no_new_privs`` is set.
- **rlimits** on memory (``RLIMIT_DATA``: what it allocates, not what it
  maps from files or reserves), processes (``RLIMIT_NPROC``), file size and
  CPU time; no core dumps.
- a **cgroup** of its own where one can be made (:class:`Cgroup`, issue 39):
  ``pids.max`` binds root too, whom ``RLIMIT_NPROC`` exempts, and its memory
  limit counts memfds, ``/dev/shm`` and ``/tmp``; for root without one, the
  outer process counts the namespace's processes and threads and stops them all
  past the limit.
- nothing of the references: every copy the course knows of is hidden
  (:mod:`grader.sandbox.references`, named by the caller in ``hidden``).

The command becomes ``python -I -S jail.py CONFIG -- COMMAND…``: this file
runs as a script, imports only the standard library, unshares, forks the
student's process (PID 1 inside), waits for it and ends as it ended.

Whether the sandbox was made is said on a descriptor of its own (``status``,
see :func:`wrap`), written by this script before the student's code starts
and closed for it: ``ok``, or ``failed: <why>``. The exit code cannot say
it, since the student's code may end with any code (``os._exit(125)``).

Where no sandbox can be made (not Linux, user namespaces refused, a
container that forbids mounting ``/proc``), or with ``COURSE_SANDBOX=off``,
:func:`state` says ``off: <why>``, the command runs as it is, and the
reports say ``sandbox: off``. ``COURSE_SANDBOX_MEMORY`` (e.g. ``2G``,
``512M``) changes the memory limit. Both are read at the edge of the process
that makes sandboxes (the worker's ``main``: :attr:`grader.sandbox.worker.Options.sandbox`;
``course``'s commands) into a :class:`grader.config.Sandbox`, handed to
:func:`state` and :func:`wrap`: this module reads no setting of its own.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import json
import os
import re
import resource
import signal
import struct
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

TYPE_CHECKING = False  # not ``typing``'s: this file runs as a script, started with each process
if TYPE_CHECKING:
    from grader.config import Sandbox

SWITCH = "COURSE_SANDBOX"
"""``off`` runs the student's process without a sandbox."""
MEMORY_VARIABLE = "COURSE_SANDBOX_MEMORY"
GiB, MiB = 1 << 30, 1 << 20

MEMORY = 8 * GiB
"""What the student's process may allocate (it traces programs on decoy data
and runs eager exercises; the grader's own compiled runs are not counted)."""
PROCESSES = 1024
"""Processes and threads: the cgroup's ``pids.max`` where one can be made, else
``RLIMIT_NPROC`` (per user, counted within the namespace on Linux ≥ 5.14; the
kernel exempts root, for whom the outer process counts them)."""
FILE_SIZE = 1 * GiB
CPU_SECONDS = 3600
SCRATCH = "512m"
"""Size of the private ``/tmp`` (and of ``/dev/shm``)."""
WRITES_VARIABLE = "COURSE_SANDBOX_WRITES"
"""Set by the sandbox for the student's process: the bytes each of ``/tmp`` and
``/dev/shm`` may hold, the only places it may write (:func:`grader.loader.space_note`
and :func:`grader.loader.read_only_note` word a failed write with it)."""
COVERED = ("/tmp", "/dev/shm")
"""Folders the sandbox replaces with a fresh tmpfs of its own."""
SETUP_FAILED = 125
"""Exit code of the sandbox's own process when it could not be made (the
student's code can end with it too: the ``status`` descriptor says which)."""
HIDDEN_SIZE = "1m"
"""Size of the empty tmpfs over a hidden folder (it holds mount points only)."""

CLONE_NEWNS, CLONE_NEWIPC, CLONE_NEWUSER = 0x00020000, 0x08000000, 0x10000000
CLONE_NEWPID, CLONE_NEWNET = 0x20000000, 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_NOATIME, MS_NODIRATIME, MS_REMOUNT, MS_BIND = 1024, 2048, 32, 4096
MS_REC, MS_PRIVATE, MS_RELATIME = 16384, 1 << 18, 1 << 21
PR_SET_PDEATHSIG, PR_SET_NO_NEW_PRIVS = 1, 38
SYS_MOUNT_SETATTR, AT_FDCWD, AT_RECURSIVE, MOUNT_ATTR_RDONLY = 442, -100, 0x8000, 1
O_PATH = getattr(os, "O_PATH", 0o10000000)


def state(sandbox: Sandbox) -> str:
    """``on``, or ``off: <why>``, for these settings (read at the caller's edge:
    :meth:`grader.config.Sandbox.from_environment`): decided once for each (a
    probe that makes a sandbox and runs ``python -c pass`` in it)."""
    return _decided(sandbox.switch, sandbox.memory)


@functools.cache
def _decided(switch: str, memory: str) -> str:
    """The probe's verdict for these settings: a function of them (and of the
    host), computed once for each."""
    return _probe(switch, memory)


def on(sandbox: Sandbox) -> bool:
    return state(sandbox) == "on"


def memory_limit(text: str) -> int:
    """Bytes the student's process may allocate, for ``text`` in the form of
    ``COURSE_SANDBOX_MEMORY`` (:attr:`grader.config.Sandbox.memory`; "": the default)."""
    text = text.strip().upper()
    if not text:
        return MEMORY
    scale = {"K": 1 << 10, "M": MiB, "G": GiB}.get(text[-1:], 1)
    number = text[:-1] if text[-1:] in "KMG" else text
    try:
        value = int(float(number) * scale)
    except ValueError:
        raise ValueError(
            f"{MEMORY_VARIABLE}={text!r}: say how much memory, e.g. 2G or 512M"
        ) from None
    return max(value, 256 * MiB)


KEPT_VARIABLES = frozenset({
    "PATH", "HOME", "USER", "LOGNAME", "LANG", "LANGUAGE", "TZ", "TERM", "TMPDIR",
    "NO_COLOR", "FORCE_COLOR", "COLUMNS", "LINES", "VIRTUAL_ENV", "LD_LIBRARY_PATH",
})  # fmt: skip
KEPT_PREFIXES = ("COURSE_", "JAX_", "XLA_", "TF_", "PYTHON", "LC_", "CUDA", "NVIDIA_", "TPU_",
                 "LIBTPU", "HYPOTHESIS_")  # fmt: skip


def environment(env: dict[str, str]) -> dict[str, str]:
    """The environment the student's processes start with: only what Python, JAX
    and the course read (an allow-list), so that a teacher's or a CI's secrets
    (tokens, keys, passwords in the environment) never reach them. Applied
    whether or not the sandbox is on. ``COURSE_SANDBOX_WRITES`` is the sandbox's
    to set, never inherited."""
    return {k: v for k, v in env.items()
            if (k in KEPT_VARIABLES or k.startswith(KEPT_PREFIXES)) and k != WRITES_VARIABLE}  # fmt: skip


def wrap(
    command: list[str], *, sandbox: Sandbox, readable: list[str], writable: list[str],
    hidden: Sequence[str] = (), status: int | None = None, loopback: bool = False,
) -> list[str]:  # fmt: skip
    """``command`` run in the sandbox (unchanged where ``sandbox``, its settings,
    turn it off or none can be made here: :func:`state`). ``readable``:
    paths it must read (the course's code, Python, the submission); ``writable``:
    the submission's own folder, which it sees **read-only** like ``readable``
    (the callers' name for it; nothing of the host is writable in the sandbox);
    ``hidden``: folders it must not see (empty there), but for what ``readable``
    and ``writable`` name inside them. Everything else is visible read-only,
    but for a private ``/tmp`` and ``/dev/shm``. ``status``: a descriptor the caller passes to the process
    (``pass_fds``), on which the sandbox says ``ok`` or ``failed: <why>`` (see
    :func:`setup_failure`). ``loopback``: the namespace's loopback is brought up
    (a cluster of processes that talk to each other on it; still no network
    beyond it)."""
    if not on(sandbox):
        return command
    memory = memory_limit(sandbox.memory)
    return _command(command, memory, readable, writable, hidden, status, loopback)


def setup_failure(status: int) -> str | None:
    """Why the sandbox could not be made, as its own process wrote it on the
    ``status`` descriptor (the read end, closed here) before any of the
    student's code ran; None when it was made, or said nothing (it was killed).
    Read once the sandbox's process has ended; never waits."""
    chunks = []
    try:
        os.set_blocking(status, False)
        while chunk := os.read(status, 4096):
            chunks.append(chunk)
    except OSError:
        pass
    finally:
        os.close(status)
    said = b"".join(chunks).decode("utf-8", "replace").strip()
    return said.removeprefix("failed: ") if said.startswith("failed: ") else None


def _command(
    command: list[str], memory: int, readable: list[str], writable: list[str],
    hidden: Sequence[str] = (), status: int | None = None, loopback: bool = False,
) -> list[str]:  # fmt: skip
    config = {
        "parent": os.getpid(),
        "readable": sorted(
            {os.path.realpath(p) for p in [*readable, *writable] if p and os.path.exists(p)}
            - _replaced()
        ),
        "hidden": sorted(
            filter(
                _hideable,
                {os.path.realpath(p) for p in [*hidden, *elsewhere()] if p and os.path.isdir(p)},
            )
        ),
        "memory": memory,
        "loopback": bool(loopback),
        "scratch": SCRATCH,
        "status": status,
    }
    return [
        sys.executable,
        "-I",
        "-S",
        os.path.abspath(__file__),
        json.dumps(config),
        "--",
        *command,
    ]


def _replaced() -> set[str]:
    """The folders the sandbox replaces with its own (``COVERED``) and every folder
    above one: never "readable" (bound back over the fresh one, the host's ``/tmp``
    would come back with it — a worker started from ``/tmp`` has ``/tmp`` on its
    path); what the student's process must read inside one is named itself."""
    replaced = set()
    for folder in COVERED:
        real = os.path.realpath(folder)
        while True:
            replaced.add(real)
            if real == os.path.dirname(real):
                break
            real = os.path.dirname(real)
    return replaced


SYSTEM = ("/bin", "/dev", "/etc", "/lib", "/lib32", "/lib64", "/proc", "/sbin", "/sys", "/usr")
"""Folders a process needs that are never named as readable: never hidden."""
SOFTWARE = ("/opt", "/nix", "/gnu", "/snap")
"""Folders of software installed beside the system's (a Python, a GPU's runtime, a
Nix store), whose libraries a process loads without naming them: shown as ``SYSTEM``."""


def elsewhere() -> list[str]:
    """Every other folder at the top of the file system (``/home``, ``/root``,
    ``/var``, ``/srv``, ``/mnt``, a checkout's ``/work``…): hidden whole, and what
    the process must read or write inside one bound back over it — so that a copy
    of the references the course does not know of (another clone beside the
    checkout, a solved workspace, a classmate's folder) is not there to be read."""
    try:
        names = os.listdir("/")
    except OSError:
        return []
    shown = {*SYSTEM, *SOFTWARE, *COVERED}
    return sorted(
        path for name in names
        if (path := "/" + name) not in shown and os.path.isdir(path) and not os.path.islink(path)
    )  # fmt: skip


def _hideable(path: str) -> bool:
    """Whether hiding ``path`` leaves the system's own folders visible (a progress
    file in ``/`` or ``/usr`` must not hide the C library)."""
    return not any(_under(system, path) for system in SYSTEM)


def python_paths() -> list[str]:
    """What a Python process started like this one reads: its installation,
    its site-packages and its path, but the current folder (``python -m`` puts it
    first on the path: a workspace graded from inside would be "readable", its
    progress file and compile cache shown; ``/tmp`` would bring the host's back)."""
    here = os.path.realpath(os.getcwd()) if os.path.isdir(".") else ""
    return [sys.prefix, sys.base_prefix, os.path.dirname(os.path.realpath(sys.executable)),
            *(p for p in sys.path if p and os.path.realpath(p) != here)]  # fmt: skip


def _probe(switch: str, memory: str) -> str:
    if switch.strip().lower() in ("off", "0", "no", "false"):
        return f"off: turned off ({SWITCH}={switch})"
    if not sys.platform.startswith("linux"):
        return f"off: no sandbox on {sys.platform} (Linux only)"
    try:
        limit = memory_limit(memory)
    except ValueError as exc:
        return f"off: {exc}"
    probe = [sys.executable, "-I", "-S", "-c", "pass"]
    command = _command(probe, limit, python_paths(), [])
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=60,
                              stdin=subprocess.DEVNULL)  # fmt: skip
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"off: the sandbox could not start ({exc})"
    if done.returncode != 0:
        lines = [line for line in done.stderr.splitlines() if line.strip()]
        why = lines[-1].removeprefix("sandbox: ") if lines else f"exit code {done.returncode}"
        return f"off: {why}"
    return "on"


# ------------------------------------------------------------------ inside (the script)


class SetupError(Exception):
    """The sandbox cannot be made here; ``str()`` says why."""


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def _check(result: int, what: str) -> int:
    if result == -1:
        errno = ctypes.get_errno()
        raise SetupError(f"{what}: {os.strerror(errno)}")
    return result


def _mount(libc, source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:  # fmt: skip
    enc = lambda s: s.encode() if s is not None else None  # noqa: E731
    _check(libc.mount(enc(source), enc(target), enc(fstype), ctypes.c_ulong(flags), enc(data)),
           f"cannot mount {fstype or source or ''} on {target}")  # fmt: skip


def _kept_flags(path: str) -> int:
    """The flags of the mount at ``path`` that a remount must keep (a user
    namespace may not clear them)."""
    f = os.statvfs(path).f_flag
    flags = 0
    for st, ms in ((os.ST_NOSUID, MS_NOSUID), (os.ST_NODEV, MS_NODEV), (os.ST_NOEXEC, MS_NOEXEC),
                   (os.ST_NOATIME, MS_NOATIME), (os.ST_NODIRATIME, MS_NODIRATIME),
                   (os.ST_RELATIME, MS_RELATIME)):  # fmt: skip
        if f & st:
            flags |= ms
    return flags


def _all_read_only(libc) -> None:
    """Every mount read-only: one ``mount_setattr`` (Linux ≥ 5.12), else a
    remount of each mount point."""

    class MountAttr(ctypes.Structure):
        _fields_ = [("attr_set", ctypes.c_uint64), ("attr_clr", ctypes.c_uint64),
                    ("propagation", ctypes.c_uint64), ("userns_fd", ctypes.c_uint64)]  # fmt: skip

    attr = MountAttr(MOUNT_ATTR_RDONLY, 0, 0, 0)
    done = libc.syscall(ctypes.c_long(SYS_MOUNT_SETATTR), ctypes.c_int(AT_FDCWD), b"/",
                        ctypes.c_uint(AT_RECURSIVE), ctypes.byref(attr),
                        ctypes.c_size_t(ctypes.sizeof(attr)))  # fmt: skip
    if done == 0:
        return
    with open("/proc/self/mountinfo") as f:
        points = [_unescape(line.split()[4]) for line in f]
    for point in dict.fromkeys(points):
        try:
            flags = _kept_flags(point)
        except OSError:
            continue  # not reachable from here (covered by another mount, or no access)
        _mount(libc, None, point, None, MS_REMOUNT | MS_BIND | MS_RDONLY | flags)


def _unescape(field: str) -> str:
    return field.replace("\\040", " ").replace("\\011", "\t").replace("\\012", "\n").replace("\\134", "\\")  # fmt: skip


def _under(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def _uncover(libc, keep: list, covers: list[str], hidden: list[str]) -> None:
    """Hide each ``hidden`` folder under an empty tmpfs, and bind back what is
    kept (``keep``: path, descriptor), read-only, where a cover hides it. Parents
    first (the shortest path first; at one path, the cover before the keep), so
    that a hidden folder inside a kept one is hidden, and a kept folder inside
    a hidden one is bound back over it."""
    kept = {p for p, _ in keep}  # a folder both hidden and kept is kept (it is not covered:
    # a bind of it would carry the cover along)
    ops = [(p, 0, None) for p in hidden if p not in kept]
    ops += [(p, 1, fd) for p, fd in keep]
    shown: list[str] = []
    hid: list[str] = []
    for path, kind, fd in sorted(ops, key=lambda o: (len(o[0]), o[1])):
        if kind == 0:
            if os.path.isdir(path) and not os.path.islink(path):  # else: not reachable here
                _mount(libc, "tmpfs", path, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
                       f"size={HIDDEN_SIZE},mode=755")  # fmt: skip
                covers.append(path)
                hid.append(path)
            continue
        covered = _depth(path, covers) > _depth(path, shown)  # the nearest above it is a cover
        shown.append(path)
        if not covered:
            os.close(fd)
            continue  # visible already, read-only
        _bind_back(libc, fd, path)
        _mount(libc, None, path, None, MS_REMOUNT | MS_BIND | MS_RDONLY | _kept_flags(path))
        os.close(fd)
    for path in hid:  # empty, and read-only: nothing can be planted there
        _mount(libc, None, path, None,
               MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC)  # fmt: skip


def _bind_back(libc, fd: int, path: str) -> None:
    """Bind what ``fd`` (``O_PATH``, opened before the covers) names at ``path``,
    making the mount point (a folder, or an empty file) in the cover first."""
    if os.path.isdir(f"/proc/self/fd/{fd}"):
        os.makedirs(path, exist_ok=True)
    else:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        open(path, "a").close()
    _mount(libc, f"/proc/self/fd/{fd}", path, None, MS_BIND | MS_REC)


def _depth(path: str, folders: list[str]) -> int:
    """The length of the longest of ``folders`` that holds ``path`` (−1: none)."""
    return max((len(f) for f in folders if _under(path, f)), default=-1)


def _inside(config: dict, lifeline: int) -> None:
    """The student's process-to-be, PID 1 in its namespace: mounts, limits, exec."""
    libc = _libc()
    _check(libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0), "prctl(PR_SET_PDEATHSIG)")
    import select

    if select.select([lifeline], [], [], 0)[0]:  # the parent ended before the line above
        os._exit(1)
    if config.get("loopback"):
        _loopback_up()
    _mount(libc, None, "/", None, MS_REC | MS_PRIVATE)
    # what must stay visible under the folders covered below, held open across the cover
    keep = []
    for path in config["readable"]:
        try:
            keep.append((path, os.open(path, O_PATH | os.O_CLOEXEC)))
        except OSError:
            continue
    _all_read_only(libc)
    _mount(libc, "proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    covers = []
    """Folders covered by a tmpfs of ours, where what is kept must be bound back."""
    for folder in COVERED:
        if os.path.isdir(folder):
            _mount(libc, "tmpfs", folder, "tmpfs", MS_NOSUID | MS_NODEV,
                   f"size={config.get('scratch') or SCRATCH},mode=1777")  # fmt: skip
            covers.append(folder)
    _uncover(libc, keep, covers, config.get("hidden") or [])
    os.environ[WRITES_VARIABLE] = str(_bytes(config.get("scratch") or SCRATCH))
    memory = int(config["memory"])
    for limit, value in ((resource.RLIMIT_DATA, memory), (resource.RLIMIT_NPROC, PROCESSES),
                         (resource.RLIMIT_FSIZE, FILE_SIZE), (resource.RLIMIT_CORE, 0)):  # fmt: skip
        resource.setrlimit(limit, (value, value))
    resource.setrlimit(resource.RLIMIT_CPU, (CPU_SECONDS, CPU_SECONDS + 10))
    os.setsid()
    _check(libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "prctl(PR_SET_NO_NEW_PRIVS)")
    os.chdir("/tmp")
    os.close(lifeline)
    os.environ["TMPDIR"] = "/tmp"


CGROUPS = "/sys/fs/cgroup"
CGROUP_PREFIX = "course-sandbox-"


class Cgroup:
    """The sandbox's own control group, where one can be made (a cgroup v1 ``pids``
    and ``memory`` hierarchy, or a v2 one with both controllers, writable by this
    user): ``pids.max`` bounds its processes and threads for root too (which
    ``RLIMIT_NPROC`` exempts), and its memory limit counts everything its
    processes hold — memfds, ``/dev/shm`` and ``/tmp`` (tmpfs) included. The
    sandbox's outer process moves itself in before it forks the student's
    process; :meth:`remove` takes it out and removes the folders once all ended."""

    def __init__(self, processes: int, memory: int) -> None:
        self.made: list[str] = []
        """The folders made (one per v1 hierarchy, or the v2 one)."""
        self.held: list[tuple[int, int]] = []
        """For each: its parent folder and the parent's ``cgroup.procs``, open."""
        self.parents: list[str] = []
        self.pids = self.memory = ""
        """The folder whose ``pids.*`` (``memory.*``) files bound it; "" where none."""
        lines = _read_text("/proc/self/cgroup").splitlines()
        own = {}
        for line in lines:
            _, controllers, path = line.split(":", 2)
            for c in controllers.split(",") if controllers else [""]:
                own[c] = path
        name = f"{CGROUP_PREFIX}{os.getpid()}"
        if "pids" in own or "memory" in own:  # v1: one hierarchy per controller
            for c in ("pids", "memory"):
                if c in own:
                    folder = self._make(os.path.join(CGROUPS, c) + own[c], name)
                    if folder:
                        setattr(self, c, folder)
        elif "" in own:  # v2: one hierarchy
            parent = os.path.join(CGROUPS, own[""].lstrip("/"))
            available = _read_text(os.path.join(parent, "cgroup.subtree_control")).split()
            if not {"pids", "memory"} <= set(available):
                with contextlib.suppress(OSError):
                    _write(os.path.join(parent, "cgroup.subtree_control"), "+pids +memory")
            folder = self._make(parent, name)
            if folder:
                controllers = _read_text(os.path.join(folder, "cgroup.controllers")).split()
                self.pids = folder if "pids" in controllers else ""
                self.memory = folder if "memory" in controllers else ""
        try:
            if self.pids:
                _write(os.path.join(self.pids, "pids.max"), str(processes))
            if self.memory:
                for limit in ("memory.limit_in_bytes", "memory.max"):  # v1, v2
                    if os.path.exists(os.path.join(self.memory, limit)):
                        _write(os.path.join(self.memory, limit), str(memory))
                for swap, value in (
                    ("memory.memsw.limit_in_bytes", memory),
                    ("memory.swap.max", 0),
                ):
                    if os.path.exists(os.path.join(self.memory, swap)):
                        with contextlib.suppress(OSError):  # no swap accounting: nothing to bound
                            _write(os.path.join(self.memory, swap), str(value))
            for folder in self.made:
                _write(os.path.join(folder, "cgroup.procs"), str(os.getpid()))
            # opened now, in the host's mount namespace: the sandbox's makes every mount
            # read-only, and this process must still leave the group and remove it
            for parent in self.parents:
                self.held.append((os.open(parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC),
                                  os.open(os.path.join(parent, "cgroup.procs"),
                                          os.O_WRONLY | os.O_CLOEXEC)))  # fmt: skip
        except OSError:
            self.remove()
            self.pids = self.memory = ""

    def _make(self, parent: str, name: str) -> str:
        if not os.access(parent, os.W_OK):
            return ""
        for stale in _listdir(parent):  # left by an outer process that was killed
            if stale.startswith(CGROUP_PREFIX) and not _alive(stale[len(CGROUP_PREFIX) :]):
                with contextlib.suppress(OSError):
                    os.rmdir(os.path.join(parent, stale))
        folder = os.path.join(parent, name)
        try:
            os.mkdir(folder)
        except OSError:
            return ""
        self.made.append(folder)
        self.parents.append(parent)
        return folder

    def out_of_memory(self) -> bool:
        """Whether the kernel killed a process of it for its memory limit."""
        if not self.memory:
            return False
        for name, key in (("memory.events", "oom_kill"), ("memory.oom_control", "oom_kill")):
            for line in _read_text(os.path.join(self.memory, name)).splitlines():
                word, _, count = line.partition(" ")
                if word == key and count.strip().isdigit() and int(count) > 0:
                    return True
        return _read_text(os.path.join(self.memory, "memory.failcnt")).strip() not in ("", "0")

    def descriptors(self) -> list[int]:
        return [fd for pair in self.held for fd in pair]

    def remove(self) -> None:
        """Take this process out, and remove the folders once their processes ended
        (through the descriptors opened before the mounts became read-only)."""
        held = self.held or [(None, None)] * len(self.made)
        for folder, parent, (parent_fd, procs_fd) in zip(
            self.made, self.parents, held, strict=True
        ):
            with contextlib.suppress(OSError):
                if procs_fd is not None:
                    os.write(procs_fd, str(os.getpid()).encode())
                else:
                    _write(os.path.join(parent, "cgroup.procs"), str(os.getpid()))
            for _ in range(50):  # the killed processes leave it within moments
                try:
                    os.rmdir(os.path.basename(folder) if parent_fd is not None else folder,
                             dir_fd=parent_fd)  # fmt: skip
                    break
                except FileNotFoundError:
                    break
                except OSError as exc:
                    if exc.errno != 16:  # EBUSY: not empty yet; anything else will not change
                        break
                    import time

                    time.sleep(0.02)
        for fd in self.descriptors():
            with contextlib.suppress(OSError):
                os.close(fd)
        self.made, self.parents, self.held = [], [], []


def _read_text(path: str) -> str:
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return ""


def _write(path: str, text: str) -> None:
    with open(path, "w") as f:
        f.write(text)


def _listdir(path: str) -> list[str]:
    try:
        return os.listdir(path)
    except OSError:
        return []


def _alive(pid: str) -> bool:
    return pid.isdigit() and os.path.exists(f"/proc/{pid}")


PR_SET_DUMPABLE, PR_CAPBSET_DROP, CAPABILITY_V3 = 4, 24, 0x20080522


def apart(read_only: Sequence[str] = ()) -> str | None:
    """Set one process of a cluster (inside the sandbox, already forked, no thread
    running) apart from the others, which share its sandbox: a private ``/tmp`` and
    ``/dev/shm`` of its own (a user, mount and IPC namespace of its own, fresh
    tmpfs; what was mounted under them — the course's code, the submission — bound
    back read-only), ``read_only`` (the submission's folder) read-only, no System V
    IPC shared, no capability kept (nor any an exec could regain), not dumpable (no
    other process of the same user may trace it or read its memory), no Unix socket.
    What crosses between the processes then goes over the network, where the grader
    counts it (:mod:`grader.sandbox.traffic`).
    Where the kernel refuses a nested namespace, the folders stay shared and why is
    returned (the rest holds: no capability, not dumpable, no Unix socket)."""
    libc = _libc()
    try:
        _own_folders(libc, read_only)
        problem = None
    except (SetupError, OSError) as exc:
        problem = str(exc)
    last = int(Path("/proc/sys/kernel/cap_last_cap").read_text())
    for cap in range(last + 1):  # the bounding set emptied: an exec as root gains nothing
        if libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
            break  # no namespace of its own: it has no capability to drop
    header = struct.pack("=Ii", CAPABILITY_V3, 0)
    _check(libc.capset(ctypes.c_char_p(header), ctypes.c_char_p(bytes(24))), "capset")
    _check(libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0), "prctl(PR_SET_DUMPABLE)")
    _no_local_sockets(libc)
    return problem


def _own_folders(libc, read_only: Sequence[str]) -> None:
    """A user, mount and IPC namespace of this process's own, with a fresh ``/tmp``
    and ``/dev/shm`` (see :func:`apart`)."""
    uid, gid = os.getuid(), os.getgid()
    points = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        point = re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), line.split()[4])
        if point not in points and any(_under(point, c) and point != c for c in COVERED):
            points.append(point)
    _check(libc.unshare(ctypes.c_int(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWIPC)), "unshare")
    # root of its own namespace, its own user outside: not dumpable, its /proc stays
    # its user's (the worker reads its sockets there); no capability survives below
    for name, text in (("setgroups", "deny"), ("uid_map", f"0 {uid} 1"), ("gid_map", f"0 {gid} 1")):  # fmt: skip
        with open(f"/proc/self/{name}", "w") as f:
            f.write(text)
    _mount(libc, None, "/", None, MS_REC | MS_PRIVATE)
    keep = []  # held open in this namespace's copy of the mounts, across the covers
    for point in points:
        with contextlib.suppress(OSError):
            keep.append((point, os.open(point, O_PATH | os.O_CLOEXEC)))
    for folder in COVERED:
        if os.path.isdir(folder):
            _mount(
                libc, "tmpfs", folder, "tmpfs", MS_NOSUID | MS_NODEV, f"size={SCRATCH},mode=1777"
            )
    bound: list[str] = []
    for point, fd in keep:
        if not any(_under(point, b) for b in bound):  # a parent's bind brought it along
            _bind_back(libc, fd, point)
            bound.append(point)
        os.close(fd)
    for point in [p for p, _ in keep] + [p for p in read_only if os.path.ismount(p)]:
        with contextlib.suppress(SetupError, OSError):
            _mount(libc, None, point, None, MS_REMOUNT | MS_BIND | MS_RDONLY | _kept_flags(point))


SECCOMP_SET_MODE_FILTER, PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 1, 22, 2
SECCOMP_RET_ALLOW, SECCOMP_RET_ERRNO = 0x7FFF0000, 0x00050000
SOCKET_CALLS = {"x86_64": (0xC000003E, 41, 53), "aarch64": (0xC00000B7, 198, 199)}
"""Per machine: the audit architecture, ``socket`` and ``socketpair``'s numbers."""


def _no_local_sockets(libc) -> None:
    """From now on ``socket(AF_UNIX, …)`` and ``socketpair(AF_UNIX, …)`` fail
    (EPERM), in this process and what it starts (a seccomp filter, which
    ``no_new_privs`` allows). A Unix socket, abstract ones included, is shared by
    a whole network namespace and carries bytes no loopback counter sees; the
    cluster's own connections are TCP. On a machine not listed here, nothing is
    filtered (the byte counts still bound what TCP carries). Calls of another ABI
    (32-bit ``socketcall``, x32) are refused whole."""
    import platform

    arch = SOCKET_CALLS.get(platform.machine())
    if arch is None:
        return
    audit, socket_nr, pair_nr = arch
    deny = SECCOMP_RET_ERRNO | 1  # EPERM
    bpf = [  # (code, jt, jf, k)
        (0x20, 0, 0, 4), (0x15, 1, 0, audit), (0x06, 0, 0, deny),  # another ABI's calls: refused
        (0x20, 0, 0, 0), (0x35, 5, 0, 0x40000000),  # x32's numbers: refused
        (0x15, 2, 0, socket_nr), (0x15, 1, 0, pair_nr), (0x06, 0, 0, SECCOMP_RET_ALLOW),
        (0x20, 0, 0, 16), (0x15, 0, 1, 1),  # args[0] (its low half) == AF_UNIX
        (0x06, 0, 0, deny), (0x06, 0, 0, SECCOMP_RET_ALLOW),
    ]  # fmt: skip
    code = b"".join(struct.pack("=HBBI", *op) for op in bpf)
    buffer = ctypes.create_string_buffer(code)
    prog = struct.pack("=HxxxxxxQ", len(bpf), ctypes.addressof(buffer))
    _check(libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.c_char_p(prog), 0, 0), "seccomp")


SIOCGIFFLAGS, SIOCSIFFLAGS, IFF_UP = 0x8913, 0x8914, 0x1


def _loopback_up() -> None:
    """Bring up ``lo`` in this (fresh) network namespace: the user namespace's
    owner may (``SIOCSIFFLAGS``, ``IFF_UP``)."""
    import fcntl
    import socket
    import struct

    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            request = struct.pack("16sH14x", b"lo", 0)
            flags = struct.unpack("16sH14x", fcntl.ioctl(s, SIOCGIFFLAGS, request))[1]
            fcntl.ioctl(s, SIOCSIFFLAGS, struct.pack("16sH14x", b"lo", flags | IFF_UP))
    except OSError as exc:
        raise SetupError(f"cannot bring up the loopback: {exc}") from None


def group_memory(config: dict) -> int:
    """What all of the sandbox's processes may hold together (its cgroup's memory
    limit): what one may allocate, and its private ``/tmp`` and ``/dev/shm`` full."""
    return int(config["memory"]) + 2 * _bytes(config.get("scratch") or SCRATCH)


def _bytes(size: str) -> int:
    """A tmpfs size (``512m``) in bytes; 0 where it is not one (the mount says why)."""
    scale = {"k": 1 << 10, "m": MiB, "g": GiB}.get(size[-1:].lower(), 1)
    try:
        return int(size[:-1] if size[-1:].isalpha() else size) * scale
    except ValueError:
        return 0


def _gib(n: int) -> str:
    return f"{n / GiB:.1f} GiB"


def _tasks() -> int:
    """Processes and threads in the sandbox's PID namespace: all those its ``/proc``
    shows (the student's process mounted it, in the mount namespace this outer
    process shares, which it is not part of)."""
    count = 0
    for entry in _listdir("/proc"):
        if entry.isdigit():
            count += len(_listdir(f"/proc/{entry}/task"))
    return count


def _read(fd: int) -> bytes:
    while True:
        try:
            return os.read(fd, 4096)
        except InterruptedError:
            continue


def main(argv: list[str]) -> None:
    """``jail.py CONFIG -- COMMAND…``: the sandbox's outer process."""
    config, command = json.loads(argv[0]), argv[2:]
    libc = _libc()
    status = config.get("status")
    if status is not None:
        os.set_inheritable(status, False)  # the student's process never holds it

    def say(line: str) -> None:
        if status is not None:
            with contextlib.suppress(OSError):
                os.write(status, line.encode("utf-8", "replace") + b"\n")
                os.close(status)

    group = None
    try:
        _check(libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0), "prctl(PR_SET_PDEATHSIG)")
        if os.getppid() != config["parent"]:
            os._exit(1)  # the worker is gone already
        group = Cgroup(PROCESSES, group_memory(config))
        uid, gid = os.getuid(), os.getgid()
        flags = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC
        _check(libc.unshare(ctypes.c_int(flags)), "no user namespaces here (unshare)")
        inner = uid or 1000  # not root inside: exec drops every capability
        with open("/proc/self/setgroups", "w") as f:
            f.write("deny")
        with open("/proc/self/uid_map", "w") as f:
            f.write(f"{inner} {uid} 1")
        with open("/proc/self/gid_map", "w") as f:
            f.write(f"{gid or 1000} {gid} 1")
    except (SetupError, OSError) as exc:
        print(f"sandbox: {exc}", file=sys.stderr, flush=True)
        say(f"failed: {exc}")
        if group is not None:
            group.remove()
        os._exit(SETUP_FAILED)
    lifeline, hold = os.pipe()
    failed, failing = os.pipe()  # close-on-exec: EOF with nothing said once the exec succeeded
    pid = os.fork()
    if pid == 0:
        try:
            os.close(hold)
            os.close(failed)
            _inside(config, lifeline)
            try:
                os.execvp(command[0], command)
            except OSError as exc:  # its message names no file: say which
                raise SetupError(
                    f"could not run {command[0]} in the sandbox: {exc.strerror or exc}"
                ) from None
        except Exception as exc:  # noqa: BLE001 — whatever stops the setup, said as such
            why = str(exc) if isinstance(exc, SetupError | OSError) else repr(exc)
            print(f"sandbox: {why}", file=sys.stderr, flush=True)
            with contextlib.suppress(OSError):
                os.write(failing, why.encode("utf-8", "replace")[:4000])
        finally:
            os._exit(SETUP_FAILED)
    os.close(failing)
    kept = sorted({hold, failed, *([status] if status is not None else []), *group.descriptors()})
    for low, high in zip([2, *kept], [*kept, 1 << 16]):
        os.closerange(low + 1, high)  # the outer process holds none of the student's pipes
    why = b""
    while chunk := _read(failed):
        why += chunk
    os.close(failed)
    say(f"failed: {why.decode('utf-8', 'replace')}" if why else "ok")
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT):
        signal.signal(sig, lambda s, _f: os.kill(pid, signal.SIGKILL))
    counted = not group.pids and uid == 0  # RLIMIT_NPROC binds any other user
    while True:
        try:
            _, status = os.waitpid(pid, os.WNOHANG if counted else 0)
        except InterruptedError:
            continue
        if _ or not counted:
            break
        if _tasks() > PROCESSES:  # root, no pids cgroup: RLIMIT_NPROC does not bind
            print(f"sandbox: your code started more than {PROCESSES} processes and threads "
                  "(the sandbox's limit); all of them were stopped", file=sys.stderr, flush=True)  # fmt: skip
            os.kill(pid, signal.SIGKILL)
            counted = False
        else:
            import time

            time.sleep(0.05)
    if os.WIFSIGNALED(status) and group.out_of_memory():
        print(f"sandbox: your code's processes held more than {_gib(group_memory(config))} of "
              "memory (the sandbox's limit, memfds, /tmp and /dev/shm included); the kernel "
              "stopped them", file=sys.stderr, flush=True)  # fmt: skip
    group.remove()
    if os.WIFSIGNALED(status):  # end as it ended: the worker says "killed by SIGSEGV"
        sig = os.WTERMSIG(status)
        if sig not in (signal.SIGKILL, signal.SIGSTOP):  # those cannot be caught anyway
            signal.signal(sig, signal.SIG_DFL)
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        os.kill(os.getpid(), sig)
    os._exit(os.waitstatus_to_exitcode(status) if not os.WIFSIGNALED(status) else 1)


if __name__ == "__main__":
    main(sys.argv[1:])
