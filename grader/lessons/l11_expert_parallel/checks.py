"""Checks for mixture-of-experts routing (lesson 11).

A router's output is two ``[T, E, C]`` tensors: ``dispatch`` (bool: token t
sits in slot c of expert e) and ``combine`` (its gate there). They are held
to :mod:`grader.lessons.l11_expert_parallel.routing`'s reference token by token, so a failure names
the first token routed differently and, where the pattern is a familiar
mistake (ties to the highest index, slots counted from 1, dropped tokens
squeezed into the last slot, second choices out of GShard order,
renormalised gates), says which.

The trial of a dispatch exercise carries ``output = (dispatch, combine)``,
``expected`` = the reference :class:`~grader.expected.l11_expert_parallel.Routing`, and
``extra['logits']`` (float64 copy of the logits the student got).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from grader.checks import variants
from grader.checks.comms import communication
from grader.evidence import CountExpectation, Table
from grader.lessons.l11_expert_parallel import routing as moe_routing
from grader.reference import training
from grader.results import CheckResult
from grader.spec import Check, Trial

ALL_TO_ALL = "all-to-all"
SHOW_TOKENS = 6
"""Wrong tokens (or combine entries) listed in a failure report."""


# ------------------------------------------------------------------ dispatch


def _places(dispatch_row: np.ndarray) -> str:
    """``[E, C]`` bools of one token → ``'expert 1 slot 0'``, ``'dropped'``, …"""
    spots = [f"expert {e} slot {c}" for e, c in zip(*np.nonzero(dispatch_row))]
    return ", ".join(spots) or "dropped"


def _logits_text(row: np.ndarray) -> str:
    return "[" + ", ".join(f"{v:g}" for v in row) + "]"


def dispatch_mistakes(logits: np.ndarray, capacity: int, k: int) -> list[tuple[str, np.ndarray]]:
    """Known wrong dispatch tensors for these logits, each with its diagnosis."""
    ref = moe_routing.route(logits, capacity, k)
    n_experts = logits.shape[1]
    place = moe_routing.place
    out = [
        (
            "Ties are broken toward the highest index: tokens whose largest logits are equal go "
            "to the last of those experts. The rule is the lowest index — jnp.argmax returns the "
            "first maximum; jnp.argsort(...)[:, -1] (ascending, stable) returns the last.",
            moe_routing.route(logits, capacity, k, ties=moe_routing.HIGHEST).dispatch(),
        ),
        (
            "Your slots start at 1: a token's slot must count the earlier tokens routed to the "
            "same expert, not itself — an exclusive cumsum (cumsum − one_hot). So the first "
            "token gets slot 0, and expert e keeps C tokens, not C − 1.",
            place(ref.choice, ref.slot + 1, n_experts, capacity),
        ),
        (
            "Tokens beyond the capacity are squeezed into the last slot instead of dropped: a "
            "token whose slot is ≥ C gets no slot at all (its dispatch row is all False). "
            "jax.nn.one_hot(slot, C) gives all zeros for slot ≥ C; clipping the slot does not.",
            place(ref.choice, np.minimum(ref.slot, capacity - 1), n_experts, capacity),
        ),
    ]
    if k == 1:
        backwards = moe_routing.route(logits[::-1], capacity, k).slot[::-1]
        out.append((
            "Your slots count the later tokens routed to the same expert, not the earlier "
            "ones: each expert keeps its last C tokens and drops its first. A token's slot is "
            "the number of tokens before it routed to that expert — an exclusive cumsum "
            "forward over the token axis (cumsum − one_hot), so the first C tokens are kept.",
            place(ref.choice, backwards, n_experts, capacity),
        ))  # fmt: skip
    if k == 2:
        interleaved = _token_order_slots(ref.choice, n_experts)
        own_count = ref.slot.copy()
        own_count[:, 1] = _token_order_slots(ref.choice[:, 1:], n_experts)[:, 0]
        out += [
            (
                "Your slots are handed out token by token (t's first choice, t's second, then "
                "t + 1's). GShard order fills every first choice before any second choice: a "
                "second choice's slot counts all first choices routed to that expert, then the "
                "earlier second choices.",
                place(ref.choice, interleaved, n_experts, capacity),
            ),
            (
                "Your second choices count their slots from 0, as if no first choice were there: "
                "they land on slots first choices already hold. Offset each second choice's slot "
                "by the number of first choices routed to that expert.",
                place(ref.choice, own_count, n_experts, capacity),
            ),
        ]
    return out


def _token_order_slots(choice: np.ndarray, n_experts: int) -> np.ndarray:
    """Slots handed out row by row, every choice of a token before the next token."""
    used, slot = [0] * n_experts, np.zeros_like(choice)
    for t, row in enumerate(choice):
        for k, e in enumerate(row):
            slot[t, k], used[e] = used[e], used[e] + 1
    return slot


@dataclass(frozen=True)
class Dispatch(Check):
    """``dispatch`` equals the reference exactly: every token in its expert and slot."""

    name: str = "dispatch"

    def __call__(self, trial: Trial) -> CheckResult:
        got = np.asarray(trial.output[0])
        routing: Any = trial.expected  # a Routing (grader.expected.l11_expert_parallel)
        want = routing.dispatch()
        logits = trial.extra["logits"]
        kept = int(routing.kept.sum())
        if np.array_equal(got, want):
            return CheckResult(
                self.name, True,
                f"every token in its expert and slot ({kept} kept, "
                f"{routing.kept.size - kept} dropped)",
            )  # fmt: skip
        wrong = [t for t in range(len(want)) if not np.array_equal(got[t], want[t])]
        t = wrong[0]
        table = Table(
            ["token", "logits", "expected", "yours"],
            [[str(i), _logits_text(logits[i]), _places(want[i]), _places(got[i])]
             for i in wrong[:SHOW_TOKENS]],
        )  # fmt: skip
        message = (
            f"{len(wrong)} of {len(want)} tokens routed differently; first, token {t} with "
            f"logits {_logits_text(logits[t])}: expected {_places(want[t])}, yours {_places(got[t])}"
        )
        k = routing.choice.shape[1]
        hint = next(
            (why for why, alt in dispatch_mistakes(logits, routing.capacity, k)
             if np.array_equal(got, alt)),
            None,
        ) or _dispatch_hint(got, k, logits)  # fmt: skip
        measured = []
        if hint is None:  # the router's own arguments changed (a capacity one off, say)
            hint, measured = variants.told(trial, lambda r: np.array_equal(got, r.dispatch()),
                                           "your dispatch")  # fmt: skip
        return CheckResult(self.name, False, message, evidence=[table, *measured], hint=hint)


def _dispatch_hint(got: np.ndarray, k: int, logits: np.ndarray) -> str | None:
    if not got.any():
        return (
            "Your dispatch holds no True at all: every token is dropped, in every expert and "
            "slot. A token sits at (its expert, its slot) for each of its kept choices."
        )
    twice = [t for t in range(len(got)) if np.any(got[t].sum(axis=1) > 1)]
    if twice and k == 1:  # top-1: one choice, marked in several slots of its expert
        t = twice[0]
        e = int(np.argmax(got[t].sum(axis=1)))
        slots = ", ".join(map(str, np.nonzero(got[t, e])[0]))
        every = all(got[u, int(np.argmax(got[u].sum(axis=1)))].all() for u in twice)
        return (
            f"{len(twice)} token(s) sit in several slots of one expert; first, token {t} in "
            f"expert {e} (slots {slots}). With one choice a token holds one True in its "
            "dispatch row, at (its expert, its slot)"
            + (": each such token holds every slot of its expert, which a kept mask [T, E] "
               "broadcast over the C slots gives; one-hot encode the slot "
               "(jax.nn.one_hot(slot, C))." if every else ".")
        )  # fmt: skip
    if twice:  # measured: one token's choices are one expert
        t = twice[0]
        e = int(np.argmax(got[t].sum(axis=1)))
        slots = ", ".join(map(str, np.nonzero(got[t, e])[0]))
        others = np.delete(logits[t], e)
        said = (
            f"{len(twice)} token(s) sit twice in one expert; first, token {t} in expert {e} "
            f"(slots {slots}): its second choice is its first expert again, where the second "
            "choice is the best of the other experts."
        )
        if all(np.all(np.delete(logits[u], np.argmax(got[u].sum(axis=1))) <= 0) for u in twice):
            said += (
                f" Every such token's other logits are ≤ 0 (token {t}'s: "
                f"{_logits_text(others)}): a first choice's logit replaced by 0 is still the "
                "largest there — leave it out with −inf."
            )
        return said
    per_token = got.sum(axis=(1, 2))
    if np.any(per_token > k):
        return (
            f"Some token sits in more than {k} slot(s): a token's dispatch row holds one True "
            f"per kept choice ({k} at most), at (its expert, its slot)."
        )
    if np.any(got.sum(axis=0) > 1):
        return (
            "Two tokens share one slot of an expert: each slot holds one token. A token's slot "
            "is the number of earlier tokens routed to the same expert (an exclusive cumsum "
            "over the token axis of the one-hot choices)."
        )
    return None


# ------------------------------------------------------------------ combine


BF16_COMBINE = 2.0**-6
"""atol for bfloat16 gates (≤ 1): four units of bfloat16's 2⁻⁸. Rounding a gate costs
at most 2⁻⁹; measured over 44 bfloat16 examples
(``tests/test_l11.py::test_bfloat16_gates_sit_well_inside_their_allowance``), the
solution's softmax computed in bfloat16 is off by up to 1.25·2⁻⁸, one computed in
float32 and then rounded by up to 0.49·2⁻⁸; a wrong gate is off by O(1)."""


def combine_tolerance(n_experts: int, dtype: str = "float32") -> float:
    """atol for gates (≤ 1): float32 softmax over E logits, same allowance as the
    training lessons' (:func:`grader.reference.training.tolerance`) with K = E;
    bfloat16 gates: :data:`BF16_COMBINE`."""
    if dtype == "bfloat16":
        return BF16_COMBINE
    return training.SAFETY * training.U32 * float(np.sqrt(max(n_experts, 1)))


def combine_mistakes(trial: Trial) -> list[tuple[str, np.ndarray]]:
    """Known wrong combine tensors, each with its diagnosis."""
    routing: Any = trial.expected  # a Routing (grader.expected.l11_expert_parallel)
    dispatch = routing.dispatch()
    out = [
        (
            "combine holds the raw logits: the gate is softmax(logits)[t, e] "
            "(jax.nn.softmax over the expert axis).",
            dispatch * trial.extra["logits"][:, :, None],
        ),
        (
            "combine is 1 where a token is dispatched: it should carry the gate, "
            "softmax(logits)[t, e], there.",
            dispatch.astype(np.float64),
        ),
        (
            "combine is nonzero where dispatch is False: mask the gates with dispatch "
            "(jnp.where(dispatch, gate, 0)) — dropped tokens and empty slots get 0.",
            np.broadcast_to(routing.gates[:, :, None], dispatch.shape),
        ),
    ]
    if routing.choice.shape[1] == 2:
        why = (
            "Your gates are renormalised over the token's choices (g / (g₁ + g₂)); this "
            "exercise keeps softmax(logits)[t, e] as it is, not renormalised."
        )
        combine = routing.combine()
        chosen = np.take_along_axis(routing.gates, routing.choice, axis=1).sum(axis=1)
        kept = combine.sum(axis=(1, 2))
        out += [
            (why, combine / chosen[:, None, None]),
            (why, combine / np.where(kept > 0, kept, 1.0)[:, None, None]),  # over kept ones
        ]
    return out


@dataclass(frozen=True)
class Combine(Check):
    """``combine`` equals softmax(logits) where dispatched, 0 elsewhere, within float32 rounding."""

    name: str = "combine"

    def __call__(self, trial: Trial) -> CheckResult:
        got = np.asarray(trial.output[1], np.float64)
        routing: Any = trial.expected  # a Routing (grader.expected.l11_expert_parallel)
        want = routing.combine()
        atol = combine_tolerance(routing.n_experts, trial.example.get("dtype", "float32"))
        err = np.where(np.isnan(got), np.inf, np.abs(got - want))
        if np.all(err <= atol):
            return CheckResult(self.name, True, f"gates within {atol:.1e} of softmax(logits)")
        bad = np.argwhere(err > atol)
        t, e, c = (int(i) for i in bad[0])
        table = Table(
            ["combine[t, e, c]", "expected", "yours"],
            [[str(tuple(map(int, i))), f"{want[tuple(i)]:.6g}", f"{got[tuple(i)]:.6g}"]
             for i in bad[:SHOW_TOKENS]],
        )  # fmt: skip
        message = (
            f"combine[{t}, {e}, {c}] is {got[t, e, c]:.6g}; expected {want[t, e, c]:.6g} "
            f"(allowed error {atol:.1e})"
        )

        def close(alt: np.ndarray) -> bool:
            return bool(np.all(np.abs(got - alt) <= atol))

        # every known cause that gives these values: where capacity kept one expert per
        # token, "all ones" and "renormalised over the kept gates" are the same tensor,
        # and naming one of them alone could name the wrong one
        causes = list(dict.fromkeys(why for why, alt in combine_mistakes(trial) if close(alt)))
        hint = (
            causes[0] if len(causes) == 1
            else "One of these (on this example they give the same values): "
            + " ".join(f"({i}) {why}" for i, why in enumerate(causes, 1))
            if causes else None
        )  # fmt: skip
        yours = np.asarray(trial.output[0])
        if (
            hint is None
            and yours.shape == want.shape
            and not np.array_equal(yours, routing.dispatch())
            and close(yours * routing.gates[:, :, None])
        ):
            hint = (
                "combine is the gate softmax(logits)[t, e] exactly where your dispatch is True: "
                "the gates are right, the routing is not — see the dispatch check."
            )
        measured: list = []
        if hint is None:  # what the reference gives on changed arguments, or formula
            hint, measured = variants.told(trial, lambda r: close(r.combine()), "your combine")
        return CheckResult(self.name, False, message, evidence=[table, *measured], hint=hint)


# ------------------------------------------------------------------ the layer's all-to-alls


@dataclass(frozen=True)
class AllToAllCount(Check):
    """Exactly two all-to-alls that move data at N > 1, none at N = 1."""

    n_devices: Callable[[Trial], int] = lambda t: 1
    name: str = "all-to-alls"

    def __call__(self, trial: Trial) -> CheckResult:
        n = self.n_devices(trial)
        want = 2 if n > 1 else 0
        moving = [c for c in trial.comms.collectives if c.kind == ALL_TO_ALL and c.moves_data]
        if any(c.count is None for c in moving):
            return CheckResult(
                self.name, False, "an all-to-all sits in a loop of unknown trip count",
                hint="Route every expert's tokens with one all-to-all of the whole [E, C, D] "
                "buffer: no loop is needed.",
            )  # fmt: skip
        got = sum(c.count for c in moving)
        evidence = [communication(trial), CountExpectation(ALL_TO_ALL, want, got)]
        if got == want:
            what = "there and back" if want else "one device: nothing to send"
            return CheckResult(self.name, True, f"{got} × all-to-all ({what})", evidence=evidence)
        return CheckResult(
            self.name, False, f"{got} × all-to-all executed; expected {want} (N = {n})",
            evidence=evidence, hint=_count_hint(got, want),
        )  # fmt: skip


def _count_hint(got: int, want: int) -> str | None:
    if want and got == 1:
        return (
            "Only one all-to-all: the tokens reach their experts, but the expert outputs never "
            "come back. Send them home with a second all-to-all of the [N, C, D] results, so "
            "row e of each device's buffer again holds its tokens' outputs from expert e."
        )
    if want and got == 0:
        return (
            "No all-to-all: each expert must receive exactly its tokens. Pack them into the "
            "[E, C, D] buffer and lax.all_to_all it over 'expert' (split_axis=0, concat_axis=0)."
        )
    if got > want:
        return (
            f"{got} all-to-alls: one per direction is enough. Send the whole [E, C, D] buffer "
            "at once (not one expert or one slot at a time), and the dispatch/combine tensors "
            "never need to travel — every device routes its own tokens."
        )
    return None
