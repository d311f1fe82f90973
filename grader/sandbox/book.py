"""The questions asked of one student's process and not answered yet: :class:`Book`.

A :class:`~grader.sandbox.isolation.StudentProcess` numbers its questions and
sends them on its :class:`~grader.sandbox.channel.Channel`; one reader thread
reads the answers as they come and files each here under its question; the
threads that asked take theirs (:meth:`Book.take`) in any order. An answer is
one line with the question's ``seq``; an export sends lines ahead of it, one a
program, each with its index as ``part``. The book holds no lock of its own:
its owner changes it under the one condition its waiters wait on.

The standard library only, like the channel.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable


class Book:
    """One process's open questions, what came for them, and (once no more can
    come) why."""

    def __init__(self, pending: Iterable[int] = ()) -> None:
        self.pending: set[int] = set(pending)
        """Questions asked and not answered yet (their lines ahead may have come)."""
        self._answers: dict[int, dict] = {}
        self._parts: dict[tuple[int, int], dict] = {}
        """Lines sent ahead of an answer (an export's programs), by (question, index)."""
        self._moot: set[int] = set()
        """Questions whose answer and lines ahead are dropped as they come (:meth:`forget`)."""
        self.closed: Callable[[], BaseException] | None = None
        """Set once nothing more comes (the process ended, or sent what is no answer):
        makes the error each waiter whose answer never came raises (a new one each)."""

    def ask(self, seq: int) -> None:
        self.pending.add(seq)

    def file(self, answer: object) -> bool:
        """File a line read from the process; False where it answers no question
        asked (it is dropped, and the caller ends the process)."""
        got = answer.get("seq") if isinstance(answer, dict) else None
        if type(got) is not int or got not in self.pending:  # True == 1: not a number here
            return False
        assert isinstance(answer, dict)
        k = answer.get("part")
        ahead = isinstance(k, int) and not isinstance(k, bool)
        if not ahead:
            self.pending.discard(got)
        if got in self._moot:  # forgotten: nobody takes it
            if not ahead:
                self._moot.discard(got)
        elif ahead:
            self._parts[(got, k)] = answer  # more lines follow for this question
        else:
            self._answers[got] = answer
        return True

    def take(self, seq: int, part: int | None = None) -> dict | None:
        """Question ``seq``'s answer, or with ``part`` its ``part``-th line ahead
        (or its answer, where it ended with fewer), once come (taken: gone from
        here); None while it has not come."""
        if part is not None and (seq, part) in self._parts:
            return self._parts.pop((seq, part))
        return self._answers.pop(seq, None)

    def settled(self, seq: int) -> bool:
        """Nothing more is awaited for question ``seq``: answered and taken, or never asked."""
        return seq not in self.pending and seq not in self._answers

    def forget(self, seq: int) -> None:
        """Nobody takes question ``seq``'s answer or its lines ahead: dropped, now and as
        they come."""
        self._answers.pop(seq, None)
        for key in [key for key in self._parts if key[0] == seq]:
            del self._parts[key]
        if seq in self.pending:
            self._moot.add(seq)
