"""Lesson 8's float32 errors in units of u·√K·max|ref| (see grader/reference/training.py).

Runs the reference solution of every lesson-8 exercise, and the same
programs with a bfloat16 cast inside, on drawn examples, and prints the
worst error of each as a multiple of ``U32·√K·max|ref|`` (K from the
spec's ``reduce_size``). The grader allows ``training.SAFETY`` of these
units; correct programs must sit far below it and bfloat16 casts far above.

    python benchmarks/tolerance_l08.py
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from grader.measure import devices  # noqa: E402
from grader.runtime import InProcess  # noqa: E402

devices.configure(8, "cpu")

import numpy as np  # noqa: E402

from grader import engine  # noqa: E402
from grader.lessons.l08_tensor_parallel import spec as spec  # noqa: E402
from grader.loader import load_module  # noqa: E402
from grader.reference import training  # noqa: E402
from grader.spec import draw_examples  # noqa: E402

BF16_VARIANT = """
import jax.numpy as _jnp

def _mlp_partial(x, w_in, w_out):  # bfloat16 matmuls inside the float32 program
    bf = _jnp.bfloat16
    h = _jnp.tanh(x.astype(bf) @ w_in.astype(bf))
    return (h @ w_out.astype(bf)).astype(x.dtype)
"""


def units(trial) -> float:
    got = np.asarray(trial.output, np.float64)
    want = np.asarray(trial.expected, np.float64)
    k = spec.reduce_size(trial.example)
    return float(np.abs(got - want).max() / (np.abs(want).max() * training.U32 * np.sqrt(k)))


def main(n_draws: int = 12) -> None:
    solutions = load_module(ROOT / "solutions", spec.MODULE)
    source = (ROOT / "solutions" / f"{spec.MODULE}.py").read_text()
    variant_dir = Path("/tmp/l08_bf16")
    variant_dir.mkdir(exist_ok=True)
    (variant_dir / f"{spec.MODULE}.py").write_text(source + BF16_VARIANT)
    bf16 = load_module(variant_dir, spec.MODULE)
    ctx = engine.context()
    print(f"{'exercise':14} {'reference':>16} {'bfloat16 inside':>18}   (× u·√K·max|ref|)")
    for ex_spec in spec.SPEC.exercises:
        examples = ex_spec.explicit(ctx) + draw_examples(ex_spec.strategy(ctx), n_draws, 0)
        ref = [
            units(ex_spec.run(InProcess(ex), getattr(solutions, ex_spec.name), ex))
            for ex in examples
        ]
        row = f"{ex_spec.name:14} {min(ref):7.2f}–{max(ref):<7.2f}"
        if ex_spec.name != "tp_attention":  # the cast sits in the MLP helper
            low = [
                units(ex_spec.run(InProcess(ex), getattr(bf16, ex_spec.name), ex))
                for ex in examples
            ]
            row += f"  {min(low):8.0f}–{max(low):<8.0f}"
        print(row)


if __name__ == "__main__":
    main()
