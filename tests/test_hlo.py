"""grader/measure/hlo.py: shapes, parsing, and collectives with their counts and bytes.

Most tests read hand-written HLO text (the module imports no jax); the last
group compiles real shard_map programs on the simulated CPU mesh.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from grader.measure import hlo

# ---------------------------------------------------------------- shapes


@pytest.mark.parametrize(
    ("shape", "elements", "nbytes"),
    [
        ("f32[]", 1, 4),
        ("s32[]", 1, 4),
        ("pred[]", 1, 1),
        ("f32[8]{0}", 8, 32),
        ("f32[4,2]{1,0}", 8, 32),
        ("bf16[3,5]{1,0}", 15, 30),
        ("f16[6]", 6, 12),
        ("pred[7]{0}", 7, 7),
        ("f64[2,2]", 4, 32),
        ("s8[10]", 10, 10),
        ("f8e4m3fn[16]", 16, 16),
        ("c64[3]", 3, 24),
        ("f32[0,4]", 0, 0),
        ("(s32[], f32[4,2]{1,0})", 9, 36),
        ("(f32[2]{0}, (bf16[4]{0}, pred[]))", 7, 17),
        ("token[]", 0, 0),
        ("(f32[4]{0}, token[])", 4, 16),
    ],
)
def test_shape_elements_and_bytes(shape: str, elements: int, nbytes: int) -> None:
    assert hlo.shape_elements(shape) == elements
    assert hlo.shape_bytes(shape) == nbytes


# ---------------------------------------------------------------- parse

SIMPLE = """\
HloModule simple, entry_computation_layout={(f32[8]{0})->f32[8]{0}}

%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %sum = f32[] add(%a, %b)
}

ENTRY %main (p: f32[8]) -> f32[8] {
  %p = f32[8]{0} parameter(0)
  %t = (f32[8]{0}, s32[]) tuple(%p, %p)
  ROOT %r = f32[8]{0} all-reduce(f32[8]{0} %p), replica_groups={{0,1}}, to_apply=%add
}
"""


def test_parse_computations_entry_and_root() -> None:
    comps, entry = hlo.parse(SIMPLE)
    assert entry == "main"
    assert set(comps) == {"add", "main"}
    assert [i.name for i in comps["add"]] == ["a", "b", "sum"]
    assert [i.name for i in comps["main"]] == ["p", "t", "r"]

    add = comps["add"][2]
    assert add.opcode == "add"
    assert add.shape == "f32[]"
    assert add.operands == ((None, "a"), (None, "b"))

    tup = comps["main"][1]
    assert tup.shape == "(f32[8]{0}, s32[])"
    assert tup.opcode == "tuple"

    root = comps["main"][2]
    assert root.opcode == "all-reduce"
    assert root.shape == "f32[8]{0}"
    assert root.operands == (("f32[8]{0}", "p"),)
    assert "to_apply=%add" in root.attrs


def test_parse_without_entry() -> None:
    text = "%f (a: f32[]) -> f32[] {\n  ROOT %a = f32[] parameter(0)\n}\n"
    comps, entry = hlo.parse(text)
    assert entry is None
    assert list(comps) == ["f"]
    assert hlo.summarize(text).collectives == []


# ---------------------------------------------------------------- loops

LOOP = """\
HloModule loop

%body (param: (s32[], f32[4,2])) -> (s32[], f32[4,2]) {
  %param = (s32[], f32[4,2]{1,0}) parameter(0)
  %i = s32[] get-tuple-element(%param), index=0
  %x = f32[4,2]{1,0} get-tuple-element(%param), index=1
  %perm = f32[4,2]{1,0} collective-permute(%x), channel_id=1, source_target_pairs={{0,1},{1,2},{2,3},{3,0}}
  %one = s32[] constant(1)
  %next = s32[] add(%i, %one)
  ROOT %out = (s32[], f32[4,2]{1,0}) tuple(%next, %perm)
}

%cond (param.1: (s32[], f32[4,2])) -> pred[] {
  %param.1 = (s32[], f32[4,2]{1,0}) parameter(0)
  %j = s32[] get-tuple-element(%param.1), index=0
  %three = s32[] constant(3)
  ROOT %lt = pred[] compare(%j, %three), direction=LT
}

ENTRY %main (arg: f32[4,2]) -> f32[4,2] {
  %arg = f32[4,2]{1,0} parameter(0)
  %zero = s32[] constant(0)
  %init = (s32[], f32[4,2]{1,0}) tuple(%zero, %arg)
  %w = (s32[], f32[4,2]{1,0}) while(%init), condition=%cond, body=%body, metadata={op_name="jit(ring)/while/body/x"}, backend_config={"known_induction_variable":{"tuple_index":"0"},"known_trip_count":{"n":"3"}}
  ROOT %res = f32[4,2]{1,0} get-tuple-element(%w), index=1
}
"""


def test_permute_in_while_counts_trip_count() -> None:
    s = hlo.summarize(LOOP, num_devices=4)
    assert len(s.collectives) == 1
    c = s.collectives[0]
    assert c.kind == "collective-permute"
    assert c.name == "perm"
    assert c.count == 3
    assert c.operand_bytes == 32  # looked up from %x's shape
    assert c.operand_elements == 8
    assert c.bytes_each == 32
    assert c.total() == 96
    assert c.pairs == ((0, 1), (1, 2), (2, 3), (3, 0))
    assert s.count("collective-permute") == 3
    assert s.count() == 3
    assert s.count("all-gather") == 0
    assert s.bytes("collective-permute") == 96
    assert s.bytes() == 96
    assert s.kinds() == {"collective-permute"}
    assert s.largest() == 32
    assert s.table() == [{"kind": "collective-permute", "ops": 1, "count": 3, "bytes": 96}]


def test_trip_count_found_when_backend_config_is_not_last() -> None:
    text = LOOP.replace(
        ', metadata={op_name="jit(ring)/while/body/x"}, backend_config={"known_induction_variable":{"tuple_index":"0"},"known_trip_count":{"n":"3"}}',
        ', backend_config={"known_trip_count":{"n":"5"}}, metadata={op_name="w"}',
    )
    assert '"n":"5"' in text
    assert hlo.summarize(text).count("collective-permute") == 5


NESTED = """\
HloModule nested

%inner_body (p.0: (s32[], f32[4])) -> (s32[], f32[4]) {
  %p.0 = (s32[], f32[4]{0}) parameter(0)
  %v = f32[4]{0} get-tuple-element(%p.0), index=1
  %k = s32[] get-tuple-element(%p.0), index=0
  %cp = f32[4]{0} collective-permute(%v), source_target_pairs={{0,1},{1,0}}
  ROOT %t.0 = (s32[], f32[4]{0}) tuple(%k, %cp)
}

%inner_cond (p.1: (s32[], f32[4])) -> pred[] {
  %p.1 = (s32[], f32[4]{0}) parameter(0)
  ROOT %c.1 = pred[] constant(true)
}

%outer_body (p.2: (s32[], f32[4])) -> (s32[], f32[4]) {
  %p.2 = (s32[], f32[4]{0}) parameter(0)
  %inner = (s32[], f32[4]{0}) while(%p.2), condition=%inner_cond, body=%inner_body, backend_config={"known_trip_count":{"n":"3"}}
  %u = f32[4]{0} get-tuple-element(%inner), index=1
  %ar = f32[4]{0} all-reduce(%u), replica_groups={{0,1}}, to_apply=%add
  %kk = s32[] get-tuple-element(%inner), index=0
  ROOT %t.2 = (s32[], f32[4]{0}) tuple(%kk, %ar)
}

%outer_cond (p.3: (s32[], f32[4])) -> pred[] {
  %p.3 = (s32[], f32[4]{0}) parameter(0)
  ROOT %c.3 = pred[] constant(true)
}

%add (x.0: f32[], y.0: f32[]) -> f32[] {
  %x.0 = f32[] parameter(0)
  %y.0 = f32[] parameter(1)
  ROOT %s.0 = f32[] add(%x.0, %y.0)
}

ENTRY %main (a: (s32[], f32[4])) -> (s32[], f32[4]) {
  %a = (s32[], f32[4]{0}) parameter(0)
  ROOT %outer = (s32[], f32[4]{0}) while(%a), condition=%outer_cond, body=%outer_body, backend_config={"known_trip_count":{"n":"2"}}
}
"""


def test_nested_while_trip_counts_multiply() -> None:
    s = hlo.summarize(NESTED, num_devices=2)
    by_name = {c.name: c for c in s.collectives}
    assert set(by_name) == {"cp", "ar"}
    assert by_name["cp"].count == 6  # 2 outer × 3 inner
    assert by_name["ar"].count == 2
    assert by_name["cp"].bytes_each == 16
    assert by_name["ar"].group_size == 2
    assert by_name["ar"].bytes_each == 16  # 2 (G-1)/G · 16 with G = 2
    assert s.bytes("collective-permute") == 6 * 16
    assert s.bytes("all-reduce") == 2 * 16
    assert s.bytes() == 8 * 16
    assert s.count() == 8


def test_while_without_trip_count_is_unknown() -> None:
    text = NESTED.replace(', backend_config={"known_trip_count":{"n":"3"}}', "")
    s = hlo.summarize(text, num_devices=2)
    by_name = {c.name: c for c in s.collectives}
    assert by_name["cp"].count is None
    assert by_name["cp"].total() is None
    assert by_name["ar"].count == 2  # outside the unknown loop: still known
    assert s.count("collective-permute") is None
    assert s.count() is None
    assert s.count("all-reduce") == 2
    assert s.bytes("collective-permute") is None
    assert s.bytes() is None
    assert s.bytes("all-reduce") == 32
    rows = {r["kind"]: r for r in s.table()}
    assert rows["collective-permute"]["count"] is None
    assert rows["collective-permute"]["bytes"] is None
    assert rows["all-reduce"]["count"] == 2
    # an op of unknown count still shows as used
    assert s.kinds() == {"collective-permute", "all-reduce"}


def test_unknown_trip_count_propagates_into_nested_loops() -> None:
    text = NESTED.replace(', backend_config={"known_trip_count":{"n":"2"}}', "")
    s = hlo.summarize(text, num_devices=2)
    by_name = {c.name: c for c in s.collectives}
    assert by_name["cp"].count is None
    assert by_name["ar"].count is None


def test_collective_in_loop_condition_runs_once_more() -> None:
    text = LOOP.replace(
        "%three = s32[] constant(3)",
        "%three = s32[] constant(3)\n  %g = s32[] all-reduce(%j), replica_groups={{0,1,2,3}}",
    )
    s = hlo.summarize(text, num_devices=4)
    assert s.count("all-reduce") == 4  # the condition is evaluated trips + 1 times
    assert s.count("collective-permute") == 3


# ---------------------------------------------------------------- ring formulas


def _groups_module(groups: str) -> str:
    return f"""\
HloModule groups

%add (x: f32[], y: f32[]) -> f32[] {{
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %s = f32[] add(%x, %y)
}}

ENTRY %main (p: f32[16,2]) -> f32[64,2] {{
  %p = f32[16,2]{{1,0}} parameter(0)
  %ag = f32[64,2]{{1,0}} all-gather(%p), channel_id=1, replica_groups={groups}, dimensions={{0}}, use_global_device_ids=true
  %rs = f32[4,2]{{1,0}} reduce-scatter(%p), channel_id=2, replica_groups={groups}, dimensions={{0}}, to_apply=%add
  %ar = f32[16,2]{{1,0}} all-reduce(%p), channel_id=3, replica_groups={groups}, to_apply=%add
  %a2a = f32[16,2]{{1,0}} all-to-all(%p), channel_id=4, replica_groups={groups}, dimensions={{0}}
  ROOT %out = f32[64,2]{{1,0}} copy(%ag)
}}
"""


@pytest.mark.parametrize(
    "groups",
    ["{{0,1,2,3}}", "{{0,1,2,3},{4,5,6,7}}", "[2,4]<=[8]", "[2,4]<=[4,2]T(1,0)"],
    ids=["explicit", "explicit-two-groups", "iota", "iota-transposed"],
)
def test_ring_bytes_for_group_of_four(groups: str) -> None:
    s = hlo.summarize(_groups_module(groups), num_devices=8)
    by_kind = {c.kind: c for c in s.collectives}
    assert set(by_kind) == {"all-gather", "reduce-scatter", "all-reduce", "all-to-all"}
    operand = 16 * 2 * 4  # f32[16,2]
    for c in by_kind.values():
        assert c.group_size == 4
        assert c.operand_bytes == operand
        assert c.count == 1
    g = 4
    assert by_kind["all-gather"].bytes_each == (g - 1) * operand
    # = (G-1)/G · |result| with |result| = 64·2·4
    assert by_kind["all-gather"].bytes_each == (g - 1) * hlo.shape_bytes("f32[64,2]") // g
    assert by_kind["reduce-scatter"].bytes_each == (g - 1) * operand // g
    assert by_kind["all-reduce"].bytes_each == 2 * (g - 1) * operand // g
    assert by_kind["all-to-all"].bytes_each == (g - 1) * operand // g
    assert s.bytes("all-gather") == 384
    assert s.bytes("reduce-scatter") == 96
    assert s.bytes("all-reduce") == 192
    assert [r["kind"] for r in s.table()] == [
        "all-gather",
        "reduce-scatter",
        "all-reduce",
        "all-to-all",
    ]


def test_group_size_defaults_to_num_devices() -> None:
    s = hlo.summarize(_groups_module("{}"), num_devices=8)
    ar = next(c for c in s.collectives if c.kind == "all-reduce")
    assert ar.group_size == 8
    assert ar.bytes_each == 2 * 7 * 128 // 8


def test_group_of_one_sends_nothing() -> None:
    s = hlo.summarize(_groups_module("{{0},{1},{2},{3}}"), num_devices=4)
    assert all(c.group_size == 1 for c in s.collectives)
    assert s.bytes() == 0


def test_async_start_forms_count_once() -> None:
    text = """\
HloModule async

ENTRY %main (p: f32[8]) -> f32[32] {
  %p = f32[8]{0} parameter(0)
  %ags = (f32[8]{0}, f32[32]{0}) all-gather-start(%p), replica_groups={{0,1,2,3}}, dimensions={0}
  ROOT %agd = f32[32]{0} all-gather-done(%ags)
}
"""
    s = hlo.summarize(text, num_devices=4)
    assert [c.kind for c in s.collectives] == ["all-gather"]
    assert s.collectives[0].operand_bytes == 32
    assert s.bytes() == 3 * 32


# ---------------------------------------------------------------- operands


def test_inline_operand_shape_versus_lookup() -> None:
    text = """\
HloModule operands

%add (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %s = f32[] add(%x, %y)
}

ENTRY %main (p: f32[8], q: bf16[6]) -> f32[8] {
  %p = f32[8]{0} parameter(0)
  %q = bf16[6]{0} parameter(1)
  %inline = f32[8]{0} all-reduce(f32[8]{0} %p), replica_groups={{0,1,2,3}}, to_apply=%add
  %lookup = f32[8]{0} all-reduce(%p), replica_groups={{0,1,2,3}}, to_apply=%add
  %pair = (f32[8]{0}, bf16[6]{0}) all-reduce(f32[8]{0} %p, %q), replica_groups={{0,1,2,3}}, to_apply=%add
  ROOT %out = f32[8]{0} copy(%inline)
}
"""
    s = hlo.summarize(text, num_devices=4)
    by_name = {c.name: c for c in s.collectives}
    assert by_name["inline"].operand_bytes == 32
    assert by_name["lookup"].operand_bytes == 32
    assert by_name["inline"].bytes_each == by_name["lookup"].bytes_each == 2 * 3 * 32 // 4
    # a tuple all-reduce (XLA merges several): operand bytes add up, dtypes kept
    assert by_name["pair"].operand_bytes == 32 + 12
    assert by_name["pair"].operand_elements == 14
    assert s.count("all-reduce") == 3


def test_numbered_operands_of_a_long_tuple_are_counted() -> None:
    """XLA prints /*index=5*/ before the sixth operand (a 6-device all-to-all)."""
    text = """\
HloModule numbered

ENTRY %main (p: f32[1,2]) -> f32[1,2] {
  %p = f32[1,2]{1,0} parameter(0)
  %a2a = (f32[1,2]{1,0}, f32[1,2]{1,0}, f32[1,2]{1,0}, f32[1,2]{1,0}, f32[1,2]{1,0}, /*index=5*/f32[1,2]{1,0}) all-to-all(%p, %p, %p, %p, %p, /*index=5*/%p), channel_id=1, replica_groups={{0,1,2,3,4,5}}
  ROOT %out = f32[1,2]{1,0} get-tuple-element(%a2a), index=5
}
"""
    (c,) = hlo.summarize(text, num_devices=6).collectives
    assert c.operand_elements == 12
    assert c.bytes_each == 5 * 48 // 6


def test_elements_accounting_with_itemsize() -> None:
    # XLA:CPU widens a bf16 all-gather to f32; counting elements at 2 bytes
    # gives what an accelerator sends.
    text = """\
HloModule widened

ENTRY %main (p: f32[10,4]) -> f32[40,4] {
  %p = f32[10,4]{1,0} parameter(0)
  %ag = f32[40,4]{1,0} all-gather(%p), replica_groups=[1,4]<=[4], dimensions={0}
  %cp = f32[10,4]{1,0} collective-permute(%p), source_target_pairs={{0,1},{1,2},{2,3},{3,0}}
  ROOT %out = f32[40,4]{1,0} copy(%ag)
}
"""
    s = hlo.summarize(text, num_devices=4)
    ag = next(c for c in s.collectives if c.kind == "all-gather")
    assert ag.operand_elements == 40
    assert ag.elements_each == 3 * 40
    assert s.bytes("all-gather") == 3 * 40 * 4
    assert s.bytes("all-gather", itemsize=2) == 3 * 40 * 2
    assert s.bytes("collective-permute", itemsize=2) == 40 * 2
    assert s.bytes(itemsize=2) == 3 * 40 * 2 + 40 * 2
    # the largest collective is the all-gather, sized by its result (the whole gathered array)
    assert s.largest() == 160 * 4
    assert s.largest(itemsize=2) == 160 * 2
    assert s.table(itemsize=2)[0] == {"kind": "all-gather", "ops": 1, "count": 1, "bytes": 240}
    d = s.to_dict()
    assert d["by_kind"] == s.table()
    assert d["collectives"][1]["pairs"] == [[0, 1], [1, 2], [2, 3], [3, 0]]


# ---------------------------------------------------------------- call graph

TWO_CALLERS = """\
HloModule callers

%shared (s: f32[8]) -> f32[8] {
  %s = f32[8]{0} parameter(0)
  ROOT %cp = f32[8]{0} collective-permute(%s), source_target_pairs={{0,1},{1,0}}
}

%body (b: f32[8]) -> f32[8] {
  %b = f32[8]{0} parameter(0)
  ROOT %c2 = f32[8]{0} call(%b), to_apply=%shared
}

%cond (cc: f32[8]) -> pred[] {
  %cc = f32[8]{0} parameter(0)
  ROOT %k = pred[] constant(true)
}

%orphan (o: f32[64]) -> f32[64] {
  %o = f32[64]{0} parameter(0)
  ROOT %ag = f32[64]{0} all-reduce(%o), replica_groups={{0,1}}
}

ENTRY %main (p: f32[8]) -> f32[8] {
  %p = f32[8]{0} parameter(0)
  %c1 = f32[8]{0} call(%p), to_apply=%shared
  ROOT %w = f32[8]{0} while(%c1), condition=%cond, body=%body, backend_config={"known_trip_count":{"n":"4"}}
}
"""


def test_computation_called_from_two_sites_adds_multiplicities() -> None:
    s = hlo.summarize(TWO_CALLERS, num_devices=2)
    assert [c.name for c in s.collectives] == ["cp"]
    assert s.collectives[0].count == 1 + 4  # once from ENTRY, 4 times from the loop body
    assert s.bytes() == 5 * 32


def test_unreachable_computation_is_ignored() -> None:
    s = hlo.summarize(TWO_CALLERS, num_devices=2)
    assert "all-reduce" not in s.kinds()
    assert s.count("all-reduce") == 0
    assert all(c.name != "ag" for c in s.collectives)


def test_conditional_branches_are_reached() -> None:
    text = """\
HloModule cond

%yes (y: f32[4]) -> f32[4] {
  %y = f32[4]{0} parameter(0)
  ROOT %cp = f32[4]{0} collective-permute(%y), source_target_pairs={{0,1},{1,0}}
}

%no (n: f32[4]) -> f32[4] {
  %n = f32[4]{0} parameter(0)
  ROOT %ar = f32[4]{0} all-reduce(%n), replica_groups={{0,1}}
}

ENTRY %main (i: s32[], p: f32[4]) -> f32[4] {
  %i = s32[] parameter(0)
  %p = f32[4]{0} parameter(1)
  ROOT %c = f32[4]{0} conditional(%i, %p, %p), branch_computations={%yes, %no}
}
"""
    s = hlo.summarize(text, num_devices=2)
    assert s.kinds() == {"collective-permute", "all-reduce"}


# ---------------------------------------------------------------- compiled programs

N = 4
ROWS, COLS = 16, 2  # global x: f32[16, 2]; each of the 4 devices holds f32[4, 2]
BLOCK_BYTES = ROWS // N * COLS * 4


def _compile(f, out_spec):
    import jax
    import jax.numpy as jnp
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P

    from grader.measure import devices

    mesh = devices.make_mesh((N,), ("x",))
    x = jax.device_put(
        jnp.arange(ROWS * COLS, dtype=jnp.float32).reshape(ROWS, COLS), NamedSharding(mesh, P("x"))
    )
    prog = jax.jit(jax.shard_map(f, mesh=mesh, in_specs=P("x"), out_specs=out_spec, check_vma=True))
    return prog.lower(x).compile().as_text()


def _ring(n):
    return [(i, (i + 1) % n) for i in range(n)]


def test_compiled_all_gather() -> None:
    from jax import lax
    from jax.sharding import PartitionSpec as P

    text = _compile(lambda a: lax.all_gather(a, "x", tiled=True), P("x"))
    s = hlo.summarize(text, num_devices=N)
    ag = [c for c in s.collectives if c.kind == "all-gather"]
    assert len(ag) == 1
    assert ag[0].count == 1
    assert ag[0].group_size == N
    result = hlo.shape_bytes(ag[0].shape)
    assert result == N * BLOCK_BYTES
    assert ag[0].bytes_each == (N - 1) * result // N
    assert s.bytes("all-gather") == (N - 1) * BLOCK_BYTES


def test_compiled_psum() -> None:
    from jax import lax
    from jax.sharding import PartitionSpec as P

    text = _compile(lambda a: lax.psum(a, "x"), P())
    s = hlo.summarize(text, num_devices=N)
    assert s.kinds() == {"all-reduce"}
    assert s.count("all-reduce") == 1
    assert s.bytes("all-reduce") == 2 * (N - 1) * BLOCK_BYTES // N


def test_compiled_psum_scatter() -> None:
    from jax import lax
    from jax.sharding import PartitionSpec as P

    text = _compile(lambda a: lax.psum_scatter(a, "x", tiled=True), P("x"))
    s = hlo.summarize(text, num_devices=N)
    assert s.kinds() == {"reduce-scatter"}
    assert s.count("reduce-scatter") == 1
    assert s.bytes("reduce-scatter") == (N - 1) * BLOCK_BYTES // N


def test_compiled_fori_loop_of_ppermute() -> None:
    from jax import lax
    from jax.sharding import PartitionSpec as P

    def ring(a):
        return lax.fori_loop(0, 3, lambda i, c: lax.ppermute(c, "x", _ring(N)), a)

    text = _compile(ring, P("x"))
    assert "while(" in text  # really a loop, not unrolled
    s = hlo.summarize(text, num_devices=N)
    assert s.kinds() == {"collective-permute"}
    assert len(s.collectives) == 1
    assert s.count("collective-permute") == 3
    assert s.bytes() == 3 * BLOCK_BYTES
    assert set(s.collectives[0].pairs) == set(_ring(N))


def test_compiled_python_loop_of_ppermute() -> None:
    from jax import lax
    from jax.sharding import PartitionSpec as P

    def twice(a):
        for _ in range(2):
            a = lax.ppermute(a, "x", _ring(N))
        return a

    text = _compile(twice, P("x"))
    s = hlo.summarize(text, num_devices=N)
    assert s.kinds() == {"collective-permute"}
    assert s.count("collective-permute") == 2
    assert s.bytes() == 2 * BLOCK_BYTES


def test_condition_named_like_body_prefix_runs_once_more() -> None:
    text = """\
HloModule prefix

%b.1 (p: f32[4]) -> f32[4] {
  ROOT %p = f32[4]{0} parameter(0)
}

%b (q: f32[4]) -> pred[] {
  %q = f32[4]{0} parameter(0)
  %ar = f32[4]{0} all-reduce(%q), replica_groups={{0,1}}
  ROOT %k = pred[] constant(true)
}

ENTRY %main (a: f32[4]) -> f32[4] {
  %a = f32[4]{0} parameter(0)
  ROOT %w = f32[4]{0} while(%a), condition=%b, body=%b.1, backend_config={"known_trip_count":{"n":"3"}}
}
"""
    assert hlo.summarize(text, num_devices=2).count("all-reduce") == 4


# --- replica groups as each JAX version prints them (tests/data/hlo/capture.py) ---

CAPTURED = Path(__file__).parent / "data" / "hlo"
VERSIONS = sorted(p.name for p in CAPTURED.glob("jax-*"))
F32 = 4
# program → sorted (kind, group size, bytes each device sends), worked out by hand:
# 2d:  a (2,2) mesh; psum over 'y' of f32[4,8] (G=2: 2·1/2·128 B), all-gather over 'x' (1·128 B)
# rs:  psum_scatter over 'x' of f32[8,4] (G=2: 1/2·128 B)
# 1d3: a 3-ring; psum of f32[2,6] (2·2/3·48 B) and an all-to-all of three f32[2,2] (2/3·48 B)
# 2x3: a (2,3) mesh; psum over both axes of f32[3,2] (G=6: 2·5/6·24 B),
#      all-gather over 'y' of f32[3,2] (G=3: 2·24 B)
EXPECTED = {
    "2d": [("all-gather", 2, 32 * F32), ("all-reduce", 2, 32 * F32)],
    "rs": [("reduce-scatter", 2, 16 * F32)],
    "1d3": [("all-reduce", 3, 2 * 2 * 12 * F32 // 3), ("all-to-all", 3, 2 * 12 * F32 // 3)],
    "2x3": [("all-gather", 3, 2 * 6 * F32), ("all-reduce", 6, 2 * 5 * 6 * F32 // 6)],
}


def _forms(version: str) -> set[str]:
    text = "".join(f.read_text() for f in (CAPTURED / version).glob("*.hlo"))
    groups = re.findall(r"replica_groups=(\S+)", text)
    return {
        "mesh" if g.startswith("mesh[") else "iota" if g.startswith("[") else "list" for g in groups
    }


def test_captured_versions_cover_list_and_mesh_forms() -> None:
    forms = {v: _forms(v) for v in VERSIONS}
    assert forms["jax-0.10.2"] == {"list"}, forms
    assert {"mesh"} in forms.values(), forms  # jax >= 0.11 prints mesh['x'=2,'y'=2] {'y'}


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("program", sorted(EXPECTED))
def test_captured_replica_groups(version: str, program: str) -> None:
    text = (CAPTURED / version / f"{program}.hlo").read_text()
    s = hlo.summarize(text, num_devices=8)  # 8 devices exist; the groups are smaller
    got = sorted((c.kind, c.group_size, c.bytes_each) for c in s.collectives)
    assert got == EXPECTED[program]


@pytest.mark.parametrize(
    ("groups", "size"),
    [
        ("mesh['x'=2,'y'=2] {'y'}", 2),
        ("mesh['x'=2,'y'=3] {'x','y'}", 6),
        ("mesh['x'=2,'y'=3] {'y'}", 3),
        ("mesh['x'=4] {'x':(1)2}", 2),
        ("mesh['x'=1] {'x'}", 1),
        ("[4,2]<=[8]", 2),
        ("{{0,1,2}}", 3),
    ],
)
def test_group_size_of_every_form(groups: str, size: int) -> None:
    assert hlo._group_size(f"channel_id=1, replica_groups={groups}, to_apply=%add", 8) == size


@pytest.mark.parametrize(
    "groups",
    ["mesh['x'=2] {'z'}", "mesh[x:2] {'x'}", "mesh['x'=2] device_ids={0,1} {'x'}", "<<0,1>>"],
)
def test_unknown_group_form_is_a_loud_grader_fault(groups: str) -> None:
    with pytest.raises(hlo.HloFormatError, match="not your code"):
        hlo.summarize(_groups_module(groups), num_devices=8)


def test_a_collective_over_one_device_is_no_transfer() -> None:
    """A pmean on a 1-device mesh stays in the program as an all-reduce over a group of one:
    it moves nothing, so the largest-transfer check must not charge its operand."""
    idle = hlo.Collective("all-reduce", "ar.1", "f32[1024]", 4096, 1024, 1, 1, 0, 0)
    real = hlo.Collective("all-gather", "ag.1", "f32[64]", 128, 32, 2, 1, 128, 32)
    assert not idle.moves_data
    assert hlo.CommSummary([idle, real]).largest() == 64 * 4
    assert hlo.CommSummary([idle]).largest() == 0
