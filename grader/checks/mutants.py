"""The reference with one piece of its formula changed (issue 45 §3–4).

A wrong value is often the right program with one piece of its formula written another
way: a difference the other way round (``q - p`` for ``p - q``), a quotient upside down
(``amax / 448``), a factor or a term left out, a nonlinearity applied after a matmul
instead of before it, a softmax taken over the other axis, a comparison with ``<`` for
``<=``, the weights of a running average swapped, a power written as a product
(``b * t`` for ``b ** t``), a function applied twice, a comparison the other way round
(``q <= k`` for ``q >= k``), two arguments of a call in the other order (``where(mask,
-inf, s)``, ``tree.map(f, grads, params)``), another dtype (float8_e5m2 for
float8_e4m3fn), an array tiled where it is repeated entry by entry (``np.repeat``: a
key/value head mapping j % K where j // (N/K) belongs), a recurrence ``m = b·m + g`` as a
running average ``b·m + (1 − b)·g``, a value rounded to integers before a cast, an absolute
value where the positive part belongs (``abs(p - q)`` for ``maximum(p - q, 0)``), a sigmoid
or a log-softmax where a softmax belongs, a transpose left out, a reduction over every axis where one
axis belongs, a term of a sum counted twice (``2·h + f(h)``: a residual added again), a variable
read at its value before its update (``w − lr·m`` with the old ``m``: one step behind).
These are mutations of the
reference's own source, and they need no list of known mistakes: this module parses a
reference function (and the functions of the grader's that it calls by name, down to
:data:`DEPTH` calls), and
yields every such change of it as a function of the same signature, each with the change
in words: the piece as the reference has it, as changed, and the reference's line.

:mod:`grader.checks.variants` tries them after the changes of the arguments, within its
time budget, and says the first whose value the output equals on every element, to the
check's own tolerance. The sentence says what was measured (this value, computed so), not
a cause; the reference's lines it quotes are formulas the lesson's text states.

A change applied at every place where the same piece occurs (``axis=-1`` in both the
max and the sum of a softmax; both moments' weights) is tried first, as one change: a
misreading is usually consistent.
"""

from __future__ import annotations
import __future__

import ast
import copy
import dataclasses
import functools
import inspect
import textwrap
import types
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

OURS = ("grader.expected", "grader.lessons", "grader.reference")
"""Modules whose functions may be changed: the grader's references and lessons."""

_OTHER_OP = {ast.Mult: ast.Div, ast.Div: ast.Mult, ast.Add: ast.Sub, ast.Sub: ast.Add,
             ast.FloorDiv: ast.Mod, ast.Mod: ast.FloorDiv, ast.Pow: ast.Mult}  # fmt: skip
_OTHER_CALL = {"sum": ("mean", "a mean where the reference sums"),
               "mean": ("sum", "a sum where the reference takes a mean"),
               "max": ("min", "the smallest where the reference takes the largest"),
               "min": ("max", "the largest where the reference takes the smallest"),
               "maximum": ("minimum", "the smaller where the reference takes the larger"),
               "minimum": ("maximum", "the larger where the reference takes the smaller"),
               "argmax": ("argmin", "the smallest's index where the reference takes the largest's"),
               "argmin": ("argmax", "the largest's index where the reference takes the smallest's"),
               "tril": ("triu", "the upper triangle where the reference keeps the lower"),
               "triu": ("tril", "the lower triangle where the reference keeps the upper")}  # fmt: skip
"""Functions (by their last name: ``np.sum``, ``x.sum``, ``max``) read as another."""
_OTHER_CMP = {ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt}
_REVERSED_CMP = {ast.Lt: ast.Gt, ast.Gt: ast.Lt, ast.LtE: ast.GtE, ast.GtE: ast.LtE}
_OTHER_DTYPE = {"float8_e4m3fn": ("float8_e5m2",), "float8_e5m2": ("float8_e4m3fn",),
                "bfloat16": ("float16", "float32"), "float16": ("bfloat16", "float32"),
                "float32": ("bfloat16", "float16"), "int8": ("uint8",), "uint8": ("int8",)}  # fmt: skip
"""Dtypes (by name: ``ml_dtypes.float8_e4m3fn``, ``jnp.bfloat16``, ``"float16"``) read as a
neighbour of theirs: the other float8, the other 16-bit float, a narrow float for float32."""


@dataclass(frozen=True)
class Mutant:
    """One change of a reference's source: in words, and the function it makes."""

    what: str
    """``"with the difference the other way round — `q - p` in place of `p - q`"``."""
    fn: Callable[..., Any]
    where: str
    """``"in `residual = np.maximum(p - q, 0.0)`"``: the reference's line."""

    text: Callable[[], str] = lambda: ""
    """The changed function's source, made when asked: two changes of one text (``(1 - b2)
    * g * g`` with either ``g`` left out) are one."""
    pieces: tuple[str, ...] = ()
    """A change at one place: the changed piece's text, then each expression around it up
    to its statement (``("b2 ** t", "1 - b2 ** t", "v / (1 - b2 ** t)", …)``); where many
    changes give one value, the piece they all change is said (:mod:`.variants`)."""
    swap: str = ""
    """``"`b2 * t` in place of `b2 ** t`"``: the change alone, in few words."""

    @property
    def said(self) -> str:
        return f"{self.what} {self.where}"


@dataclass(frozen=True)
class _Site:
    index: int
    """The node's place in :func:`ast.walk` order of the function's tree."""
    new: ast.AST
    old_text: str
    new_text: str
    line: int
    words: str
    """The kind of change: ``"the quotient upside down"``."""
    group: str
    """Sites with one ``group`` are the same change at several places."""
    late: bool = False
    """A kind tried after the others (two arguments swapped, another dtype, a comparison
    reversed: many of them, rarely the one): the time budget reaches the common kinds
    first."""


def ours(fn: Any) -> bool:
    """A plain function of the grader's references or lessons (source to read)."""
    return isinstance(fn, types.FunctionType) and str(fn.__module__).startswith(OURS)


DEPTH = 3
"""How far down the calls a change is looked for: the reference, what it calls, and so
on (lesson 16's logits, its hidden states, its blocks, their attention)."""


def mutants(fn: Callable[..., Any], depth: int = DEPTH) -> Iterator[Mutant]:
    """Every one-piece change of ``fn`` (a plain function: no closure, no method), then
    of each function of ours (:func:`ours`) that it calls by a global name (``mlp(…)``,
    or ``cost.prefill_time(…)`` through a module or a hidden reference's
    :class:`grader.later.Expected`), and so on ``depth`` calls down, level by level (all
    that ``fn`` calls before what they call), each function once. A function changed
    below is changed wherever the reference calls it: every caller on the way is a copy
    whose globals name the changed one. The common kinds of every function first, then
    the late ones (:attr:`_Site.late`, another variable read) of every function: a time
    budget reaches the first pass of all the functions."""
    calls: dict[Any, list[tuple[str, str | None, types.FunctionType]]] = {}
    order: list[types.FunctionType] = []
    if isinstance(fn, types.FunctionType):
        level = [fn]
        for _ in range(depth):
            below = []
            for caller in level:
                calls[caller] = _callees(caller)
                for _name, _attr, callee in calls[caller]:
                    if callee is not fn and callee not in calls and callee not in below:
                        below.append(callee)
            order += below
            level = below
    for late in (False, True):
        yield from _of(fn, called=False, late=late)
        for callee in order:
            for m in _of(callee, called=True, late=late):
                yield dataclasses.replace(m, fn=_substituted(fn, calls, callee, m.fn))


def _substituted(top: types.FunctionType, calls: dict, old: Any,
                 new: Callable[..., Any]) -> Callable[..., Any]:  # fmt: skip
    """``top`` with ``old`` replaced by ``new`` wherever it is called, down ``calls``:
    each function on a way to ``old`` copied with globals that name the copies below."""
    built: dict[Any, Any] = {old: new}

    def build(f: Any) -> Any:
        if f in built:
            return built[f]
        built[f] = f  # a call back up (recursion) keeps the original
        overrides: dict[str, dict[str | None, Any]] = {}
        for name, attr, callee in calls.get(f, ()):
            changed = build(callee)
            if changed is not callee:
                overrides.setdefault(name, {})[attr] = changed
        if overrides:
            patched = dict(f.__globals__)
            for name, by_attr in overrides.items():
                patched[name] = (by_attr[None] if None in by_attr
                                 else _Proxy(f.__globals__[name], by_attr))  # fmt: skip
            built[f] = _rebound(f, patched)
        return built[f]

    return build(top)


class _Proxy:
    """A module (or :class:`grader.later.Expected`) with some of its functions changed."""

    def __init__(self, module: Any, changed: dict[str | None, Any]) -> None:
        self._module, self._changed = module, changed

    def __getattr__(self, name: str) -> Any:
        if name in self._changed:
            return self._changed[name]
        return getattr(self._module, name)


def _callees(fn: types.FunctionType) -> list[tuple[str, str | None, types.FunctionType]]:
    """(global name, attribute or None, function) of ours that ``fn`` calls by name: a
    function, a hidden reference's wrapper (:meth:`grader.later.Expected.fn`) by the
    function it wraps, or a function read off a module of ours or an ``Expected``."""
    out: list[tuple[str, str | None, types.FunctionType]] = []
    names = list(dict.fromkeys(_names(fn.__code__)))
    for name in names:
        value = unwrapped(fn.__globals__.get(name))
        if value is not fn and ours(value):
            out.append((name, None, value))
        elif _module_of_ours(value):
            for attr in names:
                try:  # a lesson's module may name a hidden reference's function too
                    found = unwrapped(getattr(value, attr, None))
                except Exception:  # the grader's side not importable here
                    found = None
                if found is not fn and ours(found):
                    out.append((name, attr, found))
    return out


def unwrapped(value: Any) -> Any:
    """A hidden reference's wrapper (:meth:`grader.later.Expected.fn`) as the function it
    wraps; anything else as it is (None where the grader's side cannot be imported)."""
    target = getattr(value, "target", None)
    if not callable(target):
        return value
    try:
        return target()
    except Exception:  # the grader's side not importable here
        return None


def _module_of_ours(value: Any) -> bool:
    from grader.later import Expected

    if isinstance(value, Expected):
        return True
    return isinstance(value, types.ModuleType) and value.__name__.startswith(OURS)


def _names(code: types.CodeType) -> list[str]:
    """The global names ``code`` and the code nested in it (a comprehension) read."""
    return [*code.co_names, *(n for c in code.co_consts if isinstance(c, types.CodeType)
                               for n in _names(c))]  # fmt: skip


def _rebound(fn: types.FunctionType, globals_: dict) -> types.FunctionType:
    new = types.FunctionType(fn.__code__, globals_, fn.__name__, fn.__defaults__, fn.__closure__)
    new.__kwdefaults__ = fn.__kwdefaults__
    return new


def _tree(fn: types.FunctionType) -> tuple[ast.FunctionDef, list[str]] | None:
    if not isinstance(fn, types.FunctionType) or fn.__closure__ or fn.__qualname__ != fn.__name__:
        return None  # a closure or a method cannot be rebuilt from its source alone
    try:
        lines = textwrap.dedent(inspect.getsource(fn))
        node = ast.parse(lines).body[0]
    except (OSError, TypeError, SyntaxError, IndexError):
        return None
    if not isinstance(node, ast.FunctionDef):
        return None
    node.decorator_list = []  # a cache or jit around it: the change is called plainly
    _unshare(node)
    return node, lines.splitlines()


def _unshare(tree: ast.AST) -> None:
    """A node of its own at each operator and context of ``tree``: CPython's parser
    hands out one shared ``Mult()``, ``Load()``… for all trees, so a place written on one
    (``_place``) would be the last tree's, and a change built at that place would land at
    every ``*`` of another function too (which functions a process had read changed which
    changes it could build)."""
    for node in ast.walk(tree):
        for field, value in ast.iter_fields(node):
            if isinstance(value, ast.AST) and not value._fields:
                setattr(node, field, type(value)())
            elif isinstance(value, list):
                value[:] = [type(x)() if isinstance(x, ast.AST) and not x._fields else x
                            for x in value]  # fmt: skip


def _of(fn: types.FunctionType, called: bool = False, late: bool = False) -> Iterator[Mutant]:
    """The changes of ``fn``'s own body: every change at all its places first (where a
    piece occurs more than once), then each place alone; the common kinds and another
    number read, or (``late``) the late kinds and another variable read."""
    prepared = _prepared(fn)
    if prepared is None:
        return
    for m in _changed(fn, prepared, late):
        if called:
            where = f"{m.where} (in `{fn.__name__}`, which the reference calls)"
            m = dataclasses.replace(m, where=where)
        yield m


@dataclass(frozen=True)
class _Prepared:
    """A function's tree read once for both passes of :func:`mutants` (and every later
    failing grade in this process): never changed, only copied where a change is built."""

    tree: ast.FunctionDef
    lines: list[str]
    nodes: list[ast.AST]
    """The tree's nodes in :func:`ast.walk` order; each carries its place as ``_place``."""
    skip: frozenset[int]
    """Nodes never changed (the docstring, the signature, a ``while`` loop's test: a change
    there could loop for ever)."""
    up: dict[int, int]
    """Each place's parent's place."""
    sites: list[_Site]
    groups: dict[str, list[_Site]]
    stale: list[list[_Site]] = dataclasses.field(default_factory=list)
    """Reads of a variable at its value before its update (:func:`_stale`): tried after
    the single sites of the first pass (a term left out goes first where both give it)."""


@functools.lru_cache(maxsize=256)
def _prepared(fn: types.FunctionType) -> _Prepared | None:
    made = _tree(fn)
    if made is None:
        return None
    tree, lines = made
    nodes = list(ast.walk(tree))
    for i, node in enumerate(nodes):
        node._place = i  # type: ignore[attr-defined]
    skip = {id(n) for stmt in tree.body[:1] if _docstring(tree) for n in ast.walk(stmt)}
    skip |= {id(n) for n in ast.walk(tree.args)}  # defaults and annotations
    skip |= {id(n) for n in ast.walk(tree.returns)} if tree.returns else set()
    skip |= {id(n) for w in ast.walk(tree) if isinstance(w, ast.While) for n in ast.walk(w.test)}
    parents = {id(c): p for p in nodes for c in ast.iter_child_nodes(p)}
    fields = _fields(fn, tree)
    up = {i: parents[id(n)]._place for i, n in enumerate(nodes) if id(n) in parents}
    sites = [
        s for i, node in enumerate(nodes) if id(node) not in skip
        for s in _sites(i, node, parents.get(id(node)), lines, fields, parents)
    ]  # fmt: skip
    groups: dict[str, list[_Site]] = {}
    for s in sites:
        groups.setdefault(s.group, []).append(s)
    stale = list(_stale(tree, skip, lines))
    return _Prepared(tree, lines, nodes, frozenset(skip), up, sites, groups, stale)


STALE = "stale:"
"""The group key's start of a read of a variable's value before its update (:func:`_stale`)."""


def _stale(tree: ast.FunctionDef, skip: set[int], lines: list[str]) -> Iterator[list[_Site]]:
    """A variable updated from itself (``m = b * m + g``) read further on at its value
    before the update (``master - lr * m`` with the old ``m``: a state one step behind):
    per later read, the update keeps the old value aside (``m = (_before_m := m, …)[1]``)
    and that read takes it."""
    blocks = [tree.body] + [getattr(n, f) for n in ast.walk(tree)
                            for f in ("body", "orelse") if n is not tree
                            and isinstance(getattr(n, f, None), list)]  # fmt: skip
    for block in blocks:
        for i, stmt in enumerate(block):
            if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1
                    and isinstance(stmt.targets[0], ast.Name) and id(stmt) not in skip):  # fmt: skip
                continue
            name = stmt.targets[0].id
            if not any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(stmt.value)):
                continue  # not an update of itself
            aside = f"_before_{name}"
            kept = ast.Subscript(
                value=ast.Tuple(elts=[ast.NamedExpr(target=ast.Name(id=aside, ctx=ast.Store()),
                                                    value=ast.Name(id=name, ctx=ast.Load())),
                                      stmt.value], ctx=ast.Load()),
                slice=ast.Constant(1), ctx=ast.Load())  # fmt: skip
            for later in block[i + 1 :]:
                targets = {t.id for t in getattr(later, "targets", []) if isinstance(t, ast.Name)}
                for n in ast.walk(later):
                    if (isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id == name
                            and id(n) not in skip):  # fmt: skip
                        key = f"{STALE}{n._place}"  # type: ignore[attr-defined]
                        before = lines[stmt.lineno - 1].strip()
                        yield [
                            _Site(
                                n._place,
                                ast.Name(id=aside, ctx=ast.Load()),
                                name,  # type: ignore[attr-defined]
                                before,
                                n.lineno - 1,
                                f"`{name}` read before its update (one step behind)",
                                key,
                            ),
                            _Site(
                                stmt.value._place,
                                kept,
                                "",
                                "",
                                stmt.lineno - 1,  # type: ignore[attr-defined]
                                "",
                                key,
                            ),
                        ]
                if name in targets:
                    break  # assigned again: later reads are of the new value


def _changed(fn: types.FunctionType, p: _Prepared, late: bool = False) -> Iterator[Mutant]:
    """:func:`_of`'s changes, each compiled when it is asked for (the caller's budget
    stops the rest)."""
    tree, lines, nodes, skip, up = p.tree, p.lines, p.nodes, p.skip, p.up
    sites, groups = p.sites, p.groups
    for group in groups.values():
        if group[0].late != late:
            continue
        if len(group) > 1 and group[0].new_text != group[0].old_text:
            first = group[0]
            where = "; ".join(f"`{lines[i].strip()}`" for i in sorted({s.line for s in group}))
            built = _built(fn, tree, group, up)
            if built is not None:
                yield Mutant(f"with {first.words} at all {len(group)} places — "
                             f"`{first.new_text}` in place of `{first.old_text}`"
                             f"{_values(fn, first)}", built, f"in {where}",
                             _text_of(built))  # fmt: skip
    for s in sites:
        if s.new_text == s.old_text or s.late != late:
            continue
        built = _built(fn, tree, [s], up)
        if built is not None:
            swap = f"`{s.new_text}` in place of `{s.old_text}`"
            yield Mutant(f"with {s.words} — {swap}{_values(fn, s)}", built,
                         f"in `{lines[s.line].strip()}`", _text_of(built),
                         _around(nodes, up, s.index), swap)  # fmt: skip
    for group in p.stale if not late else ():
        first = group[0]
        built = _built(fn, tree, group, up)
        if built is not None:
            swap = (
                f"`{first.old_text}` as it was before `{first.new_text}`, in place of its new value"
            )
            yield Mutant(f"with {first.words} — {swap}", built,
                         f"in `{lines[first.line].strip()}`", _text_of(built), (), swap)  # fmt: skip
    numbers = _numbers(tree, skip)
    kind, names = ("variable", _variables(tree, skip, numbers)) if late else ("number", numbers)
    for stmt, name, other, group in _renamed(nodes, skip, names):  # last: the most of them
        built = _built(fn, tree, group, up)
        if built is not None:
            places = f" at all {len(group)} places" if len(group) > 1 else ""
            defined = f" ({other} = {names[other]})" if names[other] else ""
            pieces = _around(nodes, up, group[0].index) if len(group) == 1 else ()
            yield Mutant(f"with another {kind} read{places} — `{other}`{defined} in "
                         f"place of `{name}`", built,
                         f"in `{lines[stmt.lineno - 1].strip()}`", _text_of(built),
                         pieces, f"`{other}` in place of `{name}`")  # fmt: skip


def _around(nodes: list[ast.AST], up: dict[int, int], index: int) -> tuple[str, ...]:
    """The text of the node at ``index`` and of each expression around it, up to (not
    including) its statement."""
    out = []
    at: int | None = index
    while at is not None and isinstance(nodes[at], ast.expr):
        out.append(_text(nodes[at]))
        at = up.get(at)
    return tuple(out)


def _numbers(tree: ast.FunctionDef, skip: frozenset[int]) -> dict[str, str]:
    """The function's numbers by name, each with its definition (``""`` for a parameter):
    the parameters annotated ``int`` or ``float``, then each local assigned once, at the
    body's top level, from those and constants alone (``n = hosts * local``)."""
    a = tree.args
    out = {x.arg: "" for x in a.posonlyargs + a.args + a.kwonlyargs
           if x.annotation is not None and _text(x.annotation) in ("int", "float")}  # fmt: skip
    assigned = _assigned(tree)
    for stmt in tree.body:
        if (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1
                and isinstance(stmt.targets[0], ast.Name) and assigned[stmt.targets[0].id] == 1
                and stmt.targets[0].id not in out and id(stmt) not in skip
                and all(isinstance(n, ast.Name | ast.Constant | ast.BinOp | ast.UnaryOp
                                   | ast.operator | ast.unaryop | ast.expr_context)
                        and (not isinstance(n, ast.Name) or n.id in out)
                        for n in ast.walk(stmt.value))):  # fmt: skip
            out[stmt.targets[0].id] = _text(stmt.value)
    return out


def _assigned(tree: ast.FunctionDef) -> dict[str, int]:
    """How many times each name is assigned in the function (a tuple's names too, an
    augmented assignment, a loop's target)."""
    out: dict[str, int] = {}
    for node in ast.walk(tree):
        for target in getattr(node, "targets", [getattr(node, "target", None)]):
            for t in ast.walk(target) if isinstance(target, ast.AST) else ():
                if isinstance(t, ast.Name):
                    out[t.id] = out.get(t.id, 0) + 1
    return out


def _variables(
    tree: ast.FunctionDef, skip: frozenset[int], numbers: dict[str, str]
) -> dict[str, str]:
    """The function's other variables by name, each with its definition (``""`` for a
    parameter): every other parameter, then each local assigned once, at the body's top
    level, by a plain ``name = …`` (a copy-paste slip reads one for another: ``k`` for
    ``q``, ``v_hat`` for ``m_hat``)."""
    a = tree.args
    out = {x.arg: "" for x in a.posonlyargs + a.args + a.kwonlyargs if x.arg not in numbers}
    assigned = _assigned(tree)
    for stmt in tree.body:
        if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and id(stmt) not in skip):
            continue
        target = stmt.targets[0]  # a name, or names assigned side by side (b1, b2 = x, y)
        side_by_side = (isinstance(target, ast.Tuple) and isinstance(stmt.value, ast.Tuple)
                        and len(target.elts) == len(stmt.value.elts))  # fmt: skip
        names = ([target] if isinstance(target, ast.Name) else list(target.elts)
                 if side_by_side else [])  # fmt: skip
        for t in names:
            if isinstance(t, ast.Name) and assigned[t.id] == 1 and t.id not in out | numbers:
                out[t.id] = ""
    return out


def _renamed(nodes: list[ast.AST], skip: frozenset[int], numbers: dict[str, str],
             ) -> Iterator[tuple[ast.stmt, str, str, list[_Site]]]:  # fmt: skip
    """Another of the function's numbers (:func:`_numbers`) read in place of one, at
    every place one simple statement reads it (a misread name is misread throughout its
    formula: ``2 * (n - 1) / n`` for ``2 * (hosts - 1) / hosts``): (the statement, the
    name, the other, its sites). A local is never read in its own definition."""
    if len(numbers) < 2:
        return
    for stmt in nodes:
        if not isinstance(stmt, ast.Return | ast.Assign | ast.AugAssign) or id(stmt) in skip:
            continue
        value = stmt.value
        if value is None:
            continue
        reads: dict[str, list[ast.Name]] = {}
        for n in ast.walk(value):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id in numbers:
                reads.setdefault(n.id, []).append(n)
        own = {t.id for t in getattr(stmt, "targets", []) if isinstance(t, ast.Name)}
        for name, at in reads.items():
            for other in numbers:
                if other == name or other in own:
                    continue
                group = [_Site(n._place, ast.Name(id=other, ctx=ast.Load()), name, other,
                               stmt.lineno - 1, "another number", f"name:{n._place}")
                         for n in at]  # type: ignore[attr-defined]  # fmt: skip
                yield stmt, name, other, group


def _values(fn: types.FunctionType, s: _Site) -> str:
    """`` (E4M3_MAX = 448.0)``: the value of each global constant the change names."""
    try:
        names = [n.id for n in ast.walk(ast.parse(s.old_text, mode="eval"))
                 if isinstance(n, ast.Name)]  # fmt: skip
    except SyntaxError:  # a keyword argument's text: ``axis=-1``
        return ""
    found = {n: fn.__globals__[n] for n in dict.fromkeys(names)
             if type(fn.__globals__.get(n)) in (int, float)}  # fmt: skip
    return "".join(f" ({n} = {v!r})" for n, v in found.items())


def _docstring(tree: ast.FunctionDef) -> bool:
    first = tree.body[0] if tree.body else None
    return isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(
        first.value.value, str)  # fmt: skip


def _built(fn: types.FunctionType, tree: ast.FunctionDef, sites: list[_Site],
           up: dict[int, int]) -> types.FunctionType | None:  # fmt: skip
    """``fn`` with each site's node replaced, compiled in a copy of its globals. The
    tree is never changed: nodes on the way to a replaced one are copied, the rest shared
    (nodes carry their place in :func:`ast.walk` order as ``_place``; ``up``: each
    place's parent's place)."""
    replace = {s.index: s.new for s in sites}
    on_path: set[int] = set()
    for s in sites:
        at = s.index
        while at is not None and at not in on_path:
            on_path.add(at)
            at = up.get(at)

    def rebuilt(node: Any) -> Any:
        if isinstance(node, list):
            return [rebuilt(x) for x in node]
        place = getattr(node, "_place", None)
        if not isinstance(node, ast.AST) or place not in on_path:
            return node
        if place in replace:
            return _located(copy.deepcopy(replace[place]), node)
        new = copy.copy(node)
        for field, value in ast.iter_fields(node):
            setattr(new, field, rebuilt(value))
        return new

    changed = rebuilt(tree)
    module = ast.Module(body=[changed], type_ignores=[])
    namespace = dict(fn.__globals__)
    try:
        # annotations stay strings, as in our modules: a name imported for them alone
        code = compile(module, inspect.getsourcefile(fn) or "<mutant>", "exec",
                       flags=__future__.annotations.compiler_flag, dont_inherit=True)  # fmt: skip
        exec(code, namespace)
    except Exception:  # a change Python cannot compile or define
        return None
    new = namespace.get(tree.name)
    if not isinstance(new, types.FunctionType):
        return None
    new.__defaults__, new.__kwdefaults__ = fn.__defaults__, fn.__kwdefaults__
    new.__mutant_tree__ = changed  # type: ignore[attr-defined]  (its text, when asked)
    return new


def _text_of(fn: types.FunctionType) -> Callable[[], str]:
    return lambda: _text(fn.__mutant_tree__)  # type: ignore[attr-defined]


def _located(new: ast.AST, old: ast.AST) -> ast.AST:
    """``new`` with ``old``'s position on every node of it that has none."""
    for node in ast.walk(new):
        if "lineno" in node._attributes and not hasattr(node, "lineno"):
            ast.copy_location(node, old)
    return new


def _text(node: ast.AST) -> str:
    try:
        return ast.unparse(node)
    except Exception:
        return "?"


def _int_of(node: ast.AST) -> int | None:
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    if (isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub)
            and isinstance(node.operand, ast.Constant) and type(node.operand.value) is int):  # fmt: skip
        return -node.operand.value
    return None


def _const(value: Any) -> ast.AST:
    if isinstance(value, (int, float)) and value < 0:
        return ast.UnaryOp(op=ast.USub(), operand=ast.Constant(-value))
    return ast.Constant(value)


def _factors(node: ast.AST) -> list[ast.AST]:
    """A product ``a * b * c`` as its factors, leftmost first."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
        return _factors(node.left) + [node.right]
    return [node]


def _product(factors: list[ast.AST]) -> ast.AST:
    out = factors[0]
    for f in factors[1:]:
        out = ast.BinOp(left=out, op=ast.Mult(), right=f)
    return out


_SYMBOL = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.MatMult: "@",
           ast.FloorDiv: "//", ast.Mod: "%",
           ast.Pow: "**", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">="}  # fmt: skip
_SWAP_WORDS = {ast.Sub: "the difference the other way round",
               ast.Div: "the quotient upside down",
               ast.MatMult: "the matmul's operands the other way round",
               ast.Pow: "base and exponent the other way round"}  # fmt: skip
_OP_WORDS = {ast.Pow: "a product where the reference raises to a power",
             ast.FloorDiv: "a remainder where the reference divides",
             ast.Mod: "a quotient where the reference takes a remainder",
             ast.Mult: "a quotient where the reference multiplies",
             ast.Div: "a product where the reference divides",
             ast.Add: "a difference where the reference adds",
             ast.Sub: "a sum where the reference subtracts"}  # fmt: skip


def _sites(index: int, node: ast.AST, parent: ast.AST | None, lines: list[str],
           fields: dict[str, list[str]], parents: dict[int, ast.AST]) -> Iterator[_Site]:  # fmt: skip
    """Every change at ``node``: its replacement, the change in words, its group."""
    line = getattr(node, "lineno", 1) - 1

    def site(new: ast.AST, words: str, group: str | None = None,
             old_text: str | None = None, new_text: str | None = None,
             late: bool = False) -> _Site:  # fmt: skip
        old_t = old_text if old_text is not None else _text(node)
        new_t = new_text if new_text is not None else _text(new)
        return _Site(index, new, old_t, new_t, line, words,
                     group if group is not None else f"{index}:{new_t}", late)  # fmt: skip

    if isinstance(node, ast.BinOp):
        op = type(node.op)
        if op in _SWAP_WORDS:
            new = ast.BinOp(left=node.right, op=node.op, right=node.left)
            yield site(new, _SWAP_WORDS[op], group=f"swap:{_text(node)}")
        if op in _OP_WORDS:
            new = ast.BinOp(left=node.left, op=_OTHER_OP[op](), right=node.right)
            yield site(new, _OP_WORDS[op], group=f"op:{_text(node)}")
        left_out = "a term left out" if op in (ast.Add, ast.Sub) else (
            "a factor left out" if op in (ast.Mult, ast.Div) else
            f"one side of `{_SYMBOL.get(op, '?')}` left out")  # fmt: skip
        yield site(node.left, left_out)
        if op in (ast.Add, ast.Mult):
            yield site(node.right, left_out)
        if op is ast.Add:  # a term counted twice: x + f(x) with x added again (a residual)
            for twice, other, first in ((node.left, node.right, True),
                                        (node.right, node.left, False)):  # fmt: skip
                if isinstance(twice, ast.Constant):
                    continue  # a constant doubled: another constant (one more, say)
                doubled = ast.BinOp(left=ast.Constant(2), op=ast.Mult(), right=twice)
                new = (ast.BinOp(left=doubled, op=ast.Add(), right=other) if first
                       else ast.BinOp(left=other, op=ast.Add(), right=doubled))  # fmt: skip
                yield site(new, f"the term `{_text(twice)}` counted twice",
                           group=f"twice-term:{_text(node)}:{first}")  # fmt: skip
        if op is ast.Add:  # a weighted sum's weights swapped: a·x + b·y as b·x + a·y
            left, right = _factors(node.left), _factors(node.right)
            if len(left) > 1 and len(right) > 1 and _text(left[0]) != _text(right[0]):
                new = ast.BinOp(left=_product([right[0], *left[1:]]), op=ast.Add(),
                                right=_product([left[0], *right[1:]]))  # fmt: skip
                yield site(new, "the weights of a weighted sum swapped", group="weights swapped")
            for weighted, bare, first in ((node.left, node.right, True),
                                          (node.right, node.left, False)):  # fmt: skip
                # b·x + y (an accumulation: heavy-ball momentum) as b·x + (1 − b)·y, a
                # running average's: Adam's moment carried over
                # (a recurrence only: m = b * m + y)
                b = _factors(weighted)[0] if len(_factors(weighted)) == 2 else None
                if b is None or not isinstance(b, ast.Name | ast.Attribute | ast.Subscript):
                    continue
                if not (isinstance(parent, ast.Assign) and len(parent.targets) == 1
                        and _text(parent.targets[0]) == _text(_factors(weighted)[1])):  # fmt: skip
                    continue
                if len(_factors(bare)) > 1 and "1 - " in _text(_factors(bare)[0]):
                    continue  # weighted already
                rest = ast.BinOp(left=ast.BinOp(left=ast.Constant(1), op=ast.Sub(), right=b),
                                 op=ast.Mult(), right=bare)  # fmt: skip
                new = (ast.BinOp(left=weighted, op=ast.Add(), right=rest) if first
                       else ast.BinOp(left=rest, op=ast.Add(), right=weighted))  # fmt: skip
                yield site(new, f"a running average's weight `1 - {_text(b)}` on the term the "
                           "reference adds whole", group=f"average:{_text(node)}")  # fmt: skip
        for inner, other, call_left in ((node.left, node.right, True),
                                        (node.right, node.left, False)):  # fmt: skip
            if _unary(inner):  # f(a) @ b as f(a @ b): the function applied after the op
                moved = (ast.BinOp(left=inner.args[0], op=node.op, right=other) if call_left
                         else ast.BinOp(left=other, op=node.op, right=inner.args[0]))  # fmt: skip
                yield site(ast.Call(func=inner.func, args=[moved], keywords=[]),
                           f"`{_text(inner.func)}` applied after the "
                           f"`{_SYMBOL.get(op, '?')}` instead of before it")  # fmt: skip
    if (
        isinstance(node, ast.Call)
        and not isinstance(parent, ast.Call | ast.Attribute)
        and _unary(node)
        and isinstance(node.args[0], ast.BinOp)
    ):  # f(a @ b) as f(a) @ b
        inner = node.args[0]
        yield site(ast.BinOp(left=ast.Call(func=node.func, args=[inner.left], keywords=[]),
                             op=inner.op, right=inner.right),
                   f"`{_text(node.func)}` applied before the "
                   f"`{_SYMBOL.get(type(inner.op), '?')}` instead of after it")  # fmt: skip
    name = (node.func.id if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
            else node.func.attr if isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute) else None)  # fmt: skip
    if name in _OTHER_CALL:  # another reduction: a mean for a sum, min for max
        other, words = _OTHER_CALL[name]
        func = (ast.Name(id=other, ctx=ast.Load()) if isinstance(node.func, ast.Name)
                else ast.Attribute(value=node.func.value, attr=other, ctx=ast.Load()))  # fmt: skip
        yield site(ast.Call(func=func, args=node.args, keywords=node.keywords), words,
                   group=f"call:{_text(node.func)}")  # fmt: skip
    if (name == "repeat" and isinstance(node.func, ast.Attribute) and len(node.args) == 2
            and not any(isinstance(a, ast.Starred) for a in node.args)):  # fmt: skip
        # np.repeat(x, r, axis=a) (each entry r times in a row) as x tiled r times whole:
        # np.concatenate([x] * r, axis=a) — a head mapping j % K where j // (N/K) belongs
        tiled = ast.Call(
            func=ast.Attribute(value=node.func.value, attr="concatenate", ctx=ast.Load()),
            args=[ast.BinOp(left=ast.List(elts=[node.args[0]], ctx=ast.Load()), op=ast.Mult(),
                            right=node.args[1])],
            keywords=node.keywords,
        )  # fmt: skip
        yield site(tiled, "the whole tiled where the reference repeats each entry in a row",
                   group=f"tile:{_text(node)}")  # fmt: skip
    if (
        isinstance(node, ast.Attribute)
        and node.attr in ("T", "mT")
        and isinstance(node.ctx, ast.Load)
    ):
        yield site(node.value, "the transpose left out", group=f"T:{_text(node)}")
    if (name in ("sum", "mean", "max", "min") and isinstance(node.func, ast.Attribute)
            and any(k.arg == "axis" for k in node.keywords)):  # fmt: skip
        # a reduction over one axis taken over all of them (a scalar: broadcast back)
        kept = [k for k in node.keywords if k.arg not in ("axis", "keepdims")]
        yield site(ast.Call(func=node.func, args=node.args, keywords=kept),
                   "a reduction over every axis where the reference reduces one",
                   group=f"allaxes:{_text(node)}", late=True)  # fmt: skip
    if (name == "maximum" and len(node.args) == 2 and not node.keywords
            and any(_int_of(a) == 0 or (isinstance(a, ast.Constant) and a.value == 0.0)
                    for a in node.args)):  # fmt: skip
        # np.maximum(x, 0) as abs(x): the distance where the positive part belongs
        (x,) = [a for a in node.args if not (isinstance(a, ast.Constant) and a.value == 0)][:1] or [
            None
        ]
        if x is not None:
            func = (ast.Attribute(value=node.func.value, attr="abs", ctx=ast.Load())
                    if isinstance(node.func, ast.Attribute) else ast.Name(id="abs", ctx=ast.Load()))  # fmt: skip
            yield site(ast.Call(func=func, args=[x], keywords=[]),
                       "an absolute value where the reference keeps the positive part",
                       group=f"abs:{_text(node)}")  # fmt: skip
    if name == "softmax" and len(node.args) == 1 and not node.keywords:
        # softmax(z) as a sigmoid of each entry, 1 / (1 + e^−z): gates that do not sum to 1
        exp = ast.Call(func=ast.Attribute(value=ast.Name(id="np", ctx=ast.Load()), attr="exp",
                                          ctx=ast.Load()),
                       args=[ast.UnaryOp(op=ast.USub(), operand=node.args[0])], keywords=[])  # fmt: skip
        sigmoid = ast.BinOp(left=ast.Constant(1.0), op=ast.Div(),
                            right=ast.BinOp(left=ast.Constant(1.0), op=ast.Add(), right=exp))  # fmt: skip
        yield site(sigmoid, "a sigmoid of each entry where the reference takes a softmax",
                   group=f"sigmoid:{_text(node)}")  # fmt: skip
        log = ast.Call(func=ast.Attribute(value=ast.Name(id="np", ctx=ast.Load()), attr="log",
                                          ctx=ast.Load()), args=[node], keywords=[])  # fmt: skip
        yield site(log, "a log-softmax where the reference takes a softmax",
                   group=f"logsoftmax:{_text(node)}")  # fmt: skip
    if (name == "astype" and isinstance(node.func, ast.Attribute)
            and "round" not in _text(node.func.value)):  # fmt: skip
        # x.astype(float8) as np.round(x).astype(float8): an int8 quantiser's rounding
        rounded = ast.Call(func=ast.Attribute(value=ast.Name(id="np", ctx=ast.Load()),
                                              attr="round", ctx=ast.Load()),
                           args=[node.func.value], keywords=[])  # fmt: skip
        yield site(ast.Call(func=ast.Attribute(value=rounded, attr="astype", ctx=ast.Load()),
                            args=node.args, keywords=node.keywords),
                   "the value rounded to integers before the cast", group=f"round:{_text(node)}",
                   late=True)  # fmt: skip
    if _unary(node) and not isinstance(parent, ast.Attribute):  # f(f(x)): applied twice
        yield site(ast.Call(func=node.func, args=[node], keywords=[]),
                   f"`{_text(node.func)}` applied twice", group=f"twice:{_text(node)}")  # fmt: skip
    if isinstance(node, ast.Call) and not any(isinstance(a, ast.Starred) for a in node.args):
        for a in node.args:  # a call left out: its argument as it is
            if not isinstance(a, ast.Constant):
                yield site(a, f"`{_text(node.func)}` left out")
    if (isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)
            and isinstance(parent, ast.Subscript | ast.Tuple) and node is not getattr(parent, "value", None)
            and _in_index(node, parent, parents)):  # fmt: skip
        for d, words in ((1, "an index one on"), (-1, "an index one back")):
            new = ast.BinOp(left=ast.Name(id=node.id, ctx=ast.Load()),
                            op=ast.Add() if d > 0 else ast.Sub(), right=ast.Constant(1))  # fmt: skip
            yield site(new, words, group=f"index:{node.id}{d:+d}")
    value = _int_of(node)
    if value is not None and not (isinstance(parent, ast.UnaryOp) and _int_of(parent) is not None):
        keyword = parent.arg if isinstance(parent, ast.keyword) and parent.arg else None
        for d, words in ((1, "one more"), (-1, "one less")):
            new = _const(value + d)
            words = "another axis" if keyword and keyword.endswith("axis") else words
            if keyword:
                yield site(new, words, group=f"kw:{keyword}={value}->{value + d}",
                           old_text=f"{keyword}={value}", new_text=f"{keyword}={value + d}")  # fmt: skip
            else:
                yield site(new, words, group=f"int:{_text(parent)}:{value}->{value + d}")
    if isinstance(node, ast.Constant) and type(node.value) is float and node.value != 0:
        yield site(ast.Constant(1 / node.value), "the constant's reciprocal")
        if 0 < node.value < 1:
            yield site(ast.Constant(round(1 - node.value, 12)), "1 minus the constant",
                       group=f"complement:{node.value}")  # fmt: skip
    if isinstance(node, ast.Constant) and type(node.value) is bool:
        yield site(ast.Constant(not node.value), "the flag the other way")
    if isinstance(node, ast.Constant) and isinstance(node.value, str) and "->" in node.value:
        head, out = node.value.split("->", 1)  # einsum: the output's axes in another order
        for i in range(len(out) - 1):
            if out[i].isalpha() and out[i + 1].isalpha():
                swapped = out[:i] + out[i + 1] + out[i] + out[i + 2 :]
                yield site(ast.Constant(f"{head}->{swapped}"),
                           "the einsum's output axes in another order")  # fmt: skip
    if isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in _OTHER_CMP:
        was = type(node.ops[0])
        new = ast.Compare(left=node.left, ops=[_OTHER_CMP[was]()], comparators=node.comparators)
        yield site(new, f"`{_SYMBOL[_OTHER_CMP[was]]}` where the reference has `{_SYMBOL[was]}`",
                   group=f"cmp:{_text(node)}")  # fmt: skip
    if isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in _REVERSED_CMP:
        was = type(node.ops[0])
        new = ast.Compare(left=node.left, ops=[_REVERSED_CMP[was]()], comparators=node.comparators)
        yield site(new, "the comparison reversed", group=f"rev:{_text(node)}", late=True)
    if (isinstance(node, ast.Call) and not isinstance(parent, ast.Attribute)
            and not any(isinstance(a, ast.Starred) for a in node.args)):  # fmt: skip
        for i in range(len(node.args) - 1):  # two arguments in the other order
            a, b = node.args[i], node.args[i + 1]
            if _text(a) != _text(b) and not isinstance(a, ast.Lambda | ast.Constant):
                args = [*node.args[:i], b, a, *node.args[i + 2 :]]
                yield site(ast.Call(func=node.func, args=args, keywords=node.keywords),
                           f"`{_text(node.func)}`'s arguments `{_text(a)}` and `{_text(b)}` "
                           "swapped", group=f"args:{_text(node)}:{i}", late=True)  # fmt: skip
    dtype = (node.attr if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load)
             else node.value if isinstance(node, ast.Constant) else None)  # fmt: skip
    if isinstance(dtype, str) and dtype in _OTHER_DTYPE:  # (a bare name: not its neighbour's)
        for other in _OTHER_DTYPE[dtype]:
            new = (ast.Attribute(value=node.value, attr=other, ctx=ast.Load())
                   if isinstance(node, ast.Attribute) else ast.Constant(other))  # fmt: skip
            yield site(new, "another dtype", group=f"dtype:{dtype}->{other}", late=True)
    if (isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load)
            and isinstance(node.value, ast.Name) and node.value.id in fields
            and not (isinstance(parent, ast.Call) and parent.func is node)):  # fmt: skip
        for other in fields[node.value.id]:  # another field of it
            if other != node.attr:
                new = ast.Attribute(value=node.value, attr=other, ctx=ast.Load())
                yield site(new, f"another field of `{node.value.id}`",
                           group=f"attr:{_text(node)}->{other}")  # fmt: skip


def _in_index(node: ast.AST, parent: ast.AST, parents: dict[int, ast.AST]) -> bool:
    """``node`` is an index of a subscript (``cache[i, 0, :, pos]``), itself or as one
    entry of its tuple of indices."""
    if isinstance(parent, ast.Subscript):
        return parent.slice is node
    above = parents.get(id(parent))
    return isinstance(above, ast.Subscript) and above.slice is parent


def _unary(node: ast.AST) -> bool:
    """A call of one positional argument and no keywords: ``np.tanh(x)``."""
    return (isinstance(node, ast.Call) and len(node.args) == 1 and not node.keywords
            and not isinstance(node.args[0], ast.Starred))  # fmt: skip


def _fields(fn: types.FunctionType, tree: ast.FunctionDef) -> dict[str, list[str]]:
    """Per parameter, the fields another may be read in place of: those the function
    reads of it, then, where its annotation names a dataclass, that class's number fields
    (``m: Model``: ``m.heads`` beside the ``m.kv_heads`` the formula reads)."""
    a = tree.args
    out: dict[str, list[str]] = {x.arg: [] for x in a.posonlyargs + a.args + a.kwonlyargs}
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                and node.value.id in out and isinstance(node.ctx, ast.Load)
                and node.attr[:1] != "_" and node.attr not in out[node.value.id]):  # fmt: skip
            out[node.value.id].append(node.attr)
    hints = getattr(fn, "__annotations__", {})
    for name, read in out.items():
        kind = hints.get(name)
        if isinstance(kind, str):
            kind = fn.__globals__.get(kind)
        if read and dataclasses.is_dataclass(kind) and isinstance(kind, type):
            read += [f.name for f in dataclasses.fields(kind)
                     if f.type in ("int", "float", int, float) and f.name not in read]  # fmt: skip
    return {k: v for k, v in out.items() if v}
