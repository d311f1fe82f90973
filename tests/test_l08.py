"""Lesson 8's diagnoses of a collective along the wrong dimension, both ways."""

from __future__ import annotations

from grader.checks import diagnose
from grader.lessons.l08_tensor_parallel import spec


def test_a_scatter_along_the_other_dimension_names_both():
    said = diagnose.split_along((32, 2), (8, 8), 4)
    assert "scattered along dimension 1" in said and "scatter_dimension=0" in said
    assert diagnose.split_along((8, 8), (8, 8), 4) is None  # right
    assert diagnose.split_along((32, 8), (8, 8), 4) is None  # only too long: not this cause
    assert diagnose.split_along((2, 32), (8, 8), 4) == diagnose.split_along((2, 32), (8, 8), 4)
    assert "dimension 0 (it kept" in diagnose.split_along((2, 32), (8, 8), 4)


def test_a_matmul_of_a_gathered_operand_says_which_side():
    err = "dot_general requires contracting dimensions to have the same shape, got ({}) and ({})."
    left = spec._contracting(err.format("32,", "8,"), 4)
    assert "left operand" in left and "axis=0" in left
    right = spec._contracting(err.format("8,", "32,"), 4)
    assert "right operand" in right and "not gathered" in right
    assert spec._contracting(err.format("12,", "8,"), 4) is None  # not a factor of N


def test_blocks_mixed_by_a_reduction_are_told_apart_from_device_0s_copy():
    """diagnose.values: every device holding the mean (or sum) of the right blocks is named
    as a reduction over pieces already each device's own; every device holding device 0's
    right block keeps its own words; right blocks get nothing."""
    import numpy as np

    close = lambda a, b: np.allclose(a, b, atol=1e-6)  # noqa: E731
    right = [np.full((2, 2), float(i)) for i in range(4)]
    mean = [np.mean(right, axis=0)] * 4
    said = diagnose.values(mean, right, close)
    assert "mean of the 4 devices' right blocks" in said and "Drop that reduction" in said
    summed = [np.sum(right, axis=0)] * 4
    assert "lax.psum over" in diagnose.values(summed, right, close)
    copied = [right[0]] * 4
    assert "device 0's result" in diagnose.values(copied, right, close)
    assert diagnose.values(right, right, close) is None
