"""Bytes per parameter of a training run's state, by precision mix and ZeRO stage.

One formula, three terms: the params the model computes with, their gradients,
and the optimizer's state (float32 master weights, when the params are narrower,
and Adam's two float32 moments). ZeRO-1 splits the optimizer's state over the
N data-parallel devices, ZeRO-2 the gradients too, ZeRO-3 the params too.
Megatron Core's distributed optimizer is ZeRO-1: its table of bytes per parameter
(20 → 4 + 16/d, 18 → 6 + 12/d, 16 → 8 + 8/d) is :func:`per_device` at stages 0
and 1 of its three mixes; the ZeRO paper's 7.5B-parameter example on 64 devices
(120 → 31.4 → 16.6 → 1.9 GB) is :data:`ZERO_PAPER` at stages 0 to 3. Both are
reproduced by ``tests/test_l15.py`` from these formulas.
"""

from __future__ import annotations

from dataclasses import dataclass

ADAM_MOMENTS = 2
"""Adam keeps two moments (m, v) per parameter."""


@dataclass(frozen=True)
class Mix:
    """A precision mix: bytes per parameter of each kind of state."""

    name: str
    params: int
    """The weights the model computes with."""
    grads: int
    """The gradients the backward writes."""
    master: int
    """float32 master weights: 0 when the params are float32 themselves."""
    main_grads: int = 0
    """A float32 copy of narrow gradients the optimizer keeps (Megatron's fp16 runs)."""
    moment: int = 4
    """Each of Adam's two moments."""

    @property
    def optimizer(self) -> int:
        """Bytes per parameter of the optimizer's state: what ZeRO-1 splits."""
        return self.master + self.main_grads + ADAM_MOMENTS * self.moment

    @property
    def total(self) -> int:
        """Bytes per parameter with nothing split."""
        return self.params + self.grads + self.optimizer


ZERO_PAPER = Mix("fp16 params and grads; fp32 master and moments (K = 12)", 2, 2, master=4)
"""The ZeRO paper's mixed-precision Adam: 2 + 2 + 12 = 16 bytes per parameter."""
MEGATRON_FP16 = Mix("fp16 params and grads; fp32 master, main grads and moments", 2, 2, 4, 4)
MEGATRON_BF16 = Mix("bf16 params, fp32 grads; fp32 master and moments", 2, 4, master=4)
MEGATRON_FP32 = Mix("fp32 params and grads; fp32 moments", 4, 4, master=0)
THIS_LESSON = Mix("bf16 params, fp32 gradient buffer; fp32 master and moments", 2, 4, master=4)
"""What this lesson's exercises keep: 2 + 4 + 12 = 18 bytes per parameter, Megatron's bf16
row. The gradients arrive in bfloat16, but the step sums them in a float32 buffer (the whole
``[Ψ]`` in ZeRO-1, the device's slice in ZeRO-2), as Megatron and DeepSpeed keep it."""


def per_device(mix: Mix, stage: int, n: int) -> float:
    """Bytes per parameter on each of ``n`` devices at ZeRO ``stage`` (0 = none … 3).

    With P, G, O the bytes of params, gradients and optimizer state per parameter:
    stage 0 keeps P + G + O, stage 1 P + G + O/n, stage 2 P + (G + O)/n,
    stage 3 (P + G + O)/n."""
    p, g, o = mix.params, mix.grads, mix.optimizer
    if stage == 0:
        return p + g + o
    if stage == 1:
        return p + g + o / n
    if stage == 2:
        return p + (g + o) / n
    if stage == 3:
        return (p + g + o) / n
    raise ValueError(f"ZeRO has stages 0 to 3, not {stage}")


def adam_state_bytes(psi: int, n: int) -> int:
    """What the step of this lesson keeps per device for a ZeRO-sharded AdamW of
    ``psi`` parameters: the float32 master weights and two moments, 12·Ψ/N bytes."""
    return (4 + ADAM_MOMENTS * 4) * psi // n
