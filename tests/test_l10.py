"""Lesson 10 (ring attention): the float64 reference, the checks' readings, and
that the examples drawn are ones where the checks can tell."""

from __future__ import annotations

import io

import numpy as np

from grader.lessons.l10_context_parallel import attention
from grader.lessons.l10_context_parallel import spec as spec
from grader.lessons.l10_context_parallel.checks import MergeValues, ring_steps, score_products
from grader.measure import jaxpr
from grader.results import Status
from grader.runtime import example_rng
from grader.sandbox import backends
from grader.spec import Context, draw_examples
from tests import grades
from tests.mistakes import l10 as mistakes
from tests.test_mistakes import write_variant

CTX = Context(n_devices=8, mesh_sizes=(1, 2, 3, 4, 6, 8))


def test_reference_merges_disjoint_key_sets_exactly():
    rng = np.random.default_rng(0)
    q, k, v = (rng.standard_normal((8, 2, 4)) for _ in range(3))
    pos = np.arange(8)
    whole = attention.partial(q, k, v, attention.causal_mask(pos, pos))
    first = attention.partial(q, k[:3], v[:3], attention.causal_mask(pos, pos[:3]))
    rest = attention.partial(q, k[3:], v[3:], attention.causal_mask(pos, pos[3:]))
    o, lse = attention.merge(first, rest)
    assert np.allclose(o, whole[0]) and np.allclose(lse, whole[1])
    assert np.all(np.isneginf(rest[1][:3])) and np.all(rest[0][:3] == 0)  # rows 0–2 see no key
    # softmax weights sum to one: attention to a constant V is that constant
    assert np.allclose(attention.attention(q, k, np.ones_like(v), causal=True), 1.0)


def _merge_trial(got_o, got_lse, inputs):
    from grader.spec import Trial

    o1, lse1, o2, lse2 = (a.astype(np.float64) for a in inputs)
    want = attention.merge((o1, lse1), (o2, lse2))
    import jax.numpy as jnp

    got = tuple(jnp.asarray(a, jnp.float32) for a in (got_o, got_lse))
    trial = Trial(example={}, output=got, expected=want)
    trial.extra.update(lse=(lse1, lse2), o=(o1, o2))
    return MergeValues()(trial)


def test_merge_allows_a_chips_exp_and_log_but_not_a_rounded_or_shortened_lse():
    """A TPU's float32 exp and log left the reference's lse about 1e-4 off (measured on
    one v5e: ``benchmarks/tpu_precision.py``); an lse rounded to bfloat16, or the larger
    lse alone without its log1p term, is off by far more and fails."""
    ex = spec.merge_explicit(CTX)[0]
    inputs = spec.merge_inputs(ex, example_rng(ex))
    o1, lse1, o2, lse2 = (a.astype(np.float64) for a in inputs)
    o, lse = attention.merge((o1, lse1), (o2, lse2))
    finite = np.isfinite(lse)
    wobble = np.where(finite, 1e-4 * np.cos(np.arange(lse.size).reshape(lse.shape)), 0.0)
    chip_lse = lse + wobble  # what the chip returned, as measured: ~1e-4 off
    chip_o = o * (1 + wobble)[..., None]  # weights e^(lse_i - lse) off by as much
    assert _merge_trial(chip_o, chip_lse, inputs).passed
    assert _merge_trial(o, lse, inputs).passed
    bf16 = np.where(finite, lse, 0).astype(np.float32).view(np.uint32) & 0xFFFF0000
    rounded = np.where(finite, bf16.view(np.float32).astype(np.float64), lse)
    alone = np.maximum(lse1, lse2)
    for wrong in (rounded, alone):
        result = _merge_trial(o, wrong, inputs)
        assert not result.passed and "(row, head) pairs wrong" in result.message, result.message


def test_merge_weights_that_do_not_add_up_to_1_are_said_with_their_sums():
    """Partials weighted by e^(lse_i − max(lse1, lse2)), the lse right: each wrong pair's
    o is a·o1 + b·o2 with a + b between 1 and 2, said so beside the merge's sum of 1;
    every o scaled by a factor of its own gets the per-line factors only, where some
    weights cannot be solved (rows 0 and 1 saw keys in one partial only: o1 or o2 is 0
    there); o off by noise gets neither."""
    ex = spec.merge_explicit(CTX)[0]
    inputs = spec.merge_inputs(ex, example_rng(ex))
    o1, lse1, o2, lse2 = (a.astype(np.float64) for a in inputs)
    o, lse = attention.merge((o1, lse1), (o2, lse2))
    top = np.maximum(lse1, lse2)
    with np.errstate(invalid="ignore"):  # −inf − (−inf) where neither saw a key: weight 0
        w1, w2 = (np.nan_to_num(np.exp(x - np.where(np.isneginf(top), 0, top)))[..., None]
                  for x in (lse1, lse2))  # fmt: skip
    r = _merge_trial(w1 * o1 + w2 * o2, lse, inputs)
    assert not r.passed and r.hint.startswith("At each of the "), r.hint
    assert "wrong (row, head) pairs your o is exactly a·o1 + b·o2, with a + b from 1." in r.hint
    assert "e^(lse1 − lse) and e^(lse2 − lse) add up to 1" in r.hint
    rng = np.random.default_rng(63)
    scaled = o * rng.uniform(1.5, 2.0, size=lse.shape)[..., None]
    r = _merge_trial(scaled, lse, inputs)
    assert r.hint.startswith("Your o is, along its last axis, exactly the expected one times "
                             "a factor of each line's own"), r.hint  # fmt: skip
    noisy = o + 1e-2 * rng.normal(size=o.shape) * np.max(np.abs(o))
    r = _merge_trial(noisy, lse, inputs)
    assert not r.passed and "a factor of each line's own" not in (r.hint or "")
    assert "a·o1 + b·o2" not in (r.hint or "")


def test_zigzag_order_gives_device_i_chunks_i_and_2n_minus_1_minus_i():
    order = attention.zigzag_order(16, 4)  # chunks of 2 rows
    assert order.reshape(4, 2, 2)[:, :, 0].tolist() == [[0, 14], [2, 12], [4, 10], [6, 8]]


def test_merge_inputs_hold_rows_that_saw_no_key_and_large_lse():
    o1, lse1, o2, lse2 = spec.merge_inputs(
        spec.merge_explicit(CTX)[0], example_rng(spec.merge_explicit(CTX)[0])
    )
    both = np.isneginf(lse1) & np.isneginf(lse2)
    assert both.any() and (np.isneginf(lse1) & ~np.isneginf(lse2)).any()
    assert np.all(o1[np.isneginf(lse1)] == 0)
    assert np.nanmax(np.abs(np.where(np.isfinite(lse1), lse1, np.nan))) > 88.7  # e^lse overflows


def test_explicit_examples_reach_every_check():
    """Causal at N ≥ 3 (ring direction), float32 and bfloat16, and one example where
    the memory check measures (float32, N ≥ 6, S/N ≤ Dh, ≥ 64 elements per block)."""
    drawn = {"ring": spec.ring_strategy(CTX), "zigzag": spec.zigzag_strategy(CTX)}
    for kind, explicit in (("ring", spec.ring_explicit), ("zigzag", spec.zigzag_explicit)):
        examples = explicit(CTX)
        assert [ex["n"] for ex in examples] == [6, 3]
        examples += draw_examples(drawn[kind], 1, seed=0)
        assert {ex["dtype"] for ex in examples} == {"float32", "bfloat16"}, examples
        assert any(spec.causal_of(ex) and ex["n"] >= 3 for ex in examples)
        measured = [
            ex
            for ex in examples
            if spec.memory_skip(_trial(ex)) is None and ex["n"] >= spec.MEMORY_MIN_N
        ]
        assert measured, examples
    for ex in spec.zigzag_explicit(CTX):  # score products are told apart by Dh
        assert ex["dh"] not in (ex["chunk"], 2 * ex["chunk"])


def _trial(ex):
    from grader.spec import Trial

    return Trial(
        example=ex, extra={"block_elements": spec.rows_per_device(ex) * ex["h"] * ex["dh"]}
    )


def test_ring_picture_marks_fully_masked_blocks_and_the_imbalance():
    plain = ring_steps(n=4, steps=3, shift=1, causal=True, zigzag=False)
    assert plain.held[1] == [3, 0, 1, 2]  # sending to i + 1: block i − s
    assert plain.use[0] == ["diagonal"] * 4
    assert plain.use[3] == ["masked", "masked", "masked", "whole"]
    assert plain.work() == [0.5, 1.5, 2.5, 3.5]  # N − ½ on the last device
    zig = ring_steps(n=4, steps=3, shift=1, causal=True, zigzag=True)
    assert zig.use[1] == ["second query chunk"] + ["first key chunk"] * 3
    assert zig.work() == [2, 2, 2, 2]  # N/2 on every device
    left = ring_steps(n=3, steps=2, shift=-1, causal=False, zigzag=False)
    assert left.held[2] == [2, 0, 1] and left.work() == [3, 3, 3]  # to i − 1: block i + s


def test_ring_picture_is_drawn_with_its_work_row():
    from rich.console import Console, Group

    from grader.report import draw

    item = ring_steps(n=4, steps=3, shift=1, causal=True, zigzag=False, example="n=4")
    console = Console(file=io.StringIO(), width=80, color_system=None)
    console.print(Group(*draw(item)))
    text = console.file.getvalue()
    lines = [line.split() for line in text.splitlines()]
    assert ["1", "KV3", "·", "KV0", "■", "KV1", "■", "KV2", "■"] in lines
    assert ["work", "0.5", "1.5", "2.5", "3.5"] in lines
    assert "· fully masked" in text and "▌" not in text  # the legend names what is drawn


def test_equations_carry_their_loop_lengths():
    import jax
    import jax.numpy as jnp
    from jax import lax

    def f(a):
        def step(i, c):
            return c + jnp.einsum("qd,kd->qk", a, a)

        return lax.fori_loop(0, 5, step, jnp.einsum("qd,kd->qk", a, a))

    closed = jax.make_jaxpr(f)(np.ones((3, 7), np.float32))
    assert sorted(loops for _, loops in jaxpr.equations(closed, "dot_general")) == [(), (5,)]
    assert sorted(score_products(jaxpr.read(closed), dh=7, heads=1)) == [(9, 1), (9, 5)]


def test_all_gather_of_k_and_v_fails_memory_too():
    (mistake,) = [m for m in mistakes.MISTAKES if m.id == "ring-all-gathers-k-and-v"]
    result = grades.mistake(mistake)  # the catalogue's grade of it (tests/grades.py)
    (er,) = result.exercises
    failed = {c.name for c in er.checks if not c.passed}
    assert {"collectives", "memory"} <= failed, failed


def test_stubs_are_not_started(root):
    result = backends.grade_lesson(10, spec.MODULE, root / "exercises")
    assert [e.status for e in result.exercises] == [Status.NOT_STARTED] * 3


def test_k_and_v_may_travel_stacked(root, tmp_path):
    """One permute of jnp.stack([k, v]) per step is the same N − 1 rotations as two."""
    source = (root / "solutions" / f"{spec.MODULE}.py").read_text()
    separate = "step, (_empty(q_blk), (k_blk, v_blk)))"
    assert source.count(separate) == 1
    stacked = source.replace(separate, "step, (_empty(q_blk), jnp.stack([k_blk, v_blk])))")
    (tmp_path / f"{spec.MODULE}.py").write_text(stacked)
    result = backends.grade_lesson(10, spec.MODULE, tmp_path, only=["ring_attention"])
    assert result.exercises[0].status == Status.PASSED, result.exercises[0].checks


def test_flash_attention_form_with_float32_statistics_passes(root, tmp_path):
    """A correct external form (flash attention's online softmax: running max, sum and
    accumulator in float32; q scaled and p cast in the inputs' dtype) passes every check,
    the bfloat16 example's precision check included."""
    source = (root / "solutions" / f"{spec.MODULE}.py").read_text()
    (tmp_path / f"{spec.MODULE}.py").write_text(source + "\n" + mistakes.FLASH)
    result = backends.grade_lesson(10, spec.MODULE, tmp_path, only=["ring_attention"])
    (er,) = result.exercises
    assert er.status == Status.PASSED, [c.to_dict() for c in er.checks]
    (check,) = [c for c in er.checks if c.name == "precision"]
    assert "float32" in check.message


def test_bfloat16_statistics_are_read_from_the_exported_program_too():
    """The worker reads the StableHLO the student's process exported: the same
    diagnosis as the in-process (jaxpr) reading."""
    from tests.test_mistakes import assert_caught

    (mistake,) = [m for m in mistakes.MISTAKES if m.id == "ring-bfloat16-accumulator"]
    assert_caught(mistake, isolate=True)


def test_all_gathered_k_and_v_send_the_ring_s_bytes_but_hold_4612_temporary(root, tmp_path):
    """The lesson text's figures for the first example (N = 6, S/N = 4, H = 2, Dh = 8,
    causal, float32): the ring sends 2,560 B per device with 2,304 B of temporaries; an
    all-gather of K and V sends the same 2,560 B and needs 4,612 B of temporaries."""
    from grader.loader import load_module
    from grader.runtime import InProcess

    ex = spec.ring_explicit(CTX)[0]
    assert ex == {"n": 6, "rows": 4, "h": 2, "dh": 8, "mask": "causal", "dtype": "float32",
                  "seed": 0}  # fmt: skip
    (mistake,) = [m for m in mistakes.MISTAKES if m.id == "ring-all-gathers-k-and-v"]
    gathered = load_module(write_variant(root, tmp_path, mistake), spec.MODULE)
    ring = load_module(root / "solutions", spec.MODULE)
    figures = {}
    for name, mod in (("ring", ring), ("gathered", gathered)):
        trial = spec._run_ring(False)(InProcess(ex), mod.ring_attention, ex)
        figures[name] = (trial.comms.bytes(None), trial.memory["temp"], trial.comms.kinds())
    assert figures["ring"] == (2_560, 2_304, {"collective-permute"})
    assert figures["gathered"] == (2_560, 4_612, {"all-gather"})


def test_only_the_merging_devices_wrong_is_said_only_where_it_holds():
    """Device 0 right and every other device wrong, on a causal plain ring: what only the
    devices that merge do is said; device 0 wrong too, one merging device right, a zigzag
    ring or a hint that is not the generic one get nothing from it (both ways)."""
    from grader.results import CheckResult
    from grader.spec import Trial

    ex = {"n": 4, "rows": 2, "h": 1, "dh": 2, "mask": "causal", "dtype": "float32", "seed": 0}
    want = np.arange(8 * 1 * 2, dtype=np.float64).reshape(8, 1, 2)
    generic = CheckResult("values", False, "", hint="Only device(s) [1, 2, 3] of 4 are wrong")

    def hint(got, example=ex, result=generic, zigzag=False):
        trial = Trial(example, output=got, expected=want, extra={"zigzag": zigzag})
        return spec._merged_hint(trial, result)

    merged = want + np.repeat([0.0, 1, 1, 1], 2)[:, None, None]
    said = hint(merged)
    assert said.startswith("Only device 0's rows are right") and "(all 3)" in said, said
    assert hint(merged + 1) is None  # device 0 wrong too
    assert hint(want + np.repeat([0.0, 1, 0, 1], 2)[:, None, None]) is None  # device 2 right
    assert hint(merged, zigzag=True) is None
    assert hint(merged, example={**ex, "mask": "none"}) is None
    assert hint(merged, result=CheckResult("values", False, "", hint="Your value is")) is None
