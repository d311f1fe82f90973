"""Which devices each collective groups together, and which mesh axes that spans.

XLA prints a collective's ``replica_groups`` in one of three forms:

=========  ======================================  ==============================
form       example                                 groups
=========  ======================================  ==============================
list       ``{{0,1,2},{3,4,5}}``                   as written; ``{}`` = everyone
iota       ``[3,2]<=[2,3]T(1,0)``                  iota(6) reshaped [2,3],
                                                   transposed (1,0), cut in rows
mesh       ``mesh['x'=2,'y'=3] {'y'}``             devices that differ only
                                                   along the named axes
=========  ======================================  ==============================

The numbers are positions in the program's device assignment, which for a
``shard_map`` over a mesh is the mesh's devices in row-major order (measured
on jax 0.10: a mesh built from devices 5, 2, 7, 0, 1, 3 still prints
``{{0,1,2},{3,4,5}}`` for a psum over its second axis). Position k is
therefore mesh coordinate ``np.unravel_index(k, mesh shape)``. A form this
module does not know raises ``ValueError``: a reader that guesses would let
a wrong program pass.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from grader.evidence import GroupedCollective, ReplicaGroups
from grader.measure.hlo import Collective
from grader.results import CheckResult
from grader.spec import Check, Trial, format_example

Groups = tuple[tuple[int, ...], ...]

_IOTA = re.compile(r"^\[(\d+),(\d+)\]<=\[([\d,]+)\](?:T\(([\d,]+)\))?$")
_MESH = re.compile(r"^mesh\[([^\]]*)\]\s*\{([^}]*)\}$")


def parse_groups(text: str, n_devices: int) -> Groups:
    """The device positions of every group in a ``replica_groups`` attribute."""
    text = text.strip()
    if text in ("", "{}"):  # no groups printed: one group of every device
        return (tuple(range(n_devices)),)
    if text.startswith("{{") and text.endswith("}}"):
        return tuple(
            tuple(int(i) for i in group.split(",") if i.strip())
            for group in re.findall(r"\{([\d,\s]*)\}", text[1:-1])
        )
    if m := _IOTA.match(text):
        n_groups, size = int(m.group(1)), int(m.group(2))
        dims = [int(d) for d in m.group(3).split(",")]
        ids = np.arange(int(np.prod(dims))).reshape(dims)
        if m.group(4):
            ids = ids.transpose([int(p) for p in m.group(4).split(",")])
        return tuple(tuple(int(i) for i in row) for row in ids.reshape(n_groups, size))
    if m := _MESH.match(text):
        return _mesh_groups(text, m.group(1), m.group(2))
    raise ValueError(f"replica_groups={text}: a form of replica groups this grader cannot read")


def _mesh_groups(text: str, axes_text: str, inside_text: str) -> Groups:
    """Groups of the mesh form: devices (row-major over the printed mesh) that
    differ only along the named axes. Sub-axes (``'x':(1)2``) are refused."""
    axes = [tuple(a.split("=")) for a in filter(None, (t.strip() for t in axes_text.split(",")))]
    inside = [t.strip() for t in inside_text.split(",") if t.strip()]
    names = [a[0] for a in axes]
    if not all(len(a) == 2 and a[1].isdigit() for a in axes) or any(i not in names for i in inside):
        raise ValueError(f"replica_groups={text}: cannot tell which axes group devices")
    sizes = [int(a[1]) for a in axes]
    ids = np.arange(int(np.prod(sizes))).reshape(sizes)
    outer = [i for i, name in enumerate(names) if name not in inside]
    inner = [i for i, name in enumerate(names) if name in inside]
    size = int(np.prod([sizes[i] for i in inner]))
    return tuple(
        tuple(int(i) for i in row) for row in ids.transpose(outer + inner).reshape(-1, size)
    )


def spanned_axes(groups: Groups, mesh_shape: Sequence[int], axis_names: Sequence[str]) -> set[str]:
    """The mesh axes along which some group's members differ."""
    out: set[str] = set()
    for group in groups:
        if len(group) < 2:
            continue
        coords = np.array(np.unravel_index(list(group), tuple(mesh_shape))).T  # [members, axes]
        out |= {name for a, name in enumerate(axis_names) if len(set(coords[:, a])) > 1}
    return out


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
