"""The grader's first StableHLO reader, regular expressions over the printed text:
kept as a test oracle only (issue 34). ``tests/test_readers.py`` reads every
solution's and every catalogued mistake's program with it and with the grader's
reader (:mod:`grader.measure.stablehlo`, jaxlib's MLIR bindings) and finds them
equal. Two readings were changed to the bindings reader's (measured on the 300
programs of the course, jax 0.10.2 and 0.12: they were the only differences):
the pretty ``stablehlo.select`` prints its predicate's type before its result's,
which this reader took for a second result; and a reduction's body (``reduce``,
``sort``, ``scatter`` …) is the op's per-element computation, read here only
when printed as a region, never now. It does not read a ``stablehlo.composite``'s
decomposition, which the grader's reader does (no program of the course has one).
Delete this file when a printer change
makes it costlier to keep than the second reading is worth.

Read the structure of an exported program from its StableHLO text.

The grading worker does not trust what the student's process says about the
program it exported (issue 19): it reads the program itself.
``read(exported.mlir_module())`` gives the same :class:`~grader.measure.jaxpr.Program`
the jaxpr reader gives, in the jaxpr's vocabulary, so the checks read either:

- ``counts``: op name → ops (``stablehlo.`` dropped: ``dot_general``, ``while`` …),
  bodies of loops, branches and called functions included, once per call site.
  ``shard_map`` counts ``sdy.manual_computation`` regions (or the legacy
  ``SPMDFullToShardShape`` custom call); ``checkpoint`` counts
  ``optimization_barrier``, which is what ``jax.checkpoint`` lowers to in a
  differentiated program.
- ``dtypes``: element type of every op's results, as numpy names.
- ``loops``: every ``stablehlo.while``. A loop whose condition is jax's scan form
  (``counter < constant``) must also start its counter at a constant and add 1
  in its body: its trip count is read (primitive ``scan``); any other condition
  is a ``while`` with length None. A scan form that does not add up is refused.
- ``collectives``: ``all_reduce`` (``psum``/``pmax``/``pmin`` by its reduction),
  ``all_gather``, ``reduce_scatter``, ``collective_permute`` (``ppermute``),
  ``all_to_all``, ``collective_broadcast`` (``pbroadcast``), each with the dtype
  and shape of its operands, the loops around it and the mesh axes its groups
  span (read from ``replica_groups``/``source_target_pairs`` and the ``sdy.mesh``).
- ``dots``: every ``dot_general`` with its left operand's shape, contracted
  dimensions, result shape and dtype, and the trip counts of the loops around it.
- ``computed``: the float results of ``exponential``, ``log``, ``maximum``,
  ``add``, ``subtract``, ``multiply``, ``divide``, ``sqrt``, ``rsqrt``, ``convert``
  and of a ``reduce`` by ``add``/``maximum``, under their jaxpr names
  (:data:`~grader.measure.jaxpr.TRACKED`); the bodies of reductions, sorts and scatters
  are not the program's own arithmetic.

What the StableHLO cannot show, it does not claim: a ``shard_map`` whose manual
axes all have one device is inlined by jax's lowering (no manual computation), a
ppermute over one device is dropped (a psum stays), a scan of length 0 has no loop. The
Python names the jaxpr keeps (``psum_invariant``, ``all_gather_invariant``, ``pvary``,
``jit``) have no trace here; locations (``loc(...)``), which the exporting process
writes, are ignored.

Pure text parsing of what the grader's own MLIR printer wrote (the worker
deserialises the program and prints it): anything it does not recognise raises
:class:`Unrecognised`, never a guessed value.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

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
}  # fmt: skip
"""MLIR element type → numpy dtype name."""

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

BODIES = ("stablehlo.reduce", "stablehlo.reduce_window", "stablehlo.scatter", "stablehlo.sort",
          "stablehlo.select_and_scatter")  # fmt: skip
"""Ops whose regions compute per element for the op (not the program's own arithmetic)."""

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
                     "sharding_group", "propagation_barrier", "named_computation"})  # fmt: skip
FUNC_OPS = frozenset({"func", "call", "return"})


# ------------------------------------------------------------------ lexing


def _strip_locs(line: str) -> str:
    """``line`` without its ``loc(...)`` parts (string-aware: a location may hold any text)."""
    if "loc(" not in line:  # most lines: nothing to drop (but an unclosed string is refused)
        i = 0
        while (q := line.find('"', i)) >= 0:
            i = _string_end(line, q)
        return line
    out: list[str] = []
    i, n = 0, len(line)
    while i < n:
        q, lo = line.find('"', i), _location_at(line, i)
        if lo < 0 and q < 0:
            out.append(line[i:])
            break
        if q >= 0 and (lo < 0 or q < lo):  # a string first: kept whole
            j = _string_end(line, q)
            out.append(line[i:j])
            i = j
            continue
        out.append(line[i:lo])
        depth, j = 0, lo + 3
        while j < n:
            ch = line[j]
            if ch == '"':
                j = _string_end(line, j)
                continue
            depth += ch == "("
            depth -= ch == ")"
            j += 1
            if depth == 0:
                break
        else:
            raise Unrecognised(f"an unclosed location: {line[:120]!r}")
        i = j
        if out:
            out[-1] = out[-1].rstrip(" ")
            while len(out) > 1 and not out[-1]:
                out.pop()
                out[-1] = out[-1].rstrip(" ")
    return "".join(out)


def _location_at(line: str, i: int) -> int:
    """Where the next ``loc(`` that starts a word is, from ``i`` (−1: none)."""
    while True:
        k = line.find("loc(", i)
        if k <= 0 or not (line[k - 1].isalnum() or line[k - 1] == "_"):
            return k
        i = k + 1


def _string_end(line: str, i: int) -> int:
    """Index after the string literal that starts at ``line[i] == '"'``."""
    j = i + 1
    while j < len(line):
        if line[j] == "\\":
            j += 2
            continue
        if line[j] == '"':
            return j + 1
        j += 1
    raise Unrecognised(f"an unclosed string: {line[:120]!r}")


def _mask(line: str) -> str:
    """``line`` with every string literal's contents blanked (brackets inside do not count)."""
    if '"' not in line:
        return line
    out, i = [], 0
    while (q := line.find('"', i)) >= 0:
        j = _string_end(line, q)
        out.append(line[i:q])
        out.append('"' + "_" * (j - q - 2) + '"')
        i = j
    out.append(line[i:])
    return "".join(out)


def _signature(masked: str) -> str:
    """The type after the last `` : `` outside brackets ('' if none)."""
    depth, at = 0, -1
    for i, ch in enumerate(masked):
        if ch in "([{<":
            depth += 1
        elif ch in ")]}" or (ch == ">" and masked[i - 1] != "-"):
            depth -= 1
        elif ch == ":" and depth == 0 and masked[i - 1 : i + 2] == " : ":
            at = i
    return masked[at + 2 :].strip() if at >= 0 else ""


_TENSOR = re.compile(r"tensor<([^<>]*(?:<[^<>]*>[^<>]*)?)>")


def _types(text: str) -> list[tuple[tuple[int, ...], str | None]]:
    """(shape, dtype) of every ``tensor<…>`` in ``text``; a token has dtype None."""
    out = []
    for body in _TENSOR.findall(text):
        body = body.split(",")[0].strip()  # drop an encoding
        m = re.fullmatch(r"((?:\d+x)*)(.+)", body)
        if m is None:
            raise Unrecognised(f"a tensor type {body!r}")
        dims = tuple(int(d) for d in m.group(1).split("x") if d)
        elem = m.group(2)
        if elem == "!stablehlo.token":
            out.append((dims, None))
        elif elem in ELEMENT_TYPES:
            out.append((dims, ELEMENT_TYPES[elem]))
        else:
            raise Unrecognised(f"an element type {elem!r}")
    return out


def _split_signature(sig: str) -> tuple[list, list]:
    """(operand types, result types) of an op's signature: ``(a, b) -> r`` or ``t``
    (the pretty form, where operands and results share the type)."""
    depth = 0
    for i, ch in enumerate(sig):
        if ch in "(<[{":
            depth += 1
        elif ch in ")]}" or (ch == ">" and sig[i - 1] != "-"):
            depth -= 1
        elif sig.startswith("->", i) and depth == 0:
            return _types(sig[:i]), _types(sig[i + 2 :])
    both = _types(sig)
    return both, both


# ------------------------------------------------------------------ the tree


@dataclass
class Op:
    name: str
    """``stablehlo.add``, ``sdy.manual_computation``, ``func.call`` …"""
    text: str
    """The op's opening line, locations dropped."""
    results: tuple[str, ...] = ()
    regions: list[list[Op]] = field(default_factory=list)
    closing: str = ""
    """What follows the ``}`` that ends its last region (its signature, for some ops)."""

    def signature(self) -> str:
        if self.closing.startswith(":"):  # "}) : (operands) -> results"
            return _mask(self.closing[1:]).strip()
        return _signature(_mask(self.closing or self.text))


_OPENING = re.compile(r'^\s*((?:%[\w#:]+(?:\s*,\s*%[\w#:]+)*)\s*=\s*)?("?)([A-Za-z_][\w.]*)\2')


def _parse(text: str) -> tuple[dict[str, list[Op]], str]:
    """Functions by name (their bodies), and the module's header line."""
    functions: dict[str, list[Op]] = {}
    header = ""
    root: list[Op] = []
    stack: list[tuple[Op | None, list[Op]]] = [(None, root)]
    for raw in text.splitlines():
        if raw.startswith("#loc") or not raw.strip():
            continue
        line = _strip_locs(raw)
        masked = _mask(line).strip()
        if masked.startswith("}"):
            if len(stack) < 2:
                raise Unrecognised("a '}' that closes nothing")
            owner, _ = stack.pop()
            rest = masked[1:].lstrip()
            if rest.startswith(")"):  # "})" ends a generic op's region list
                rest = rest[1:].lstrip()
                if rest.startswith(", {") or rest.startswith(",{"):
                    raise Unrecognised(f"a region list {masked[:80]!r}")
            if rest.startswith(","):
                rest = rest[1:].lstrip()
            if rest.endswith("{") and owner is not None:  # "} do {", "}, {": the next region
                region: list[Op] = []
                owner.regions.append(region)
                stack.append((owner, region))
            elif owner is not None:
                owner.closing = _strip_locs(raw).strip()[1:].lstrip(")").strip()
            continue
        if masked.startswith("^bb"):
            continue  # a block's arguments: their types are the op's own
        if re.fullmatch(r"(cond|reducer\(.*\))\s*\{", masked):  # a pretty op's first region
            owner = stack[-1][1][-1] if stack[-1][1] else None
            if owner is None or owner.name not in (
                "stablehlo.while",
                "stablehlo.reduce",
                "stablehlo.reduce_window",
                "stablehlo.scatter",
                "stablehlo.sort",
                "stablehlo.select_and_scatter",
            ):
                raise Unrecognised(f"a region {masked[:60]!r} after {owner and owner.name!r}")
            region = []
            owner.regions.append(region)
            stack.append((owner, region))
            continue
        m = _OPENING.match(line)
        if m is None:
            raise Unrecognised(f"a line {masked[:120]!r}")
        results = tuple(re.findall(r"%[\w#]+", m.group(1) or ""))
        op = Op(m.group(3), line.strip(), results)
        if op.name == "module":
            header = line
        elif op.name not in ("sdy.mesh",):
            _known(op.name)
        stack[-1][1].append(op)
        if masked.endswith("{"):
            region = []
            op.regions.append(region)
            stack.append((op, region))
            if op.name == "func.func":
                name = re.search(r"@([\w.$-]+|\"[^\"]*\")", line)
                if name is None:
                    raise Unrecognised(f"a function without a name: {masked[:120]!r}")
                functions[name.group(1)] = region
    if len(stack) != 1:
        raise Unrecognised("the module's regions do not close")
    return functions, header


def _known(name: str) -> None:
    dialect, _, op = name.partition(".")
    ok = (
        (dialect == "stablehlo" and op in STABLEHLO_OPS)
        or (dialect == "sdy" and op in SDY_OPS)
        or (dialect == "func" and op in FUNC_OPS)
        or dialect == "chlo"
        or name in ("call", "return")
    )
    if not ok:
        raise Unrecognised(f"an op {name!r}")


# ------------------------------------------------------------------ reading


@dataclass
class _Mesh:
    names: tuple[str, ...]
    sizes: tuple[int, ...]
    ids: tuple[int, ...] | None

    def axes_spanned(self, groups: list[list[int]]) -> tuple[str, ...]:
        """Mesh axes along which the members of some group differ."""
        coords = {}
        order = self.ids or tuple(range(_prod(self.sizes)))
        for pos, dev in enumerate(order):
            c, rest = [], pos
            for s in reversed(self.sizes):
                c.append(rest % s)
                rest //= s
            coords[dev] = tuple(reversed(c))
        spanned = set()
        for g in groups:
            cs = [coords.get(d) for d in g]
            if None in cs:
                raise Unrecognised(f"a device {g} outside the mesh {self.names}")
            for k in range(len(self.sizes)):
                if len({c[k] for c in cs}) > 1:
                    spanned.add(k)
        return tuple(self.names[k] for k in sorted(spanned))


def _prod(xs: Any) -> int:
    n = 1
    for x in xs:
        n *= int(x)
    return n


def _read_mesh(text: str) -> _Mesh | None:
    m = re.search(r"sdy\.mesh @[\w.$-]+ = <\[([^\]]*)\](?:, device_ids=\[([\d, ]*)\])?>", text)
    if m is None:
        return None
    axes = re.findall(r'"([^"]+)"=(\d+)', m.group(1))
    ids = tuple(int(x) for x in m.group(2).split(",")) if m.group(2) else None
    return _Mesh(tuple(a for a, _ in axes), tuple(int(s) for _, s in axes), ids)


def _dense_ints(attr: str, text: str) -> list[list[int]]:
    """A 2-d ``dense<…>`` integer attribute (``replica_groups``, ``source_target_pairs``)."""
    m = re.search(attr + r"\s*=\s*dense<([^>]*)>\s*:\s*tensor<(\d+)x(\d+)xi64>", text)
    if m is None:
        raise Unrecognised(f"no {attr} in {text[:160]!r}")
    rows, cols = int(m.group(2)), int(m.group(3))
    flat = [int(x) for x in re.findall(r"-?\d+", m.group(1))]
    if len(flat) == 1:
        flat = flat * (rows * cols)
    if len(flat) != rows * cols:
        raise Unrecognised(f"a {attr} of {len(flat)} values for {rows}x{cols}")
    return [flat[r * cols : (r + 1) * cols] for r in range(rows)]


class _Reader:
    def __init__(self, functions: dict[str, list[Op]], mesh: _Mesh | None):
        self.functions, self.mesh = functions, mesh
        self.counts: Counter = Counter()
        self.dtypes: Counter = Counter()
        self.loops: list[Loop] = []
        self.sites: list[Site] = []
        self.dots: list[Dot] = []
        self.computed: Counter = Counter()
        self.calling: list[str] = []
        self.in_body = 0

    def function(self, name: str, around: tuple[Loop, ...], into: list[Counter]) -> None:
        if name not in self.functions:
            raise Unrecognised(f"a call to @{name}, which the module does not define")
        if name in self.calling or len(self.calling) > 64:
            raise Unrecognised(f"a recursive call to @{name}")
        self.calling.append(name)
        self.region(self.functions[name], around, into, [{}])
        self.calling.pop()

    def region(
        self, ops: list[Op], around: tuple[Loop, ...], into: list[Counter], scope: list[dict]
    ) -> None:  # fmt: skip
        scope = [*scope, {}]
        for op in ops:
            self.op(op, around, into, scope)

    def op(self, op: Op, around: tuple[Loop, ...], into: list[Counter], scope: list[dict]) -> None:
        dialect, _, short = op.name.partition(".")
        if op.name in ("return", "func.return", "stablehlo.return", "sdy.return"):
            return
        if op.name == "func.func":
            return  # bodies are read where they are called
        name = short if dialect == "stablehlo" else op.name
        if op.name == "sdy.manual_computation":
            name = "shard_map"
        elif op.name in ("call", "func.call"):
            name = "call"
        elif op.name == "stablehlo.optimization_barrier":
            self._count("checkpoint", into)
        elif op.name == "stablehlo.custom_call" and "SPMDFullToShardShape" in op.text:
            self._count("shard_map", into)
        self._count(name, into)
        if op.name == "stablehlo.constant":
            m = re.fullmatch(
                r"%[\w#]+ = stablehlo\.constant dense<(-?\d+)> : tensor<[ui]\d+>", op.text
            )
            if m and op.results:
                scope[-1][op.results[0]] = int(m.group(1))
        _, results = _split_signature(op.signature())
        if op.name == "stablehlo.select" and "->" not in op.signature():
            results = results[-1:]  # "pred type, result type": the result is the last
        if op.name not in ("call", "func.call"):  # a call's results are its callee's
            self.dtypes.update(d for _, d in results if d is not None)
        if dialect == "stablehlo" and not self.in_body:
            self._computed(op, short, around)
        if op.name in ("call", "func.call"):
            callee = re.search(r"call @([\w.$-]+)", op.text)
            if callee is None:
                raise Unrecognised(f"a call {op.text[:120]!r}")
            self.function(callee.group(1), around, into)
            return
        if short == "dot_general" and dialect == "stablehlo":
            self.dots.append(self._dot(op, around))
        if dialect == "stablehlo" and (short in COLLECTIVE_OPS or short == "all_reduce"):
            self.sites.append(self._site(op, short, around))
        if op.name == "stablehlo.while":
            self._while(op, around, into, scope)
            return
        if op.name in BODIES:
            return  # per element for the op: not read (as the bindings reader)
        body = False
        self.in_body += body
        for region in op.regions:
            if op.name in ("stablehlo.all_reduce", "stablehlo.reduce_scatter"):
                continue  # the reduction: an add per element, not the program's own
            self.region(region, around, into, scope)
        self.in_body -= body

    def _computed(self, op: Op, short: str, around: tuple[Loop, ...]) -> None:
        name = TRACKED.get(short)
        if short == "reduce":
            m = re.search(r"applies stablehlo\.(\w+)", op.text)
            inner = (
                [m.group(1)]
                if m
                else [o.name.partition(".")[2] for r in op.regions for o in r
                      if o.name != "stablehlo.return"]
            )  # fmt: skip
            name = REDUCERS.get(inner[0]) if len(inner) == 1 else None
        if name is None:
            return
        operands, results = _split_signature(op.signature())
        if len(results) != 1 or results[0][1] not in FLOATS:
            return
        shape, dtype = results[0]
        source = operands[0][1] or "" if name == "convert_element_type" and operands else ""
        self.computed[Computed(name, dtype, _prod(shape), source, bool(around))] += 1

    def _count(self, name: str, into: list[Counter]) -> None:
        self.counts[name] += 1
        for c in into:
            c[name] += 1

    def _while(self, op: Op, around: tuple[Loop, ...], into: list[Counter], scope: list) -> None:
        if len(op.regions) != 2:
            raise Unrecognised(f"a while with {len(op.regions)} regions")
        cond, body = op.regions
        inits = re.findall(r"(%iterArg[\w]*) = (%[\w#]+)", op.text)
        length = self._trip_count(cond, body, dict(inits), op.results, scope)
        inside: Counter = Counter()
        loop = Loop("scan" if length is not None else "while", length, len(around), inside)
        self.loops.append(loop)
        self.region(cond, around, into, scope)
        self.region(body, (*around, loop), [*into, inside], scope)

    def _trip_count(
        self, cond: list[Op], body: list[Op], inits: dict[str, str], results: tuple, scope: list
    ) -> int | None:  # fmt: skip
        ops = [o for o in cond if o.name != "stablehlo.constant"]
        consts = [{**{k: v for d in scope for k, v in d.items()}}]
        for o in cond:
            if o.name == "stablehlo.constant":
                m = re.fullmatch(
                    r"(%[\w#]+) = stablehlo\.constant dense<(-?\d+)> : tensor<[ui]\d+>", o.text
                )
                if m:
                    consts[0][m.group(1)] = int(m.group(2))
        if len(ops) != 2 or ops[0].name != "stablehlo.compare":
            return None
        m = re.fullmatch(r"(%[\w#]+) = stablehlo\.compare\s+LT, (%iterArg\w*), (%[\w#]+), SIGNED : \(tensor<i(?:32|64)>, tensor<i(?:32|64)>\) -> tensor<i1>", ops[0].text)  # fmt: skip
        if m is None or not ops[1].text.startswith(f"stablehlo.return {m.group(1)} "):
            return None
        counter, bound = m.group(2), consts[0].get(m.group(3))
        start = inits.get(counter)
        start = None if start is None else self._constant(start, scope)
        names = list(inits)
        if bound is None or start is None or counter not in names:
            return None  # the student's own while_loop on computed bounds: no trip count
        returned = [o for o in body if o.name == "stablehlo.return"]
        if len(returned) != 1:
            raise Unrecognised("a loop body without one return")
        outs = re.findall(r"%[\w#]+", returned[0].text.split(":")[0])
        position = names.index(counter)
        if position >= len(outs):
            raise Unrecognised("a loop body that returns fewer values than it carries")
        step = self._increment(body, outs[position], counter, scope)
        if step != 1:
            return None  # a counter that does not add 1 (a student's while_loop): no trip count
        return max(0, bound - start)

    def _constant(self, name: str, scope: list[dict]) -> int | None:
        for d in reversed(scope):
            if name in d:
                return d[name]
        return None

    def _increment(self, body: list[Op], value: str, counter: str, scope: list) -> int | None:
        local = [{}]
        for o in body:
            m = re.fullmatch(
                r"(%[\w#]+) = stablehlo\.constant dense<(-?\d+)> : tensor<[ui]\d+>", o.text
            )
            if m:
                local[0][m.group(1)] = int(m.group(2))
        for o in body:
            if o.results == (value,) and o.name == "stablehlo.add":
                m = re.fullmatch(
                    r"%[\w#]+ = stablehlo\.add (%[\w#]+), (%[\w#]+) : tensor<i(?:32|64)>", o.text
                )
                if m is None:
                    return None
                a, b = m.groups()
                other = b if a == counter else a if b == counter else None
                return None if other is None else self._constant(other, [*scope, *local])
        return None

    def _dot(self, op: Op, around: tuple[Loop, ...]) -> Dot:
        operands, results = _split_signature(op.signature())
        m = re.search(r"contracting_dims = \[([\d, ]*)\] x \[([\d, ]*)\]", op.text)
        if len(operands) != 2 or len(results) != 1 or m is None:
            raise Unrecognised(f"a dot_general {op.text[:160]!r}")
        return Dot(
            lhs_shape=operands[0][0],
            lhs_contract=tuple(int(x) for x in m.group(1).split(",") if x.strip()),
            out_shape=results[0][0],
            loops=tuple(lp.length for lp in around),
            dtype=results[0][1] or "",
        )

    def _site(self, op: Op, short: str, around: tuple[Loop, ...]) -> Site:
        operands, _ = _split_signature(op.signature())
        if not operands:
            raise Unrecognised(f"a collective without operand types {op.text[:160]!r}")
        if short == "all_reduce":
            if len(op.regions) != 1:
                raise Unrecognised("an all_reduce without its reduction")
            inner = [
                o.name.partition(".")[2] for o in op.regions[0] if o.name != "stablehlo.return"
            ]
            if len(inner) != 1 or inner[0] not in REDUCTIONS:
                raise Unrecognised(f"an all_reduce that reduces with {inner}")
            primitive = REDUCTIONS[inner[0]]
        else:
            primitive = COLLECTIVE_OPS[short]
        by_axes = re.search(r"replica_groups = #stablehlo\.replica_group_mesh_axes<mesh = @[\w.$-]+, axes = \[((?:[^\[\]])*)\]>", op.text)  # fmt: skip
        if by_axes is not None:  # jax 0.12: the groups named by mesh axes
            refs = re.findall(r"#stablehlo\.axis_ref<([^<>]*)>", by_axes.group(1))
            if not all(re.fullmatch(r'name = "[^"]+"', r) for r in refs):
                raise Unrecognised(f"replica groups over sub-axes {by_axes.group(1)[:120]!r}")
            axes = tuple(re.fullmatch(r'name = "([^"]+)"', r).group(1) for r in refs)  # type: ignore[union-attr]
        else:
            attr = "source_target_pairs" if short == "collective_permute" else "replica_groups"
            groups = _dense_ints(attr, op.text)
            axes = self.mesh.axes_spanned(groups) if self.mesh is not None else ()
        return Site(
            primitive=primitive,
            loops=around,
            dtypes=tuple(d for _, d in operands if d is not None),
            shapes=tuple(s for s, d in operands if d is not None),
            axes=axes,
        )


def calls_in_text(text: str) -> set[str]:
    """The custom calls' targets named anywhere in a program's printed StableHLO (the
    worker's host-call check read them so before it read the module itself)."""
    targets = set(re.findall(r"custom_call\s*@([\w.$-]+)", text))
    return targets | set(re.findall(r'call_target_name\s*=\s*"([^"]+)"', text))


def read(text: str) -> Program:
    """Read an exported module's StableHLO text (``Exported.mlir_module()``)."""
    functions, header = _parse(text)
    if "main" not in functions:
        raise Unrecognised("no @main in the module")
    reader = _Reader(functions, _read_mesh(text))
    reader.function("main", (), [])
    return Program(
        reader.counts, tuple(reader.loops), tuple(reader.sites), reader.dtypes,
        tuple(reader.dots), reader.computed,
    )  # fmt: skip


def partitions(text: str) -> int:
    """``mhlo.num_partitions`` of the module: the devices its program runs on."""
    m = re.search(r"mhlo\.num_partitions = (\d+) : i32", text.split("\n", 3)[0] + text[:4000])
    if m is None:
        raise Unrecognised("no mhlo.num_partitions in the module's attributes")
    return int(m.group(1))
