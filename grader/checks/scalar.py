"""Exercises whose answer is a value: one check, and a builder for specs.

:class:`Agrees` holds a pure function's answer against the grader's own
(``trial.expected``): exactly, or within :data:`REL_TOL` for floats, after a
``normalize`` step that refuses answers of the wrong type. An expected
:data:`RAISES` demands a ValueError. Lessons 1 and 3 use it.

:class:`Scalar` declares one such exercise as formulas and data — how to
draw examples, the explicit ones, the right answer, how to show the call
and the formula, and the values known mistakes give — and builds its
:class:`~grader.spec.ExerciseSpec`. Every function of an example takes the
example's fields as keywords: ``answer=lambda m, k, n: 2 * m * k * n``.
"""

from __future__ import annotations

import inspect
import math
import operator
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from grader.checks import relate, terms, variants
from grader.evidence import Evidence
from grader.results import CheckResult
from grader.runtime import GraderFault, call_pure
from grader.spec import FULL, Check, Context, Example, ExerciseSpec, Trial

RAISES = "ValueError"
"""``trial.expected`` for an example on which the function must raise ValueError."""
REL_TOL = 1e-9
"""Floats agree within this relative tolerance."""

Suspects = Callable[[Example], list[tuple[Any, str]]]

PROBES = "probes"
AGREED = "agreed"
"""The other fixed examples the student's answer got right (``trial.extra``): a change of
the formula that gets one of them wrong is not the student's (:meth:`Suspicion._changed`)."""
"""``trial.extra`` key: the student's answers on the exercise's other fixed examples,
taken where its answer on this one is wrong — a cause named must give those too."""
PROBES_AT_MOST = 8


def close(a: Any, b: Any) -> bool:
    """Numbers within :data:`REL_TOL`; bools only equal to themselves."""
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    return math.isclose(a, b, rel_tol=REL_TOL, abs_tol=0.0)


def fmt(x: Any, other: Any = None) -> str:
    """A value as shown in messages: 6 significant digits, more when needed to
    tell it from ``other``."""
    if isinstance(x, float):
        text = f"{x:.6g}"
        if isinstance(other, float) and text == f"{other:.6g}":
            text = repr(x)
        return text
    return repr(x)


def as_kind(kind: type) -> Callable[[Any, Trial], Any]:
    """Normalizer to ``kind``: ``int`` (floats refused, even whole ones), ``float``
    (ints accepted) or ``bool``; numpy scalars are accepted as their Python kind."""

    def normalize(out: Any, trial: Trial) -> Any:
        if kind is bool:
            if isinstance(out, (bool, np.bool_)):
                return bool(out)
            raise TypeError(f"returned {out!r}; expected a bool (True or False)")
        if isinstance(out, (bool, np.bool_)):
            raise TypeError(f"returned {out!r}, a bool; expected a number")
        if isinstance(out, (int, np.integer)):
            return int(out) if kind is int else float(out)
        if isinstance(out, (float, np.floating)):
            if kind is float:
                return float(out)
            raise TypeError(
                f"returned {out!r}, a float; expected an int (whole floats are refused too)"
            )
        raise TypeError(f"returned {type(out).__name__} {out!r}; expected {kind.__name__}")

    return normalize


def number_type_hint(got: Any, want: Any) -> str | None:
    """Why a number of the wrong type was refused."""
    if isinstance(got, (float, np.floating)) and isinstance(want, int):
        right = " The value itself is right." if math.isclose(got, want, rel_tol=REL_TOL) else ""
        return (
            "Counts of FLOPs and bytes are whole numbers: keep to integer arithmetic "
            "(multiply first, then divide with //), since floats lose exactness above 2**53."
            + right
        )
    if got is None:
        return "The function returns None: did you forget the return statement?"
    return None


def _differs(got: Any, want: Any, trial: Trial) -> tuple[str, list[Evidence]]:
    call, formula = trial.extra["call"], trial.extra["formula"]
    sep = ":" if isinstance(want, bool) else " ="
    message = f"{call} returned {fmt(got, want)}; expected {fmt(want, got)}{sep} {formula}"
    return message, []


@dataclass(frozen=True)
class Agrees(Check):
    """The answer equals the grader's (``trial.expected``).

    ``normalize(output, trial)`` turns the answer into the form compared, or
    raises TypeError/ValueError with a message (``type_hint(output, expected)``
    then says why); ``same`` compares. A ``trial.expected`` of :data:`RAISES`
    demands a ValueError. ``trial.extra["measured"]``, when present, is a
    second truth the answer must also equal: bytes counted in the compiled
    program. ``trial.extra["call"]``, when present, starts the messages.
    """

    normalize: Callable[[Any, Trial], Any] = lambda out, t: out
    same: Callable[[Any, Any], bool] = operator.eq
    diagnose: Callable[[Any, Any, Trial], str | None] = lambda got, want, t: None
    """The likely mistake behind a wrong answer (got, expected, trial)."""
    differs: Callable[[Any, Any, Trial], tuple[str, list[Evidence]]] = _differs
    """Message and evidence (:mod:`grader.evidence`) for a wrong answer."""
    type_hint: Callable[[Any, Any], str | None] = lambda got, want: None
    agreed: str = "agrees with the grader's formula"
    unraised: Callable[[Trial], str] = lambda t: ""
    """Why a ValueError was due, appended to "returned X"."""
    raise_hints: tuple[str, str] = (
        "Check the name against the known ones first and raise ValueError for anything "
        "else: a silent default hides typos.",
    ) * 2
    """Hints when a ValueError is due: (another exception was raised, a value was returned)."""
    name: str = "values"

    def __call__(self, trial: Trial) -> CheckResult:
        got, want = trial.output, trial.expected
        call = trial.extra.get("call")
        lead = f"{call} " if call else ""
        if want == RAISES:
            if isinstance(got, ValueError):
                return CheckResult(self.name, True, self.agreed)
            if isinstance(got, BaseException):
                return CheckResult(
                    self.name, False,
                    f"{lead}raised {type(got).__name__}: {got}; expected a ValueError",
                    hint=self.raise_hints[0],
                )  # fmt: skip
            return CheckResult(
                self.name, False,
                f"{lead}returned {got!r}{self.unraised(trial)}; expected a ValueError",
                hint=self.raise_hints[1],
            )  # fmt: skip
        try:
            norm = self.normalize(got, trial)
        except (TypeError, ValueError) as exc:
            return CheckResult(self.name, False, f"{lead}{exc}", hint=self.type_hint(got, want))
        measured = trial.extra.get("measured")
        right = self.same(norm, want)
        if right and (measured is None or norm == measured):
            return CheckResult(
                self.name, True,
                self.agreed
                + (" and with the bytes the compiled lesson-4 reference sends" if measured is not None else ""),
            )  # fmt: skip
        if measured is None:
            message, evidence = self.differs(norm, want, trial)
            return CheckResult(
                self.name, False, message, evidence=evidence, hint=self.diagnose(norm, want, trial)
            )
        if norm == want:  # the formula and the compiler disagree: not the student's fault
            return CheckResult(
                self.name, False,
                f"{call}: the grader's formula gives {want} bytes but the compiled reference "
                f"moves {measured}: a grader bug, please report it",
            )  # fmt: skip
        return CheckResult(
            self.name, False,
            f"{call}: you predict {norm} bytes; the compiled reference moves {measured} "
            f"bytes per device (formula: {trial.extra['formula']})",
            hint=self.diagnose(norm, want, trial),
        )  # fmt: skip


@dataclass(frozen=True)
class Suspicion:
    """Names the mistake behind a wrong answer: the ``suspects`` whose value
    it equals, unless an earlier example the student passed rules one out.

    ``before(example)`` gives those earlier examples and ``reference`` their
    right answers; several matches are all named; ``fallback`` is the hint
    when none matches.
    """

    suspects: Suspects
    fallback: Callable[[Example], str | None] = lambda ex: None
    reference: Callable[[Example], Any] | None = None
    before: Callable[[Example], list[Example]] = lambda ex: []
    terms: Callable[[Example], terms.Expr | None] = lambda ex: None
    """The right answer as named terms (:mod:`grader.checks.terms`): where no suspect
    matches, the one change of it that gives the answer is said."""
    quantities: Callable[[Example], dict[str, float]] = lambda ex: {}
    """Quantities of the lesson's own a term may be off by, beside the example's fields."""
    answer: Callable[..., Any] | None = None
    """The right answer of the example's fields: where nothing above names a float answer,
    the first change of those fields that gives it is said (:mod:`grader.checks.variants`:
    a size one more, two bandwidths swapped)."""
    call: Callable[..., str] | None = None
    """The call as the student writes it, for the fields' names there."""
    fixed: Callable[[], list[Example]] = lambda: []
    """The exercise's fixed examples: a text field's other values there (another kind of
    collective, another chip) are changes of the fields too."""

    def _call(self, ex: Example) -> str | None:
        try:
            return None if self.call is None else self.call(**ex)
        except Exception:  # a call that cannot be shown: the example's own names
            return None

    def __call__(self, got: Any, want: Any, trial: Trial) -> str | None:
        ex = trial.example
        ruled_out = set()
        if self.reference is not None:
            for earlier in self.before(ex):
                right = self.reference(earlier)
                ruled_out |= {h for v, h in self.suspects(earlier) if not close(v, right)}
        probes = [(other, theirs) for other, theirs in trial.extra.get(PROBES) or ()
                  if _number(theirs)]  # fmt: skip
        hints: list[str] = []
        for value, hint in self.suspects(ex):
            if (close(value, got) and not close(value, want) and hint not in ruled_out | set(hints)
                    and all(self._gives(hint, other, theirs) for other, theirs in probes)):  # fmt: skip
                hints.append(hint)
        if len(hints) > 1:
            return "One of these: " + " Or: ".join(hints)
        if hints:
            return hints[0]
        known = terms.squares(relate.quantities(ex, extra=self.quantities(ex)))
        there = []
        for other, theirs in probes:
            try:
                there.append(terms.Probe(theirs, self.terms(other), terms.squares(
                    relate.quantities(other, extra=self.quantities(other)))))  # fmt: skip
            except Exception:  # a formula that cannot be read there: it cannot tell
                continue
        explained = terms.explain(got, want, self.terms(ex), known, close, there)
        if explained is None:
            agreed = [other for other in trial.extra.get(AGREED) or ()]
            explained = self._changed(got, want, ex, probes, agreed)
        if explained is None and not self._fraction_right(trial.extra.get(AGREED) or (), ex):
            explained = rounded(got, want, self._probed(probes))
        return " ".join(x for x in (explained, self.fallback(ex)) if x) or None

    def _fraction_right(self, agreed: Any, ex: Example) -> bool:
        """The student got right an example of ``ex``'s branch (its text and flag fields
        the same) whose answer is not a whole number: it rounds nothing (a rounding would
        have got that one wrong too)."""
        if self.answer is None:
            return False
        for other in agreed:
            if any(other.get(k) != v for k, v in ex.items() if isinstance(v, (str, bool))):
                continue  # another branch: a rounding there may be absent
            try:
                right = self.answer(**other)
            except Exception:
                continue
            if isinstance(right, float) and math.isfinite(right) and right != round(right):
                return True
        return False

    def _probed(self, probes: list[tuple[Example, Any]]) -> list[tuple[Any, Any]] | None:
        """(the student's answer, the right one) on each probe; None where a right one
        cannot be had (no ``answer``, or it raises): then nothing is said that the probes
        would have to bear out."""
        if self.answer is None:
            return None if probes else []
        try:
            return [(theirs, self.answer(**other)) for other, theirs in probes]
        except Exception:  # the grader's own formula: never the student's fault
            return None

    def _other_text(self, ex: Example, matches: Callable[[Any], bool],
                    probes: list[tuple[Example, Any]]) -> str | None:  # fmt: skip
        """``with kind = 'all_reduce' in place of 'reduce_scatter'`` where the right answer
        of ``ex`` with that text field's other value (one the fixed examples hold) is the
        student's, and on each probe with the same value of the field, there too."""
        for key, value in _texts(ex, self.fixed()):
            try:
                if not matches(self.answer(**{**ex, key: value})):
                    continue
                same = [(other, theirs) for other, theirs in probes if other.get(key) == ex[key]]
                if any(not close(self.answer(**{**other, key: value}), theirs)
                       for other, theirs in same):  # fmt: skip
                    continue
            except Exception:  # a value the formula cannot take here: not this one
                continue
            return f"with {key} = {value!r} in place of {ex[key]!r}"
        return None

    def _gives(self, hint: str, other: Example, theirs: Any) -> bool:
        """The suspect ``hint`` gives ``theirs``, the student's wrong answer on ``other``,
        there too — or is not among that example's suspects by these words (another case,
        other numbers in its words): it cannot tell."""
        try:
            value = next((v for v, h in self.suspects(other) if h == hint), None)
        except Exception:  # suspects that cannot be read there: they cannot tell
            return True
        return value is None or close(value, theirs)

    def _changed(self, got: Any, want: Any, ex: Example,
                 probes: list[tuple[Example, Any]] = (),
                 agreed: list[Example] = ()) -> str | None:  # fmt: skip
        """The first change of the example's fields (or of the answer's formula) whose
        right answer is ``got`` (a float answer only: an int or a bool is too often some
        other example's answer too), where the same change gives the student's answer
        on each of ``probes`` too (:func:`_moved`: a field one more there too), and the
        right answer on each example of ``agreed``, the student's there (a term counted
        twice that doubles the float32 example the student got right is not the slip)."""
        if self.answer is None or not isinstance(want, float) or isinstance(got, bool):
            return None

        def matches(value: Any) -> bool:
            return (
                isinstance(value, (int, float))
                and not isinstance(value, bool)
                and close(value, got)
            )

        rename = _as_called(ex, trial_call) if (trial_call := self._call(ex)) else {}
        named = self._other_text(ex, matches, probes)
        if named is not None:
            return f"Your answer {fmt(got)} is exactly what the formula gives {named}."
        change = variants.first_change_of((self.answer, (), dict(ex)), matches, rename=rename)
        if change is None:
            return None
        fn, changed = change.call[0], _fields(change.call)
        for other, theirs in probes:
            moved = _moved(ex, changed, other)
            try:
                value = None if moved is None else fn(**moved)
            except Exception:  # the change cannot be made there: it cannot tell
                value = None
            if value is not None and not close(value, theirs):
                return None
        for other in agreed:
            if any(other.get(k) != v for k, v in ex.items() if isinstance(v, (str, bool))):
                continue  # another branch of the formula (another kind, a flag the other way)
            moved = _moved(ex, changed, other)
            try:
                value = None if moved is None else fn(**moved)
                right = self.answer(**other)
            except Exception:  # the change cannot be made there: it cannot tell
                continue
            if _number(value) and _number(right) and not close(value, right):
                return None
        return f"Your answer {fmt(got)} is exactly what the formula gives {change.said}."


def _texts(ex: Example, fixed: list[Example]) -> list[tuple[str, str]]:
    """(field, value) for each other value a text field of ``ex`` takes in ``fixed``."""
    out = []
    for key, value in ex.items():
        if isinstance(value, str):
            seen = dict.fromkeys(e[key] for e in fixed if isinstance(e.get(key), str))
            out += [(key, other) for other in seen if other != value]
    return out


def _same(theirs: Any, right: Any) -> bool:
    """The student's number is the right one (to :func:`close`)."""
    try:
        return _number(right) and close(theirs, right)
    except Exception:
        return False


def _number(x: Any) -> bool:
    """A number a probe can hold (numpy's scalars too), not a bool."""
    return isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, bool)


def _fields(call: tuple[Callable[..., Any], tuple, dict]) -> dict[str, Any]:
    """A changed call's arguments by name (positional ones bound to the function's
    parameters, a ``**`` parameter's own keys): the example as the change left it."""
    fn, args, kwargs = call
    try:  # a hidden reference's wrapper takes *args: its target names them
        bound = inspect.signature(variants._target(fn)).bind(*args, **kwargs)
    except (TypeError, ValueError):
        return dict(kwargs)
    out: dict[str, Any] = {}
    for name, value in bound.arguments.items():
        kind = bound.signature.parameters[name].kind
        out.update(value) if kind is inspect.Parameter.VAR_KEYWORD else out.__setitem__(name, value)
    return out


def _moved(ex: Example, changed: dict[str, Any], other: Example) -> Example | None:
    """``other`` with the change that made ``changed`` of ``ex``: two fields swapped, a
    number one more or one less, or scaled; None where a change is none of these (it
    cannot be made on another example)."""
    keys = [k for k in ex if k in changed and changed[k] != ex[k]]
    out = dict(other)
    if len(keys) == 2 and all(changed[a] == ex[b] for a, b in (keys, keys[::-1])):
        a, b = keys
        out[a], out[b] = other[b], other[a]
        return out
    for k in keys:
        old, new = ex[k], changed[k]
        if not (_number(old) and _number(new) and _number(other.get(k))):
            return None
        if abs(new - old) == 1:
            out[k] = other[k] + (new - old)
        elif old:
            scaled = other[k] * (new / old)
            out[k] = (
                int(scaled) if isinstance(other[k], int) and float(scaled).is_integer() else scaled
            )
        else:
            return None
    return out


def _as_called(ex: Example, call: str) -> dict[str, str]:
    """Example fields the call shows under another name (``tokens`` as ``context=8192``):
    where exactly one keyword of the call shows the field's value and none its name."""
    shown = dict(re.findall(r"(\w+)=([^,()]+)", call))
    out = {}
    for key, value in ex.items():
        if key in shown or isinstance(value, bool) or not isinstance(value, (int, float)):
            continue
        names = [name for name, text in shown.items() if text.strip() in (str(value), repr(value))]
        if len(names) == 1:
            out[key] = names[0]
    return out


def _no_suspects(**ex: Any) -> list[tuple[Any, str]]:
    return []


def _no_fallback(**ex: Any) -> str | None:
    return None


def answers_on(fn: Callable[..., Any], examples: list[Example],
               args: Callable[[Example], tuple], right: Callable[[Example, tuple], Any],
               keep: Callable[[Any, Any], Any]) -> list[tuple[Example, Any, Any]]:  # fmt: skip
    """``(example, the student's answer, the right one)`` on each of ``examples`` (the
    other fixed examples of a grade) where ``keep(answer, right)`` is not None (it returns
    the answer as it is compared; a right answer, or a malformed one, left out where it
    says so): report material that tells apart mistakes one example cannot, never a
    verdict. An example that must raise (``right`` is :data:`RAISES`) and a raise of the
    student's are left out: a mistake in one branch leaves the others right, and a raise
    there tells nothing here."""
    out = []
    for other in examples:
        try:
            a = args(other)
            want = right(other, a)
            if isinstance(want, str) and want == RAISES:
                continue
            theirs = fn(*a)
            if isinstance(theirs, np.generic):
                theirs = theirs.item()
            theirs = keep(theirs, want)
            if theirs is not None:
                out.append((other, theirs, want))
        except Exception:  # report material: a raise there tells nothing here
            continue
    return out


@dataclass(frozen=True)
class Scalar:
    """One exercise whose answer is a number or a bool, held against a formula.

    Every callable below takes the example's fields as keywords.
    """

    name: str
    """The function's name in the exercise module."""
    kind: type
    """``int`` (exact), ``float`` (within :data:`REL_TOL`) or ``bool``."""
    draw: Callable[[Context], Any]
    """Context → hypothesis strategy of examples (dicts)."""
    explicit: tuple[Example, ...] | Callable[[Context], list[Example]]
    """Examples always run first. A tuple lets a diagnosis rule out the mistakes
    that earlier ones, which the student passed, would have caught."""
    answer: Callable[..., Any]
    """The right answer, or :data:`RAISES`."""
    call: Callable[..., str]
    """The call as the student would write it, for messages."""
    formula: Callable[..., str]
    """How the answer is computed, with this example's numbers."""
    args: Callable[..., tuple]
    """The student function's arguments."""
    suspects: Callable[..., list[tuple[Any, str]]] = _no_suspects
    """(value, diagnosis) of each known mistake on this example."""
    fallback: Callable[..., str | None] = _no_fallback
    """The hint when no suspect matches."""
    terms: Callable[..., Any] | None = None
    """The right answer as named terms (:mod:`grader.checks.terms`, the same value as
    ``answer``): a wrong answer that is the formula with one term changed is told which."""
    quantities: Callable[..., dict[str, float]] | None = None
    """The lesson's own quantities a term may be off by (``{"N = hosts·local (16)": 16}``)."""
    measure: Callable[..., int] | None = None
    """A second truth measured by the grader (bytes in a compiled program): called
    with the example's fields and ``simulated`` (the runtime's: the devices its
    program is compiled for)."""
    max_examples: int = 20
    """Drawn examples on top of the explicit ones."""
    purpose: Callable[[Example], str | None] | None = None
    """What a fixed example is for (:attr:`grader.spec.ExerciseSpec.purpose`)."""

    def want(self, ex: Example) -> Any:
        return self.answer(**ex)

    def suspected(self, ex: Example) -> list[tuple[Any, str]]:
        return self.suspects(**ex)

    def examples(self, ctx: Context | None) -> list[Example]:
        return list(self.explicit) if isinstance(self.explicit, tuple) else self.explicit(ctx)

    def _before(self, ex: Example) -> list[Example]:
        """The explicit examples graded before ``ex`` (all of them, for a drawn one)."""
        cases = self.examples(None)
        return cases[: cases.index(ex)] if ex in cases else cases

    def check(self) -> Agrees:
        fixed = isinstance(self.explicit, tuple)
        return Agrees(
            normalize=as_kind(self.kind),
            same=operator.eq if self.kind is int else close,
            type_hint=number_type_hint if self.kind is int else _none_hint,
            diagnose=Suspicion(
                self.suspected,
                lambda ex: self.fallback(**ex),
                reference=self.want if fixed else None,
                before=self._before,
                answer=self.answer,
                call=self.call,
                fixed=lambda: self.examples(FULL),
                **self._by_terms(),
            ),
        )

    def _by_terms(self) -> dict[str, Any]:
        """:class:`Suspicion`'s ``terms`` and ``quantities``, where this exercise has them."""
        out: dict[str, Any] = {}
        if self.terms is not None:
            out["terms"] = lambda ex: self.terms(**ex)
        if self.quantities is not None:
            out["quantities"] = lambda ex: self.quantities(**ex)
        return out

    def run(self, rt: Any, fn: Callable[..., Any], ex: Example) -> Trial:
        want = self.want(ex)
        out = call_pure(fn, self.args(**ex), want == RAISES)
        extra = {"call": self.call(**ex), "formula": "" if want == RAISES else self.formula(**ex)}
        if want != RAISES and _number(out) and not close(out, want):
            extra[PROBES], extra[AGREED] = self._probes(fn, ex)
        if self.measure is not None and want != RAISES:
            try:
                extra["measured"] = self.measure(**ex, simulated=rt.simulated)
            except Exception as exc:  # the grader's own program: never the student's fault
                raise GraderFault(f"measuring {extra['call']} failed: {exc!r}") from exc
        return Trial(ex, output=out, expected=want, extra=extra)

    def _probes(self, fn: Callable[..., Any], ex: Example
                ) -> tuple[list[tuple[Example, Any]], list[Example]]:  # fmt: skip
        """The student's wrong answers on the other fixed examples (of the first
        :data:`PROBES_AT_MOST`), and the examples among them it got right: report material
        for :class:`Suspicion`, never a verdict."""
        others = [e for e in self.examples(FULL) if e != ex][:PROBES_AT_MOST]
        found = answers_on(fn, others, lambda e: self.args(**e), lambda e, _: self.want(e),
                           lambda theirs, right: theirs if _number(theirs) else None)  # fmt: skip
        wrong = [(other, theirs) for other, theirs, right in found if not _same(theirs, right)]
        right = [other for other, theirs, want in found if _same(theirs, want)]
        return wrong, right

    def spec(self) -> ExerciseSpec:
        return ExerciseSpec(
            name=self.name,
            strategy=self.draw,
            explicit=self.examples,
            run=self.run,
            checks=(self.check(),),
            max_examples=self.max_examples,
            purpose=self.purpose,
        )


def rounded(got: Any, want: Any, probes: list[tuple[Any, Any]] | None = ()) -> str | None:
    """Where a whole-number answer is the fractional right one rounded (down, up or to the
    nearest): which, and the ways a program rounds so (issue 45 §3). ``probes``: (the
    student's answer, the right one) on the other fixed examples it got wrong; a way is said
    only where each of those is the right one rounded that way too (a formula that gives
    1 here and 0.5 there rounds nothing); None: they could not be read, nothing is said."""
    if probes is None:
        return None
    if not (_number(got) and _number(want)) or not math.isfinite(want) or want == round(want):
        return None
    ways = (
        (math.floor, "rounded down to a whole number: floor division (//) where / "
         "belongs, or int() or math.floor of a positive result"),
        (math.ceil, "rounded up to a whole number (math.ceil, or -(-a // b))"),
        (round, "rounded to the nearest whole number (round())"),
    )  # fmt: skip

    def bears(way: Callable[[float], int], theirs: Any, right: Any) -> bool:
        return (_number(theirs) and _number(right) and math.isfinite(right)
                and right != round(right) and theirs == way(right))  # fmt: skip

    said = [words for way, words in ways
            if got == way(want) and all(bears(way, t, r) for t, r in probes)
            and any(x != 0 for x in (got, *(t for t, _ in probes)))]  # fmt: skip
    # (0 on every example is no rounding measured: a branch that returns 0 gives it too)
    return (
        f"Your answer {got:g} is the right one, {want:.6g}, {'; or '.join(said)}." if said else None
    )


def _none_hint(got: Any, want: Any) -> str | None:
    return number_type_hint(got, want) if got is None else None
