"""Every device's shard of the output against the unsharded reference."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from grader.checks import diagnose, relate, variants
from grader.evidence import DeviceMap, DeviceShard, Mismatch, Note
from grader.results import CheckResult
from grader.spec import Check, Example, Trial

SHOW_LIMIT = 48
"""Shards of at most this many elements are shown whole in a failure report."""


def tolerance(dtype: str, reduce_size: int = 1) -> tuple[float, float]:
    """(atol as a fraction of max|expected|, rtol) for a result summed over ``reduce_size`` terms.

    float32 rounding grows like √K with the length K of a sum (JAX_NOTES:
    K = 2048 gives |diff| ≈ 1e-4 at |ref| ≈ 200); bfloat16 keeps 8 bits.
    """
    k = max(int(reduce_size), 1)
    if dtype == "bfloat16":
        return 8e-3 * k**0.5, 2e-2
    if dtype == "float16":
        return 2e-3 * k**0.5, 5e-3
    return 2e-6 * k**0.5, 1e-5


def within(a: Any, e: Any, atol: float, rtol: float) -> np.ndarray:
    """Per element: ``a`` within ``atol + rtol·|e|`` of ``e``, or equal to it. Where ``e``
    is not finite only an equal ``a`` is (``|a − inf| ≤ rtol·inf`` holds for every ``a``: an
    infinite expected value, or a changed formula's, would match anything)."""
    a, e = np.asarray(a, np.float64), np.asarray(e, np.float64)
    with np.errstate(invalid="ignore"):  # inf − inf
        near = np.isfinite(e) & (np.abs(a - e) <= atol + rtol * np.abs(e))
    return near | (a == e)


def as_numpy(x) -> np.ndarray:
    a = np.asarray(x)
    return a.astype(np.float64) if a.dtype.kind in "fcV" or a.dtype.name == "bfloat16" else a


def device_coords(mesh) -> dict[int, tuple[int, ...]]:
    """device id → its coordinate in the mesh."""
    return {d.id: tuple(int(i) for i in idx) for idx, d in np.ndenumerate(mesh.devices)}


@dataclass(frozen=True)
class Values(Check):
    """The output is a jax.Array of the right shape and dtype whose every shard
    matches the reference (``trial.expected``, a global numpy array)."""

    name: str = "values"
    reduce_size: Callable[[Example], int] = lambda ex: 1
    block_rows: Callable[[Example], int | None] = lambda ex: None
    """Rows of one block along dim 0, for results assembled from blocks."""
    alternatives: Callable[[Trial], list[tuple]] | None = None
    """Known wrong results as (hint, shard(coord, index) → the array that device
    would hold[, a relative tolerance of its own]): an output matching one of them on
    every device gets that hint."""
    atol: Callable[[Trial], float] | None = None
    """atol as a fraction of max|expected| with rtol 0, in place of :func:`tolerance`
    (training lessons derive theirs in :mod:`grader.reference.training`)."""
    rtol: Callable[[Trial], float] | None = None
    """rtol beside ``atol``'s fraction, for a result whose precision is relative to each
    element (a bfloat16 rounding of the right value is one step of that element)."""
    families: Callable[[Trial], list[relate.Family]] | None = None
    """What a device's block is made of, declared by the lesson: the first wrong device's
    block is read against each family (``family.said``) and the first that tells how it
    was made instead is said. For a matmul split over a ring, the block products it may
    be a sum of (:class:`relate.Products`); for attention split by rows, the key blocks
    its rows may attend to (:class:`relate.Attended`); lesson 11's layer, the expert each
    token went through."""
    quantities: Callable[[Trial], dict[str, float]] | None = None
    """The lesson's own quantities a stray factor may be, by name (a bias correction
    1/(1 − βᵗ), say), beside those every example has (:func:`relate.quantities`)."""
    ring: bool = False
    """The exercise's permutes form rings (lessons 2, 5, 10): a permute that sends to some
    devices only is said where the wrong values are zeros (:func:`_unreached`)."""
    units: Callable[[Trial], dict[int, list[relate.Unit]]] | None = None
    """The lesson's own blocks of the output, per axis, as (length, one, several): a
    shift of its elements is said in them first (lesson 9's micro-batch slots of ``rows``
    rows: ``(2, "one micro-batch slot", "micro-batch slots")``)."""

    def __call__(self, trial: Trial) -> CheckResult:
        import jax

        out, want = trial.output, np.asarray(trial.expected)
        if not isinstance(out, jax.Array):
            kind = type(out).__name__ if out is not None else "None"
            return CheckResult(
                self.name,
                False,
                f"returned {kind}; expected a jax.Array of shape {want.shape}",
                hint="Return the jax.Array itself (not a numpy array, list or tuple); "
                "np.asarray would copy it back to the host and drop its sharding.",
            )
        if out.shape != want.shape:
            return CheckResult(
                self.name, False, f"returned shape {out.shape}; expected {want.shape}",
                hint=self._reshaped(trial, out, want),
            )  # fmt: skip
        want_dtype = trial.extra.get("dtype", want.dtype.name)
        if out.dtype.name != want_dtype:
            return CheckResult(
                self.name,
                False,
                f"returned dtype {out.dtype.name}; expected {want_dtype}",
                hint=_widened(trial.program, out.dtype.name, want_dtype)
                or "Keep the input's dtype: a float32 constant (jnp.zeros without dtype=) or "
                "a Python float can promote bfloat16 to float32.",
            )
        atol, rtol = self._tolerance(trial, want)

        def close(a: np.ndarray, e: np.ndarray) -> bool:
            return a.shape == e.shape and bool(np.all(within(as_numpy(a), as_numpy(e), atol, rtol)))

        coords = device_coords(trial.mesh) if trial.mesh is not None else {}
        shards = sorted(
            out.addressable_shards, key=lambda s: coords.get(s.device.id, (s.device.id,))
        )
        actual = [np.asarray(s.data) for s in shards]
        expected = [want[s.index] for s in shards]
        devices, first, worst_abs, worst_rel = [], None, 0.0, 0.0
        masks: list[np.ndarray | None] = []  # per device: its wrong elements
        wrong_rows: set[int] = set()  # global indices along axis 0 where some device differs
        for s, a, e in zip(shards, actual, expected):
            coord = coords.get(s.device.id, (s.device.id,))
            if a.shape != e.shape:
                devices.append(DeviceShard(list(coord), False))
                masks.append(None)
                continue
            with np.errstate(invalid="ignore"):  # inf − inf
                err = np.abs(as_numpy(a) - as_numpy(e))
            err = np.where(np.isnan(err), np.inf, err)
            bad_here = ~within(as_numpy(a), as_numpy(e), atol, rtol)
            ok = not bool(np.any(bad_here))
            m = float(err.max()) if err.size else 0.0
            worst_abs = max(worst_abs, m)
            nonzero = np.abs(as_numpy(e)) > 0
            if np.any(nonzero):
                worst_rel = max(
                    worst_rel, float((err[nonzero] / np.abs(as_numpy(e))[nonzero]).max())
                )
            devices.append(DeviceShard(list(coord), ok, m))
            masks.append(bad_here)
            offset = [sl.start or 0 for sl in s.index] + [0] * (e.ndim - len(s.index))
            if not ok and e.ndim:
                off_rows = bad_here
                rows = np.nonzero(off_rows.reshape(len(e), -1).any(axis=1))[0]
                wrong_rows.update(int(offset[0] + r) for r in rows)
            if not ok and first is None:
                bad = np.argwhere(bad_here)[0]
                small = e.size <= SHOW_LIMIT  # small enough to print whole
                first = Mismatch(
                    coord=list(coord),
                    index=[int(o + b) for o, b in zip(offset, bad)],
                    expected=float(as_numpy(e)[tuple(bad)]),
                    actual=float(as_numpy(a)[tuple(bad)]),
                    expected_shard=as_numpy(e).tolist() if small else None,
                    actual_shard=as_numpy(a).tolist() if small else None,
                )
        mesh = trial.mesh
        evidence = (
            [
                DeviceMap(
                    mesh_shape=list(mesh.devices.shape),
                    axis_names=list(mesh.axis_names),
                    devices=devices,
                    max_abs_err=worst_abs,
                    max_rel_err=worst_rel,
                    atol=atol,
                    rtol=rtol,
                    first_mismatch=first,
                )  # fmt: skip
            ]
            if mesh is not None
            else []
        )  # without a mesh there is no map to draw
        if all(d.ok for d in devices):
            return CheckResult(
                self.name, True, "every device's shard matches the reference", evidence=evidence
            )
        n_bad = sum(not d.ok for d in devices)

        def matches(wrong: Callable[[tuple, tuple], Any], rtol: float = 0.0) -> bool:
            """Every device holds what this wrong program gives, within the check's own
            tolerance or, where the alternative names one, within ``rtol`` of its value (a
            loss one step on amplifies float32's rounding past the tolerance of the loss)."""
            held = [np.asarray(wrong(coords.get(s.device.id, (s.device.id,)), s.index))
                    for s in shards]  # fmt: skip
            return all(
                close(a, w) or (rtol > 0 and a.shape == w.shape
                                and bool(np.all(within(as_numpy(a), w, 0.0, rtol))))
                for a, w in zip(actual, held)
            )  # fmt: skip

        alternatives = self.alternatives(trial) if self.alternatives else []
        hint = next(
            (why for why, *match in alternatives if matches(*match)), None
        ) or diagnose.values(
            actual, expected, close, block=self.block_rows(trial.example), n_ring=len(shards)
        )
        where = (
            f" (first at global index {tuple(first.index)}: expected {first.expected:.6g}, got {first.actual:.6g})"
            if first
            else ""
        )
        try:  # report material: it never turns a verdict into a grader fault
            place, said = self._related(trial, out, want, shards, actual, masks, atol, rtol)
            if hint is not None and hint.startswith(diagnose.NON_FINITE):
                hint = self._non_finite(trial, out, want, shards, actual) or hint
        except Exception:  # an output relate cannot read (an odd dtype): nothing said
            place, said = None, []
        try:  # apart: a family it cannot solve leaves the relations above said
            pairs = self._paired(trial, shards, actual, masks, atol, rtol)
        except Exception:
            pairs = None
        said = [pairs, *said] if pairs else said
        changed = None
        if open_hint(hint) and (
            not any(map(relate.names, said))
            or _one_value(want, shards, masks)
            or isinstance(hint, Behaviour)  # several causes give it: the change may tell
        ):
            # (a factor or an offset named on one round value is a coincidence as often as
            # not: a change of the reference that gives the value goes first)
            try:  # report material, as above
                changed = self._changed(trial, shards, actual, atol, rtol)
            except Exception:
                changed = None
            said = [changed, *said] if changed else said
        if evidence:  # the map says where and what was measured
            evidence[0].where, evidence[0].measured = place, said or None
        elif place or said:
            evidence = [Note(f"where: {place}")] if place else []
            evidence += [Note(f"measured: {x}") for x in said]
        if self.ring and (own := _own_slot(trial, shards, actual, masks)):
            hint = own if hint is None or not hint.startswith(diagnose.NON_FINITE) else hint
            said = [s for s in said if not s.startswith("your value is exactly 0")]
        if unreached := _unreached(trial, shards, actual, masks, self.ring):
            hint = unreached if hint is None or not hint.startswith(diagnose.NON_FINITE) else hint
            said = [s for s in said if not s.startswith("your value is exactly 0")]
        if said:  # a relation measured: the hint where none names a cause
            # the blocks' pairing first, a changed argument, else one that names what it is
            # (an output that is its input, never updated, says more than any change)
            kept = next((x for x in said if x.endswith(relate.NEVER_UPDATED)), None)
            best = pairs or kept or changed or max(said, key=relate.names)
            first_said = f"{best[0].upper()}{best[1:]}."
            if (hint is None or hint.startswith(diagnose.STRAY_FACTOR)
                    or (changed and hint.startswith(diagnose.NON_FINITE))):  # fmt: skip
                hint = first_said
            elif hint.startswith(GENERIC) or (changed and isinstance(hint, Behaviour)):
                hint = f"{first_said} {hint}"
        return CheckResult(
            self.name,
            False,
            f"{n_bad} of {len(devices)} devices hold wrong values{where}"
            + row_summary(wrong_rows, want.shape[0] if want.ndim else 0),
            evidence=evidence,
            hint=hint,
        )

    def _paired(self, trial: Trial, shards, actual, masks, atol: float, rtol: float) -> str | None:
        """The first wrong device's block (of the first :data:`FAMILY_DEVICES`) that its
        ``families`` tell how it was made, in one sentence; None where the check has none
        or no family gives any of them exactly (a device with one wrong token of an
        expert layer says too little: the next may say it)."""
        if self.families is None:
            return None
        coords = device_coords(trial.mesh) if trial.mesh is not None else {}

        def close(a: np.ndarray, e: np.ndarray) -> np.ndarray:
            return within(a, e, atol, rtol)

        wrong = [(s, a) for s, a, m in zip(shards, actual, masks) if m is None or m.any()]
        if not wrong:
            return None
        families = list(self.families(trial))
        for s, a in wrong[:FAMILY_DEVICES]:
            coord = coords.get(s.device.id, (s.device.id,))
            for family in families:
                said = family.said(coord, as_numpy(a).astype(np.float64), close,
                                   f"device {coord}'s block")  # fmt: skip
                if said:
                    return said
        return None

    def _changed(self, trial: Trial, shards, actual, atol: float, rtol: float) -> str | None:
        """What the reference computes on changed arguments, where the output (this leaf of
        it) equals that on every element, to this check's tolerance
        (:mod:`grader.checks.variants`), in one sentence; else None."""
        want = np.asarray(trial.expected)
        if want.size > relate.MAX_ELEMENTS:
            return None
        got = relate.assemble([(a, s.index) for a, s in zip(actual, shards)], want.shape)
        if got is None:
            return None
        leaf = trial.extra.get("leaf")

        def equal(value: Any, to: np.ndarray) -> bool:
            other = variants.leaf_at(value, leaf)
            if other is None or np.shape(other) != to.shape:
                return False
            other = as_numpy(other).astype(np.float64)
            # the allowance is a fraction of the values compared: a change whose value is
            # 4,000× the right one (a residual added twice in 12 layers) is held to the
            # rounding of values that large, not of the right one's
            finite = np.abs(other[np.isfinite(other)])
            grown = float(np.max(finite, initial=0.0)) / scale if scale > 0 else 1.0
            tol = atol * max(1.0, grown)
            # a non-finite element equals the same non-finite value (a NaN another NaN)
            return bool(np.all(within(to, other, tol, rtol) | (np.isnan(to) & np.isnan(other))))

        right = as_numpy(want).astype(np.float64)
        scale = float(np.max(np.abs(right[np.isfinite(right)]), initial=0.0))

        later = variants.deferred(trial)
        if later is None or not equal(later.value(), as_numpy(want).astype(np.float64)):
            return None  # this check holds the output to another value than the deferred one
        siblings = self._siblings(trial, leaf)
        reduce_size = self.reduce_size(trial.example)

        def everywhere(value: Any) -> bool:  # this leaf, then every other one the student returned
            if not equal(value, got):
                return False
            for path, theirs, dtype in siblings:
                mine = variants.leaf_at(value, path)
                if mine is None or np.shape(mine) != theirs.shape:
                    return False
                mine = as_numpy(mine).astype(np.float64)
                frac, rel = tolerance(dtype, reduce_size)
                finite = np.abs(mine[np.isfinite(mine)])  # a NaN sets no scale
                bound = frac * max(float(np.max(finite, initial=0.0)), 1.0)
                close = within(theirs, mine, bound, rel)
                if not np.all(close | (np.isnan(theirs) & np.isnan(mine))):
                    return False
            return True

        # a change said of one leaf must give every leaf: where one leaf's search found
        # none, another leaf's would find none either (it holds the same leaves to it)
        searched = trial.extra.get("searched")
        if searched is not None and searched.get("none"):
            return None
        scaled = None if siblings else self._scaled(trial, leaf, got, want, atol, rtol)
        said = variants.said(trial, everywhere, f"your {leaf}" if leaf else "your value", scaled)
        if searched is not None and said is None:
            searched["none"] = True
        return said

    def _scaled(self, trial: Trial, leaf: str | None, got: np.ndarray, want: np.ndarray,
                atol: float, rtol: float) -> variants.Scaled:  # fmt: skip
        """The test :func:`variants.first_change_of` asks of a changed formula's value that
        the output does not equal: the name of the one constant the output is that value
        times, on every element to this check's tolerance, where it is one of the example's
        quantities (:func:`relate.quantities`, 1 and 0 not) and the value is no multiple of
        the expected one (then the factor alone says it); else None."""
        known = relate.quantities(
            trial.example, trial.mesh, [], self.quantities(trial) if self.quantities else None
        )  # fmt: skip
        want64 = as_numpy(want).astype(np.float64)

        def multiple(of: np.ndarray, target: np.ndarray) -> float | None:
            norm = float(np.sum(of * of))
            if not norm or not np.isfinite(norm) or np.count_nonzero(of) < 2:
                return None
            c = float(np.sum(of * target)) / norm
            fits = np.abs(target - c * of) <= atol + rtol * np.abs(c * of)
            return c if np.isfinite(c) and bool(np.all(fits)) else None

        def scaled(value: Any) -> str | None:
            other = variants.leaf_at(value, leaf)
            if other is None or np.shape(other) != got.shape:
                return None
            other = as_numpy(other).astype(np.float64)
            if not np.all(np.isfinite(other)) or multiple(other, want64) is not None:
                return None
            c = multiple(other, got)
            if c is None or abs(c - 1) <= 1e-6 or abs(c) <= 1e-12:
                return None
            q = next((k for k in known if abs(k.value - c) <= 1e-6 * abs(c)), None)
            return relate.also_equal(q, known).name if q is not None else None

        return scaled

    @staticmethod
    def _siblings(trial: Trial, leaf: str | None) -> list[tuple[str, np.ndarray, str]]:
        """The other leaves the student returned (:class:`grader.checks.trees.PerLeaf`),
        float64, that a change said of this leaf must give too (bfloat16 params alone
        cannot tell a few changes apart that the float32 moments can)."""
        out = []
        for path, theirs in (trial.extra.get("whole") or {}).items():
            if path == leaf:
                continue
            try:
                dtype = np.dtype(getattr(theirs, "dtype", np.float64)).name
                out.append((path, as_numpy(theirs).astype(np.float64), dtype))
            except Exception:  # a leaf not read as numbers: it cannot hold a change back
                continue
        return out

    def _tolerance(self, trial: Trial, want: np.ndarray) -> tuple[float, float]:
        """(atol, rtol) of this check on this trial's expected value."""
        if self.atol is not None:
            atol_frac, rtol = self.atol(trial), self.rtol(trial) if self.rtol else 0.0
        else:
            want_dtype = trial.extra.get("dtype", want.dtype.name)
            atol_frac, rtol = tolerance(want_dtype, self.reduce_size(trial.example))
        scale = float(np.max(np.abs(as_numpy(want)))) if want.size else 1.0
        return atol_frac * (scale if self.atol is not None else max(scale, 1.0)), rtol

    def _reshaped(self, trial: Trial, out, want) -> str | None:
        """A wrong shape holding the expected values rearranged (:func:`relate.reshaped`),
        to the check's tolerance, said as a hint; None where no such relation holds."""
        atol, rtol = self._tolerance(trial, want)
        want64 = as_numpy(want).astype(np.float64)
        try:  # report material: it never turns a verdict into a grader fault
            if not out.is_fully_addressable or out.size > relate.MAX_ELEMENTS:
                return None
            got = as_numpy(out).astype(np.float64)
            mesh = trial.mesh
            sizes = list(mesh.devices.shape) + [mesh.devices.size] if mesh is not None else []
            spec = getattr(out.sharding, "spec", None)
            said = relate.reshaped(
                got, want64, lambda a, e: within(a, e, atol, rtol), sizes,
                spec=str(spec) if spec is not None else None, split=_split(out, mesh),
            )  # fmt: skip
            if said is None:
                said = _another_leaf(trial, got, atol, rtol)
        except Exception:  # an output relate cannot read: nothing said
            return None
        return None if said is None else f"{said[0].upper()}{said[1:]}."

    def _non_finite(self, trial: Trial, out, want, shards, actual) -> str | None:
        """The NaN hint, where a measurement names the cause (issue 45 §5): a narrow cast
        that overflowed (:func:`relate.overflow`), else None (the list of causes stays)."""
        if trial.program is None or want.size > relate.MAX_ELEMENTS:
            return None
        got = relate.assemble([(a, s.index) for a, s in zip(actual, shards)], want.shape)
        nonfinite = None if got is None else ~np.isfinite(got)
        return relate.overflow(trial.program, _inputs(trial, want.shape), nonfinite)

    def _related(self, trial: Trial, out, want, shards, actual, masks, atol: float, rtol: float):
        """(where the wrong elements lie, the relations that hold) for a failing output
        (:mod:`grader.checks.relate`); (None, []) past its size bound."""
        if want.size > relate.MAX_ELEMENTS or any(m is None for m in masks):
            return None, []
        bad = np.zeros(want.shape, dtype=bool)
        for s, m in zip(shards, masks):
            bad[s.index] |= m
        place = relate.localise(bad)
        want64 = as_numpy(want).astype(np.float64)

        def close(a: np.ndarray, e: np.ndarray) -> np.ndarray:
            return within(a, e, atol, rtol)

        leaf = trial.extra.get("leaf")
        what = f"your {leaf}" if leaf else "your value"
        known = relate.quantities(
            trial.example, trial.mesh, [out.dtype.itemsize],
            self.quantities(trial) if self.quantities else None,
        )  # fmt: skip
        units = _units(trial, out, self.units(trial) if self.units else {})
        got = relate.assemble([(a, s.index) for a, s in zip(actual, shards)], want.shape)
        if got is None:  # devices disagree on a replicated element: per device, elementwise
            a = np.concatenate([as_numpy(x)[m] for x, m in zip(actual, masks)])
            e = np.concatenate([as_numpy(want[s.index])[m] for s, m in zip(shards, masks)])
            moved = _moved_on_devices(trial, shards, actual, masks, want, close, units)
            return place, moved or relate.relations(
                a, e, np.ones(a.shape, bool), close, known=known, what=what, places=False
            )
        return place, relate.relations(
            got, want64, bad, close, known=known, what=what,
            inputs=_inputs(trial, want.shape), others=trial.extra.get("other_leaves", ()),
            split=_split(out, trial.mesh), units=units,
        )  # fmt: skip


def _one_value(want, shards, masks) -> bool:
    """The wrong elements expect one round value between them (a counter, a loss scale:
    :func:`diagnose.round_number`), where a factor or an offset is as often a coincidence."""
    wrong = [as_numpy(want[s.index])[m] for s, m in zip(shards, masks) if m is not None]
    if not wrong:
        return False
    values = np.unique(np.concatenate([w.ravel() for w in wrong]))
    return values.size <= 1 and diagnose.round_number([values])


def _moved_on_devices(trial: Trial, shards, actual, masks, want, close, units=None) -> list[str]:
    """Where every wrong device's shard holds only expected values moved within it
    (:func:`relate.moves`), the first one's sentence, and whether the others moved theirs
    the same way."""
    coords = device_coords(trial.mesh) if trial.mesh is not None else {}
    found = []
    for s, a, m in zip(shards, actual, masks):
        if m is None or not m.any():
            continue
        one = relate.moves(as_numpy(a).astype(np.float64),
                           as_numpy(want[s.index]).astype(np.float64), m, close,
                           units=units)  # fmt: skip
        if one is None:
            return []
        found.append((coords.get(s.device.id, (s.device.id,)), one))
    if not found:
        return []
    (coord, first), others = found[0], len(found) - 1
    said = first.said(f"device {coord}'s shard")
    if not others:
        return [said]
    alike = len({one.how for _, one in found}) == 1
    how = "moved theirs the same way" if alike else "hold only expected values moved too"
    return [f"{said}; the other {others} wrong device(s) {how}"]


FAMILY_DEVICES = 4
"""Wrong devices whose blocks the families are asked about, in device order, at most."""

GENERIC = ("Only device(s)", "The output is all zeros")
"""Hints that name where, not why: a relation measured on the values goes first."""


Behaviour = diagnose.Behaviour
"""An alternative's hint (``Values(alternatives=…)``) that says what the output does
(the gradient came back unclipped), which several causes give: a change of the reference
that gives the output is still looked for, and said first."""


def _widened(program: Any, got: str, want: str) -> str | None:
    """Where the traced program never casts ``got`` back to ``want``: a matrix product whose
    result is ``got`` (``preferred_element_type``), or a cast of a ``want`` value to ``got``,
    read from the program, said as what made the wider result; None where the program
    casts back somewhere (the output is another value) or shows neither."""
    if program is None:
        return None
    computed = list(getattr(program, "computed", {}) or ())
    casts = [c for c in computed if c.op == "convert_element_type"]
    if any(c.source == got and c.dtype == want for c in casts):
        return None
    up = any(c.source == want and c.dtype == got for c in casts)
    wide = any(d.dtype == got for d in getattr(program, "dots", ()))
    if up and wide:
        return (f"Your program converts a {want} value to {got}, and a matrix product returns "
                f"{got} (a {got} operand promotes it, as does preferred_element_type); "
                f"nothing casts back to {want}: cast the result back (.astype(x.dtype)), or "
                f"compute in {got} only where the lesson asks for it.")  # fmt: skip
    if wide:
        return (f"A matrix product of your program returns {got} (preferred_element_type="
                f"jnp.{got}, say), and nothing casts it back to {want}: cast the result to "
                f"the inputs' dtype ({want}) before returning it, .astype(x.dtype).")  # fmt: skip
    if up:
        return (f"Your program converts a {want} value to {got} (an astype, or a {got} "
                f"array or constant beside it promotes it: jnp.zeros without dtype=) and "
                f"nothing casts back to {want}: whatever is computed from it stays {got}. "
                f"Cast the result back (.astype(x.dtype)), or compute in {got} only where the "
                "lesson asks for it.")  # fmt: skip
    return None


def _flat_places(mesh: Any) -> dict[int, int]:
    """Device id → its place in the mesh's flat order (a collective-permute's numbering)."""
    return {d.id: i for i, d in enumerate(mesh.devices.flat)}


def _own_slot(trial: Trial, shards, actual: list[np.ndarray], masks: list) -> str | None:
    """On a ring of N > 1 devices whose every device is wrong: where each device's wrong
    elements lie only in its own slot, block i of the N along axis 0 for device i, said so
    (with its values there, where they are 0): the block a ring never sends, the device's
    own, which the program writes apart from the loop. None otherwise."""
    mesh = trial.mesh
    if mesh is None or mesh.devices.ndim != 1 or mesh.devices.size < 2:
        return None
    n = mesh.devices.size
    order = _flat_places(mesh)
    zeros = True
    for s, a, m in zip(shards, actual, masks):
        if m is None or not m.any() or m.ndim == 0 or m.shape[0] % n:
            return None
        i, b = order.get(s.device.id), m.shape[0] // n
        rows = np.nonzero(m.reshape(m.shape[0], -1).any(axis=1))[0]
        if i is None or rows.min() < i * b or rows.max() >= (i + 1) * b:
            return None
        zeros = zeros and bool(np.all(as_numpy(a)[m] == 0))
    return ("On every device the wrong elements lie in its own slot only: device i's block i "
            f"of the N = {n} along axis 0, the slot of its own index"
            + (", and they are 0 there" if zeros else "")
            + ". A ring never sends a device its own block: it is written there apart from "
            "the loop, before the first step.")  # fmt: skip


def _unreached(trial: Trial, shards, actual: list[np.ndarray], masks: list,
               ring: bool) -> str | None:  # fmt: skip
    """Where a collective-permute of the program sends to some of the mesh's devices only
    and a device it leaves out holds wrong elements that are exactly 0: those devices,
    which ppermute gives zeros, and (``ring``) that a ring's pairs reach every device;
    None otherwise (a pipeline's first stage, sent nothing, with its values right)."""
    comms = trial.comms if trial.mesh is not None else None
    if comms is None:
        return None
    order = _flat_places(trial.mesh)
    zeros = {order.get(s.device.id): int(np.sum(as_numpy(a)[m] == 0))
             for s, a, m in zip(shards, actual, masks) if m is not None}  # fmt: skip
    n = trial.mesh.devices.size
    for c in comms.collectives:
        if c.kind != "collective-permute" or not c.count or not c.pairs:
            continue
        left = sorted(set(range(n)) - {b for _, b in c.pairs})
        if not left or len(left) == n or not any(zeros.get(d) for d in left):
            continue
        sends = ", ".join(f"{a} → {b}" for a, b in sorted(c.pairs))
        who = f"device {left[0]}" if len(left) == 1 else f"devices {', '.join(map(str, left))}"
        count = sum(zeros.values())
        if not ring and set(c.pairs) == {(i, i + 1) for i in range(n - 1)}:  # a pipeline's line
            return (f"Your collective-permute sends {sends}: device 0, where the line starts, "
                    "is sent nothing, and ppermute gives it zeros — your values are exactly 0 "
                    f"on {count} of the wrong elements, device 0's among them. The pairs are "
                    "the line's; the first stage's input is its own micro-batch (x), not what "
                    "the permute hands it.")  # fmt: skip
        return (f"Your collective-permute sends {sends}: nothing is sent to {who}, and "
                f"ppermute gives a device no pair sends to zeros — your values are exactly 0 "
                f"on {count} of the wrong elements"
                + (". A ring's pairs send to every device, the last one's to the first "
                   "((i + 1) mod N)." if ring else f", {who}'s among them."))  # fmt: skip
    return None


def _another_leaf(trial: Trial, got: np.ndarray, atol: float, rtol: float) -> str | None:
    """Of a pytree's leaf returned in a wrong shape: the other leaf whose expected value it
    is, to the check's tolerance (the shape alone is not said: two leaves of one shape are
    common), with whether that leaf holds this one's in turn (two leaves swapped)."""
    leaf, whole = trial.extra.get("leaf"), trial.extra.get("whole") or {}
    for name, w in trial.extra.get("expected_leaves") or []:
        if name == leaf or np.shape(w) != got.shape:
            continue
        w64 = np.asarray(w, dtype=np.float64)
        if not np.all(within(got, w64, atol, rtol)):
            continue
        back = whole.get(name)
        want = np.asarray(trial.expected, dtype=np.float64)
        swapped = (back is not None and np.shape(back) == want.shape
                   and getattr(back, "is_fully_addressable", True)
                   and bool(np.all(within(as_numpy(back).astype(np.float64), want, atol, rtol))))  # fmt: skip
        return (f"your {leaf} is exactly the expected {name}, on every element"
                + (f", and your {name} is the expected {leaf}: the two are swapped (an "
                   "unpacking, a return or a dict's keys in the other order)" if swapped
                   else ": the leaves are mixed up"))  # fmt: skip
    return None


def open_hint(hint: str | None) -> bool:
    """A hint that names no cause: none, a generic one, a behaviour several causes share,
    an unnamed factor, or the list of what can make a NaN. A measured relation or change
    may take its place (or go before it)."""
    return (hint is None or isinstance(hint, Behaviour)
            or hint.startswith((*GENERIC, diagnose.STRAY_FACTOR, diagnose.NON_FINITE)))  # fmt: skip


def _inputs(trial: Trial, shape: tuple[int, ...]) -> list[tuple[str, np.ndarray]]:
    """The program's arguments (each leaf, by path) as float64 numpy arrays: every one
    for the finiteness test, and none past the size bound."""
    import jax

    out = []
    for i, arg in enumerate(trial.inputs):
        for path, leaf in jax.tree_util.tree_flatten_with_path(arg)[0]:
            if isinstance(leaf, jax.Array) and leaf.is_deleted():
                continue
            if getattr(leaf, "size", relate.MAX_ELEMENTS + 1) > relate.MAX_ELEMENTS:
                continue
            if getattr(leaf, "dtype", None) is None or np.dtype(leaf.dtype).kind not in "fiuV":
                continue
            name = f"argument {i}{jax.tree_util.keystr(path)}"
            out.append((name, as_numpy(leaf).astype(np.float64)))
    return out


def _units(
    trial: Trial, out, declared: dict[int, list[relate.Unit]]
) -> dict[int, list[relate.Unit]]:
    """Per axis of ``out``, the lesson's ``declared`` blocks, then the blocks one device
    holds of each array of its rank split along that axis (the output first, then the
    arguments by path; one name a length): a shift of the output's elements is said in
    them too (a slot one device's block off)."""
    import jax

    arrays = [("the output", out)] + [
        (f"argument {i}{jax.tree_util.keystr(path)}", leaf)
        for i, arg in enumerate(trial.inputs)
        for path, leaf in jax.tree_util.tree_flatten_with_path(arg)[0]
        if isinstance(leaf, jax.Array) and not leaf.is_deleted()
    ]
    units: dict[int, list[relate.Unit]] = {axis: list(us) for axis, us in declared.items()}
    for whose, x in arrays:
        if x.ndim != out.ndim:
            continue
        for axis, n in _split(x, trial.mesh):
            length = x.shape[axis] // n
            if all(length != seen[0] for seen in units.get(axis, [])):
                units.setdefault(axis, []).append((length, whose))
    return units


def _split(out, mesh) -> list[tuple[int, int]]:
    """(axis, devices) for each axis of ``out`` its NamedSharding splits."""
    spec = getattr(out.sharding, "spec", None)
    if spec is None or mesh is None:
        return []
    sizes = dict(zip(mesh.axis_names, mesh.devices.shape))
    split = []
    for axis, entry in enumerate(spec):
        names = (entry,) if isinstance(entry, str) else tuple(entry or ())
        n = int(np.prod([sizes.get(a, 1) for a in names])) if names else 1
        if n > 1:
            split.append((axis, n))
    return split


SHOW_RANGES = 6
"""Runs of wrong rows listed in a failure message."""


def row_summary(rows: set[int], total: int) -> str:
    """``'; wrong along axis 0: rows 0–3, 8 of 24'`` (what was measured, where); '' when
    every row (or there is no axis 0) is wrong — the device count says it then."""
    if not rows or total <= 1 or len(rows) == total:
        return ""
    runs: list[list[int]] = []
    for r in sorted(rows):
        if runs and r == runs[-1][1] + 1:
            runs[-1][1] = r
        else:
            runs.append([r, r])
    shown = ", ".join(f"{a}" if a == b else f"{a}–{b}" for a, b in runs[:SHOW_RANGES])
    more = f", … ({len(runs) - SHOW_RANGES} more runs)" if len(runs) > SHOW_RANGES else ""
    return f"; wrong along axis 0: {len(rows)} of {total} rows ({shown}{more})"


@dataclass(frozen=True)
class InputsUntouched(Check):
    """The function neither modified nor deleted (donated) its inputs."""

    name: str = "inputs"

    def __call__(self, trial: Trial) -> CheckResult:
        if trial.inputs_intact is None:
            return CheckResult(self.name, True, "inputs left untouched")
        return CheckResult(
            self.name,
            False,
            trial.inputs_intact,
            hint="Treat inputs as read-only: copy before changing a numpy array, and do not "
            "donate arguments (donate_argnums) you were handed.",
        )
