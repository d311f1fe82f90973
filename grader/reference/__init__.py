"""What several lessons share and the student's process may read (no lesson owns it):
the sharded matmul cases and their inputs (:mod:`.matmul`, lessons 3–5), and the course
model's inputs and tolerances (:mod:`.training`, lessons 6–13).

No reference lives here: this package is imported by the specs, and so by the student's
process. What the matmul cases cost, the grader's own optimal program per case and the
course model's float64 step are the grader's side (:mod:`grader.expected.matmul`,
:mod:`grader.expected.training`, hidden from the student's process); the names here that
stand for them (``training.grads``, ``Case.bytes``) import them when called, in the worker.
What only one lesson uses lives in that lesson's folder."""
