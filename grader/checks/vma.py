"""The type errors of ``shard_map`` (``check_vma``) and of explicitly sharded arrays, as facts.

Under ``jax.shard_map(..., check_vma=True)`` every value has a type that says
over which mesh axes it may **vary** (differ from device to device); the rest
it is **invariant** over. JAX refuses a program when those types do not fit:
an ``out_specs`` that promises "the same on every device" for a value that may
vary, a loop carry whose varying axes change in the body, a ``pcast`` of a
value that varies already. Outside ``shard_map``, on an Explicit mesh, an
operation whose result has no well-defined sharding raises
``ShardingTypeError``; a spec naming a mesh axis twice, ``DuplicateSpecError``.

:func:`read` turns the exception's text (as measured on jax 0.10.2, see
tests/test_vma.py) into a :class:`VmaError`: which output or carry, which
axes, varying or invariant. It reads only what the text says: a part it does
not recognise is left empty, never filled with a guess. :func:`explain` says
the facts in plain words; the lessons' specs add what their catalogue knows.
"""

from __future__ import annotations

import ast
import re
import traceback
from dataclasses import dataclass

OUT_SPECS = "out_specs"
"""An output the ``out_specs`` say is the same on every device of some axes, where it may vary."""
CARRY = "carry"
"""A loop carry whose varying axes differ between its start and the body's result."""
BRANCHES = "branches"
"""The branches of a ``lax.cond`` return values that vary over different axes."""
PCAST = "pcast"
"""``lax.pcast(..., to='varying')`` of a value that varies already."""
PCAST_TO = "pcast_to"
"""``lax.pcast(..., to=…)`` with a ``to`` it does not take (``'invarying'``: all_gather's word)."""
IN_SPECS = "in_specs"
"""An argument placed otherwise than its ``in_specs`` entry says."""
DUPLICATE = "duplicate"
"""A PartitionSpec that names one mesh axis for two dimensions."""
SHARDING = "sharding"
"""``ShardingTypeError``: an operation on explicitly sharded (global) arrays, outside shard_map."""
OTHER = "other"
"""Names the varying/invariant types, in a form this reader does not know."""


@dataclass(frozen=True)
class Output:
    path: str
    """Which output: ``""`` (the only one), ``"[1]"``, ``"[0]['w_in']"`` (JAX's key path)."""
    spec: str
    """Its out_specs entry as printed, e.g. ``"P()"``, ``"P('data',)"``."""
    axes: tuple[str, ...]
    """The axes the spec promises it is the same over, where it may vary."""


@dataclass(frozen=True)
class Carry:
    loop: str
    """``"scan"`` or ``"while_loop"`` (a ``fori_loop`` becomes one of them)."""
    path: str
    """Which carry, as JAX names it: ``"loop_carry[1][0]"``, ``"c['acc']"``, ``"h"``."""
    before: tuple[str, ...]
    """The axes the initial value varies over."""
    after: tuple[str, ...]
    """The axes the body's result varies over."""

    @property
    def gained(self) -> tuple[str, ...]:
        return tuple(a for a in self.after if a not in self.before)

    @property
    def lost(self) -> tuple[str, ...]:
        return tuple(a for a in self.before if a not in self.after)


@dataclass(frozen=True)
class VmaError:
    kind: str
    """One of OUT_SPECS, CARRY, BRANCHES, PCAST, PCAST_TO, IN_SPECS, DUPLICATE, SHARDING, OTHER."""
    message: str
    """The error's first line, for saying what it says."""
    function: str | None = None
    """The shard_map'd function's name, when the text gives it."""
    mesh_axes: tuple[str, ...] = ()
    outputs: tuple[Output, ...] = ()
    carries: tuple[Carry, ...] = ()
    spec: str | None = None
    """IN_SPECS: the in_specs entry; DUPLICATE: the spec with the repeated axis."""
    placed: str | None = None
    """IN_SPECS: how the argument is placed."""
    arg: str | None = None
    """IN_SPECS: the argument's type, e.g. ``float32[8,8@data,8@model]``."""
    axes: tuple[str, ...] = ()
    """DUPLICATE: the repeated axes; BRANCHES: the axes the two branches differ by."""

    @property
    def varying_axes(self) -> tuple[str, ...]:
        """Every axis the text names as one a value varies over where it must not."""
        seen: list[str] = []
        for a in [a for o in self.outputs for a in o.axes] + [
            a for c in self.carries for a in c.gained + c.lost
        ]:
            if a not in seen:
                seen.append(a)
        return tuple(seen)


def _names(text: str) -> tuple[str, ...]:
    """``'data', 'model'`` or ``data,model`` → ('data', 'model')."""
    return tuple(n for n in (p.strip(" '\"()") for p in text.split(",")) if n)


def _vma_of(type_text: str) -> tuple[str, ...]:
    """The varying axes of a printed type: ``float32[2,8]{V:model}``, ``{V:(data,model)}``,
    ``{V:model, U:data}`` (newer JAX prints unreduced axes after them)."""
    m = re.search(r"\{V:(\([^)]*\)|[^,}]*)", type_text)  # then maybe ", U:…" (unreduced)
    return _names(m.group(1)) if m else ()


_OUTPUT = re.compile(
    r"out_specs(?P<path>\S*) is (?P<spec>P\(.*?\)) which implies that the corresponding "
    r"output value is (?:replicated across mesh axis '(?P<one>[^']+)'"
    r"|only varying across mesh axes \{(?P<need>[^}]*)\} and not \{(?P<diff>[^}]*)\})"
)
_CARRY = re.compile(
    r"input carry (?:component )?(?P<path>.+?) has type (?P<before>.+?) but the "
    r"corresponding output carry component has type (?P<after>.+?)(?=, so |;|\.\s|\.?$)",
    re.M,
)
_LOOP = re.compile(r"(\w+) body function carry input and carry output must have equal types")
_BRANCH = re.compile(
    r"output of (?P<a>\w+) has type (?P<ta>.+?) but the corresponding output of (?P<b>\w+) "
    r"has type (?P<tb>.+?)(?=, so |;|\.\s|\.?$)",
    re.M,
)
_IN_SPECS = re.compile(
    r"in_specs passed to shard_map: (?P<spec>P\(.*?\)) does not match the specs of the "
    r"input: (?P<placed>P\(.*?\)) for arg: (?P<arg>\S+?)\.?(?:\s|$)"
)
_DUPLICATE = re.compile(r"but (?P<spec>P\(.*?\)) has duplicate entries for (?P<axes>.+)$", re.M)


def read(exc: BaseException) -> VmaError | None:
    """The facts in a shard_map / sharding type error; None for any other exception."""
    name, text = type(exc).__name__, str(exc)
    first = text.strip().splitlines()[0] if text.strip() else name
    fn = re.search(r"applied to the function '([^']*)'", text)
    mesh = re.search(r"corresponding axis names \(([^)]*)\)", text)
    common = {
        "message": first,
        "function": fn.group(1) if fn else None,
        "mesh_axes": _names(mesh.group(1)) if mesh else (),
    }
    if "out_specs" in text and re.search(r"replicat|vary|varying", text):
        outputs: list[Output] = []
        for m in _OUTPUT.finditer(text):
            axes = (m.group("one"),) if m.group("one") else _names(m.group("diff"))
            o = Output(m.group("path"), m.group("spec"), axes)
            if o not in outputs:  # one line per leaf under a shared spec: the same fact
                outputs.append(o)
        return VmaError(OUT_SPECS, outputs=tuple(outputs), **common)
    loop = _LOOP.search(text)
    if loop:
        carries = tuple(
            Carry(loop.group(1), m.group("path"), _vma_of(m.group("before")),
                  _vma_of(m.group("after")))
            for m in _CARRY.finditer(text)
        )  # fmt: skip
        carries = tuple(c for c in carries if c.gained or c.lost)
        if carries:
            return VmaError(CARRY, carries=carries, **common)
        return None  # a carry whose shape or dtype changes: not a vma error
    if "branches must have equal output types" in text:
        m = _BRANCH.search(text)
        if m and _vma_of(m.group("ta")) != _vma_of(m.group("tb")):
            a, b = set(_vma_of(m.group("ta"))), set(_vma_of(m.group("tb")))
            return VmaError(BRANCHES, axes=tuple(sorted(a ^ b)), **common)
        return None
    if "pcast from=varying" in text:
        return VmaError(PCAST, **common)
    if (
        "unexpected `to` value. Allowed" in text and "'varying'" in text
    ):  # pcast's, not all_gather's
        return VmaError(PCAST_TO, **common)
    m = _IN_SPECS.search(text)
    if m:
        return VmaError(
            IN_SPECS, spec=m.group("spec"), placed=m.group("placed"), arg=m.group("arg"), **common
        )
    m = _DUPLICATE.search(text)
    if name == "DuplicateSpecError" or m:
        return VmaError(
            DUPLICATE,
            spec=m.group("spec") if m else None,
            axes=_names(m.group("axes").replace("`", "")) if m else (),
            **common,
        )
    if name == "ShardingTypeError":
        return VmaError(SHARDING, **common)
    if "check_vma" in text or "manual axis type" in text or re.search(r"\{V:", text):
        return VmaError(OTHER, **common)
    return None


def spec_entries(spec: str | None) -> tuple | None:
    """``"P(None, 'data', ('x', 'y'))"`` → (None, 'data', ('x', 'y')); None if not that form."""
    m = re.fullmatch(r"P\((.*)\)", (spec or "").strip())
    if not m:
        return None
    try:
        entries = ast.literal_eval(f"({m.group(1)},)") if m.group(1).strip() else ()
    except (ValueError, SyntaxError):
        return None
    return tuple(entries) if isinstance(entries, tuple) else None


def _q(axes: tuple[str, ...]) -> str:
    return ", ".join(f"'{a}'" for a in axes) or "no axis"


def _axis_arg(axes: tuple[str, ...]) -> str:
    return f"'{axes[0]}'" if len(axes) == 1 else "(" + ", ".join(f"'{a}'" for a in axes) + ")"


def where(o: Output) -> str:
    """``the output`` / ``output [1]`` / ``output [0]['w_in']``."""
    return f"output {o.path}" if o.path else "the output"


TYPES = (
    "A value varies over an axis when it is computed from an input split over it, from "
    "lax.axis_index, a ppermute or an all_gather (unless to='invarying'); lax.psum or "
    "lax.pmean over the axis makes it the same everywhere."
)
"""The rule of the type system in one sentence, for hints."""


def explain(err: VmaError) -> str:
    """What the error says, in plain words, with the fixes that fit every cause the text allows."""
    if err.kind == OUT_SPECS and err.outputs:
        said = "; ".join(
            f"{where(o)} has out_specs {o.spec}, which says it is the same on every device "
            f"over {_q(o.axes)}, but shard_map finds it may vary over {_q(o.axes)}"
            for o in err.outputs[:3]
        )
        return (
            f"{said[0].upper()}{said[1:]}. {TYPES} If every device holds a partial sum or its "
            "own share of it, reduce it over those axes; if it is a different piece on each "
            "device, name the axis in out_specs; if it is truly the same everywhere (gathered), "
            "all_gather with to='invarying'."
        )
    if err.kind == OUT_SPECS:
        return (
            "shard_map cannot prove that an output is the same on every device, as its "
            f"out_specs say. {TYPES}"
        )
    if err.kind == CARRY:
        c = err.carries[0]
        loop = "lax.scan" if c.loop == "scan" else "loop (lax.fori_loop / while_loop)"
        if c.gained:
            return (
                f"The {loop} carry {c.path} starts the same on every device over "
                f"{_q(c.gained)}, but the loop body returns it varying over {_q(c.gained)}: a "
                "carry must keep its type. Which fix is right depends on what the carry holds, "
                "which the error cannot tell. If each device is meant to keep its own value in "
                "it (per-device gradients or partial results, reduced once after the loop), "
                f"start it varying: lax.pcast(init, {_axis_arg(c.gained)}, to='varying') (or "
                "jnp.zeros_like of a varying value). If it is meant to be the same on every "
                f"device over {_q(c.gained)} (activations replicated there), the body leaves a "
                f"partial sum or a per-device value in it: where it makes a partial sum, add the "
                f"missing lax.psum over {_q(c.gained)}; where a value varies that should not (an "
                "all_gather without to='invarying', say), remove that cause instead. A pcast of "
                "the initial value would only silence the error and carry partial sums."
            )
        return (
            f"The {loop} carry {c.path} starts varying over {_q(c.lost)}, but the loop body "
            f"returns it the same on every device: something inside (a psum or pmean over "
            f"{_q(c.lost)}, or a constant) made it invariant, and a carry must keep its type. "
            "Reduce once after the loop instead, or start the carry invariant."
        )
    if err.kind == BRANCHES:
        return (
            f"The branches of a lax.cond return values that differ in whether they vary over "
            f"{_q(err.axes)}: both must have the same type. Make the invariant one varying "
            f"with lax.pcast(..., {_axis_arg(err.axes) if err.axes else 'axis'}, to='varying')."
        )
    if err.kind == PCAST:
        return (
            "lax.pcast(..., to='varying') on a value that already varies across devices. "
            "If the value is meant to vary there (computed from a sharded input or from "
            "lax.axis_index), drop that pcast: only buffers made from constants (jnp.zeros) or "
            "replicated inputs need it. If it is meant to be the same on every device at that "
            "point (activations replicated over the axis), something before it left it "
            "varying, a missing lax.psum over the axis most often: add that reduction; "
            "dropping the pcast would only move the error."
        )
    if err.kind == PCAST_TO:
        return (
            "lax.pcast casts only towards varying (to='varying'). Nothing casts a varying value "
            "to invariant: the values may differ per device, so making them the same takes a "
            "collective — lax.psum or lax.pmean (a sum or a mean over the axis), or "
            "lax.all_gather(..., to='invarying') (every device gets every block)."
        )
    if err.kind == IN_SPECS:
        return (
            f"An argument arrives placed {err.placed} ({err.arg}), but its in_specs entry says "
            f"{err.spec}: shard_map does not move data to fit in_specs. Give in_specs the "
            "placement the argument has."
        )
    if err.kind == DUPLICATE:
        return (
            f"{err.spec or 'A PartitionSpec'} names mesh axis {_q(err.axes)} for two "
            "dimensions: one mesh axis can split at most one dimension of an array."
        )
    if err.kind == SHARDING:
        return (
            "An operation ran on arrays sharded over the mesh (global arrays, outside "
            "jax.shard_map) and JAX cannot tell how its result would be sharded: "
            f"{err.message} Inside jax.shard_map each device works on its own block and you "
            "choose the collectives."
        )
    return f"shard_map's type check (check_vma) refused the program: {err.message}"


# ------------------------------------------------------------------ where it was raised

_FRAME = re.compile(r'File "[^"]*", line \d+, in (\S+)\n\s*(.*)')


def frames(exc: BaseException) -> list[tuple[str, str]]:
    """(function, source line) of each frame outside JAX the exception passed through, outermost
    first: from the student's process's formatted traceback when it came from there."""
    text = getattr(exc, "student_text", None)
    if isinstance(text, str):
        return [(m.group(1), m.group(2).strip()) for m in _FRAME.finditer(text)]
    out = []
    for f in traceback.extract_tb(exc.__traceback__):
        path = f.filename.replace("\\", "/")
        if "/jax/" in path or "/jaxlib/" in path or "/grader/" in path:
            continue
        out.append((f.name, (f.line or "").strip()))
    return out
