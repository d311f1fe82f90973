"""XLA's backend optimisation off, and its older CPU emitters, where a lesson
says so (issue 22 §2)."""

from __future__ import annotations

import jax
import pytest

from course import registry
from grader import engine
from grader import runtime as runtimes
from grader.measure import hlo
from grader.sandbox import backends
from grader.spec import BACKEND_LEVEL_0, FAST_COMPILE, LEGACY_EMITTERS

FAST = {le.module for le in registry.load().lessons if engine.load_spec(le.module).compiler_options}


def test_the_lessons_measured_compile_fast():
    assert {m[:3] for m in FAST} >= {"l02", "l03", "l04", "l05", "l07", "l08", "l09", "l10", "l13"}


@pytest.mark.parametrize(("module", "exercise", "options"), [
    ("l02_collectives", "ring_all_gather", FAST_COMPILE),
    ("l04_sharded_matmul", "matmul_allgather", BACKEND_LEVEL_0),  # the emitters change its memory
])  # fmt: skip
def test_every_program_of_the_lesson_compiles_with_its_options_and_reads_the_same(
    root, monkeypatch, module, exercise, options
):
    """The options reach every compile the spec does not ask otherwise; the
    compiled HLO's collectives and the memory analysis are those of a compile
    without them, and the backend level alone leaves the HLO text as it is (the
    older emitters leave a lone scalar operation out of a fusion of its own)."""
    seen = []
    original = runtimes.run_compiled

    def spy(lowered, program, args, mesh, example, compiler_options, extra, salt=0, **more):
        n = mesh.size if mesh is not None else 1
        plain = lowered.compile()
        fast = lowered.compile(compiler_options=runtimes.known_options(compiler_options))
        level = lowered.compile(compiler_options=BACKEND_LEVEL_0)
        seen.append((
            compiler_options, plain.as_text() == level.as_text(),
            hlo.summarize(plain.as_text(), n) == hlo.summarize(fast.as_text(), n),
            _memory(plain) == _memory(fast),
        ))  # fmt: skip
        return original(
            lowered, program, args, mesh, example, compiler_options, extra, salt, **more
        )

    monkeypatch.setattr(runtimes, "run_compiled", spy)
    number = int(module[1:3])
    result = backends.grade_lesson(number, module, root / "solutions", only=[exercise],
                                 max_examples=1)  # fmt: skip
    assert all(e.passed for e in result.exercises)
    assert seen and all(s == (options, True, True, True) for s in seen), seen


def test_an_option_this_xla_lacks_is_left_out_and_the_others_kept(monkeypatch):
    """jaxlib 0.12 has no ``xla_cpu_use_fusion_emitters`` (it refuses the compile);
    0.10 has it, and there the lessons compile with it."""
    missing = "xla_cpu_no_such_option_for_this_test"
    monkeypatch.setattr(runtimes, "OPTIONAL_OPTIONS", frozenset({*LEGACY_EMITTERS, missing}))
    kept = runtimes.known_options({**FAST_COMPILE, missing: True})
    assert missing not in kept
    assert kept["xla_backend_optimization_level"] == 0
    if jax.__version__.startswith("0.10."):
        assert kept == FAST_COMPILE
    with pytest.raises(Exception, match="(?i)no such compile option"):
        jax.jit(lambda: 0).lower().compile(compiler_options={missing: True})
    assert runtimes.known_options(None) is None


def _memory(compiled):
    m = compiled.memory_analysis()
    return (m.argument_size_in_bytes, m.output_size_in_bytes, m.temp_size_in_bytes)


def test_xlas_own_matmul_moves_the_same_bytes_with_the_backend_optimisation_off():
    """Lesson 4's explanation compiles XLA's own a @ b with FAST_COMPILE (it
    reads collectives only): the collectives it reports are those of the default
    compile, for every case."""
    from grader.lessons.l04_sharded_matmul.spec import CASES, SPEC
    from grader.reference.matmul import xla_bytes

    ctx = engine.context()
    for case in CASES.values():
        spec = SPEC.exercise(f"matmul_{case.name}")
        for ex in engine.examples_for(spec, ctx, 0)[:2]:
            assert xla_bytes(case, ex, FAST_COMPILE) == xla_bytes(case, ex), (case.name, ex)


def test_a_program_the_students_processes_exported_is_compiled_with_the_lessons_options(
    monkeypatch,
):
    """Lesson 13 replays what its clusters exported (``Runtime.run_exported``): with
    the lesson's options, as ``compile_and_run`` compiles, unless others are given."""
    seen = []
    monkeypatch.setattr(runtimes, "replay", lambda blob, args, mesh, example, options, extra,
                        salt, limit=None: seen.append(options))  # fmt: skip
    rt = runtimes.Runtime({})
    rt.compiler_options = FAST_COMPILE
    rt.run_exported(b"", (), None)
    rt.run_exported(b"", (), None, compiler_options=BACKEND_LEVEL_0)
    assert seen == [FAST_COMPILE, BACKEND_LEVEL_0]
