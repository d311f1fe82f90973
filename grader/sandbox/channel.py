"""One line-framed conversation between two processes: :class:`Channel`.

Every conversation of the sandbox that is lines on pipes goes through it: the
worker's questions to a student's process and its answers
(:mod:`grader.sandbox.isolation`, :mod:`grader.sandbox.student`), and to each
process of a lesson-13 cluster (:mod:`grader.sandbox.cluster`), the reader of a
cluster's network counters (:class:`grader.sandbox.traffic.Reader`), the load
question a process started ahead is asked (:mod:`grader.sandbox.spares`),
and the worker's signed events to ``course`` (:mod:`grader.sandbox.worker`,
:mod:`grader.sandbox.runner`). A message is one line: JSON without newlines
(:func:`encode`), or a line the caller made (a signed event). Reading keeps
what came after the last whole line for the next read, bounds a line's length
(a process that sends endless bytes without a newline is cut off, never held
in memory), and can wait with a deadline.

The standard library only: a student's process and the worker's first steps
import it before numpy or jax.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import time
from collections.abc import Callable
from typing import Any, BinaryIO

LINE_LIMIT = 256 * 1024 * 1024
"""Longest line a channel reads by default (an exported program, base64)."""


class ChannelEnded(EOFError):
    """The other end closed its side (it ended) before a whole line came."""


class LineTooLong(ValueError):
    """More bytes than the channel's limit came without a newline."""


class Overdue(Exception):
    """A line did not come by the deadline it was waited for with."""


class Stopped(Exception):
    """The reader was told to stop waiting (``stopped()`` became true)."""


def encode(message: Any) -> bytes:
    """``message`` as the line that carries it: compact JSON and a newline."""
    return json.dumps(message, separators=(",", ":")).encode() + b"\n"


class Channel:
    """Lines written to ``out`` (a binary file, flushed after each line) and read
    from the descriptor ``fd``; either may be None for a one-way channel.

    :meth:`read_line` waits for the next whole line (with a deadline, if given);
    :meth:`feed` takes bytes read elsewhere (one of several descriptors a
    selector watches) and returns the whole lines among them. Both keep the
    rest for later and cut off a line longer than ``limit``."""

    def __init__(
        self, out: BinaryIO | None = None, fd: int | None = None, limit: int = LINE_LIMIT
    ) -> None:
        self.out, self.fd, self.limit = out, fd, limit
        self._buffer = b""

    # ------------------------------------------------------------------ writing

    def send(self, message: Any) -> None:
        """Write ``message`` as one JSON line (:func:`encode`). ``OSError``: the
        other end is gone."""
        self.send_line(encode(message))

    def send_line(self, line: bytes) -> None:
        """Write ``line`` (which ends with its newline) and flush it."""
        assert self.out is not None, "a channel without a side to write to"
        self.out.write(line)
        self.out.flush()

    # ------------------------------------------------------------------ reading

    def feed(self, chunk: bytes) -> tuple[list[bytes], bool]:
        """The whole lines (without their newlines) that ``chunk`` completes, in
        order, and whether a line was cut off: the rest outgrew the limit (it is
        dropped; the next line starts afresh). The rest is kept for later."""
        self._buffer += chunk
        *lines, self._buffer = self._buffer.split(b"\n")
        cut = len(self._buffer) > self.limit
        if cut:
            self._buffer = b""
        return lines, cut

    def read_line(
        self, deadline: float | None = None, stopped: Callable[[], bool] = lambda: False,
        poll: float = 1.0,
    ) -> bytes:  # fmt: skip
        """The next line (without its newline), read from the descriptor as it
        comes. ``deadline`` (``time.monotonic()``): :class:`Overdue` after it;
        ``stopped``: asked every ``poll`` seconds at most while waiting,
        :class:`Stopped` once true. :class:`ChannelEnded` when the other end
        closes first, :class:`LineTooLong` past the limit."""
        assert self.fd is not None, "a channel without a side to read from"
        while b"\n" not in self._buffer:
            if stopped():
                raise Stopped()
            wait = poll if deadline is None else min(poll, deadline - time.monotonic())
            if wait <= 0:
                raise Overdue()
            ready, _, _ = select.select([self.fd], [], [], wait)
            if not ready:
                continue
            chunk = os.read(self.fd, 1 << 20)
            if not chunk:
                raise ChannelEnded()
            self._buffer += chunk
            end = self._buffer.find(b"\n")
            if end > self.limit or (end < 0 and len(self._buffer) > self.limit):
                self._buffer = b""
                raise LineTooLong(f"a line longer than {self.limit} bytes")
        line, _, self._buffer = self._buffer.partition(b"\n")
        return line

    def lines(self) -> Any:
        """Every line until the other end closes (an iterator; blocking)."""
        while True:
            try:
                yield self.read_line()
            except ChannelEnded:
                return

    # ------------------------------------------------------------------ the end

    def close(self) -> None:
        """Close both sides (each at most once; already closed: nothing)."""
        out, self.out = self.out, None
        fd, self.fd = self.fd, None
        if out is not None:
            with contextlib.suppress(OSError):
                out.close()
        if fd is not None:
            with contextlib.suppress(OSError):
                os.close(fd)
