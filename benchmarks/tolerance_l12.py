"""Lesson 12's float32 errors in units of u·√K·max|ref| (see grader/reference/training.py).

Runs the reference ``train_step`` and the same step with the gathered weights
cast to bfloat16, on the explicit examples and three drawn ones, and prints
the worst error over the new params and the loss as a multiple of
``U32·√K·max|ref|`` (K = B·S + L·(2D + F + H·Dh + S), the spec's
``Sizes.reduction``). The grader allows ``training.SAFETY`` of these units.

    python benchmarks/tolerance_l12.py
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from grader.measure import devices  # noqa: E402
from grader.runtime import InProcess  # noqa: E402

devices.configure(8, "cpu")

import numpy as np  # noqa: E402

from grader import engine  # noqa: E402
from grader.lessons.l12_parallel_transformer import spec as spec  # noqa: E402
from grader.loader import load_module  # noqa: E402
from grader.reference import training  # noqa: E402
from grader.spec import draw_examples  # noqa: E402

GATHER = "    w = _gather(w)\n"
BF16 = "    w = {k: v.astype(jnp.bfloat16).astype(v.dtype) for k, v in _gather(w).items()}\n"


def worst(trial) -> float:
    """The largest error of any new param or the loss, in units of u·√K·max|ref|."""
    unit = training.U32 * np.sqrt(spec.sizes(trial.example).reduction)
    new, loss = trial.output
    want, want_loss = trial.expected
    errs = [np.abs(np.asarray(new[k], np.float64) - want[k]).max() / np.abs(want[k]).max()
            for k in spec.NAMES]  # fmt: skip
    errs.append(abs(float(loss) - float(want_loss)) / abs(float(want_loss)))
    return max(errs) / unit


def main() -> None:
    ctx = engine.context()
    examples = spec.explicit_examples(ctx) + draw_examples(spec.example_strategy(ctx), 3, seed=0)
    source = (ROOT / "solutions" / "l12_parallel_transformer.py").read_text()
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "bf16.py").write_text(source.replace(GATHER, BF16))
        programs = {"reference": load_module(ROOT / "solutions", "l12_parallel_transformer"),
                    "bfloat16 weights": load_module(Path(tmp), "bf16")}  # fmt: skip
        for name, module in programs.items():
            got = [worst(spec.run_train(InProcess(ex), module.train_step, ex)) for ex in examples]
            print(f"{name:18s} {min(got):10.2f} … {max(got):10.2f}  (allowed {training.SAFETY})")


if __name__ == "__main__":
    main()
