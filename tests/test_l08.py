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
