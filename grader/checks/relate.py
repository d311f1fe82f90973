"""Where a wrong array is wrong, and what it equals instead (issue 45 §2, §3).

Mechanisms for mistakes nobody catalogued: they read only the student's value
and the expected one (and the example's own quantities and inputs), never a
list of known mistakes.

:func:`localise` says where the wrong elements lie: every element, some indices
along an axis (one row, a range, every k-th), or a block, in one sentence.

:func:`relations` tests a fixed battery of relations between the value and the
expected one, and says each that holds **exactly**: to the check's own
tolerance, on every wrong element (a permutation: on every element). A factor
is named when it equals one of the example's quantities (mesh axis sizes, N,
√N, itemsize, 2, ½, a bias correction where the lesson exposes one). Nothing
here says "close to": a relation holds or is not said.

Counters and schedules one step off (the expected value of the previous or next
step) are not in the battery: a value check sees one step's expected value, and
the step before or after is the lesson's to compute (left to each lesson).
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

MAX_ELEMENTS = 1 << 21
"""Relations run on arrays of at most this many elements (a failing grade stays
cheap: every relation is one or two passes over the array)."""

Close = Callable[[np.ndarray, np.ndarray], np.ndarray]
"""(actual, expected) → elementwise bool: within the check's tolerance."""


class Family(Protocol):
    """What a device's block of an output is made of (``Values(families=…)``): ``said``
    is one sentence where the block ``got`` is exactly made another way than the right
    one (how), else None."""

    def said(self, coord: tuple, got: np.ndarray, close: Close, what: str) -> str | None: ...


Unit = tuple[int, str] | tuple[int, str, str]
"""A block's length along one axis and whose block it is (``(2, "argument 0")``): one
device's share of an array split over the mesh along that axis."""


# ------------------------------------------------------------ where


def _runs(idx: Sequence[int]) -> list[tuple[int, int]]:
    runs: list[list[int]] = []
    for i in idx:
        if runs and i == runs[-1][1] + 1:
            runs[-1][1] = i
        else:
            runs.append([i, i])
    return [(a, b) for a, b in runs]


def _indices(idx: Sequence[int], size: int) -> str:
    """``index 3``, ``indices 2–5``, ``every 4th index from 1``, ``indices 0–1, 6``."""
    idx = sorted(idx)
    if len(idx) == size:
        return "every index"
    if len(idx) == 1:
        return f"index {idx[0]}"
    steps = {b - a for a, b in zip(idx, idx[1:])}
    if len(steps) == 1 and (k := steps.pop()) > 1:
        return f"every {_ordinal(k)} index from {idx[0]} ({len(idx)} of {size})"
    runs = _runs(idx)
    shown = ", ".join(f"{a}" if a == b else f"{a}–{b}" for a, b in runs[:4])
    more = f", … ({len(runs) - 4} more runs)" if len(runs) > 4 else ""
    return f"indices {shown}{more} ({len(idx)} of {size})"


def _ordinal(k: int) -> str:
    suffix = "th" if 10 <= k % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(k % 10, "th")
    return f"{k}{suffix}"


def _axis(ax: int, names: Sequence[str] | None) -> str:
    """``axis 2``, or ``axis 2 (position)`` where the caller names its axes."""
    return f"axis {ax} ({names[ax]})" if names and ax < len(names) else f"axis {ax}"


def localise(bad: np.ndarray, names: Sequence[str] | None = None) -> str | None:
    """One sentence on where ``bad`` (a global bool mask of wrong elements) is true:
    ``every element``, ``only along axis 0 at index 3 (every element there)``,
    ``a block: axis 0 indices 4–7, axis 1 indices 0–3``, or how many, scattered.
    None when nothing is wrong."""
    bad = np.asarray(bad, dtype=bool)
    total, n_bad = bad.size, int(bad.sum())
    if n_bad == 0:
        return None
    if n_bad == total:
        return f"every element is wrong ({total} of {total})"
    if bad.ndim == 0:
        return None
    if n_bad == 1:
        at = tuple(int(i) for i in np.argwhere(bad)[0])
        return f"only the element at {at} is wrong (1 of {total})"
    along = [np.nonzero(bad.any(axis=tuple(j for j in range(bad.ndim) if j != i)))[0]
             for i in range(bad.ndim)]  # fmt: skip
    box = np.zeros_like(bad)
    box[np.ix_(*along)] = True
    if np.array_equal(box, bad):
        limited = [(i, a) for i, a in enumerate(along) if len(a) < bad.shape[i]]
        parts = [f"{_axis(i, names)} at {_indices(a.tolist(), bad.shape[i])}"
                 for i, a in limited]  # fmt: skip
        if bad.ndim == 1:
            return f"wrong at {_indices(along[0].tolist(), total)}"
        if len(limited) == 1:
            return f"wrong only along {parts[0]}, every element there ({n_bad} of {total})"
        return f"wrong on one block: {', '.join(parts)} ({n_bad} of {total} elements)"
    first = tuple(int(i) for i in np.argwhere(bad)[0])
    return f"{n_bad} of {total} elements are wrong, scattered (no row, stride or block holds them all; the first at {first})"


# ------------------------------------------------------------ quantities


@dataclass(frozen=True)
class Quantity:
    """A number the example itself holds, and its name in a sentence."""

    value: float
    name: str


def quantities(
    example: dict[str, Any],
    mesh: Any = None,
    itemsizes: Sequence[int] = (),
    extra: dict[str, float] | None = None,
) -> list[Quantity]:
    """The example's own quantities a stray factor may be: the mesh's axis sizes and
    their product N, the example's integer fields (but a seed), the lesson's own
    (``extra``: a bias correction 1/(1 − βᵗ), say), √ of each, itemsizes, 2; and the
    reciprocal of each. Earlier names win where two are equal."""
    base: list[Quantity] = []
    if mesh is not None:
        sizes = dict(zip(mesh.axis_names, mesh.devices.shape))
        if len(sizes) > 1:
            base.append(
                Quantity(float(mesh.devices.size), f"N = {mesh.devices.size}, the device count")
            )
        for axis, size in sizes.items():
            what = "N, the size of mesh axis" if len(sizes) == 1 else "the size of mesh axis"
            base.append(Quantity(float(size), f"{what} {axis!r} ({size})"))
    for name, value in (extra or {}).items():
        base.append(Quantity(float(value), name))
    for key, value in example.items():
        if key == "seed" or isinstance(value, bool) or not isinstance(value, int):
            continue
        base.append(Quantity(float(value), f"{key} = {value}"))
    for size in dict.fromkeys(itemsizes):
        base.append(Quantity(float(size), f"the itemsize ({size} bytes)"))
    base.append(Quantity(2.0, "2"))
    counts = [(k, v) for k, v in example.items()
              if k != "seed" and isinstance(v, int) and not isinstance(v, bool)]  # fmt: skip
    if mesh is not None:
        counts = [("N", int(mesh.devices.size)), *counts]
    roots = [  # of counts and sizes: √N is a scale (1/√d), √itemsize never one
        Quantity(math.sqrt(q.value), f"√({q.name})")
        for q in base
        if q.value > 1 and q.name != "2" and not q.name.startswith("the itemsize")
    ]
    every = [q for q in base + roots if q.value > 0 and q.value != 1.0]
    out = every + [
        Quantity(1.0 / q.value, f"1/({q.name})" if q.name != "2" else "½") for q in every
    ]
    return out + _one_off(counts)


def _one_off(counts: Sequence[tuple[str, int]]) -> list[Quantity]:
    """A count over itself one less, and back (``n_micro/(n_micro − 1) = 8/7``): a sum of
    all n terms divided by the n − 1 a loop ran, or a ring's (N − 1)/N left out. Counts of
    3 and more (at 2 the ratio is 2 or ½, named already)."""
    out = []
    for name, n in counts:
        if n >= 3:
            out.append(Quantity(n / (n - 1), f"{name}/({name} − 1) = {n}/{n - 1}"))
            out.append(Quantity((n - 1) / n, f"({name} − 1)/{name} = {n - 1}/{n}"))
    return out


def name_factor(c: float, known: Sequence[Quantity], rel: float = 1e-6) -> Quantity | None:
    """The first quantity equal to ``c`` (relatively within ``rel``), or None; named with
    the others equal to it (:func:`also_equal`)."""
    q = next((q for q in known if abs(c - q.value) <= rel * abs(q.value)), None)
    return None if q is None else also_equal(q, known)


def also_equal(q: Quantity, known: Sequence[Quantity]) -> Quantity:
    """``q``, its name followed by every other quantity of the example equal to it: one
    example cannot tell 1/(rows = 2) from ½ when rows = 2, so a hint names both (issue 45
    §5: no cause the measurement does not show). The first name leads, as before."""
    same = [k.name for k in known if k.name != q.name and abs(k.value - q.value) <= 1e-9 * q.value]
    same = list(dict.fromkeys(same))
    if not same:
        return q
    return Quantity(q.value, f"{q.name} (or {', or '.join(same[:3])}: equal on this example)")


# ------------------------------------------------------------ relations


def _fmt(c: float) -> str:
    return f"{c:.6g}"


NEVER_UPDATED = ": returned as it came, never updated"
"""Said of an output leaf equal to the input of the same path (:func:`relations`)."""


def relations(
    got: np.ndarray,
    want: np.ndarray,
    bad: np.ndarray,
    close: Close,
    *,
    known: Sequence[Quantity] = (),
    inputs: Sequence[tuple[str, np.ndarray]] = (),
    others: Sequence[tuple[str, np.ndarray]] = (),
    split: Sequence[tuple[int, int]] = (),
    what: str = "your value",
    places: bool = True,
    units: dict[int, Sequence[Unit]] | None = None,
) -> list[str]:
    """Every relation of the battery that holds exactly between ``got`` and ``want``
    (global float64 arrays of one shape; ``bad`` the wrong elements), each one
    sentence that cites it. ``inputs``: (name, array) handed to the program;
    ``others``: (name, expected array) of the output's other leaves; ``split``:
    (axis, devices) the output is split over, for strided-vs-contiguous blocks;
    ``places``: False where the arrays' positions mean nothing (wrong elements of several
    devices, concatenated), so no permutation or move is tried; ``units``: per axis, the
    devices' blocks a shift is said in too (:func:`_in_blocks`)."""
    if got.shape != want.shape or got.size > MAX_ELEMENTS or not bad.any():
        return []
    a, e = got[bad], want[bad]
    n_bad = int(bad.sum())
    every = f"on every one of the {n_bad} wrong elements"
    out: list[str] = []
    finite_in = all(np.all(np.isfinite(x)) for _, x in inputs if x.dtype.kind == "f")
    nonfinite = ~np.isfinite(a)
    if nonfinite.any():
        if inputs and finite_in and np.all(np.isfinite(e)):
            out.append(
                f"{what} holds {int(nonfinite.sum())} non-finite value(s) (inf or nan) where "
                "every input and the expected value are finite (the program made them)"
            )
        return out  # nothing else can hold on a non-finite value
    leaf_key = what.rsplit("[", 1)[-1] if what.endswith("]") else None
    for name, x in inputs:
        if x.shape == got.shape and np.all(close(a, x[bad])):
            same = leaf_key is not None and name.endswith("[" + leaf_key)
            why = NEVER_UPDATED if same else ""
            out.append(f"{what} equals the input {name} {every}{why}")
            break
    for name, x in inputs:  # a counter: the input one on (or back), where it belongs reset
        if x.shape != got.shape or np.all(close(a, x[bad])) or not _counts(x):
            continue
        for d, words in ((1, "one more than it came in"), (-1, "one less than it came in")):
            if np.all(close(a, x[bad] + d)) and not np.all(close(e, x[bad] + d)):
                out.append(f"{what} is exactly the input {name} {'+' if d > 0 else '−'} 1 "
                           f"{every}: {words}")  # fmt: skip
                break
        else:
            continue
        break
    if np.all(a == 0) and np.any(e != 0):
        return [*out, f"{what} is exactly 0 {every}"][:LIMIT]
    if np.all(close(a, -e)):
        return [*out, f"{what} is exactly the expected one with its sign flipped, {every}"][:LIMIT]
    for name, x in others:
        if x.shape == got.shape and np.all(close(a, x[bad])):
            out.append(
                f"{what} equals the expected {name} {every}: the leaves are swapped or mixed up"
            )
            break
    varied = bool(np.ptp(e) > 0)  # on one expected value any number is some factor of it
    factor = _factor(a, e, close, known, varied)
    if factor is not None:
        c, q = factor
        named = (
            f": the factor is {q.name}{_readings(q.name)}"
            if q
            else " (a constant factor that is none of the example's own sizes)"
        )
        out.append(f"{what} is exactly {_fmt(c)}× the expected one {every}{named}")
    for name, x in inputs:  # an update: value − input, against the expected one's
        if factor is not None or len(out) >= LIMIT:
            break
        if x.shape != got.shape or not np.any(x[bad]):
            continue  # an input of zeros makes the update the value: the factor said it
        xb = x[bad]
        du, de = a - xb, e - xb
        if not np.any(de) or np.all(close(a, xb)) or not np.ptp(de) > 0:
            continue  # (one update value: −1× or N× of it is as often a coincidence)
        found = _factor(du, de, lambda u, d, xb=xb: close(xb + u, xb + d), known,
                        bool(np.ptp(de) > 0), minus_one=True)  # fmt: skip
        if found is None:
            continue
        c, q = found
        words = (
            "the step went the wrong way (its sign flipped)" if c == -1.0
            else f"the factor is {q.name}" if q is not None
            else "a constant factor that is none of the example's own sizes"
        )  # fmt: skip
        out.append(
            f"{what} minus {name} (your update) is exactly {_fmt(c)}× the expected "
            f"update {every}: {words}"
        )
        break
    for name, x in inputs:  # an input added to the output, or taken from it
        if out or x.shape != got.shape or not np.any(x[bad]):
            continue
        for sign, words in ((1.0, "plus"), (-1.0, "minus")):
            if np.all(close(a, e + sign * x[bad])):
                out.append(f"{what} is exactly the expected one {words} the input {name} "
                           f"{every}: that input {'added to' if sign > 0 else 'taken from'} "
                           "the output" + (" (as a residual connection, x + f(x), adds it)"
                                           if sign > 0 else ""))  # fmt: skip
                break
    if not out and factor is None and (lines := scaled_lines(got, want, bad, close, what)):
        out.append(lines)
    d = float(np.median(a - e))
    if not out and d != 0 and np.all(close(a, e + d)):
        q = Quantity(1.0, "1") if abs(d) == 1 else name_factor(abs(d), known)
        q = q if varied or abs(d) == 1 else None  # one value: any offset fits a quantity
        if q is not None or varied:
            sign = "+" if d > 0 else "−"
            named = f": the offset is {q.name}" if q is not None and q.name != "1" else ""
            out.append(f"{what} is exactly the expected one {sign} {_fmt(abs(d))} {every}{named}")
    if not out and places:
        perm = _permutation(got, want, close, split)
        if perm:
            out.append(f"{what} holds the expected values in the wrong places: it is {perm}")
        elif said := moved(got, want, bad, close, what=what, units=units):
            out.append(said)
    return out[:LIMIT]


def scaled_lines(got: np.ndarray, want: np.ndarray, bad: np.ndarray, close: Close,
                 what: str = "your value") -> str | None:  # fmt: skip
    """Each wrong line along the last axis (a vector: a token's features, a head's
    output) exactly the expected line times a factor of its own, the factors not all one
    value (that is :func:`relations`' constant factor): the vectors point the right way
    and have the wrong lengths (weights that do not add up to 1, a norm of another
    slice). None where some wrong line is not so, or fewer than two lines are wrong. It
    names no cause (:func:`names`: no colon), so a change of the reference that gives the
    value is still looked for, and goes first."""
    if got.ndim < 2 or got.shape != want.shape or got.shape[-1] < 2:
        return None
    rows = np.any(bad, axis=-1)
    if int(rows.sum()) < 2:
        return None
    g, w = got[rows].astype(np.float64), want[rows].astype(np.float64)
    norm = np.sum(w * w, axis=-1)
    if not np.all(norm > 0) or not np.all(np.isfinite(g)):
        return None
    c = np.sum(g * w, axis=-1) / norm  # each line's least-squares factor
    if not np.all(close(g, c[:, None] * w)):
        return None
    lo, hi = float(np.min(c)), float(np.max(c))
    if np.all(close(c[:, None] * w, lo * w)):
        return None  # one factor for all: the constant factor's sentence
    return (f"{what} is, along its last axis, exactly the expected one times a factor of "
            f"each line's own, on every one of the {int(rows.sum())} wrong lines (each of "
            f"{got.shape[-1]} elements), with factors from {_fmt(lo)} to {_fmt(hi)} — the "
            "right directions, the wrong lengths")  # fmt: skip


def names(said: str) -> bool:
    """Whether a sentence of :func:`relations` says what the value is (a named factor or
    offset, a source, a move: a colon before it), not only a number (a factor that is none
    of the example's quantities, an unnamed offset)."""
    return ": " in said


@dataclass(frozen=True)
class Moves:
    """What :func:`moves` found: the wrong elements that hold expected values of other
    indices, how they moved, one of them, and the wrong elements left 0."""

    n: int
    how: str
    """``": each holds the element 1 place(s) before it along axis 0, cyclically"``, or
    the kind of move and its pattern: what two devices' moves are alike by."""
    example: str
    zeros: int

    def said(self, what: str = "your value") -> str:
        example = f"; e.g. {self.example}" if self.example else ""
        tail = f"; {self.zeros} other wrong element(s) hold 0" if self.zeros else ""
        return (f"{what} holds, at {self.n} of its wrong elements, exactly the expected value "
                f"of another index{self.how}{example}{tail}")  # fmt: skip


def moved(
    got: np.ndarray, want: np.ndarray, bad: np.ndarray, close: Close, *, what: str = "your value",
    units: dict[int, Sequence[Unit]] | None = None,
) -> str | None:  # fmt: skip
    """:func:`moves`, said in one sentence (None where it found nothing)."""
    found = moves(got, want, bad, close, units=units)
    return None if found is None else found.said(what)


def moves(
    got: np.ndarray,
    want: np.ndarray,
    bad: np.ndarray,
    close: Close,
    names: Sequence[str] | None = None,
    units: dict[int, Sequence[Unit]] | None = None,
) -> Moves | None:
    """Data moved, not computed wrongly: where every wrong element of ``got`` (but those
    left 0, never written) is exactly an expected value of another index, how: one
    cyclic shift along one axis (tried for every shift, so it holds whatever the
    values), else, where the expected values are distinct, each element's source (moves
    along one axis only, or across axes; rearranged among the wrong places, or copied),
    else the wrong places' values rearranged among themselves (the sorted values
    equal). None where no such relation holds on every element or fewer than
    :data:`MOVED_MIN` elements are wrong. ``names``: the axes' names, said beside them;
    ``units``: per axis, the devices' blocks a shift is said in too."""
    if got.shape != want.shape or got.ndim == 0 or not bad.any():
        return None
    unwritten = bad & (got == 0) & (want != 0)
    sels = (bad, bad & ~unwritten) if unwritten.any() else (bad,)
    for find in (_shift, _blocks, _moved):  # a shift first, whole blocks, then sources
        for sel in sels:
            if int(sel.sum()) < MOVED_MIN:
                continue
            found = find(got, want, sel, bad, close, names, units)
            if found is not None:
                how, example = found
                return Moves(int(sel.sum()), how, example, int((bad & ~sel).sum()))
    return None


def _shift(
    got: np.ndarray,
    want: np.ndarray,
    sel: np.ndarray,
    bad: np.ndarray,
    close: Close,
    names: Sequence[str] | None = None,
    units: dict[int, Sequence[Unit]] | None = None,
) -> tuple[str, str] | None:
    """One cyclic shift along one axis that gives every element of ``sel``: (how, ""),
    or None. Each shift is tried on :data:`SAMPLE` elements first; ``units``: per axis,
    the blocks a shift is also said in (:func:`_in_blocks`)."""
    sample = np.argwhere(sel)[:SAMPLE]
    for ax in range(got.ndim):
        n = got.shape[ax]
        if n < 2:
            continue
        ks = np.arange(1, n)
        src = np.repeat(sample[None], n - 1, axis=0)  # [shift, element, axis]
        src[:, :, ax] = (sample[None, :, ax] - ks[:, None]) % n
        held = want[tuple(np.moveaxis(src, -1, 0))]  # want at each sampled element's source
        fits = np.all(close(got[tuple(sample.T)][None, :], held), axis=1)
        for k in sorted(ks[fits].tolist(), key=lambda k: min(k, n - k)):  # then every element
            if np.all(close(got[sel], np.roll(want, k, axis=ax)[sel])):
                back = k if k <= n // 2 else k - n
                return (f": each holds the element {_places(abs(back))} "
                        f"{'before' if back > 0 else 'after'} it along {_axis(ax, names)}, "
                        f"cyclically{_in_blocks(abs(back), (units or {}).get(ax, ()))}", "")  # fmt: skip
    return None


def _places(k: int) -> str:
    return f"{k} place" if k == 1 else f"{k} places"


def _ordered(units: Sequence[Unit]) -> list[Unit]:
    """A lesson's own units first (in its order), then the devices' blocks, longest first."""
    return [u for u in units if len(u) == 3] + sorted((u for u in units if len(u) == 2),
                                                      key=lambda u: -u[0])  # fmt: skip


def _in_blocks(k: int, units: Sequence[Unit]) -> str:
    """A shift of ``k`` places said in whole blocks: of a lesson's own unit, (length, one,
    several), where it is a multiple of one (``": one micro-batch slot (2 along this
    axis)"``); else of the longest device's block it is a multiple of (``": one device's
    block of argument 0 (2 along this axis)"``); or ""."""
    for unit in _ordered(units):
        length = unit[0]
        if length >= 1 and k % length == 0:
            m = k // length
            each = f" ({length} along this axis{' each' if m > 1 else ''})"
            if len(unit) == 3:
                return f": {unit[1] if m == 1 else f'{m} {unit[2]}'}{each}"
            blocks = "one device's block" if m == 1 else f"{m} devices' blocks"
            return f": {blocks} of {unit[1]}{each}"
    return ""


def _along(
    got: np.ndarray, want: np.ndarray, sel: np.ndarray, close: Close, names: Sequence[str] | None
) -> str | None:
    """Where the expected values repeat, though most are distinct (a token seen twice):
    the one axis along which every element of ``sel`` finds its value among the nonzero
    expected ones of its own line (its other indices kept), said without a source; None
    where no axis does, or where most values repeat (found on a line by chance)."""
    nonzero = want[want != 0]
    if np.unique(nonzero).size * 2 < nonzero.size:
        return None  # values this few (small integers) are found on a line by chance
    idx = np.argwhere(sel)
    held = got[sel]
    for ax in range(got.ndim):
        if got.shape[ax] < 2 or idx.shape[0] * got.shape[ax] > SORT_MAX:
            continue
        lines = np.moveaxis(want, ax, -1)[tuple(np.delete(idx, ax, axis=1).T)]  # [element, n]
        if np.all(np.any(close(held[:, None], lines) & (lines != 0), axis=1)):
            return (f" (expected values of other places; which came from where is not known: "
                    f"the expected values repeat): each moved along {_axis(ax, names)} only, "
                    "its other indices kept")  # fmt: skip
    return None


def _blocks(
    got: np.ndarray,
    want: np.ndarray,
    sel: np.ndarray,
    bad: np.ndarray,
    close: Close,
    names: Sequence[str] | None = None,
    units: dict[int, Sequence[Unit]] | None = None,
) -> tuple[str, str] | None:
    """Whole blocks moved: along one axis, in a lesson's own unit or a device's block
    (``units``), every block holding an element of ``sel`` is exactly one other expected
    block (two at least): (how, ""), the map said as a pattern where it is one (adjacent
    pairs swapped, the order reversed), else its first entries; None where no unit's
    blocks do (a block computed, or equal to several)."""
    for ax, found in (units or {}).items():
        if ax >= got.ndim:
            continue
        for unit in _ordered(found):
            length, size = unit[0], got.shape[ax]
            if length < 1 or size % length or size // length < 2:
                continue
            n = size // length
            g = np.moveaxis(got, ax, 0).reshape(n, -1)
            w = np.moveaxis(want, ax, 0).reshape(n, -1)
            hit = np.moveaxis(sel, ax, 0).reshape(n, -1).any(axis=1)
            moved: dict[int, int] = {}
            for i in np.flatnonzero(hit).tolist():
                same = [j for j in range(n) if j != i and np.all(close(g[i], w[j]))]
                if len(same) != 1:
                    break
                moved[i] = same[0]
            else:
                if len(moved) >= 2:
                    return _block_map(moved, n, unit, _axis(ax, names)), ""
    return None


def _block_map(moved: dict[int, int], n: int, unit: Unit, axis: str) -> str:
    """The words of a block map ``moved`` (block i holds block moved[i]'s)."""
    kind = unit[2] if len(unit) == 3 else (
        f"blocks of {unit[0]} (one device's block of {unit[1]} each)")  # fmt: skip
    pairs = all(j == i ^ 1 for i, j in moved.items())
    if pairs:
        how = f"each pair of adjacent {kind.split(' (')[0]} in the other order"
    elif all(j == n - 1 - i for i, j in moved.items()):
        how = "in reverse order"
    else:
        shown = ", ".join(f"{i} holds {j}'s" for i, j in list(moved.items())[:4])
        how = shown + (", …" if len(moved) > 4 else "")
    first = ", ".join(f"{i} holds {j}'s" for i, j in list(moved.items())[:2])
    detail = f" ({first}, …)" if pairs or how == "in reverse order" else ""
    return f": whole {kind} along {axis} moved, {how}{detail}"


def _moved(
    got: np.ndarray,
    want: np.ndarray,
    sel: np.ndarray,
    bad: np.ndarray,
    close: Close,
    names: Sequence[str] | None = None,
    units: dict[int, Sequence[Unit]] | None = None,
) -> tuple[str, str] | None:
    """:func:`moves`'s sources of the elements ``sel`` (of the wrong ones, ``bad``): (how,
    an example, or ""), or None."""
    if want.size > SORT_MAX:
        return None
    flat = want.ravel()
    order = np.argsort(flat, kind="stable")
    ranked = flat[order]
    if np.any(close(ranked[1:], ranked[:-1]) & (ranked[1:] != 0)):  # repeated values
        if sel is bad and np.all(close(np.sort(got[sel]), np.sort(want[sel]))):
            return (" (the values of the wrong places, rearranged among them; which came "
                    "from where is not known: the expected values repeat)", "")  # fmt: skip
        along = _along(got, want, sel, close, names)
        return None if along is None else (along, "")
    held = got[sel]
    k = np.searchsorted(ranked, held)
    below, above = np.clip(k - 1, 0, ranked.size - 1), np.clip(k, 0, ranked.size - 1)
    near = [close(held, ranked[j]) & (ranked[j] != 0) for j in (below, above)]
    if not np.all(near[0] | near[1]):
        return None  # some wrong element equals no expected value: computed, not moved
    idx = np.argwhere(sel)
    src = np.stack(np.unravel_index(order[np.where(near[0], below, above)], want.shape), axis=1)
    shift = src - idx  # each element holds the one ``shift`` away
    axes = [ax for ax in range(got.ndim) if np.any(shift[:, ax])]
    if len(axes) == 1:
        how = f"each moved along {_axis(axes[0], names)} only, its other indices kept"
    else:
        how = f"moved across axes {', '.join(map(str, axes))}"
    example = (f"the element at {tuple(int(x) for x in idx[0])} holds the one at "
               f"{tuple(int(x) for x in src[0])}")  # fmt: skip
    taken = [tuple(int(x) for x in row) for row in src]
    if len(set(taken)) < len(taken):
        kind = "some expected values copied to several places"
    elif set(taken) <= {tuple(x) for x in np.argwhere(bad).tolist()}:
        kind = "the expected values of the wrong places, rearranged among them"
    else:
        kind = "expected values copied from other places"
    return f" ({kind}): {how}", example


SAMPLE = 32
"""Wrong elements every shift is first tried on; only a shift that fits them all is
tried on every wrong element (a failing grade stays cheap on a long axis)."""

SORT_MAX = 1 << 18
"""Expected arrays up to this many elements are sorted to find each wrong element's
source (past it, only the shifts are tried: a failing grade stays cheap)."""

MOVED_MIN = 3
"""Wrong elements (not left 0) a move is said on at least: fewer may equal another
expected value by chance (small integers)."""


LIMIT = 2
"""Relations said per array: the first that hold, in the battery's order."""


def _readings(name: str) -> str:
    """The two ways a named factor gets into a value, as they read: a quantity's inverse
    (``1/(rows = 2)``) divided by it, the quantity itself multiplied."""
    if found := re.match(r"(\w+)/\(\1 − 1\)", name):
        k = found[1]
        return f" — divided by {k} − 1 where {k} belongs (the {k} − 1 steps of a loop, say), or multiplied by it once too often"
    if found := re.match(r"\((\w+) − 1\)/\1", name):
        k = found[1]
        return f" — divided by {k} where {k} − 1 belongs, or multiplied by it once too often"
    if name.startswith("1/"):
        return " — divided by it once too often, or a product with it left out"
    return " — multiplied by it once too often, or a division by it left out"


def _counts(x: np.ndarray) -> bool:
    """Values a counter can hold: one whole number, not below 0 (an input of −1 that came
    out 0 is no counter one on; nor is one element of an array that came out one off, nor
    a matrix of one element: a block [1, 1] of a mesh of one device)."""
    return bool(x.size == 1 and x.ndim <= 1 and np.all(x >= 0) and np.all(x == np.round(x)))


def _factor(
    a: np.ndarray,
    e: np.ndarray,
    close: Close,
    known: Sequence[Quantity],
    varied: bool,
    minus_one: bool = False,
) -> tuple[float, Quantity | None] | None:
    """(c, the quantity it is) where ``a`` is exactly c·``e`` (held in the expected
    value's frame, a / c against e: the check's tolerance is relative to the expected
    values' size): each of the example's quantities tried as it is, then the
    least-squares c, said unnamed only where ``e`` takes two values at least."""
    if not np.any(e) or np.all(close(a, e)):
        return None
    if minus_one and np.all(close(-a, e)):
        return -1.0, None
    c = float(np.sum(a * e)) / float(np.sum(e * e))  # not a @ e: BLAS threads, slow here
    if c == 0:
        return None
    near = [q for q in known if abs(q.value - c) <= 0.05 * abs(c)]  # only these can hold
    for q in sorted(near, key=lambda q: abs(q.value - c)):
        if np.all(close(a / q.value, e)):
            return q.value, also_equal(q, known)
    if abs(c - 1) <= 1e-9 or not varied or not np.all(close(a / c, e)):
        return None
    return c, None


def _permutation(
    got: np.ndarray,
    want: np.ndarray,
    close: Close,
    split: Sequence[tuple[int, int]],
    holders: tuple[str, str] = ("device", "devices"),
) -> str | None:
    """The first rearrangement of ``want`` that ``got`` equals on every element;
    ``holders``: what holds each block of ``split``, singular and plural."""
    one, many = holders
    if got.ndim == 0:
        return None
    if np.all(close(got, want)):
        return None
    cands: list[tuple[str, Callable[[], np.ndarray]]] = []
    for axis in range(got.ndim):
        if got.shape[axis] < 2:
            continue
        cands.append((f"the expected one shifted by +1 along axis {axis} (element i holds i − 1's)",
                      lambda axis=axis: np.roll(want, 1, axis=axis)))  # fmt: skip
        cands.append((f"the expected one shifted by −1 along axis {axis} (element i holds i + 1's)",
                      lambda axis=axis: np.roll(want, -1, axis=axis)))  # fmt: skip
        cands.append((f"the expected one moved one place later along axis {axis} (element i "
                      "holds i − 1's, and index 0 is 0)",
                      lambda axis=axis: _shifted(want, 1, axis)))  # fmt: skip
        cands.append((f"the expected one moved one place earlier along axis {axis} (element i "
                      "holds i + 1's, and the last index is 0)",
                      lambda axis=axis: _shifted(want, -1, axis)))  # fmt: skip
        cands.append((f"the expected one reversed along axis {axis}",
                      lambda axis=axis: np.flip(want, axis=axis)))  # fmt: skip
    if got.ndim >= 2 and got.shape[-1] == got.shape[-2]:
        cands.append(("the expected one transposed (its last two axes swapped)",
                      lambda: np.swapaxes(want, -1, -2)))  # fmt: skip
    for axis, n in split:
        size = got.shape[axis] if axis < got.ndim else 0
        if n < 2 or size % n or size // n < 2:
            continue
        b = size // n
        blocks = np.split(want, n, axis=axis)
        if all(np.all(close(x, blocks[0])) for x in blocks[1:]):
            continue  # every device's block the same (a replicated result): which element
            # went where cannot be told, and a strided reading would be a coincidence

        def strided(axis=axis, n=n, b=b) -> np.ndarray:
            # device d holds elements d, d + n, d + 2n, …: block d = want[d::n]
            w = np.moveaxis(want, axis, 0)
            w = w.reshape(b, n, *w.shape[1:]).swapaxes(0, 1).reshape(w.shape)
            return np.moveaxis(w, 0, axis)

        def contiguous_read_strided(axis=axis, n=n, b=b) -> np.ndarray:
            w = np.moveaxis(want, axis, 0)
            w = w.reshape(n, b, *w.shape[1:]).swapaxes(0, 1).reshape(w.shape)
            return np.moveaxis(w, 0, axis)

        cands.append((f"strided where the blocks are contiguous: along axis {axis}, over "
                      f"{n} {many}, {one} d holds elements d, d + {n}, d + {2 * n}, … where it "
                      f"should hold {b} neighbours d·{b} … d·{b} + {b - 1}", strided))  # fmt: skip
        cands.append((f"interleaved the other way: along axis {axis}, over {n} {many}, "
                      f"element j·{n} + d holds what belongs at d·{b} + j (contiguous blocks "
                      "written where strided ones belong)", contiguous_read_strided))  # fmt: skip
    for words, make in cands:
        if np.all(close(got, make())):
            return words
    return None


def rearranged(
    got: np.ndarray,
    want: np.ndarray,
    close: Close,
    split: Sequence[tuple[int, int]] = (),
    holders: tuple[str, str] = ("device", "devices"),
) -> str | None:
    """How ``got`` holds the expected values in other places, where one rearrangement of
    the battery (a shift, a reversal, a transpose, strided blocks where contiguous ones
    belong) gives it on every element: its words, or None."""
    if got.shape != want.shape:
        return None
    return _permutation(np.asarray(got, np.float64), np.asarray(want, np.float64), close,
                        split, holders)  # fmt: skip


@dataclass(frozen=True)
class Products:
    """One family of products two operands' blocks make, for a matmul split over a ring:
    ``atoms(coord)`` maps each pair (a, b) to the product that pair gives on the device
    at ``coord``, ``right(coord)`` the pairs the device's block is the sum of, ``term``
    writes a pair (``"X[:, a]·W[b]"``). A block that is exactly another sum of these
    products pairs the blocks wrongly (:func:`paired`)."""

    atoms: Callable[[tuple], dict[tuple[int, int], np.ndarray]]
    right: Callable[[tuple], dict[int, int]]
    """a → the b it belongs with, for every a of the right sum."""
    term: Callable[[int, int], str]
    first: str
    """What a indexes (``X's column block``)."""
    second: str
    """What b indexes (``W block``)."""
    n: int
    what: str = "a sum of block products"
    """What a sum of the atoms is, in words (``"a sum of the micro-batches' gradients"``)."""
    orders: Callable[[tuple], list[list[int]]] | None = None
    """The ``first`` blocks in the order a ring loop adds their terms on the device at
    ``coord``, one list a direction round the ring: a block that lacks the terms of the
    first steps (or of the last ones) in either is said so (:func:`_run_short`)."""

    def said(self, coord: tuple, got: np.ndarray, close: Close, what: str) -> str | None:
        return paired(self, coord, got, close, what)


def products(got: np.ndarray, atoms: dict[tuple[int, int], np.ndarray], close: Close
             ) -> dict[tuple[int, int], int] | None:  # fmt: skip
    """``got`` as the one sum of ``atoms`` with whole coefficients that gives it exactly
    (to the check's tolerance): {pair: coefficient} of the nonzero ones. None where the
    atoms do not determine a sum (fewer elements than atoms, or atoms that are not
    independent: two sums could give one value), where ``got`` is not of their size, or
    where no whole-coefficient sum gives it."""
    keys = list(atoms)
    if not keys:
        return None
    a = np.stack([np.asarray(atoms[k], np.float64).ravel() for k in keys], axis=1)
    y = np.asarray(got, np.float64).ravel()
    if y.size != a.shape[0] or a.shape[0] < a.shape[1] or np.linalg.matrix_rank(a) < a.shape[1]:
        return None
    coef = np.linalg.lstsq(a, y, rcond=None)[0]
    whole = np.round(coef)
    if not whole.any() or np.any(np.abs(coef - whole) > 0.05):
        return None
    if not np.all(close(a @ whole, y)):
        return None
    return {k: int(c) for k, c in zip(keys, whole) if c}


def paired(family: Products, coord: tuple, got: np.ndarray, close: Close,
           what: str) -> str | None:  # fmt: skip
    """One sentence where ``got`` (the device's block) is exactly another sum of the
    family's products than the right one (:func:`products`): the terms it has that the
    right sum has not, those it lacks, and the pattern where one holds (every term
    taking the ``second`` d after the right one, mod N; a ``first`` no term takes). None
    where no such sum gives it, or it is the right one."""
    found = products(got, family.atoms(coord), close)
    right = family.right(coord)
    if found is None or found == {(a, b): 1 for a, b in right.items()}:
        return None

    def listed(pairs: dict[tuple[int, int], int]) -> str:
        return " + ".join((f"{c}·" if c != 1 else "") + family.term(a, b)
                          for (a, b), c in sorted(pairs.items()))  # fmt: skip

    want = {(a, b): 1 for a, b in right.items()}
    extra = {k: c - want.get(k, 0) for k, c in found.items() if c != want.get(k, 0)}
    missing = {k: 1 for k in want if k not in found}
    said = f"{what} is exactly {family.what}, but not the right one: it "
    if not extra:
        said += f"lacks {listed(missing)}"
        if family.orders is not None and set(found.values()) == {1}:
            said += _run_short(family.orders(coord), {a for a, _ in found})
    else:
        said += f"has {listed(extra)}"
        said += f" where {listed(missing)} belongs" if missing else " on top of the right sum"
        if not missing and set(extra.values()) == {1} and all(k in want for k in extra):
            said += ": counted twice"  # a right term once more
    n = family.n
    offsets = {(b - right[a]) % n for a, b in found if a in right}
    firsts = sorted(a for a, _ in found)
    if (len(offsets) == 1 and (d := offsets.pop()) and set(found.values()) == {1}
            and firsts == sorted(right)):  # fmt: skip
        later = d if d <= n // 2 else d - n
        step = f"{abs(later)} {'after' if later > 0 else 'before'}"
        return f"{said}: each term takes the {family.second} {step} the right one (mod {n})"
    pattern = _pairing(family, right, extra, missing)
    if (len(extra) == 1 and len(missing) == 1 and family.orders is not None
            and any(order and next(iter(missing))[0] == order[-1]
                    for order in family.orders(coord))):  # fmt: skip
        pattern += (" — the one wrong term is the last the ring adds, of the block held last "
                    "(after N − 1 steps, multiplied after the loop, say): the step it is paired "
                    "by is not that block's")  # fmt: skip
    left_out = sorted(set(right) - set(firsts))
    if left_out and extra:  # (where it only lacks terms, they are the ones left out)
        pattern += f"{'; ' if pattern else ': '}no term takes {family.first} "
        pattern += ", ".join(map(str, left_out))
    return said + pattern


def _run_short(orders: list[list[int]], held: set[int]) -> str:
    """Where the right terms a block holds are exactly the last k (or the first k) that a
    ring loop adds, in one of the directions ``orders`` gives: which steps' terms are
    missing, and the two ways a loop loses them; "" where they are no such run."""
    for order in orders:
        n, k = len(order), len(held)
        if n < 4 or not 0 < k < n:
            return ""  # (on 3 devices any set of blocks is a run one way round)
        if set(order[n - k :]) == held:
            return (f": the first {n - k} of the {n} terms the ring adds in turn are the ones "
                    f"missing (the sum holds only the last {k}) — the running sum lost them "
                    "(set, y = term, where a later step adds to it, y = y + term) or never "
                    "took them (a sum started late, or from zeros where it starts from the "
                    "first term)")  # fmt: skip
        if set(order[:k]) == held:
            return (f": the last {n - k} of the {n} terms the ring adds in turn are the ones "
                    f"missing (the sum holds only the first {k}) — a loop of fewer steps, or "
                    "the block held last never multiplied")  # fmt: skip
    return ""


def _pairing(family: Products, right: dict[int, int], extra: dict[tuple[int, int], int],
             missing: dict[tuple[int, int], int]) -> str:  # fmt: skip
    """How the terms a block has in place of the right ones pair the blocks, where one
    pattern holds for all of them: the same blocks paired the other way (swapped), or each
    ``second`` the same number of blocks after the one its ``first`` belongs with; ""
    where none does (or a term is there twice)."""
    if not extra or set(extra.values()) != {1} or any(a not in right for a, _ in extra):
        return ""
    n = family.n
    same_first = sorted(a for a, _ in extra) == sorted(a for a, _ in missing)
    same_second = sorted(b for _, b in extra) == sorted(b for _, b in missing)
    if missing and same_first and same_second:
        return (
            f": the same blocks, paired the other way — each {family.second} of those "
            f"terms belongs with another of their {family.first}s (swapped)"
        )
    if missing and same_second:  # the second blocks are right, the first ones are not
        belongs = {b: a for a, b in right.items()}
        if any(b not in belongs for _, b in extra):
            return ""
        offsets = {(a - belongs[b]) % n for a, b in extra}
        moved, by = family.first, family.second
    else:
        offsets = {(b - right[a]) % n for a, b in extra}
        moved, by = family.second, family.first
    if len(offsets) != 1 or not (d := offsets.pop()):
        return ""
    later = d if d <= n // 2 else d - n
    k = "one" if abs(later) == 1 else str(abs(later))
    the = "" if "'s " in moved else "the "  # "X's column block", "the W block"
    return (
        f": each of those terms takes {the}{moved} {k} {'after' if later > 0 else 'before'} "
        f"the one its {by} belongs with (mod {n}): the pairing is off by {k} "
        f"block{'s' if abs(later) > 1 else ''}"
    )


@dataclass(frozen=True)
class KeyGroup:
    """Query rows of one device's block, and the key blocks they may attend to: for each
    block, its keys and values and the mask the right program applies to it (None: every
    key seen), and how many times it belongs (0: hidden from these rows)."""

    rows: slice
    """The group's rows within the device's block."""
    q: np.ndarray
    """[r, H, Dh] float64: the group's queries."""
    keys: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray | None]]
    """block → (k [c, H, Dh], v [c, H, Dh], mask [r, c] or None), float64."""
    right: dict[int, int]
    what: str = ""
    """The rows, in words (``"query chunk 3"``), where a device has several groups."""


@dataclass(frozen=True)
class Attended:
    """Softmax attention split over devices by rows: ``groups(coord)`` the device's query
    rows and the key blocks they may see. A device's rows that are exactly attention over
    another multiset of those blocks (one counted twice, one left out, one the mask
    hides) are told which (:func:`attended`), whatever the program looks like."""

    groups: Callable[[tuple], list[KeyGroup]]
    block: str
    """What a block is called (``"K/V block"``, ``"key chunk"``)."""
    hidden: str = "these rows must not see"
    """Why a block belongs 0 times, in words."""

    def said(self, coord: tuple, got: np.ndarray, close: Close, what: str) -> str | None:
        return attended(self, coord, got, close, what)


def _masks_otherwise(group: KeyGroup) -> KeyGroup | None:
    """``group`` with each block also under the other mask: a block seen whole also with
    the diagonal's causal mask (row r sees key r and those before it), a masked one also
    whole — keyed ``(j, "masked")`` and ``(j, "whole")`` (a block's mask chosen by another
    block's index). None where the query rows and the blocks differ in length (no
    diagonal)."""
    if not any(mask is not None for _, _, mask in group.keys.values()):
        return None
    r = group.q.shape[0]
    keys: dict = dict(group.keys)
    for j, (k, v, mask) in group.keys.items():
        if mask is not None:
            keys[(j, "whole")] = (k, v, None)
        elif k.shape[0] == r:
            keys[(j, "masked")] = (k, v, np.tril(np.ones((r, r), dtype=bool)))
    return dataclasses.replace(group, keys=keys)


def weights(group: KeyGroup, got: np.ndarray, close: Close) -> dict[int, int] | None:
    """How many times each block of ``group`` is counted in ``got`` (the group's output
    rows [r, H, Dh]): the whole multiplicities m (0–3) for which softmax attention over
    the blocks, block j's keys weighted m_j, gives ``got`` exactly (to the check's
    tolerance); None where none does, or where the blocks cannot be told apart.

    o = Σ m_j·u_j / Σ m_j·z_j, with u_j = Σ_k e^(s_k − s_max)·v_k and z_j = Σ_k e^(s_k −
    s_max) over block j's keys, is linear in m once multiplied out: Σ m_j (u_j − o·z_j) = 0
    on every row, head and feature. Its null space, found by an SVD, gives m up to a scale;
    the whole multiple (m_max ≤ 3) is then checked by computing the attention again."""
    labels = list(group.keys)
    if not labels or got.shape != group.q.shape:
        return None
    scale = 1.0 / math.sqrt(group.q.shape[-1])
    scores = {}
    for j in labels:
        k, _, mask = group.keys[j]
        s = np.einsum("qhd,khd->qhk", group.q, k) * scale
        scores[j] = s if mask is None else np.where(mask[:, None, :], s, -np.inf)
    top = np.max([s.max(axis=-1) for s in scores.values()], axis=0)  # [r, H]
    if not np.all(np.isfinite(top)):
        return None  # a row that sees no key: nothing to weigh
    u, z = {}, {}
    for j in labels:
        p = np.exp(scores[j] - top[..., None])
        u[j], z[j] = np.einsum("qhk,khd->qhd", p, group.keys[j][1]), p.sum(axis=-1)
    a = np.stack([(u[j] - got * z[j][..., None]).ravel() for j in labels], axis=1)
    norms = np.linalg.norm(a, axis=0)
    if a.shape[0] < a.shape[1] or np.any(norms == 0):
        return None
    sv, vt = np.linalg.svd(a / norms, full_matrices=False)[1:]
    if len(sv) > 1 and sv[-2] <= 1e-6 * sv[0]:
        return None  # two ways to weigh the blocks: the rows cannot tell them apart
    m = vt[-1] / norms
    m = m if m.sum() >= 0 else -m
    top_m = float(m.max())
    if top_m <= 0:
        return None
    for most in (1, 2, 3):
        whole = np.round(m / top_m * most)
        if np.any(whole < 0) or np.any(np.abs(m / top_m * most - whole) > 0.05):
            continue
        num = sum(c * u[j] for c, j in zip(whole, labels))
        den = sum(c * z[j] for c, j in zip(whole, labels))
        if np.any(den == 0):
            continue
        if np.all(close(got, num / den[..., None])):
            return {j: int(c) for c, j in zip(whole, labels)}
    return None


def attended(family: Attended, coord: tuple, got: np.ndarray, close: Close,
             what: str) -> str | None:  # fmt: skip
    """One sentence where a group of the device's rows (``got``: its block) is exactly
    attention over another multiset of the blocks than the right one (:func:`weights`):
    each block counted otherwise, and how often it belongs. None where none is."""

    def times(m: int) -> str:
        return {1: "once", 2: "twice"}.get(m, f"{m} times")

    for group in family.groups(coord):
        found = weights(group, got[group.rows], close)
        if found is None and (other := _masks_otherwise(group)) is not None:
            found = weights(other, got[group.rows], close)  # a block under the other mask
        if found is None or all(found[j] == group.right.get(j, 0) for j in found):
            continue
        diffs = []
        for j in sorted(found, key=lambda j: (j, "") if isinstance(j, int) else j):
            f, r = found[j], group.right.get(j, 0)
            if isinstance(j, tuple):  # a block under the other mask
                if not f:
                    continue
                (b, how), belongs = j, group.right.get(j[0], 0)
                under = ("with the causal mask of the diagonal (each row sees the keys at or "
                         "before its own position)" if how == "masked"
                         else "whole, without the causal mask of the diagonal")  # fmt: skip
                diffs.append(f"{family.block} {b} {under} {times(f)}, "
                             + (f"which {family.hidden}" if not belongs else
                                f"where it belongs {'whole' if how == 'masked' else 'masked'}"))  # fmt: skip
                continue
            if f == r:
                continue
            if f == 0 and r and r == sum(c for k, c in found.items()
                                         if isinstance(k, tuple) and k[0] == j):  # fmt: skip
                continue  # there, under the other mask: said with it
            if r == 0:
                diffs.append(f"{family.block} {j} {times(f)}, which {family.hidden}")
            elif f == 0:
                diffs.append(f"no {family.block} {j}, where it belongs {times(r)}")
            else:
                diffs.append(f"{family.block} {j} counted {times(f)} (its keys weigh {f}× in "
                             f"the softmax), where it belongs {times(r)}")  # fmt: skip
        rows = f", in its rows of {group.what}," if group.what else ""
        moved = any(isinstance(j, tuple) and f for j, f in found.items())
        return (f"{what}{rows} is exactly softmax attention over other "
                f"{family.block}s than the right ones: {'; '.join(diffs)}; every other "
                f"{family.block} as it belongs"
                + (f" — a {family.block}'s mask chosen by another one's index: the index "
                   "the mask is computed from is not that of the block held" if moved else ""))  # fmt: skip
    return None


def _shifted(want: np.ndarray, k: int, axis: int) -> np.ndarray:
    """``want`` moved ``k`` (±1) places along ``axis``, the place left empty 0."""
    out = np.roll(want, k, axis=axis)
    edge = [slice(None)] * want.ndim
    edge[axis] = 0 if k > 0 else -1
    out[tuple(edge)] = 0
    return out


def _dimension(axis: int, ndim: int) -> str:
    """``dimension 0 (rows)``: a matrix's dimensions by their everyday names too."""
    names = {0: " (rows)", 1: " (columns)"} if ndim == 2 else {}
    return f"dimension {axis}{names.get(axis, '')}"


def reshaped(
    got: np.ndarray,
    want: np.ndarray,
    close: Close,
    sizes: Sequence[int],
    *,
    spec: str | None = None,
    split: Sequence[tuple[int, int]] = (),
    what: str = "your value",
) -> str | None:
    """A value of the wrong shape that holds the expected one exactly, rearranged, in
    one sentence (None where none of these holds on every element): its k blocks along
    one dimension placed along another (k one of ``sizes``, the mesh's axis sizes and
    their product), its dimensions transposed, the expected values in their order in
    another shape; k times the expected size: k copies of it, or k parts that add up to
    it; 1/k of it: one of its k blocks. ``spec``: the output's sharding, said where it
    splits (``split``: (axis, devices), as :func:`relations` takes) the dimension the
    blocks were placed along."""
    if got.shape == want.shape or max(got.size, want.size) > MAX_ELEMENTS or not want.size:
        return None
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)

    def equal(c: np.ndarray) -> bool:
        return c.shape == want.shape and bool(np.all(close(c, want)))

    ks = sorted({int(k) for k in sizes if k > 1})
    ndim = want.ndim
    shape = tuple(got.shape)
    if got.size == want.size and got.ndim == ndim:
        for a in range(ndim):
            for b in range(ndim):
                for k in ks:
                    if a == b or got.shape[a] % k:
                        continue
                    if equal(np.concatenate(np.split(got, k, axis=a), axis=b)):
                        where = (f" (your output's sharding {spec} splits {_dimension(a, ndim)})"
                                 if spec and any(x == a for x, _ in split) else "")  # fmt: skip
                        return (f"{what} of shape {shape} has its blocks along the wrong "
                                f"dimension: its {k} blocks along {_dimension(a, ndim)}, put "
                                f"together along {_dimension(b, ndim)} instead, are the "
                                "expected value exactly (each block is right, its place is "
                                f"not){where}")  # fmt: skip
        if ndim <= 4:
            for order in itertools.permutations(range(ndim)):
                if order != tuple(range(ndim)) and equal(got.transpose(order)):
                    return (f"{what} of shape {shape} is the expected value with its dimensions "
                            f"in another order: transposed to {order} it is exact")  # fmt: skip
    if got.size == want.size and equal(got.reshape(want.shape)):
        return (f"{what} of shape {shape} holds the expected values in their order: only its "
                f"shape differs (reshaped to {tuple(want.shape)} it is exact)")  # fmt: skip
    if got.ndim != ndim:
        return None
    for a in range(ndim):
        for k in ks:
            others = all(got.shape[j] == want.shape[j] for j in range(ndim) if j != a)
            if not others:
                continue
            if got.shape[a] == k * want.shape[a]:
                parts = np.split(got, k, axis=a)
                if all(equal(p) for p in parts):
                    return (f"{what} of shape {shape} is {k} copies of the expected value side "
                            f"by side along {_dimension(a, ndim)}: each of its {k} blocks is "
                            "the whole result")  # fmt: skip
                if equal(np.sum(parts, axis=0)):
                    return (f"{what} of shape {shape} is {k} blocks along "
                            f"{_dimension(a, ndim)} that add up to the expected value "
                            "exactly: partial sums, never added together")  # fmt: skip
            if want.shape[a] == k * got.shape[a]:
                for j, part in enumerate(np.split(want, k, axis=a)):
                    if bool(np.all(close(got, part))):
                        return (f"{what} of shape {shape} is exactly block {j} of the expected "
                                f"value's {k} blocks along {_dimension(a, ndim)}: one block "
                                f"where all {k} belong")  # fmt: skip
    return None


NARROW_MAX = {"float8_e4m3fn": 448.0, "float8_e5m2": 57344.0, "float16": 65504.0}
"""Largest finite value of each narrow float a cast may overflow (bfloat16 keeps
float32's range: no input overflows it)."""


def overflow(
    program: Any, inputs: Sequence[tuple[str, np.ndarray]], nonfinite: np.ndarray | None
) -> str | None:
    """The measured evidence that a narrow cast overflowed, in one sentence, or None: the
    program converts to a narrow float (read from its own dtypes) and an input holds a
    magnitude past that float's largest finite value; said more strongly when the
    non-finite elements (``nonfinite``, global) are exactly those of an input of the
    same shape past it."""
    dtypes = getattr(program, "dtypes", None) or {}
    for dtype, top in NARROW_MAX.items():
        if not dtypes.get(dtype):
            continue
        for name, x in inputs:
            if x.dtype.kind != "f" or not np.all(np.isfinite(x)) or x.size == 0:
                continue
            big = np.abs(x) > top
            if not big.any():
                continue
            if (
                nonfinite is not None
                and x.shape == nonfinite.shape
                and np.array_equal(big, nonfinite)
            ):
                return (
                    f"The non-finite values are exactly where {name} exceeds {top:g} in "
                    f"magnitude, and your program converts to {dtype}, whose largest finite "
                    f"value is {top:g}: the cast overflowed ({int(big.sum())} elements). Scale "
                    "the values into its range before the cast, and undo the scale after."
                )
            return (
                f"Your program converts to {dtype}, whose largest finite value is {top:g}, "
                f"and {name} holds magnitudes up to {float(np.abs(x).max()):.4g}: a value "
                "past the range becomes inf or NaN in that cast. Scale the values into its "
                "range before the cast, and undo the scale after."
            )
    return None


def assemble(
    pieces: Sequence[tuple[np.ndarray, tuple]], shape: tuple[int, ...]
) -> np.ndarray | None:
    """The global array the devices' pieces (data, index) make, or None where two
    devices hold different values for one element (or an element is held by none)."""
    out = np.zeros(shape, dtype=np.float64)
    seen = np.zeros(shape, dtype=bool)
    for data, index in pieces:
        data = np.asarray(data, dtype=np.float64)
        region, held = out[index], seen[index]
        if data.shape != region.shape:
            return None
        if held.any() and not np.array_equal(region[held], data[held], equal_nan=True):
            return None
        out[index] = data
        seen[index] = True
    return out if seen.all() else None
