"""Whatever is started ahead of need, behind one interface
(:class:`grader.sandbox.spares.Ahead`): a lesson's student's process asks it
for a ready channel and takes what it hands over, a process started ahead (and
asked to import the module already) or one started now."""

from __future__ import annotations

import io
import json
import os

from grader.sandbox import processes
from grader.sandbox.isolation import StudentProcess
from grader.sandbox.spares import Ahead, Ready, Spares


class _Alive:
    """Stands for a student's process: alive until killed."""

    def __init__(self) -> None:
        self.killed = False

    def poll(self):
        return -9 if self.killed else None

    def kill(self):
        self.killed = True

    def send_signal(self, sig):  # the grader sends only kills
        self.killed = True

    def wait(self, timeout=None):
        return -9


def test_a_lesson_takes_the_process_started_for_it_else_one_started_now(monkeypatch):
    started: list[tuple[str, str]] = []
    questions: list[io.BytesIO] = []

    def fake_spawn(directory="", prepare="", ahead=False, hidden=(), sandbox=None):
        started.append((directory, prepare))
        questions.append(io.BytesIO())
        return (_Alive(), questions[-1], -1)

    monkeypatch.setattr(processes, "spawn", fake_spawn)
    fresh = Ahead().ready("/a", "l02_collectives")  # nothing ahead: started when asked for
    assert not fresh.asked and started == [("/a", "l02_collectives")]

    spares = Spares()
    spares.prestart("/a", "l02_collectives")  # started ahead and asked to load at once
    load = json.loads(questions[-1].getvalue())
    assert load == {"op": "load", "directory": "/a", "module": "l02_collectives", "seq": 1}
    ready = spares.ready("/a", "l02_collectives")
    assert ready.asked and ready.started[1] is questions[-1] and len(started) == 2
    again = spares.ready("/a", "l02_collectives")  # taken already: one started now
    assert not again.asked and len(started) == 3


class _Handed(Ahead):
    """Hands over a process whose answers the test writes (asked to load already)."""

    def __init__(self) -> None:
        self.asked_for: list[tuple[str, str]] = []
        self.answers_r, self.answers_w = os.pipe()
        self.questions_r, questions_w = os.pipe()
        self.questions = os.fdopen(questions_w, "wb")

    def ready(self, directory: str, module: str) -> Ready:
        self.asked_for.append((directory, module))
        return Ready((_Alive(), self.questions, self.answers_r), asked=True)


def test_the_students_process_comes_from_the_interface_and_its_load_is_not_asked_twice():
    handed = _Handed()
    process = StudentProcess("/nowhere", "l02_collectives", spares=handed)
    os.write(handed.answers_w, b'{"seq":0,"ready":true}\n{"seq":1,"functions":["f"]}\n')
    process.start()
    assert handed.asked_for == [("/nowhere", "l02_collectives")]
    assert process.functions == {"f"}  # the answer to the load it was asked when started
    os.set_blocking(handed.questions_r, False)
    try:
        written = os.read(handed.questions_r, 4096)
    except BlockingIOError:
        written = b""
    assert written == b""  # the lesson asked it nothing more
    process.close()
    os.close(handed.answers_w)
    os.close(handed.questions_r)
