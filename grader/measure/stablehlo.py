"""Read the structure of an exported program from its StableHLO, through jaxlib's MLIR bindings.

The grading worker does not trust what the student's process says about the
program it exported (issue 19): it reads the program itself.
``read(exported.mlir_module())`` parses the module once (``ir.Module.parse`` in a
context with jax's dialects registered: stablehlo, chlo, sdy, func) and walks its
typed operations. It gives the same :class:`~grader.measure.jaxpr.Program` the jaxpr
reader gives, in the jaxpr's vocabulary, so the checks read either:

- ``counts``: op name → ops (``stablehlo.`` dropped: ``dot_general``, ``while`` …),
  bodies of loops, branches, called functions and composites' decompositions
  included, once per call site.
  ``shard_map`` counts ``sdy.manual_computation`` regions (or the legacy
  ``SPMDFullToShardShape`` custom call); ``checkpoint`` counts
  ``optimization_barrier``, which is what ``jax.checkpoint`` lowers to in a
  differentiated program.
- ``dtypes``: element type of every op's results, as numpy names.
- ``loops``: every ``stablehlo.while``. A loop whose condition is jax's scan form
  (``counter < constant``, signed) that starts its counter at a constant and adds
  1 to it in its body has its trip count read (primitive ``scan``); any other loop
  is a ``while`` with length None.
- ``collectives``: ``all_reduce`` (``psum``/``pmax``/``pmin`` by its reduction),
  ``all_gather``, ``reduce_scatter``, ``collective_permute`` (``ppermute``),
  ``all_to_all``, ``collective_broadcast`` (``pbroadcast``), each with the dtype
  and shape of its operands, the loops around it and the mesh axes its groups
  span: ``replica_groups``/``source_target_pairs`` (device positions, mapped
  through the module's first ``sdy.mesh``) or, from jax 0.12, the mesh axes the
  groups are named by (``#stablehlo.replica_group_mesh_axes``).
- ``dots``: every ``dot_general`` with its left operand's shape, contracted
  dimensions, result shape and dtype, and the trip counts of the loops around it.
- ``computed``: the float results of ``exponential``, ``log``, ``maximum``,
  ``add``, ``subtract``, ``multiply``, ``divide``, ``sqrt``, ``rsqrt``, ``convert``
  and of a ``reduce`` by ``add``/``maximum``, under their jaxpr names (:data:`~grader.measure.jaxpr.TRACKED`); the bodies of
  reductions, sorts and scatters are not the program's own arithmetic.

What the StableHLO cannot show, it does not claim: a ``shard_map`` whose manual
axes all have one device is inlined by jax's lowering (no manual computation), a
ppermute over one device is dropped (a psum stays), a scan of length 0 has no loop.
The Python names the jaxpr keeps (``psum_invariant``, ``all_gather_invariant``,
``pvary``, ``jit``) have no trace here; locations, which the exporting process
writes, are parsed by MLIR's own parser and never read.

Every supported jax (0.10.2 to 0.12) ships these bindings with the same classes
(``sdy.MeshAttr``, ``stablehlo.ReplicaGroupMeshAxesAttr``,
``stablehlo.DotDimensionNumbers`` …), so no text reader of StableHLO is kept. A
module MLIR cannot parse, an op outside :data:`STABLEHLO_OPS`/:data:`SDY_OPS`/
:data:`FUNC_OPS` or chlo, an element type outside :data:`ELEMENT_TYPES`, a dynamic
shape or groups over sub-axes raise :class:`Unrecognised`, never a guessed value.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Sequence
from typing import Any

from grader.measure.groups import spanned_axes
from grader.measure.jaxpr import FLOATS, Computed, Dot, Loop, Program, Site


class Unrecognised(ValueError):
    """A form of StableHLO this reader does not know."""


ELEMENT_TYPES = {
    "i1": "bool", "i4": "int4", "i8": "int8", "i16": "int16", "i32": "int32", "i64": "int64",
    "ui4": "uint4", "ui8": "uint8", "ui16": "uint16", "ui32": "uint32", "ui64": "uint64",
    "f16": "float16", "bf16": "bfloat16", "f32": "float32", "f64": "float64",
    "f8E4M3FN": "float8_e4m3fn", "f8E5M2": "float8_e5m2", "f8E4M3FNUZ": "float8_e4m3fnuz",
    "f8E5M2FNUZ": "float8_e5m2fnuz", "f8E4M3B11FNUZ": "float8_e4m3b11fnuz",
    "complex<f32>": "complex64", "complex<f64>": "complex128",
    "i2": "int2", "ui2": "uint2", "f8E4M3": "float8_e4m3", "f8E3M4": "float8_e3m4",
    "f4E2M1FN": "float4_e2m1fn", "f8E8M0FNU": "float8_e8m0fnu",
}  # fmt: skip
"""MLIR element type → numpy dtype name."""

TOKEN = "!stablehlo.token"

COLLECTIVE_OPS = {
    "all_gather": "all_gather",
    "reduce_scatter": "reduce_scatter",
    "collective_permute": "ppermute",
    "all_to_all": "all_to_all",
    "collective_broadcast": "pbroadcast",
}
"""StableHLO collective → the jaxpr primitive named for it (``all_reduce``: by its body)."""

REDUCTIONS = {"add": "psum", "maximum": "pmax", "minimum": "pmin"}

TRACKED = {
    "exponential": "exp",
    "log": "log",
    "maximum": "max",
    "add": "add",
    "subtract": "sub",
    "multiply": "mul",
    "divide": "div",
    "sqrt": "sqrt",
    "rsqrt": "rsqrt",
    "convert": "convert_element_type",
}
"""StableHLO op → the jaxpr name :attr:`Program.computed` records it under."""

REDUCERS = {"add": "reduce_sum", "maximum": "reduce_max"}

BODIES = frozenset({"reduce", "reduce_window", "scatter", "sort", "select_and_scatter"})
"""Ops whose regions compute per element for the op: not the program's own arithmetic,
and not read (jax's printer shows a one-op body as ``applies stablehlo.add``; the jaxpr
has one primitive, ``reduce_sum``, ``argmax``, ``sort`` …)."""

_STABLEHLO_NAMES = """
abs add after_all all_gather all_reduce all_to_all and atan2 batch_norm_grad
batch_norm_inference batch_norm_training bitcast_convert broadcast broadcast_in_dim case
cbrt ceil cholesky clamp collective_broadcast collective_permute compare complex composite
concatenate constant convert convolution cosine count_leading_zeros custom_call divide
dot_general dynamic_broadcast_in_dim dynamic_conv dynamic_gather dynamic_iota dynamic_pad
dynamic_reshape dynamic_slice dynamic_update_slice exponential exponential_minus_one fft
floor gather get_dimension_size get_tuple_element if imag infeed iota is_finite log
log_plus_one logistic map maximum minimum multiply negate not optimization_barrier or
outfeed pad partition_id popcnt power real real_dynamic_slice recv reduce reduce_precision
reduce_scatter reduce_window remainder replica_id reshape return reverse rng
rng_bit_generator round_nearest_afz round_nearest_even rsqrt scatter select
select_and_scatter send shift_left shift_right_arithmetic shift_right_logical sign sine
slice sort sqrt subtract tan tanh torch_index_select transpose triangular_solve tuple
uniform_dequantize uniform_quantize while xor
"""
STABLEHLO_OPS = frozenset(_STABLEHLO_NAMES.split())
"""Every StableHLO op this reader takes (``dot``, ``einsum`` … are refused: jax emits
``dot_general``)."""

SDY_OPS = frozenset({"manual_computation", "return", "sharding_constraint", "reshard",
                     "sharding_group", "propagation_barrier", "named_computation", "mesh"})  # fmt: skip
FUNC_OPS = frozenset({"func", "call", "return"})
RETURNS = frozenset({"func.return", "stablehlo.return", "sdy.return"})


# ------------------------------------------------------------------ parsing


CONTEXT_USES = 256
"""Parses one thread's context serves before a fresh one is made: a context keeps
every location and attribute it ever parsed, and a serving worker parses for hours."""

_held = threading.local()


def context() -> Any:
    """A context with jax's dialects registered (unregistered dialects are refused by
    MLIR), this thread's own, made afresh every :data:`CONTEXT_USES` parses: making
    one takes 1.9 ms on jax 0.10.2 (0.3 ms on 0.12), about as long as parsing a
    lesson's program. A module keeps its context alive; none is shared by threads."""
    from jax._src.interpreters import mlir

    held = getattr(_held, "context", None)
    if held is None or held[1] >= CONTEXT_USES:
        held = _held.context = [mlir.make_ir_context(), 0]
    held[1] += 1
    return held[0]


def parse(text: str) -> Any:
    """The module (``ir.Module``) of a program's StableHLO text (:func:`context`)."""
    from jaxlib.mlir import ir

    try:
        return ir.Module.parse(text, context=context())
    except ir.MLIRError as exc:
        raise Unrecognised(f"a module MLIR cannot parse: {str(exc)[:300]}") from None


def parse_exported(exported: Any) -> Any:
    """The module of a ``jax.export.Exported`` straight from its serialized portable
    artifact (:func:`context`): what ``exported.mlir_module()`` would print, without
    printing it (about 0.2 ms where printing takes 17 ms on jax 0.10.2, 1 and 3.6 ms on
    0.12)."""
    from jaxlib.mlir import ir
    from jaxlib.mlir.dialects import stablehlo

    try:
        return stablehlo.deserialize_portable_artifact(context(), exported.mlir_module_serialized)
    except ir.MLIRError as exc:
        raise Unrecognised(f"a module MLIR cannot read: {str(exc)[:300]}") from None


def custom_calls(program: Any) -> set[str]:
    """The targets of every ``stablehlo.custom_call`` in the module, functions never
    called included (what a program could call out of the devices)."""
    from jaxlib.mlir import ir

    found: set[str] = set()

    def visit(op: Any) -> Any:
        if op.name == "stablehlo.custom_call":
            found.add(ir.StringAttr(op.attributes["call_target_name"]).value)
        return ir.WalkResult.ADVANCE

    _as_module(program).operation.walk(visit)
    return found


def donated_parameters(program: Any) -> set[int]:
    """The parameters of the module's public ``main`` that it donates: marked
    ``tf.aliasing_output`` (donated and aliased to an output) or ``jax.buffer_donor``."""
    from jaxlib.mlir import ir

    for op in _as_module(program).body.operations:
        op = op.operation
        if op.name == "func.func" and _function_name(op) == "main":
            if "arg_attrs" not in op.attributes:
                return set()
            attrs = ir.ArrayAttr(op.attributes["arg_attrs"])
            return {
                i for i, a in enumerate(attrs)
                if any(k in ir.DictAttr(a) for k in ("tf.aliasing_output", "jax.buffer_donor"))
            }  # fmt: skip
    return set()


def _as_module(program: Any) -> Any:
    return parse(program) if isinstance(program, str | bytes) else program


def _ops(region: Any) -> list[Any]:
    """The operations of a single-block region."""
    blocks = list(region.blocks)
    if len(blocks) != 1:
        raise Unrecognised(f"a region of {len(blocks)} blocks")
    return [op.operation for op in blocks[0].operations]


def _known(name: str) -> None:
    dialect, _, op = name.partition(".")
    ok = (
        (dialect == "stablehlo" and op in STABLEHLO_OPS)
        or (dialect == "sdy" and op in SDY_OPS)
        or (dialect == "func" and op in FUNC_OPS)
        or dialect == "chlo"
    )
    if not ok:
        raise Unrecognised(f"an op {name!r}")


def _tensor(t: Any) -> tuple[tuple[int, ...], str | None]:
    """(shape, numpy dtype) of a tensor type; a token (or a tensor of tokens) has dtype None."""
    from jaxlib.mlir import ir

    if str(t) == TOKEN:
        return (), None
    if not isinstance(t, ir.RankedTensorType):
        raise Unrecognised(f"a type {str(t)[:80]!r}")
    rt = t
    if not rt.has_static_shape:
        raise Unrecognised(f"a dynamic shape {str(t)[:80]!r}")
    elem = str(rt.element_type)
    if elem == TOKEN:
        return tuple(rt.shape), None
    if elem not in ELEMENT_TYPES:
        raise Unrecognised(f"an element type {elem!r}")
    return tuple(rt.shape), ELEMENT_TYPES[elem]


def _types(values: Any) -> list[tuple[tuple[int, ...], str | None]]:
    return [_tensor(v.type) for v in values]


def _int_constant(value: Any) -> int | None:
    """The value of a scalar integer ``stablehlo.constant`` (None: anything else)."""
    from jaxlib.mlir import ir

    owner = value.owner
    if not isinstance(owner, ir.OpView | ir.Operation):
        return None  # a block argument
    op = owner.operation
    if op.name != "stablehlo.constant":
        return None
    t = op.results[0].type
    if t.shape or not isinstance(t.element_type, ir.IntegerType):
        return None
    return int(ir.DenseIntElementsAttr(op.attributes["value"])[0])


def _int_matrix(attr: Any) -> list[list[int]]:
    """A 2-d integer attribute (``replica_groups``, ``source_target_pairs``) as rows."""
    from jaxlib.mlir import ir

    dense = ir.DenseIntElementsAttr(attr)
    shape = ir.RankedTensorType(dense.type).shape
    if len(shape) != 2:
        raise Unrecognised(f"groups of shape {shape}")
    rows, cols = shape
    flat = [int(dense[0])] * (rows * cols) if dense.is_splat else [int(x) for x in dense]
    return [flat[r * cols : (r + 1) * cols] for r in range(rows)]


def _function_name(op: Any) -> str:
    from jaxlib.mlir import ir

    return ir.StringAttr(op.attributes["sym_name"]).value


# ------------------------------------------------------------------ reading


class _Mesh:
    def __init__(self, names: tuple[str, ...], sizes: tuple[int, ...], ids: tuple[int, ...]):
        self.names, self.sizes, self.ids = names, sizes, ids

    def axes_spanned(self, groups: list[list[int]]) -> tuple[str, ...]:
        """Mesh axes along which the members of some group (device ids) differ."""
        order = self.ids or tuple(range(_prod(self.sizes)))
        position = {device: k for k, device in enumerate(order)}
        if any(d not in position for g in groups for d in g):
            raise Unrecognised(f"a device of {groups} outside the mesh {self.names}")
        spanned = spanned_axes(
            tuple(tuple(position[d] for d in g) for g in groups), self.sizes, self.names
        )
        return tuple(name for name in self.names if name in spanned)


def _prod(xs: Sequence[int]) -> int:
    n = 1
    for x in xs:
        n *= int(x)
    return n


def _first_mesh(module: Any) -> _Mesh | None:
    from jaxlib.mlir.dialects import sdy

    for op in module.body.operations:
        if op.operation.name == "sdy.mesh":
            mesh = sdy.MeshAttr(op.operation.attributes["mesh"])
            axes = [sdy.MeshAxisAttr(a) for a in mesh.axes]
            return _Mesh(
                tuple(a.name for a in axes),
                tuple(int(a.size) for a in axes),
                tuple(int(i) for i in mesh.device_ids),
            )
    return None


class _Reader:
    def __init__(self, functions: dict[str, Any], mesh: _Mesh | None):
        self.functions, self.mesh = functions, mesh
        self.counts: Counter = Counter()
        self.dtypes: Counter = Counter()
        self.loops: list[Loop] = []
        self.sites: list[Site] = []
        self.dots: list[Dot] = []
        self.computed: Counter = Counter()
        self.calling: list[str] = []

    def function(self, name: str, around: tuple[Loop, ...], into: list[Counter]) -> None:
        if name not in self.functions:
            raise Unrecognised(f"a call to @{name}, which the module does not define")
        if name in self.calling or len(self.calling) > 64:
            raise Unrecognised(f"a recursive call to @{name}")
        self.calling.append(name)
        self.region(self.functions[name].regions[0], around, into)
        self.calling.pop()

    def region(self, region: Any, around: tuple[Loop, ...], into: list[Counter]) -> None:
        for op in _ops(region):
            self.op(op, around, into)

    def op(self, op: Any, around: tuple[Loop, ...], into: list[Counter]) -> None:
        from jaxlib.mlir import ir

        full = op.name
        _known(full)
        if full in RETURNS or full == "func.func":
            return  # a function's body is read where it is called
        dialect, _, short = full.partition(".")
        name = short if dialect == "stablehlo" else full
        if full == "sdy.manual_computation":
            name = "shard_map"
        elif full == "func.call":
            name = "call"
        elif full == "stablehlo.optimization_barrier":
            self._count("checkpoint", into)
        elif full == "stablehlo.custom_call":
            target = ir.StringAttr(op.attributes["call_target_name"]).value
            if target == "SPMDFullToShardShape":
                self._count("shard_map", into)
        self._count(name, into)
        if full == "func.call":  # a call's result types are its callee's
            callee = ir.FlatSymbolRefAttr(op.attributes["callee"]).value
            self.function(callee, around, into)
            return
        if full == "stablehlo.composite":  # what it computes is its decomposition (XLA inlines it)
            callee = ir.FlatSymbolRefAttr(op.attributes["decomposition"]).value
            self.function(callee, around, into)
            return
        self.dtypes.update(d for _, d in _types(op.results) if d is not None)
        if dialect != "stablehlo":
            for region in op.regions:
                self.region(region, around, into)
            return
        self._computed(op, short, around)
        if short == "dot_general":
            self.dots.append(self._dot(op, around))
        if short in COLLECTIVE_OPS or short == "all_reduce":
            self.sites.append(self._site(op, short, around))
            if short in ("all_reduce", "reduce_scatter"):
                return  # the reduction: an add per element, not the program's own
        if short == "while":
            self._while(op, around, into)
            return
        if short in BODIES:
            return  # its regions compute per element for the op (one primitive in the jaxpr)
        for region in op.regions:
            self.region(region, around, into)

    def _count(self, name: str, into: list[Counter]) -> None:
        self.counts[name] += 1
        for c in into:
            c[name] += 1

    def _computed(self, op: Any, short: str, around: tuple[Loop, ...]) -> None:
        name = TRACKED.get(short)
        if short == "reduce":
            inner = [o.name.partition(".")[2] for r in op.regions for o in _ops(r)
                     if o.name != "stablehlo.return"]  # fmt: skip
            name = REDUCERS.get(inner[0]) if len(inner) == 1 else None
        if name is None:
            return
        results = _types(op.results)
        if len(results) != 1 or results[0][1] not in FLOATS:
            return
        shape, dtype = results[0]
        source = ""
        if name == "convert_element_type":
            source = _types(op.operands)[0][1] or ""
        self.computed[Computed(name, dtype, _prod(shape), source, bool(around))] += 1  # type: ignore[arg-type]

    def _while(self, op: Any, around: tuple[Loop, ...], into: list[Counter]) -> None:
        cond, body = op.regions
        length = _trip_count(op, cond, body)
        inside: Counter = Counter()
        loop = Loop("scan" if length is not None else "while", length, len(around), inside)
        self.loops.append(loop)
        self.region(cond, around, into)
        self.region(body, (*around, loop), [*into, inside])

    def _dot(self, op: Any, around: tuple[Loop, ...]) -> Dot:
        from jaxlib.mlir.dialects import stablehlo

        operands, results = _types(op.operands), _types(op.results)
        numbers = stablehlo.DotDimensionNumbers(op.attributes["dot_dimension_numbers"])
        return Dot(
            lhs_shape=operands[0][0],
            lhs_contract=tuple(int(d) for d in numbers.lhs_contracting_dimensions),
            out_shape=results[0][0],
            loops=tuple(lp.length for lp in around),
            dtype=results[0][1] or "",
        )

    def _site(self, op: Any, short: str, around: tuple[Loop, ...]) -> Site:
        operands = _types(op.operands)
        if short == "all_reduce":
            inner = [o.name for o in _ops(op.regions[0]) if o.name != "stablehlo.return"]
            reduction = inner[0].partition(".")[2] if len(inner) == 1 else None
            if reduction not in REDUCTIONS or not inner[0].startswith("stablehlo."):
                raise Unrecognised(f"an all_reduce that reduces with {inner}")
            primitive = REDUCTIONS[reduction]  # type: ignore[index]
        else:
            primitive = COLLECTIVE_OPS[short]
        return Site(
            primitive=primitive,
            loops=around,
            dtypes=tuple(d for _, d in operands if d is not None),
            shapes=tuple(s for s, d in operands if d is not None),
            axes=self._axes(op, short),
        )

    def _axes(self, op: Any, short: str) -> tuple[str, ...]:
        """The mesh axes a collective's groups span."""
        from jaxlib.mlir.dialects import stablehlo

        attr = "source_target_pairs" if short == "collective_permute" else "replica_groups"
        if attr not in op.attributes:
            raise Unrecognised(f"a {short} without {attr}")
        groups = op.attributes[attr]
        if stablehlo.ReplicaGroupMeshAxesAttr.isinstance(groups):  # jax 0.12: named axes
            refs = [
                stablehlo.AxisRefAttr(a) for a in stablehlo.ReplicaGroupMeshAxesAttr(groups).axes
            ]
            if any(r.sub_axis_info is not None for r in refs):
                raise Unrecognised(f"replica groups over sub-axes {str(groups)[:120]!r}")
            return tuple(r.name for r in refs)
        matrix = _int_matrix(groups)
        return self.mesh.axes_spanned(matrix) if self.mesh is not None else ()


def _trip_count(op: Any, cond: Any, body: Any) -> int | None:
    """The trip count of jax's scan form (None: another loop, a student's ``while_loop``):
    the condition is ``counter < constant`` (signed), the counter starts at a constant
    and the body adds the constant 1 to it."""
    from jaxlib.mlir.dialects import stablehlo

    ops = [o for o in _ops(cond) if o.name != "stablehlo.constant"]
    if len(ops) != 2 or ops[0].name != "stablehlo.compare":
        return None
    compare, returned = ops
    direction = stablehlo.ComparisonDirectionAttr(compare.attributes["comparison_direction"])
    kind = compare.attributes.get("compare_type", None)
    counter, bound = compare.operands
    if (
        direction.value != "LT"
        or kind is None
        or stablehlo.ComparisonTypeAttr(kind).value != "SIGNED"
        or _tensor(counter.type) not in (((), "int32"), ((), "int64"))
        or list(returned.operands) != [compare.results[0]]
    ):
        return None
    position = _argument_of(counter, cond)
    limit = _int_constant(bound)
    if position is None or limit is None:
        return None
    start = _int_constant(op.operands[position])
    step = _step(body, position)
    if start is None or step != 1:
        return None  # a student's while_loop on computed bounds: no trip count
    return max(0, limit - start)


def _argument_of(value: Any, region: Any) -> int | None:
    """Which argument of ``region``'s block ``value`` is (None: not one)."""
    for i, arg in enumerate(region.blocks[0].arguments):
        if arg == value:
            return i
    return None


def _step(body: Any, position: int) -> int | None:
    """What the body adds to its ``position``-th carried value (None: not ``arg + constant``)."""
    from jaxlib.mlir import ir

    returned = _ops(body)[-1]
    value = returned.operands[position]
    owner = value.owner
    if not isinstance(owner, ir.OpView | ir.Operation) or owner.operation.name != "stablehlo.add":
        return None
    add = owner.operation
    if _tensor(add.results[0].type) not in (((), "int32"), ((), "int64")):
        return None
    a, b = add.operands
    arg = body.blocks[0].arguments[position]
    other = b if a == arg else a if b == arg else None
    return None if other is None else _int_constant(other)


def read(program: Any) -> Program:
    """Read an exported module: its StableHLO text (``Exported.mlir_module()``) or
    a module already parsed (:func:`parse`, :func:`parse_exported`)."""
    module = _as_module(program)
    functions = {}
    for op in module.body.operations:
        op = op.operation
        _known(op.name)
        if op.name == "func.func":
            functions[_function_name(op)] = op
    if "main" not in functions:
        raise Unrecognised("no @main in the module")
    reader = _Reader(functions, _first_mesh(module))
    reader.function("main", (), [])
    return Program(
        reader.counts, tuple(reader.loops), tuple(reader.sites), reader.dtypes,
        tuple(reader.dots), reader.computed,
    )  # fmt: skip


def partitions(program: Any) -> int:
    """``mhlo.num_partitions`` of the module: the devices its program runs on."""
    from jaxlib.mlir import ir

    attrs = _as_module(program).operation.attributes
    if "mhlo.num_partitions" not in attrs:
        raise Unrecognised("no mhlo.num_partitions in the module's attributes")
    return int(ir.IntegerAttr(attrs["mhlo.num_partitions"]).value)
