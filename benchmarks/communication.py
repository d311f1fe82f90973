"""Bytes each reference of lessons 4 to 12 moves, against the optimum and XLA.

    python benchmarks/communication.py

For every reference solution of lessons 4 to 12, on meshes of 2, 4 and 8
devices (2×2 and 2×4 for the 2-D case): bytes sent per device by the
compiled program, divided by the optimum for the case (target 1.00) and by
what XLA's own partitioner sends for the same input and output shardings
(``jax.jit`` of the unsharded program on an Auto mesh). From lesson 5 on it
also gives temporary memory per device, ours against XLA's. For lesson 6 (the
course model, L = 2, D = 8, F = 24, 128 rows per device, n_micro = 8) the
optimum is 2(N−1)/N·|params| (+ the loss scalar for the train step), and
XLA's plan is ``jax.grad`` of the unsharded loss with the same shardings
(``dp_accumulate`` against the same whole-batch gradient). For lesson 7 the
optimum is FSDP with remat: (N−1)/N·|params| of all-gather per forward
pass, twice that plus one reduce-scatter of (N−1)/N·|params| for the
gradients, and one scalar all-reduce more for the train step. Prints a
table and writes benchmarks/results/communication.json.
Lesson 8's references run on meshes of 2, 4 and 8 'model' devices (2×2 and
2×4 for ``dp_tp_mlp``) at shapes where a gathered weight is 16× the
activation (8× for attention); XLA gets the unsharded MLP or attention with
the same shardings. For lesson 9 (one layer per stage, m = 8 micro-batches of
2 rows, D = 8, F = 24) the optimum of a loop of m + p − 1 ticks is one
micro-batch per tick and device, plus, for the forward, the all-reduce that
returns y (2(p−1)/p·|y|); XLA's plan is ``jax.jit`` of the unsharded model
with the layers sharded over 'stage' (it gathers the weights). For lesson 10
(S/N = 8, H = 2, Dh = 16, float32) the optimum is (N − 1)·|local K + local V|
and XLA's plan is ``tinymodels.attention`` with q, k, v and the output split
by rows. For lesson 11
(``moe_layer``, 64 tokens per device, D = 16, F = 32, C = 16) the optimum is
2(N−1)/N·|[E, C, D]|, and XLA's plan is the same layer written GShard's way:
global einsums over [groups, tokens, E, C] with the buffer constrained to
``P('expert')``, partitioned by XLA. For lesson 12 (the explicit 4×2 example's
shapes on 2×2, 4×2 and 2×4 meshes) the optimum is the sum over kinds of
``reference_bytes`` (FSDP with remat + Megatron, the lesson's formulas), and
XLA's plan is ``jax.value_and_grad`` of the unsharded transformer loss and
the SGD update, with the params' and batch's shardings. Prints a table and writes
benchmarks/results/communication.json.
"""

from __future__ import annotations

import json
import sys
from functools import partial
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from grader.measure import devices  # noqa: E402
from grader.runtime import InProcess, example_rng  # noqa: E402

devices.configure(8, "cpu")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax.sharding import AxisType, NamedSharding  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402
from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

import tinymodels  # noqa: E402
from grader import engine  # noqa: E402
from grader.expected import l12_parallel_transformer as l12_expected  # noqa: E402
from grader.expected import matmul as costs  # noqa: E402
from grader.lessons.l04_sharded_matmul import spec as l04  # noqa: E402
from grader.lessons.l05_collective_matmul import spec as l05  # noqa: E402
from grader.lessons.l06_data_parallel import spec as l06  # noqa: E402
from grader.lessons.l07_fsdp import spec as l07  # noqa: E402
from grader.lessons.l08_tensor_parallel import spec as l08  # noqa: E402
from grader.lessons.l09_pipeline import spec as l09  # noqa: E402
from grader.lessons.l10_context_parallel import spec as l10  # noqa: E402
from grader.lessons.l11_expert_parallel import spec as l11  # noqa: E402
from grader.lessons.l12_parallel_transformer import spec as l12  # noqa: E402
from grader.loader import load_module  # noqa: E402
from grader.measure import hlo  # noqa: E402
from grader.reference import matmul  # noqa: E402

SHAPE = (128, 128, 96)  # I, J, K: every lesson-4 plan is the cheapest one here


def lesson4() -> list[dict]:
    sol = load_module(ROOT / "solutions", l04.MODULE)
    rows = []
    for case in matmul.CASES.values():
        meshes = [(2, 2), (2, 4)] if case.two_d else [(2,), (4,), (8,)]
        for mesh in meshes:
            assert costs.CHEAPEST[case.name](*SHAPE, mesh)
            key = {"mesh": mesh} if case.two_d else {"n": mesh[0]}
            ex = {**key, "shape": SHAPE, "dtype": "float32", "seed": 0}
            trial = l04.make_run(case)(InProcess(ex), getattr(sol, f"matmul_{case.name}"), ex)
            ours = trial.comms.bytes(None, matmul.ITEMSIZE["float32"])
            xla, kinds = matmul.xla_bytes(case, ex)
            rows.append({"lesson": 4, "exercise": f"matmul_{case.name}",
                         "mesh": "×".join(map(str, mesh)), "bytes": ours,
                         "optimum": l04.optimum(case, ex), "xla": xla, "xla_kinds": kinds})  # fmt: skip
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
            lay = l05.layout(kind, ex)
            x, w = l05.inputs(kind, ex, example_rng(ex))
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


def lesson6() -> list[dict]:
    import tinymodels

    sol = load_module(ROOT / "solutions", "l06_data_parallel")
    calls = {
        "dp_grads": lambda fn, m: lambda p, x, y: fn(p, x, y, m),
        "dp_train_step": lambda fn, m: lambda p, x, y: fn(p, x, y, m, 0.5),
        "dp_accumulate": lambda fn, m: lambda p, x, y: fn(p, x, y, m, 8),
    }
    rows = []
    for name, call in calls.items():
        for n in (2, 4, 8):
            ex = {"n": n, "layers": 2, "rows": l06.ACCUMULATE_ROWS, "d": 8, "f": 24, "seed": 0}
            params, x, y = l06.inputs(ex, example_rng(ex))
            loss = l06.LOSS_BYTES if name == "dp_train_step" else 0
            mesh = devices.make_mesh((n,), (l06.AXIS,))
            ours, temp = _compile_dp(call(getattr(sol, name), mesh), mesh, params, x, y)
            auto = jax.make_mesh((n,), (l06.AXIS,), axis_types=(AxisType.Auto,),
                                 devices=devices.devices()[:n])  # fmt: skip
            grad = jax.grad(tinymodels.loss)
            theirs, xla_temp = _compile_dp(grad, auto, params, x, y, out=NamedSharding(auto, P()))
            rows.append({"lesson": 6, "exercise": name, "mesh": str(n), "bytes": ours.bytes(),
                         "optimum": 2 * (n - 1) * (l06.params_bytes(ex) + loss) // n,
                         "xla": theirs.bytes(), "xla_kinds": sorted(theirs.kinds()),
                         "temp": temp, "xla_temp": xla_temp})  # fmt: skip
    return rows


def _compile_dp(fn, mesh, params, x, y, out=None):
    """Params replicated, x and y split by rows over the mesh's one axis."""
    rows = NamedSharding(mesh, P(mesh.axis_names[0], None))
    args = (jax.device_put(params, NamedSharding(mesh, P())),
            jax.device_put(x, rows), jax.device_put(y, rows))  # fmt: skip
    compiled = jax.jit(fn, out_shardings=out).lower(*args).compile()
    comms = hlo.summarize(compiled.as_text(), num_devices=mesh.size)
    return comms, compiled.memory_analysis().temp_size_in_bytes


def lesson7() -> list[dict]:
    sol = load_module(ROOT / "solutions", "l07_fsdp")
    rows = []
    for name, kind in (("fsdp_forward", "forward"), ("fsdp_grads", "grads"),
                       ("fsdp_train_step", "train")):  # fmt: skip
        for n in (2, 4, 8):
            ex = {"n": n, "layers": 12, "rows": 2, "dblock": 8, "f": 64, "seed": 0}
            trial = l07.make_run(kind)(InProcess(ex), getattr(sol, name), ex)
            once = l07.ring(ex, l07.params_bytes(ex))
            optimum = {"forward": once, "grads": 3 * once}.get(
                kind, 3 * once + l07.scalar_all_reduce(ex)
            )
            theirs, xla_temp = _xla_fsdp(kind, trial, n)
            rows.append({"lesson": 7, "exercise": name, "mesh": str(n), "bytes": trial.comms.bytes(),
                         "optimum": optimum, "xla": theirs.bytes(), "xla_kinds": sorted(theirs.kinds()),
                         "temp": trial.memory["temp"], "xla_temp": xla_temp,
                         "params_bytes": l07.params_bytes(ex)})  # fmt: skip
    return rows


def _xla_fsdp(kind: str, trial, n: int):
    """XLA's partitioner on the unsharded model with the same input and output shardings."""
    auto = jax.make_mesh((n,), ("data",), axis_types=(AxisType.Auto,),
                         devices=devices.devices()[:n])  # fmt: skip
    shard = {k: NamedSharding(auto, spec) for k, spec in l07.param_specs().items()}
    params = {k: jax.device_put(v, shard[k]) for k, v in trial.extra["before"].items()}
    s = l07.sizes(trial.example)
    x = jax.device_put(np.zeros((s.batch, s.d), np.float32), shard["batch"])
    weights = {k: shard[k] for k in params}
    if kind == "forward":
        fn, args, out = tinymodels.forward, (params, x), shard["batch"]
    elif kind == "grads":
        fn, args, out = jax.grad(tinymodels.loss), (params, x, x), weights
    else:

        def fn(p, a, b):
            value, g = jax.value_and_grad(tinymodels.loss)(p, a, b)
            return jax.tree.map(lambda w, gw: w - l07.LR * gw, p, g), value

        args, out = (params, x, x), (weights, NamedSharding(auto, P()))
    compiled = jax.jit(fn, out_shardings=out).lower(*args).compile()
    return hlo.summarize(compiled.as_text(), n), compiled.memory_analysis().temp_size_in_bytes


def _l08_unsharded(name: str, heads: int):
    """The exercise's function without any sharding, for XLA to partition."""
    import jax.numpy as jnp

    if name != "tp_attention":
        return lambda x, w_in, w_out: jnp.tanh(x @ w_in) @ w_out

    def attention(x, wq, wk, wv, wo):
        b, s, _ = x.shape
        dh = wq.shape[1] // heads
        q, k, v = ((x @ w).reshape(b, s, heads, dh) for w in (wq, wk, wv))
        p = jax.nn.softmax(jnp.einsum("bqhd,bkhd->bhqk", q, k) / np.sqrt(dh).astype(x.dtype))
        return jnp.einsum("bhqk,bkhd->bqhd", p, v).reshape(b, s, heads * dh) @ wo

    return attention


def lesson8() -> list[dict]:
    sol = load_module(ROOT / "solutions", l08.MODULE)
    rows = []
    for name in ("tp_mlp", "tp_attention", "sp_mlp", "dp_tp_mlp"):
        meshes = [(2, 2), (2, 4)] if name == "dp_tp_mlp" else [(2,), (4,), (8,)]
        for mesh_shape in meshes:
            m = mesh_shape[-1]
            if name == "tp_attention":
                ex = {"n": m, "shape": (2, 8, 64), "heads": 2 * m, "dh": 64 // m, "seed": 0}
            elif name == "dp_tp_mlp":
                ex = {"mesh": mesh_shape, "shape": (16 * mesh_shape[0], 64, 256), "seed": 0}
            else:
                ex = {"n": m, "shape": (16, 64, 256), "seed": 0}
            trial = l08.SPEC.exercise(name).run(InProcess(ex), getattr(sol, name), ex)
            setup = l08.setup_example(name, ex, example_rng(ex))
            names = setup.mesh.axis_names
            auto = jax.make_mesh(mesh_shape, names, axis_types=(AxisType.Auto,) * len(names),
                                 devices=devices.devices()[: int(np.prod(mesh_shape))])  # fmt: skip
            args = tuple(jax.device_put(a, NamedSharding(auto, P(*lay)))
                         for a, lay in zip(setup.inputs, setup.layouts))  # fmt: skip
            fn = _l08_unsharded(name, ex.get("heads", 0))
            compiled = jax.jit(fn, out_shardings=NamedSharding(auto, P(*setup.out)))
            theirs = hlo.summarize(compiled.lower(*args).compile().as_text(), auto.size)
            rows.append({"lesson": 8, "exercise": name, "mesh": "×".join(map(str, mesh_shape)),
                         "bytes": trial.comms.bytes(), "optimum": l08.ring_all_reduce_bytes(trial),
                         "xla": theirs.bytes(), "xla_kinds": sorted(theirs.kinds())})  # fmt: skip
    return rows


def lesson9() -> list[dict]:
    import tinymodels

    sol = load_module(ROOT / "solutions", "l09_pipeline")
    rows = []
    for name, grads in (("pipeline_forward", False), ("pipeline_grads", True)):
        for p in (2, 4, 8):
            ex = {"p": p, "m": 8, "rows": 2, "d": 8, "f": 24, "seed": 0}
            trial = l09.run_exec(grads)(InProcess(ex), getattr(sol, name), ex)
            ticks = (2 if grads else 1) * (ex["m"] + p - 1)
            y_bytes = 0 if grads else 2 * (p - 1) * l09.batch_bytes(ex) // p
            params, x, y = trial.extra["inputs"]
            auto = jax.make_mesh((p,), (l09.AXIS,), axis_types=(AxisType.Auto,),
                                 devices=devices.devices()[:p])  # fmt: skip
            layers, everywhere = NamedSharding(auto, P(l09.AXIS)), NamedSharding(auto, P())
            args = [jax.device_put(params, layers), jax.device_put(x, everywhere)]
            if grads:
                plan = jax.jit(jax.grad(tinymodels.loss), out_shardings=layers)
                args.append(jax.device_put(y, everywhere))
            else:
                plan = jax.jit(tinymodels.forward, out_shardings=everywhere)
            theirs = hlo.summarize(plan.lower(*args).compile().as_text(), num_devices=p)
            rows.append({"lesson": 9, "exercise": name, "mesh": str(p),
                         "bytes": trial.comms.bytes(),
                         "optimum": ticks * l09.micro_bytes(ex) + y_bytes,
                         "xla": theirs.bytes(), "xla_kinds": sorted(theirs.kinds())})  # fmt: skip
    return rows


def lesson10() -> list[dict]:
    from tinymodels.attention import attention

    sol = load_module(ROOT / "solutions", "l10_context_parallel")
    calls = {
        "ring_attention (causal)": lambda m: lambda q, k, v: sol.ring_attention(q, k, v, m, True),
        "ring_attention": lambda m: lambda q, k, v: sol.ring_attention(q, k, v, m, False),
        "zigzag_ring_attention": lambda m: lambda q, k, v: sol.zigzag_ring_attention(q, k, v, m),
    }
    rows = []
    for name, call in calls.items():
        for n in (2, 4, 8):
            ex = {"n": n, "rows": 8, "h": 2, "dh": 16, "dtype": "float32", "seed": 0}
            qkv = l10.qkv(ex, example_rng(ex))
            mesh = devices.make_mesh((n,), (l10.AXIS,))
            ours, temp = _compile_rows(call(mesh), mesh, qkv)
            auto = jax.make_mesh((n,), (l10.AXIS,), axis_types=(AxisType.Auto,),
                                 devices=devices.devices()[:n])  # fmt: skip
            xla_plan = partial(attention, causal=name != "ring_attention")
            theirs, xla_temp = _compile_rows(xla_plan, auto, qkv)
            rows.append({"lesson": 10, "exercise": name, "mesh": str(n), "bytes": ours.bytes(),
                         "optimum": (n - 1) * 2 * qkv[1].nbytes // n,
                         "xla": theirs.bytes(), "xla_kinds": sorted(theirs.kinds()),
                         "temp": temp, "xla_temp": xla_temp})  # fmt: skip
    return rows


def _compile_rows(fn, mesh, arrays):
    """Every array and the output split by rows over the mesh's one axis."""
    rows = NamedSharding(mesh, P(mesh.axis_names[0], None, None))
    args = tuple(jax.device_put(a, rows) for a in arrays)
    compiled = jax.jit(fn, out_shardings=rows).lower(*args).compile()
    comms = hlo.summarize(compiled.as_text(), num_devices=mesh.size)
    return comms, compiled.memory_analysis().temp_size_in_bytes


def lesson11() -> list[dict]:
    sol = load_module(ROOT / "solutions", "l11_expert_parallel")
    rows = []
    for n in (2, 4, 8):
        ex = {"n": n, "rows": 64, "d": 16, "f": 32, "capacity": 16, "dtype": "float32", "seed": 0}
        inputs = l11.layer_inputs(ex, example_rng(ex))
        mesh = devices.make_mesh((n,), (l11.AXIS,))
        auto = jax.make_mesh((n,), (l11.AXIS,), axis_types=(AxisType.Auto,),
                             devices=devices.devices()[:n])  # fmt: skip
        layer = partial(sol.moe_layer, mesh=mesh, capacity=ex["capacity"])
        ours = _compile_moe(layer, mesh, inputs)
        theirs = _compile_moe(_gshard(sol, auto, ex["capacity"]), auto, inputs)
        rows.append({"lesson": 11, "exercise": "moe_layer", "mesh": str(n), "bytes": ours.bytes(),
                     "optimum": 2 * (n - 1) * l11.buffer_bytes(ex, 4) // n,
                     "xla": theirs.bytes(), "xla_kinds": sorted(theirs.kinds())})  # fmt: skip
    return rows


def _gshard(sol, mesh, capacity):
    """The layer on global arrays, each device's tokens a routing group; XLA partitions it."""
    experts = NamedSharding(mesh, P(l11.AXIS))

    def layer(x, router_w, w_in, w_out):
        groups = x.reshape(mesh.size, -1, x.shape[-1])  # [G, T/G, D]
        route = jax.vmap(lambda logits: sol.top1_dispatch(logits, capacity))
        dispatch, combine = route(groups @ router_w)  # [G, T/G, E, C]
        buf = jnp.einsum("gsec,gsd->egcd", dispatch.astype(x.dtype), groups)
        buf = jax.lax.with_sharding_constraint(buf, experts)  # expert e's tokens on device e
        h = jnp.tanh(jnp.einsum("egcd,edf->egcf", buf, w_in))
        out = jnp.einsum("egcf,efd->egcd", h, w_out)
        out = jax.lax.with_sharding_constraint(out, NamedSharding(mesh, P(None, l11.AXIS)))
        return jnp.einsum("gsec,egcd->gsd", combine, out).reshape(x.shape)

    return layer


def _compile_moe(fn, mesh, inputs):
    tokens = NamedSharding(mesh, P(l11.AXIS, None))
    specs = {"x": P(l11.AXIS, None), "router_w": P(), "w_in": P(l11.AXIS, None, None)}
    specs["w_out"] = specs["w_in"]
    args = [jax.device_put(a, NamedSharding(mesh, specs[k])) for k, a in inputs.items()]
    compiled = jax.jit(fn, out_shardings=tokens).lower(*args).compile()
    return hlo.summarize(compiled.as_text(), num_devices=mesh.size)


def lesson12() -> list[dict]:
    from tinymodels import transformer

    sol = load_module(ROOT / "solutions", "l12_parallel_transformer")
    base = l12.explicit_examples(engine.context())[0]
    rows = []
    for mesh in ((2, 2), (4, 2), (2, 4)):
        ex = {**base, "mesh": mesh, "heads": 3 * mesh[1]}
        trial = l12.run_train(InProcess(ex), sol.train_step, ex)
        s = l12.sizes(ex)
        optimum = sum(
            l12_expected.reference_bytes(s.shapes(), s.data, s.model, l12.ITEMSIZE).values()
        )
        auto = jax.make_mesh(mesh, ("data", "model"), axis_types=(AxisType.Auto,) * 2,
                             devices=devices.devices()[: mesh[0] * mesh[1]])  # fmt: skip
        shard = {k: NamedSharding(auto, P(*spec)) for k, spec in l12.LAYOUT.items()}
        params = {k: jax.device_put(v, shard[k]) for k, v in trial.extra["before"].items()}
        x = jax.device_put(np.zeros(s.shapes()["x"], np.float32), shard["x"])

        def step(p, a, b, heads=s.heads):
            value, g = jax.value_and_grad(transformer.loss)(p, a, b, heads)
            return jax.tree.map(lambda w, gw: w - l12.LR * gw, p, g), value

        out = ({k: shard[k] for k in params}, NamedSharding(auto, P()))
        compiled = jax.jit(step, out_shardings=out).lower(params, x, x).compile()
        theirs = hlo.summarize(compiled.as_text(), mesh[0] * mesh[1])
        rows.append({"lesson": 12, "exercise": "train_step", "mesh": f"{mesh[0]}x{mesh[1]}",
                     "bytes": trial.comms.bytes(), "optimum": optimum, "xla": theirs.bytes(),
                     "xla_kinds": sorted(theirs.kinds()), "temp": trial.memory["temp"],
                     "xla_temp": compiled.memory_analysis().temp_size_in_bytes})  # fmt: skip
    return rows


def main() -> None:
    rows = (lesson4() + lesson5() + lesson6() + lesson7() + lesson8() + lesson9() + lesson10()
            + lesson11() + lesson12())  # fmt: skip
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
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(rows, indent=2) + "\n")
    print(f"wrote {out.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
