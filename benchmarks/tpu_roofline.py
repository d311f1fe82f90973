"""Lesson 3's roofline against the chip: what one accelerator reaches.

    python benchmarks/tpu_roofline.py [--json FILE]

Three measurements, each a call's share of ``--runs`` calls queued back to back
(median of five such runs, after a warm-up; wall clock to ``block_until_ready``):

- a bf16 matmul n×n×n: TFLOP/s = 2n³ / t (compute-bound: near the peak);
- a bf16 8192×8192 weight times B rows: 2·B·8192² / t, against the roofline's
  min(peak, B·bandwidth) (arithmetic intensity ≈ B FLOP per byte of weight);
- an elementwise stream y = 2x + 1 over 1 GiB of float32: (read + write bytes) / t.

On a host without an accelerator it says so and exits 0 (nothing to measure).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time


def timed(f, *args, runs: int) -> float:
    """Seconds a call: ``runs`` calls queued back to back, then waited for, so that
    the host's cost of a call (about 0.6 ms under the lent host's gVisor, measured
    as the floor of one call timed alone) overlaps the chip's work; median of 5."""
    f(*args).block_until_ready()
    out = []
    for _ in range(5):
        t = time.perf_counter()
        for _ in range(runs):
            y = f(*args)
        y.block_until_ready()
        out.append((time.perf_counter() - t) / runs)
    return statistics.median(out)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--json", default="")
    parser.add_argument("--runs", type=int, default=10)
    args = parser.parse_args()
    import jax
    import jax.numpy as jnp

    device = jax.devices()[0]
    if device.platform == "cpu":
        print("tpu_roofline: no accelerator here: nothing to measure")
        return 0
    kind = getattr(device, "device_kind", device.platform)
    rows: dict = {"device": kind, "square": [], "weight": [], "stream": []}
    key = jax.random.key(0)
    mm = jax.jit(lambda a, b: a @ b)
    for n in (1024, 2048, 4096, 8192):
        a = jax.random.normal(key, (n, n), jnp.bfloat16)
        t = timed(mm, a, a, runs=args.runs)
        rows["square"].append({"n": n, "seconds": t, "tflops": 2 * n**3 / t / 1e12})
        print(f"matmul {n}^3 bf16: {t * 1e3:8.3f} ms  {2 * n**3 / t / 1e12:6.1f} TFLOP/s")
    w = jax.random.normal(key, (8192, 8192), jnp.bfloat16)
    for b in (8, 16, 32, 64, 128, 256, 512, 1024, 2048):
        x = jax.random.normal(key, (b, 8192), jnp.bfloat16)
        t = timed(mm, x, w, runs=args.runs)
        flops = 2 * b * 8192**2
        rows["weight"].append({"batch": b, "seconds": t, "tflops": flops / t / 1e12})
        print(f"weight 8192^2 x {b:4d} rows: {t * 1e3:8.3f} ms  {flops / t / 1e12:6.1f} TFLOP/s")
    stream = jax.jit(lambda x: 2 * x + 1)
    for mib in (64, 256, 1024):
        x = jnp.ones((mib * 2**20 // 4,), jnp.float32)
        t = timed(stream, x, runs=args.runs)
        gbs = 2 * mib * 2**20 / t / 1e9
        rows["stream"].append({"mib": mib, "seconds": t, "gbs": gbs})
        print(f"stream 2x+1 over {mib:5d} MiB f32: {t * 1e3:8.3f} ms  {gbs:6.1f} GB/s")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
