"""What crosses between a cluster's processes, measured by the kernel (lesson 13, issue 39).

The processes of a cluster (:mod:`grader.sandbox.cluster`) share one network
namespace of their own, made by the OS sandbox, with its loopback only: every
byte one process sends another on a TCP connection is counted by the kernel on
that connection's socket (``tcp_info``: ``bytes_acked``, ``bytes_received``),
and every packet on the namespace's ``lo`` in its interface counters. Bytes are
counted where they arrive (``bytes_received``), never where they leave (an
acknowledgement may come after the call). Neither
can be written by the student's code; the worker reads both from outside.

:class:`Reader` runs this module as a script, ``python -I -S traffic.py --serve PID``
(the standard library only, started fresh: joining another namespace needs a
single-threaded process), once per cluster launcher. It makes itself
non-dumpable (no process of the sandbox may trace it), enters the user and
network namespaces of process ``PID`` (the cluster's launcher, inside the
sandbox; the worker's user owns them), and for each line the worker sends
prints one JSON line: each TCP socket of the namespace (IPv4 and IPv6, from the
kernel's ``sock_diag`` netlink interface) with its inode, ports and payload
bytes sent and received, and ``lo``'s byte and packet counters.
:func:`snapshot` reads once, from a process of its own (``traffic.py PID``).

:func:`crossing` then attributes each connection to the processes holding its
two ends (each process's sockets read from ``/proc/<pid>/fd``): bytes on a
connection whose ends are held by two different processes of the cluster cross
processes — gloo's collectives and the coordination service's traffic alike —,
those between two ends held by one process (gloo connects a process's own
devices over TCP too) do not. What the loopback carried that no socket still
open accounts for (a connection opened and closed within the call, UDP) is
counted as crossing: nothing leaves the measurement by closing its socket.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import struct
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

NETLINK_SOCK_DIAG, SOCK_DIAG_BY_FAMILY = 4, 20
NLM_F_REQUEST, NLM_F_DUMP, NLMSG_DONE, NLMSG_ERROR = 0x1, 0x300, 3, 2
INET_DIAG_INFO = 2
TCPI_BYTES_ACKED, TCPI_BYTES_RECEIVED = 120, 128
"""Offsets in ``struct tcp_info`` (Linux ≥ 4.2): 8 bytes of u8 fields, 24 u32,
then u64 pacing_rate, max_pacing_rate, bytes_acked, bytes_received."""
CLONE_NEWUSER, CLONE_NEWNET = 0x10000000, 0x40000000
PR_SET_PDEATHSIG, PR_SET_DUMPABLE = 1, 4
HEADER = {socket.AF_INET: 66, socket.AF_INET6: 86}
"""Bytes of headers per TCP packet on ``lo`` (Ethernet 14, IP 20 or 40, TCP with
timestamps 32): what the interface counts beyond the payload."""


# ------------------------------------------------------------------ the script


def _enter(pid: int) -> None:
    """Join process ``pid``'s user namespace (when it is not ours) and network namespace."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    for kind, flag in (("user", CLONE_NEWUSER), ("net", CLONE_NEWNET)):
        if os.stat(f"/proc/{pid}/ns/{kind}").st_ino == os.stat(f"/proc/self/ns/{kind}").st_ino:
            continue
        fd = os.open(f"/proc/{pid}/ns/{kind}", os.O_RDONLY)
        if libc.setns(fd, flag) != 0:
            raise OSError(ctypes.get_errno(), f"setns({kind})")
        os.close(fd)


def _dump(family: int) -> list[dict]:
    """Every TCP socket of this network namespace of ``family``, with its bytes."""
    out = []
    with socket.socket(socket.AF_NETLINK, socket.SOCK_DGRAM, NETLINK_SOCK_DIAG) as s:
        # inet_diag_req_v2: family, protocol, ext, pad, states; then an empty sockid (48 bytes)
        req = struct.pack("=BBBBI", family, socket.IPPROTO_TCP, 1 << (INET_DIAG_INFO - 1), 0,
                          0xFFFFFFFF) + bytes(48)  # fmt: skip
        s.send(struct.pack("=IHHII", 16 + len(req), SOCK_DIAG_BY_FAMILY,
                           NLM_F_REQUEST | NLM_F_DUMP, 1, 0) + req)  # fmt: skip
        while True:
            data = s.recv(1 << 20)
            at = 0
            while at + 16 <= len(data):
                length, kind = struct.unpack_from("=IH", data, at)
                if kind == NLMSG_DONE:
                    return out
                if kind == NLMSG_ERROR:
                    raise OSError("sock_diag refused the dump")
                msg = at + 16
                # inet_diag_msg: family, state, timer, retrans; sockid (sport, dport big-endian,
                # src[16], dst[16], if, cookie[2]); expires, rqueue, wqueue, uid, inode
                sport, dport = struct.unpack_from(">HH", data, msg + 4)
                inode = struct.unpack_from("=I", data, msg + 68)[0]
                sent = received = 0
                attr = msg + 72
                while attr + 4 <= at + length:
                    alen, akind = struct.unpack_from("=HH", data, attr)
                    if alen < 4:
                        break
                    if akind == INET_DIAG_INFO and alen - 4 >= TCPI_BYTES_RECEIVED + 8:
                        sent, received = struct.unpack_from(
                            "=QQ", data, attr + 4 + TCPI_BYTES_ACKED
                        )
                    attr += (alen + 3) & ~3
                out.append({"inode": inode, "sport": sport, "dport": dport, "sent": sent,
                            "received": received, "family": family})  # fmt: skip
                at += (length + 3) & ~3


def _lo() -> tuple[int, int]:
    """``lo``'s received bytes and packets in this network namespace."""
    for line in Path("/proc/self/net/dev").read_text().splitlines():
        name, _, rest = line.partition(":")
        if name.strip() == "lo":
            fields = rest.split()
            return int(fields[0]), int(fields[1])
    return 0, 0


def _read() -> str:
    """This network namespace's counters now, as one JSON line (without its newline)."""
    sockets = _dump(socket.AF_INET) + _dump(socket.AF_INET6)
    lo_bytes, lo_packets = _lo()
    return json.dumps({"sockets": sockets, "lo_bytes": lo_bytes, "lo_packets": lo_packets})


def _undumpable() -> None:
    """No process of the namespaces this one joins may trace it or read its memory
    (its memory belongs to the user namespace it was started in, the worker's: only
    a capability there lets a non-dumpable process be traced), nor outlive the worker."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
    libc.prctl(PR_SET_PDEATHSIG, 9, 0, 0, 0)


def main(argv: list[str]) -> None:
    """``PID``: one snapshot printed; ``--serve PID``: a snapshot printed for each
    line read, until the input ends (:class:`Reader`)."""
    serve = argv[:1] == ["--serve"]
    _undumpable()
    _enter(int(argv[-1]))
    if not serve:
        print(_read())
        return
    for _ in sys.stdin:
        sys.stdout.write(_read() + "\n")
        sys.stdout.flush()


# ------------------------------------------------------------------ the worker's side


@dataclass(frozen=True)
class Snapshot:
    sockets: dict[int, dict]
    """Socket inode → its ports and counters."""
    lo_bytes: int
    lo_packets: int


def _parse(line: bytes) -> Snapshot:
    read = json.loads(line)
    return Snapshot({s["inode"]: s for s in read["sockets"]}, read["lo_bytes"], read["lo_packets"])


def snapshot(pid: int, timeout: float = 20.0) -> Snapshot:
    """The counters of the network namespace process ``pid`` is in, read now (a
    process started for this one reading: :class:`Reader` serves many)."""
    import subprocess

    done = subprocess.run(
        [sys.executable, "-I", "-S", __file__, str(pid)],
        capture_output=True, timeout=timeout, check=False, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    if done.returncode != 0:
        raise OSError(f"cannot read the cluster's network counters: {done.stderr.decode()[-300:]}")
    return _parse(done.stdout)


class Reader:
    """The counters of process ``pid``'s network namespace, read as often as asked
    by one process that joined it once (``traffic.py --serve PID``, started on the
    first :meth:`snapshot`): a grade of lesson 13 reads them 22 times, and a fresh
    process each time cost 86 ms of the worker's wait each (measured, load 9 on two
    cores). Its conversation is lines (:class:`grader.sandbox.channel.Channel`):
    an empty line asks, one JSON line answers. :meth:`close` ends it (it also ends
    when the worker does: its input closes, and its parent's death kills it)."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self._proc: Any = None
        self._channel: Any = None

    def snapshot(self, timeout: float = 20.0) -> Snapshot:
        """The counters now. ``OSError`` (the reader ended, or wrote something
        else) or ``subprocess.TimeoutExpired`` when they cannot be read."""
        import subprocess
        import time

        from grader.sandbox.channel import Channel, ChannelEnded, LineTooLong, Overdue

        if self._proc is None:
            self._proc = subprocess.Popen(
                [sys.executable, "-I", "-S", __file__, "--serve", str(self.pid)],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            )  # fmt: skip
            self._channel = Channel(self._proc.stdin, self._proc.stdout.fileno())
        try:
            self._channel.send_line(b"\n")
            line = self._channel.read_line(deadline=time.monotonic() + timeout)
            return _parse(line)
        except Overdue:
            self.close()
            raise subprocess.TimeoutExpired("traffic.py --serve", timeout) from None
        except (OSError, ChannelEnded, LineTooLong, ValueError, KeyError, TypeError):
            said = self._said()
            raise OSError(f"cannot read the cluster's network counters: {said}") from None

    def _said(self) -> str:
        """What the reader wrote on its error output (it is ended first)."""
        proc, self._proc = self._proc, None
        said = ""
        if proc is not None:
            _end(proc)
            with contextlib.suppress(Exception):
                said = proc.stderr.read().decode(errors="replace")[-300:]
            _close(proc)
        self._channel = None
        return said

    def close(self) -> None:
        """End the reader (nothing when it was never started)."""
        proc, self._proc, self._channel = self._proc, None, None
        if proc is not None:
            _end(proc)
            _close(proc)


def _end(proc: Any) -> None:
    with contextlib.suppress(OSError):
        proc.kill()
    with contextlib.suppress(Exception):
        proc.wait(timeout=5)


def _close(proc: Any) -> None:
    for f in (proc.stdin, proc.stdout, proc.stderr):
        with contextlib.suppress(OSError):
            f.close()


def holders(pids: dict[int, int]) -> dict[int, int]:
    """Socket inode → the index of the process (of ``pids``: pid → index) that holds it."""
    out: dict[int, int] = {}
    for pid, index in pids.items():
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                link = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            if link.startswith("socket:["):
                out[int(link[8:-1])] = index
    return out


@dataclass(frozen=True)
class Traffic:
    """Payload bytes sent during one call, between the cluster's processes."""

    crossing: int
    """Bytes on connections between two different processes, plus what the
    loopback carried that no open socket accounts for (``unaccounted``)."""
    within: int
    """Bytes on connections whose two ends one process holds."""
    unaccounted: int
    """Loopback payload no socket open after the call accounts for (counted in ``crossing``)."""
    connections: int
    """Connections between different processes that carried bytes in the call."""

    def to_dict(self) -> dict[str, int]:
        return {"crossing": self.crossing, "within": self.within,
                "unaccounted": self.unaccounted, "connections": self.connections}  # fmt: skip


SLACK_BYTES = 512
"""Loopback payload left unaccounted that is not counted: bytes in flight when a
snapshot was read (sent, not yet acknowledged), and what arrives between the
two readings of one snapshot. Far below what a process's rows or a gradient's
reduction carries in the lesson's examples (:mod:`grader.lessons.l13_multi_host.spec`)."""


def crossing(before: Snapshot, after: Snapshot, holder: dict[int, int]) -> Traffic:
    """What the call sent between the processes of ``holder`` (socket inode → process
    index), from two snapshots: each connection's bytes counted once, at its
    receiving end (``bytes_received``: up to date once the receiver has the data,
    which a collective's call waits for; the sender's ``bytes_acked`` may lag by a
    delayed acknowledgement, measured: ±3.5 KB between two calls of the same step);
    a connection between two sockets neither of which they hold (another cluster's,
    in the same namespace) is not theirs."""
    peers = {(s["sport"], s["dport"], s["family"]): inode for inode, s in after.sockets.items()}
    cross = within = foreign = connections = 0
    for inode, s in after.sockets.items():
        sent = s["received"] - before.sockets.get(inode, {"received": 0})["received"]
        if sent <= 0:
            continue
        mine = holder.get(inode)
        peer = holder.get(peers.get((s["dport"], s["sport"], s["family"]), -1))
        if mine is None and peer is None:
            foreign += sent
        elif mine is not None and mine == peer:
            within += sent
        else:
            cross += sent
            connections += 1
    packets = after.lo_packets - before.lo_packets
    payload = after.lo_bytes - before.lo_bytes - HEADER[socket.AF_INET] * packets
    slack = (HEADER[socket.AF_INET6] - HEADER[socket.AF_INET]) * packets + SLACK_BYTES
    unaccounted = max(0, payload - cross - within - foreign - slack)
    return Traffic(cross + unaccounted, within, unaccounted, connections)


if __name__ == "__main__":
    main(sys.argv[1:])
