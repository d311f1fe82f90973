"""Lesson 15: the published byte tables from the formulas, other correct programs pass,
known-mistake diagnoses go to their own mistake only, and the course's order puts
lesson 15 after lesson 7."""

from __future__ import annotations

import io
from dataclasses import replace
from types import SimpleNamespace

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from rich.console import Console

from course import registry, scoring
from course.commands.common import make_app
from course.commands.grade import current_lesson, next_lesson, parse_target
from grader import engine
from grader.lessons.l15_optimizer import byte_table as bt
from grader.lessons.l15_optimizer import reference, spec
from grader.results import ExerciseResult, LessonResult, Status
from grader.spec import FULL
from tests.mistakes import l15 as catalogue
from tests.test_mistakes import write_variant

MODULE = "l15_optimizer"
GB = 1e9

# ------------------------------------------------------------------ the byte table


def test_the_zero_papers_example_from_the_formula():
    """7.5B parameters, 64 devices, fp16 params and grads with K = 12: 120 → 31.4 → 16.6 → 1.9 GB."""
    psi = 7.5e9
    per_stage = [round(bt.per_device(bt.ZERO_PAPER, s, 64) * psi / GB, 1) for s in range(4)]
    assert per_stage == [120.0, 31.4, 16.6, 1.9]


@pytest.mark.parametrize(
    "mix,whole,kept,split",
    [(bt.MEGATRON_FP16, 20, 4, 16), (bt.MEGATRON_BF16, 18, 6, 12), (bt.MEGATRON_FP32, 16, 8, 8)],
    ids=["fp16", "bf16-fp32-grads", "fp32"],
)
def test_megatrons_distributed_optimizer_table(mix, whole, kept, split):
    """Megatron Core's table (20 → 4 + 16/d, 18 → 6 + 12/d, 16 → 8 + 8/d) is ZeRO-1 of its mixes."""
    assert mix.total == whole == bt.per_device(mix, 0, 1)
    for d in (2, 8, 64):
        assert bt.per_device(mix, 1, d) == kept + split / d


def test_the_lessons_own_mix_and_the_state_it_keeps():
    assert (
        bt.THIS_LESSON.total == 18 and bt.THIS_LESSON.optimizer == 12 and bt.THIS_LESSON.grads == 4
    )
    assert bt.adam_state_bytes(4 * 128, 4) == 12 * 128
    with pytest.raises(ValueError, match="stages 0 to 3"):
        bt.per_device(bt.THIS_LESSON, 4, 8)


# ------------------------------------------------------------------ other correct programs

ZERO2_PYTHON_LOOP = """
def zero2_step(params, grads, state, hp, mesh):
    def body(p, g, s):
        acc = None
        for i in range(g.shape[1]):  # unrolled: M reduce-scatters all the same
            part = lax.psum_scatter(g[0, i], AXIS, tiled=True).astype(jnp.float32)
            acc = part if acc is None else acc + part
        shard = acc / (lax.axis_size(AXIS) * g.shape[1])
        master, m, v = _adamw(s["master"], s["m"], s["v"], s["step"], shard, hp)
        return _finish(master, m, v, s["step"], p)

    return jax.shard_map(
        body, mesh=mesh, in_specs=(P(), P(AXIS), STATE), out_specs=(P(), STATE)
    )(params, grads, state)
"""

SCALED_WITH_COND_AND_PMAX = """
def loss_scaled_step(state, grads, scaler, hp, mesh):
    def body(s, g, sc):
        bad = lax.pmax(jnp.any(~jnp.isfinite(g)).astype(jnp.float32), AXIS)

        def skipped(_):
            return s, {"scale": sc["scale"] * 0.5, "good": jnp.zeros_like(sc["good"])}

        def taken(_):
            m = hp["momentum"] * s["m"] + g.astype(jnp.float32) / sc["scale"]
            good = sc["good"] + 1
            grow = good >= hp["growth_interval"]
            return {"master": s["master"] - hp["lr"] * m, "m": m}, {
                "scale": jnp.where(grow, 2 * sc["scale"], sc["scale"]),
                "good": jnp.where(grow, 0, good),
            }

        return lax.cond(bad > 0, skipped, taken, None)

    spec = {"master": P(AXIS), "m": P(AXIS)}
    scal = {"scale": P(), "good": P()}
    return jax.shard_map(
        body, mesh=mesh, in_specs=(spec, P(AXIS), scal), out_specs=(spec, scal)
    )(state, grads, scaler)
"""


def _variant(root, tmp_path, code: str):
    text = (root / "solutions" / f"{MODULE}.py").read_text()
    (tmp_path / f"{MODULE}.py").write_text(text + "\nimport jax\n" + code)
    return tmp_path


@pytest.mark.parametrize(
    "code,exercises",
    [(ZERO2_PYTHON_LOOP, ["zero2_step"]), (SCALED_WITH_COND_AND_PMAX, ["loss_scaled_step"])],
    ids=["zero2-python-loop", "scaled-cond-pmax"],
)
def test_other_correct_programs_pass(root, tmp_path, code, exercises):
    directory = _variant(root, tmp_path, code)
    result = engine.grade_lesson(15, MODULE, directory, only=exercises, max_examples=0)
    for e in result.exercises:
        assert e.status == Status.PASSED, [c.to_dict() for c in e.checks if not c.passed]


# ------------------------------------------------------------------ diagnoses both ways

ADAMW_WORDS = {
    "l15-adamw-bias-correction-one-ahead": spec.ADAMW_WORDS["bias-t+2"],
    "l15-adamw-no-bias-correction": spec.ADAMW_WORDS["no-bias"],
    "l15-adamw-decay-inside-adam": spec.ADAMW_WORDS["l2"],
    "l15-adamw-decay-not-scaled-by-lr": spec.ADAMW_WORDS["decay-no-lr"],
    "l15-adamw-eps-inside-the-square-root": spec.ADAMW_WORDS["eps-in-sqrt"],
    "l15-adamw-returns-the-params-it-was-given": spec.STALE_PARAMS,
    "l15-adamw-master-never-updated": "The master weights are never updated",
    "l15-adamw-step-not-advanced": spec.STEP_NOT_ADVANCED,
}


@pytest.mark.parametrize("mistake_id", sorted(ADAMW_WORDS))
def test_an_adamw_mistake_gets_its_own_diagnosis_only(root, tmp_path, mistake_id):
    """Each AdamW variant's words go to that mistake, never to the nearest others."""
    (mistake,) = [m for m in catalogue.MISTAKES if m.id == mistake_id]
    directory = write_variant(root, tmp_path, mistake)
    result = engine.grade_lesson(15, MODULE, directory, only=["adamw_step"], max_examples=0)
    (er,) = result.exercises
    said = " ".join(f"{c.message} {c.hint}" for c in er.checks if not c.passed)
    assert ADAMW_WORDS[mistake_id] in said
    for other, words in ADAMW_WORDS.items():
        if other != mistake_id:
            assert words not in said, other


VALUE_WORDS = {
    "zero1_step": {
        "l15-zero1-sum-not-mean": "you summed them",
        None: ("you divided by M only", "you divided by N only", *spec.ADAMW_WORDS.values()),
    },
    "clip_by_global_norm": {
        "l15-clip-by-local-norm": "clipped each device's slice by its own norm",
        "l15-clip-psum-of-norms": "norms do not add",
        "l15-clip-always-rescales": "although its norm is below it",
    },
    "loss_scaled_step": {
        "l15-scaled-loss-scale-not-undone": "loss scale is not undone",
        "l15-scaled-unscaled-in-fp16": "unscaled in float16",
        "l15-scaled-skip-still-advances-momentum": "skipped step still advanced the momentum",
        "l15-scaled-skip-on-inf-only": "a nan gradient was applied",
        "l15-scaled-skip-on-nan-only": "an overflowed gradient was applied",
        "l15-scaled-scale-grown-a-step-early": "one clean step early",
        "l15-scaled-good-not-advanced": "good is not advanced",
    },
    "fp8_all_gather": {
        "l15-fp8-amax-summed": "added the devices' amaxes",
        "l15-fp8-scale-not-undone": "The scale is not undone",
        "l15-fp8-amax-of-own-slice-check-vma-off": "scaled by its own slice's amax",
    },
}
"""Per exercise, the words each value mistake is named by (``None``: words of mistakes
not catalogued, which no catalogued one may get either)."""


@pytest.mark.parametrize(
    "exercise,mistake_id",
    [(e, m) for e, words in VALUE_WORDS.items() for m in words if m is not None],
)
def test_a_value_mistake_gets_its_own_diagnosis_only(root, tmp_path, exercise, mistake_id):
    """Clipping, loss scaling, fp8 and ZeRO's mean: each catalogued wrong value is named by
    its own words and by none of the nearest mistakes' (the same exercise's)."""
    (mistake,) = [m for m in catalogue.MISTAKES if m.id == mistake_id]
    directory = write_variant(root, tmp_path, mistake)
    result = engine.grade_lesson(15, MODULE, directory, only=[exercise], max_examples=0)
    (er,) = result.exercises
    said = " ".join(f"{c.message} {c.hint}" for c in er.checks if not c.passed) + f" {er.hint}"
    assert VALUE_WORDS[exercise][mistake_id] in said
    for other, words in VALUE_WORDS[exercise].items():
        for w in (words,) if isinstance(words, str) else words:
            if other != mistake_id:
                assert w not in said, (other, w)


@pytest.mark.parametrize("kind", ["adamw", "zero1", "zero2", "clip", "scaled", "fp8"])
def test_the_right_answer_matches_no_known_mistake(root, kind):
    """No known mistake's result equals the right one on the explicit examples: a hint
    never names a mistake that the correct program would also match."""
    import importlib
    import sys

    from grader.runtime import InProcess

    sys.path.insert(0, str(root / "solutions"))
    try:
        fn = getattr(importlib.import_module(MODULE), spec.fn_name(kind))
    finally:
        sys.path.remove(str(root / "solutions"))
    exercise = spec.SPEC.exercise(spec.fn_name(kind))
    for ex in exercise.explicit(FULL):
        trial = exercise.run(InProcess(ex), fn, ex)
        flat = jax.tree_util.tree_flatten_with_path(trial.expected)[0]
        assert flat
        for path, want in flat:
            where = jax.tree_util.keystr(path)
            extra = {**trial.extra, **spec._leaf_extra(trial, where)}
            leaf = replace(trial, expected=want, extra=extra)
            assert spec._known_mistake(leaf, np.asarray(want, np.float64)) is None, (ex, where)


def test_the_report_sets_zero2_beside_the_other_stages(root):
    """The reference's zero2 report on its largest example (N = 6, Ψ = 768, M = 3): bytes
    kept by stage in the lesson's mix, bf16 params (2 B), a float32 gradient buffer (4 B),
    float32 master and moments (12 B): 18·Ψ, (6 + 12/N)·Ψ, (2 + 16/N)·Ψ, 18·Ψ/N; elements sent per step in
    units of (N−1)/N·Ψ = 640: 2 for none and ZeRO-1 (one reduction after the micro-batches),
    M + 1 for ZeRO-2, 3·M for ZeRO-3 (lesson 7's: each micro-batch gathers the params for
    its forward and its backward); then what the program ran, equal to ZeRO-2's row."""
    result = engine.grade_lesson(
        15, MODULE, root / "solutions", only=["zero2_step"], max_examples=0
    )
    (e,) = result.exercises
    note, table = e.explanation
    ex = max(spec._zero_examples(FULL), key=lambda x: x["n"])
    assert (ex["n"], spec.psi(ex), ex["micro"]) == (6, 768, 3)
    assert "Ψ = 768" in note.text and "N = 6" in note.text and "M = 3" in note.text
    psi, n, unit = 768, 6, 5 * 768 // 6
    kept = [18 * psi, 6 * psi + 12 * psi // n, 2 * psi + 16 * psi // n, 18 * psi // n]
    assert [r[1] for r in table.rows[:4]] == [f"{b:,}" for b in kept]
    assert [r[3] for r in table.rows[:4]] == [f"{k * unit:,}" for k in (2, 2, 4, 9)]
    assert [r[2] for r in table.rows[2:4]] == [
        "3 reduce-scatters + all-gather", "6 all-gathers + 3 reduce-scatters",
    ]  # fmt: skip
    assert table.rows[4][0] == "yours (ZeRO-2), M = 3"
    assert table.rows[4][2] == "3 reduce-scatters + 1 all-gather"
    assert table.rows[4][3] == table.rows[2][3] == f"{4 * 640:,}"


def test_one_micro_batch_zero3_sends_half_as_much_again_as_zero2():
    ex = {"n": 4, "chunk": 128, "micro": 1, "step": 1, "seed": 0}
    rows = spec.stage_rows(ex, (384, 384), (1, 1))
    assert [r[3] for r in rows] == ["768", "768", "768", "1,152", "768"]
    assert rows[3][2] == "2 all-gathers + 1 reduce-scatter"


def _solution(root, module: str):
    import importlib
    import sys

    sys.path.insert(0, str(root / "solutions"))
    try:
        return importlib.import_module(module)
    finally:
        sys.path.remove(str(root / "solutions"))


def test_zero3_sends_half_as_much_again_as_zero2_measured(root):
    """The text's section 4, measured: lesson 7's reference train step (ZeRO-3, each layer
    re-gathered in the backward) against this lesson's ZeRO-2 step on as many parameters,
    N = 4, L = 12, D = 32, F = 64 (Ψ = 49,152): 3 units of (N−1)/N·Ψ against 2."""
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P

    from grader.measure import devices, hlo

    n, layers, d, f = 4, 12, 32, 64
    size = 2 * layers * d * f
    mesh = devices.make_mesh((n,), ("data",))

    def put(a, s):
        return jax.device_put(a, NamedSharding(mesh, s))

    l07, l15 = _solution(root, "l07_fsdp"), _solution(root, MODULE)
    params = {
        "w_in": put(np.zeros((layers, d, f), np.float32), P(None, "data", None)),
        "w_out": put(np.zeros((layers, f, d), np.float32), P(None, None, "data")),
    }
    x = put(np.zeros((2 * n, d), np.float32), P("data", None))
    step = jax.jit(lambda p, a, b: l07.fsdp_train_step(p, a, b, mesh, 0.1))
    zero3 = hlo.summarize(step.lower(params, x, x).compile().as_text(), n)
    state = {k: put(np.zeros(size, np.float32), P("data")) for k in ("master", "m", "v")}
    state["step"] = put(np.int32(1), P())
    args = (put(jnp.zeros(size, jnp.bfloat16), P()),
            put(jnp.zeros((n, 1, size), jnp.bfloat16), P("data")), state)  # fmt: skip
    zero2_step = jax.jit(lambda p, g, s: l15.zero2_step(p, g, s, dict(reference.HP), mesh))
    zero2 = hlo.summarize(zero2_step.lower(*args).compile().as_text(), n)
    unit = (n - 1) * size // n  # elements
    assert unit == 36_864
    assert zero3.bytes("all-gather", 1) == 2 * unit and zero3.bytes("reduce-scatter", 1) == unit
    assert zero3.count("all-gather") == 2 * 2 * layers  # two weights, forward and backward
    assert zero2.bytes("all-gather", 1) == unit and zero2.bytes("reduce-scatter", 1) == unit
    assert zero3.bytes("all-gather") == 294_912 and zero3.bytes("reduce-scatter") == 147_456


def test_wire_bytes_use_the_width_the_program_sends():
    ex = {"n": 4, "chunk": 128, "micro": 2, "step": 1, "seed": 0}
    assert spec.psi(ex) == 512 and spec.ring_elements(ex) == 384


# ------------------------------------------------------------------ the course's order


COURSE = registry.load()


def test_lesson_15_comes_after_lesson_7_and_before_8():
    numbers = [x.number for x in COURSE.lessons]
    assert numbers.index(15) == numbers.index(7) + 1 and numbers.index(8) == numbers.index(15) + 1
    assert COURSE.after(7).number == 15 and COURSE.after(15).number == 8
    assert COURSE.after(COURSE.lessons[-1].number) is None


def _passed(number: int) -> scoring.Verdict:
    lesson = COURSE.lesson(number)
    result = LessonResult(number, "/x", exercises=tuple(
        ExerciseResult(number, e.name, Status.PASSED, examples_run=1) for e in lesson.exercises
    ))  # fmt: skip
    return scoring.verdict([lesson], [result])


def test_what_next_follows_the_registry_not_the_numbers():
    assert str(next_lesson(COURSE, _passed(7))).startswith("Next: lesson 15 · ")
    assert str(next_lesson(COURSE, _passed(15))).startswith("Next: lesson 8 · ")


def test_grade_all_and_the_current_lesson_follow_the_registry(tmp_path, monkeypatch):
    home = str(tmp_path / "home")  # handed in, as course's --home (COURSE_HOME) is
    app = replace(make_app(home, None), console=Console(file=io.StringIO(), width=100))
    order = [x.number for x in parse_target(app, None, True).lessons]
    assert order == [x.number for x in COURSE.lessons] and order.index(15) == order.index(7) + 1
    # lessons 1 to 7 passed (17 among them: it comes after 5), and 8 out of turn: the
    # current lesson, which `course grade`, `watch` and the notebook take by default, is
    # 15, not 9
    done = [1, 2, 3, 4, 5, 17, 6, 7, 8]
    passed = {
        (n, e.name): SimpleNamespace(status="passed")
        for n in done for e in COURSE.lesson(n).exercises
    }  # fmt: skip
    monkeypatch.setattr(type(app), "states", lambda self: passed)
    assert current_lesson(app).number == 15
    assert parse_target(app, None, False).lessons[0].number == 15


E5M2 = (
    (
        "scale = jnp.float32(jnp.finfo(jnp.float8_e4m3fn).max) / amax",
        "scale = jnp.float32(jnp.finfo(jnp.float8_e5m2).max) / amax",
    ),
    (
        "q = (blk * scale).astype(jnp.float8_e4m3fn)  # [Ψ/N], one byte each",
        "q = (blk * scale).astype(jnp.float8_e5m2)  # [Ψ/N], one byte each",
    ),
)


def test_a_float8_of_either_kind_is_counted_one_byte_an_element(root, tmp_path):
    """Issue 47: an e5m2 all-gather of 192 elements was reported as 768 bytes per device
    (4 bytes an element: the compiled program's widened width, under a float8 label),
    where the e4m3 one counts 192. Both are one byte an element; the e5m2 values are
    still wrong (2 mantissa bits where the docstring asks e4m3's 3)."""
    from tests.mistakes import Mistake

    wrong = Mistake(id="e5m2", module=MODULE, exercise="fp8_all_gather", status="failed",
                    check="values", says=(), patch=E5M2)  # fmt: skip
    directory = write_variant(root, tmp_path, wrong)
    result = engine.grade_lesson(15, MODULE, directory, only=["fp8_all_gather"], max_examples=0)
    (er,) = result.exercises
    checks = {c.name: c for c in er.checks}
    assert er.status == Status.FAILED and not checks["values"].passed
    sent = checks["all-gather bytes"]
    assert sent.passed and "192 bytes per device in float8_e5m2" in sent.message, sent.message
    assert spec.width("float8_e5m2") == spec.width("float8_e4m3fn") == 1
    assert spec.width("bfloat16") == 2 and spec.width("float32") == 4
