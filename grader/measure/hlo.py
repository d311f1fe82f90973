"""Read what a compiled program communicates, from its HLO text.

``summarize(compiled.as_text())`` lists every collective with how many times
it runs (loop trip counts multiplied along the call graph) and how many bytes
each device sends for it under the ring model:

=====================  ==========================================
collective             bytes each device sends (group of G)
=====================  ==========================================
all-gather             (G-1) · |operand|      = (G-1)/G · |result|
reduce-scatter         (G-1)/G · |operand|
all-reduce             2 (G-1)/G · |operand|
all-to-all             (G-1)/G · |operand|
collective-permute     |operand|
=====================  ==========================================

Pure text parsing: no jax import, so it is testable on hand-written HLO. Text, not
a structure, because none serves (measured on jax 0.10.2 and 0.12): the compiled
program's ``runtime_executable().hlo_modules()`` gives instructions with names,
opcodes and operands only (shapes from 0.12 on, attributes such as replica groups
and trip counts on neither). Replica groups are read by :mod:`grader.measure.groups`.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from dataclasses import dataclass, field, replace

from grader.measure.groups import GroupsFormatError, parse_groups

KINDS = ("all-gather", "reduce-scatter", "all-reduce", "all-to-all", "collective-permute")

_DTYPE_BYTES = {
    "pred": 1, "s4": 1, "u4": 1, "s8": 1, "u8": 1, "s16": 2, "u16": 2, "s32": 4, "u32": 4,
    "s64": 8, "u64": 8, "f16": 2, "bf16": 2, "f32": 4, "f64": 8, "c64": 8, "c128": 16,
}  # fmt: skip
_ARRAY = re.compile(r"\b([a-z][a-z0-9]*)\[([0-9,]*)\]")
_HEADER = re.compile(r"^(ENTRY\s+)?%?([\w.\-]+)\s*\(.*\)\s*->\s*.*\{\s*$")
_INSTR = re.compile(r"^\s*(ROOT\s+)?%?([\w.\-]+)\s*=\s*(.*)$")
_CALLEES = re.compile(
    r"\b(calls|to_apply|body|condition|true_computation|false_computation)=%?([\w.\-]+)"
)
_COMMENT = re.compile(r"/\*.*?\*/")
_BRANCHES = re.compile(r"branch_computations=\{([^}]*)\}")


def shape_dims(shape: str) -> tuple[int, ...]:
    """The first array's dimensions of an HLO shape string: ``f32[16,64]{1,0}`` → (16, 64)."""
    m = re.search(r"\[([\d,]*)\]", shape or "")
    return tuple(int(d) for d in m.group(1).split(",") if d) if m else ()


def shape_elements(shape: str) -> int:
    """Elements of an HLO shape string (tuples add up)."""
    return sum(_count(dims) for dtype, dims in _ARRAY.findall(shape) if dtype != "token")


def _count(dims: str) -> int:
    n = 1
    for d in filter(None, dims.split(",")):
        n *= int(d)
    return n


def shape_bytes(shape: str) -> int:
    """Bytes of an HLO shape string; tuples add up their elements."""
    total = 0
    for dtype, dims in _ARRAY.findall(shape):
        if dtype.startswith("f8"):
            size = 1
        elif dtype in _DTYPE_BYTES:
            size = _DTYPE_BYTES[dtype]
        else:
            continue  # token[], opaque types carry no data
        total += _count(dims) * size
    return total


def _split_shape(rest: str) -> tuple[str, str]:
    """Split ``'f32[4]{0} add(%a, %b), …'`` into the shape and the remainder."""
    if rest.startswith("("):
        depth = 0
        for i, ch in enumerate(rest):
            depth += ch == "("
            depth -= ch == ")"
            if depth == 0:
                return rest[: i + 1], rest[i + 1 :].lstrip()
    shape, _, remainder = rest.partition(" ")
    return shape, remainder


def _operands(call: str) -> list[tuple[str | None, str]]:
    """``'op(f32[2] %a, %b), x=…'`` → [(inline shape or None, name), …]."""
    call = _COMMENT.sub("", call)  # XLA numbers long operand lists: /*index=5*/%x
    start = call.find("(")
    if start < 0:
        return []
    depth, end = 0, start
    for i in range(start, len(call)):
        depth += call[i] in "({["
        depth -= call[i] in ")}]"
        if depth == 0:
            end = i
            break
    inner = call[start + 1 : end]
    out, depth, token = [], 0, ""
    for ch in inner + ",":
        if ch == "," and depth == 0:
            token = token.strip()
            if token:
                name = token.split()[-1].lstrip("%")
                shape = token[: -len(token.split()[-1])].strip() or None
                out.append((shape, name))
            token = ""
            continue
        depth += ch in "({["
        depth -= ch in ")}]"
        token += ch
    return out


class HloFormatError(ValueError):
    """The HLO text has a form this reader does not know: a grader fault, never the student's."""

    def __init__(self, what: str) -> None:
        super().__init__(
            f"internal grader error, not your code: the grader cannot read {what} "
            "(please report it with your JAX version)"
        )


def _group_size(attrs: str, default: int) -> int:
    """Devices in one replica group, read by :func:`grader.measure.groups.parse_groups`
    from any form XLA prints (list, iota, mesh); absent or ``{}``: every device
    (``default``). Any other form raises :class:`HloFormatError`: a guessed group
    size would make byte counts silently wrong."""
    try:
        groups = parse_groups(_replica_groups(attrs), default)
    except GroupsFormatError as exc:
        raise HloFormatError(f"the replica groups of: {_excerpt(attrs)} ({exc})") from None
    return len(groups[0]) if groups else default


def _excerpt(attrs: str, width: int = 160) -> str:
    start = attrs.find("replica_groups=")
    return attrs[max(start, 0) : max(start, 0) + width]


@dataclass(frozen=True)
class Instruction:
    name: str
    shape: str
    opcode: str
    operands: tuple[tuple[str | None, str], ...]
    attrs: str


@dataclass(frozen=True)
class Collective:
    """One collective op of the program and what it costs each device."""

    kind: str
    """``all-gather``, ``reduce-scatter``, ``all-reduce``, ``all-to-all`` or ``collective-permute``."""
    name: str
    """The HLO instruction name, e.g. ``ppermute.9``."""
    shape: str
    """The result shape as HLO prints it."""
    operand_bytes: int
    operand_elements: int
    group_size: int
    """Devices taking part in one group (the ring length G)."""
    count: int | None
    """Times it runs per program execution; None if inside a loop of unknown trip count."""
    bytes_each: int
    """Bytes one device sends for one execution, ring model (see module doc)."""
    elements_each: int = 0
    """Elements one device sends for one execution, same model."""
    pairs: tuple[tuple[int, int], ...] = ()
    """``source_target_pairs`` of a collective-permute."""
    replica_groups: str = ""
    """The ``replica_groups`` attribute as HLO prints it (list, iota or mesh form);
    ``grader.checks.groups`` reads which devices each group holds."""

    @property
    def moves_data(self) -> bool:
        """False for a collective over a group of one device (or a permute of
        every device to itself): XLA keeps those on a 1-device mesh, and they move nothing."""
        if self.kind == "collective-permute":
            return not self.pairs or any(a != b for a, b in self.pairs)
        return self.group_size > 1

    def total(self, itemsize: int | None = None) -> int | None:
        """Bytes sent over all executions; at ``itemsize`` bytes per element if given.

        XLA:CPU widens bfloat16 collectives to float32, so a bf16 program
        shows f32 transfers there; counting elements at the program's own
        width gives what a GPU or TPU would send.
        """
        if self.count is None:
            return None
        each = self.bytes_each if itemsize is None else self.elements_each * itemsize
        return self.count * each

    def to_dict(self) -> dict:
        return {
            "kind": self.kind, "name": self.name, "shape": self.shape,
            "operand_bytes": self.operand_bytes, "operand_elements": self.operand_elements,
            "group_size": self.group_size, "count": self.count, "bytes_each": self.bytes_each,
            "elements_each": self.elements_each, "pairs": [list(p) for p in self.pairs],
        }  # fmt: skip


@dataclass
class CommSummary:
    """Every collective in a compiled program, with counts and bytes."""

    collectives: list[Collective] = field(default_factory=list)
    text: str = field(default="", repr=False, compare=False)
    """The HLO text it was read from (:func:`writes` reads it again for what it writes)."""

    def kinds(self) -> set[str]:
        return {c.kind for c in self.collectives if c.count != 0 and c.moves_data}

    def count(self, kind: str | None = None) -> int | None:
        """Executions of ``kind`` (all kinds if None); None if any count is unknown."""
        total = 0
        for c in self.collectives:
            if kind is None or c.kind == kind:
                if c.count is None:
                    return None
                total += c.count
        return total

    def bytes(self, kind: str | None = None, itemsize: int | None = None) -> int | None:
        """Bytes each device sends (see :meth:`Collective.total`); None if unknown."""
        total = 0
        for c in self.collectives:
            if kind is None or c.kind == kind:
                t = c.total(itemsize)
                if t is None:
                    return None
                total += t
        return total

    def largest(self, itemsize: int | None = None) -> int:
        """Bytes of the largest single collective: its operand or its result, whichever is larger.

        A collective that moves nothing (a group of one device: XLA keeps a harmless ``pmean``
        on a 1-device mesh) carries nothing, so it is not a transfer."""
        sizes = [
            max(c.operand_bytes, shape_bytes(c.shape))
            if itemsize is None
            else max(c.operand_elements, shape_elements(c.shape)) * itemsize
            for c in self.collectives
            if c.count != 0 and c.moves_data
        ]
        return max(sizes, default=0)

    def table(self, itemsize: int | None = None) -> list[dict]:
        """One row per kind: kind, ops, executions, bytes per device."""
        rows: dict[str, dict] = {}
        for c in self.collectives:
            row = rows.setdefault(c.kind, {"kind": c.kind, "ops": 0, "count": 0, "bytes": 0})
            row["ops"] += 1
            row["count"] = (
                None if row["count"] is None or c.count is None else row["count"] + c.count
            )
            tb = c.total(itemsize)
            row["bytes"] = None if row["bytes"] is None or tb is None else row["bytes"] + tb
        return [rows[k] for k in KINDS if k in rows]

    def to_dict(self) -> dict:
        return {"collectives": [c.to_dict() for c in self.collectives], "by_kind": self.table()}


def parse(text: str) -> tuple[dict[str, list[Instruction]], str | None]:
    """HLO text → ({computation: [instructions]}, entry computation name)."""
    comps: dict[str, list[Instruction]] = {}
    entry, current = None, None
    for line in text.splitlines():
        stripped = line.strip()
        if current is None:
            m = _HEADER.match(stripped)
            if m:
                current = m.group(2)
                comps[current] = []
                if m.group(1):
                    entry = current
            continue
        if stripped == "}":
            current = None
            continue
        m = _INSTR.match(line)
        if not m:
            continue
        shape, call = _split_shape(m.group(3))
        opcode = call.split("(", 1)[0].strip()
        comps[current].append(Instruction(m.group(2), shape, opcode, tuple(_operands(call)), call))
    return comps, entry


def _trip_count(attrs: str) -> int | None:
    m = re.search(r"backend_config=(\{.*\})\s*$", attrs)
    if m:
        try:
            cfg = json.loads(m.group(1))
            return int(cfg["known_trip_count"]["n"])
        except (ValueError, KeyError, TypeError):
            pass
    m = re.search(r'"known_trip_count":\{"n":"(\d+)"\}', attrs)
    return int(m.group(1)) if m else None


def _multiplicities(comps: dict[str, list[Instruction]], entry: str) -> dict[str, int | None]:
    """How many times each computation runs per execution (None = unknown)."""
    mult: dict[str, int | None] = defaultdict(int)
    mult[entry] = 1
    # Callers always precede callees in a DFS post-order reversed; compute
    # that order first so every caller is final before its callees are visited.
    order: list[str] = []
    seen: set[str] = set()

    def callees(comp: str) -> list[tuple[str, Instruction]]:
        out = []
        for ins in comps.get(comp, []):
            for _, callee in _CALLEES.findall(ins.attrs):
                out.append((callee, ins))
            for group in _BRANCHES.findall(ins.attrs):
                for callee in group.split(","):
                    out.append((callee.strip().lstrip("%"), ins))
        return out

    def visit(comp: str) -> None:
        seen.add(comp)
        for callee, _ in callees(comp):
            if callee in comps and callee not in seen:
                visit(callee)
        order.append(comp)

    visit(entry)
    for comp in reversed(order):
        m = mult[comp]
        for callee, ins in callees(comp):
            if callee not in comps:
                continue
            factor: int | None = 1
            if ins.opcode == "while" and re.search(
                rf"\bbody=%?{re.escape(callee)}(?![\w.\-])", ins.attrs
            ):
                factor = _trip_count(ins.attrs)
            elif ins.opcode == "while":  # the condition runs once more than the body
                trips = _trip_count(ins.attrs)
                factor = None if trips is None else trips + 1
            prev = mult[callee]
            if m is None or factor is None or prev is None:
                mult[callee] = None
            else:
                mult[callee] = prev + m * factor
    return dict(mult)


def summarize(text: str, num_devices: int = 1) -> CommSummary:
    """All collectives of a compiled program (``compiled.as_text()``)."""
    comps, entry = parse(text)
    if entry is None:
        return CommSummary()
    shapes = {ins.name: ins.shape for body in comps.values() for ins in body}
    mult = _multiplicities(comps, entry)
    found = []
    for comp, body in comps.items():
        if comp not in mult:
            continue  # unreachable from the entry
        for ins in body:
            kind = ins.opcode.removesuffix("-start")
            if kind not in KINDS:
                continue
            operand_shapes = [inline or shapes.get(name, "") for inline, name in ins.operands]
            operand_bytes = sum(map(shape_bytes, operand_shapes))
            operand_elements = sum(map(shape_elements, operand_shapes))
            if kind == "collective-permute":
                pairs = tuple(
                    (int(a), int(b))
                    for a, b in re.findall(
                        r"\{(\d+),(\d+)\}", _attr(ins.attrs, "source_target_pairs")
                    )
                )
                group = num_devices
            else:
                pairs = ()
                group = _group_size(ins.attrs, num_devices)
            found.append(
                _unless_idle(
                    Collective(
                        kind=kind,
                        name=ins.name,
                        shape=ins.shape,
                        operand_bytes=operand_bytes,
                        operand_elements=operand_elements,
                        group_size=group,
                        count=mult[comp],
                        bytes_each=_ring_share(kind, operand_bytes, group),
                        elements_each=_ring_share(kind, operand_elements, group),
                        pairs=pairs,
                        replica_groups=_replica_groups(ins.attrs),
                    )
                )
            )
    return CommSummary(found, text)


def _unless_idle(c: Collective) -> Collective:
    """A collective that moves nothing (see :attr:`Collective.moves_data`) sends 0 bytes."""
    return c if c.moves_data else replace(c, bytes_each=0, elements_each=0)


def _replica_groups(attrs: str) -> str:
    """The text of the ``replica_groups=`` attribute, up to the next attribute."""
    m = re.search(r"replica_groups=(.*?)(?=, [a-z_]+=|$)", attrs)
    return m.group(1).strip() if m else ""


def _attr(attrs: str, key: str) -> str:
    m = re.search(rf"{key}=(\{{(?:[^{{}}]|\{{[^{{}}]*\}})*\}})", attrs)
    return m.group(1) if m else ""


def _ring_share(kind: str, operand: int, group: int) -> int:
    """What one device sends for one execution, in the unit of ``operand``."""
    if kind == "collective-permute":
        return operand
    if group <= 1:
        return 0
    if kind == "all-gather":
        return (group - 1) * operand
    if kind == "all-reduce":
        return 2 * (group - 1) * operand // group
    return (group - 1) * operand // group  # reduce-scatter, all-to-all


# ------------------------------------------------------------------ writes


@dataclass(frozen=True)
class Write:
    """An instruction that writes a buffer of the size asked for (:func:`writes`)."""

    name: str
    opcode: str
    """The instruction's opcode, or a fusion's root's (``dynamic-update-slice``,
    ``copy``, ``concatenate``, ``select`` …; a root bitcast looked through)."""
    shape: str
    """The buffer's shape as HLO prints it."""
    written: str
    """The shape of what one execution writes: a dynamic-update-slice's (or scatter's)
    update, in place; the whole buffer for every other op."""
    count: int | None
    """Executions per run of the program; None inside a loop of unknown trip count."""

    @property
    def in_place(self) -> bool:
        return self.opcode in IN_PLACE

    @property
    def bytes_each(self) -> int:
        return shape_bytes(self.written)

    def total(self) -> int | None:
        return None if self.count is None else self.count * self.bytes_each


IN_PLACE = ("dynamic-update-slice", "scatter")
"""Ops that write into their operand's buffer: only the update is written."""
NOT_WRITES = frozenset({"parameter", "get-tuple-element", "tuple", "bitcast", "constant",
                        "while", "conditional", "call", "after-all", "copy-start",
                        "partition-id", "replica-id"})  # fmt: skip
"""Ops that write no new buffer of their own (views, control flow, their callees' writes)."""


def writes(text: str, dims: tuple[int, ...]) -> list[Write]:
    """Every instruction of a compiled program that writes a buffer of shape ``dims`` (any
    dtype and layout; dimensions of size 1 aside, which XLA drops or adds by bitcasts):
    copies, concatenates, selects, broadcasts (the whole buffer) and in-place updates
    (dynamic-update-slice, scatter: their update only), each with how many times it runs.
    Fusion bodies are the fusion's own work: a fusion is one write, named by its root.
    ``dims`` is what to look for: a KV cache's on one device, say, which a step should
    update, not rewrite."""
    want = _squeezed(dims)
    comps, entry = parse(text)
    if entry is None:
        return []
    mult = _multiplicities(comps, entry)
    shapes = {ins.name: ins.shape for body in comps.values() for ins in body}
    fused = {callee for body in comps.values() for ins in body if ins.opcode == "fusion"
             for key, callee in _CALLEES.findall(ins.attrs) if key == "calls"}  # fmt: skip
    fused |= {callee for body in comps.values() for ins in body
              for key, callee in _CALLEES.findall(ins.attrs) if key == "to_apply"
              and ins.opcode != "call"}  # fmt: skip
    marked = set(_ROOTS.findall(text))
    roots = {
        comp: next((i for i in body if i.name in marked), None) for comp, body in comps.items()
    }
    found = []
    for comp, body in comps.items():
        if comp not in mult or comp in fused:
            continue
        for ins in body:
            if ins.opcode in NOT_WRITES or ins.shape.startswith("("):
                continue
            if _squeezed(_dims_of(ins.shape)) != want:
                continue
            op, update = ins.opcode, ins
            if op == "fusion":
                callee = next((c for k, c in _CALLEES.findall(ins.attrs) if k == "calls"), "")
                update = _through_bitcasts(roots.get(callee), comps.get(callee, []))
                op = update.opcode if update is not None else "fusion"
            written = ins.shape
            if op in IN_PLACE and update is not None:
                # dynamic-update-slice(operand, update, …); scatter(operand, indices, updates)
                index = 1 if op == "dynamic-update-slice" else 2
                operands = update.operands
                if len(operands) > index:
                    inline, name = operands[index]
                    written = inline or shapes.get(name, ins.shape)
            found.append(Write(ins.name, op, ins.shape, written, mult[comp]))
    return found


def _squeezed(dims: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(d for d in dims if d != 1)


def _dims_of(shape: str) -> tuple[int, ...]:
    m = _ARRAY.search(shape)
    return tuple(int(d) for d in m.group(2).split(",") if d) if m else ()


_ROOTS = re.compile(r"^\s*ROOT\s+%?([\w.\-]+)\s*=", re.M)


def _through_bitcasts(ins: Instruction | None, body: list[Instruction]) -> Instruction | None:
    by_name = {i.name: i for i in body}
    while ins is not None and ins.opcode in ("bitcast", "reshape") and ins.operands:
        ins = by_name.get(ins.operands[0][1])
    return ins
