"""Each check on a passing and a failing program or value, outside any lesson."""

from __future__ import annotations

import numpy as np
import pytest

from grader.checks import (
    Bytes,
    Count,
    LargestTransfer,
    OnlyCollectives,
    OutputSharding,
    TempMemory,
    Values,
    diagnose,
)
from grader.spec import Trial

N, B, F = 8, 32, 256  # W is [N·B, F] float32: 256 KiB in all, 32 KiB per device


def _compile(body, out_specs):
    import jax
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P

    from grader.measure import devices
    from grader.runtime import InProcess

    mesh = devices.make_mesh((N,), ("x",))
    w = jax.device_put(np.ones((N * B, F), np.float32), NamedSharding(mesh, P("x")))
    program = jax.jit(
        jax.shard_map(body, mesh=mesh, in_specs=P("x"), out_specs=out_specs, check_vma=True)
    )
    return InProcess({"n": N}).compile_and_run(program, (w,), mesh)


def _gather_then_sum(w):
    from jax import lax

    return lax.all_gather(w, "x", tiled=True).sum(
        axis=0, keepdims=True
    )  # the whole W on every device


def _stream_then_sum(w):
    from jax import lax

    right = [(i, (i + 1) % N) for i in range(N)]

    def step(_, carry):
        acc, block = carry
        block = lax.ppermute(block, "x", right)
        return acc + block.sum(axis=0, keepdims=True), block

    return lax.fori_loop(0, N - 1, step, (w.sum(axis=0, keepdims=True), w))[0]


@pytest.fixture(scope="module")
def gathered():
    from jax.sharding import PartitionSpec as P

    return _compile(_gather_then_sum, P("x"))


@pytest.fixture(scope="module")
def streamed():
    from jax.sharding import PartitionSpec as P

    return _compile(_stream_then_sum, P("x"))


WHOLE_W = N * B * F * 4
BLOCK = B * F * 4


def test_temp_memory_passes_a_stream_and_fails_a_gather(gathered, streamed):
    check = TempMemory(bound=lambda t: WHOLE_W // 2, what="half of W")
    assert check(streamed).passed, streamed.memory
    failed = check(gathered)
    assert not failed.passed and "half of W" in failed.message and failed.hint
    assert gathered.memory["temp"] >= WHOLE_W  # the gathered weight really sits in scratch memory


def test_largest_transfer(gathered, streamed):
    check = LargestTransfer(bound=lambda t: BLOCK, what="one block")
    assert check(streamed).passed
    failed = check(gathered)  # an all-gather's operand is one block, its result the whole W
    assert not failed.passed and f"{WHOLE_W:,} bytes" in failed.message
    bytes_check = Bytes(expected=lambda t: (N - 1) * BLOCK, unit=lambda t: BLOCK)
    assert (
        bytes_check(streamed).passed and bytes_check(gathered).passed
    )  # same bytes, different memory


def test_only_collectives_and_count(gathered, streamed):
    only = OnlyCollectives(frozenset({"collective-permute"}))
    assert only(streamed).passed
    failed = only(gathered)
    assert not failed.passed and "all-gather" in failed.message and "lax.all_gather" in failed.hint
    count = Count(kind="collective-permute", expected=lambda ex: N - 1, ring_size=lambda ex: N)
    assert count(streamed).passed
    assert "0 × collective-permute" in count(gathered).message


def test_values_and_sharding_on_a_real_array():
    import jax
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P

    from grader.measure import devices

    mesh = devices.make_mesh((2, 4), ("x", "y"))
    x = np.arange(64, dtype=np.float32).reshape(8, 8)
    good = jax.device_put(x, NamedSharding(mesh, P("x", "y")))
    trial = Trial({}, output=good, expected=x, mesh=mesh)
    assert Values()(trial).passed
    assert OutputSharding(expected=lambda t: NamedSharding(mesh, P("x", "y")))(trial).passed
    wrong = OutputSharding(expected=lambda t: NamedSharding(mesh, P("y", "x")))(trial)
    assert not wrong.passed and "P('y', 'x')" in wrong.message
    off = x.copy()
    off[5, 7] += 1.0  # one element on one device
    bad = Values()(Trial({}, output=good, expected=off, mesh=mesh))
    assert not bad.passed and bad.message.startswith("1 of 8 devices")
    assert bad.message.endswith("; wrong along axis 0: 1 of 8 rows (5)")  # the global row
    (device_map,) = bad.evidence
    assert device_map.first_mismatch.index == [5, 7]
    assert [d.coord for d in device_map.devices if not d.ok] == [[1, 3]]
    as_list = Values()(Trial({}, output=[good], expected=x, mesh=mesh))
    assert not as_list.passed and "returned list" in as_list.message


def test_an_infinite_expected_element_is_matched_by_the_same_infinity_only():
    """``|a − inf| ≤ atol + rtol·inf`` holds for every ``a``: an infinite expected element
    passed any value, and a changed formula whose value is infinite matched any output."""
    import jax
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P

    from grader.checks.values import within
    from grader.measure import devices

    e = np.array([np.inf, -np.inf, 1.0, np.nan])
    assert within(np.array([np.inf, -np.inf, 1.0, 0.0]), e, 1e-6, 1e-3).tolist() == [
        True, True, True, False]  # fmt: skip
    assert not within(np.array([5.0, np.inf, 1.0 + 1e-2, np.nan]), e, 1e-6, 1e-3).any()
    mesh = devices.make_mesh((2,), ("x",))
    x = np.arange(4, dtype=np.float32)
    out = jax.device_put(x, NamedSharding(mesh, P("x")))
    want = x.copy()
    want[3] = np.inf
    bad = Values()(Trial({}, output=out, expected=want, mesh=mesh))
    assert not bad.passed and bad.message.startswith("1 of 2 devices")
    assert Values()(Trial({}, output=jax.device_put(want, NamedSharding(mesh, P("x"))),
                          expected=want, mesh=mesh)).passed  # fmt: skip


def test_a_ring_output_wrong_in_each_device_s_own_slot_only_is_said_so():
    """An all-gather of 4 blocks per device where device i's block i (its own) is 0 and every
    other right: said as the own slot, on a ring only. Both ways: the slot after it wrong
    instead (a shift, not the own block), or the check not a ring's: not said."""
    import jax
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P

    from grader.measure import devices

    mesh = devices.make_mesh((4,), ("x",))
    blocks = np.arange(1, 5, dtype=np.float32).repeat(2)  # [N·b] with b = 2: 1 1 2 2 3 3 4 4
    want = np.tile(blocks, 4)  # every device holds all four blocks

    def placed(wrong_slot):
        got = want.copy().reshape(4, 4, 2)
        for i in range(4):
            got[i, wrong_slot(i)] = 0
        return jax.device_put(got.reshape(-1), NamedSharding(mesh, P("x")))

    own = Values(ring=True)(Trial({}, output=placed(lambda i: i), expected=want, mesh=mesh))
    assert "its own slot only: device i's block i of the N = 4" in own.hint, own.hint
    assert "and they are 0 there" in own.hint
    later = Values(ring=True)(Trial({}, output=placed(lambda i: (i + 1) % 4), expected=want,
                                    mesh=mesh))  # fmt: skip
    assert "own slot" not in (later.hint or ""), later.hint
    plain = Values()(Trial({}, output=placed(lambda i: i), expected=want, mesh=mesh))
    assert "own slot" not in (plain.hint or ""), plain.hint


def test_tolerance_grows_with_the_reduction():
    from grader.checks.values import tolerance

    assert tolerance("float32", 2048)[0] > tolerance("float32", 1)[0]
    assert tolerance("bfloat16", 1)[1] > tolerance("float32", 1)[1]


def _close(a, e):
    return a.shape == e.shape and np.allclose(a, e)


EXPECTED = [np.full((2, 2), float(d + 1)) for d in range(4)]


@pytest.mark.parametrize(
    "actual,words",
    [
        ([EXPECTED[0]] * 4, "device 0"),
        ([EXPECTED[(d + 1) % 4] for d in range(4)], "meant for device i + 1"),
        ([EXPECTED[(d - 1) % 4] for d in range(4)], "meant for device i − 1"),
        ([e * 4 for e in EXPECTED], "4 times too large"),
        ([e / 4 for e in EXPECTED], "4 times too small"),
        ([e * 0 for e in EXPECTED], "all zeros"),
        (
            [EXPECTED[0], EXPECTED[1], EXPECTED[2] + 1, EXPECTED[3]],
            "Only device(s) [2] of 4 are wrong; the others are right: what your code does "
            "differently on those devices is where the values part.",
        ),  # what was measured, no cause
        ([EXPECTED[0] * np.nan] + EXPECTED[1:], "NaN"),
    ],
)
def test_value_diagnoses(actual, words):
    assert words in diagnose.values(actual, EXPECTED, _close, n_ring=4)


def test_a_scalar_that_stayed_zero_is_no_buffer_never_written():
    """Issue 47: a counter not advanced (a step of 0 where 1 is due, on every device) is
    no result buffer left unwritten, nor the right answer times 0."""
    want = [np.asarray(1, np.int32)] * 4
    assert diagnose.values([np.asarray(0, np.int32)] * 4, want, _close, n_ring=4) is None
    assert "all zeros" in diagnose.values([np.zeros(3)] * 4, [np.ones(3)] * 4, _close, n_ring=4)
    # on one device nothing arrives from another: the device's own term is what is lost
    one = diagnose.values([np.zeros(3)], [np.ones(3)], _close, n_ring=1)
    assert "on a mesh of one device" in one and "the term a ring loop starts its sum from" in one
    assert "mesh of one device" not in diagnose.values([np.zeros(3)] * 4, [np.ones(3)] * 4,
                                                       _close, n_ring=4)  # fmt: skip


def test_block_rotation_and_permutation_diagnoses():
    blocks = [np.full((1, 2), float(k)) for k in range(4)]
    full = np.concatenate(blocks)
    expected = [full] * 4
    rotated = [np.roll(full, 1, axis=0)] * 4
    assert "1 position(s) after" in diagnose.values(rotated, expected, _close, block=1, n_ring=4)
    shuffled = [np.concatenate([blocks[k] for k in (0, 2, 1, 3)])] * 4
    assert "wrong offset" in diagnose.values(shuffled, expected, _close, block=1, n_ring=4)
    assert diagnose.values(expected, expected, _close, block=1, n_ring=4) is None


def test_a_scalar_is_not_called_a_stray_factor_of_another():
    """Any nonzero scalar is some multiple of any other: the factor says nothing (issue 45
    §5). N times a computed scalar (a loss) still names the sum: exact to its tolerance,
    few factors fit it. N times a round one (a whole number, a power of two) is said as
    measured, without a cause: a loss scale of 2048 doubled where it halves is 8192, 4
    times too large on a ring of 4, and no sum is to blame. An array that takes two values
    names the factor it measured."""
    one = [np.array(7.25)] * 4
    assert diagnose.values([np.array(2.5)] * 4, one, _close, block=None, n_ring=4) is None
    said = diagnose.values([np.array(29.0)] * 4, one, _close, block=None, n_ring=4)
    assert "N = 4 times too large: a sum where a mean belongs" in said
    scale = [np.array(2048.0)] * 4
    said = diagnose.values([np.array(8192.0)] * 4, scale, _close, block=None, n_ring=4)
    assert said == f"{diagnose.STRAY_FACTOR} N = 4 (one round value: that alone names no cause)."
    said = diagnose.values([np.array(512.0)] * 4, scale, _close, block=None, n_ring=4)
    assert said == (
        f"{diagnose.STRAY_FACTOR} 1/N = 1/4 (one round value: that alone names no cause)."
    )
    many = [np.array([7.0, 1.0])] * 4
    assert "N = 4 times too large: a sum where a mean belongs" in diagnose.values(
        [4 * t for t in many], many, _close, block=None, n_ring=4
    )
    two = [np.array([1.0, 2.0])] * 4
    got = diagnose.values([2.5 * t for t in two], two, _close, block=1, n_ring=4)
    assert got.startswith(diagnose.STRAY_FACTOR)


def test_sends_past_the_neighbours_are_said_as_measured():
    """A butterfly's partners i XOR k are said as such, a shift as the shift, and where
    one permute is both (i + 2 = i XOR 2 on 4 devices) both; never "the optimum"
    (issue 45 audit: a butterfly moves more bytes than the ring)."""
    from grader.checks.comms import _far_hint

    xor2 = tuple((i, i ^ 2) for i in range(8))
    said = _far_hint([xor2], 8)
    assert "pair device i with i XOR 2: a butterfly" in said and "i → i +" not in said, said
    shift = tuple((i, (i + 2) % 6) for i in range(6))
    said = _far_hint([shift], 6)
    assert "Your permutes send i → i + 2: a message" in said and "XOR" not in said, said
    both = tuple((i, (i + 2) % 4) for i in range(4))
    said = _far_hint([both], 4)
    assert "i → i + 2 (on N = 4 that is also i XOR 2, a butterfly's partner)" in said, said
    assert not any("optimum" in _far_hint([p], n) for p, n in ((xor2, 8), (shift, 6)))


def test_step_diagnoses():
    assert "too many" in diagnose.steps("collective-permute", 4, 3, 4)
    assert "too few" in diagnose.steps("collective-permute", 2, 3, 3)
    assert "butterfly" in diagnose.steps("collective-permute", 3, 7, 8, farthest=4)
    # a butterfly all-reduce: log2(N) exchanges in all, where a ring's two phases take 2(N − 1)
    assert "log2(N) = 2 exchanges in all" in diagnose.steps("collective-permute", 2, 6, 4,
                                                            farthest=2)  # fmt: skip
    assert diagnose.steps("collective-permute", 2, 6, 4, farthest=1) is None
    # log2(4) = 2 is also a ring one step short: with sends to neighbours only (or none
    # measured) it is not called a butterfly, and "one too few" says what was measured
    assert "too few" in diagnose.steps("collective-permute", 2, 3, 4, farthest=1)
    assert diagnose.steps("collective-permute", 3, 7, 8, farthest=1) is None
    assert diagnose.steps("collective-permute", 3, 7, 8) is None
    assert "No collective-permute" in diagnose.steps("collective-permute", 0, 5, 6)


def test_the_precision_hint_names_the_cast_it_measured_and_only_then():
    """Shown only when the program computes in a 16-bit float on a float32 example; its
    figures are the dtype's own (bfloat16 8 bits, float16 11)."""
    from collections import Counter
    from types import SimpleNamespace

    from grader.checks.program import precision_hint
    from grader.spec import Trial

    def trial(dtype: str, used: dict[str, int]) -> Trial:
        return Trial({"dtype": dtype}, program=SimpleNamespace(dtypes=Counter(used)))

    bf16 = precision_hint(trial("float32", {"bfloat16": 3, "float32": 1}), "Keep float32.")
    assert "computes in bfloat16" in bf16 and "8 significant bits" in bf16
    assert "65,536×" in bf16 and bf16.endswith("Keep float32.")
    f16 = precision_hint(trial("float32", {"float16": 1}), "Keep float32.")
    assert "11 significant bits" in f16 and "8,192×" in f16
    assert precision_hint(trial("float32", {"float32": 5}), "x") is None  # nothing narrow used
    assert precision_hint(trial("bfloat16", {"bfloat16": 5}), "x") is None  # the example's own


def test_a_failed_value_check_says_which_rows_differ():
    """Where no known mistake matches, the message still says what was measured: the
    wrong rows along axis 0, as runs (and nothing more when every row is wrong)."""
    from grader.checks.values import row_summary

    assert row_summary({0, 1, 2, 3, 8, 20, 21}, 24) == (
        "; wrong along axis 0: 7 of 24 rows (0–3, 8, 20–21)"
    )
    assert row_summary(set(range(24)), 24) == ""
    assert row_summary(set(), 24) == ""
    many = row_summary(set(range(0, 40, 2)), 40)
    assert many.endswith("(0, 2, 4, 6, 8, 10, … (14 more runs))")


def test_a_whole_number_answer_is_said_as_the_right_one_rounded_and_which_way():
    """0 for 0.923 is floored (not rounded: that gives 1); 2 for 2.5 floored or rounded
    (both said); 3 for 2.2 ceiled; a whole right answer, another number or a float that
    is no rounding say nothing (both ways)."""
    from grader.checks.scalar import rounded

    # 0 rounds 0.923 down, but 0 on every example is no rounding measured (a branch left
    # returning 0.0 gives it too: audit 67); one nonzero rounding elsewhere bears it out
    assert rounded(0, 0.923077) is None and rounded(0, 0.923077, [(0, 0.4)]) is None
    down = rounded(0, 0.923077, [(2, 2.5)])
    assert "rounded down" in down and "nearest" not in down, down
    both = rounded(2, 2.5)
    assert "rounded down" in both and "; or rounded to the nearest" in both, both
    assert "rounded up" in rounded(3, 2.2)
    assert rounded(4, 4.0) is None and rounded(5, 2.5) is None and rounded(2.4, 2.5) is None
    # the other fixed examples bear a rounding out, or not (a formula that gives 1 here,
    # the right 0.923 rounded up, and 0.5 where the right answer is 0.25, rounds nothing)
    assert "rounded up" in rounded(1, 0.923077, [(1, 0.25), (3, 2.2)])
    assert rounded(1, 0.923077, [(0.5, 0.25)]) is None
    assert rounded(1, 0.923077, [(1, 1.0)]) is None  # wrong where the right one is whole
    assert rounded(1, 0.923077, None) is None  # the probes could not be read


def test_a_block_one_axis_off_is_said_and_a_size_for_rows_only_where_it_fits():
    """(6, 3) where (2, 3) belongs: 3× on axis 0, the other axes' product: elements for
    rows; (4, 3): 2×, no such product; two axes off, or another rank: nothing (both ways)."""
    from grader.runtime import shape_hint

    said = shape_hint((6, 3), (2, 3))
    assert "Axis 0 of your block is 6 long where 2 belongs (3×)" in said and "x.size" in said
    other = shape_hint((4, 3), (2, 3))
    assert "(2×); the other axes are right" in other and "x.size" not in other, other
    assert shape_hint((4, 6), (2, 3)) is None and shape_hint((6,), (2, 3)) is None


def test_a_block_cut_along_another_axis_than_the_expected_one_is_said_which():
    """The block handed in [4, 2]: (4, 1) is it cut to 1 along axis 1, the expected (1, 2)
    cut to 1 along axis 0: said. Both ways: cut to another length than the expected's, or
    without the given shape, or cut along the right axis (one axis off): not that sentence."""
    from grader.runtime import shape_hint

    said = shape_hint((4, 1), (1, 2), (4, 2))
    assert (
        "cut to 1 along axis 1" in said
        and "along axis 1, the last axis (axis=1 or -1) where axis 0" in said
    )
    assert shape_hint((4, 1), (2, 2), (4, 2)) is None  # not the expected's length
    assert shape_hint((4, 1), (1, 2)) is None  # the given block unknown
    grown = shape_hint((1, 8), (4, 2), (1, 2))  # tiled along the last axis, not the first
    assert "4 times as long along axis 1" in grown and "where axis 0 belongs" in grown, grown
    assert shape_hint((1, 6), (4, 2), (1, 2)) is None  # 3× where 4× belongs: not that sentence
    right_axis = shape_hint((2, 2), (1, 2), (4, 2))
    assert "Axis 0 of your block is 2 long where 1 belongs" in right_axis, right_axis


def test_an_output_split_along_another_dimension_is_said_which():
    """P(None, 'x') for P('x', None): the axis and both dimensions; another axis, a
    replicated output or the same layout say nothing (both ways)."""
    from jax.sharding import PartitionSpec as P

    from grader.checks.sharding import _moved

    said = _moved(P(None, "x"), P("x", None), 2)
    assert "mesh axis 'x' splits dimension 1 where it splits dimension 0" in said, said
    two = _moved(P("model", "data"), P("data", "model"), 2)
    assert "'data' splits dimension 1 where it splits dimension 0" in two
    assert "'model' splits dimension 0 where it splits dimension 1" in two
    assert _moved(P("y", None), P("x", None), 2) is None
    assert _moved(P(), P("x", None), 2) is None and _moved(P("x"), P("x", None), 2) is None
