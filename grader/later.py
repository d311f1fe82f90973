"""The grader's side (:mod:`grader.expected`), reached only where the worker runs.

A spec is imported by the student's process too (to run the exercise there), and
:mod:`grader.expected` is hidden from that process: so a spec never imports it at
import time. It names a module there (:func:`expected`), whose functions are imported
when a check (or the ``run`` of an exercise that hands over no program) first calls one,
in the worker; a ``run`` that hands over programs defers its expected value
(:func:`later`), which the worker computes when a check first reads it; and the rare
program input derived from a reference has a same-shaped stand-in where the reference is
hidden (:func:`in_worker`). :mod:`grader.expected`'s docstring says what lives there.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from types import ModuleType
from typing import Any

from grader.faults import GraderFault

PACKAGE = "grader.expected"


class Hidden(GraderFault):
    """The grader's side could not be imported because it is not there: this is the
    student's process (or an installation built without it). A grader fault wherever
    a reference is needed; :func:`in_worker` turns it into a stand-in."""


class Expected:
    """The module ``grader.expected.<name>``, imported on first use: ``F.cost(...)``
    imports it and calls; ``F.fn("cost")`` is a function that does so when called
    (for a field of a spec built at import time)."""

    def __init__(self, name: str) -> None:
        self._name = f"{PACKAGE}.{name}"

    def _module(self) -> ModuleType:
        try:
            return importlib.import_module(self._name)
        except ImportError as exc:  # hidden (the student's process), or broken
            missing = isinstance(exc, ModuleNotFoundError) and str(exc.name).startswith(PACKAGE)
            raise (Hidden if missing else GraderFault)(
                f"{self._name} is the grader's side and could not be imported ({exc}): "
                "hidden from the student's process, it must be used only where the worker "
                "runs (a check, or the run of an exercise that hands over no program)"
            ) from exc

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("__"):
            raise AttributeError(attr)
        return getattr(self._module(), attr)

    def fn(self, attr: str) -> Callable[..., Any]:
        """``attr`` of the module, looked up when the returned function is called."""

        def later(*args: Any, **kwargs: Any) -> Any:
            return getattr(self._module(), attr)(*args, **kwargs)

        later.__name__ = later.__qualname__ = attr
        later.target = lambda: getattr(self._module(), attr)  # type: ignore[attr-defined]
        return later

    def __repr__(self) -> str:
        return f"expected({self._name.removeprefix(PACKAGE + '.')!r})"


def expected(name: str) -> Expected:
    """The grader's side ``grader.expected.<name>`` (``"l14_planning.cost"``), imported
    when first used."""
    return Expected(name)


class Later:
    """A value the grading worker computes when a check first reads it: a spec's
    ``run`` sets ``trial.expected = later(reference, *args)`` (or puts one in
    ``trial.extra``), so that the float64 reference (:mod:`grader.expected`) is
    computed in the worker only. ``run`` also runs in the student's process
    (:attr:`grader.spec.ExerciseSpec.run`), where the reference is hidden and its
    trial is thrown away: there nothing reads it, so nothing is computed."""

    def __init__(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> None:
        self.call: tuple[Callable[..., Any], tuple, dict] = (fn, args, kwargs)
        """(reference, args, kwargs): kept after the value is computed, so a failing check
        can ask the reference what it gives on changed arguments
        (:mod:`grader.checks.variants`)."""
        self._done = False
        self._value: Any = None

    def value(self) -> Any:
        """The value, computed on the first call."""
        if not self._done:
            fn, args, kwargs = self.call
            self._value, self._done = fn(*args, **kwargs), True
        return self._value

    def __repr__(self) -> str:
        if self._done:
            return f"later(= {self._value!r})"
        return f"later({getattr(self.call[0], '__name__', self.call[0])!r}, …)"


def later(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Later:
    """``fn(*args, **kwargs)``, computed when first read (:class:`Later`)."""
    return Later(fn, *args, **kwargs)


def resolved(value: Any) -> Any:
    """``value``, or what it stands for when it is a :class:`Later`."""
    return value.value() if isinstance(value, Later) else value


def in_worker(fn: Callable[..., Any], *args: Any, otherwise: Callable[[], Any]) -> Any:
    """``fn(*args)`` where the grader's side can be imported (the worker, the tests),
    else ``otherwise()``: for the rare *input* of a program that the grader derives from
    a reference (lesson 16's decode step starts from the prompt's cache and is fed the
    greedy tokens). The spec's ``run`` also runs in the student's process, where the
    references are hidden and the data are decoys; what it hands over there is traced,
    never run, so a stand-in of the same shape and dtype (``otherwise``) traces the same
    program. Never for a value a verdict rests on: that is :func:`later`'s."""
    try:
        return fn(*args)
    except Hidden:
        return otherwise()
