"""What the compiled program communicates, against what the exercise allows."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from grader.checks import diagnose
from grader.evidence import (
    BytesExpectation,
    CollectiveRow,
    Communication,
    CountExpectation,
    Table,
)
from grader.results import CheckResult
from grader.spec import Check, Example, Trial

PERMUTE = "collective-permute"

BUILTIN = {
    "all-gather": "lax.all_gather",
    "all-reduce": "lax.psum / lax.pmean",
    "reduce-scatter": "lax.psum_scatter",
    "all-to-all": "lax.all_to_all",
    "collective-permute": "lax.ppermute",
}


def communication(
    trial: Trial, itemsize: int | None = None, allowed: frozenset[str] | None = None
) -> Communication:
    """The collectives of the trial's compiled program, as report evidence."""
    rows = trial.comms.table(itemsize) if trial.comms is not None else []
    return Communication(
        [CollectiveRow(**r) for r in rows], sorted(allowed) if allowed is not None else None
    )


@dataclass(frozen=True)
class OnlyCollectives(Check):
    """No collective kinds outside ``allowed`` appear in the compiled program."""

    allowed: frozenset[str] = frozenset()
    name: str = "collectives"
    why: str = ""
    """Why the others are forbidden, for the hint."""
    advice: Callable[[str, Trial], str | None] | None = None
    """A hint for one forbidden kind found in this exercise, when the spec knows
    the mistake that usually puts it there."""

    def __call__(self, trial: Trial) -> CheckResult:
        used = trial.comms.kinds()
        extra = sorted(used - set(self.allowed))
        evidence = [communication(trial, allowed=self.allowed)]
        if not extra:
            used_txt = ", ".join(sorted(used)) or "no collectives"
            return CheckResult(self.name, True, f"uses {used_txt}", evidence=evidence)
        names = ", ".join(extra)
        calls = ", ".join(BUILTIN[k] for k in extra)
        allowed = ", ".join(sorted(self.allowed)) or "no collectives at all"
        specific = next((a for k in extra if self.advice and (a := self.advice(k, trial))), None)
        return CheckResult(
            self.name,
            False,
            f"the compiled program contains {names}; allowed: {allowed}",
            evidence=evidence,
            hint=specific
            or f"{names} comes from {calls} (or from the compiler resharding an array for you). "
            + (self.why or "Build the result from the allowed operations only."),
        )


@dataclass(frozen=True)
class Count(Check):
    """``kind`` runs exactly ``expected(example)`` times (loop trip counts included)."""

    kind: str = "collective-permute"
    expected: Callable[[Example], int] = lambda ex: 0
    ring_size: Callable[[Example], int] = lambda ex: 1
    name: str = "steps"
    what: str = "ring steps"
    hint: Callable[[Example, int, int], str | None] | None = None
    """(example, measured, expected) → the exercise's own diagnosis, tried before
    the generic one (which assumes a one-directional ring)."""

    def __call__(self, trial: Trial) -> CheckResult:
        want = self.expected(trial.example)
        got = trial.comms.count(self.kind)
        evidence = [communication(trial), CountExpectation(self.kind, want, got)]
        if got is None:
            return CheckResult(
                self.name,
                False,
                f"a {self.kind} sits in a loop whose trip count the compiler cannot know",
                evidence=evidence,
                hint="Loop a fixed number of times: a Python for-loop or lax.fori_loop with "
                "bounds known at trace time (lax.axis_size gives N as a Python int).",
            )
        if got == want:
            return CheckResult(
                self.name, True, f"{got} × {self.kind} ({self.what})", evidence=evidence
            )
        n = self.ring_size(trial.example)
        return CheckResult(
            self.name,
            False,
            f"{got} × {self.kind} executed; expected {want} ({self.what})",
            evidence=evidence,
            hint=(self.hint and self.hint(trial.example, got, want))
            or diagnose.steps(self.kind, got, want, n, _farthest(trial, n)),
        )


@dataclass(frozen=True)
class Bytes(Check):
    """Bytes each device sends equal the optimum ``expected(trial)``."""

    expected: Callable[[Trial], int] = lambda t: 0
    name: str = "bytes"
    what: str = "the ring optimum"
    unit: Callable[[Trial], int] | None = None
    """Bytes of one chunk, to say how far off the student is in chunks."""
    kinds: frozenset[str] = field(default_factory=frozenset)
    """Count only these kinds (all if empty)."""
    itemsize: Callable[[Trial], int] | None = None
    """Count elements at this width (see :meth:`grader.measure.hlo.Collective.total`)."""

    def __call__(self, trial: Trial) -> CheckResult:
        want = self.expected(trial)
        width = self.itemsize(trial) if self.itemsize else None
        per_kind = [trial.comms.bytes(k, width) for k in (self.kinds or trial.comms.kinds())]
        got = None if None in per_kind else sum(per_kind)
        evidence = [communication(trial, width), BytesExpectation(want, got, width)]
        if got is None:
            return CheckResult(
                self.name,
                False,
                "bytes unknown: a collective sits in a loop of unknown trip count",
                evidence=evidence,
            )
        counted = f" in {', '.join(sorted(self.kinds))}s" if self.kinds else ""
        if got == want:
            return CheckResult(
                self.name, True, f"{got:,} bytes sent per device{counted} = {self.what}",
                evidence=evidence,
            )  # fmt: skip
        ratio = got / want if want else float("inf")
        hint = None
        unit = self.unit(trial) if self.unit else None
        largest = trial.comms.largest(width)
        if unit and largest > unit:
            hint = (
                f"Each transfer carries {largest:,} bytes but one chunk is {unit:,}: you are "
                "sending whole arrays where one chunk per step is enough."
            )
        elif unit and got > want:
            hint = f"{(got - want) // unit} chunk(s) more than needed are sent."
        return CheckResult(
            self.name,
            False,
            f"{got:,} bytes sent per device{counted}; {self.what} is {want:,} ({ratio:.2f}×)"
            + (" (other kinds are not counted here)" if self.kinds else ""),
            evidence=evidence,
            hint=hint,
        )


@dataclass(frozen=True)
class LargestTransfer(Check):
    """No single collective moves more than ``bound(trial)`` bytes."""

    bound: Callable[[Trial], int] = lambda t: 0
    name: str = "transfer size"
    what: str = "one block"
    itemsize: Callable[[Trial], int] | None = None
    """Count elements at this width (see :meth:`grader.measure.hlo.Collective.total`)."""
    hint: str | None = None

    def __call__(self, trial: Trial) -> CheckResult:
        width = self.itemsize(trial) if self.itemsize else None
        bound, got = self.bound(trial), trial.comms.largest(width)
        evidence = [communication(trial, width)]
        if got <= bound:
            return CheckResult(
                self.name, True, f"largest transfer {got:,} bytes ≤ {self.what}", evidence=evidence
            )
        return CheckResult(
            self.name,
            False,
            f"a transfer of {got:,} bytes; at most {self.what} ({bound:,} bytes) is needed",
            evidence=evidence,
            hint=self.hint,
        )


PERMUTE = "collective-permute"


def links(src: int, dst: int, n: int) -> int:
    """Links a message from ``src`` to ``dst`` crosses on a ring of ``n``, the short way."""
    d = (dst - src) % n
    return min(d, n - d)


def _farthest(trial: Trial, n: int) -> int | None:
    """The most ring links any executed collective-permute's send crosses (None: no pairs
    were measured)."""
    hops = [links(a, b, n) for c in trial.comms.collectives
            if c.kind == PERMUTE and c.count for a, b in c.pairs]  # fmt: skip
    return max(hops) if hops else None


def _sends(pairs: tuple[tuple[int, int], ...], n: int) -> str:
    """``((0, 2), (1, 3), …)`` → ``i → i + 2``; mixed pairs are listed as they are."""
    shifts = {(b - a) % n for a, b in pairs}
    if len(shifts) == 1:
        (d,) = shifts
        return f"i → i {'+' if d <= n // 2 else '−'} {min(d, n - d)}"
    return ", ".join(f"{a}→{b}" for a, b in pairs)


@dataclass(frozen=True)
class RingHops(Check):
    """Every collective-permute sends to a ring neighbour (i → i ± 1 mod N): a
    send to i + s would cross s links of the ring, however few bytes it counts."""

    ring_size: Callable[[Example], int] = lambda ex: 1
    name: str = "ring"

    def __call__(self, trial: Trial) -> CheckResult:
        n = self.ring_size(trial.example)
        far = [
            (c, max(links(a, b, n) for a, b in c.pairs))
            for c in trial.comms.collectives
            if c.kind == PERMUTE and c.count and c.pairs
            and any(links(a, b, n) > 1 for a, b in c.pairs)
        ]  # fmt: skip
        if not far:
            return CheckResult(self.name, True, "every send goes to a ring neighbour (i ± 1)")
        rows = [[c.name, str(c.count), _sends(c.pairs, n), str(hops)] for c, hops in far]
        crossed = sorted({hops for _, hops in far})
        return CheckResult(
            self.name,
            False,
            f"{len(far)} permute(s) send past the neighbours, crossing "
            f"{', '.join(map(str, crossed))} links of the ring (N = {n})",
            evidence=[Table(["permute", "executions", "sends", "links crossed"], rows)],
            hint=_far_hint([c.pairs for c, _ in far], n),
        )


def _xor(pairs: tuple[tuple[int, int], ...]) -> int | None:
    """k where every pair is (i, i XOR k), k a power of two (a butterfly's exchange)."""
    ks = {a ^ b for a, b in pairs}
    if len(ks) != 1:
        return None
    (k,) = ks
    return k if k > 0 and k & (k - 1) == 0 else None


def _far_hint(far: list[tuple[tuple[int, int], ...]], n: int) -> str:
    """What the sends past the neighbours are, as measured: a butterfly's partners
    i XOR k, or the shift each permute sends by."""
    advice = ("Send to your neighbour (i + 1) at every step and forward the block you "
              "received last.")  # fmt: skip
    ks = [_xor(pairs) for pairs in far]
    butterfly = all(k is not None for k in ks)
    xors = ", ".join(f"i XOR {k}" for k in sorted(set(ks))) if butterfly else ""
    shifted = all(len({(b - a) % n for a, b in pairs}) == 1 for pairs in far)
    if butterfly and not shifted:
        return (f"Your permutes pair device i with {xors}: a butterfly (recursive doubling, "
                "partners i XOR 2^k). On a ring partner i XOR k sits up to k links away and "
                f"the exchanges of one round share those links. {advice}")  # fmt: skip
    shown = "; ".join(_sends(pairs, n) for pairs in far)
    also = f" (on N = {n} that is also {xors}, a butterfly's partner)" if butterfly else ""
    return (f"Your permutes send {shown}{also}: a message to device i + s crosses s links "
            f"of the ring, and the sends of one step share them. {advice}")  # fmt: skip


def streams(trial: Trial) -> dict[int, int]:
    """Ring direction → sends: +1 is i → i + 1, −1 is i → i − 1 (mod N);
    other shifts keep their offset. Permutes without pairs count under 0."""
    n = trial.example["n"]
    out: dict[int, int] = {}
    for c in trial.comms.collectives:
        if c.kind != PERMUTE or not c.count:
            continue
        shifts = {(dst - src) % n for src, dst in c.pairs} or {0}
        shift = shifts.pop() if len(shifts) == 1 else 0
        shift = shift - n if shift > n // 2 else shift
        out[shift] = out.get(shift, 0) + c.count
    return out
