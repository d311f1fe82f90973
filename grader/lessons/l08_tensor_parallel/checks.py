"""What each collective carries: the one activation a plan needs, never a weight.

Counting collectives is not enough: XLA merges several ``psum`` calls of one
program into one tuple all-reduce, so a ``psum`` per attention head compiles
to a single all-reduce that carries H/N arrays. These checks look at the
arrays a collective carries — the larger of its operands and its result —
and compare them with the activation the exercise names.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from grader.checks.comms import communication
from grader.evidence import Table
from grader.measure.hlo import Collective, shape_bytes
from grader.results import CheckResult
from grader.spec import Check, Trial


def carried_bytes(c: Collective) -> int:
    """Bytes of the arrays a collective carries: its operands or its result, the larger."""
    return max(c.operand_bytes, shape_bytes(c.shape))


def arrays(c: Collective) -> list[str]:
    """The arrays of a collective's result: several for a merged (tuple) collective."""
    return re.findall(r"\b[a-z][a-z0-9]*\[[0-9,]*\]", c.shape) or [c.shape]


def largest_array(c: Collective) -> int:
    """Bytes of the largest single array a collective carries in or out. A merged
    collective's operands match its results one to one, so the operands are
    split evenly among its arrays."""
    out = max(shape_bytes(a) for a in arrays(c))
    return max(out, c.operand_bytes // len(arrays(c)))


def moving(trial: Trial, kind: str | None = None) -> list[Collective]:
    """The collectives of ``kind`` (any if None) that run and move data."""
    return [
        c
        for c in trial.comms.collectives
        if c.count != 0 and c.moves_data and (kind is None or c.kind == kind)
    ]


@dataclass(frozen=True)
class Carries(Check):
    """Exactly one ``kind`` runs (none when the mesh axis has one device), and
    what it carries is ``size(trial)`` bytes — the activation it exists for."""

    kind: str = "all-reduce"
    size: Callable[[Trial], int] = lambda t: 0
    what: str = "|y|"
    needed: Callable[[Trial], bool] = lambda t: True
    """False where nothing needs to move (one device on the axis)."""
    advice: Callable[[list[Collective], Trial], str | None] | None = None
    """A hint for a wrong list of these collectives, when the spec knows the mistake."""
    name: str = "one collective"

    def __call__(self, trial: Trial) -> CheckResult:
        found = moving(trial, self.kind)
        want = self.size(trial)
        runs = sum(c.count or 0 for c in found) if all(c.count for c in found) else None
        carried = [carried_bytes(c) for c in found]
        expected = f"{want:,} B" if self.needed(trial) else "none"
        evidence = [
            communication(trial),
            Table(
                ["collective", "runs", "arrays", f"carries (expected {expected})"],
                [[c.name, str(c.count), str(len(arrays(c))), f"{carried_bytes(c):,} B"]
                 for c in found] or [[f"no {self.kind}", "0", "0", "0 B"]],
            ),
        ]  # fmt: skip
        if not self.needed(trial):
            if not found:
                return CheckResult(self.name, True, f"no {self.kind}: one device on the axis",
                                   evidence=evidence)  # fmt: skip
            return self._fail(found, trial, evidence, f"{runs} × {self.kind} on a mesh axis of one "
                              "device, where nothing needs to move")  # fmt: skip
        if runs == 1 and carried == [want]:
            return CheckResult(
                self.name, True, f"one {self.kind} carrying {want:,} bytes = {self.what}",
                evidence=evidence,
            )  # fmt: skip
        if runs is None:
            return self._fail(found, trial, evidence,
                              f"a {self.kind} sits in a loop of unknown trip count")  # fmt: skip
        if runs == 0:
            return self._fail(found, trial, evidence, f"no {self.kind}; expected one carrying "
                              f"{self.what} ({want:,} bytes)")  # fmt: skip
        n_arrays = sum(len(arrays(c)) for c in found)
        return self._fail(
            found, trial, evidence,
            f"{runs} × {self.kind} carrying {sum(carried):,} bytes in {n_arrays} array(s); "
            f"expected one {self.kind} carrying {self.what} ({want:,} bytes)",
        )  # fmt: skip

    def _fail(self, found: list[Collective], trial: Trial, evidence: list, message: str):
        hint = self.advice(found, trial) if self.advice else None
        return CheckResult(self.name, False, message, evidence=evidence, hint=hint)


@dataclass(frozen=True)
class WeightsStay(Check):
    """No collective carries an array larger than the activation it exists for
    (``bound(trial)`` bytes); one that does is named after the weight whose
    shape it has, when it has one. Arrays count one by one: a merged psum of
    several activation-sized arrays moves no weight (:class:`Carries` counts it)."""

    bound: Callable[[Trial], int] = lambda t: 0
    what: str = "|y|"
    weights: Callable[[Trial], dict[str, tuple[int, ...]]] = lambda t: {}
    """Weight name → global shape, to name what a large transfer carries."""
    name: str = "weights stay"

    def __call__(self, trial: Trial) -> CheckResult:
        bound = self.bound(trial)
        large = [c for c in moving(trial) if largest_array(c) > bound]
        shapes = self.weights(trial)
        evidence = [
            Table(
                ["collective", "shape", "largest array", f"bound ({self.what})", "weight"],
                [[c.name, c.shape, f"{largest_array(c):,} B", f"{bound:,} B",
                  _weight_named(c, shapes) or "—"] for c in large],
            )
        ] if large else []  # fmt: skip
        if not large:
            return CheckResult(
                self.name, True, f"no collective carries more than {self.what} ({bound:,} bytes)",
                evidence=evidence,
            )  # fmt: skip
        moved = list(dict.fromkeys(w for c in large if (w := _weight_named(c, shapes))))
        moved.sort(key=lambda w: list(shapes).index(w.split(" or ")[0]))  # the weights' order
        c = max(large, key=largest_array)
        what = f"the shape of {' and '.join(moved)}" if moved else f"larger than {self.what}"
        more = f" ({len(large)} such collectives)" if len(large) > 1 else ""
        return CheckResult(
            self.name,
            False,
            f"{c.kind} {c.name} carries {c.shape} ({largest_array(c):,} bytes){more}: {what}; "
            f"at most {self.what} ({bound:,} bytes) needs to move",
            evidence=evidence,
            hint=(
                f"You move {' and '.join(moved)}: in tensor parallelism the weights stay where "
                "they are and only activations travel. Multiply by the block of each weight you "
                "hold (the columns of a column-split weight, the rows of a row-split one) and add "
                "the partial results with one collective."
                if moved
                else "A collective carries an array larger than the activation it is for — "
                "usually the hidden layer: it stays split by columns between the two matmuls, "
                "and only the partial sums of the output need adding."
            ),
        )


def _weight_named(c: Collective, weights: dict[str, tuple[int, ...]]) -> str | None:
    """The weight whose global shape the collective's result has (``'wq or wk'`` when
    several weights share that shape), or None."""
    dims = {
        tuple(int(d) for d in filter(None, m.split(",")))
        for m in re.findall(r"\[([\d,]*)\]", c.shape)
    }
    names = [name for name, shape in weights.items() if tuple(shape) in dims]
    return " or ".join(names) or None
