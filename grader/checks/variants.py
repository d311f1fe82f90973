"""What the reference gives on changed arguments (issue 45 §3).

A wrong value may still be exactly the right computation of other inputs: two of them
the other way round, a flag the other way (a causal mask never applied), a counter one
step on or behind, an argument read as zeros, stacked layers in reverse order. Where a
``run`` deferred its expected value (:func:`grader.later.later`), the trial keeps the
reference and its arguments (``trial.extra[REFERENCE]``); a failing check that found no
other relation calls the reference again on each change of a fixed list, in this order,
within a time budget, and says the first whose value the output equals to the check's
own tolerance on every element.

It reads only the reference's arguments (named by the reference's own parameters, or by
the example's fields), never a list of known mistakes; its sentence says the change that
was measured, not a cause. Nothing is said where no change gives the output exactly.
"""

from __future__ import annotations

import dataclasses
import inspect
import time
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from grader.checks import mutants
from grader.evidence import Note
from grader.later import Later
from grader.spec import REFERENCE, Example, Trial

SAID = "is exactly what the reference computes"
"""The words every sentence of a change found here has."""

CHANGES_AT_MOST = 120
"""Changes tried per failing check at most."""

BUDGET_S = 0.5
"""Seconds a failing check spends calling the reference again, at most (the change under
way is finished): a failing grade stays cheap (issue 45's 1.5× rule). CPU seconds of this
thread (``time.thread_time``), not the wall clock's: on a loaded machine the same search
runs to the same end, so a hint does not come and go with the load."""

FORMULAS_AT_MOST = 400
"""Changes of the reference's formula tried per failing check at most."""

FORMULA_BUDGET_S = 0.5
"""Seconds for those, after the arguments' changes (:data:`BUDGET_S`)."""

ALSO_S = 0.1
"""Seconds spent, after a change gives the value, looking for others that give it too."""

ALSO_AT_MOST = 2
"""Other changes that give the value too, named at most."""

AXES_AT_MOST = 4
"""An argument named ``…axis`` is changed to each axis 0 … this − 1 (a softmax over the
heads where the keys' axis belongs)."""

MAX_ELEMENTS = 1 << 21
"""Arguments past this many elements in all are not changed (each change copies them)."""


@dataclass(frozen=True)
class Change:
    """One change of a reference's arguments: what it is, in words, and the call it makes."""

    said: str
    """``"with m and v swapped"``, ``"with causal = False in place of True"``."""
    call: tuple[Callable[..., Any], tuple, dict]
    where: str = ""
    """The end of ``said`` that names where a change of the formula is (its line), which
    several changes at one place share."""
    text: Callable[[], str] | None = None
    """The changed formula's source, where it is one: changes of one text are one."""
    pieces: tuple[str, ...] = ()
    """A change of the formula at one place: its piece and the expressions around it
    (:attr:`grader.checks.mutants.Mutant.pieces`)."""
    swap: str = ""
    """That change alone, in few words (``"`b2 * t` in place of `b2 ** t`"``)."""
    step: bool = False
    """A number of the arguments one more or one less: a count one step off, which a
    formula can also be (``>`` for ``>=``, an index one on) — :func:`first_change_of` then
    looks for that too."""
    factor: str = ""
    """Where the output is not this change's value but a constant times it: that constant,
    named as one of the example's quantities (``1/(√(dh = 4))``): a scale applied in
    another place than the reference's (after the softmax, not to the scores)."""


def deferred(trial: Trial) -> Later | None:
    """The :class:`Later` the trial's expected value was computed from, once it has been
    read; None where ``run`` set a plain value."""
    found = trial.extra.get(REFERENCE)
    return found if isinstance(found, Later) else None


def _target(fn: Callable[..., Any]) -> Callable[..., Any]:
    """The function whose parameters name the arguments: a hidden reference's own
    (:func:`grader.checks.mutants.unwrapped`), else ``fn`` (the grader's side not
    importable: no names)."""
    return mutants.unwrapped(fn) or fn


def _kind(x: Any) -> str | None:
    """``bool``, ``int``, ``float`` (scalars), ``array`` (a numeric numpy array of two
    elements or more), or None: what a change may do to it."""
    if isinstance(x, (bool, np.bool_)):
        return "bool"
    if isinstance(x, (int, np.integer)):
        return "int"
    if isinstance(x, (float, np.floating)):
        return "float"
    if isinstance(x, np.ndarray) and x.dtype.kind in "fiu" and x.size >= 2:
        return "array"
    return None


def _alike(a: Any, b: Any, kind_a: str | None, kind_b: str | None) -> bool:
    """Two arguments one could be taken for the other: numbers of one kind, or arrays of
    one shape and kind, that differ."""
    if kind_a is None or kind_a == "bool" or kind_a != kind_b:
        return False
    if kind_a == "array" and (a.shape != b.shape or a.dtype.kind != b.dtype.kind):
        return False
    return not np.array_equal(a, b)


def _fmt(x: Any) -> str:
    return repr(x.item() if isinstance(x, np.generic) else x)


def changes(
    call: tuple[Callable[..., Any], tuple, dict], example: Example | None = None,
    rename: dict[str, str] | None = None, formula: bool = False, blocks: tuple[int, ...] = (),
) -> Iterator[Change]:  # fmt: skip
    """Every change of ``call``'s arguments, in the order tried: a flag flipped; an
    integer one more or one less; two arguments of one shape swapped; a square matrix
    transposed; an array dealt to k devices strided along its first axis, and a matrix's
    k blocks along a later axis stacked and reshaped (k in ``blocks``: the mesh's axis
    sizes); an argument whose arrays share a first axis reversed along it, or cut to its
    last or its first entry alone (stacked layers: only one of them applied); an array or
    a float as zeros; one argument in place of another of its shape. Arguments that are
    themselves deferred (a :class:`Later`) are changed inside, by their own
    reference's parameters; a parameter left to its default is an argument too. Names:
    the reference's parameters, with the path inside (``params['w_in']``, ``hp['b1']``);
    a field of ``example`` (or of a ``**`` parameter) by its key; ``rename`` maps a name
    to the one the student knows it by. ``formula``: instead, the reference's own formula
    changed (:func:`grader.checks.mutants.mutants`, on the same arguments), then each
    deferred argument's."""
    import jax

    fn, args, kwargs = call
    if formula:
        yield from _formulas(call)
        return
    try:
        signature = inspect.signature(_target(fn))
        bound = signature.bind(*args, **kwargs)
    except (TypeError, ValueError):
        return
    bound.apply_defaults()  # a default is an argument too (hyperparameters: ``hp``)
    names = list(bound.arguments)
    if sum(np.size(x) for x in jax.tree_util.tree_leaves(list(bound.arguments.values()))
           if isinstance(x, np.ndarray)) > MAX_ELEMENTS:  # fmt: skip
        return
    flat, tree = jax.tree_util.tree_flatten_with_path([bound.arguments[k] for k in names])

    def name(path: tuple) -> str:
        top = names[path[0].idx]
        rest = path[1:]
        keyed = signature.parameters[top].kind is inspect.Parameter.VAR_KEYWORD
        if rest and (keyed or (example is not None and bound.arguments[top] is example)):
            return str(getattr(rest[0], "key", rest[0])) + jax.tree_util.keystr(rest[1:])
        return top + jax.tree_util.keystr(rest)

    leaves = [leaf for _, leaf in flat]
    labels = [(rename or {}).get(x, x) for x in (name(path) for path, _ in flat)]

    def made(new: dict[int, Any]) -> tuple[Callable[..., Any], tuple, dict]:
        values = [new.get(i, x) for i, x in enumerate(leaves)]
        values = [np.array(x) if isinstance(x, np.ndarray) else x for x in values]  # copies
        arguments = jax.tree_util.tree_unflatten(tree, values)
        again = inspect.BoundArguments(signature, dict(zip(names, arguments)))
        return fn, again.args, again.kwargs

    kinds = [_kind(x) for x in leaves]
    for i, k in enumerate(kinds):  # a flag the other way
        if k == "bool":
            flipped = not bool(leaves[i])
            yield Change(f"with {labels[i]} = {flipped} in place of {not flipped}",
                         made({i: flipped}))  # fmt: skip
    for i, k in enumerate(kinds):  # a counter one step on or behind
        if k == "int":
            for d, words in ((1, "one more"), (-1, "one less")):
                yield Change(
                    f"with {labels[i]} = {_fmt(leaves[i] + d)} in place of "
                    f"{_fmt(leaves[i])} ({words})",
                    made({i: type(leaves[i])(leaves[i] + d)}),
                    step=True,
                )
    for i, k in enumerate(kinds):  # an axis argument: another axis (heads for keys)
        if k == "int" and labels[i].rsplit(".", 1)[-1].endswith("axis"):
            for other in range(AXES_AT_MOST):
                if abs(other - leaves[i]) > 1:  # (one on or behind: tried above)
                    yield Change(f"with {labels[i]} = {other} in place of {_fmt(leaves[i])} "
                                 "(another axis)", made({i: type(leaves[i])(other)}))  # fmt: skip
    alike = [
        (i, j) for i in range(len(leaves)) for j in range(i + 1, len(leaves))
        if _alike(leaves[i], leaves[j], kinds[i], kinds[j])
    ]  # fmt: skip
    for i, j in alike:  # two arguments the other way round
        yield Change(f"with {labels[i]} and {labels[j]} swapped",
                     made({i: leaves[j], j: leaves[i]}))  # fmt: skip
    for i, k in enumerate(kinds):  # a matrix read the other way round
        x = leaves[i]
        if k == "array" and x.ndim >= 2 and x.shape[-1] == x.shape[-2] and x.shape[-1] >= 2:
            last = "" if x.ndim == 2 else " (its last two axes swapped)"
            yield Change(f"with {labels[i]} transposed{last}", made({i: np.swapaxes(x, -1, -2)}))
    for i, k in enumerate(kinds):  # dealt out strided where contiguous blocks belong
        x = leaves[i]
        if k != "array" or x.ndim < 1:
            continue
        for n in dict.fromkeys(b for b in blocks if b >= 2 and x.shape[0] % b == 0
                               and x.shape[0] // b >= 2):  # fmt: skip
            strided = x.reshape(x.shape[0] // n, n, *x.shape[1:]).swapaxes(0, 1).reshape(x.shape)
            yield Change(
                f"with {labels[i]} dealt to {n} devices strided along axis 0 (device i: "
                f"elements i, i + {n}, i + {2 * n}, …) in place of in contiguous blocks",
                made({i: strided}),
            )
    for i, k in enumerate(kinds):  # blocks stacked where they belong side by side
        x = leaves[i]
        if k != "array" or x.ndim < 2:
            continue
        for axis in range(1, x.ndim):
            for n in dict.fromkeys(b for b in blocks if b >= 2 and x.shape[axis] % b == 0):
                stacked = np.stack(np.split(x, n, axis=axis)).reshape(x.shape)
                yield Change(
                    f"with {labels[i]} read as its {n} blocks along axis {axis} stacked on a "
                    f"new first axis and reshaped to {tuple(x.shape)} (what an untiled "
                    "all_gather, reshaped, holds) in place of the blocks side by side",
                    made({i: stacked}),
                )
                if x.ndim >= 3 and axis == x.ndim - 1:  # stacked layers: matrix by matrix
                    each = np.stack(np.split(x, n, axis=axis), axis=-3).reshape(x.shape)
                    yield Change(
                        f"with each matrix of {labels[i]} (its last two axes) read as its {n} "
                        f"blocks of columns stacked on a new first axis and reshaped to "
                        f"{tuple(x.shape[-2:])} (what an untiled all_gather of a layer's "
                        "column blocks, reshaped, holds) in place of the blocks side by side",
                        made({i: each}),
                    )
    for top in range(len(names)):  # stacked along a first axis, in reverse order
        idx = [i for i, (path, _) in enumerate(flat) if path[0].idx == top]
        arrays = [i for i in idx if isinstance(leaves[i], np.ndarray) and leaves[i].ndim >= 1]
        firsts = {leaves[i].shape[0] for i in arrays}
        if arrays and len(firsts) == 1 and firsts.pop() >= 2:
            axis = "their first axis" if len(arrays) > 1 else "its first axis"
            label = (rename or {}).get(names[top], names[top])
            yield Change(f"with {label} reversed along {axis}",
                         made({i: leaves[i][::-1] for i in arrays}))  # fmt: skip
            for part, words in ((slice(-1, None), "last"), (slice(0, 1), "first")):
                yield Change(f"with {label} cut to its {words} entry along {axis} alone",
                             made({i: leaves[i][part] for i in arrays}))  # fmt: skip
    for i, k in enumerate(kinds):  # an argument read as zeros
        if k == "array" and leaves[i].dtype.kind == "f" and np.any(leaves[i]):
            yield Change(f"with {labels[i]} all zeros", made({i: np.zeros_like(leaves[i])}))
        elif k == "float" and leaves[i] != 0:
            yield Change(f"with {labels[i]} = 0 in place of {_fmt(leaves[i])}",
                         made({i: type(leaves[i])(0)}))  # fmt: skip
    for i, j in alike:  # one argument where another belongs (a copy left unedited)
        yield Change(f"with {labels[j]} in place of {labels[i]}", made({i: leaves[j]}))
        yield Change(f"with {labels[i]} in place of {labels[j]}", made({j: leaves[i]}))
    for i, x in enumerate(leaves):  # inside a deferred argument, by its own parameters
        if isinstance(x, Later):
            for inner in changes(x.call, example, rename, blocks=blocks):
                inner_fn, inner_args, inner_kwargs = inner.call
                yield Change(inner.said, made({i: Later(inner_fn, *inner_args, **inner_kwargs)}))


def _formulas(call: tuple[Callable[..., Any], tuple, dict]) -> Iterator[Change]:
    """The reference's formula changed, then that of each deferred argument."""
    import jax

    fn, args, kwargs = call
    arrays = [x for x in jax.tree_util.tree_leaves((args, kwargs)) if isinstance(x, np.ndarray)]
    if sum(x.size for x in arrays) > MAX_ELEMENTS:
        return
    target = _target(fn)
    if mutants.ours(target):
        for m in mutants.mutants(target):  # on copies: a changed formula may write into them
            copied = jax.tree_util.tree_map(
                lambda x: np.array(x) if isinstance(x, np.ndarray) else x, (args, kwargs)
            )
            yield Change(m.said, (m.fn, *copied), m.where, m.text, m.pieces, m.swap)
    for i, x in enumerate(args):
        if isinstance(x, Later):
            for inner in _formulas(x.call):
                inner_fn, inner_args, inner_kwargs = inner.call
                changed = Later(inner_fn, *inner_args, **inner_kwargs)
                call = (fn, args[:i] + (changed,) + args[i + 1 :], kwargs)
                yield dataclasses.replace(inner, call=call)
    for k, x in kwargs.items():
        if isinstance(x, Later):
            for inner in _formulas(x.call):
                inner_fn, inner_args, inner_kwargs = inner.call
                changed = Later(inner_fn, *inner_args, **inner_kwargs)
                yield dataclasses.replace(inner, call=(fn, args, {**kwargs, k: changed}))


def leaf_at(value: Any, path: str | None) -> Any:
    """The leaf of ``value`` at ``path`` (``jax.tree_util.keystr``'s, as
    :class:`grader.checks.trees.PerLeaf` names leaves; ``"output"`` or None: the whole
    value where it is one leaf), or None where there is none."""
    import jax

    leaves = jax.tree_util.tree_flatten_with_path(value)[0]
    if path is None or path == "output":
        return leaves[0][1] if len(leaves) == 1 and not leaves[0][0] else (
            value if path is None else None)  # fmt: skip
    return next((x for p, x in leaves if jax.tree_util.keystr(p) == path), None)


def first_change(trial: Trial, matches: Callable[[Any], bool],
                 budget_s: float = BUDGET_S, scaled: Scaled | None = None) -> Change | None:  # fmt: skip
    """The first change of the trial's reference call whose value ``matches`` (the
    check's own test: the output equals it on every element), tried in :func:`changes`'
    order while ``budget_s`` lasts; None where none does or the value was not deferred.
    ``scaled``: see :func:`first_change_of`."""
    later = deferred(trial)
    if later is None:
        return None
    mesh = trial.mesh
    blocks = (*mesh.devices.shape, mesh.devices.size) if mesh is not None else ()
    return first_change_of(later.call, matches, trial.example, budget_s, blocks=blocks,
                           scaled=scaled)  # fmt: skip


Scaled = Callable[[Any], str | None]
"""A value → the name of the constant the output is that value times (one of the
example's quantities), or None: the output is no such multiple of it."""


def first_change_of(
    call: tuple[Callable[..., Any], tuple, dict], matches: Callable[[Any], bool],
    example: Example | None = None, budget_s: float = BUDGET_S,
    rename: dict[str, str] | None = None, blocks: tuple[int, ...] = (),
    scaled: Scaled | None = None,
) -> Change | None:  # fmt: skip
    """:func:`first_change` of a call of the grader's own (a formula of the example's
    fields, say), its arguments named as :func:`changes` names them: the arguments'
    changes first (``budget_s``, :data:`CHANGES_AT_MOST`), then the formula's
    (:data:`FORMULA_BUDGET_S`, :data:`FORMULAS_AT_MOST`). Where an argument found is a
    number one step off, a change of the formula that gives the value too is said beside
    it: the count the code reads may be right and its comparison or index one off (``>``
    for ``>=``: the scale grown one clean step late is the interval one more).
    ``scaled``: where no change's value is the output, the first formula change whose value
    the output is a named constant times (:attr:`Change.factor`) — two slips at once, the
    second only a scale moved (1/√dh applied after the softmax, not to the scores)."""
    import jax  # noqa: F401 — changes() flattens with it: imported before the budget's
    # clock starts (a cost model's first search in a process spent its 0.5 s importing it)

    found = None
    for formula, most, seconds in ((False, CHANGES_AT_MOST, budget_s),
                                   (True, FORMULAS_AT_MOST, FORMULA_BUDGET_S)):  # fmt: skip
        if found is not None and not found.step:
            break
        change = _first(changes(call, example, rename, formula, tuple(int(b) for b in blocks)),
                        matches, most, seconds, scaled if formula and found is None else None)  # fmt: skip
        if found is None:
            found = change
        elif change is not None:
            found = dataclasses.replace(found, said=f"{found.said}, and so does its formula "
                                                    f"{change.said}")  # fmt: skip
    return found


def _first(tried: Iterator[Change], matches: Callable[[Any], bool], most: int,
           budget_s: float, scaled: Scaled | None = None) -> Change | None:  # fmt: skip
    """The first change whose value ``matches``; where others after it (within
    :data:`ALSO_S`, at most :data:`ALSO_AT_MOST`) give the value too, its words name them:
    the example cannot tell them apart (two fields of a model equal on it). Where more
    give it, none is said (such a value, all zeros say, tells nothing of its cause), unless
    they are all changes of one piece of the formula: that piece is said (a bias
    correction turned negative: every change that makes it so gives the same NaNs)."""
    start = time.thread_time()  # (see BUDGET_S: the load of other processes not counted)
    found: list[Change] = []
    times: Change | None = None  # the first change the output is a named multiple of
    stop = budget_s
    try:  # report material: never a grader fault
        for n, change in enumerate(tried):
            if n >= most or time.thread_time() - start > stop or len(found) > MANY_AT_MOST:
                break
            fn, args, kwargs = change.call
            try:
                with np.errstate(all="ignore"), warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    value = fn(*args, **kwargs)
                if matches(value) and not _constant(value) and not _same(change, found):
                    found.append(change)
                    stop = min(budget_s, time.thread_time() - start + ALSO_S)
                elif scaled is not None and times is None and not found:
                    factor = scaled(value)
                    if factor:
                        times = dataclasses.replace(change, factor=factor, step=False)
            except Exception:  # a change the reference cannot take (a size one more)
                continue
    except Exception:  # arguments it cannot take apart
        pass
    if len(found) > ALSO_AT_MOST + 1:
        return _one_piece(found)
    if not found:
        return times
    if len(found) == 1:
        return found[0]
    first, rest = found[0], found[1:]
    where = first.where if all(f.where == first.where for f in rest) else ""

    def what(change: Change) -> str:
        return change.said.removesuffix(where).strip() if where else change.said

    others = " or ".join(what(f).removeprefix("with ") for f in rest)
    said = f"{what(first)} (or, the same value on this example, {others})"
    return Change(f"{said} {where}" if where else said, first.call, first.where, step=first.step)


MANY_AT_MOST = 12
"""Changes that give one value gathered at most, to find the piece they all change."""


def _one_piece(found: list[Change]) -> Change | None:
    """Where every change found changes one piece of one line of the formula (the piece
    or an expression inside it), short of the line's whole expression: a change that says
    that piece, with two of the changes; else None (too many changes, in many places:
    the value tells nothing of its cause). None where :data:`MANY_AT_MOST` were found (more
    may have been elsewhere)."""
    first = found[0]
    if len(found) > MANY_AT_MOST or not all(f.pieces and f.where == first.where for f in found):
        return None
    common = next((p for p in first.pieces[:-1] if all(p in f.pieces for f in found)), None)
    if common is None:
        return None
    shown = "; ".join(f.swap for f in found[:2])
    said = (f"with `{common}` changed — each of {len(found)} changes of it gives this value on "
            f"this example ({shown}; …) — {first.where}")  # fmt: skip
    return Change(said, first.call, first.where)


def _same(change: Change, found: list[Change]) -> bool:
    """``change`` is one already found: its words, or its changed formula's text."""
    if any(f.said == change.said for f in found):
        return True
    text = change.text() if change.text else None
    return bool(text) and any(f.text and f.text() == text for f in found)


def _constant(value: Any) -> bool:
    """Every element of every array in ``value`` the same (all zeros, say), with more than
    one: such a value is what too many changes give to tell anything of its cause."""
    import jax

    arrays = [np.asarray(x) for x in jax.tree_util.tree_leaves(value) if np.ndim(x) > 0]
    if not arrays or sum(a.size for a in arrays) < 2:
        return False
    try:
        flat = np.concatenate([a.ravel().astype(np.float64) for a in arrays])
    except (TypeError, ValueError):
        return False
    return bool(np.all(flat == flat[0]))


def said(trial: Trial, matches: Callable[[Any], bool], what: str = "your value",
         scaled: Scaled | None = None) -> str | None:  # fmt: skip
    """:func:`first_change` in one sentence, as :mod:`grader.checks.relate` words its
    relations (lower case, no final stop), or None."""
    change = first_change(trial, matches, scaled=scaled)
    if change is None:
        return None
    if change.factor:
        return (f"{what} is exactly {change.factor} times what the reference computes "
                f"{change.said}, on every element")  # fmt: skip
    return f"{what} {SAID} {change.said}, on every element"


def told(trial: Trial, matches: Callable[[Any], bool], what: str) -> tuple[str | None, list[Note]]:
    """:func:`said` for a check of a lesson's own: (the hint, its measured note), or
    (None, []) where no change gives the output."""
    sentence = said(trial, matches, what)
    if sentence is None:
        return None, []
    return f"{sentence[0].upper()}{sentence[1:]}.", [Note(f"measured: {sentence}")]
