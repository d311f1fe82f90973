"""Bytes each lesson-4 and lesson-5 reference moves, against the optimum and XLA.

    python benchmarks/communication.py

For every reference solution of lessons 4 and 5, on meshes of 2, 4 and 8
devices (2×2 and 2×4 for the 2-D case): bytes sent per device by the
compiled program, divided by the optimum for the case (target 1.00) and by
what XLA's own partitioner sends for the same input and output shardings
(``jax.jit`` of the unsharded product on an Auto mesh). For lesson 5 it also
gives temporary memory per device, ours against XLA's. Prints a table and
writes benchmarks/results/communication.json.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from grader import devices  # noqa: E402

devices.configure(8, "cpu")

import jax  # noqa: E402
import numpy as np  # noqa: E402
from jax.sharding import AxisType, NamedSharding  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402
from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from grader import hlo, matmul  # noqa: E402
from grader.loader import load_module  # noqa: E402
from grader.specs import l04_sharded_matmul as l04  # noqa: E402
from grader.specs import l05_collective_matmul as l05  # noqa: E402

SHAPE = (128, 128, 96)  # I, J, K: every lesson-4 plan is the cheapest one here


def lesson4() -> list[dict]:
    sol = load_module(ROOT / "solutions", l04.MODULE)
    rows = []
    for case in matmul.CASES.values():
        meshes = [(2, 2), (2, 4)] if case.two_d else [(2,), (4,), (8,)]
        for mesh in meshes:
            assert case.cheapest(*SHAPE, mesh)
            key = {"mesh": mesh} if case.two_d else {"n": mesh[0]}
            ex = {**key, "shape": SHAPE, "dtype": "float32", "seed": 0}
            trial = l04._run(case)(getattr(sol, f"matmul_{case.name}"), ex)
            ours = trial.comms.bytes(None, matmul.ITEMSIZE["float32"])
            xla, kinds = matmul.xla_bytes(case, ex)
            rows.append({"lesson": 4, "exercise": f"matmul_{case.name}",
                         "mesh": "×".join(map(str, mesh)), "bytes": ours,
                         "optimum": l04._optimum(case, ex), "xla": xla, "xla_kinds": kinds})  # fmt: skip
    return rows


def _compile(fn, mesh, x, w, specs, out):
    args = tuple(jax.device_put(a, NamedSharding(mesh, P(*s))) for a, s in zip((x, w), specs))
    compiled = jax.jit(fn, out_shardings=out).lower(*args).compile()
    comms = hlo.summarize(compiled.as_text(), num_devices=mesh.size)
    return comms, compiled.memory_analysis().temp_size_in_bytes


def lesson5() -> list[dict]:
    sol = load_module(ROOT / "solutions", "l05_collective_matmul")
    rows = []
    for name, kind in (("allgather_matmul", "gather"), ("matmul_reducescatter", "scatter"),
                       ("allgather_matmul_bidirectional", "gather")):  # fmt: skip
        for n in (2, 4, 8):
            if kind == "gather":
                ex = {"n": n, "rows": 2, "dblock": 32, "f": 128, "dtype": "float32", "seed": 0}
            else:
                ex = {"n": n, "b": 8, "dblock": 16, "fblock": 16, "dtype": "float32", "seed": 0}
            lay = l05._layout(kind, ex)
            x, w = l05._inputs(kind, ex)
            specs = (lay.x_spec, lay.w_spec)
            mesh = devices.make_mesh((n,), ("x",))
            fn = getattr(sol, name)
            ours, temp = _compile(lambda a, b, fn=fn, m=mesh: fn(a, b, m), mesh, x, w, specs, None)
            auto = jax.make_mesh((n,), ("x",), axis_types=(AxisType.Auto,),
                                 devices=devices.devices()[:n])  # fmt: skip
            theirs, xla_temp = _compile(
                lambda a, b: a @ b, auto, x, w, specs, NamedSharding(auto, P(*lay.y_spec))
            )
            rows.append({"lesson": 5, "exercise": name, "mesh": str(n), "bytes": ours.bytes(),
                         "optimum": (n - 1) * lay.block * 4, "xla": theirs.bytes(),
                         "xla_kinds": sorted(theirs.kinds()), "temp": temp,
                         "xla_temp": xla_temp, "w_bytes": int(np.prod(lay.w)) * 4})  # fmt: skip
    return rows


def main() -> None:
    rows = lesson4() + lesson5()
    table = Table(title="bytes sent per device by the reference solutions (float32)")
    for col in ("exercise", "mesh", "bytes", "÷ optimum", "÷ XLA", "XLA uses", "temp / XLA temp"):
        table.add_column(col, justify="left" if col in ("exercise", "XLA uses") else "right")
    for r in rows:
        opt = (
            f"{r['bytes'] / r['optimum']:.2f}"
            if r["optimum"]
            else ("1.00" if not r["bytes"] else "∞")
        )
        vs = f"{r['bytes'] / r['xla']:.2f}" if r["xla"] else ("—" if not r["bytes"] else "∞")
        temp = f"{r['temp']:,} / {r['xla_temp']:,}" if "temp" in r else ""
        table.add_row(f"{r['lesson']}.{r['exercise']}", r["mesh"], f"{r['bytes']:,}", opt, vs,
                      ", ".join(r["xla_kinds"]) or "none", temp)  # fmt: skip
    Console(width=130).print(table)
    out = ROOT / "benchmarks" / "results" / "communication.json"
    out.write_text(json.dumps(rows, indent=2) + "\n")
    print(f"wrote {out.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
