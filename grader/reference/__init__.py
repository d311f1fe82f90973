"""Reference maths shared by several lessons (no lesson owns them): the sharded
matmul cases and their inputs (:mod:`.matmul`, lessons 3–5) and the course
model's float64 training step and tolerances (:mod:`.training`, lessons 6–12).
What only one lesson uses lives in that lesson's folder. What the matmul cases cost,
and the grader's own optimal program per case, are the grader's side
(:mod:`grader.expected.matmul`, hidden from the student's process)."""
