"""Print every exercise's drawn examples (seeds 0 and 1) as JSON, without jax.

Run it under two hypothesis versions and compare the output: the same text
means the same seed gives students the same examples on both, which is what
the hypothesis range in pyproject.toml promises.

    python .ci/draws.py > draws-$(python -c 'import hypothesis; print(hypothesis.__version__)').json
"""

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from course import registry  # noqa: E402
from grader.engine import MESH_SIZES, load_spec  # noqa: E402
from grader.spec import Context, draw_examples, format_example  # noqa: E402


def main() -> None:
    ctx = Context(n_devices=8, mesh_sizes=MESH_SIZES)
    out = {}
    for lesson in registry.load().lessons:
        for spec in load_spec(lesson.module).exercises:
            for seed in (0, 1):
                drawn = draw_examples(spec.strategy(ctx), spec.max_examples, seed)
                out[f"{lesson.number}.{spec.name} seed={seed}"] = [format_example(e) for e in drawn]
    json.dump(out, sys.stdout, indent=1, sort_keys=True)


if __name__ == "__main__":
    main()
