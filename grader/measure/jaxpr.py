"""Read the traced program (jaxpr) of a student's function.

The compiled HLO is the source of truth for verdicts on communication (see
:mod:`grader.measure.hlo`), but it has lost what the student wrote: bfloat16
collectives are widened to float32 on CPU, loops are renamed and fused, and
a Python loop is indistinguishable from its unrolled copies. The jaxpr keeps
all of that, so hints and structural checks read it:

- which primitives appear (``Program.primitives``) and which dtypes the
  program computes in (``Program.dtypes``: a bfloat16 cast inside a float32
  exercise shows there),
- every collective with the dtype it sends and the loops around it
  (``Program.collectives``; ``Site.loops``, innermost last),
- every loop with its length (``scan``; a ``fori_loop`` with static bounds
  is a scan too) or ``None`` (``while``), and what runs inside it
  (``Program.loops``),
- the float dtype, size and place of a few arithmetic operations
  (``Program.computed``, the names in :data:`TRACKED`): a softmax whose running
  sum is rounded to bfloat16 shows there as a ``convert_element_type`` of a
  statistics-sized array inside the loop.

jax 0.10 names (measured): ``lax.psum`` traces to ``psum_invariant`` when
its result is invariant, ``lax.pcast(..., to='varying')`` to ``pvary``; a
gradient's implicit psum (the transpose of ``pvary``) is ``psum_invariant``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

COLLECTIVES: dict[str, str] = {
    "psum": "all-reduce",
    "psum_invariant": "all-reduce",
    "unreduced_psum": "all-reduce",
    "pmax": "all-reduce",
    "pmin": "all-reduce",
    "all_gather": "all-gather",
    "all_gather_invariant": "all-gather",
    "reduce_scatter": "reduce-scatter",
    "unreduced_reduce_scatter": "reduce-scatter",
    "ppermute": "collective-permute",
    "all_to_all": "all-to-all",
    "ragged_all_to_all": "all-to-all",
    "pbroadcast": "collective-broadcast",
}
"""jaxpr primitive → the HLO collective it compiles to."""

LOOPS = ("scan", "while")

UNCHECKED = "shard_map(check_vma=False)"
"""A pseudo primitive in ``Program.counts``: one per ``shard_map`` traced with
``check_vma=False`` (its ``lax.psum`` then traces to ``psum``, not ``psum_invariant``)."""


@dataclass(frozen=True)
class Loop:
    """One loop of the program: ``scan`` (length known) or ``while`` (length None)."""

    primitive: str
    length: int | None
    depth: int = 0
    """Loops around this one."""
    inside: Counter = field(default_factory=Counter, compare=False, hash=False)
    """Primitive name → equations in the body, nested loops included (not × trip count)."""

    def contains(self, primitive: str) -> bool:
        return self.inside[primitive] > 0


@dataclass(frozen=True)
class Site:
    """One collective equation, where it sits and what it sends."""

    primitive: str
    loops: tuple[Loop, ...]
    """Enclosing loops, outermost first."""
    dtypes: tuple[str, ...]
    """dtype of each operand, as the student's program sends it."""
    shapes: tuple[tuple[int, ...], ...]
    axes: tuple[str, ...]
    """Mesh axes it communicates over."""

    @property
    def kind(self) -> str:
        """The HLO collective kind (``all-reduce`` …)."""
        return COLLECTIVES[self.primitive]

    @property
    def in_loop(self) -> bool:
        return bool(self.loops)


TRACKED = frozenset({
    "exp", "log", "max", "reduce_max", "reduce_sum", "add", "sub", "mul", "div", "sqrt",
    "rsqrt", "convert_element_type",
})  # fmt: skip
"""Operations whose float results :attr:`Program.computed` records (jaxpr names; the
StableHLO reader maps its own to these)."""

AS_MUL = {"square": "mul", "integer_pow": "mul"}
"""Primitives recorded as ``mul``: what they lower to (x·x, repeated), as the StableHLO
reader sees them."""

FLOATS = frozenset({"float16", "bfloat16", "float32", "float64"})


@dataclass(frozen=True)
class Computed:
    """One kind of float operation: what it computes, in which dtype, how large."""

    op: str
    """A name in :data:`TRACKED`."""
    dtype: str
    """The result's dtype."""
    size: int
    """Elements of the result."""
    source: str = ""
    """For a ``convert_element_type``: the operand's dtype (else empty)."""
    in_loop: bool = False
    """Inside some loop (``scan``/``while``) of the program."""


@dataclass(frozen=True)
class Dot:
    """One ``dot_general``: its left operand, which of its dimensions it
    contracts, its result, and the lengths of the loops around it (None for a
    ``while``): it runs their product times."""

    lhs_shape: tuple[int, ...]
    lhs_contract: tuple[int, ...]
    out_shape: tuple[int, ...]
    loops: tuple[int | None, ...] = ()
    dtype: str = ""
    """The result's dtype (empty where unknown)."""


@dataclass(frozen=True)
class Program:
    """What one traced program does: primitive counts, loops, collectives."""

    counts: Counter
    """Primitive name → equations, nested bodies included (not × trip count)."""
    loops: tuple[Loop, ...]
    """Every loop, in program order (outer before inner)."""
    collectives: tuple[Site, ...]
    dtypes: Counter = field(default_factory=Counter)
    """dtype name → equations producing a value of it, nested bodies included."""
    dots: tuple[Dot, ...] = ()
    """Every matrix product, in program order."""
    computed: Counter = field(default_factory=Counter)
    """:class:`Computed` → equations (nested bodies included, not × trip count)."""

    def primitives(self) -> set[str]:
        return set(self.counts)

    def kinds(self) -> set[str]:
        """HLO kinds of the collectives the program calls."""
        return {s.kind for s in self.collectives}

    def collectives_in(self, is_loop: Callable[[Loop], bool]) -> list[Site]:
        """Collectives inside some loop for which ``is_loop`` holds."""
        return [s for s in self.collectives if any(is_loop(lp) for lp in s.loops)]


def trace(fn: Callable[..., Any], *args: Any) -> Program:
    """Trace ``fn(*args)`` (no compile, no run) and read its jaxpr."""
    import jax

    return read(jax.make_jaxpr(fn)(*args))


def read(jaxpr: Any) -> Program:
    """Read a ``ClosedJaxpr`` or ``Jaxpr``."""
    counts: Counter = Counter()
    loops: list[Loop] = []
    sites: list[Site] = []
    dtypes: Counter = Counter()
    dots: list[Dot] = []
    computed: Counter = Counter()
    _walk(_open(jaxpr), (), counts, loops, sites, dtypes, dots, computed)
    return Program(counts, tuple(loops), tuple(sites), dtypes, tuple(dots), computed)


def _walk(
    jaxpr: Any, around: tuple[Loop, ...], counts: Counter, loops: list, sites: list,
    dtypes: Counter, dots: list, computed: Counter,
) -> None:  # fmt: skip
    for eqn in jaxpr.eqns:
        name = eqn.primitive.name
        counts[name] += 1
        if name == "shard_map" and eqn.params.get("check_vma") is False:
            counts[UNCHECKED] += 1
        dtypes.update(str(v.aval.dtype) for v in eqn.outvars if hasattr(v.aval, "dtype"))
        if (name in TRACKED or name in AS_MUL) and (c := _computed(eqn, around)) is not None:
            computed[c] += 1
        if name in COLLECTIVES:
            sites.append(_site(eqn, around))
        if name == "dot_general":
            dots.append(_dot(eqn, around))
        subs = list(_subjaxprs(eqn.params))
        if name in LOOPS:
            body: Counter = Counter()
            loop = Loop(name, _length(eqn), len(around), body)
            loops.append(loop)
            for sub in subs:
                inner: Counter = Counter()
                _walk(sub, (*around, loop), inner, loops, sites, dtypes, dots, computed)
                body.update(inner)
                counts.update(inner)
        else:
            for sub in subs:
                _walk(sub, around, counts, loops, sites, dtypes, dots, computed)


def _computed(eqn: Any, around: tuple[Loop, ...]) -> Computed | None:
    out = eqn.outvars[0].aval
    dtype = str(getattr(out, "dtype", ""))
    if dtype not in FLOATS:
        return None
    source = ""
    if eqn.primitive.name == "convert_element_type":
        source = str(getattr(eqn.invars[0].aval, "dtype", ""))
    size = 1
    for d in out.shape:
        size *= int(d)
    return Computed(AS_MUL.get(eqn.primitive.name, eqn.primitive.name), dtype, size, source,
                    bool(around))  # fmt: skip


def _dot(eqn: Any, around: tuple[Loop, ...]) -> Dot:
    (lhs_contract, _), _ = eqn.params["dimension_numbers"]
    return Dot(
        lhs_shape=tuple(int(d) for d in eqn.invars[0].aval.shape),
        lhs_contract=tuple(int(d) for d in lhs_contract),
        out_shape=tuple(int(d) for d in eqn.outvars[0].aval.shape),
        loops=tuple(lp.length for lp in around),
        dtype=str(eqn.outvars[0].aval.dtype),
    )


def _site(eqn: Any, around: tuple[Loop, ...]) -> Site:
    avals = [v.aval for v in eqn.invars if hasattr(v, "aval")]
    axes = eqn.params.get("axes", eqn.params.get("axis_name", ()))
    axes = axes if isinstance(axes, tuple) else (axes,)
    return Site(
        primitive=eqn.primitive.name,
        loops=around,
        dtypes=tuple(str(a.dtype) for a in avals if hasattr(a, "dtype")),
        shapes=tuple(tuple(int(d) for d in a.shape) for a in avals if hasattr(a, "shape")),
        axes=tuple(str(a) for a in axes if isinstance(a, str)),
    )


def _length(eqn: Any) -> int | None:
    return int(eqn.params["length"]) if eqn.primitive.name == "scan" else None


def _open(jaxpr: Any) -> Any:
    """The Jaxpr inside a ClosedJaxpr (or the Jaxpr itself)."""
    return getattr(jaxpr, "jaxpr", jaxpr)


def _subjaxprs(params: dict[str, Any]) -> Iterator[Any]:
    """Bodies held by an equation: scan/while/cond/jit/shard_map/custom_vjp … all keep
    theirs as a Jaxpr or ClosedJaxpr parameter (cond as a tuple of them)."""
    from jax.extend import core

    for value in params.values():
        for item in value if isinstance(value, (tuple, list)) else (value,):
            if isinstance(item, (core.Jaxpr, core.ClosedJaxpr)):
                yield _open(item)


def equations(jaxpr: Any, primitive: str) -> Iterator[tuple[Any, tuple[int | None, ...]]]:
    """Every equation of ``primitive`` in a ``ClosedJaxpr``/``Jaxpr``, nested bodies
    included, with the lengths of the loops around it (outermost first; None for a
    ``while``): the equation runs their product times."""

    def walk(body: Any, around: tuple[int | None, ...]) -> Iterator[tuple[Any, tuple]]:
        for eqn in body.eqns:
            if eqn.primitive.name == primitive:
                yield eqn, around
            inner = (*around, _length(eqn)) if eqn.primitive.name in LOOPS else around
            for sub in _subjaxprs(eqn.params):
                yield from walk(sub, inner)

    yield from walk(_open(jaxpr), ())


# ------------------------------------------------------------------ on the wire
# The student's process traces; the grading process reads what it found
# (grader.sandbox.isolation). Everything is checked on the way in: a malformed
# summary is refused, never half-read.


def to_wire(p: Program) -> dict[str, Any]:
    index = {id(lp): i for i, lp in enumerate(p.loops)}
    return {
        "counts": dict(p.counts),
        "dtypes": dict(p.dtypes),
        "loops": [[lp.primitive, lp.length, lp.depth, dict(lp.inside)] for lp in p.loops],
        "sites": [
            [
                s.primitive,
                [index[id(lp)] for lp in s.loops],
                list(s.dtypes),
                [list(x) for x in s.shapes],
                list(s.axes),
            ]
            for s in p.collectives
        ],  # fmt: skip
        "dots": [
            [list(d.lhs_shape), list(d.lhs_contract), list(d.out_shape), list(d.loops), d.dtype]
            for d in p.dots
        ],  # fmt: skip
        "computed": [
            [c.op, c.dtype, c.size, c.source, c.in_loop, n] for c, n in p.computed.items()
        ],
    }


def from_wire(raw: Any) -> Program:
    """The inverse of :func:`to_wire`; ValueError on anything malformed."""
    try:
        loops = tuple(
            Loop(_name(prim), _opt_int(length), int(depth), _counter(inside))
            for prim, length, depth, inside in raw["loops"]
        )
        sites = []
        for prim, around, dts, shapes, axes in raw["sites"]:
            if prim not in COLLECTIVES:
                raise ValueError(f"unknown collective {prim!r}")
            sites.append(Site(
                prim, tuple(loops[int(i)] for i in around), tuple(_name(d) for d in dts),
                tuple(tuple(int(x) for x in s) for s in shapes), tuple(_name(a) for a in axes),
            ))  # fmt: skip
        dots = tuple(
            Dot(tuple(int(x) for x in lhs), tuple(int(x) for x in con),
                tuple(int(x) for x in out), tuple(_opt_int(x) for x in around),
                _name(rest[0]) if rest else "")
            for lhs, con, out, around, *rest in raw["dots"]
        )  # fmt: skip
        computed: Counter = Counter()
        for op, dtype, size, source, in_loop, n in raw.get("computed", ()):
            if op not in TRACKED or not isinstance(in_loop, bool):
                raise ValueError(f"unknown computation {op!r}")
            computed[Computed(op, _name(dtype), int(size), _name(source), in_loop)] += int(n)
        return Program(
            _counter(raw["counts"]), loops, tuple(sites), _counter(raw["dtypes"]), dots, computed
        )
    except (KeyError, TypeError, IndexError, ValueError) as exc:
        raise ValueError(f"a malformed program summary: {exc!r}") from None


def _counter(d: Any) -> Counter:
    if not isinstance(d, dict):
        raise ValueError("expected a mapping")
    return Counter({_name(k): int(v) for k, v in d.items()})


def _name(v: Any) -> str:
    if not isinstance(v, str) or len(v) > 200:
        raise ValueError("expected a name")
    return v


def _opt_int(v: Any) -> int | None:
    return None if v is None else int(v)
