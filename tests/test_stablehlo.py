"""The StableHLO reader (grader.measure.stablehlo) on recorded programs.

``tests/data/stablehlo/jax010_*.mlir`` are the exported programs of lesson
solutions as jax 0.10 prints them (locations replaced by ``loc(unknown)``), each with the summary
the jaxpr reader made of the same trace (``*.jaxpr.json``): an independent
reading of the same program, which the StableHLO reader must agree with on
every fact a check reads. ``jax012_*.mlir`` are the same lessons' programs as
jax 0.12 prints them (collective groups named by mesh axes).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from grader.measure import jaxpr, stablehlo

DATA = Path(__file__).parent / "data" / "stablehlo"
MULTI = sorted(p.stem for p in DATA.glob("jax010_*.mlir") if p.stem != "jax010_tp_mlp_1")
NEWER = sorted(p.stem for p in DATA.glob("jax012_*.mlir"))


def facts(p: jaxpr.Program) -> dict:
    """What the checks read: shard_map present, narrow floats, loops, collectives, dots."""
    return {
        "shard_map": bool(p.counts["shard_map"]),
        "narrow": sorted(d for d in ("bfloat16", "float16") if p.dtypes[d]),
        "loops": [(lp.length, lp.depth, lp.contains("dot_general")) for lp in p.loops],
        "sites": sorted(
            (s.kind, s.dtypes, s.shapes, tuple(lp.length for lp in s.loops), s.axes)
            for s in p.collectives
        ),
        "dots": sorted((d.lhs_shape, d.lhs_contract, d.out_shape, d.loops) for d in p.dots),
    }


@pytest.mark.parametrize("name", MULTI)
def test_it_reads_what_the_jaxpr_shows(name):
    text = (DATA / f"{name}.mlir").read_text()
    ours = stablehlo.read(text)
    theirs = jaxpr.from_wire(json.loads((DATA / f"{name}.jaxpr.json").read_text()))
    assert facts(ours) == facts(theirs)
    assert stablehlo.partitions(text) > 1


def test_the_recordings_hold_what_the_checks_look_for():
    """Not a vacuous comparison: loops with trip counts, collectives in loops,
    bfloat16, remat, all-to-all and dots inside loops are all in there."""
    read = {n: stablehlo.read((DATA / f"{n}.mlir").read_text()) for n in MULTI}
    assert read["jax010_allgather_matmul_2"].loops[0].length == 3
    assert [s.primitive for s in read["jax010_allgather_matmul_2"].collectives] == ["ppermute"]
    assert read["jax010_zigzag_ring_attention_2"].dtypes["bfloat16"]
    assert read["jax010_fsdp_grads_1"].counts["checkpoint"]
    assert {s.primitive for s in read["jax010_moe_layer_1"].collectives} == {"all_to_all"}
    assert any(d.loops for d in read["jax010_dp_accumulate_1"].dots)


@pytest.mark.parametrize("name", NEWER)
def test_jax_0_12_programs_read_as_jax_0_10_ones(name):
    """Same lesson, same example: the newer printer's form gives the same facts
    (up to which example of the lesson it is, so compared with the solution's shape)."""
    p = stablehlo.read((DATA / f"{name}.mlir").read_text())
    assert p.counts["shard_map"] == 1
    assert p.collectives and all(s.axes for s in p.collectives)
    if "pipeline" in name:
        assert [lp.length for lp in p.loops] == [6]
        assert [s.primitive for s in p.collectives] == ["ppermute", "psum"]
        assert p.collectives[0].loops == (p.loops[0],)
    if "dp_grads" in name:
        assert [lp.length for lp in p.loops] == [2, 2]
        assert {s.axes for s in p.collectives} == {("data",)}


def test_a_one_device_program_shows_no_shard_map():
    """jax lowers a shard_map over one device inline: the StableHLO cannot show
    it, and the reader does not claim it (the jaxpr of the same trace had it).
    Its psum stays, an all-reduce over one device."""
    name = "jax010_tp_mlp_1"
    text = (DATA / f"{name}.mlir").read_text()
    theirs = jaxpr.from_wire(json.loads((DATA / f"{name}.jaxpr.json").read_text()))
    assert theirs.counts["shard_map"] and theirs.collectives
    ours = stablehlo.read(text)
    assert stablehlo.partitions(text) == 1
    assert not ours.counts["shard_map"]
    assert [(c.primitive, c.axes) for c in ours.collectives] == [("psum", ())]


HEAD = (
    "module @jit_f attributes {mhlo.num_partitions = 2 : i32, mhlo.num_replicas = 1 : i32} {\n"
    '  sdy.mesh @mesh = <["x"=2]>\n'
    "  func.func public @main(%arg0: tensor<4xf32>, %arg1: tensor<i32>) -> (tensor<4xf32>) {\n"
)
TAIL = "    return %0 : tensor<4xf32>\n  }\n}\n"


def loop(cond: str, step: str = "%c_1", start: str = "%c") -> str:
    return (
        HEAD
        + (
            "    %c = stablehlo.constant dense<0> : tensor<i32>\n"
            "    %c_1 = stablehlo.constant dense<1> : tensor<i32>\n"
            "    %c_2 = stablehlo.constant dense<5> : tensor<i32>\n"
            f"    %0:2 = stablehlo.while(%iterArg = %arg0, %iterArg_3 = {start}) : tensor<4xf32>, tensor<i32>\n"
            "    cond {\n"
            f"      %1 = {cond}\n"
            "      stablehlo.return %1 : tensor<i1>\n"
            "    } do {\n"
            '      %1 = "stablehlo.collective_permute"(%iterArg) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 0>, source_target_pairs = dense<[[0, 1], [1, 0]]> : tensor<2x2xi64>}> : (tensor<4xf32>) -> tensor<4xf32>\n'
            f"      %2 = stablehlo.add %iterArg_3, {step} : tensor<i32>\n"
            "      stablehlo.return %1, %2 : tensor<4xf32>, tensor<i32>\n"
            "    }\n"
        )
        + TAIL
    )


COUNTED = (
    "stablehlo.compare  LT, %iterArg_3, %c_2,  SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>"
)


def test_a_counted_loop_has_its_trip_count():
    p = stablehlo.read(loop(COUNTED.replace("  ", " ")))
    assert [(lp.primitive, lp.length) for lp in p.loops] == [("scan", 5)]
    (site,) = p.collectives
    assert (site.primitive, site.axes, site.loops) == ("ppermute", ("x",), p.loops)


def test_a_loop_on_a_computed_condition_has_no_trip_count():
    cond = (
        "stablehlo.compare GT, %iterArg_3, %c_2, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>"
    )
    p = stablehlo.read(loop(cond))
    assert [(lp.primitive, lp.length) for lp in p.loops] == [("while", None)]


@pytest.mark.parametrize(
    "text",
    [
        loop(COUNTED.replace("  ", " "), step="%c_2"),  # the counter adds 5
        loop(COUNTED.replace("  ", " "), start="%arg1"),  # it starts from an argument
    ],
    ids=["step", "start"],
)
def test_a_students_while_loop_of_another_form_has_no_trip_count(text):
    """Not the grader's to refuse: a student may write any while_loop (even one that
    never ends); it is a loop of unknown length, never a grader fault."""
    p = stablehlo.read(text)
    assert [(lp.primitive, lp.length) for lp in p.loops] == [("while", None)]


KEEP = "    return %arg0 : tensor<4xf32>\n  }\n}\n"


@pytest.mark.parametrize(
    "text, says",
    [
        (
            HEAD
            + "    %0 = stablehlo.dot %arg0, %arg0 : (tensor<4xf32>, tensor<4xf32>) -> tensor<f32>\n"
            + KEEP,
            "an op 'stablehlo.dot'",
        ),
        (HEAD + "    %0 = stablehlo.add %arg0, %arg0 : tensor<4xf17>\n" + TAIL, "cannot parse"),
        (
            HEAD
            + "    %0 = stablehlo.convert %arg0 : (tensor<4xf32>) -> tensor<4xf6E2M3FN>\n"
            + KEEP,
            "an element type 'f6E2M3FN'",
        ),
        (HEAD + "    %0 = mystery.op %arg0 : tensor<4xf32>\n" + TAIL, "mystery"),
        (HEAD + "    %0 = arith.addf %arg0, %arg0 : tensor<4xf32>\n" + TAIL, "an op 'arith.addf'"),
        (
            HEAD.replace("%arg1: tensor<i32>", "%arg1: tensor<?xf32>")
            + "    %0 = stablehlo.abs %arg1 : tensor<?xf32>\n"
            + KEEP,
            "a dynamic shape",
        ),
        (
            HEAD + "    %0 = func.call @nowhere(%arg0) : (tensor<4xf32>) -> tensor<4xf32>\n" + TAIL,
            "nowhere",
        ),
        (HEAD + TAIL + "}\n", "cannot parse"),
    ],
    ids=["dot", "syntax", "dtype", "dialect", "arith", "dynamic", "callee", "braces"],
)
def test_a_form_it_does_not_know_is_refused(text, says):
    with pytest.raises(stablehlo.Unrecognised, match=says):
        stablehlo.read(text)


def test_locations_cannot_hide_or_add_structure():
    """A location is text the exporting process chose (a function's name): braces,
    quotes or op names inside one change nothing."""
    forged = 'loc("} stablehlo.while { \\"x\\" }"(#loc3))'
    text = (
        HEAD.replace("tensor<4xf32>) ->", f"tensor<4xf32> {forged}) ->")
        + (f"    %0 = stablehlo.add %arg0, %arg0 : tensor<4xf32> {forged}\n")
        + TAIL
    )
    p = stablehlo.read("#loc3 = loc(unknown)\n" + text)
    assert dict(p.counts) == {"add": 1} and not p.loops


def test_float_computations_read_as_the_jaxpr_shows():
    """Program.computed and the dots' dtypes (what lesson 10's precision check reads)
    are the same from the exported StableHLO as from the jaxpr: a bfloat16 softmax whose
    sum is rounded back to bfloat16 inside a loop."""
    import jax
    import jax.numpy as jnp
    from jax import export

    def f(s, v):
        m = jnp.max(s, axis=-1, keepdims=True)
        p = jnp.exp(s - m)
        d = jax.lax.fori_loop(0, 3, lambda i, c: (c * 2 + 1).astype(jnp.bfloat16), p.sum(-1))
        return jnp.einsum("qk,kd->qd", p, v, preferred_element_type=jnp.float32) / d[:, None]

    args = (jnp.ones((4, 4), jnp.bfloat16), jnp.ones((4, 8), jnp.bfloat16))
    ours = stablehlo.read(export.export(jax.jit(f))(*args).mlir_module())
    theirs = jaxpr.trace(f, *args)
    assert ours.computed == theirs.computed
    assert [d.dtype for d in ours.dots] == [d.dtype for d in theirs.dots] == ["float32"]
    seen = {(c.op, c.dtype, c.size, c.in_loop) for c in ours.computed}
    assert {("exp", "bfloat16", 16, False), ("reduce_max", "bfloat16", 4, False)} <= seen
    assert ("reduce_sum", "float32", 4, False) in seen  # jnp.sum adds bfloat16 in float32
    assert any(c.op == "convert_element_type" and c.source == "float32" for c in ours.computed)


def collective(groups: str, mesh: str = '<["x"=2, "y"=2]>') -> str:
    """A 4-device module: one psum whose ``replica_groups`` attribute is ``groups``."""
    return (
        "module @jit_f attributes {mhlo.num_partitions = 4 : i32, mhlo.num_replicas = 1 : i32} {\n"
        f"  sdy.mesh @mesh = {mesh}\n"
        "  func.func public @main(%arg0: tensor<4xf32>) -> (tensor<4xf32>) {\n"
        f'    %0 = "stablehlo.all_reduce"(%arg0) <{{replica_groups = {groups}}}> ({{\n'
        "    ^bb0(%a: tensor<f32>, %b: tensor<f32>):\n"
        "      %1 = stablehlo.add %a, %b : tensor<f32>\n"
        "      stablehlo.return %1 : tensor<f32>\n"
        "    }) : (tensor<4xf32>) -> tensor<4xf32>\n"
        "    return %0 : tensor<4xf32>\n  }\n}\n"
    )


@pytest.mark.parametrize(
    "groups, mesh, axes",
    [
        ("dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>", '<["x"=2, "y"=2]>', ("y",)),
        ("dense<[[0, 2], [1, 3]]> : tensor<2x2xi64>", '<["x"=2, "y"=2]>', ("x",)),
        ("dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>", '<["x"=2, "y"=2]>', ("x", "y")),
        # devices 0 and 1 sit at positions 0 and 2 of a mesh listed [0, 2, 1, 3]: along x
        ("dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>", '<["x"=2, "y"=2], device_ids=[0, 2, 1, 3]>',
         ("x",)),
        ("#stablehlo.replica_group_mesh_axes<mesh = @mesh, axes = [#stablehlo.axis_ref<name = "
         '"y">]>', '<["x"=2, "y"=2]>', ("y",)),
    ],
    ids=["rows", "columns", "all", "device-ids", "mesh-axes"],
)  # fmt: skip
def test_the_axes_a_collective_spans_are_read_from_its_groups(groups, mesh, axes):
    (site,) = stablehlo.read(collective(groups, mesh)).collectives
    assert (site.primitive, site.axes) == ("psum", axes)


@pytest.mark.parametrize(
    "groups, says",
    [
        ("dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>", "outside the mesh"),
        (
            "#stablehlo.replica_group_mesh_axes<mesh = @mesh, axes = [#stablehlo.axis_ref<name = "
            '"x", sub_axis_info = (1)2>]>',
            "sub-axes",
        ),
    ],
    ids=["device", "sub-axis"],
)
def test_groups_it_cannot_place_are_refused(groups, says):
    mesh = '<["x"=2]>' if "dense" in groups else '<["x"=2, "y"=2]>'  # a mesh of 2, devices 0-3
    with pytest.raises(stablehlo.Unrecognised, match=says):
        stablehlo.read(collective(groups, mesh))


def test_each_thread_parses_in_a_context_of_its_own_made_afresh_and_outlived(monkeypatch):
    """Parsing reuses this thread's context (making one costs as much as a parse on
    jax 0.10.2; jax 0.12 keeps one per thread itself, for 10 uses) for CONTEXT_USES
    parses, then asks for a fresh one; a module read after its context was replaced
    reads the same; another thread never gets this thread's context."""
    import threading

    import jax
    import jax.numpy as jnp
    from jax import export
    from jax._src.interpreters import mlir

    exported = export.export(jax.jit(lambda v: jnp.exp(v).sum()))(jnp.ones(4))
    text = exported.mlir_module()
    made: list[object] = []
    real = mlir.make_ir_context
    monkeypatch.setattr(mlir, "make_ir_context", lambda: made.append(real()) or made[-1])
    monkeypatch.setattr(stablehlo, "CONTEXT_USES", 2)
    monkeypatch.delattr(stablehlo._held, "context", raising=False)
    first, second = stablehlo.parse(text), stablehlo.parse_exported(exported)
    assert len(made) == 1 and first.context is second.context is made[0]
    third = stablehlo.parse(text)
    assert len(made) == 2 and third.context is made[1]
    assert stablehlo.read(first) == stablehlo.read(third) == stablehlo.read(second)
    elsewhere: list = []
    thread = threading.Thread(target=lambda: elsewhere.append(stablehlo.parse(text).context))
    thread.start()
    thread.join()
    assert len(made) == 3 and elsewhere[0] is not third.context


def test_custom_calls_are_found_in_every_function():
    """What a program could call out of the devices: in a function nobody calls too."""
    spare = (
        "  func.func private @spare(%arg0: tensor<4xf32>) -> tensor<4xf32> {\n"
        "    %0 = stablehlo.custom_call @xla_python_cpu_callback(%arg0)"
        " : (tensor<4xf32>) -> tensor<4xf32>\n"
        "    return %0 : tensor<4xf32>\n  }\n}\n"
    )
    text = (
        HEAD
        + "    %0 = stablehlo.custom_call @Sharding(%arg0) : (tensor<4xf32>) -> tensor<4xf32>\n"
        + TAIL.removesuffix("}\n")
        + spare
    )
    assert stablehlo.custom_calls(text) == {"Sharding", "xla_python_cpu_callback"}
    assert dict(stablehlo.read(text).counts) == {"custom_call": 1}


def test_a_composite_is_read_through_its_decomposition():
    """``lax.composite`` lowers to an op naming a function that XLA inlines: what it
    computes (a bfloat16 product, a collective) must not hide behind its name."""
    import jax
    import jax.numpy as jnp
    from jax import export, lax

    wrapped = lax.composite(lambda x: (x.astype(jnp.bfloat16) * 2).astype(jnp.float32), "my.op")
    p = stablehlo.read(export.export(jax.jit(wrapped))(jnp.ones(4)).mlir_module())
    assert p.counts["composite"] == 1 and p.counts["multiply"] == 1
    assert p.dtypes["bfloat16"]  # only inside the decomposition
