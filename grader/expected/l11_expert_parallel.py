"""Mixture-of-experts routing and the MoE layer, in numpy float64: lesson 11's reference
(the grader's side, hidden from the student's process; the lesson's
:mod:`grader.lessons.l11_expert_parallel.routing` names these functions and imports
them when called, in the worker).

Written from the rules, not from the solution: every token's choices are
ranked one by one, and slots are handed out in a plain loop, so the
reference shares no code (and no bug) with a vectorised ``cumsum`` router.

Routing rules (SYLLABUS, L11). Token t's first choice is the expert with
the largest logit (ties: the lowest index); for top-2, its second choice is
the best of the others (ties: the lowest index). Slots are handed out in
GShard order: every first choice in token order, then every second choice;
an expert's slot counter counts every choice routed to it, kept or not, and
a choice whose slot is ≥ C is dropped. The gate is softmax(logits)[t, e],
never renormalised.

:func:`moe_layer` takes knobs that turn the reference into the wrong layers
a student typically writes (routing over all devices' tokens, ties to the
highest index, dropped tokens passed through, the gate before the expert,
the results never sent back): the grader names a mistake when the student's
output equals one of them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from grader.lessons.l11_expert_parallel.routing import LOWEST


@dataclass(frozen=True)
class Routing:
    """Where T tokens go: k choices each, with a slot; kept when slot < C."""

    choice: np.ndarray
    """int [T, k]: expert of each choice."""
    slot: np.ndarray
    """int [T, k]: slot at that expert, counted over every choice routed there."""
    capacity: int
    gates: np.ndarray
    """float64 [T, E]: softmax of the logits."""

    @property
    def kept(self) -> np.ndarray:
        """bool [T, k]."""
        return self.slot < self.capacity

    @property
    def n_experts(self) -> int:
        return self.gates.shape[1]

    def dispatch(self) -> np.ndarray:
        """bool [T, E, C]."""
        return place(self.choice, self.slot, self.n_experts, self.capacity)

    def combine(self) -> np.ndarray:
        """float64 [T, E, C]: the gate where dispatched, else 0."""
        return self.dispatch() * self.gates[:, :, None]

    def load(self) -> list[tuple[int, int]]:
        """Per expert: (choices routed there, choices kept)."""
        routed = np.bincount(self.choice.ravel(), minlength=self.n_experts)
        kept = np.bincount(self.choice[self.kept], minlength=self.n_experts)
        return [(int(r), int(k)) for r, k in zip(routed, kept)]


def place(choice: np.ndarray, slot: np.ndarray, n_experts: int, capacity: int) -> np.ndarray:
    """bool [T, E, C] with (t, choice[t, k], slot[t, k]) set where the slot is < C."""
    out = np.zeros((len(choice), n_experts, capacity), bool)
    for t, k in zip(*np.nonzero(slot < capacity)):
        out[t, choice[t, k], slot[t, k]] = True
    return out


def softmax(logits: np.ndarray) -> np.ndarray:
    z = np.asarray(logits, np.float64)
    z = np.exp(z - z.max(axis=-1, keepdims=True))
    return z / z.sum(axis=-1, keepdims=True)


def ranked(row: np.ndarray, ties: str = LOWEST) -> list[int]:
    """Experts from the largest logit down; equal logits in index order (or reversed)."""
    sign = 1 if ties == LOWEST else -1
    return sorted(range(len(row)), key=lambda e: (-float(row[e]), sign * e))


def route(logits: np.ndarray, capacity: int, k: int = 1, ties: str = LOWEST) -> Routing:
    """Top-k routing of ``logits: [T, E]`` with ``capacity`` slots per expert (GShard order)."""
    t_count, n_experts = logits.shape
    choice = np.array([ranked(row, ties)[:k] for row in logits], int).reshape(t_count, k)
    slot = np.zeros_like(choice)
    used = [0] * n_experts
    for rank in range(k):  # all first choices, then all second choices
        for t in range(t_count):
            e = choice[t, rank]
            slot[t, rank] = used[e]
            used[e] += 1
    return Routing(choice, slot, capacity, softmax(logits))


def expert(h: np.ndarray, w_in: np.ndarray, w_out: np.ndarray) -> np.ndarray:
    """One expert on rows h: tanh(h @ w_in) @ w_out, float64."""
    return np.tanh(h @ w_in) @ w_out


def moe_layer(
    x: np.ndarray,
    router_w: np.ndarray,
    w_in: np.ndarray,
    w_out: np.ndarray,
    groups: int,
    capacity: int,
    *,
    ties: str = LOWEST,
    gate: str = "after",
    dropped: str = "zero",
    returned: bool = True,
) -> np.ndarray:
    """The top-1 MoE layer, float64. ``x: [T, D]`` is cut into ``groups`` equal
    blocks of rows (one per device) and each block is routed on its own with
    ``capacity`` slots per expert. ``y[t]`` = gate · expert(x[t]) for kept
    tokens, 0 for dropped ones.

    Knobs for wrong variants: ``gate`` "before" (expert(gate·x)), "twice"
    (gate·expert(gate·x)) or "none";
    ``dropped`` "pass" (y = x); ``returned=False``: expert outputs stay on the
    expert's device, so token t on device i, in slot c of expert e, reads
    expert i's output for the token device e put in slot c of expert i.
    """
    x64, r64 = np.asarray(x, np.float64), np.asarray(router_w, np.float64)
    wi, wo = np.asarray(w_in, np.float64), np.asarray(w_out, np.float64)
    blocks = np.split(x64, groups)
    routings = [route(b @ r64, capacity, ties=ties) for b in blocks]
    sent = [_buffer(b, r) for b, r in zip(blocks, routings)]  # per device [E, C, D]
    out = []
    for i, (rows, routing) in enumerate(zip(blocks, routings)):
        y = np.zeros_like(rows)
        for t, (e, c) in enumerate(zip(routing.choice[:, 0], routing.slot[:, 0])):
            g = routing.gates[t, e]
            if c >= capacity:
                y[t] = rows[t] if dropped == "pass" else 0.0
            elif not returned:
                y[t] = g * expert(sent[e][i, c], wi[i], wo[i])
            elif gate == "before":
                y[t] = expert(g * rows[t], wi[e], wo[e])
            elif gate == "twice":
                y[t] = g * expert(g * rows[t], wi[e], wo[e])
            else:
                y[t] = (1.0 if gate == "none" else g) * expert(rows[t], wi[e], wo[e])
        out.append(y)
    return np.concatenate(out)


def _buffer(rows: np.ndarray, routing: Routing) -> np.ndarray:
    """[E, C, D]: the kept tokens in their slots, zeros elsewhere."""
    buf = np.zeros((routing.n_experts, routing.capacity, rows.shape[1]))
    for t in np.nonzero(routing.kept[:, 0])[0]:
        buf[routing.choice[t, 0], routing.slot[t, 0]] = rows[t]
    return buf
