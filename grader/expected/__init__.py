"""The grader's side of the lessons: every reference a verdict is measured against.

What lives here: the float64 references the JAX lessons' programs are held to (the
course model's step, Megatron's MLP and attention, softmax attention and its partials,
MoE routing, the transformer's step, AdamW, the serving model), the formulas and expected values of the lessons whose answers are plain Python
(lessons 3, 14 and 16, and the matmul cases' optimal bytes that lessons 3 and 4 hold
answers to), the grader's own programs and schedules that answer exercises (lessons 4
and 9), and the values known mistakes give.

Why here: the trust rule (ARCHITECTURE.md) — no file the student's process can read
holds a reference. That process imports a lesson's spec to run it
(:attr:`grader.spec.ExerciseSpec.run`), so anything a spec imports is readable by the
student's code: an executable formula or a float64 model there is an answer a submission
could import and return, or copy. This folder is hidden from it like ``solutions/``
(:mod:`grader.sandbox.references` lists it; an installed wheel ships it as
``grader/expected`` and it is hidden there too; ``tests/test_grader_side_hidden.py``
grades probes that try to import, read and call every module of it).

How a spec reaches it, only in the grading worker (:mod:`grader.later`):

- :func:`grader.later.expected` names a module here and imports it when an attribute
  is first used (``F = expected("l14_planning.cost")``, or a student's-side module's
  ``forward = expected("training").fn("forward")``), by a check, a report's figure, or
  the ``run`` of an exercise that hands the student's process no program;
- a ``run`` that hands over programs also runs in the student's process (on decoy data),
  so it never calls a reference itself: it sets ``trial.expected = later(reference, …)``
  (:func:`grader.later.later`), computed when a check first reads it, in the worker;
- where a program's *input* comes from a reference (lesson 16's decode step starts from
  the prompt's cache), :func:`grader.later.in_worker` gives the student's process a
  stand-in of the same shape: the program traced there is the same.

``training``                  the course model's float64 forward, loss, gradients, SGD step
                              (lessons 6, 7, 9, 13; inputs and tolerances:
                              :mod:`grader.reference.training`);
``l03_cost_model``            lesson 3's formulas and known mistakes;
``matmul``                    the bytes each sharded matmul case sends, optimum and rival,
                              and the grader's own program per case (lessons 3, 4);
``l08_tensor_parallel``       the unsharded MLP and attention, float64, and a stride mistake's;
``l09_pipeline``              the schedule simulator and the reference schedules;
``l10_context_parallel``      softmax attention and the merge of partials, float64;
``l11_expert_parallel``       routing, dispatch and the MoE layer, float64, with known mistakes;
``l12_parallel_transformer``  ``reference_bytes``, Megatron's sends, the predictions' slips;
``l12_transformer``           the tiny transformer's float64 step (lesson 12);
``l13_multi_host``            ``allreduce_time``'s model and mistakes, the loader's rows;
``l14_planning``              lesson 14's cost model, known mistakes and the report's pictures;
``l15_optimizer``             AdamW, clipping, the loss-scaled step, float8's round trip,
                              float64, with known mistakes;
``l16_serving``               the serving cost model and known mistakes, speculative
                              sampling's reference, and ``.model``: the float64 language model.
"""
