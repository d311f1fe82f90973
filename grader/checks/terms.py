"""A cost formula as named terms, and the one change that turns it into the student's
value (issue 45 §3: cost models).

A cost model's answer is a sum or a maximum of terms (latency and bandwidth, compute
and memory, the caches read and the weights). A wrong answer from a mistake nobody
catalogued is, often, the formula with **one** thing changed: a term multiplied by one
of the example's own sizes (a missing parenthesis makes ``(N−1)/(2N)`` into
``(N−1)/2·N``, N² times too large), a term left out, a term alone, the maximum of two
terms where they add up or their sum where the slower one sets the time.

:func:`explain` tries each such change of the formula's tree and says every one that
gives the student's value **exactly** (to the check's own tolerance) while the right
formula does not: one sentence that cites the term, its value and the factor, never a
"close to". The tree is the grader's own: :func:`explain` says nothing where it does not
give the expected answer itself (``tests/test_terms.py`` holds every lesson's trees to
their answers, on fixed and drawn examples).

    Sum(Term("latency, (N−1)·α", 3e-6), Term("bandwidth, (N−1)/(2N)·V/W", 8.7e-7))
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from grader.checks.relate import Quantity, also_equal


@dataclass(frozen=True)
class Term:
    """One named term of a formula and its value on this example."""

    name: str
    """How the student's formula names it: ``"bandwidth, (N−1)/(2N)·V/W"``."""
    value: float
    unit: str = "s"


@dataclass(frozen=True)
class Sum:
    """Terms that add up (they happen one after the other)."""

    parts: tuple[Expr, ...]

    def __init__(self, *parts: Expr) -> None:
        object.__setattr__(self, "parts", tuple(parts))


@dataclass(frozen=True)
class Max:
    """Terms that overlap: the slowest sets the time (a roofline)."""

    parts: tuple[Expr, ...]

    def __init__(self, *parts: Expr) -> None:
        object.__setattr__(self, "parts", tuple(parts))


Expr = Term | Sum | Max


def value(e: Expr) -> float:
    if isinstance(e, Term):
        return float(e.value)
    values = [value(p) for p in e.parts]
    return sum(values) if isinstance(e, Sum) else max(values)


def _terms(e: Expr) -> Iterator[Term]:
    if isinstance(e, Term):
        yield e
    else:
        for p in e.parts:
            yield from _terms(p)


def _names(e: Expr) -> str:
    names = [t.name.split(",")[0] for t in _terms(e)]
    return " and ".join(names) if len(names) == 2 else ", ".join(names)


def _replace(e: Expr, old: Expr, new: Expr | None) -> Expr | None:
    """``e`` with node ``old`` (by identity) replaced by ``new`` (None: left out)."""
    if e is old:
        return new
    if isinstance(e, Term):
        return e
    parts = [q for q in (_replace(p, old, new) for p in e.parts) if q is not None]
    if not parts:
        return None
    return type(e)(*parts)


def _nodes(e: Expr) -> Iterator[Expr]:
    yield e
    if not isinstance(e, Term):
        for p in e.parts:
            yield from _nodes(p)


def _fmt(x: float) -> str:
    return f"{x:.4g}"


SWAPS = (
    (Max, Sum, "with its {} terms added, where the formula takes the larger of them (they "
     "overlap: the slower sets the time)"),
    (Sum, Max, "with only the larger of its {} terms, where the formula adds them (one "
     "follows the other: both take their time)"),
)  # fmt: skip
"""(node kind, what it is taken as, the words): the two slips between a sum and a max."""


def _key(name: str) -> str:
    """A quantity's name without its numbers (``n = #``): the same quantity on another
    example of the exercise."""
    return re.sub(r"\d+(\.\d+)?(e[+-]?\d+)?", "#", name)


@dataclass(frozen=True)
class Change:
    """One change of a formula: in words, its value, and what it is on any example."""

    said: str
    value: float
    scaled: bool
    """A term multiplied by a quantity."""
    key: tuple[str, ...]
    """The change without this example's numbers: (kind, the terms' heads) — and, for a
    term scaled, each name (:func:`_key`) of the quantities equal to its factor here."""
    names: tuple[str, ...] = ()
    """For a term scaled: the names of those quantities, as said."""


def changes(e: Expr, known: Sequence[Quantity]) -> Iterator[Change]:
    """Every single change of the battery: a maximum taken as a sum, a sum taken as a
    maximum (first: a sum's larger term alone is also the smaller left out, and the swap
    is the likelier slip), a term times each quantity of the example, a term left out, a
    term alone."""
    for node in _nodes(e):
        if any(t.unit != "s" for t in _terms(node)):
            continue  # (counts add: only times overlap, so only they have a sum-max slip)
        for kind, other, words in SWAPS:
            if isinstance(node, kind) and len(node.parts) > 1:
                changed = _replace(e, node, other(*node.parts))
                if changed is not None:
                    yield Change(words.format(_names(node)), value(changed), False,
                                 (kind.__name__, _names(node)))  # fmt: skip
    terms = list(_terms(e))
    factors: dict[float, Quantity] = {}
    plain = sorted(known, key=lambda q: q.name not in ("2", "½"))  # a stray 2 leads
    for q in plain:  # one name a value, every equal quantity named in it
        if q.value > 0 and q.value != 1.0 and q.value not in factors:
            factors[q.value] = q
    for t in terms:
        head, _, formula = t.name.partition(", ")
        shown = f"{head} term ({formula + ' = ' if formula else ''}{_fmt(t.value)} {t.unit})"
        for q in factors.values():
            changed = _replace(e, t, Term(t.name, t.value * q.value, t.unit))
            if changed is not None:
                equal = [q.name] + [k.name for k in known if k.name != q.name
                                    and abs(k.value - q.value) <= 1e-9 * q.value]  # fmt: skip
                equal = list(dict.fromkeys(equal))
                yield Change(f"with its {shown} multiplied by {also_equal(q, known).name}",
                             value(changed), True, ("times", head, *map(_key, equal)),
                             tuple(equal))  # fmt: skip
        if len(terms) > 1:
            dropped = _replace(e, t, None)
            if dropped is not None:
                yield Change(f"without its {shown}", value(dropped), False, ("without", head))
            if len(terms) > 2:  # with two, one alone is the other left out
                yield Change(f"reduced to its {shown} alone", t.value, False, ("alone", head))


@dataclass(frozen=True)
class Probe:
    """The student's answer on another example of the exercise, and the formula there: a
    change said must give that answer too (two changes equal on one example part on
    another)."""

    got: Any
    formula: Expr | None
    known: Sequence[Quantity]


def _holds(
    change: Change, probes: Sequence[Probe], close: Callable[[Any, Any], bool]
) -> Change | None:
    """``change`` as the probes leave it: None where on one of them the same change gives
    another value than the student's there; a term scaled keeps only the names of the
    quantities that give the student's value on every probe (``rows = 2`` and ``2`` part
    where rows is 3). A probe that cannot tell (no formula, no number, the change not
    found there) leaves it as it is."""
    names = list(change.names)
    for p in probes:
        if p.formula is None or not isinstance(p.got, (int, float)) or isinstance(p.got, bool):
            continue
        there = {c.key: c for c in changes(p.formula, p.known) if not c.scaled}
        if not change.scaled:
            if change.key in there and not close(p.got, there[change.key].value):
                return None
            continue
        head = change.key[1]
        term = next((t for t in _terms(p.formula) if t.name.partition(", ")[0] == head), None)
        if term is None:
            continue
        kept = []
        for name in names:
            q = next((k for k in p.known if _key(k.name) == _key(name)), None)
            if q is None:
                kept.append(name)  # not a quantity there: it cannot tell
                continue
            changed = _replace(p.formula, term, Term(term.name, term.value * q.value, term.unit))
            if changed is not None and close(p.got, value(changed)):
                kept.append(name)
        names = kept
        if not names:
            return None
    if change.scaled and tuple(names) != change.names:
        lead, *rest = names
        factor = lead + (f" (or {', or '.join(rest[:3])}: equal on this example)" if rest else "")
        said = change.said[: change.said.rindex(" multiplied by ")] + f" multiplied by {factor}"
        return Change(said, change.value, True, change.key, tuple(names))
    return change


def explain(
    got: float,
    want: float,
    formula: Expr | None,
    known: Sequence[Quantity],
    close: Callable[[Any, Any], bool],
    probes: Sequence[Probe] = (),
) -> str | None:
    """The sentence naming every single change of ``formula`` that gives ``got`` exactly
    and not ``want`` — and, on each of ``probes`` (the student's answers on the
    exercise's other fixed examples), the answer there too; None where none does, where
    the formula does not give ``want`` itself, or where ``got`` is not a finite number."""
    if formula is None or not isinstance(got, (int, float)) or isinstance(got, bool):
        return None
    if got != got or got in (float("inf"), float("-inf")) or not close(value(formula), want):
        return None
    holds: dict[str, bool] = {}  # what changed → a term scaled
    for change in changes(formula, known):
        if close(got, change.value) and not close(want, change.value):
            kept = _holds(change, probes, close)
            if kept is not None:
                holds.setdefault(kept.said, kept.scaled)
    if not all(holds.values()):  # a term scaled till it no longer counts is one left out
        holds = {said: scaled for said, scaled in holds.items() if not scaled}
    if not holds:
        return None
    first, *others = holds
    more = ""
    if others:
        more = (
            " (or " + "; or ".join(others[:2]) + (", …" if len(others) > 2 else "") + ": "
            "each gives your value on this example)"
        )
    return f"Your value {_fmt(got)} is exactly the formula {first}{more}."


def squares(known: Sequence[Quantity]) -> list[Quantity]:
    """``known`` and the square of each whole quantity above 1 (and its reciprocal): a
    missing parenthesis, ``a / 2 * n`` for ``a / (2 * n)``, is off by n²."""
    out = list(known)
    for q in known:
        if (
            q.value > 1
            and float(q.value).is_integer()
            and q.value <= 1 << 16
            and not q.name.startswith(("√", "1/", "the itemsize"))
            and q.name != "2"
        ):
            square = f"the square of {q.name} ({q.value**2:g})"
            out.append(Quantity(q.value**2, square))
            out.append(Quantity(1 / q.value**2, f"1/{square}"))
    return out
