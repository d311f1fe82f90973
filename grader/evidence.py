"""Typed evidence: everything a check or an explanation hands to the report.

Plain dataclasses (no jax, no rich). A :class:`grader.results.CheckResult`
carries a list of them as ``evidence``; an
:class:`grader.results.ExerciseResult` carries its explanation (report
material that is never a verdict) as a list of them too. ``grader/report.py``
draws each type with the renderer its ``RENDERERS`` table names for it, and
``to_dict`` writes each with its ``type`` name for ``course grade --json``
(schema: ``docs/grade-json.md``).

A new kind of picture is one dataclass here, decorated with
``@evidence("its_type_name")``, and one renderer in ``grader/report.py``.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from dataclasses import dataclass, field
from typing import Any, ClassVar

TYPES: dict[str, type[Evidence]] = {}
"""Type name (as written in JSON) → evidence class."""


class Evidence:
    """Base of every evidence type; ``type_name`` is set by :func:`evidence`."""

    type_name: ClassVar[str]


def evidence(name: str):
    """Register a dataclass as an evidence type under ``name``."""

    def register(cls: type[Evidence]) -> type[Evidence]:
        if name in TYPES:
            raise ValueError(f"evidence type {name!r} is registered twice")
        cls.type_name = name
        TYPES[name] = cls
        return cls

    return register


def to_dict(item: Evidence) -> dict[str, Any]:
    """One evidence item as JSON-ready data, its type name first."""
    return {"type": item.type_name, **dataclasses.asdict(item)}


def from_dict(data: dict[str, Any]) -> Evidence:
    """Inverse of :func:`to_dict`."""
    data = dict(data)
    cls = TYPES[data.pop("type")]
    return _build(cls, data)


def _build(cls: type, data: dict[str, Any]) -> Any:
    hints = typing.get_type_hints(cls)
    return cls(**{k: _value(hints[k], v) for k, v in data.items()})


def _value(hint: Any, value: Any) -> Any:
    """Rebuild nested dataclasses (``X``, ``X | None``, ``list[X]``) from JSON data."""
    if value is None:
        return None
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType) and len(args) == 1:
        return _value(args[0], value)
    if origin is list and args and dataclasses.is_dataclass(args[0]):
        return [_build(args[0], v) for v in value]
    if dataclasses.is_dataclass(hint):
        return _build(hint, value)
    return value


# ------------------------------------------------------------ values on devices


@dataclass
class DeviceShard:
    coord: list[int]
    """The device's position in the mesh."""
    ok: bool
    """Whether its shard matches the reference within tolerance."""
    max_abs: float | None = None
    """Largest absolute error on it (None when its shard has the wrong shape)."""


@dataclass
class Mismatch:
    """The first wrong element found, in device order."""

    coord: list[int]
    index: list[int]
    """Global index of the element."""
    expected: float
    actual: float
    expected_shard: list | None = None
    """The device's whole expected shard, when it is small enough to print."""
    actual_shard: list | None = None


@evidence("device_map")
@dataclass
class DeviceMap(Evidence):
    """Every device's shard against the reference: which are wrong, by how much."""

    mesh_shape: list[int]
    axis_names: list[str]
    devices: list[DeviceShard]
    max_abs_err: float
    max_rel_err: float
    atol: float
    rtol: float
    first_mismatch: Mismatch | None = None
    where: str | None = None
    """Where the wrong elements lie, in one sentence (:func:`grader.checks.relate.localise`)."""
    measured: list[str] | None = None
    """Relations that hold exactly between the values and the expected ones
    (:func:`grader.checks.relate.relations`); other leaves' too, for a pytree."""


@evidence("sharding")
@dataclass
class Sharding(Evidence):
    """The output's sharding, described, against the one the exercise promises."""

    expected: str
    actual: str


# ------------------------------------------------------------ communication


@dataclass
class CollectiveRow:
    """One collective kind in the compiled program, per device."""

    kind: str
    ops: int
    """Instructions of this kind in the HLO."""
    count: int | None
    """Executions, loop trip counts included (None: a loop of unknown trip count)."""
    bytes: int | None
    """Bytes sent per device over all executions (None when unknown)."""


@evidence("communication")
@dataclass
class Communication(Evidence):
    """The collectives measured in the compiled program (one table per trial)."""

    rows: list[CollectiveRow]
    allowed: list[str] | None = None
    """The kinds the exercise allows (the others are marked), or None when any is."""


@evidence("count")
@dataclass
class CountExpectation(Evidence):
    """How many times one collective kind should run, and how many it did."""

    kind: str
    expected: int
    actual: int | None


@evidence("bytes")
@dataclass
class BytesExpectation(Evidence):
    """Bytes each device should send, and what it did."""

    expected: int
    actual: int | None
    itemsize: int | None = None
    """The element width the bytes were counted at, when the check fixes one."""


# ------------------------------------------------------------ memory


@evidence("memory")
@dataclass
class Memory(Evidence):
    """Per-device bytes from the compiled program's memory analysis, against a bound."""

    argument: int | None
    output: int | None
    temp: int | None
    bound: int
    """The most temporary bytes the exercise allows."""


@dataclass
class Bar:
    """One labelled amount of bytes."""

    label: str
    bytes: int | None


@evidence("memory_bars")
@dataclass
class MemoryBars(Evidence):
    """One device's memory drawn as bars (arguments, temporaries, outputs) beside
    reference sizes such as the whole model and its 1/N share."""

    example: str
    bars: list[Bar]
    """What the compiled program holds per device, from its memory analysis."""
    marks: list[Bar]
    """Sizes to compare with, drawn dim: e.g. |params|, |params|/N."""
    bound: int | None = None
    """The most temporary bytes allowed, when this example checks them."""
    note: str = ""


# ------------------------------------------------------------ generic


@evidence("table")
@dataclass
class Table(Evidence):
    """A small table of what differs, e.g. per device: expected, yours (the last column)."""

    columns: list[str]
    rows: list[list[str]]


@evidence("note")
@dataclass
class Note(Evidence):
    """One sentence of report material, e.g. why an explanation could not be drawn."""

    text: str


@dataclass
class GroupedCollective:
    """One collective of a program and the devices it groups."""

    kind: str
    carries: str
    """Its result shape, as HLO prints it."""
    bytes: int | None
    """Sent per device over all executions; None if unknown."""
    group_of: list[int]
    """For each device, by position in the mesh (row-major), the index of its group."""
    axes: list[str]
    """The mesh axes its groups span."""


@evidence("replica_groups")
@dataclass
class ReplicaGroups(Evidence):
    """Which devices each collective of a program groups, drawn on the mesh."""

    example: str
    mesh_shape: list[int]
    axis_names: list[str]
    rows: list[GroupedCollective]


# ------------------------------------------------------------ schedules


@evidence("schedule_chart")
@dataclass
class ScheduleChart(Evidence):
    """A pipeline schedule drawn for the report: the student's beside the
    expected one, or (``expected`` None) the one schedule a measuring exercise
    was given. Grids are ``[stage][tick]`` of cells such as ``F3``, ``""`` idle."""

    title: str
    yours: list[list[str]]
    expected: list[list[str]] | None
    mark: list[int] | None = None
    """[tick, stage] of the first violation."""
    waits_for: list[int] | None = None
    """[tick, stage] of the op the marked one waits for."""
    note: str = ""
    """The violation, in words."""


@dataclass
class KindBytesRow:
    """One collective kind: bytes per device predicted, measured, and the reference's."""

    kind: str
    predicted: int | None
    """The student's ``predict_step_bytes``; None when it is not available."""
    measured: int | None
    """Measured in the student's compiled program; None when not measured (or unknown)."""
    reference: int | None


@evidence("kind_bytes")
@dataclass
class KindBytes(Evidence):
    """Bytes per collective kind of one training step: predicted against measured."""

    example: str
    rows: list[KindBytesRow]


# ------------------------------------------------------------ explanations


@evidence("timeline")
@dataclass
class Timeline(Evidence):
    """Ring steps of a program: per step and device, what it holds and where it sends."""

    n: int
    """Devices in the ring."""
    example: str
    rows: list[list[Any]] = field(default_factory=list)
    """``[step, cell for device 0, …, cell for device n − 1]``."""
    note: str = ""


RING_USE: dict[str, float] = {
    "whole": 1.0,
    "diagonal": 0.5,
    "masked": 0.0,
    "first key chunk": 0.5,
    "second query chunk": 0.5,
}
"""How much of a K/V block one ring-attention step uses → its share of a whole block's
scores: the causal diagonal is a triangle, a fully masked block is computed for
nothing, a zigzag step uses every query with the first key chunk (j < i) or the
second query chunk with every key (j > i)."""


@evidence("ring_steps")
@dataclass
class RingSteps(Evidence):
    """Ring attention: per step and device, the K/V block held and how much of it is used."""

    n: int
    """Devices in the ring."""
    example: str
    held: list[list[int]] = field(default_factory=list)
    """``held[s][i]``: the device whose K/V block device i holds at step s."""
    use: list[list[str]] = field(default_factory=list)
    """``use[s][i]``: a key of :data:`RING_USE`."""
    note: str = ""

    def work(self) -> list[float]:
        """Blocks' worth of useful scores per device over the whole ring."""
        return [sum(RING_USE[row[i]] for row in self.use) for i in range(self.n)]


@evidence("xla_comparison")
@dataclass
class XlaComparison(Evidence):
    """Bytes per device: the student's program, the optimum, and XLA's own partitioner."""

    example: str
    mesh: str
    shapes: str
    yours: int | None
    yours_kinds: list[str]
    optimum: int
    optimum_kinds: list[str]
    xla: int | None
    xla_kinds: list[str]


@evidence("expert_load")
@dataclass
class ExpertLoad(Evidence):
    """Mixture of experts: per expert, the tokens routed there, kept and dropped."""

    example: str
    capacity: int
    """Slots per expert in each routing group (each device routes its own tokens)."""
    groups: int
    """Routing groups: an expert keeps at most groups · capacity tokens."""
    routed: list[int]
    """Per expert: tokens (choices, for top-2) routed there."""
    kept: list[int]
    """Per expert: those that found a slot; routed − kept were dropped."""
