"""Inputs and tolerances for the training lessons (6–12), and their float64 reference by name.

The course model (:mod:`tinymodels`) is recomputed in numpy float64 by hand-written
backpropagation in :mod:`grader.expected.training`, the grader's side, hidden from the
student's process (which imports the specs, and so this module): :func:`forward`,
:func:`loss`, :func:`grads` and :func:`sgd_step` here import it when called, which only
the worker does. No jax, no x64 flag there (``jax_enable_x64`` is a process-wide switch
the student's float32 program must not see), so the reference is exact to ~1e-15 and
every float32 error the check sees is the student's program's own.

Inputs are normal floats — weights scaled by 1/√fan-in so activations stay
O(1) through the stack — never small integers: these lessons are about
gradients, and precision mistakes must show.

Tolerance (:func:`tolerance`). A float32 result of a length-K reduction is
off from the exact value by about u·√K·(its scale) when rounding errors do
not line up, u = 2⁻²⁴ ≈ 6e-8. A gradient of the course model is a chain of
reductions: over the batch B (the weight gradients), over D and F in every
layer's forward and backward, L layers deep. So K = B + L·(D + F), and the
check allows ``|got − ref| ≤ SAFETY · u · √K · max|ref|`` per array (the
scale of the whole array: small entries are not held to a relative bound).

Measured (``python benchmarks/tolerance.py``; float32 on CPU; five sizes
L ∈ {2, 3}, B 24…240, D ∈ {8, 16}, F 16…64), error in units of
u·√K·max|ref|, worst array of each program:

===========================================  ===========
program                                      error
===========================================  ===========
whole batch, one device (``jax.grad``)       0.27–0.43
data parallel, N = 3, 4, 8                   0.12–0.34
micro-batch scan (3) + data parallel, N=4, 8 0.12–0.33
bfloat16 params inside                       2356–5892
bfloat16 inputs x inside                     706–2725
bfloat16 activations (each layer's output)   868–4073
bfloat16 gradients before the all-reduce     1194–4052
===========================================  ===========

SAFETY = 16 sits at the geometric middle of the gap (√(0.43·706) ≈ 17):
correct programs use at most 3% of the allowance, the mildest bfloat16
slip is 44× over it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from grader.later import expected

U32 = 2.0**-24
"""float32 unit roundoff."""
SAFETY = 16.0
"""Allowance in units of u·√K·max|ref| (figures in the module docstring)."""

Params = dict[str, np.ndarray]


# ------------------------------------------------------------------ inputs


def draw_params(rng: np.random.Generator, n_layers: int, d: int, f: int) -> Params:
    """The course model's weights, float32, normal scaled by 1/√fan-in."""
    return {
        "w_in": _normal(rng, (n_layers, d, f), d),
        "w_out": _normal(rng, (n_layers, f, d), f),
    }


def draw_batch(rng: np.random.Generator, b: int, d: int) -> tuple[np.ndarray, np.ndarray]:
    """Inputs x and targets y: [B, D] float32, unit normal."""
    return _normal(rng, (b, d), 1), _normal(rng, (b, d), 1)


def _normal(rng: np.random.Generator, shape: tuple[int, ...], fan_in: int) -> np.ndarray:
    # numpy 2 promotes float32 / np.sqrt(int) to float64: scale in float64, cast once
    return (rng.standard_normal(shape) / np.sqrt(fan_in)).astype(np.float32)


# ------------------------------------------------------------------ reference

_REFERENCE = expected("training")
"""The float64 model itself (:mod:`grader.expected.training`), hidden from the
student's process: these names import it when called, in the worker (a check, or a
``run``'s :func:`grader.later.later`)."""
forward = _REFERENCE.fn("forward")
"""``tinymodels.forward`` in float64."""
loss = _REFERENCE.fn("loss")
"""``tinymodels.loss`` in float64."""
grads = _REFERENCE.fn("grads")
"""(loss, ``jax.grad(tinymodels.loss)``) in float64, by backpropagation."""
sgd_step = _REFERENCE.fn("sgd_step")
"""(params − lr·grads, loss before the step), float64."""


# ------------------------------------------------------------------ tolerance


@dataclass(frozen=True)
class Sizes:
    """The course model's sizes in one example."""

    n_layers: int
    batch: int
    d: int
    f: int

    @property
    def reduction(self) -> int:
        """K: the batch, plus D and F once per layer (forward and backward)."""
        return self.batch + self.n_layers * (self.d + self.f)


def quantities(s: Sizes) -> dict[str, float]:
    """The model's sizes a stray factor may be (issue 45 §3: :func:`relate.quantities`
    names a factor by them), as the lessons write them: the model dimension and the
    global batch, which lesson 7's example holds only as products (N·dblock, N·rows);
    the layers and F are the examples' own fields already."""
    return {f"D = {s.d}, the model dimension": s.d, f"B = {s.batch}, the global batch": s.batch}


def tolerance(sizes: Sizes) -> float:
    """atol as a fraction of max|ref| for float32 results of the course model."""
    return SAFETY * U32 * float(np.sqrt(sizes.reduction))
