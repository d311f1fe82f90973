"""Checks on the traced program (jaxpr): what the student wrote, before XLA
compiled it — whether it chose its own collectives, and what dtype each sends.

The compiled HLO stays the source of truth for kinds, counts and bytes
(:mod:`grader.checks.comms`); XLA:CPU widens bfloat16 collectives to float32
there, so the dtype a collective sends is read here instead.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from grader.checks.comms import communication
from grader.evidence import Table
from grader.results import CheckResult
from grader.spec import Check, Trial

NARROW_FLOATS = ("bfloat16", "float16")
"""16-bit floats."""
SIGNIFICANT_BITS = {"bfloat16": 8, "float16": 11, "float32": 24}
"""Bits of precision (mantissa + the implicit one) of each float dtype."""


def narrow_floats(trial: Trial) -> list[str]:
    """The 16-bit float dtypes the traced program computes in."""
    return sorted(d for d in NARROW_FLOATS if trial.program.dtypes[d])


def precision_hint(trial: Trial, advice: str, detail: str = "") -> str | None:
    """The hint for a float32 example whose traced program computes in a 16-bit
    float (read from the program's own dtypes): names the cast, says what it
    costs, then the lesson's ``advice``. None when the example is not float32 or
    the program holds no 16-bit float, so the hint never claims an unmeasured cause."""
    if trial.example.get("dtype", "float32") != "float32":
        return None
    low = narrow_floats(trial)
    if not low:
        return None
    bits = min(SIGNIFICANT_BITS[d] for d in low)
    coarser = 2 ** (SIGNIFICANT_BITS["float32"] - bits)
    return (
        f"Your program computes in {' and '.join(low)}{detail}, and this example is float32: "
        f"{bits} significant bits round {coarser:,}× more coarsely than float32's 24, far "
        f"beyond the float32 error the check allows. {advice}"
    )


@dataclass(frozen=True)
class UnderShardMap(Check):
    """The program holds a ``jax.shard_map``: the lesson is about choosing the
    communication yourself, not leaving it to XLA's partitioner."""

    name: str = "shard_map"
    itemsize: Callable[[Trial], int] | None = None
    """Count elements at this width (see :meth:`grader.measure.hlo.Collective.total`)."""

    def __call__(self, trial: Trial) -> CheckResult:
        if trial.program.counts["shard_map"]:
            return CheckResult(self.name, True, "written with jax.shard_map")
        if (trial.mesh.size if trial.mesh is not None else 1) == 1:
            # jax lowers a one-device shard_map inline: its program cannot show one, and
            # there is no partitioner's choice to refuse (the other examples hold devices)
            return CheckResult(self.name, True, "one device: nothing for XLA to partition")
        comms, width = trial.comms, self.itemsize(trial) if self.itemsize else None
        kinds = ", ".join(sorted(comms.kinds())) or "no collectives"
        sent = comms.bytes(None, width)
        shown = "an unknown number of" if sent is None else f"{sent:,}"
        return CheckResult(
            self.name,
            False,
            f"no jax.shard_map in your program: XLA's partitioner chose {kinds} "
            f"({shown} bytes per device) — the table below is its plan, not yours",
            evidence=[communication(trial, width)],
            hint="This lesson asks you to choose the collectives: write the body under "
            "jax.shard_map with in_specs/out_specs from the docstring and call the collective "
            "(lax.all_gather, lax.psum, lax.psum_scatter, lax.ppermute) yourself. A plain "
            "a @ b or jnp.matmul(..., out_sharding=…) leaves the choice to XLA.",
        )


NARROWER = {"float32": ("bfloat16", "float16"), "bfloat16": (), "float16": ()}
"""Float dtypes narrower than an exercise's own: computing in them loses precision."""


@dataclass(frozen=True)
class Precision(Check):
    """Every collective the student wrote sends ``dtype(trial)``, as traced (a float32
    running sum on bfloat16 inputs doubles the bytes on a real link; XLA:CPU
    widens bfloat16 in its compiled program, so the HLO cannot tell), and nothing
    is computed in a narrower float than the inputs (a bfloat16 cast inside a
    float32 exercise)."""

    dtype: Callable[[Trial], str] = lambda t: t.example["dtype"]
    name: str = "precision"

    def __call__(self, trial: Trial) -> CheckResult:
        want, program = self.dtype(trial), trial.program
        narrow = [d for d in NARROWER.get(want, ()) if program.dtypes[d]]
        if narrow:
            return CheckResult(
                self.name,
                False,
                f"your program computes in {', '.join(narrow)}; the inputs are {want}",
                hint=f"A cast to {narrow[0]} inside a {want} exercise rounds every product "
                f"to {narrow[0]}'s 8 bits of mantissa: with float-valued inputs the result is "
                f"off by far more than {want}'s rounding. Keep the inputs' dtype.",
            )
        wrong = [s for s in program.collectives if any(d != want for d in s.dtypes)]
        if not wrong:
            sent = "every collective sends " + want if program.collectives else "no collectives"
            return CheckResult(self.name, True, f"computes in {want}; {sent}")
        rows = [[s.primitive, ", ".join(s.axes), want, ", ".join(s.dtypes)] for s in wrong]
        got = sorted({d for s in wrong for d in s.dtypes if d != want})
        return CheckResult(
            self.name,
            False,
            f"{len(wrong)} collective(s) send {', '.join(got)} where the inputs are {want}",
            evidence=[Table(["collective", "axes", "expected", "yours"], rows)],
            hint=f"Cast to {want} before the collective (x.astype(a.dtype)): a wider dtype "
            "on the wire sends more bytes than the optimum on a GPU or TPU, even where "
            "XLA:CPU hides it. Accumulate locally in float32 if you like, but send the "
            "inputs' dtype.",
        )
