"""The one line-framed channel (:mod:`grader.sandbox.channel`): what every
conversation on pipes between the course's processes is framed with."""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time

import pytest

from grader.sandbox.channel import (
    Channel,
    ChannelEnded,
    LineTooLong,
    Overdue,
    Stopped,
    encode,
)


@pytest.fixture
def pipe():
    """A channel reading one pipe, and the descriptor its other end writes on."""
    read, write = os.pipe()
    channel = Channel(fd=read, limit=64)
    yield channel, write
    channel.close()
    with contextlib.suppress(OSError):  # closed by the test already
        os.close(write)


def test_a_message_sent_is_one_compact_json_line_read_back_whole():
    read, write = os.pipe()
    sender = Channel(os.fdopen(write, "wb"))
    receiver = Channel(fd=read)
    sender.send({"seq": 3, "text": "a\nb"})  # a newline inside a value stays escaped
    sender.send([1, 2])
    assert receiver.read_line() == b'{"seq":3,"text":"a\\nb"}'
    assert json.loads(receiver.read_line()) == [1, 2]
    sender.close()
    with pytest.raises(ChannelEnded):
        receiver.read_line()
    receiver.close()
    assert encode({"a": 1}) == b'{"a":1}\n'


def test_lines_split_across_writes_or_sharing_one_come_one_at_a_time(pipe):
    channel, write = pipe
    os.write(write, b"one\ntw")  # the rest after a line is kept for the next read
    assert channel.read_line() == b"one"
    os.write(write, b"o\nthree\n")
    assert channel.read_line() == b"two"
    assert channel.read_line() == b"three"


def test_a_line_that_does_not_come_by_its_deadline_is_overdue(pipe):
    channel, _ = pipe
    start = time.monotonic()
    with pytest.raises(Overdue):
        channel.read_line(deadline=time.monotonic() + 0.3)
    assert 0.2 < time.monotonic() - start < 5  # its deadline, not the poll's second


def test_a_reader_told_to_stop_stops_waiting(pipe):
    channel, _ = pipe
    stop = threading.Event()
    threading.Timer(0.2, stop.set).start()
    with pytest.raises(Stopped):
        channel.read_line(stopped=stop.is_set, poll=0.05)


def test_an_end_before_a_whole_line_is_the_channel_ending(pipe):
    channel, write = pipe
    os.write(write, b"half a line")
    os.close(write)
    with pytest.raises(ChannelEnded):
        channel.read_line()


def test_a_line_longer_than_the_limit_is_cut_off_not_kept(pipe):
    channel, write = pipe
    os.write(write, b"x" * 65)  # no newline yet, and past the limit of 64
    with pytest.raises(LineTooLong):
        channel.read_line(deadline=time.monotonic() + 5)  # not waited for: cut off at once
    os.write(write, b"y" * 70 + b"\nok\n")  # one long line, whole: refused too
    with pytest.raises(LineTooLong):
        channel.read_line(deadline=time.monotonic() + 5)


def test_feeding_bytes_read_elsewhere_gives_the_whole_lines_and_says_what_was_cut():
    channel = Channel(limit=8)
    assert channel.feed(b"ab\ncd") == ([b"ab"], False)
    assert channel.feed(b"e\n\nf") == ([b"cde", b""], False)
    assert channel.feed(b"g" * 10) == ([], True)  # "f" + ten more: past the limit, dropped
    assert channel.feed(b"h\n") == ([b"h"], False)  # the next line starts afresh
