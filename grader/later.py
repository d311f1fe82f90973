"""A lesson's grader side (:mod:`grader.expected`), imported when first used.

A spec is imported by the student's process too (to run the exercise there), and
:mod:`grader.expected` is hidden from that process: so a spec never imports it at
import time, but names it here, and its functions are imported when a check (or the
``run`` of an exercise that hands over no program) first calls one, in the worker.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from types import ModuleType
from typing import Any

PACKAGE = "grader.expected"


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
            from grader.faults import GraderFault

            raise GraderFault(
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
        return later

    def __repr__(self) -> str:
        return f"expected({self._name.removeprefix(PACKAGE + '.')!r})"


def expected(name: str) -> Expected:
    """The grader's side ``grader.expected.<name>`` (``"l14_planning.cost"``), imported
    when first used."""
    return Expected(name)
