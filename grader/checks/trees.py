"""Checks over outputs that are pytrees (params dicts, ``(params, loss)`` pairs).

The training lessons return the course model's params as a dict of arrays,
sometimes paired with a scalar loss. :class:`PerLeaf` holds each leaf to a
single-array check (``Values``, ``OutputSharding``) and names the leaf that
fails, so the array checks stay about one array.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from grader.checks import variants
from grader.checks.relate import MAX_ELEMENTS
from grader.checks.values import open_hint
from grader.evidence import Note
from grader.results import CheckResult
from grader.spec import Check, Trial


@dataclass(frozen=True)
class PerLeaf(Check):
    """``inner`` on every leaf of ``trial.output`` against the same leaf of
    ``trial.expected`` (a pytree of numpy arrays or floats).

    Per leaf, ``trial.extra`` gets ``leaf`` (its path, e.g. ``['w_in']``) and,
    from ``leaf_extra``, whatever the inner check reads there (``dtype``,
    ``sharding``)."""

    inner: Check = None  # type: ignore[assignment]
    leaf_extra: Callable[[Trial, str], dict[str, Any]] = lambda t, path: {}
    """(trial, leaf path) → entries for that leaf's ``trial.extra``."""
    explain_failure: Callable[[Trial], str | None] | None = None
    """A hint for any failure of this trial that outranks the leaf's own (e.g. the
    program computes in bfloat16), or None."""

    @property
    def name(self) -> str:  # type: ignore[override]
        return self.inner.name

    def __call__(self, trial: Trial) -> CheckResult:
        import jax

        want_leaves, want_tree = jax.tree_util.tree_flatten_with_path(trial.expected)
        got_leaves, got_tree = jax.tree_util.tree_flatten(trial.output)
        if got_tree != want_tree:
            return CheckResult(
                self.name,
                False,
                f"returned {describe(trial.output)}; expected {describe(trial.expected, dtypes=False)}",
                hint="Return the same structure as the inputs: a dict with the same keys "
                "(a pytree jax.tree.map keeps), paired with the loss where one is asked for.",
            )
        results = []
        named = [(jax.tree_util.keystr(p) or "output", w) for p, w in want_leaves]
        # every leaf the student returned, by path: a change of the reference said of one
        # leaf must give the others too (grader.checks.values.Values._changed)
        whole = {where: got for (where, _), got in zip(named, got_leaves)}
        searched: dict[str, bool] = {}  # one search of the reference's changes for all leaves
        for (path, want), got in zip(want_leaves, got_leaves):
            where = jax.tree_util.keystr(path) or "output"
            others = [(f"leaf {k}", w) for k, w in named if k != where]
            extra = {**trial.extra, "leaf": where, **self.leaf_extra(trial, where),
                     "other_leaves": _arrays(others, np.shape(want)), "whole": whole,
                     "searched": searched, "expected_leaves": named}  # fmt: skip
            leaf = replace(trial, output=got, expected=want, extra=extra)
            results.append((where, self.inner(leaf)))
        failed = [(where, r) for where, r in results if not r.passed]
        if not failed:
            messages = {r.message for _, r in results}
            if len(messages) == 1 and len(results) > 1:
                text = f"every array: {messages.pop()}"
            else:
                text = "; ".join(f"{where}: {r.message}" for where, r in results)
            evidence = [e for _, r in results for e in r.evidence]
            return CheckResult(self.name, True, text, evidence=evidence)
        where, first = failed[0]
        others = f" (and {len(failed) - 1} more arrays)" if len(failed) > 1 else ""
        hint = (self.explain_failure and self.explain_failure(trial)) or first.hint
        if open_hint(hint):  # another wrong leaf measured as the reference changed: its words
            hint = next((r.hint for _, r in failed[1:] if r.hint and variants.SAID in r.hint), hint)
        if not hint:  # nothing measured on the first wrong leaf: another's relation, if any
            hint = next((r.hint for _, r in failed[1:] if r.hint), hint)
        right = [w for w, r in results if r.passed]
        leaves = (
            f" — leaves wrong: {', '.join(w for w, _ in failed)}; right: {', '.join(right) or 'none'}"
            if len(results) > 1
            else ""
        )
        measured = [  # what each other wrong leaf was measured to equal
            Note(f"{w}: {text}") for w, r in failed[1:] for e in r.evidence
            for text in (getattr(e, "measured", None) or [])
        ]  # fmt: skip
        return CheckResult(
            self.name,
            False,
            f"{where}: {first.message}{others}{leaves}",
            evidence=[Note(f"the first wrong array: {where}"), *first.evidence, *measured],
            hint=hint,
        )


def _arrays(named: list[tuple[str, Any]], shape: tuple[int, ...]) -> list[tuple[str, np.ndarray]]:
    """The expected leaves of ``shape`` as float64 arrays (for "equals leaf X's expected")."""
    out = []
    for name, w in named:
        if np.shape(w) == shape and np.size(w) <= MAX_ELEMENTS:
            try:
                out.append((name, np.asarray(w, dtype=np.float64)))
            except (TypeError, ValueError):
                continue
    return out


def describe(tree: Any, dtypes: bool = True) -> str:
    """A short picture of a pytree: ``dict(w_in: float32[2,8,16], …)``, ``tuple(…)``.
    Without ``dtypes`` (for references kept in float64) arrays show their shape only."""
    if isinstance(tree, dict):
        return "dict(" + ", ".join(f"{k}: {describe(v, dtypes)}" for k, v in tree.items()) + ")"
    if isinstance(tree, (tuple, list)):
        return f"{type(tree).__name__}(" + ", ".join(describe(v, dtypes) for v in tree) + ")"
    shape = getattr(tree, "shape", None)
    if shape is None:
        return "scalar" if isinstance(tree, float) else type(tree).__name__
    return f"{tree.dtype if dtypes else ''}[{','.join(map(str, shape))}]"
