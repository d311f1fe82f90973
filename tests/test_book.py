"""The book of a student's process's open questions, and its one reader thread
(issue 44 §1: :class:`grader.sandbox.isolation.StudentProcess` is a
:class:`~grader.sandbox.channel.Channel`, a :class:`~grader.sandbox.book.Book` and
one thread that reads; waiting threads take their answers from the book)."""

from __future__ import annotations

import io
import os
import threading
import time

import pytest

from grader.faults import StudentProcessDied
from grader.sandbox.book import Book
from grader.sandbox.isolation import StudentProcess


def test_each_answer_is_taken_once_by_its_question():
    book = Book(pending=(1, 2))
    assert book.file({"seq": 2, "n": 20}) and book.file({"seq": 1, "n": 10})
    assert book.take(1) == {"seq": 1, "n": 10}
    assert book.take(1) is None  # taken
    assert book.take(2) == {"seq": 2, "n": 20}
    assert book.pending == set()


def test_lines_ahead_of_an_answer_are_taken_by_index_and_the_answer_ends_them():
    book = Book(pending=(5,))
    assert book.file({"seq": 5, "part": 0, "blob": "a"})
    assert book.pending == {5}  # more follows
    assert book.take(5, part=1) is None
    assert book.file({"seq": 5, "programs": 1})
    assert book.take(5, part=0) == {"seq": 5, "part": 0, "blob": "a"}
    # asked for a second program, the run ended with one: the answer says so
    assert book.take(5, part=1) == {"seq": 5, "programs": 1}


@pytest.mark.parametrize(
    "line", [None, [1], {"ok": True}, {"seq": 9}, {"seq": True}], ids=repr
)  # fmt: skip
def test_a_line_for_no_question_asked_is_refused(line):
    book = Book(pending=(1,))
    assert book.file(line) is False
    assert book.pending == {1}


def test_a_forgotten_question_drops_what_came_and_what_comes():
    book = Book(pending=(3, 4))
    book.file({"seq": 3, "part": 0})
    book.forget(3)
    assert book.take(3, part=0) is None
    assert book.file({"seq": 3, "part": 1}) and book.take(3, part=1) is None
    assert not book.settled(3)  # its answer is still awaited (and dropped when it comes)
    assert book.file({"seq": 3}) and book.take(3) is None
    assert book.settled(3) and not book.settled(4)


# ------------------------------------------------------------------ the reader thread


class _Alive:
    """Stands for the student's process: alive until killed; ``code`` once ended."""

    def __init__(self, code: int | None = None) -> None:
        self.code = code

    def poll(self):
        return self.code

    def send_signal(self, sig):
        self.code = -sig

    def wait(self, timeout=None):
        return self.code if self.code is not None else -9


def _readers() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "student's answers"]


def _wait_until(predicate, limit: float = 30.0) -> bool:
    end = time.monotonic() + limit
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.05)
    return predicate()


def test_one_reader_files_answers_that_come_before_anyone_waits():
    before = len(_readers())
    p = StudentProcess("/nowhere", "l02_collectives")
    read, write = os.pipe()
    p.adopt((_Alive(), os.fdopen(os.dup(write), "wb"), read), pending=(1, 2), loaded=True)
    assert len(_readers()) == before + 1  # one reader for the process
    os.write(write, b'{"seq": 2, "n": 20}\n{"seq": 1, "n": 10}\n')
    assert _wait_until(lambda: p.waiting == 0)  # both filed, nobody waiting yet
    assert p.receive(1) == {"seq": 1, "n": 10} and p.receive(2) == {"seq": 2, "n": 20}
    p.stop()
    assert _wait_until(lambda: len(_readers()) == before)  # it ends with its process
    os.close(write)


def test_a_process_that_ends_while_nobody_waits_is_stopped_and_its_waiter_told_why():
    p = StudentProcess("/nowhere", "l02_collectives")
    read, write = os.pipe()
    ended = _Alive(code=3)
    p.adopt((ended, io.BytesIO(), read), pending=(1,), loaded=True)
    os.close(write)  # it ended, its answer never sent
    assert _wait_until(lambda: p.proc is None)  # the reader saw the end and stopped it
    with pytest.raises(StudentProcessDied, match="code 3"):
        p.receive(1)
