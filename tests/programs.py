"""Every exported program the course grades: each solution's and each catalogued mistake's.

``gather()`` grades every lesson's solution and every mistake of ``tests/mistakes`` in
this process and keeps the StableHLO of every program the student's code builds
(``jax.export`` of it, printed as the grading worker prints it:
``Exported.mlir_module()``; a kernel's program exported for a TPU, lesson 17's), and of
every program a spec hands over already exported (lesson 13's processes). Only the programs are wanted, not verdicts: a student's program
is exported, never compiled or run, and the spec gets zeros of its outputs' shapes,
dtypes and shardings (a later program of the example may take them); the checks then
fail, which nobody reads, so each explicit example is graded on its own (a failed
example ends a grade). Explicit examples only: they hold the forms the checks look for.
About 16 s of CPU for the whole course on jax 0.10.2 (tracing, lowering and exporting:
what a student's process does), plus lesson 13's processes.

    python -m tests.programs OUT_DIR     # write them as OUT_DIR/NNNN_label.mlir
"""

from __future__ import annotations

import contextlib
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Recorded:
    label: str
    """The lesson's module (its solution's programs) or a mistake's id; `` (exported)``
    added for a program handed over exported."""
    text: str
    """The program's StableHLO text."""
    exported: Any = None
    """The ``jax.export.Exported`` it was printed from (None: handed over as text)."""


@contextlib.contextmanager
def _recording(into: list[Recorded], label: list[str]) -> Iterator[None]:
    """Record every program a student's function builds, and every exported one read."""
    import jax

    from grader import runtime
    from grader.measure import stablehlo
    from grader.spec import Trial

    original, read = runtime.InProcess.student_program, stablehlo.read

    def student_program(self: Any, program: Any, args: Any, mesh: Any, *more: Any) -> Any:
        jitted = program if hasattr(program, "lower") else jax.jit(program)
        try:
            exported = jax.export.export(jitted)(*args)
        except Exception:  # not exportable: the grade says so, not us
            return original(self, program, args, mesh, *more)
        into.append(Recorded(label[0], exported.mlir_module(), exported))
        return Trial(self.example, output=_zeros(exported, mesh), mesh=mesh)

    def reading(text: Any) -> Any:  # a program handed over exported (lesson 13)
        into.append(Recorded(label[0] + " (exported)", str(text)))
        return read(text)

    def student_kernels(self: Any, program: Any, args: Any, mesh: Any) -> tuple:
        # a kernel's program (lesson 17), exported for a TPU as the student's process
        # exports it; the spec computes nothing more where it is exporting
        exported = runtime.export_for_tpu(program, args, mesh)
        into.append(Recorded(label[0], exported.mlir_module(), exported))
        return ()

    kernels = runtime.InProcess.student_kernels
    runtime.InProcess.student_program = student_program  # type: ignore[method-assign]
    runtime.InProcess.student_kernels = student_kernels  # type: ignore[method-assign]
    runtime.InProcess.exporting = True
    stablehlo.read = reading  # type: ignore[assignment]
    try:
        yield
    finally:
        runtime.InProcess.student_program = original  # type: ignore[method-assign]
        runtime.InProcess.student_kernels = kernels  # type: ignore[method-assign]
        del runtime.InProcess.exporting
        stablehlo.read = read  # type: ignore[assignment]


def _zeros(exported: Any, mesh: Any) -> Any:
    """Outputs of the program's shapes, dtypes and shardings (zeros): what a later
    program of the example may take, without compiling or running this one."""
    import jax
    import numpy as np

    shardings = exported.out_shardings_jax(mesh) if mesh is not None else None
    leaves = [
        jax.device_put(np.zeros(a.shape, a.dtype), shardings[i] if shardings else None)
        for i, a in enumerate(exported.out_avals)
    ]
    return jax.tree.unflatten(exported.out_tree, leaves)


def gather(lessons: set[int] | None = None, mistakes: bool = True) -> list[Recorded]:
    """The programs of every solution (and mistake) of ``lessons`` (None: all): a
    solution's on every explicit example of each exercise, a mistake's on the first
    (the example every grade of it runs first; the others differ in shapes and meshes,
    which the solution's cover)."""
    from course import registry
    from grader import engine
    from grader.sandbox import backends
    from tests.mistakes import collect

    found: list[Recorded] = []
    label = [""]
    catalogue = collect() if mistakes else []
    ctx = engine.context()

    def grade(number: int, module: str, directory: Path, exercise: Any, every: bool) -> None:
        examples = exercise.explicit(ctx)
        for example in examples if every else examples[:1]:  # alone: a failed one stops none
            # the sandbox's in-process backend: lesson 13's clusters are real processes
            backends.grade_lesson(number, module, directory, only=[exercise.name], example=example)

    with _recording(found, label):
        for lesson in registry.load().lessons:
            if lessons is not None and lesson.number not in lessons:
                continue
            spec = engine.load_spec(lesson.module)
            label[0] = lesson.module
            for exercise in spec.exercises:
                grade(lesson.number, lesson.module, ROOT / "solutions", exercise, every=True)
            solution = (ROOT / "solutions" / f"{lesson.module}.py").read_text()
            for m in (m for m in catalogue if m.module == lesson.module):
                label[0] = m.id
                with tempfile.TemporaryDirectory() as tmp:
                    (Path(tmp) / f"{lesson.module}.py").write_text(m.source(solution))
                    exercise = spec.exercise(m.exercise)
                    grade(lesson.number, lesson.module, Path(tmp), exercise, every=False)
    return found


def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for i, r in enumerate(gather()):
        safe = "".join(c if c.isalnum() or c in "_-" else "_" for c in r.label)
        (out / f"{i:04d}_{safe}.mlir").write_text(r.text)


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    from grader.measure import devices

    devices.configure(8, "cpu")
    main(Path(sys.argv[1]))
