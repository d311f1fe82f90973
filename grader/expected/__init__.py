"""The grader's side of the lessons: expected values, formulas and the values known
mistakes give, where a lesson's answers are plain Python (lessons 3, 14 and 16, and the
matmul cases' optimal bytes that lessons 3 and 4 hold answers to).

The student's process never sees this folder (issue 39): it imports a lesson's spec to
run it (:attr:`grader.spec.ExerciseSpec.run`), so anything a spec imports at import time
is readable by the student's code, and an executable formula there is an answer a
submission could import and return. This folder is hidden from it like ``solutions/``
(:mod:`grader.sandbox.references` lists it; an installed wheel ships it as
``grader/expected`` and it is hidden there too). A spec reaches it only through
:func:`grader.later.expected`, whose attributes are imported when first used:
in the grading worker, by the checks and by ``run`` of an exercise that hands the
student's process no program (so ``run`` never runs there).

``l03_cost_model``  lesson 3's formulas and known mistakes;
``matmul_bytes``    the bytes each sharded matmul case sends: optimum and rival (lessons 3, 4);
``l14_planning``    lesson 14's cost model, known mistakes and the report's pictures;
``l16_serving``     lesson 16's cost model and known mistakes.
"""
