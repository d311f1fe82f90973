"""Per-example cost of handing the student's program back with jax.export (issue 9).

    python benchmarks/export_cost.py

Lesson 2's ring all-gather (the reference) on six examples: compiled and run
in one process as today, against traced on abstract shapes, exported and
serialised (what a student's process would do), then deserialised, compiled
and run on the data (what the grading process would do). Also shows that a
host callback does not serialise. One run, no loop: timings are noisy.
It measured the route before grader/sandbox/isolation.py took it.
"""

import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "solutions"))

from grader.measure import devices  # noqa: E402

devices.configure(8, "cpu")
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax import export  # noqa: E402
from jax.sharding import NamedSharding  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402
from l02_collectives import ring_all_gather  # noqa: E402


def program_for(n):
    mesh = devices.make_mesh((n,), ("x",))
    prog = jax.jit(
        jax.shard_map(
            lambda b: ring_all_gather(b, "x"),
            mesh=mesh,
            in_specs=P("x"),
            out_specs=P("x"),
            check_vma=True,
        )
    )
    return mesh, prog


def direct(n, rows, cols, seed):
    mesh, prog = program_for(n)
    x = np.random.default_rng(seed).integers(-8, 9, (n * rows, cols)).astype(np.float32)
    xs = jax.device_put(x, NamedSharding(mesh, P("x")))
    t = time.perf_counter()
    c = prog.lower(xs).compile()
    t1 = time.perf_counter()
    c(xs).block_until_ready()
    t2 = time.perf_counter()
    return t1 - t, t2 - t1


def via_export(n, rows, cols, seed):
    mesh, prog = program_for(n)
    spec = jax.ShapeDtypeStruct((n * rows, cols), jnp.float32, sharding=NamedSharding(mesh, P("x")))
    t0 = time.perf_counter()
    blob = export.export(prog)(spec).serialize()  # student's process: trace on shapes only
    t1 = time.perf_counter()
    exp = export.deserialize(blob)  # grading process
    x = np.random.default_rng(seed).integers(-8, 9, (n * rows, cols)).astype(np.float32)
    xs = jax.device_put(x, NamedSharding(mesh, P("x")))
    g = jax.jit(exp.call)
    t2 = time.perf_counter()
    c = g.lower(xs).compile()
    t3 = time.perf_counter()
    out = c(xs).block_until_ready()
    t4 = time.perf_counter()
    hlo = c.as_text()
    assert n == 1 or "collective-permute" in hlo
    np.testing.assert_array_equal(np.asarray(out), np.concatenate([x] * n))
    return t1 - t0, t2 - t1, t3 - t2, t4 - t3, len(blob)


cases = [(1, 1, 1, 0), (4, 1, 2, 1), (3, 2, 3, 2), (6, 1, 2, 3), (8, 3, 4, 4), (2, 2, 2, 5)]
for c in cases[:1]:
    direct(*c)
    via_export(*c)  # warm-up (imports, first compile)
d = [direct(*c) for c in cases]
e = [via_export(*c) for c in cases]
ms = [1e3 * float(np.mean([r[i] for r in e])) for i in range(4)]
print(f"direct  compile {1e3 * np.mean([a for a, _ in d]):.1f} ms  "
      f"run {1e3 * np.mean([b for _, b in d]):.1f} ms (mean of {len(d)})")  # fmt: skip
print(f"export  trace+export+serialize {ms[0]:.1f} ms  deserialize {ms[1]:.1f} ms  "
      f"compile {ms[2]:.1f} ms  run {ms[3]:.1f} ms  blob {int(np.mean([r[4] for r in e]))} B")  # fmt: skip
# a host callback does not serialise
mesh, _ = program_for(4)


def cheat(b):
    return jax.pure_callback(lambda v: np.asarray(v), jax.ShapeDtypeStruct((4, 2), jnp.float32), b)


spec = jax.ShapeDtypeStruct((4, 2), jnp.float32)
try:
    export.export(jax.jit(cheat))(spec).serialize()
    print("callback exported?!")
except Exception as exc:
    print("callback:", type(exc).__name__, str(exc)[:160])
