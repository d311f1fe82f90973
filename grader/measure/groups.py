"""Which devices a collective groups together, from any form XLA prints, and the mesh
axes that spans: the one reader of replica groups (the HLO reader's group sizes, the
checks' groups and the StableHLO reader's axes all come from here).

=========  ======================================  ==============================
form       example                                 groups
=========  ======================================  ==============================
list       ``{{0,1,2},{3,4,5}}``                   as written; ``{}`` or absent =
                                                   one group of every device
iota       ``[3,2]<=[2,3]T(1,0)``                  iota(6) reshaped [2,3],
                                                   transposed (1,0), cut in rows
mesh       ``mesh['x'=2,'y'=3] {'y'}``             devices that differ only
(jax ≥     ``mesh['x'=4,'y'=2] {'x':(1)2}``        along the named axes; a sub-axis
0.11)                                              ``'x':(pre)size`` is the middle
                                                   factor of x split [pre, size, rest]
=========  ======================================  ==============================

The numbers are positions in the program's device assignment, which for a
``shard_map`` over a mesh is the mesh's devices in row-major order (measured
on jax 0.10: a mesh built from devices 5, 2, 7, 0, 1, 3 still prints
``{{0,1,2},{3,4,5}}`` for a psum over its second axis). Position k is
therefore mesh coordinate ``np.unravel_index(k, mesh shape)``. A form this
module does not know raises :class:`GroupsFormatError`: a reader that guesses
would let a wrong program pass, or count its bytes wrong.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

Groups = tuple[tuple[int, ...], ...]

_IOTA = re.compile(r"^\[(\d+),(\d+)\]<=\[([\d,]+)\](?:T\(([\d,]+)\))?$")
_MESH = re.compile(r"^mesh\[([^\]]*)\]\s*\{([^}]*)\}$")
_LIST = re.compile(r"^\{(\{[\d,\s]*\}(?:\s*,\s*\{[\d,\s]*\})*)\}$")
_MESH_AXIS = re.compile(r"^'([^']+)'=(\d+)$")
_GROUP_AXIS = re.compile(r"^'([^']+)'(?::\((\d+)\)(\d+))?$")


class GroupsFormatError(ValueError):
    """A form of replica groups this reader does not know."""


def parse_groups(text: str, n_devices: int) -> Groups:
    """The device positions of every group in a ``replica_groups`` attribute's text."""
    text = text.strip()
    if text in ("", "{}"):  # no groups printed: one group of every device
        return (tuple(range(n_devices)),)
    if m := _LIST.match(text):
        return tuple(
            tuple(int(i) for i in group.split(",") if i.strip())
            for group in re.findall(r"\{([\d,\s]*)\}", m.group(1))
        )
    if m := _IOTA.match(text):
        n_groups, size = int(m.group(1)), int(m.group(2))
        dims = [int(d) for d in m.group(3).split(",")]
        ids = np.arange(int(np.prod(dims))).reshape(dims)
        if m.group(4):
            order = [int(p) for p in m.group(4).split(",")]
            if sorted(order) != list(range(len(dims))):
                raise GroupsFormatError(f"replica_groups={text}: not a transpose of {dims}")
            ids = ids.transpose(order)
        if n_groups * size != ids.size:
            raise GroupsFormatError(f"replica_groups={text}: {n_groups}x{size} of {ids.size}")
        return tuple(tuple(int(i) for i in row) for row in ids.reshape(n_groups, size))
    if m := _MESH.match(text):
        return _mesh_groups(text, m.group(1), m.group(2))
    raise GroupsFormatError(
        f"replica_groups={text}: a form of replica groups this grader cannot read"
    )


def _mesh_groups(text: str, axes_text: str, inside_text: str) -> Groups:
    """Groups of the mesh form: devices (row-major over the printed mesh) that
    differ only along the named axes or sub-axes."""
    sizes: dict[str, int] = {}
    for item in filter(None, (t.strip() for t in axes_text.split(","))):
        m = _MESH_AXIS.match(item)
        if m is None or m.group(1) in sizes:
            raise GroupsFormatError(f"replica_groups={text}: cannot tell which axes group devices")
        sizes[m.group(1)] = int(m.group(2))
    named: dict[str, tuple[int, int] | None] = {}  # axis → (pre, size) of a sub-axis, or whole
    for item in filter(None, (t.strip() for t in inside_text.split(","))):
        m = _GROUP_AXIS.match(item)
        if m is None or m.group(1) not in sizes or m.group(1) in named:
            raise GroupsFormatError(f"replica_groups={text}: cannot tell which axes group devices")
        if m.group(2):
            pre, size = int(m.group(2)), int(m.group(3))
            if size < 1 or sizes[m.group(1)] % (pre * size):
                raise GroupsFormatError(f"replica_groups={text}: a sub-axis that does not fit")
            named[m.group(1)] = (pre, size)
        else:
            named[m.group(1)] = None
    factors: list[int] = []  # every axis split into factors, major to minor
    inner: list[int] = []  # the factors the groups span
    for name, n in sizes.items():
        part = named.get(name, False)
        if part is False:
            factors.append(n)
        elif part is None:
            inner.append(len(factors))
            factors.append(n)
        else:
            pre, size = part
            inner.append(len(factors) + 1)
            factors += [pre, size, n // (pre * size)]
    ids = np.arange(int(np.prod(factors))).reshape(factors)
    outer = [i for i in range(len(factors)) if i not in inner]
    size = int(np.prod([factors[i] for i in inner]))
    return tuple(
        tuple(int(i) for i in row) for row in ids.transpose(outer + inner).reshape(-1, size)
    )


def spanned_axes(groups: Groups, mesh_shape: Sequence[int], axis_names: Sequence[str]) -> set[str]:
    """The mesh axes along which some group's members differ (positions row-major)."""
    out: set[str] = set()
    total = int(np.prod(mesh_shape))
    for group in groups:
        if len(group) < 2:
            continue
        if not all(0 <= p < total for p in group):
            raise GroupsFormatError(f"a group {group} outside the mesh {tuple(axis_names)}")
        coords = np.array(np.unravel_index(list(group), tuple(mesh_shape))).T  # [members, axes]
        out |= {name for a, name in enumerate(axis_names) if len(set(coords[:, a])) > 1}
    return out
