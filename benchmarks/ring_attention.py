"""The figures behind lesson 10's tolerances and memory bound, re-measured.

    python benchmarks/ring_attention.py

1. float32 error of the reference rings (plain, causal or not, and zigzag)
   against the float64 reference, in units of u·max|ref| (u = 2⁻²⁴), next to
   the grader's allowance SAFETY·√(S + Dh) of them.
2. bfloat16 error, as a fraction of max|ref|: the reference (float32 scores
   and softmax sums) and a ring that keeps everything in bfloat16, against
   the allowance 2⁻⁶.
3. merge_partials: the error of the reference, and of one that weights
   bfloat16 o's, in the units of the check (u·(1 + max|lse|)·max|o| for o,
   u·(1 + |lse|) for lse) over 20 draws.
4. Temporary memory over the global |K| + |V| for the reference rings and
   two wrong ones from ``tests/mistakes/l10.py`` (K and V all-gathered; every
   block collected with permutes), on shapes the memory check measures and
   on some it skips.

The lesson text and ``grader/lessons/l10_context_parallel/spec.py`` quote these.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from grader.measure import devices  # noqa: E402
from grader.runtime import example_rng  # noqa: E402

devices.configure(8, "cpu")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax import lax  # noqa: E402
from jax.sharding import NamedSharding  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402

from grader.lessons.l10_context_parallel import attention  # noqa: E402
from grader.lessons.l10_context_parallel import spec as l10  # noqa: E402
from grader.lessons.l10_context_parallel.checks import MERGE_SAFETY  # noqa: E402
from grader.loader import load_module  # noqa: E402
from grader.reference.training import SAFETY, U32  # noqa: E402
from tests.mistakes.l10 import MISTAKES  # noqa: E402

SHAPES = [(3, 4, 2, 8), (6, 4, 2, 8), (4, 8, 3, 16), (8, 2, 1, 16), (3, 8, 2, 16), (6, 8, 1, 16)]
"""(N, S/N, H, Dh) for the value figures."""
MEMORY_SHAPES = [
    (6, 4, 1, 16), (6, 2, 2, 16), (6, 2, 4, 8), (8, 2, 2, 16), (6, 8, 1, 8),
    (6, 4, 2, 16), (6, 8, 2, 8), (6, 4, 3, 8), (8, 4, 2, 16), (8, 8, 1, 8),
    (6, 4, 1, 8), (6, 2, 2, 8), (4, 4, 2, 8), (4, 8, 1, 16),
]  # fmt: skip


def main() -> None:
    sol = load_module(ROOT / "solutions", l10.MODULE)
    float32_errors(sol)
    bfloat16_errors(sol)
    merge_errors(sol)
    memory(sol)


def run(fn, n: int, q, k, v, zigzag: bool, causal: bool) -> np.ndarray:
    """The program's output in sequence order, float64."""
    mesh = devices.make_mesh((n,), (l10.AXIS,))
    order = attention.zigzag_order(q.shape[0], n) if zigzag else np.arange(q.shape[0])
    rows = NamedSharding(mesh, P(l10.AXIS, None, None))
    args = [jax.device_put(a[order], rows) for a in (q, k, v)]
    tail = () if zigzag else (causal,)
    out = np.asarray(jax.jit(lambda a, b, c: fn(a, b, c, mesh, *tail))(*args), np.float64)
    back = np.empty_like(out)
    back[order] = out
    return back


def _inputs(shape, seed: int, dtype=np.float32):
    n, rows, h, dh = shape
    rng = np.random.default_rng(seed)
    return [rng.standard_normal((n * rows, h, dh)).astype(np.float32).astype(dtype) for _ in "qkv"]


def float32_errors(sol) -> None:
    print("1. float32: error in u·max|ref| (allowance SAFETY·√(S + Dh))")
    for seed, shape in enumerate(SHAPES):
        n, rows, _, dh = shape
        q, k, v = _inputs(shape, seed)
        allowance = SAFETY * np.sqrt(n * rows + dh)
        for causal in (True, False):
            want = attention.attention(q, k, v, causal)
            got = run(sol.ring_attention, n, q, k, v, False, causal)
            err = np.abs(got - want).max() / np.abs(want).max() / U32
            print(f"   ring   {shape} causal={causal!s:5}  {err:6.2f}  of {allowance:.0f}")
        want = attention.attention(q, k, v, True)
        got = run(sol.zigzag_ring_attention, n, q, k, v, True, True)
        err = np.abs(got - want).max() / np.abs(want).max() / U32
        print(f"   zigzag {shape}              {err:6.2f}  of {allowance:.0f}")


def bfloat16_errors(sol) -> None:
    print(f"2. bfloat16: error / max|ref| (allowance {l10.BF16_ALLOWANCE:.4f})")
    plain = all_bfloat16(sol)
    for seed, shape in enumerate(SHAPES):
        q, k, v = _inputs(shape, seed, jnp.bfloat16)
        want = attention.attention(q, k, v, True)
        errs = [
            np.abs(run(fn, shape[0], q, k, v, False, True) - want).max() / np.abs(want).max()
            for fn in (sol.ring_attention, plain)
        ]
        print(f"   {shape}  reference {errs[0]:.4f}   all in bfloat16 {errs[1]:.4f}")


def all_bfloat16(sol):
    """The reference ring with scores, softmax sums, o and lse kept in the inputs' dtype."""

    def block(q, k, v, mask):
        s = jnp.einsum("qhd,khd->hqk", q, k) * jnp.asarray(q.shape[-1] ** -0.5, q.dtype)
        if mask is not None:
            s = jnp.where(mask[None], s, -jnp.inf)
        m = jnp.max(s, axis=-1, keepdims=True)
        m = jnp.where(jnp.isneginf(m), 0, m)
        p = jnp.exp(s - m)
        d = jnp.sum(p, axis=-1)
        o = jnp.einsum("hqk,khd->qhd", p, v) / jnp.where(d == 0, 1, d).T[..., None]
        return o, (m[..., 0] + jnp.log(d)).T

    def empty(q):
        o, lse = jnp.zeros(q.shape, q.dtype), jnp.full(q.shape[:2], -jnp.inf, q.dtype)
        return lax.pcast(o, l10.AXIS, to="varying"), lax.pcast(lse, l10.AXIS, to="varying")

    source = (ROOT / "solutions" / f"{l10.MODULE}.py").read_text()
    module = _module(source, "bf16")
    module._block_attention, module._empty = block, empty
    return module.ring_attention


def merge_errors(sol) -> None:
    def in_bfloat16(o1, lse1, o2, lse2):
        o, lse = sol.merge_partials(o1.astype(jnp.bfloat16), lse1, o2.astype(jnp.bfloat16), lse2)
        return o.astype(jnp.float32), lse

    for name, fn in (("reference", sol.merge_partials), ("o in bfloat16", in_bfloat16)):
        o_units, lse_units = [], []
        for seed in range(20):
            inputs = l10.merge_inputs(
                ex := {"s": 12, "h": 3, "dh": 8, "seed": seed}, example_rng(ex)
            )
            got_o, got_lse = (np.asarray(a, np.float64) for a in jax.jit(fn)(*inputs))
            o1, lse1, o2, lse2 = (a.astype(np.float64) for a in inputs)
            want_o, want_lse = attention.merge((o1, lse1), (o2, lse2))
            finite = np.isfinite(want_lse)
            largest = np.abs(want_lse[finite]).max()
            o_units.append(
                np.abs(got_o - want_o).max() / (U32 * (1 + largest) * np.abs(want_o).max())
            )
            off = np.abs(got_lse[finite] - want_lse[finite])
            lse_units.append((off / (U32 * (1 + np.abs(want_lse[finite])))).max())
        print(f"3. merge_partials, {name}, 20 draws: o {max(o_units):.2f}, lse "
              f"{max(lse_units):.2f} units (allowance {MERGE_SAFETY:g})")  # fmt: skip


def memory(sol) -> None:
    print("4. temporary bytes / global |K| + |V| (float32, causal)")
    source = (ROOT / "solutions" / f"{l10.MODULE}.py").read_text()
    wrong = {m.id: _module(m.source(source), m.id) for m in MISTAKES
             if m.id in ("ring-all-gathers-k-and-v", "ring-collects-every-block")}  # fmt: skip
    programs = {
        "ring": lambda m: lambda q, k, v: sol.ring_attention(q, k, v, m, True),
        "zigzag": lambda m: lambda q, k, v: sol.zigzag_ring_attention(q, k, v, m),
        "all-gather": lambda m: lambda q, k, v: wrong["ring-all-gathers-k-and-v"].ring_attention(q, k, v, m, True),
        "collect": lambda m: lambda q, k, v: wrong["ring-collects-every-block"].ring_attention(q, k, v, m, True),
    }  # fmt: skip
    print("   (N, S/N, H, Dh)   checked  " + "  ".join(f"{p:>10}" for p in programs))
    for shape in MEMORY_SHAPES:
        n, rows, h, dh = shape
        checked = n >= l10.MEMORY_MIN_N and rows <= dh and rows * h * dh >= l10.MEMORY_MIN_BLOCK
        mesh = devices.make_mesh((n,), (l10.AXIS,))
        spec = NamedSharding(mesh, P(l10.AXIS, None, None))
        args = [jax.device_put(a, spec) for a in _inputs(shape, 0)]
        ratios = []
        for make in programs.values():
            compiled = jax.jit(make(mesh)).lower(*args).compile()
            ratios.append(compiled.memory_analysis().temp_size_in_bytes / (2 * args[1].nbytes))
        print(f"   {shape!s:17} {'yes' if checked else 'no':>7}  "
              + "  ".join(f"{r:10.2f}" for r in ratios))  # fmt: skip


def _module(source: str, name: str):
    directory = Path(tempfile.mkdtemp(prefix=f"l10-{name}-"))
    (directory / f"{l10.MODULE}.py").write_text(source)
    return load_module(directory, l10.MODULE)


if __name__ == "__main__":
    main()
