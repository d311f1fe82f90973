"""Lesson 13's grader side (hidden from the student's process: :mod:`grader.expected`):
``allreduce_time``'s model and the mistakes it knows, and the rows ``loader_indices``
must give."""

from __future__ import annotations

import numpy as np

from grader.checks.terms import Sum, Term


def loader_rows(step: int, batch: int, size: int) -> np.ndarray:
    """The single-process batch of step ``step``: rows s·B … s·B + B − 1, wrapping
    around a dataset of ``size`` rows (process i loads its B/P of them, in order)."""
    return (step * batch + np.arange(batch)) % size


def ring_time(nbytes: float, hosts: int, local: int, ici: float, dcn: float, hierarchical: str) -> float:  # fmt: skip
    """``allreduce_time``'s answer: the grader's own model (see the exercise's docstring)."""
    n = hosts * local
    if hierarchical == "no":
        return 0.0 if n == 1 else 2 * (n - 1) / n * nbytes / (dcn if hosts > 1 else ici)
    return 2 * (local - 1) / local * nbytes / ici + 2 * (hosts - 1) / hosts * nbytes / local / dcn


def time_terms(nbytes: float, hosts: int, local: int, ici: float, dcn: float, hierarchical: str) -> Sum | Term | None:  # fmt: skip
    """:func:`ring_time` as named terms (:mod:`grader.checks.terms`): the all-reduce within
    the hosts and the one across them, or the flat ring's one term."""
    n = hosts * local
    if hierarchical == "no":
        if n == 1:
            return None
        link = "dcn" if hosts > 1 else "ici"
        return Term(f"ring, 2(N−1)/N·n/{link}", ring_time(nbytes, hosts, local, ici, dcn, "no"))
    return Sum(Term("in-host, 2(L−1)/L·n/ici", 2 * (local - 1) / local * nbytes / ici),
               Term("cross-host, 2(H−1)/H·(n/L)/dcn",
                    2 * (hosts - 1) / hosts * nbytes / local / dcn))  # fmt: skip


def time_quantities(nbytes: float, hosts: int, local: int, **_: object) -> dict[str, float]:
    """The cluster's device count N = H·L, beside the example's own fields; and the one
    over the other, L/H (a part per host, n/H, where the part per device after the
    in-host reduce-scatter, n/L, belongs)."""
    out = {f"N = hosts·local ({hosts * local})": float(hosts * local)}
    if hosts > 1 and local > 1 and hosts != local:
        out[f"L/H = local/hosts ({local}/{hosts})"] = local / hosts
    return out


TWO_PHASES = ("An all-reduce is a reduce-scatter then an all-gather, each moving (N−1)/N of "
              "the bytes per device: 2(N−1)/N in all, not (N−1)/N.")  # fmt: skip
OWN_PART = ("Each device already holds its own 1/N of the data: a ring all-reduce moves "
            "2(N−1)/N·nbytes per device, not 2·nbytes.")  # fmt: skip


def time_suspects(nbytes: float, hosts: int, local: int, ici: float, dcn: float, hier: bool) -> list:  # fmt: skip
    if not hier:
        n = hosts * local
        if n == 1:
            return []
        link = dcn if hosts > 1 else ici
        out = [((n - 1) / n * nbytes / link, TWO_PHASES), (2 * nbytes / link, OWN_PART)]
        if hosts > 1:
            out.append((2 * (n - 1) / n * nbytes / ici,
                        "A flat ring across hosts runs at its slowest link: dcn, not ici."))  # fmt: skip
        return out
    within = 2 * (local - 1) / local * nbytes / ici
    across = 2 * (hosts - 1) / hosts * nbytes / local / dcn
    return [
        (within + 2 * (hosts - 1) / hosts * nbytes / dcn,
         "The all-reduce across hosts moves only nbytes/local: each device sends its 1/local part."),
        (within + 2 * (hosts - 1) / hosts * nbytes / local / ici,
         "The step across hosts runs over dcn."),
        (within / 2 + across, "Within hosts a reduce-scatter and an all-gather run, each "
         "(local−1)/local·nbytes over ici: 2(local−1)/local in all."),
        (within + across / 2, "The all-reduce across hosts is a reduce-scatter and an all-gather "
         "of nbytes/local, each (hosts−1)/hosts of it: 2(hosts−1)/hosts·nbytes/local over dcn."),
    ]  # fmt: skip
