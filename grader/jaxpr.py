"""Read the traced program (jaxpr) of a student's function.

The compiled HLO is the source of truth for verdicts on communication (see
:mod:`grader.hlo`), but it has lost what the student wrote: bfloat16
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
  (``Program.loops``).

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
    _walk(_open(jaxpr), (), counts, loops, sites, dtypes)
    return Program(counts, tuple(loops), tuple(sites), dtypes)


def _walk(
    jaxpr: Any, around: tuple[Loop, ...], counts: Counter, loops: list, sites: list, dtypes: Counter
) -> None:
    for eqn in jaxpr.eqns:
        name = eqn.primitive.name
        counts[name] += 1
        dtypes.update(str(v.aval.dtype) for v in eqn.outvars if hasattr(v.aval, "dtype"))
        if name in COLLECTIVES:
            sites.append(_site(eqn, around))
        subs = list(_subjaxprs(eqn.params))
        if name in LOOPS:
            body: Counter = Counter()
            loop = Loop(name, _length(eqn), len(around), body)
            loops.append(loop)
            for sub in subs:
                inner: Counter = Counter()
                _walk(sub, (*around, loop), inner, loops, sites, dtypes)
                body.update(inner)
                counts.update(inner)
        else:
            for sub in subs:
                _walk(sub, around, counts, loops, sites, dtypes)


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
