"""What lesson 17's values cost in TPU interpret mode alone: the floor under its cold grade.

    python benchmarks/pallas_interpret.py

Lesson 17 checks its kernels' values by calling them in TPU interpret mode (the race
detector off, as the spec sets it) on simulated CPU devices. This calls the reference's
ring kernels on the meshes issue 46 prescribes (2, 4, 3, 8; the lesson's fixed examples,
their shapes) and its tiled matmul on its fixed grids, in one process already started,
and prints each call's seconds twice: first (tracing, compiling and running: what a
grade pays) and again, the same call on the same arrays. The second costs as much as
the first: an interpreted kernel is compiled anew on every call (its host callbacks are
new objects each time, so no cached program matches; measured with cProfile on jax
0.10.2: 0.87 of a repeated 1.14-s matmul call is XLA's compile, 0.07 the run), so
compiling the interpreter's program, not running it, is the floor. Nothing else of a
grade is in these figures: no process start, no import, no export, no check.
Compare their sum with a cold grade's budget (``benchmarks/grading_speed.py --only
7,17``: issue 46 asks lesson 17's cold grade for at most 1.5× lesson 7's).
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    sys.path.insert(0, str(ROOT))
    from grader.measure import devices

    devices.configure(8, "cpu")
    import jax
    import numpy as np
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P

    from grader import engine
    from grader.lessons.l17_pallas_kernels import spec as l17  # sets interpret mode

    sys.path.insert(0, str(ROOT / "solutions"))
    import l17_pallas_kernels as ref

    lesson, ctx = l17.SPEC, engine.context()
    rows: list[tuple[str, float, float]] = []

    def timed(label: str, fn: Any, *args: Any) -> None:
        first = time.perf_counter()
        jax.block_until_ready(fn(*args))
        again = time.perf_counter()
        jax.block_until_ready(fn(*args))
        rows.append((label, again - first, time.perf_counter() - again))

    for ex in lesson.exercise("tiled_matmul").explicit(ctx):
        if ex.get("ragged"):
            continue
        m, k, n = ex["gm"] * ex["bm"], ex["gk"] * ex["bk"], ex["gn"] * ex["bn"]
        dt = l17._dtype(ex["dtype"])
        a, b = np.ones((m, k), dt), np.ones((k, n), dt)
        label = f"tiled_matmul {m}×{k}×{n} {ex['dtype']}"
        timed(label, ref.tiled_matmul, a, b, ex["bm"], ex["bk"], ex["bn"])
    for name, kind in (("ring_all_gather", "gather"), ("ring_reduce_scatter", "scatter")):
        for ex in lesson.exercise(name).explicit(ctx):
            mesh = jax.make_mesh((ex["n"],), ("x",), devices=jax.devices()[: ex["n"]])
            x = np.ones((l17._layout(kind, ex).rows, ex["d"]), l17._dtype(ex["dtype"]))
            placed = jax.device_put(x, NamedSharding(mesh, P("x", None)))
            timed(f"{name} N = {ex['n']} {ex['dtype']}", getattr(ref, name), placed, mesh)
    width = max(len(r[0]) for r in rows)
    print(f"{'call':<{width}}  first (s)  again (s)")
    for label, first, again in rows:
        print(f"{label:<{width}}  {first:9.2f}  {again:9.2f}")
    print(f"{'sum':<{width}}  {sum(r[1] for r in rows):9.2f}  {sum(r[2] for r in rows):9.2f}")
    print(f"load average {os.getloadavg()[0]:.1f}; jax {jax.__version__}")


if __name__ == "__main__":
    main()
