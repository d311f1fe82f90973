"""Lesson 12's grading spec: the byte formula is what the reference sends, the
divergence bisect names the layer and param, and other correct programs pass."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from grader import engine
from grader.expected import l12_parallel_transformer as grader_side
from grader.lessons.l12_parallel_transformer import spec as spec
from grader.lessons.l12_parallel_transformer import transformer as model
from grader.loader import load_module
from grader.measure import jaxpr
from grader.results import Status
from grader.runtime import InProcess, example_rng
from grader.sandbox import backends
from grader.spec import Trial

MODULE = "l12_parallel_transformer"

PLAIN_CHECKPOINT = ("policy=SAVE_MID)", ")")
"""Remat of the whole block: the backward redoes attention's psum (1.25× the optimum)."""


@pytest.mark.parametrize("mesh", [(4, 2), (2, 3)])
def test_reference_bytes_are_what_the_solution_sends(root, mesh):
    sol = load_module(root / "solutions", MODULE)
    ex = {**spec.explicit_examples(engine.context())[0], "mesh": mesh, "heads": 3 * mesh[1]}
    trial = spec.run_train(InProcess(ex), sol.train_step, ex)
    s = spec.sizes(ex)
    want = grader_side.reference_bytes(s.shapes(), s.data, s.model, spec.ITEMSIZE)
    for kind in spec.KINDS:
        # exact: the report's "reference" column is what the compiled step sends
        assert trial.comms.bytes(kind) == want[kind], (kind, trial.comms.bytes(kind), want[kind])


def test_the_2x3_example_rounds_its_all_reduces_per_op():
    """The lesson text's figures for the 2×3 example (B = 4, S = 4, D = 32, L = 8): the
    compiled reference sends 32 × ⌊2·2·1,024/3⌋ + 4 = 43,684 B of all-reduce (the
    report's "reference" column, measured above); the closed formula gives 43,694."""
    ex = spec.explicit_examples(engine.context())[1]
    s = spec.sizes(ex)
    assert (ex["mesh"], s.batch, s.seq, s.d, s.n_layers) == ((2, 3), 4, 4, 32, 8)
    assert grader_side.reference_bytes(s.shapes(), 2, 3, 4)["all-reduce"] == 43_684
    assert grader_side.megatron(s.shapes(), 2, 3, 4) + 4 == 43_694


def test_bisect_names_the_layer_and_param_whose_gradient_differs():
    import jax

    ex = {"mesh": (1, 1), "layers": 4, "rows": 2, "seq": 4, "dblock": 8, "heads": 2, "dh": 4,
          "fcols": 8, "seed": 3}  # fmt: skip
    _, params, x, y = spec.draw(ex, example_rng(ex))
    new, loss = model.sgd_step(params, x, y, spec.LR, 2)
    wrong = {k: v.astype(np.float32) for k, v in new.items()}
    wrong["wv"][1] += 1e-2 * np.abs(wrong["wv"][1]).max()  # layer 1's wv only
    mesh = jax.make_mesh((1, 1), ("data", "model"), devices=jax.devices()[:1])
    trial = Trial(
        example=ex, mesh=mesh, output=({k: jax.numpy.asarray(v) for k, v in wrong.items()},
                                       jax.numpy.float32(loss)),
        expected=(new, np.float64(loss)),
        extra={"shardings": dict.fromkeys(spec.NAMES), "replicated": None, "before": params, "grads": model.grads(params, x, y, 2)[1], "dtype": "float32"},
        program=jaxpr.Program(Counter(), (), (), Counter({"float32": 1})),
    )  # fmt: skip
    result = spec.Divergence()(trial)
    assert not result.passed
    assert "first differ at layer 1, wv" in result.message
    assert "the loss agrees" in result.message
    table = result.evidence[0]
    assert table.rows[1][spec.NAMES.index("wv") + 1].endswith("✗")
    assert sum(cell.endswith("✗") for row in table.rows for cell in row[1:]) == 1


def test_remat_of_the_whole_block_passes_at_1_25x_the_optimum(root, tmp_path):
    source = (root / "solutions" / f"{MODULE}.py").read_text()
    (tmp_path / f"{MODULE}.py").write_text(source.replace(*PLAIN_CHECKPOINT))
    result = backends.grade_lesson(12, MODULE, tmp_path, only=["train_step"])
    (er,) = result.exercises
    assert er.status == Status.PASSED, [c.to_dict() for c in er.checks if not c.passed]


@pytest.mark.parametrize("isolate", [False, True])
def test_report_shows_the_students_prediction_next_to_the_measured_bytes(root, isolate):
    """The train_step report's "predicted" column holds what the student's own
    predict_step_bytes says for that example (it read "unknown" for everyone while the
    step was graded through a wrapper that hid the module), in the student's process
    too."""
    result = backends.grade_lesson(
        12, MODULE, root / "solutions", only=["train_step"], max_examples=1, isolate=isolate
    )
    (er,) = result.exercises
    assert er.status == Status.PASSED, [c.to_dict() for c in er.checks if not c.passed]
    tables = [e for e in er.explanation if type(e).__name__ == "KindBytes"]
    assert tables
    for table in tables:
        assert all(row.predicted is not None for row in table.rows), table
        # the solution's prediction is its own formula: within 10% of what it sends
        for row in table.rows:
            assert abs(row.predicted - (row.measured or 0)) <= 0.1 * max(row.measured or 0, 64)


def test_h_varying_over_model_is_not_said_for_a_per_device_accumulator():
    """The lesson-12 carry hint needs a carry gaining 'model'; lesson 6's accumulator carry
    gains 'data' and keeps the generic text (which offers pcast of the init first for it)."""
    from grader.checks import vma

    acc = vma.VmaError(vma.CARRY, "", carries=(vma.Carry("scan", "acc", (), ("data",)),))
    assert not spec._h_varies(acc, ValueError())
    h = vma.VmaError(vma.CARRY, "", carries=(vma.Carry("scan", "h", ("data",), ("data", "model")),))
    assert spec._h_varies(h, ValueError())
    said = vma.explain(acc)
    assert "lax.pcast(init, 'data', to='varying')" in said and "would only silence" in said


def test_extra_all_reduce_bytes_are_named_by_what_they_carry():
    """Activation-shaped all-reduces get the pcast/remat advice; a tuple all-reduce of
    weight-shaped gradients (the catalogue's l12-gradients-psummed-over-model) does not."""
    from grader.measure.hlo import Collective, CommSummary

    ex = spec.explicit_examples(engine.context())[0]
    s = spec.sizes(ex)
    b, d = s.batch // s.data, s.d

    def trial(*shapes):
        cs = [
            Collective("all-reduce", f"ar{i}", sh, 400, 100, 2, 8, 4) for i, sh in enumerate(shapes)
        ]
        return Trial(ex, comms=CommSummary(cs))

    act = trial(f"f32[{b},{s.seq},{d}]{{2,1,0}}", f"f32[{b * s.seq},{d}]")
    assert "carry activations" in spec._all_reduce_hint(act)
    grads = trial(f"f32[{b},{s.seq},{d}]", f"(f32[8,{d},4], f32[8,4,{d}])")
    said = spec._all_reduce_hint(grads)
    assert "shaped like weights" in said and "cast h once" not in said


def test_a_prediction_slip_is_named_only_where_it_gives_the_prediction_on_another_mesh_too():
    """Half the all-reduce on model = 2 is what a forward-only count, a missing 2 and the
    activations divided by 'model' all give: on the probe's 8 × 4 mesh the first two give
    ½ again and are named, the third gives ¼ and none is — it is said as 1/'model' on both
    meshes instead; without a probe the old reading stands."""
    from grader.expected import l12_parallel_transformer as F
    from grader.lessons.l12_parallel_transformer import spec as l12

    ex = l12.PREDICT_EXPLICIT[0]  # mesh (4, 2)
    other = l12._probe(ex)
    assert other["mesh"] == (8, 4)

    def ref(e):
        return F.reference_bytes(l12._predict_shapes(e), *e["mesh"], l12.ITEMSIZE)[F.ALL_REDUCE]

    half_both = l12._prediction_hint(F.ALL_REDUCE, ref(ex) // 2, ref(ex), ex,
                                     probe=(other, {F.ALL_REDUCE: ref(other) // 2}))  # fmt: skip
    assert half_both.startswith("One of these: The all-reduce is half"), half_both
    per_model = l12._prediction_hint(F.ALL_REDUCE, ref(ex) // 2, ref(ex), ex,
                                     probe=(other, {F.ALL_REDUCE: ref(other) // 4}))  # fmt: skip
    assert per_model.startswith("Yours is 0.5× the step's, and on a 8×4 mesh 0.25× — on "
                                "both, 1/'model': the known slips that give 0.5× here give "
                                "other values there."), per_model  # fmt: skip
    assert "The all-reduce is half" not in per_model
    assert l12._prediction_hint(F.ALL_REDUCE, ref(ex) // 2, ref(ex), ex).startswith("One of these")


def test_a_local_mean_is_named_alone_only_where_no_other_size_equals_data():
    """Gradients data× too large are the loss averaged over each device's own rows where
    data is no other size of the example; where seq (or dh) equals it too, those are said
    beside it and the local mean only as one way to get the factor (a loss divided by the
    B sequences, not the B·S tokens, gives seq×)."""
    before = {"wq": np.ones((2, 3))}
    base = {"mesh": (4, 2), "layers": 8, "rows": 1, "seq": 5, "dblock": 8, "heads": 6, "dh": 3}
    apart = spec._local_mean(Trial(base, expected=np.zeros((2, 3)),
                                   extra={"param": "wq", "before": before}))  # fmt: skip
    assert apart[0][0].startswith("Every gradient is data = 4 times too large: each device "
                                  "averaged its squared errors")  # fmt: skip
    same = spec._local_mean(Trial({**base, "seq": 4, "dh": 4}, expected=np.zeros((2, 3)),
                                  extra={"param": "wq", "before": before}))  # fmt: skip
    assert same[0][0].startswith("Every gradient is data = 4 times too large (or seq = 4, or "
                                 "dh = 4 times: equal on this example)."), same[0][0]  # fmt: skip
    assert "each device averaged" not in same[0][0]
