"""Lesson 7's grading spec: other correct FSDP programs pass; the memory chart's figures."""

from __future__ import annotations

import pytest

from grader.evidence import MemoryBars
from grader.lessons.l07_fsdp import spec as spec
from grader.results import Status
from grader.sandbox import backends
from tests import grades

MODULE = "l07_fsdp"

FORI_LOOP = """
def _local_forward(params, x):
    gathered_layer = jax.checkpoint(_gathered_layer)
    step = lambda i, h: gathered_layer(h, params["w_in"][i], params["w_out"][i])
    return lax.fori_loop(0, params["w_in"].shape[0], step, x)
"""

GRAD_OUTSIDE_SHARD_MAP = """
def _global_loss(params, x, y, mesh):
    err = fsdp_forward(params, x, mesh) - y
    return 0.5 * jnp.mean(jnp.sum(err * err, axis=-1))

def fsdp_grads(params, x, y, mesh):
    return jax.grad(_global_loss)(params, x, y, mesh)

def fsdp_train_step(params, x, y, mesh, lr):
    value, g = jax.value_and_grad(_global_loss)(params, x, y, mesh)
    return jax.tree.map(lambda w, gw: w - lr * gw, params, g), value
"""


NO_REMAT = """
def _local_forward(params, x):
    step = lambda h, w: (_gathered_layer(h, w["w_in"], w["w_out"]), None)
    return lax.scan(step, x, params)[0]
"""


def _variant(root, tmp_path, code: str):
    text = (root / "solutions" / f"{MODULE}.py").read_text()
    (tmp_path / f"{MODULE}.py").write_text(text + "\n" + code)
    return tmp_path


@pytest.mark.parametrize(
    "code,exercises",
    [
        (FORI_LOOP, ["fsdp_grads"]),  # 0.40·|params| at N = 4: correct, and under the bound
        (GRAD_OUTSIDE_SHARD_MAP, ["fsdp_grads", "fsdp_train_step"]),
    ],
    ids=["fori-loop", "grad-outside-shard-map"],
)
def test_other_correct_programs_pass(root, tmp_path, code, exercises):
    directory = _variant(root, tmp_path, code)
    result = backends.grade_lesson(7, MODULE, directory, only=exercises, max_examples=0)
    for e in result.exercises:
        assert e.status == Status.PASSED, [c.to_dict() for c in e.checks if not c.passed]


def test_memory_bars_of_the_reference(root):
    result = backends.grade_lesson(
        7, MODULE, root / "solutions", only=["fsdp_grads"], max_examples=0
    )
    (e,) = result.exercises
    (bars,) = e.explanation
    assert isinstance(bars, MemoryBars)
    ex = {"n": 4, "layers": 12, "rows": 2, "dblock": 8, "f": 64, "seed": 0}
    assert bars.example == "n=4 layers=12 rows=2 dblock=8 f=64 seed=0"
    total = spec.params_bytes(ex)
    assert [(m.label, m.bytes) for m in bars.marks] == [
        ("|params|", total),
        ("|params|/N", total // 4),
    ]
    assert bars.bound == total // 2
    held = {b.label: b.bytes for b in bars.bars}
    x_and_y = 2 * 2 * 32 * 4  # two rows of x and of y, D = 32, float32
    assert held["arguments"] == total // 4 + x_and_y  # the weight shards and the batch rows
    assert held["outputs"] >= total // 4  # the gradient shards
    assert held["temporaries"] < bars.bound


def test_a_failed_memory_check_carries_the_bars(root, tmp_path):
    directory = _variant(root, tmp_path, NO_REMAT)
    result = backends.grade_lesson(7, MODULE, directory, only=["fsdp_grads"], max_examples=0)
    (e,) = result.exercises
    (memory,) = [c for c in e.checks if c.name == "memory"]
    (bars,) = memory.evidence
    assert not memory.passed and isinstance(bars, MemoryBars)
    assert {b.label: b.bytes for b in bars.bars}["temporaries"] > bars.bound
    assert e.explanation == ()  # drawn once, with the check


def test_sizes_in_bytes():
    ex = {"n": 3, "layers": 12, "rows": 1, "dblock": 4, "f": 32, "seed": 0}
    assert spec.params_bytes(ex) == 2 * 12 * 12 * 32 * 4
    assert spec.layer_bytes(ex) == 2 * 12 * 32 * 4
    assert spec.ring(ex, spec.params_bytes(ex)) == 2 * spec.params_bytes(ex) // 3


def _graded(mistake_id: str):
    from tests.mistakes import MISTAKES

    m = next(m for m in MISTAKES if m.id == mistake_id)
    (er,) = grades.mistake(m).exercises  # the catalogue's grade of it (tests/grades.py)
    return " ".join(f"{c.message} {c.hint}" for c in er.checks if not c.passed) + f" {er.hint}"


def test_extra_weight_gathers_are_not_blamed_on_the_batch():
    """The batch-gather hint is read from the all-gathers' shapes: weights gathered up front
    (the nearest mistake: extra all-gather bytes too) do not get it."""
    said = _graded("fsdp-forward-gathered-up-front")
    assert "whole batch" not in said and "weights" in said


def test_an_all_reduce_of_shards_is_not_blamed_on_gathered_weights():
    """The collectives check reads the all-reduce's shape: shards get the shards' words, the
    catalogue's all-reduce of gathered gradients keeps its own."""
    said = _graded("fsdp-grads-shards-averaged-again")
    assert "gradient shards" in said and "already gathered" not in said
    said = _graded("fsdp-grads-all-reduced-then-sliced")
    assert "already gathered" in said and "gradient shards (its shape" not in said
