"""How far correct float32 gradients and bfloat16 slips land from the float64 reference.

    python benchmarks/tolerance.py

For the course model on drawn sizes, computes the gradient several correct
ways in float32 (whole batch on one device; data parallel at N = 3, 4, 8;
micro-batch accumulation) and several ways with one bfloat16 cast inside
(params, inputs, activations, or the gradient before the all-reduce), and
prints each error as a multiple of u·√K·max|ref| (u = 2⁻²⁴, K from
:class:`grader.reference.training.Sizes`). ``grader.reference.training.SAFETY`` must sit between
the worst correct program and the mildest bfloat16 slip.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from grader.measure import devices  # noqa: E402

devices.configure(8, "cpu")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax import lax  # noqa: E402
from jax.sharding import NamedSharding  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402

import tinymodels  # noqa: E402
from grader.reference import training  # noqa: E402

SIZES = [  # L, B, D, F
    (2, 24, 8, 16),
    (3, 48, 16, 32),
    (2, 96, 8, 64),
    (3, 192, 16, 64),
    (2, 240, 16, 48),
]
BF16 = jnp.bfloat16


def bf(a):
    return a.astype(BF16).astype(jnp.float32)


def loss_cast(where):
    def f(p, x, y):
        if where == "params":
            p = jax.tree.map(bf, p)
        if where == "inputs":
            x = bf(x)
        if where == "activations":
            h = x
            for i in range(p["w_in"].shape[0]):
                h = bf(tinymodels.layer(h, p["w_in"][i], p["w_out"][i]))
            err = h - y
            return 0.5 * jnp.mean(jnp.sum(err * err, axis=-1))
        return tinymodels.loss(p, x, y)

    return f


def dp(n, where=None, n_micro=1):
    mesh = jax.make_mesh((n,), ("data",), devices=jax.devices()[:n])
    f = loss_cast(where)

    def body(p, x, y):
        pv = jax.tree.map(lambda a: lax.pcast(a, "data", to="varying"), p)
        xs = x.reshape(n_micro, -1, x.shape[-1])
        ys = y.reshape(n_micro, -1, y.shape[-1])

        def step(g, xy):
            return jax.tree.map(jnp.add, g, jax.grad(f)(pv, *xy)), None

        g, _ = lax.scan(step, jax.tree.map(jnp.zeros_like, pv), (xs, ys))
        if where == "grads":
            g = jax.tree.map(bf, g)
        return jax.tree.map(lambda a: lax.psum(a, "data") / (n * n_micro), g)

    def run(p, x, y):
        rep, row = NamedSharding(mesh, P()), NamedSharding(mesh, P("data", None))
        p = jax.device_put(p, rep)
        x, y = jax.device_put(x, row), jax.device_put(y, row)
        sm = jax.shard_map(
            body, mesh=mesh, in_specs=(P(), P("data", None), P("data", None)), out_specs=P()
        )
        return jax.jit(sm)(p, x, y)

    return run


def main() -> None:
    ways = {
        "f32 whole batch": lambda p, x, y: jax.jit(jax.grad(tinymodels.loss))(p, x, y),
        "f32 dp N=3": dp(3),
        "f32 dp N=4": dp(4),
        "f32 dp N=8": dp(8),
        "f32 dp N=4 micro=3": dp(4, n_micro=3),
        "f32 dp N=8 micro=3": dp(8, n_micro=3),
        "bf16 params": dp(4, "params"),
        "bf16 inputs": dp(4, "inputs"),
        "bf16 activations": dp(4, "activations"),
        "bf16 grads before psum": dp(4, "grads"),
    }
    worst: dict[str, list[float]] = {k: [] for k in ways}
    for i, (n_layers, b, d, f) in enumerate(SIZES):
        rng = np.random.default_rng(i)
        params = training.draw_params(rng, n_layers, d, f)
        x, y = training.draw_batch(rng, b, d)
        _, ref = training.grads(params, x, y)
        unit = training.U32 * np.sqrt(training.Sizes(n_layers, b, d, f).reduction)
        for name, way in ways.items():
            got = way(params, x, y)
            worst[name].append(
                max(
                    float(np.max(np.abs(np.asarray(got[k], np.float64) - ref[k])))
                    / (unit * float(np.max(np.abs(ref[k]))))
                    for k in ref
                )
            )
    print(f"error / (u·√K·max|ref|), over {len(SIZES)} sizes; SAFETY = {training.SAFETY}")
    for name, errs in worst.items():
        print(f"  {name:24s} min {min(errs):8.2f}  max {max(errs):8.2f}")


if __name__ == "__main__":
    main()
