"""Which platform the one-device programs run on when graded through the student's
process on a GPU host (the device check's second part):

    COURSE_PLATFORM=auto python3 benchmarks/gpu_placement.py

Prints, for 10.merge_partials and 11.top1_dispatch, the platform of the results the
grader computed with the programs the student's process handed back.
"""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from grader import runtime  # noqa: E402
from grader.measure import devices  # noqa: E402
from grader.sandbox import backends  # noqa: E402

devices.configure()
seen = []
original = runtime.run_compiled


def spy(lowered, program, args, mesh, example, options, extra, salt=0, **more):
    trial = original(lowered, program, args, mesh, example, options, extra, salt, **more)
    import jax

    out = jax.tree.leaves(trial.output)[0]
    seen.append(next(iter(out.devices())).platform)
    return trial


runtime.run_compiled = spy
for lesson, module, name in ((10, "l10_context_parallel", "merge_partials"),
                             (11, "l11_expert_parallel", "top1_dispatch")):  # fmt: skip
    seen.clear()
    r = backends.grade_lesson(
        lesson, module, ROOT / "solutions", only=[name], timeout=120, backend=backends.isolated(7)
    )
    print(name, r.exercises[0].status.value, "results on:", sorted(set(seen)))
