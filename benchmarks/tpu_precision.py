"""Lesson 10's merge_partials on the default device against its float64 merge.

    python benchmarks/tpu_precision.py [--draws 200]

The grader runs one-device programs on the chip where there is one (a TPU's float32
exp and log are not the CPU's), so the tolerance of ``MergeValues`` must hold the
reference and other correct forms there, and still fail the catalogued mistakes.
Prints, over the grader's own draws (``merge_inputs``), the largest error of each form
in the check's units: lse in u·(1 + |lse|), o in u·(1 + max|lse|)·max|o|
(u = 2⁻²⁴), its largest lse error
absolute, and whether each is within the check's allowance (``merge_allowance``).
"""

from __future__ import annotations

import argparse
import sys

import numpy as np


def forms():
    import jax.numpy as jnp

    from solutions.l10_context_parallel import merge_partials

    def by_max(o1, lse1, o2, lse2):  # m + log(e^(l1-m) + e^(l2-m)), written out
        m = jnp.maximum(lse1, lse2)
        ref = jnp.where(jnp.isneginf(m), 0.0, m)
        e1, e2 = jnp.exp(lse1 - ref), jnp.exp(lse2 - ref)
        lse = jnp.where(jnp.isneginf(m), -jnp.inf, ref + jnp.log(e1 + e2))
        total = jnp.where(e1 + e2 == 0, 1.0, e1 + e2)[..., None]  # a row that saw no key: o = 0
        return (e1[..., None] * o1 + e2[..., None] * o2) / total, lse

    def bf16_o(o1, lse1, o2, lse2):  # a mistake: the partials weighted in bfloat16
        o, lse = merge_partials(o1.astype(jnp.bfloat16), lse1, o2.astype(jnp.bfloat16), lse2)
        return o.astype(jnp.float32), lse

    return {"reference": merge_partials, "by-max": by_max, "bf16-o (a mistake)": bf16_o}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--draws", type=int, default=200)
    args = parser.parse_args()
    sys.path.insert(0, ".")
    import jax

    from grader.expected import l10_context_parallel as expected
    from grader.lessons.l10_context_parallel.checks import MERGE_SAFETY, U32, merge_allowance
    from grader.lessons.l10_context_parallel.spec import merge_inputs

    print(f"device: {jax.devices()[0]}; MERGE_SAFETY allows {MERGE_SAFETY:g} units")
    for name, fn in forms().items():
        run = jax.jit(fn)
        worst_lse = worst_o = worst_abs = 0.0
        passes = True
        for seed in range(args.draws):
            ex = {"s": 64, "h": 4, "dh": 8} if seed else {"s": 8, "h": 2, "dh": 4}
            inputs = merge_inputs(ex, np.random.default_rng(seed))
            got_o, got_lse = (np.asarray(a, np.float64) for a in run(*inputs))
            o1, lse1, o2, lse2 = (a.astype(np.float64) for a in inputs)
            want_o, want_lse = expected.merge((o1, lse1), (o2, lse2))
            fin = np.isfinite(want_lse)
            largest = float(np.max(np.abs(want_lse[fin])))
            lse_units = np.abs(got_lse - want_lse)[fin] / (U32 * (1 + np.abs(want_lse[fin])))
            o_units = np.abs(got_o - want_o) / (U32 * (1 + largest) * np.abs(want_o).max())
            worst_lse = max(worst_lse, float(lse_units.max()))
            worst_abs = max(worst_abs, float(np.abs(got_lse - want_lse)[fin].max()))
            lse_tol, o_tol = merge_allowance(want_o, want_lse)
            passes &= bool(np.all(np.abs(got_lse - want_lse)[fin] <= lse_tol[fin]))
            passes &= bool(np.all(np.abs(got_o - want_o) <= o_tol))
            worst_o = max(worst_o, float(np.nanmax(o_units)))
        print(f"{name:20s} worst over {args.draws} draws: lse {worst_lse:8.2f} units "
              f"({worst_abs:.2e} absolute), o {worst_o:8.2f} units; within the check's "
              f"allowance: {'yes' if passes else 'NO'}")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
