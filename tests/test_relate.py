"""Feedback that generalises (issue 45 §2, §3, §5): where a wrong array is wrong, what it
equals instead, and no cause without its measurement; each relation tested both ways
(the mistake gets it, the nearest other mistake does not)."""

from __future__ import annotations

import dataclasses
import os

import numpy as np
import pytest

from grader.checks import relate
from grader.checks.values import Values
from grader.spec import Trial
from tests import grades
from tests.own_wrong import OWN


def _close(a, e):
    return np.abs(a - e) <= 1e-6 + 1e-6 * np.abs(e)


def _rel(got, want, **kw) -> list[str]:
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    return relate.relations(got, want, ~_close(got, want), _close, **kw)


WANT = np.arange(1.0, 25.0).reshape(4, 6)


# ------------------------------------------------------------ localise


@pytest.mark.parametrize(
    "mark,words",
    [
        (np.s_[:, :], "every element is wrong (24 of 24)"),
        (np.s_[2, :], "wrong only along axis 0 at index 2, every element there (6 of 24)"),
        (np.s_[:, 1::2], "wrong only along axis 1 at every 2nd index from 1 (3 of 6)"),
        (np.s_[1:3, 0:2], "wrong on one block: axis 0 at indices 1–2 (2 of 4), axis 1 at indices 0–1 (2 of 6)"),
        (np.s_[3, 5], "only the element at (3, 5) is wrong (1 of 24)"),
    ],
)  # fmt: skip
def test_localise_names_the_pattern(mark, words):
    bad = np.zeros((4, 6), bool)
    bad[mark] = True
    assert words in relate.localise(bad)


def test_localise_says_scattered_where_no_pattern_holds():
    bad = np.zeros((4, 6), bool)
    bad[0, 1] = bad[2, 4] = True
    assert relate.localise(bad).startswith("2 of 24 elements are wrong, scattered")
    assert relate.localise(np.zeros((4, 6), bool)) is None


# ------------------------------------------------------------ relations


class _Mesh:
    def __init__(self, shape, names):
        self.devices = np.zeros(shape)
        self.axis_names = names


def test_a_factor_is_named_when_it_is_one_of_the_examples_quantities():
    known = relate.quantities({"n": 4, "seed": 7}, _Mesh((4,), ("data",)), [4])
    (said,) = _rel(WANT * 4, WANT, known=known)
    assert "exactly 4× the expected one on every one of the 24 wrong elements" in said
    assert "the factor is N, the size of mesh axis 'data' (4)" in said
    (root,) = _rel(WANT * 2.0, WANT, known=relate.quantities({}, _Mesh((2, 2), ("x", "y"))))
    assert "the factor is N = 4, the device count" not in root and "2×" in root
    (sqrt,) = _rel(WANT / np.sqrt(8), WANT, known=relate.quantities({}, _Mesh((8,), ("d",))))
    assert "the factor is 1/(√(N, the size of mesh axis 'd' (8)))" in sqrt


def test_a_bias_correction_is_named_where_the_lesson_exposes_it():
    b1, t = 0.9, 3
    known = relate.quantities({}, extra={"the bias correction 1/(1 − b1ᵗ)": 1 / (1 - b1**t)})
    (said,) = _rel(WANT / (1 - b1**t), WANT, known=known)
    assert "the factor is the bias correction 1/(1 − b1ᵗ)" in said


def test_a_factor_none_of_the_quantities_is_said_unnamed_and_a_near_one_not_at_all():
    (said,) = _rel(WANT * 0.0819, WANT, known=relate.quantities({"n": 4}))
    assert "exactly 0.0819× the expected one" in said and "none of the example's own sizes" in said
    noisy = WANT * 2 + np.where(WANT > 12, 1e-3, 0)  # 2× nearly, not exactly: no relation
    assert _rel(noisy, WANT, known=relate.quantities({"n": 2})) == []
    # a factor on one expected value alone is no evidence: any number is some factor of it
    assert _rel([7.0, 7.0], [3.0, 3.0], known=relate.quantities({})) == []


def test_lines_each_scaled_by_a_factor_of_their_own_are_said_with_the_factors():
    """Each row (a vector along the last axis) the expected one times its own factor: said
    with the factors' range; one factor for all is the constant factor's sentence; a
    row that is not a multiple of its expected one, or one row alone, gets nothing of it."""
    factors = np.array([1.0, 1.5, 2.0, 0.25])[:, None]
    (said,) = _rel(WANT * factors, WANT)
    assert said == (
        "your value is, along its last axis, exactly the expected one times a factor of each "
        "line's own, on every one of the 3 wrong lines (each of 6 elements), with factors "
        "from 0.25 to 2 — the right directions, the wrong lengths"
    )
    assert not relate.names(said)  # a change of the reference is still looked for
    assert "a factor of each line's own" not in " ".join(_rel(WANT * 1.5, WANT))
    bent = WANT * factors
    bent[1, 0] += 1.0  # row 1 no longer a multiple of its expected row
    assert "a factor of each line's own" not in " ".join(_rel(bent, WANT))
    one = WANT.copy()
    one[2] *= 3.0
    assert "a factor of each line's own" not in " ".join(_rel(one, WANT))


def test_sign_zero_unchanged_and_swapped_leaves():
    assert "with its sign flipped" in _rel(-WANT, WANT)[0]
    assert "is exactly 0 on every one of the 24" in _rel(WANT * 0, WANT)[0]
    state = WANT + 100
    (said,) = _rel(state, WANT, inputs=[("argument 2['m']", state)], what="your ['m']")
    assert said.startswith("your ['m'] equals the input argument 2['m'] on every one")
    assert said.endswith("returned as it came, never updated")
    # equal to another input (the gradient, say): said, but not as "never updated"
    (grad,) = _rel(state, WANT, inputs=[("argument 1", state)], what="your ['m']")
    assert "equals the input argument 1" in grad and "never updated" not in grad
    v = WANT * WANT
    (swap,) = _rel(v, WANT, others=[("leaf ['v']", v)], what="your ['m']")
    assert "equals the expected leaf ['v']" in swap
    # the other way: a value that is neither gets none of these
    assert not any("unchanged" in s or "leaf" in s for s in _rel(WANT + 0.5 * WANT**2, WANT,
               inputs=[("argument 0", state)], others=[("leaf ['v']", v)]))  # fmt: skip


def test_an_update_scaled_or_reversed_is_said_against_the_input():
    params, step = WANT, np.linspace(-1, 1, 24).reshape(4, 6)
    want = params - 0.1 * step
    known = relate.quantities({}, _Mesh((4,), ("data",)))
    (up,) = _rel(params + 0.1 * step, want, inputs=[("argument 0", params)])
    assert "(your update) is exactly -1× the expected update" in up and "sign flipped" in up
    (quarter,) = _rel(params - 0.025 * step, want, inputs=[("argument 0", params)], known=known)
    assert (
        "0.25× the expected update" in quarter and "1/(N, the size of mesh axis 'data'" in quarter
    )
    # one value (a counter: 1 → 0 expected, 2 returned) is some multiple of any other: a
    # counter advanced where it resets is not "the step the wrong way"
    (counter,) = _rel(np.array([2.0]), np.array([0.0]), inputs=[("argument 4", np.array([1.0]))])
    assert counter == (
        "your value is exactly the input argument 4 + 1 on every one of the 1 wrong elements: "
        "one more than it came in"
    ), counter
    assert _rel(np.array([2.0]), np.array([0.0]), known=relate.quantities({"n": 2})) == []
    # an input of −1 that came out 0 (a sum that never took its first term, on a mesh of
    # one device) is no counter one on: 0 is said, not "+ 1"
    (zero,) = _rel(np.array([0.0]), np.array([-1.0]), inputs=[("argument 0", np.array([-1.0]))])
    assert "exactly 0" in zero and "+ 1" not in zero, zero
    # nor is one element of an array that came out one less than it came in
    x = np.array([1.0, 2.0, 3.0])
    said = _rel(np.array([0.0, 2.0, 3.0]), x, inputs=[("argument 0", x)])
    assert not any("came in" in r for r in said), said


def test_an_offset_and_places_moved():
    counts = np.array([0.0, 1, 2, 3, 4, 5])
    assert "exactly the expected one + 1 on every one" in _rel(counts + 1, counts)[0]
    assert "moved one place later along axis 1" in _rel(np.roll(WANT, 1, 1) * [0, 1, 1, 1, 1, 1], WANT)[0]  # fmt: skip
    assert "shifted by +1 along axis 0" in _rel(np.roll(WANT, 1, 0), WANT)[0]
    assert "reversed along axis 1" in _rel(WANT[:, ::-1], WANT)[0]
    sq = np.arange(16.0).reshape(4, 4)
    assert "transposed" in _rel(sq.T, sq)[0]


def test_strided_blocks_where_contiguous_ones_belong():
    want = np.arange(12.0)  # 3 devices of 4 contiguous elements
    strided = np.concatenate([want[d::3] for d in range(3)])  # device d holds d, d + 3, …
    (said,) = _rel(strided, want, split=[(0, 3)])
    assert "strided where the blocks are contiguous" in said and "d, d + 3, d + 6" in said
    back = np.empty(12)
    back[np.concatenate([np.arange(4) * 3 + d for d in range(3)])] = want
    (other,) = _rel(back, want, split=[(0, 3)])
    assert "interleaved the other way" in other
    assert _rel(strided, want) == [] or "strided" not in _rel(strided, want)[0]  # unsplit: unsaid


RNG = np.random.default_rng(45)
FLOATS = RNG.normal(size=(8, 4))
INTS = RNG.integers(-8, 9, size=(8, 4)).astype(np.float64)  # values repeat, as lesson 2's
OWN_RNG = np.random.default_rng(58)
"""For the tests added after RNG's: drawing from RNG would change what later tests draw."""


@pytest.mark.parametrize("want", [FLOATS, INTS], ids=["distinct floats", "small integers"])
def test_values_moved_by_one_shift_are_said_whatever_the_values(want):
    """Data moved, not computed: a cyclic shift along one axis is tried for every shift, so
    it is said on repeated values too; the rows never written are counted apart."""
    late = np.roll(want, 2, axis=0)
    late[:2] = 0  # the first block never written, the rest two rows late
    said = relate.moved(late, want, ~_close(late, want), _close)
    assert (
        "exactly the expected value of another index: each holds the element 2 places "
        "before it along axis 0, cyclically" in said
    )
    assert said.endswith("other wrong element(s) hold 0")
    cols = want[:, [1, 2, 3, 0]]
    assert "each holds the element 1 place after it along axis 1, cyclically" in relate.moved(
        cols, want, ~_close(cols, want), _close
    )


def test_where_the_values_are_distinct_each_ones_source_is_named():
    copied = FLOATS.copy()
    copied[1:3] = FLOATS[0]
    said = relate.moved(copied, FLOATS, ~_close(copied, FLOATS), _close)
    assert "(some expected values copied to several places): each moved along axis 0 only" in said
    assert "e.g. the element at (1, 0) holds the one at (0, 0)" in said
    scrambled = FLOATS.reshape(2, 4, 4).transpose(1, 0, 2).reshape(8, 4)
    said = relate.moved(scrambled, FLOATS, ~_close(scrambled, FLOATS), _close)
    assert "(the expected values of the wrong places, rearranged among them)" in said
    repeated = INTS.reshape(2, 4, 4).transpose(1, 0, 2).reshape(8, 4)
    said = relate.moved(repeated, INTS, ~_close(repeated, INTS), _close)
    assert "rearranged among them; which came from where is not known" in said


@pytest.mark.parametrize("want", [FLOATS, INTS], ids=["distinct floats", "small integers"])
def test_computed_values_are_never_said_moved(want):
    off = want.copy()
    off[2, 3] += 0.5
    off[1, 1] += 1.25
    off[5, 0] -= 3.5
    assert relate.moved(off, want, ~_close(off, want), _close) is None
    copied = want.copy()
    copied[1:3] = want[0]  # copies on small integers: not the multiset, and no source known
    if want is INTS:
        assert relate.moved(copied, want, ~_close(copied, want), _close) is None
    two = want.copy()
    two[0, 0], two[7, 3] = want[7, 3], want[0, 0]  # two wrong elements: too few to tell
    assert relate.moved(two, want, ~_close(two, want), _close) is None


def test_where_a_few_expected_values_repeat_a_move_along_one_axis_is_still_said():
    """Mostly distinct values with one repeated (a token seen twice): wrong elements each
    holding a value of their own line along one axis are said moved along it, by the
    axis's name, without a source; the same wrong places holding new values are not."""
    want = FLOATS.copy()
    want[6, 0] = want[6, 1]  # one repeat: no element's source is known for sure
    got = want.copy()
    got[2:5, 3] = want[2, 0], want[3, 1], want[4, 2]  # three sources: no one shift
    said = relate.moves(got, want, ~_close(got, want), _close, names=("row", "column"))
    assert said is not None and "each moved along axis 1 (column) only" in said.how, said
    assert "which came from where is not known" in said.how
    made = want.copy()
    made[2:5, 3] = want[2, 0] + 0.25, want[3, 1] + 0.25, want[4, 2] + 0.25
    assert relate.moves(made, want, ~_close(made, want), _close) is None


def _ring_matmul(n: int, rows: int = 2, d: int = 3, f: int = 16):
    """X[rows, n·d] and W[n·d, f], and the family of their block products."""
    x, w = OWN_RNG.normal(size=(rows, n * d)), OWN_RNG.normal(size=(n * d, f))
    atoms = {(j, k): x[:, j * d : (j + 1) * d] @ w[k * d : (k + 1) * d]
             for j in range(n) for k in range(n)}  # fmt: skip
    family = relate.Products(
        atoms=lambda c: atoms, right=lambda c: {j: j for j in range(n)},
        term=lambda j, k: f"X[:, block {j}]·W[block {k}]", first="X's column block",
        second="W block", n=n,
    )  # fmt: skip
    return atoms, family


def test_a_block_that_is_a_wrong_sum_of_block_products_is_told_which():
    """A device's block that is exactly another sum of the products of X's and W's blocks:
    the terms that differ, and the pattern where one holds; a block computed otherwise,
    the right block, and products that do not determine a sum say nothing (both ways)."""
    atoms, family = _ring_matmul(4)
    shifted = sum(atoms[j, (j + 1) % 4] for j in range(4))
    said = relate.paired(family, (0,), shifted, _close, "device (0,)'s block")
    assert said.startswith("device (0,)'s block is exactly a sum of block products, but not "
                           "the right one: it has X[:, block 0]·W[block 1] + ")  # fmt: skip
    assert "where X[:, block 0]·W[block 0] + X[:, block 1]·W[block 1]" in said
    assert said.endswith("each term takes the W block 1 after the right one (mod 4)")
    clamped = atoms[0, 0] + atoms[1, 1] + atoms[2, 2] + atoms[2, 3]  # block 3's columns never
    said = relate.paired(family, (0,), clamped, _close, "it")
    assert "it has X[:, block 2]·W[block 3] where X[:, block 3]·W[block 3] belongs" in said
    assert said.endswith("no term takes X's column block 3")
    right = sum(atoms[j, j] for j in range(4))
    assert relate.paired(family, (0,), right, _close, "it") is None
    assert relate.paired(family, (0,), right + 0.01 * OWN_RNG.normal(size=right.shape), _close,
                         "it") is None  # fmt: skip
    assert relate.paired(family, (0,), 1.5 * atoms[0, 1] + right, _close, "it") is None
    assert relate.products(np.ones(5), atoms, _close) is None  # a block of another size
    few, small = _ring_matmul(4, rows=1, f=8)  # 8 elements, 16 products: not determined
    assert relate.paired(small, (0,), sum(few[j, (j + 1) % 4] for j in range(4)), _close,
                         "it") is None  # fmt: skip


def test_a_right_term_once_more_is_said_counted_twice():
    """A block that is the right sum plus one of its own terms again: counted twice; plus
    a term the right sum does not have: on top of it, not "twice" (both ways)."""
    atoms, family = _ring_matmul(4)
    right = sum(atoms[j, j] for j in range(4))
    said = relate.paired(family, (0,), right + atoms[0, 0], _close, "it")
    assert said.endswith("it has X[:, block 0]·W[block 0] on top of the right sum: counted "
                         "twice"), said  # fmt: skip
    said = relate.paired(family, (0,), right + atoms[0, 1], _close, "it")
    assert "on top of the right sum" in said and "twice" not in said, said


def test_a_ring_sum_that_lacks_its_first_or_last_steps_terms_is_said_which():
    """A ring loop's sum that holds only the last k of its terms (either way round: set
    where it is added to, or started late) or only the first k (a loop short of steps);
    terms that are no run of either order, and any set on 3 devices (each is a run one
    way round), get the terms alone (both ways)."""
    import dataclasses

    atoms, family = _ring_matmul(5)
    family = dataclasses.replace(family, orders=lambda c: [
        [(c[0] + s) % 5 for s in range(5)], [(c[0] - s) % 5 for s in range(5)]])  # fmt: skip
    last = atoms[4, 4] + atoms[0, 0]  # device 1 adds blocks 1, 2, 3, 4, 0: kept 4 and 0
    said = relate.paired(family, (1,), last, _close, "it")
    assert "the first 3 of the 5 terms the ring adds in turn are the ones missing" in said, said
    assert "(set, y = term, where a later step adds to it" in said and "started late" in said
    other_way = atoms[1, 1] + atoms[0, 0]  # the other direction: 1, 0, 4, 3, 2 — first two
    said = relate.paired(family, (1,), other_way, _close, "it")
    assert "the last 3 of the 5 terms the ring adds in turn are the ones missing" in said, said
    apart = atoms[1, 1] + atoms[3, 3]  # blocks 1 and 3: a run in no direction
    said = relate.paired(family, (1,), apart, _close, "it")
    assert said.endswith("lacks X[:, block 0]·W[block 0] + X[:, block 2]·W[block 2] + "
                         "X[:, block 4]·W[block 4]"), said  # fmt: skip
    atoms3, family3 = _ring_matmul(3)
    family3 = dataclasses.replace(family3, orders=lambda c: [[0, 1, 2], [0, 2, 1]])
    said = relate.paired(family3, (0,), atoms3[2, 2], _close, "it")
    assert said.endswith("lacks X[:, block 0]·W[block 0] + X[:, block 1]·W[block 1]"), said


def test_an_input_added_to_or_taken_from_the_output_is_said():
    """The expected value plus an input (a residual the function has not), or minus one;
    half an input added is neither (both ways)."""
    rng = np.random.default_rng(64)
    want, x = rng.normal(size=(6, 4)), rng.normal(size=(6, 4))
    for got, words in ((want + x, "plus the input argument 0"),
                       (want - x, "minus the input argument 0")):  # fmt: skip
        said = relate.relations(got, want, ~_close(got, want), _close,
                                inputs=[("argument 0", x)])  # fmt: skip
        assert any(words in r for r in said), said
        assert any("residual" in r for r in said) == words.startswith("plus"), said
    half = want + 0.5 * x
    said = relate.relations(half, want, ~_close(half, want), _close, inputs=[("argument 0", x)])
    assert not any("the input argument 0" in r for r in said), said


def test_a_pairing_off_by_a_whole_number_of_blocks_or_swapped_is_said_which():
    """The terms a block has in place of the right ones, where one pattern holds for all of
    them: the second operand's block one off (its first right), the first operand's one off
    (the second right: an index clamped at the last block), or two terms' blocks swapped;
    terms that follow no one pattern get the terms alone (both ways)."""
    atoms, family = _ring_matmul(4)
    right = sum(atoms[j, j] for j in range(4))
    late = right - atoms[2, 2] + atoms[2, 1]  # block 2's columns meet W block 1
    said = relate.paired(family, (0,), late, _close, "it")
    assert said.endswith(": each of those terms takes the W block one before the one its "
                         "X's column block belongs with (mod 4): the pairing is off by one "
                         "block"), said  # fmt: skip
    clamped = right - atoms[0, 0] + atoms[3, 0]  # X's last block where block 0 belongs
    said = relate.paired(family, (0,), clamped, _close, "it")
    assert (
        ": each of those terms takes X's column block one before the one its W block "
        "belongs with (mod 4): the pairing is off by one block; no term takes X's column "
        "block 0" in said
    ), said
    swapped = right - atoms[1, 1] - atoms[3, 3] + atoms[1, 3] + atoms[3, 1]
    said = relate.paired(family, (0,), swapped, _close, "it")
    assert said.endswith(
        ": the same blocks, paired the other way — each W block of those "
        "terms belongs with another of their X's column blocks (swapped)"
    )
    short = right - atoms[2, 2]  # a block never received: its term is missing, nothing else
    said = relate.paired(family, (0,), short, _close, "it")
    assert said.startswith("it is exactly a sum of block products, but not the right one: it "
                           "lacks X[:, block 2]·W[block 2]"), said  # fmt: skip
    two = right - atoms[1, 1] - atoms[2, 2] + atoms[1, 2] + atoms[2, 0]  # offsets +1 and −2
    said = relate.paired(family, (0,), two, _close, "it")
    assert said.endswith("where X[:, block 1]·W[block 1] + X[:, block 2]·W[block 2] belongs")
    assert "off by" not in said and "swapped" not in said


def test_a_shift_by_whole_device_blocks_is_said_in_blocks():
    """A shift whose length is a whole number of the blocks one device holds of an array
    split along that axis is said in those blocks too (a slot one device's block off);
    one that is not, in places only."""
    want = np.random.default_rng(62).normal(size=(12, 3))
    units = {0: [(2, "argument 0")]}
    one = np.roll(want, 2, axis=0)
    said = relate.moved(one, want, ~_close(one, want), _close, units=units)
    assert said.endswith(
        "each holds the element 2 places before it along axis 0, cyclically: "
        "one device's block of argument 0 (2 along this axis)"
    ), said
    two = np.roll(want, -4, axis=0)
    said = relate.moved(two, want, ~_close(two, want), _close, units=units)
    assert said.endswith(
        "4 places after it along axis 0, cyclically: 2 devices' blocks of "
        "argument 0 (2 along this axis each)"
    ), said
    odd = np.roll(want, 3, axis=0)
    said = relate.moved(odd, want, ~_close(odd, want), _close, units=units)
    assert said.endswith("3 places before it along axis 0, cyclically"), said


def test_a_shift_by_a_lessons_own_blocks_is_said_in_them_first():
    """A lesson's declared unit (lesson 9's micro-batch slots, (length, one, several)) is
    said before a device's block of the same length; a shift that is not a whole number of
    them falls back to the devices' blocks, or to places."""
    want = np.random.default_rng(64).normal(size=(12, 3))
    units = {0: [(2, "one micro-batch slot", "micro-batch slots"), (4, "argument 0")]}
    for k, words in ((-2, "2 places after it along axis 0, cyclically: one micro-batch slot "
                          "(2 along this axis)"),
                     (4, "4 places before it along axis 0, cyclically: 2 micro-batch slots "
                         "(2 along this axis each)")):  # fmt: skip
        moved = np.roll(want, k, axis=0)
        said = relate.moved(moved, want, ~_close(moved, want), _close, units=units)
        assert said.endswith(words), said
    only = {0: [(3, "one micro-batch slot", "micro-batch slots"), (2, "argument 0")]}
    moved = np.roll(want, 2, axis=0)
    said = relate.moved(moved, want, ~_close(moved, want), _close, units=only)
    assert said.endswith("one device's block of argument 0 (2 along this axis)"), said
    moved = np.roll(want, 1, axis=0)
    said = relate.moved(moved, want, ~_close(moved, want), _close, units=only)
    assert said.endswith("1 place before it along axis 0, cyclically"), said


def test_whole_blocks_moved_are_said_as_their_map():
    """Whole blocks moved (in a lesson's unit, else a device's block): adjacent pairs in the
    other order (zigzag's two chunks of a device concatenated swapped), the order reversed,
    any other map by its first entries; a block computed or equal to two expected blocks
    gets no block map (both ways)."""
    rng = np.random.default_rng(64)
    want = rng.normal(size=(8, 3))
    chunks = {0: [(2, "one query chunk", "query chunks")]}

    def said(got, units):
        return relate.moved(got, want, ~_close(got, want), _close, units=units) or ""

    pairs = want.reshape(2, 2, 2, 3)[:, ::-1].reshape(8, 3)
    assert said(pairs, chunks).endswith(
        "whole query chunks along axis 0 moved, each pair of adjacent query chunks in the other "
        "order (0 holds 1's, 1 holds 0's, …)"), said(pairs, chunks)  # fmt: skip
    backwards = want.reshape(4, 2, 3)[::-1].reshape(8, 3)
    devices = {0: [(2, "the output")]}
    assert said(backwards, devices).endswith(
        "whole blocks of 2 (one device's block of the output each) along axis 0 moved, in "
        "reverse order (0 holds 3's, 1 holds 2's, …)"), said(backwards, devices)  # fmt: skip
    other = want.reshape(4, 2, 3)[[2, 0, 1, 3]].reshape(8, 3)
    assert "moved, 0 holds 2's, 1 holds 0's, 2 holds 1's" in said(other, chunks)
    computed = pairs.copy()
    computed[0] += 0.5
    assert "whole query chunks" not in said(computed, chunks)
    repeated = want.copy()
    repeated[4:6] = repeated[2:4]  # expected blocks 1 and 2 equal: block 0 holding 1's is ambiguous
    swapped = repeated.reshape(4, 2, 3)[[1, 0, 2, 3]].reshape(8, 3)
    ambiguous = relate.moved(swapped, repeated, ~_close(swapped, repeated), _close, units=chunks)
    assert ambiguous and "whole query chunks" not in ambiguous, ambiguous


def test_values_says_a_shift_in_the_blocks_of_the_input_split_along_it():
    """Through the check: the blocks are read off the arguments' and the output's
    shardings (2 rows of x a device, 8 rows of the output); a shift of 2 rows is one block
    of x, of 8 one block of the output (the device map's measurement: the hint of this one
    is the ring's "device i holds the result meant for device i − 1")."""
    import jax
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P

    from grader.measure import devices

    mesh = devices.make_mesh((4,), ("x",))
    rows = NamedSharding(mesh, P("x"))
    x = jax.device_put(np.arange(24.0).reshape(8, 3), rows)
    want = np.random.default_rng(62).normal(size=(32, 3)).astype(np.float32)
    for k, words in ((2, "one device's block of argument 0 (2 along this axis)"),
                     (8, "one device's block of the output (8 along this axis)")):  # fmt: skip
        out = jax.device_put(np.roll(want, k, axis=0), rows)
        r = Values()(Trial({}, output=out, expected=want, mesh=mesh, inputs=(x,)))
        measured = " ".join(m for e in r.evidence for m in getattr(e, "measured", None) or [])
        assert not r.passed and f"before it along axis 0, cyclically: {words}" in measured, measured


def _softmax_over(q, blocks, counts):
    """Attention of q over the blocks' keys, block j's keys weighted counts[j] (log-weights
    added to the scores), each block's mask applied: written apart from relate's solver."""
    s = np.concatenate([np.where(m[:, None, :] if m is not None else True,
                                 np.einsum("qhd,khd->qhk", q, k) / 2.0 + np.log(c), -np.inf)
                        for (k, _, m), c in zip(blocks, counts)], axis=-1)  # fmt: skip
    p = np.exp(s - s.max(axis=-1, keepdims=True))
    v = np.concatenate([v for _, v, _ in blocks])
    return np.einsum("qhk,khd->qhd", p / p.sum(axis=-1, keepdims=True), v)


def test_rows_that_are_attention_over_other_key_blocks_are_told_which():
    """Causal attention over 3 blocks of 4 keys (Dh = 4), device 1's rows: its own block
    counted twice, a block in its future attended, a block left out — each told which,
    and how often it belongs; the right rows, the same rows with noise, and rows under
    another mask (the diagonal strict) get nothing (no multiset of blocks gives them)."""
    rng = np.random.default_rng(62)
    q, k, v = (rng.normal(size=(12, 2, 4)) for _ in range(3))
    pos = np.arange(4, 8)
    blocks = [(k[4 * j : 4 * j + 4], v[4 * j : 4 * j + 4],
               pos[:, None] >= np.arange(4 * j, 4 * j + 4)[None, :] if j == 1 else None)
              for j in range(3)]  # fmt: skip
    group = relate.KeyGroup(slice(0, 4), q[pos], dict(enumerate(blocks)), {0: 1, 1: 1, 2: 0})
    family = relate.Attended(lambda coord: [group], "K/V block", "is in these rows' future")

    def told(counts):
        return family.said((1,), _softmax_over(q[pos], blocks, counts), _close, "it")

    assert told([1, 2, 1e-300]) == (
        "it is exactly softmax attention over other K/V blocks than the right ones: K/V "
        "block 1 counted twice (its keys weigh 2× in the softmax), where it belongs once; "
        "every other K/V block as it belongs"
    )
    assert "K/V block 2 once, which is in these rows' future" in told([1, 1, 1])
    assert "no K/V block 0, where it belongs once" in told([1e-300, 1, 1e-300])
    right = _softmax_over(q[pos], blocks, [1, 1, 1e-300])
    assert family.said((1,), right, _close, "it") is None
    assert family.said((1,), right + 1e-4 * rng.normal(size=right.shape), _close, "it") is None
    strict = [(kb, vb, m & (pos[:, None] != np.arange(4, 8)[None, :]) if m is not None else m)
              for kb, vb, m in blocks]  # fmt: skip
    assert family.said((1,), _softmax_over(q[pos], strict, [1, 1, 1e-300]), _close, "it") is None


def test_a_replicated_output_whose_devices_moved_their_blocks_is_said_per_device():
    """Devices that disagree on a replicated output: each wrong device's shard against its
    expected one, the first named, the others said to have moved theirs the same way."""
    import jax
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P

    from grader.measure import devices

    mesh = devices.make_mesh((4,), ("x",))
    want = RNG.integers(-8, 9, size=(8, 3)).astype(np.float32)
    held = [want if d == 0 else np.roll(want, 2 * d, axis=0) for d in range(4)]
    out = jax.make_array_from_single_device_arrays(
        want.shape, NamedSharding(mesh, P()),
        [jax.device_put(h, dev) for h, dev in zip(held, mesh.devices.flat)],
    )  # fmt: skip
    r = Values()(Trial({}, output=out, expected=want, mesh=mesh))
    assert (
        "Device (1,)'s shard holds, at 24 of its wrong elements, exactly the expected value "
        "of another index: each holds the element 2 places before it along axis 0" in r.hint
    )
    assert "the other 2 wrong device(s) hold only expected values moved too" in r.hint
    same = [want if d == 0 else np.roll(want, 2, axis=0) for d in range(4)]
    out = jax.make_array_from_single_device_arrays(
        want.shape, NamedSharding(mesh, P()),
        [jax.device_put(h, dev) for h, dev in zip(same, mesh.devices.flat)],
    )  # fmt: skip
    r = Values()(Trial({}, output=out, expected=want, mesh=mesh))
    assert "the other 2 wrong device(s) moved theirs the same way" in r.hint


def _reshaped(got, want, sizes=(4,), **kw):
    return relate.reshaped(np.asarray(got, np.float64), np.asarray(want, np.float64), _close,
                           sizes, **kw)  # fmt: skip


def test_a_wrong_shape_holding_the_expected_values_rearranged_is_said_how():
    """Each relation of :func:`relate.reshaped` where it holds, and nothing where the
    values are computed wrongly in the same wrong shape (both ways)."""
    want = OWN_RNG.normal(size=(8, 4))
    columns = np.concatenate(np.split(want, 4, axis=0), axis=1)  # (2, 16)
    said = _reshaped(columns, want, spec="P(None, 'x')", split=[(1, 4)])
    assert said.startswith("your value of shape (2, 16) has its blocks along the wrong dimension")
    assert ("its 4 blocks along dimension 1 (columns), put together along dimension 0 (rows) "
            "instead, are the expected value exactly") in said  # fmt: skip
    assert "your output's sharding P(None, 'x') splits dimension 1 (columns)" in said
    assert "sharding" not in _reshaped(columns, want)  # no spec: nothing said of one
    assert _reshaped(columns + 1e-3 * OWN_RNG.normal(size=columns.shape), want) is None
    assert _reshaped(columns, want, sizes=(3,)) is None  # 4 blocks, but the mesh has 3
    assert "transposed to (1, 0) it is exact" in _reshaped(want.T, want)
    assert "only its shape differs" in _reshaped(want.reshape(4, 8), want)
    copies = _reshaped(np.concatenate([want] * 4), want)
    assert "is 4 copies of the expected value side by side along dimension 0 (rows)" in copies
    parts = [OWN_RNG.normal(size=want.shape) for _ in range(3)]
    parts.append(want - sum(parts))
    assert "4 blocks along dimension 0 (rows) that add up to the expected value exactly" in (
        _reshaped(np.concatenate(parts), want)
    )
    assert "exactly block 2 of the expected value's 4 blocks along dimension 0 (rows)" in (
        _reshaped(want[4:6], want)
    )
    assert _reshaped(want[4:6] * 2, want) is None
    assert _reshaped(want, want) is None  # the right shape: not this relation's to say


def test_values_says_an_output_whose_blocks_went_along_the_wrong_dimension():
    """A whole check: a sharded result the devices each hold right, put together along
    the other dimension by the output's sharding, gets the relation as its hint."""
    import jax
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P

    from grader.measure import devices

    mesh = devices.make_mesh((4,), ("x",))
    want = OWN_RNG.normal(size=(8, 4)).astype(np.float32)
    blocks = np.concatenate(np.split(want, 4, axis=0), axis=1)
    out = jax.device_put(blocks, NamedSharding(mesh, P(None, "x")))
    r = Values()(Trial({}, output=out, expected=want, mesh=mesh))
    assert r.message == "returned shape (2, 16); expected (8, 4)"
    assert r.hint.startswith("Your value of shape (2, 16) has its blocks along the wrong dimension")
    assert "your output's sharding P(None, 'x') splits dimension 1 (columns)" in r.hint
    wrong = jax.device_put(blocks * 1.5, NamedSharding(mesh, P(None, "x")))
    assert Values()(Trial({}, output=wrong, expected=want, mesh=mesh)).hint is None


def test_non_finite_from_finite_inputs_is_said_without_a_cause():
    got = WANT.copy()
    got[1, 2] = np.inf
    (said,) = _rel(got, WANT, inputs=[("argument 0", WANT)])
    assert "1 non-finite value(s)" in said and "overflow" not in said


# ------------------------------------------------------------ §5: a cause with its evidence


class _Program:
    def __init__(self, *dtypes):
        self.dtypes = {d: 1 for d in dtypes}


def test_an_overflow_is_named_only_where_a_narrow_cast_and_its_range_are_measured():
    w = np.linspace(-600, 600, 12)
    nonfinite = np.abs(w) > 448
    said = relate.overflow(_Program("float32", "float8_e4m3fn"), [("argument 0", w)], nonfinite)
    assert "exactly where argument 0 exceeds 448" in said and "float8_e4m3fn" in said
    # the nearest other mistake: no narrow cast (a log of a negative, a division by 0) — no
    # overflow said, however large the input; nor a cast with every input in range
    assert relate.overflow(_Program("float32"), [("argument 0", w)], nonfinite) is None
    small = np.linspace(-3, 3, 12)
    assert relate.overflow(_Program("float8_e4m3fn"), [("argument 0", small)], None) is None


def _sharded(values, mesh):
    import jax
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P

    return jax.device_put(values, NamedSharding(mesh, P("x")))


def test_values_names_a_float8_overflow_and_keeps_the_list_for_a_log():
    """A whole check: the program that casts to float8 unscaled gets the overflow, with
    its measurement; one that takes a log of a negative keeps the list of causes."""
    import jax
    import jax.numpy as jnp

    from grader.measure import devices, jaxpr

    mesh = devices.make_mesh((4,), ("x",))
    w = np.linspace(-600, 600, 16).astype(np.float32)
    arg = _sharded(w, mesh)

    def unscaled(a):
        return a.astype(jnp.float8_e4m3fn).astype(jnp.float32)

    def logged(a):
        return a * jnp.log(a - a - 1)

    for fn, words, absent in (
        (unscaled, "the cast overflowed", "division by zero"),
        (logged, "division by zero", "overflowed"),
    ):
        out = jax.jit(fn)(arg)
        trial = Trial({}, output=out, expected=w, mesh=mesh,
                      program=jaxpr.trace(fn, arg), inputs=(arg,))  # fmt: skip
        r = Values()(trial)
        assert not r.passed and words in r.hint and absent not in r.hint, r.hint


def test_values_reports_where_and_what_it_measured_on_the_device_map():
    import jax

    from grader.measure import devices

    mesh = devices.make_mesh((4,), ("x",))
    want = np.arange(1.0, 17.0, dtype=np.float32)
    out = _sharded(want * 3, mesh)
    r = Values()(Trial({"k": 3}, output=out, expected=want, mesh=mesh))
    (device_map,) = r.evidence
    assert device_map.where == "every element is wrong (16 of 16)"
    assert "the factor is k = 3" in device_map.measured[0]
    # before: "The result is the right one times 3: a stray scale factor." — now the
    # relation, which names the example's own quantity
    assert "exactly 3× the expected one" in r.hint and "stray scale factor" not in r.hint
    bare = Values()(Trial({}, output=out, expected=want, mesh=mesh))  # 3 is nothing here
    assert "none of the example's own sizes" in bare.hint
    right = Values()(Trial({}, output=_sharded(want, mesh), expected=want, mesh=mesh))
    assert right.passed and right.evidence[0].where is None and right.evidence[0].measured is None
    del jax


def test_a_family_is_asked_about_the_next_wrong_device_where_the_first_says_nothing():
    """A family that tells only device 2's block (device 0's, say, holds one wrong token:
    too little to tell) is still said, of device 2; where it tells none of the first
    four wrong devices, nothing of it is said."""
    from grader.checks import values as values_module
    from grader.measure import devices

    class Only:
        def __init__(self, coord):
            self.coord = coord

        def said(self, coord, got, close, what):
            return f"{what} is made so" if coord == self.coord else None

    mesh = devices.make_mesh((4,), ("x",))
    want = np.arange(1.0, 17.0, dtype=np.float32)
    out = _sharded(want + np.sin(np.arange(16.0)).astype(np.float32), mesh)
    r = Values(families=lambda t: [Only((2,))])(Trial({}, output=out, expected=want, mesh=mesh))
    assert r.hint.startswith("Device (2,)'s block is made so."), r.hint
    assert values_module.FAMILY_DEVICES == 4
    none = Values(families=lambda t: [Only((5,))])(Trial({}, output=out, expected=want, mesh=mesh))
    assert "is made so" not in (none.hint or "")


def test_a_factor_equal_to_several_of_the_examples_quantities_names_them_all():
    """One example cannot tell 1/(rows = 2) from ½ (a value not doubled, on an example
    with rows = 2): both are named, the first leading; a factor only one quantity equals
    names that one alone (issue 45 §5)."""
    from grader.measure import devices

    mesh = devices.make_mesh((3,), ("x",))
    want = np.arange(1.0, 13.0, dtype=np.float32)
    half = Values()(Trial({"rows": 2}, output=_sharded(want / 2, mesh), expected=want, mesh=mesh))
    assert "the factor is 1/(rows = 2) (or ½: equal on this example)" in half.hint, half.hint
    five = {"rows": 2, "k": 5}
    alone = Values()(Trial(five, output=_sharded(want * 5, mesh), expected=want, mesh=mesh))
    assert "the factor is k = 5 —" in alone.hint and "(or" not in alone.hint, alone.hint
    # both ways a named factor gets in are read, never one of them as the cause
    assert "divided by it once too often, or a product with it left out" in half.hint
    assert "multiplied by it once too often, or a division by it left out" in alone.hint


def test_the_report_says_a_relation_once_where_the_hint_is_that_relation():
    """The terminal report's "measured" line is left out where the hint repeats it whole
    (it was printed twice); one the hint does not hold is still drawn."""
    from grader.measure import devices
    from grader.report import draw
    from grader.results import ExerciseResult, Status

    mesh = devices.make_mesh((3,), ("x",))
    want = np.arange(1.0, 13.0, dtype=np.float32)
    r = Values()(Trial({"k": 5}, output=_sharded(want * 5, mesh), expected=want, mesh=mesh))
    (device_map,) = r.evidence
    said = device_map.measured[0]

    def drawn(hint: str) -> str:
        from rich.console import Console

        e = ExerciseResult(lesson=1, exercise="f", status=Status.FAILED, hint=hint)
        console = Console(width=400, record=True, file=open(os.devnull, "w"))  # noqa: SIM115
        for part in draw(device_map, e):
            console.print(part)
        return console.export_text()

    assert said.lower() in r.hint.lower()
    assert "measured" not in drawn(r.hint)
    assert f"measured  {said}" in drawn("Something else.")


def test_a_pytree_failure_says_which_leaves_are_right():
    import jax

    from grader.checks.trees import PerLeaf
    from grader.measure import devices

    mesh = devices.make_mesh((2,), ("x",))
    m, v = np.arange(1.0, 9.0, dtype=np.float32), np.arange(1.0, 9.0, dtype=np.float32) ** 2
    put = lambda a: _sharded(a.astype(np.float32), mesh)  # noqa: E731
    out = {"m": put(v), "step": put(np.ones(8)), "v": put(m)}
    want = {"m": m, "step": np.ones(8, np.float32), "v": v}
    r = PerLeaf(inner=Values())(Trial({}, output=out, expected=want, mesh=mesh))
    assert "leaves wrong: ['m'], ['v']; right: ['step']" in r.message
    assert "your ['m'] equals the expected leaf ['v']" in r.evidence[1].measured[0]
    assert any("['v']: your ['v'] equals the expected leaf ['m']" in getattr(e, "text", "")
               for e in r.evidence)  # fmt: skip
    del jax


# ------------------------------------------------------------ own wrong programs, whole


@pytest.mark.parametrize("mistake", OWN, ids=lambda m: m.id)
def test_own_wrong_program_gets_measured_feedback(mistake):
    """Wrong programs of kinds nobody catalogued (tests/own_wrong.py): each fails, and
    what it is told (message, hints, where and measured) says the words it must."""
    (er,) = grades.mistake(mistake, mode="here").exercises
    assert er.status.value == mistake.status, (er.status, er.error)
    failed = {c.name: c for c in er.checks if not c.passed}
    check = failed[mistake.check]
    told = [check.message, check.hint or "", er.hint or ""]
    for e in check.evidence:
        told += [getattr(e, "where", None) or "", *(getattr(e, "measured", None) or []),
                 getattr(e, "text", "")]  # fmt: skip
    text = " ".join(told)
    for words in mistake.says:
        assert words in text, f"{words!r} not in: {text}"
    for words in mistake.never:  # a cause the measurement rules out
        assert words not in text, f"{words!r} in: {text}"


# ------------------------------------------------------------ §1: what an example is for


def test_a_fixed_example_says_its_purpose_and_a_drawn_one_its_features():
    from grader.engine import load_spec
    from grader.spec import FULL, about

    spec = load_spec("l15_optimizer").exercise("clip_by_global_norm")
    fixed = spec.explicit(FULL)
    between = next(ex for ex in fixed if ex["case"] == "between")
    assert about(spec, between, fixed) == (
        "a fixed example: max_norm between every device's own norm and the whole norm: "
        "the whole gradient is clipped, by max_norm over the whole norm, though no "
        "device's own slice is longer than max_norm"
    )
    drawn = {"n": 3, "chunk": 8, "case": "clip", "seed": 4242}
    assert (
        about(spec, drawn, fixed) == "a drawn example: a mesh of 3 devices, chunk = 8, case = clip"
    )
    plain = dataclasses.replace(load_spec("l03_cost_model").exercises[0], purpose=None)
    ex = plain.explicit(FULL)[0]  # no purposes declared: still says fixed
    assert about(plain, ex, plain.explicit(FULL)) == "a fixed example (one every grade runs)"


def test_what_sets_the_failing_example_apart_from_the_passed_ones_is_said():
    """A number every passed example had a power of two, even, odd, above 1 or 1, and a
    flag or name they all shared, where the failing example's differs; nothing where
    fewer than two passed, where the passed numbers were one value (other than 1), or
    where the failing example shares what they had."""
    from grader.spec import contrast

    assert contrast([{"n": 2, "seed": 1}, {"n": 4, "seed": 2}, {"n": 8, "seed": 3}],
                    {"n": 6, "seed": 4}) == (
        "The 3 examples before this one passed, all with n a power of two (2, 4, 8); this "
        "is the first with n = 6."
    )  # fmt: skip
    assert contrast([{"n": 3, "rows": 1}, {"n": 5, "rows": 1}], {"n": 4, "rows": 2}) == (
        "The 2 examples before this one passed, all with n odd (3, 5) and rows = 1; this is "
        "the first with n = 4 and rows = 2."
    )
    assert contrast([{"n": 2}, {"n": 6}], {"n": 3}).endswith("all with n even (2, 6); this "
                                                             "is the first with n = 3.")  # fmt: skip
    assert "all with n above 1 (2, 3)" in contrast([{"n": 2}, {"n": 3}], {"n": 1})
    flags = [{"causal": True, "dtype": "float32"}, {"causal": True, "dtype": "float32"}]
    assert contrast(flags, {"causal": False, "dtype": "float32"}).endswith(
        "all with causal = True; this is the first with causal = False.")  # fmt: skip
    assert contrast([{"n": 2}], {"n": 3}) is None  # one passed: nothing to contrast
    assert contrast([{"n": 4}, {"n": 4}], {"n": 3}) is None  # one value: no property
    assert contrast([{"n": 3}, {"n": 7}], {"n": 5}) is None  # odd too
    assert contrast([{"n": 2}, {"n": 3}], {"n": 6}) is None  # in no property apart
    assert contrast([{"dtype": "float32"}, {"dtype": "bfloat16"}], {"dtype": "float16"}) is None


def _fixed_without_purpose(lesson) -> list[str]:
    """``lesson``'s fixed examples (under the full context) that say no purpose."""
    from grader.engine import load_spec
    from grader.spec import FULL, about

    missing = []
    for spec in load_spec(lesson.module).exercises:
        fixed = spec.explicit(FULL) if callable(spec.explicit) else list(spec.explicit)
        for ex in fixed:
            if about(spec, ex, fixed).startswith("a fixed example (one every grade runs)"):
                missing.append(f"{lesson.module}.{spec.name}: {ex}")
    return missing


@pytest.mark.parametrize("number", range(1, 17))
def test_every_fixed_example_says_what_it_is_for(number):
    """Issue 45 §1: a check that fails on a fixed example shows that example's sentence —
    what it holds and what right code does there, never a mistake the reader may not have
    made (it is shown beside every failure on it)."""
    from course import registry

    lesson = next(x for x in registry.load().lessons if x.number == number)
    assert not _fixed_without_purpose(lesson)


def test_the_report_shows_what_the_failing_example_is_for():
    import io

    from rich.console import Console

    from grader.report import ExercisePanel
    from grader.results import ExerciseResult, Status

    e = ExerciseResult(15, "clip_by_global_norm", Status.FAILED, example="n=4 case=between",
                       about="a fixed example: max_norm between every device's own norm")  # fmt: skip
    console = Console(file=io.StringIO(), width=120)
    console.print(ExercisePanel(e))
    text = console.file.getvalue()
    assert "for      a fixed example: max_norm between every device's own norm" in text


def test_the_whole_cache_hint_names_only_the_opcodes_the_step_holds():
    """Lesson 16 (issue 45 §5): a step whose whole-cache write is a select (a jnp.where)
    is not told about a concatenate it does not have; one with a concatenate is."""
    from grader.lessons.l16_serving.serve import _whole_write_hint

    where = _whole_write_hint({"select"})
    assert "jnp.where over the whole cache" in where and "concatenate" not in where
    joined = _whole_write_hint({"concatenate"})
    assert "a concatenate" in joined and "jnp.where" not in joined
    copied = _whole_write_hint({"copy"})
    assert "reading the cache as it came" in copied and "concatenate" not in copied


def test_a_strided_reading_of_a_replicated_result_is_not_said():
    """Every device's block the same (an all-reduce's result): a device holding one
    chunk in every slot equals the strided rearrangement by coincidence — not said; the
    same rearrangement of distinct blocks is (both ways)."""
    rng = np.random.default_rng(64)
    whole = rng.normal(size=(4, 3))
    want = np.tile(whole, (4, 1))  # 4 devices, each the whole 4-row sum
    tiled = np.concatenate([np.tile(whole[d], (4, 1)) for d in range(4)])  # chunk d, 4 times
    assert relate.rearranged(tiled, want, _close, split=[(0, 4)]) is None
    distinct = rng.normal(size=(16, 3))
    strided = distinct.reshape(4, 4, 3).swapaxes(0, 1).reshape(16, 3)
    said = relate.rearranged(strided, distinct, _close, split=[(0, 4)])
    assert said and said.startswith("strided where the blocks are contiguous"), said


def test_a_count_over_itself_one_less_is_a_named_factor_both_ways():
    """n/(n − 1) (a sum of n terms divided by the n − 1 steps a loop ran) and (n − 1)/n (a
    ring's factor where the formula has none) are named, with their reading; a count of 2
    adds nothing (its ratio is 2 or ½, named already), and 5/4 is no factor of n = 4
    (both ways)."""
    known = relate.quantities({"micro": 4, "k": 2})
    want = np.linspace(1.0, 2.0, 12)
    (more,) = _rel(want * 4 / 3, want, known=known)
    assert "the factor is micro/(micro − 1) = 4/3" in more, more
    assert "divided by micro − 1 where micro belongs" in more, more
    (less,) = _rel(want * 3 / 4, want, known=known)
    assert "the factor is (micro − 1)/micro = 3/4" in less, less
    assert "divided by micro where micro − 1 belongs" in less, less
    assert not any("k/(k − 1)" in q.name or "(k − 1)/k" in q.name for q in known)
    (other,) = _rel(want * 5 / 4, want, known=known)
    assert "none of the example's own sizes" in other, other


def test_a_pytree_whose_first_wrong_leaf_measures_nothing_takes_anothers_relation():
    """The first wrong leaf (a scrambled one) measures nothing; the second is exactly 2×
    its expected value: the hint is the second's; with no leaf measuring anything there
    is none (both ways)."""
    from grader.checks.trees import PerLeaf
    from grader.measure import devices

    mesh = devices.make_mesh((3,), ("x",))
    rng = np.random.default_rng(65)
    a, b = (rng.normal(size=(6, 4)).astype(np.float32) for _ in range(2))

    def put(x):
        return _sharded(x.astype(np.float32), mesh)

    check = PerLeaf(inner=Values())
    said = check(Trial({}, output={"a": put(rng.normal(size=(6, 4))), "b": put(2 * b)},
                       expected={"a": a, "b": b}, mesh=mesh))  # fmt: skip
    assert not said.passed and said.message.startswith("['a']"), said.message
    assert said.hint and "['b'] is exactly 2× the expected one" in said.hint, said.hint
    none = check(Trial({}, output={"a": put(rng.normal(size=(6, 4))),
                                   "b": put(rng.normal(size=(6, 4)))},
                       expected={"a": a, "b": b}, mesh=mesh))  # fmt: skip
    assert not none.passed and not none.hint, none.hint
