"""Lesson 12's figures: memory and bytes of correct and wrong train steps.

For the reference ``train_step`` and variants of it (edits of its text), on
lesson 12's explicit 4×2 example (L = 8, B = 4, S = 4, D = 32, H = 6, Dh = 4,
F = 64, float32): temporaries per device over the memory bound
|params|/(2·model), and bytes per kind over the reference's formula
(all-reduce over the Megatron optimum 4·L·2(m−1)/m·|[B/data, S, D]|). The
lesson text quotes these.

    python benchmarks/parallel_transformer.py
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

from grader import engine  # noqa: E402
from grader.lessons.l12_parallel_transformer import spec as spec  # noqa: E402
from grader.loader import load_module  # noqa: E402

GATHER = "    w = _gather(w)\n"
NAMED = "    w = {k: checkpoint_name(v, 'gathered') for k, v in _gather(w).items()}\n"
VARIANTS = {
    "reference (save only the mid-block h)": [],
    "jax.checkpoint, no policy": [("policy=SAVE_MID)", ")")],
    "h cast to varying before each matmul": [
        ('    hv = lax.pcast(h, "model", to="varying")  # once: its transpose is one psum of dh\n',
         "    hv = h\n"),
        ('    hv = lax.pcast(h, "model", to="varying")\n', "    hv = h\n"),
    ],
    "save all but the gathered weights' names": [
        (GATHER, NAMED),
        ("policy=SAVE_MID)",
         "policy=jax.checkpoint_policies.save_anything_except_these_names('gathered'))"),
    ],
    "no remat": [("block = jax.checkpoint(lambda h, w: _block(h, w, dh), policy=SAVE_MID)",
                  "block = lambda h, w: _block(h, w, dh)")],
}  # fmt: skip


def main() -> None:
    ex = spec.explicit_examples(engine.context())[0]
    s = spec.sizes(ex)
    ref = spec.reference_bytes(s.shapes(), s.data, s.model, spec.ITEMSIZE)
    optimum = spec.megatron(s.shapes(), s.data, s.model, spec.ITEMSIZE)
    bound = s.params_bytes // (2 * s.model)
    scalar = ref["all-reduce"] - optimum  # the loss, all-reduced over 'data'
    source = (ROOT / "solutions" / "l12_parallel_transformer.py").read_text()
    print(f"example {ex}; |params| = {s.params_bytes:,} B, bound {bound:,} B")
    print(f"{'variant':42s} {'temp/bound':>10s} {'AG/ref':>7s} {'RS/ref':>7s} {'AR/opt':>7s}")
    with tempfile.TemporaryDirectory() as tmp:
        for i, (name, edits) in enumerate(VARIANTS.items()):
            text = source
            for old, new in edits:
                assert text.count(old) == 1, (name, old)
                text = text.replace(old, new)
            (Path(tmp) / f"v{i}.py").write_text(text)
            trial = spec.run_train(InProcess(ex), load_module(Path(tmp), f"v{i}").train_step, ex)
            ag, rs, ar = (trial.comms.bytes(k) for k in spec.KINDS)
            print(f"{name:42s} {trial.memory['temp'] / bound:10.2f} "
                  f"{ag / ref['all-gather']:7.2f} {rs / ref['reduce-scatter']:7.2f} "
                  f"{(ar - scalar) / optimum:7.2f}")  # fmt: skip


if __name__ == "__main__":
    main()
