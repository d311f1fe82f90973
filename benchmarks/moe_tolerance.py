"""How far lesson 11's layer lands from its float64 reference, in allowance units.

    python benchmarks/moe_tolerance.py

For the reference solution and for a bfloat16 expert inside a float32
example, on drawn sizes (N = 2, 3, 4, 8; D 8–16; F 16–32), prints the worst
``max|y − ref| / max|ref|`` in units of u·√K (float32, K = D + F + E, u =
2⁻²⁴) and of 2⁻⁸ (bfloat16 examples). The spec allows SAFETY = 16 units in
float32 and BF16_SAFETY units in bfloat16 (grader/lessons/l11_expert_parallel/spec.py).
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "solutions"))

from grader.measure import devices  # noqa: E402
from grader.runtime import example_rng  # noqa: E402

devices.configure(8)

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import l11_expert_parallel as sol  # noqa: E402
import numpy as np  # noqa: E402
from jax import lax  # noqa: E402
from jax.sharding import NamedSharding  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402

from grader.lessons.l11_expert_parallel import spec as spec  # noqa: E402
from grader.reference import training  # noqa: E402


def bf16_expert(x, router_w, w_in, w_out, mesh, capacity):
    """The reference with its expert computed in bfloat16 (tests/mistakes/l11.py)."""

    def body(x_rows, router, w_in_e, w_out_e):
        dispatch, combine = sol.top1_dispatch(x_rows @ router, capacity)
        sent = jnp.einsum("tec,td->ecd", dispatch.astype(x_rows.dtype), x_rows)
        mine = lax.all_to_all(sent, "expert", split_axis=0, concat_axis=0, tiled=True)
        h = jnp.bfloat16
        done = jnp.tanh(mine.astype(h) @ w_in_e[0].astype(h)) @ w_out_e[0].astype(h)
        back = lax.all_to_all(done.astype(mine.dtype), "expert", 0, 0, tiled=True)
        return jnp.einsum("tec,ecd->td", combine, back)

    return jax.shard_map(
        body, mesh=mesh, in_specs=(sol.TOKENS, P(), sol.EXPERTS, sol.EXPERTS), out_specs=sol.TOKENS
    )(x, router_w, w_in, w_out)


def error(fn, ex) -> float:
    """max|y − ref| / max|ref| of ``fn`` on example ``ex``."""
    mesh = devices.make_mesh((ex["n"],), ("expert",))
    inputs = spec.layer_inputs(ex, example_rng(ex))
    shard = {"x": P("expert", None), "router_w": P(), "w_in": P("expert", None, None)}
    shard["w_out"] = shard["w_in"]
    args = [jax.device_put(a, NamedSharding(mesh, shard[k])) for k, a in inputs.items()]
    got = np.asarray(jax.jit(lambda *a: fn(*a, mesh, ex["capacity"]))(*args), np.float64)
    want = spec.reference(ex, inputs)
    return float(np.abs(got - want).max() / np.abs(want).max())


def main() -> None:
    rows = []
    for i, (n, d, f) in enumerate([(2, 8, 16), (3, 16, 32), (4, 8, 32), (8, 16, 16)]):
        base = {"n": n, "rows": 6, "d": d, "f": f, "capacity": 2, "seed": 100 + i}
        f32_unit = training.U32 * np.sqrt(d + f + n)
        ex32, ex16 = {**base, "dtype": "float32"}, {**base, "dtype": "bfloat16"}
        rows.append((
            f"N={n} D={d} F={f}",
            error(sol.moe_layer, ex32) / f32_unit,
            error(bf16_expert, ex32) / f32_unit,
            error(sol.moe_layer, ex16) / 2.0**-8,
        ))  # fmt: skip
    print(f"{'sizes':<18}{'f32 ref (u·√K)':>16}{'bf16 expert (u·√K)':>20}{'bf16 ref (2⁻⁸)':>16}")
    for name, a, b, c in rows:
        print(f"{name:<18}{a:>16.2f}{b:>20.0f}{c:>16.2f}")


if __name__ == "__main__":
    main()
