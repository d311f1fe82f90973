"""Read the Pallas TPU kernels of an exported program from their Mosaic IR.

A ``pl.pallas_call`` exported for a TPU (``jax.export.export(jax.jit(f),
platforms=["tpu"])``, which works from a CPU-only process) lowers to a StableHLO
``custom_call @tpu_custom_call``. Its ``backend_config`` is JSON whose
``custom_call_config.body`` is the kernel's Mosaic module as base64-encoded MLIR
bytecode, serialised by jax's ``mosaic-serde`` pass (ops renamed ``stable_mosaic.…``).
:func:`kernels` finds every such call, parses the body with jaxlib's MLIR bindings in
a context with the TPU dialect registered (``jax._src.lib.tpu.register_dialect``:
MLIR needs the dialect for the ``!tpu.dma_semaphore`` type and
``#tpu.memory_space`` attribute even to parse), runs ``mosaic-serde{serialize=false}``
to get the registered ops back, and walks the kernel's function: what the worker
reads of a kernel it was handed, never what the student's process says it did.

Per kernel (:class:`Kernel`), as far as the IR states it:

- the grid (``iteration_bounds``), each dimension's semantics, each window's block
  shape and index map (:class:`Window`), the kernel's operands in order with their
  role, shape, dtype and memory space, and the call's ``has_communication`` and
  ``collective_id``;
- every ``scf.for`` (:class:`Loop`): its bounds as expressions, its trip count when
  they are constant; ``scf.while`` loops with no trip count;
- in program order (:attr:`Kernel.events`): DMA starts (:class:`DmaStart`: local, or
  remote with the device expression, bytes from the source's memref type), DMA waits
  (:class:`DmaWait`: the semaphore waited on, and which side), semaphore signals
  (:class:`Signal`, remote ones with a device) and waits (:class:`SemWait`), matmuls
  (:class:`Matmul`: ``tpu.matmul`` or ``vector.contract``, operand and accumulator
  dtypes, the refs the operands were loaded from and the refs the result is kept in),
  and stores (:class:`Store`: which ref, and the constant where one is stored, as a
  zeroed accumulator is). Each event knows the loops around it and the ``scf.if``
  conditions it runs under (``pl.when``), which :meth:`Event.runs` evaluates.

Index and device operands are kept as small expressions (:class:`Expr`) over the
device id (``device``), loop counters (``s0``, ``s1`` … by :attr:`Loop.index`) and
grid indices (``pid0`` …); :meth:`Expr.evaluate` gives a value for given ones, so
a check can ask which device a DMA goes to from each device (:attr:`DmaStart.peers`)
or whether a receive semaphore changes with the step, without running anything.

What it does not claim: how many times an event runs when a loop's bounds are not
constant (it reports the loop, never a count: :meth:`Kernel.times` is None), values
read from memory (an index loaded from SMEM is ``?load``), or anything about other
ops (vector arithmetic, loads) beyond the matmuls and stores. A ``pl.loop`` of one
trip leaves no ``scf.for`` (Pallas unrolls it), and a grid is one kernel invocation
per grid point: events count per invocation, conditions on ``pid<k>`` say which. A body it cannot decode or parse, a Mosaic op that moves
data or touches a semaphore which it does not read (indirect DMAs …), raises
:class:`~grader.measure.stablehlo.Unrecognised`, never a guessed summary.

Two forms of the DMA wait are read: jax 0.10.2 lowers ``wait_send``/``wait_recv`` to
``tpu.wait_dma2`` (one semaphore; the send side's device operands are dummies), so
the side is inferred by matching the semaphore to the starts' send and receive
semaphores; newer jax emits ``tpu.wait_dma`` with ``wait_target``, which states it.
"""

from __future__ import annotations

import base64
import binascii
import json
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from grader.measure.stablehlo import ELEMENT_TYPES, Unrecognised

TARGET = "tpu_custom_call"

# ------------------------------------------------------------------ expressions

_INFIX = {"add": "+", "sub": "-", "mul": "*", "div": "/", "rem": "%", "and": "&", "or": "|",
          "xor": "^", "eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">=",
          "ult": "<u", "ule": "<=u", "ugt": ">u", "uge": ">=u", "divu": "/u", "remu": "%u",
          "floordiv": "//"}  # fmt: skip

_ARITH = {"addi": "add", "subi": "sub", "muli": "mul", "divsi": "div", "divui": "divu",
          "remsi": "rem", "remui": "remu", "floordivsi": "floordiv", "andi": "and",
          "ori": "or", "xori": "xor", "minsi": "min", "maxsi": "max", "minui": "min",
          "maxui": "max", "ceildivsi": "ceildiv"}  # fmt: skip

_PASS = frozenset({"index_cast", "index_castui", "extsi", "extui", "trunci"})

_PREDICATES = ("eq", "ne", "lt", "le", "gt", "ge", "ult", "ule", "ugt", "uge")
"""``arith.cmpi`` predicates by their enum value (``slt`` … written without the ``s``)."""


def _trunc_div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def _apply(op: str, xs: list[int]) -> int | None:
    a = xs[0]
    b = xs[1] if len(xs) > 1 else 0
    if op in ("div", "rem", "divu", "remu", "floordiv", "ceildiv") and b == 0:
        return None
    u = (a & 0xFFFFFFFF, b & 0xFFFFFFFF)
    table = {
        "add": lambda: a + b, "sub": lambda: a - b, "mul": lambda: a * b,
        "div": lambda: _trunc_div(a, b), "rem": lambda: a - b * _trunc_div(a, b),
        "divu": lambda: u[0] // u[1], "remu": lambda: u[0] % u[1],
        "floordiv": lambda: a // b, "ceildiv": lambda: -(-a // b),
        "and": lambda: a & b, "or": lambda: a | b, "xor": lambda: a ^ b,
        "min": lambda: min(a, b), "max": lambda: max(a, b),
        "eq": lambda: int(a == b), "ne": lambda: int(a != b), "lt": lambda: int(a < b),
        "le": lambda: int(a <= b), "gt": lambda: int(a > b), "ge": lambda: int(a >= b),
        "ult": lambda: int(u[0] < u[1]), "ule": lambda: int(u[0] <= u[1]),
        "ugt": lambda: int(u[0] > u[1]), "uge": lambda: int(u[0] >= u[1]),
        "select": lambda: xs[1] if a else xs[2], "not": lambda: int(not a),
    }  # fmt: skip
    return table[op]() if op in table else None


@dataclass(frozen=True)
class Expr:
    """An integer (or i1) value of the kernel as an expression tree: ``("const", v)``,
    ``("var", name)`` (``device``, ``s<loop>``, ``pid<dim>``), ``("?", what)`` (a value
    the IR computes from something this reader does not follow: a load, a carried
    loop value …), or ``(op, *children)`` with op one of :data:`_INFIX`, ``min``,
    ``max``, ``select``, ``not``."""

    tree: tuple

    @property
    def constant(self) -> int | None:
        return self.tree[1] if self.tree[0] == "const" else None

    @property
    def free(self) -> frozenset[str]:
        """The variables it depends on (``?`` where it depends on something unread)."""
        kind = self.tree[0]
        if kind == "const":
            return frozenset()
        if kind == "var":
            return frozenset({self.tree[1]})
        if kind == "?":
            return frozenset({"?"})
        return frozenset().union(*(Expr(c).free for c in self.tree[1:]))

    def evaluate(self, env: Mapping[str, int]) -> int | None:
        """Its value where the variables have ``env``'s values (None: one is missing or
        unread, or a division by zero)."""
        kind = self.tree[0]
        if kind == "const":
            return self.tree[1]
        if kind == "var":
            return env.get(self.tree[1])
        if kind == "?":
            return None
        xs = [Expr(c).evaluate(env) for c in self.tree[1:]]
        if any(x is None for x in xs):
            return None
        return _apply(kind, xs)  # type: ignore[arg-type]

    def __str__(self) -> str:
        kind = self.tree[0]
        if kind == "const":
            return str(self.tree[1])
        if kind == "var":
            return self.tree[1]
        if kind == "?":
            return f"?{self.tree[1]}"
        parts = [Expr(c) for c in self.tree[1:]]
        if kind in _INFIX and len(parts) == 2:
            return f"({parts[0]} {_INFIX[kind]} {parts[1]})"
        return f"{kind}({', '.join(str(p) for p in parts)})"


def _const(v: int) -> Expr:
    return Expr(("const", int(v)))


def _node(op: str, children: list[Expr]) -> Expr:
    """``op`` of ``children``, constants folded and ``x·1``, ``x+0``, ``x/1``,
    ``(c != 0)`` of a comparison ``c`` simplified to what they equal."""
    consts = [c.constant for c in children]
    if all(c is not None for c in consts):
        value = _apply(op, consts)  # type: ignore[arg-type]
        if value is not None:
            return _const(value)
    if len(children) == 2:
        a, b = children
        if op == "mul" and b.constant == 1 or op in ("add", "sub") and b.constant == 0:
            return a
        if op in ("div", "divu") and b.constant == 1:
            return a
        if op == "mul" and a.constant == 1 or op == "add" and a.constant == 0:
            return b
        if op == "ne" and b.constant == 0 and a.tree[0] in _PREDICATES:
            return a
    return Expr((op, *(c.tree for c in children)))


# ------------------------------------------------------------------ the summary


@dataclass(frozen=True)
class Ref:
    """A memory reference of the kernel: a root (``arg<k>``: the kernel function's
    k-th argument; ``barrier``: the barrier semaphore; ``scoped<k>``: the k-th scoped
    allocation, ``pltpu.run_scoped``'s or ``sync_copy``'s) and the indices of the
    slices taken of it, in order; its memref type after them."""

    root: str
    index: tuple[Expr, ...]
    shape: tuple[int, ...]
    dtype: str
    """numpy name for data; ``dma_semaphore`` or ``semaphore`` for semaphores."""
    space: str
    """``any``, ``hbm``, ``vmem``, ``smem``, ``semaphore_mem`` … (the memref's memory space)."""

    @property
    def bytes(self) -> int:
        return _prod(self.shape) * _ITEM_BYTES.get(self.dtype, 0)

    def __str__(self) -> str:
        return self.root + (f"[{', '.join(str(i) for i in self.index)}]" if self.index else "")


@dataclass(frozen=True)
class Loop:
    """An ``scf.for`` (``kind`` ``for``; counter ``s<index>``) or ``scf.while``."""

    index: int
    kind: str
    start: Expr | None
    stop: Expr | None
    step: Expr | None
    parent: int | None
    """The loop around it (its index), None at the top."""

    @property
    def trips(self) -> int | None:
        """The trip count where the bounds are constant (None: not stated by the IR)."""
        if self.start is None or self.stop is None or self.step is None:
            return None
        lo, hi, st = self.start.constant, self.stop.constant, self.step.constant
        if lo is None or hi is None or st is None or st <= 0:
            return None
        return max(0, -(-(hi - lo) // st))


@dataclass(frozen=True)
class Event:
    at: int
    """Position in program order (a pre-order walk of the kernel's body)."""
    loops: tuple[int, ...]
    """The loops around it, outermost first."""
    when: tuple[tuple[Expr, bool], ...]
    """The ``scf.if`` conditions it runs under (condition, branch taken)."""

    def runs(self, env: Mapping[str, int]) -> bool | None:
        """Whether it runs where the variables have ``env``'s values (None: unknown)."""
        for cond, branch in self.when:
            value = cond.evaluate(env)
            if value is None:
                return None
            if bool(value) != branch:
                return False
        return True


@dataclass(frozen=True)
class DmaStart(Event):
    source: Ref
    target: Ref
    source_semaphore: Ref | None
    """Signalled when the data has left (remote DMAs; None for a local copy)."""
    target_semaphore: Ref
    """Signalled on the receiving device when the data has arrived."""
    device: Expr | None
    """The destination device (None: a local DMA, no device operand)."""
    peers: tuple[int | None, ...] | None
    """:attr:`device` evaluated for each device ``0 … devices − 1`` where it depends on
    the device id and constants only (None: local, or it depends on more)."""

    @property
    def remote(self) -> bool:
        return self.device is not None

    @property
    def bytes(self) -> int:
        return self.source.bytes


@dataclass(frozen=True)
class DmaWait(Event):
    semaphore: Ref
    side: str | None
    """``send`` (the data has left), ``receive`` (it has arrived) or None (the IR
    does not say, and the semaphore is both a send and a receive one, or neither)."""
    stated: bool
    """Whether the IR states the side (``tpu.wait_dma``'s ``wait_target``) rather than
    it being read off which starts use the semaphore (``tpu.wait_dma2``)."""
    source: Ref
    target: Ref
    device: Expr | None
    """As the IR states it: on jax 0.10.2 a send-side ``tpu.wait_dma2`` carries jax's
    placeholder device 0 (and its source and target swapped), not the peer."""

    @property
    def bytes(self) -> int:
        return self.source.bytes


@dataclass(frozen=True)
class Signal(Event):
    semaphore: Ref
    amount: Expr
    device: Expr | None
    peers: tuple[int | None, ...] | None


@dataclass(frozen=True)
class SemWait(Event):
    semaphore: Ref
    amount: Expr


@dataclass(frozen=True)
class Matmul(Event):
    op: str
    """``tpu.matmul`` or ``vector.contract``."""
    lhs: tuple[tuple[int, ...], str]
    rhs: tuple[tuple[int, ...], str]
    accumulator: str
    """The dtype it accumulates in: its accumulator operand's, which is its result's."""
    result: tuple[tuple[int, ...], str]
    lhs_from: Ref | None
    rhs_from: Ref | None
    """The refs its operands were loaded from (``vector.load``, through shape casts);
    None when computed otherwise."""
    kept_in: tuple[Ref, ...]
    """The refs its result is stored into, followed through elementwise adds and
    casts (:data:`THROUGH`): where a running sum is kept, whose dtype is the one
    that sum is carried in (a float32 matmul added into a bfloat16 scratch is a
    bfloat16 accumulator all the same)."""


@dataclass(frozen=True)
class Store(Event):
    """A ``tpu.vector_store``/``vector.store``/``memref.store``: where (the ref with the
    store's indices), the dtype stored, and the value where every element gets the same
    constant (``acc[...] = jnp.zeros(...)``: 0.0); None for a computed value."""

    ref: Ref
    dtype: str
    constant: float | None


@dataclass(frozen=True)
class Operand:
    """An argument of the kernel's function: ``program_id`` (a grid index),
    ``prefetch`` (scalar prefetch), ``input``, ``output`` or ``scratch``."""

    index: int
    role: str
    shape: tuple[int, ...]
    dtype: str
    space: str


@dataclass(frozen=True)
class Window:
    """A ``BlockSpec`` of a gridded kernel: the block's shape and its index map, as
    expressions over ``pid0`` … (the block index, not the element offset)."""

    block: tuple[int, ...]
    index: tuple[Expr, ...]


@dataclass(frozen=True)
class Kernel:
    name: str
    devices: int
    """The devices its program runs on: what :attr:`DmaStart.peers` is evaluated over."""
    has_communication: bool
    collective_id: int | None
    grid: tuple[int, ...]
    semantics: tuple[str, ...]
    windows: tuple[Window, ...]
    operands: tuple[Operand, ...]
    loops: tuple[Loop, ...]
    events: tuple[Event, ...] = field(repr=False)

    def _of(self, kind: type) -> tuple[Any, ...]:
        return tuple(e for e in self.events if isinstance(e, kind))

    @property
    def starts(self) -> tuple[DmaStart, ...]:
        return self._of(DmaStart)

    @property
    def waits(self) -> tuple[DmaWait, ...]:
        return self._of(DmaWait)

    @property
    def signals(self) -> tuple[Signal, ...]:
        return self._of(Signal)

    @property
    def sem_waits(self) -> tuple[SemWait, ...]:
        return self._of(SemWait)

    @property
    def matmuls(self) -> tuple[Matmul, ...]:
        return self._of(Matmul)

    @property
    def stores(self) -> tuple[Store, ...]:
        return self._of(Store)

    @property
    def barrier(self) -> tuple[Event, ...]:
        """Signals of and waits on the barrier semaphore (``get_barrier_semaphore``)."""
        return tuple(
            e for e in self.events
            if isinstance(e, Signal | SemWait) and e.semaphore.root == "barrier"
        )  # fmt: skip

    def times(self, event: Event) -> int | None:
        """How many times ``event`` runs in one kernel invocation (one grid step): the
        product of its loops' trip counts, counting only the iterations where its
        ``scf.if`` conditions hold when they depend on those loops' counters alone;
        None where a trip count is not constant or a condition depends on more (the
        device, a grid index, a value read from memory). A loop of one trip leaves no
        ``scf.for`` (Pallas unrolls it): its events count once, outside any loop."""
        import itertools

        loops = [self.loops[i] for i in event.loops]
        trips = [lp.trips for lp in loops]
        if any(t is None for t in trips):
            return None
        if not event.when:
            return _prod(trips)
        names = {f"s{lp.index}" for lp in loops}
        if not all(cond.free <= names for cond, _ in event.when) or _prod(trips) > 100_000:
            return None
        ranges = [
            range(lp.start.constant, lp.stop.constant, lp.step.constant)  # type: ignore[union-attr,arg-type]
            for lp in loops
        ]
        return sum(
            bool(event.runs({f"s{lp.index}": v for lp, v in zip(loops, point, strict=True)}))
            for point in itertools.product(*ranges)
        )

    def in_loop(self, loop: int) -> tuple[Event, ...]:
        """The events directly or indirectly inside loop ``loop``, in order."""
        return tuple(e for e in self.events if loop in e.loops)

    def overlaps(self) -> tuple[tuple[DmaStart, Matmul, DmaWait], ...]:
        """Each (start, matmul, wait) where, in one loop body (or outside loops), a
        matmul comes after a DMA's start and before the first wait on that DMA's
        receive semaphore: a DMA in flight while the matmul runs."""
        found = []
        for start in self.starts:
            after = [e for e in self.events if e.at > start.at and e.loops == start.loops]
            waited = next(
                (w for w in after if isinstance(w, DmaWait) and w.side != "send"
                 and w.semaphore == start.target_semaphore),
                None,
            )  # fmt: skip
            if waited is None:
                continue
            for m in after:
                if isinstance(m, Matmul) and m.at < waited.at:
                    found.append((start, m, waited))
        return tuple(found)


# ------------------------------------------------------------------ reading

_ITEM_BYTES = {"bool": 1, "int4": 1, "int8": 1, "uint8": 1, "int16": 2, "uint16": 2,
               "int32": 4, "uint32": 4, "int64": 8, "uint64": 8, "float16": 2,
               "bfloat16": 2, "float32": 4, "float64": 8, "float8_e4m3fn": 1,
               "float8_e5m2": 1}  # fmt: skip
"""Bytes per element (int4 rounded up: the DMA's bytes are then an upper bound)."""

HANDLED = frozenset({"tpu.enqueue_dma", "tpu.wait_dma", "tpu.wait_dma2", "tpu.sem_signal",
                     "tpu.sem_wait", "tpu.sem_barrier", "tpu.sem_alloc", "tpu.matmul",
                     "vector.contract", "tpu.memref_slice", "tpu.memref_squeeze",
                     "tpu.device_id", "tpu.region", "tpu.yield", "tpu.sem_read"})  # fmt: skip
"""Mosaic ops read here; any other whose name says it moves data or touches a semaphore
(``dma``, ``sem``, ``barrier`` in it) is refused."""

THROUGH = frozenset({"arith.addf", "arith.truncf", "arith.extf", "vector.shape_cast",
                     "arith.mulf", "arith.subf"})  # fmt: skip
"""Ops a matmul's result is followed through to the store that keeps it."""

STORES = frozenset({"tpu.vector_store", "vector.store", "memref.store"})
"""Stores: the value stored is operand 0, the ref operand 1, its indices after it."""

CONTEXT_USES = 256
_held = threading.local()


def dialect_missing() -> str | None:
    """None where this jaxlib can parse a Mosaic body (the TPU dialect's bindings and
    the ``mosaic-serde`` pass), else what is missing."""
    try:
        from jax._src.lib import tpu
    except ImportError as exc:
        return f"no Mosaic TPU dialect bindings ({exc})"
    if not hasattr(tpu, "register_dialect"):
        return "the Mosaic TPU bindings have no register_dialect"
    return None


def _context() -> Any:
    from jax._src.interpreters import mlir
    from jax._src.lib import tpu

    held = getattr(_held, "context", None)
    if held is None or held[1] >= CONTEXT_USES:
        ctx = mlir.make_ir_context()
        tpu.register_dialect(ctx)
        ctx.allow_unregistered_dialects = True  # the serialised ops: stable_mosaic.*
        held = _held.context = [ctx, 0]
    held[1] += 1
    return held[0]


def parse_body(body: bytes) -> Any:
    """The Mosaic module of a kernel's body (MLIR bytecode), with its ops deserialised
    (``mosaic-serde{serialize=false}``) where they were serialised."""
    missing = dialect_missing()
    if missing:
        raise Unrecognised(missing)
    from jaxlib.mlir import ir
    from jaxlib.mlir.passmanager import PassManager

    ctx = _context()
    try:
        module = ir.Module.parse(body, context=ctx)
    except ir.MLIRError as exc:
        raise Unrecognised(f"a Mosaic body MLIR cannot parse: {str(exc)[:300]}") from None
    if any(op.operation.name.startswith("stable_mosaic.") for op in module.body.operations):
        try:
            with ctx:
                PassManager.parse("builtin.module(mosaic-serde{serialize=false})").run(
                    module.operation
                )
        except ir.MLIRError as exc:
            raise Unrecognised(
                f"a Mosaic body this jaxlib cannot deserialise: {str(exc)[:300]}"
            ) from None
    return module


def kernels(program: Any, devices: int | None = None) -> tuple[Kernel, ...]:
    """Every Pallas TPU kernel (``tpu_custom_call``) of ``program``, in the order a
    walk of the module meets them: a ``jax.export.Exported``, its StableHLO module
    (:func:`grader.measure.stablehlo.parse_exported`) or text. ``devices``: what
    peers are evaluated over (default: the exported program's devices, else the
    module's ``mhlo.num_partitions``, else 1)."""
    from jaxlib.mlir import ir

    from grader.measure import stablehlo

    if hasattr(program, "mlir_module_serialized"):
        devices = devices or int(getattr(program, "nr_devices", 0) or 0) or None
        module = stablehlo.parse_exported(program)
    else:
        module = stablehlo.parse(program) if isinstance(program, str | bytes) else program
    if devices is None:
        try:
            devices = stablehlo.partitions(module)
        except Unrecognised:
            devices = 1
    calls: list[Any] = []

    def visit(op: Any) -> Any:
        if (
            op.name == "stablehlo.custom_call"
            and ir.StringAttr(op.attributes["call_target_name"]).value == TARGET
        ):
            calls.append(op)
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    return tuple(_kernel(op, devices) for op in calls)


def _config(call: Any) -> dict[str, Any]:
    from jaxlib.mlir import ir

    if "backend_config" not in call.attributes:
        raise Unrecognised("a tpu_custom_call without backend_config")
    attr = call.attributes["backend_config"]
    try:
        text = ir.StringAttr(attr).value
        config = json.loads(text)
        inner = config["custom_call_config"]
        inner["body"] = base64.b64decode(inner["body"], validate=True)
    except (ValueError, TypeError, KeyError, binascii.Error) as exc:
        raise Unrecognised(f"a tpu_custom_call whose backend_config is not read ({exc})") from None
    return inner


def _kernel(call: Any, devices: int) -> Kernel:
    from jaxlib.mlir import ir

    config = _config(call)
    module = parse_body(config["body"])
    functions = {}
    for op in module.body.operations:
        op = op.operation
        if op.name == "func.func":
            functions[ir.StringAttr(op.attributes["sym_name"]).value] = op
    transforms: set[str] = set()
    for func in functions.values():
        if "window_params" in func.attributes:
            for w in ir.ArrayAttr(func.attributes["window_params"]):
                d = ir.DictAttr(w)
                if "transform_indices" in d:
                    transforms.add(ir.FlatSymbolRefAttr(d["transform_indices"]).value)
    main = [f for name, f in functions.items() if name not in transforms]
    if len(main) != 1:
        raise Unrecognised(f"a Mosaic module with {len(main)} kernel functions")
    name = (
        ir.StringAttr(call.attributes["kernel_name"]).value
        if ("kernel_name" in call.attributes)
        else ir.StringAttr(main[0].attributes["sym_name"]).value
    )
    return _Walker(main[0], functions, len(call.operands), devices).kernel(
        name, bool(config.get("has_communication", False)), config.get("collective_id")
    )


def _prod(xs: Any) -> int:
    n = 1
    for x in xs:
        n *= int(x)
    return n


def _memref(t: Any) -> tuple[tuple[int, ...], str, str]:
    """(shape, dtype, memory space) of a memref type."""
    from jaxlib.mlir import ir

    if not isinstance(t, ir.MemRefType):
        try:
            t = ir.MemRefType(t)
        except ValueError:
            raise Unrecognised(f"a ref of type {str(t)[:80]!r}") from None
    elem = str(t.element_type)
    if elem in ("!tpu.dma_semaphore", "!tpu.semaphore"):
        dtype = elem.removeprefix("!tpu.")
    elif elem in ELEMENT_TYPES:
        dtype = ELEMENT_TYPES[elem]
    else:
        raise Unrecognised(f"a ref of element type {elem!r}")
    space = "" if t.memory_space is None else str(t.memory_space)
    # "#tpu.memory_space<vmem>": the attribute's printed form is all the bindings give
    space = space.partition("<")[2].rstrip(">") if "<" in space else space
    if not t.has_static_shape:
        raise Unrecognised(f"a ref of dynamic shape {str(t)[:80]!r}")
    return tuple(int(d) for d in t.shape), dtype, space


def _vector(t: Any) -> tuple[tuple[int, ...], str]:
    from jaxlib.mlir import ir

    try:
        v = ir.ShapedType(t)
    except ValueError:
        raise Unrecognised(f"a matmul operand of type {str(t)[:80]!r}") from None
    elem = str(v.element_type)
    if elem not in ELEMENT_TYPES:
        raise Unrecognised(f"a matmul of element type {elem!r}")
    return tuple(int(d) for d in v.shape), ELEMENT_TYPES[elem]


def _is_op(owner: Any) -> bool:
    from jaxlib.mlir import ir

    return isinstance(owner, ir.OpView | ir.Operation)


class _Walker:
    def __init__(self, func: Any, functions: dict[str, Any], call_operands: int, devices: int):
        from jaxlib.mlir import ir

        self.func, self.functions, self.devices = func, functions, devices
        attrs = func.attributes
        self.grid = (
            tuple(int(x) for x in ir.DenseI64ArrayAttr(attrs["iteration_bounds"]))
            if "iteration_bounds" in attrs else ()
        )  # fmt: skip
        prefetch = (
            int(ir.IntegerAttr(attrs["scalar_prefetch"]).value)
            if ("scalar_prefetch" in attrs)
            else 0
        )
        scratch = (
            int(ir.IntegerAttr(attrs["scratch_operands"]).value)
            if ("scratch_operands" in attrs)
            else 0
        )
        self.args = list(func.regions[0].blocks[0].arguments)
        inputs = call_operands - prefetch
        n = len(self.args)
        roles = ["program_id"] * len(self.grid) + ["prefetch"] * prefetch
        rest = n - len(roles) - scratch
        roles += ["input"] * min(inputs, rest) + ["output"] * max(0, rest - inputs)
        roles += ["scratch"] * scratch
        self.roles = roles
        self.names: dict[Any, Expr] = {}
        for k in range(len(self.grid)):
            self.names[self.args[k]] = Expr(("var", f"pid{k}"))
        self.loops: list[Loop] = []
        self.events: list[Event] = []
        self.scoped = 0
        self.roots: dict[Any, str] = {}

    # -------------------------------------------------------- values

    def expr(self, value: Any, depth: int = 0) -> Expr:
        from jaxlib.mlir import ir

        if value in self.names:
            return self.names[value]
        if depth > 64:
            return Expr(("?", "deep"))
        owner = value.owner
        if not _is_op(owner):
            return Expr(("?", "block argument"))
        op = owner.operation
        name = op.name
        dialect, _, short = name.partition(".")
        if name == "arith.constant":
            attr = op.attributes["value"]
            try:
                return _const(ir.IntegerAttr(attr).value)
            except ValueError:
                return Expr(("?", "constant"))
        if name == "tpu.device_id":
            return Expr(("var", "device"))
        if dialect == "arith" and short in _PASS:
            return self.expr(op.operands[0], depth + 1)
        if dialect == "arith" and short in _ARITH:
            return _node(_ARITH[short], [self.expr(v, depth + 1) for v in op.operands])
        if name == "arith.cmpi":
            pred = _PREDICATES[int(ir.IntegerAttr(op.attributes["predicate"]).value)]
            return _node(pred, [self.expr(v, depth + 1) for v in op.operands])
        if name == "arith.select":
            return _node("select", [self.expr(v, depth + 1) for v in op.operands])
        if "load" in short:
            return Expr(("?", "load"))
        return Expr(("?", name))

    def ref(self, value: Any) -> Ref:
        """The root and slices of a memref value."""
        shape, dtype, space = _memref(value.type)
        index: list[Expr] = []
        v = value
        while True:
            if v in self.roots:
                root = self.roots[v]
                break
            owner = v.owner
            if not _is_op(owner):
                root = next((f"arg{k}" for k, a in enumerate(self.args) if a == v), "?argument")
                break
            op = owner.operation
            if op.name == "tpu.memref_slice":
                n = len(_memref(op.operands[0].type)[0])
                index = [self.expr(i) for i in list(op.operands)[1 : 1 + n]] + index
                v = op.operands[0]
            elif op.name in ("tpu.memref_squeeze", "tpu.memref_reshape", "tpu.memref_bitcast"):
                v = op.operands[0]
            elif op.name == "tpu.sem_barrier":
                root = "barrier"
                break
            else:
                root = f"?{op.name}"
                break
        return Ref(root, tuple(index), shape, dtype, space)

    def loaded_from(self, value: Any) -> Ref | None:
        v = value
        for _ in range(8):
            owner = v.owner
            if not _is_op(owner):
                return None
            op = owner.operation
            if op.name in ("vector.shape_cast", "vector.broadcast") and op.operands:
                v = op.operands[0]
                continue
            if op.name in ("vector.load", "tpu.load"):
                base = self.ref(op.operands[0])
                n = len(base.shape)
                at = tuple(self.expr(i) for i in list(op.operands)[1 : 1 + n])
                return Ref(base.root, base.index + at, base.shape, base.dtype, base.space)
            return None
        return None

    def kept_in(self, value: Any) -> tuple[Ref, ...]:
        found: list[Ref] = []
        todo, seen = [value], 0
        while todo and seen < 64:
            v = todo.pop()
            seen += 1
            for use in v.uses:
                user = use.owner.operation if hasattr(use.owner, "operation") else use.owner
                if user.name in STORES and use.operand_number == 0:
                    base = self.ref(user.operands[1])
                    n = len(base.shape)
                    at = tuple(self.expr(i) for i in list(user.operands)[2 : 2 + n])
                    found.append(
                        Ref(base.root, base.index + at, base.shape, base.dtype, base.space)
                    )
                elif user.name in THROUGH:
                    todo.extend(user.results)
        return tuple(found)

    def peers(self, device: Expr | None) -> tuple[int | None, ...] | None:
        if device is None or not device.free <= {"device"}:
            return None
        return tuple(device.evaluate({"device": d}) for d in range(self.devices))

    # -------------------------------------------------------- walking

    def kernel(self, name: str, communication: bool, collective: Any) -> Kernel:
        self.region(self.func.regions[0], (), ())
        self._sides()
        return Kernel(
            name=name,
            devices=self.devices,
            has_communication=communication,
            collective_id=None if collective is None else int(collective),
            grid=self.grid,
            semantics=self._semantics(),
            windows=self._windows(),
            operands=tuple(
                Operand(
                    k,
                    role,
                    *(_memref(a.type) if role not in ("program_id",) else ((), "int32", "")),
                )
                for k, (a, role) in enumerate(zip(self.args, self.roles, strict=True))
            ),  # fmt: skip
            loops=tuple(self.loops),
            events=tuple(self.events),
        )

    def _semantics(self) -> tuple[str, ...]:
        from jaxlib.mlir import ir

        if "dimension_semantics" not in self.func.attributes:
            return ()
        out = []
        for a in ir.ArrayAttr(self.func.attributes["dimension_semantics"]):
            text = str(a)  # "#tpu.dimension_semantics<parallel>"
            out.append(text.partition("<")[2].rstrip(">") or text)
        return tuple(out)

    def _windows(self) -> tuple[Window, ...]:
        from jaxlib.mlir import ir

        if "window_params" not in self.func.attributes:
            return ()
        out = []
        for w in ir.ArrayAttr(self.func.attributes["window_params"]):
            d = ir.DictAttr(w)
            block = (
                tuple(int(x) for x in ir.DenseI64ArrayAttr(d["window_bounds"]))
                if "window_bounds" in d else ()
            )  # fmt: skip
            index: tuple[Expr, ...] = ()
            if "transform_indices" in d:
                fn = self.functions.get(ir.FlatSymbolRefAttr(d["transform_indices"]).value)
                if fn is not None:
                    args = list(fn.regions[0].blocks[0].arguments)
                    for k, a in enumerate(args[: len(self.grid)]):
                        self.names[a] = Expr(("var", f"pid{k}"))
                    ret = [o.operation for o in fn.regions[0].blocks[0].operations][-1]
                    index = tuple(self.expr(v) for v in ret.operands)
            out.append(Window(block, index))
        return tuple(out)

    def region(self, region: Any, loops: tuple[int, ...], when: tuple) -> None:
        for block in region.blocks:
            for op in block.operations:
                self.op(op.operation, loops, when)

    def _at(self) -> int:
        return len(self.events)

    def op(self, op: Any, loops: tuple[int, ...], when: tuple) -> None:
        from jaxlib.mlir import ir

        name = op.name
        if name == "scf.for":
            lo, hi, st = (self.expr(v) for v in list(op.operands)[:3])
            index = len(self.loops)
            self.loops.append(Loop(index, "for", lo, hi, st, loops[-1] if loops else None))
            body = op.regions[0]
            self.names[body.blocks[0].arguments[0]] = Expr(("var", f"s{index}"))
            self.region(body, (*loops, index), when)
            return
        if name == "scf.while":
            index = len(self.loops)
            self.loops.append(Loop(index, "while", None, None, None, loops[-1] if loops else None))
            for r in op.regions:
                self.region(r, (*loops, index), when)
            return
        if name == "scf.if":
            cond = self.expr(op.operands[0])
            self.region(op.regions[0], loops, (*when, (cond, True)))
            if len(op.regions) > 1:
                self.region(op.regions[1], loops, (*when, (cond, False)))
            return
        if name == "tpu.sem_alloc" or name == "memref.alloca":
            self.roots[op.results[0]] = f"scoped{self.scoped}"
            self.scoped += 1
            return
        at = (self._at(), loops, when)
        if name == "tpu.enqueue_dma":
            v = op.opview
            device = self.expr(v.device_id) if v.device_id is not None else None
            self.events.append(DmaStart(
                *at, source=self.ref(v.source), target=self.ref(v.target),
                source_semaphore=self.ref(v.source_semaphore)
                if v.source_semaphore is not None else None,
                target_semaphore=self.ref(v.target_semaphore), device=device,
                peers=self.peers(device),
            ))  # fmt: skip
            return
        if name == "tpu.wait_dma2":
            v = op.opview
            device = self.expr(v.device_id) if v.device_id is not None else None
            self.events.append(DmaWait(
                *at, semaphore=self.ref(v.semaphore), side=None, stated=False,
                source=self.ref(v.src), target=self.ref(v.dst), device=device,
            ))  # fmt: skip
            return
        if name == "tpu.wait_dma":
            v = op.opview
            device = self.expr(v.device_id) if v.device_id is not None else None
            target = (
                bool(ir.BoolAttr(op.attributes["wait_target"]).value)
                if ("wait_target" in op.attributes)
                else True
            )
            sem = v.target_semaphore if target else v.source_semaphore
            if sem is None:
                raise Unrecognised("a tpu.wait_dma without the semaphore it waits on")
            self.events.append(DmaWait(
                *at, semaphore=self.ref(sem), side="receive" if target else "send",
                stated="wait_target" in op.attributes,
                source=self.ref(v.source), target=self.ref(v.target), device=device,
            ))  # fmt: skip
            return
        if name == "tpu.sem_signal":
            v = op.opview
            device = self.expr(v.device_id) if v.device_id is not None else None
            self.events.append(Signal(
                *at, semaphore=self.ref(v.semaphore), amount=self.expr(v.amount),
                device=device, peers=self.peers(device),
            ))  # fmt: skip
            return
        if name == "tpu.sem_wait":
            v = op.opview
            self.events.append(SemWait(*at, semaphore=self.ref(v.semaphore),
                                       amount=self.expr(v.amount)))  # fmt: skip
            return
        if name in ("tpu.matmul", "vector.contract"):
            lhs, rhs, acc = list(op.operands)[:3]
            self.events.append(Matmul(
                *at, op=name, lhs=_vector(lhs.type), rhs=_vector(rhs.type),
                accumulator=_vector(acc.type)[1], result=_vector(op.results[0].type),
                lhs_from=self.loaded_from(lhs), rhs_from=self.loaded_from(rhs),
                kept_in=self.kept_in(op.results[0]),
            ))  # fmt: skip
            return
        if name in STORES:
            ops = list(op.operands)
            base = self.ref(ops[1])
            index = tuple(self.expr(i) for i in ops[2 : 2 + len(base.shape)])
            ref = Ref(base.root, base.index + index, base.shape, base.dtype, base.space)
            try:
                elem = str(ir.ShapedType(ops[0].type).element_type)
            except ValueError:  # a scalar (memref.store)
                elem = str(ops[0].type)
            dtype = ELEMENT_TYPES.get(elem, elem)
            self.events.append(Store(*at, ref=ref, dtype=dtype, constant=_splat(ops[0])))
            return
        if (
            name.startswith("tpu.")
            and name not in HANDLED
            and any(w in name for w in ("dma", "sem", "barrier"))
        ):
            raise Unrecognised(f"a Mosaic op {name!r} this reader does not read")
        for r in op.regions:  # tpu.region (run_scoped), or any other op with regions
            opaque = name not in ("tpu.region", "func.func")
            self.region(r, loops, (*when, (Expr(("?", name)), True)) if opaque else when)

    def _sides(self) -> None:
        """The side of each ``tpu.wait_dma2`` (no ``wait_target``), read off which
        starts use its semaphore: only as some start's send semaphore → ``send``,
        only as receive semaphores → ``receive``."""
        sends = {s.source_semaphore for s in self.events if isinstance(s, DmaStart)}
        receives = {s.target_semaphore for s in self.events if isinstance(s, DmaStart)}
        for k, e in enumerate(self.events):
            if isinstance(e, DmaWait) and not e.stated:
                is_send, is_recv = e.semaphore in sends, e.semaphore in receives
                side = "send" if is_send and not is_recv else (
                    "receive" if is_recv and not is_send else None)  # fmt: skip
                self.events[k] = _replace(e, side=side)


def _splat(value: Any) -> float | None:
    """The constant every element of ``value`` has (a ``vector.broadcast`` of an
    ``arith.constant``, or a splat constant); None otherwise."""
    from jaxlib.mlir import ir

    for _ in range(4):
        owner = value.owner
        if not _is_op(owner):
            return None
        op = owner.operation
        if op.name in ("vector.broadcast", "vector.shape_cast"):
            value = op.operands[0]
            continue
        if op.name != "arith.constant":
            return None
        attr = op.attributes["value"]
        for kind in (ir.FloatAttr, ir.IntegerAttr):
            try:
                return float(kind(attr).value)
            except ValueError:
                pass
        try:
            dense = ir.DenseElementsAttr(attr)
        except ValueError:
            return None
        if not dense.is_splat:
            return None
        for kind in (ir.DenseFPElementsAttr, ir.DenseIntElementsAttr):
            try:
                return float(kind(attr)[0])
            except ValueError:
                pass
        return None
    return None


def _replace(e: Any, **changes: Any) -> Any:
    import dataclasses

    return dataclasses.replace(e, **changes)
