"""Which mesh axes a compiled program's collectives group devices along: the
groups check, its report evidence and the helpers lessons use.

The groups themselves are read by :mod:`grader.measure.groups` (every form XLA
prints: list, iota, mesh), the one reader the HLO reader uses too; a form it
does not know raises ``ValueError`` there: a reader that guesses would let a
wrong program pass.
"""

from __future__ import annotations

from dataclasses import dataclass

from grader.evidence import GroupedCollective, ReplicaGroups
from grader.measure.groups import Groups, parse_groups, spanned_axes
from grader.measure.hlo import Collective
from grader.results import CheckResult
from grader.spec import Check, Trial, format_example

__all__ = ["Groups", "GroupsWithin", "grouped", "parse_groups", "replica_groups",
           "show_groups", "spanned_axes"]  # fmt: skip


def show_groups(groups: Groups, limit: int = 4) -> str:
    """``((0, 1), (2, 3))`` → ``'{0,1} {2,3}'`` (at most ``limit`` groups shown)."""
    shown = " ".join("{" + ",".join(map(str, g)) + "}" for g in groups[:limit])
    return shown + (f" … ({len(groups)} groups)" if len(groups) > limit else "")


def grouped(trial: Trial) -> list[tuple[Collective, Groups]]:
    """Every collective of the trial that runs and moves data, with its groups
    (``ValueError`` for a form :func:`parse_groups` cannot read)."""
    size = trial.mesh.size
    return [
        (c, parse_groups(c.replica_groups, size))
        for c in trial.comms.collectives
        if c.count and c.moves_data and c.kind != "collective-permute"
    ]


def replica_groups(trial: Trial, collectives: list[tuple[Collective, Groups]]) -> ReplicaGroups:
    """Report evidence: each collective's groups, as a group index per mesh position."""
    mesh = trial.mesh
    shape, names = tuple(mesh.devices.shape), tuple(mesh.axis_names)
    rows = []
    for c, groups in collectives:
        group_of = [0] * mesh.size
        for index, group in enumerate(groups):
            for position in group:
                group_of[position] = index
        rows.append(GroupedCollective(c.kind, c.shape, c.total(), group_of,
                                      sorted(spanned_axes(groups, shape, names))))  # fmt: skip
    return ReplicaGroups(format_example(trial.example), list(shape), list(names), rows)


@dataclass(frozen=True)
class GroupsWithin(Check):
    """Every collective that moves data groups devices along ``axes`` only.

    For ``dp_tp_mlp`` on a mesh ``('data', 'model')``: the partial sums of
    y belong to one row of the mesh, so a collective whose group holds
    devices at two ``'data'`` coordinates sums (or moves) across batches.
    """

    axes: frozenset[str] = frozenset()
    name: str = "groups"
    hint: str = ""
    """What usually puts a collective across the other axes."""

    def __call__(self, trial: Trial) -> CheckResult:
        try:
            collectives = grouped(trial)
        except ValueError as exc:
            return CheckResult(
                self.name, False, str(exc),
                hint="The grader met a replica-group form it does not know; please report it "
                "with your JAX version.",
            )  # fmt: skip
        evidence = [replica_groups(trial, collectives)]
        shape, names = tuple(trial.mesh.devices.shape), tuple(trial.mesh.axis_names)
        within = " and ".join(f"'{a}'" for a in sorted(self.axes))
        for c, groups in collectives:
            across = sorted(spanned_axes(groups, shape, names) - self.axes)
            if across:
                return CheckResult(
                    self.name,
                    False,
                    f"{c.kind} groups devices {show_groups(groups)}, which spans "
                    f"{', '.join(repr(a) for a in across)}; collectives here must stay within "
                    f"{within} groups",
                    evidence=evidence,
                    hint=self.hint or None,
                )
        return CheckResult(
            self.name, True,
            f"every collective stays within {within} groups" if collectives else "no collectives",
            evidence=evidence,
        )  # fmt: skip
