"""Is XLA's backend optimisation off safe for a lesson's programs? (issue 22 §2)

For every program a lesson's grade compiles (the solution's, and those of the
lesson's realistic mistakes, ``tests/mistakes``), compile it twice: as the
spec asks, and with ``xla_backend_optimization_level=0`` added (or the options
given with ``--option name=value``, repeated); compare what
the checks read — the collectives summary of the compiled HLO
(:func:`grader.measure.hlo.summarize`), the memory analysis — and the HLO text
itself and the outputs, and time both compiles.

    python benchmarks/fast_compile.py [--only 2,4] [--no-mistakes] [--option NAME=VALUE ...]

Prints one row per lesson: programs, how many had identical collectives,
memory, HLO text and outputs, and the compile seconds both ways. A lesson may
compile with the option only where collectives and memory are identical for
every program (the HLO text too, so that nothing a later check reads changes).
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from grader.measure import devices  # noqa: E402

devices.configure(8, "cpu")

import numpy as np  # noqa: E402
from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from course import registry  # noqa: E402
from grader import runtime as runtimes  # noqa: E402
from grader.measure import hlo  # noqa: E402
from grader.sandbox import backends  # noqa: E402

FAST = {"xla_backend_optimization_level": 0}
stats: dict[int, dict[str, float]] = defaultdict(lambda: defaultdict(float))
current = [0]


def _memory(compiled):
    try:
        m = compiled.memory_analysis()
        return (m.argument_size_in_bytes, m.output_size_in_bytes, m.temp_size_in_bytes)
    except Exception:
        return None


def _same_outputs(a, b) -> bool:
    import jax

    la, lb = jax.tree.leaves(a), jax.tree.leaves(b)
    return len(la) == len(lb) and all(
        np.array_equal(np.asarray(x), np.asarray(y), equal_nan=True) for x, y in zip(la, lb)
    )


original = runtimes.run_compiled


def comparing(lowered, program, args, mesh, example, compiler_options, extra, salt=0, **more):
    s = stats[current[0]]
    n = mesh.size if mesh is not None else 1
    t = time.perf_counter()
    base = lowered.compile(compiler_options=compiler_options)
    s["compile s (as asked)"] += time.perf_counter() - t
    t = time.perf_counter()
    fast = lowered.compile(compiler_options={**(compiler_options or {}), **FAST})
    s["compile s (tried)"] += time.perf_counter() - t
    s["programs"] += 1
    s["same collectives"] += hlo.summarize(base.as_text(), n) == hlo.summarize(fast.as_text(), n)
    s["same memory"] += _memory(base) == _memory(fast)
    s["same HLO text"] += base.as_text() == fast.as_text()
    s["asked already"] += bool(compiler_options)
    with contextlib.suppress(Exception):
        s["same outputs"] += _same_outputs(base(*args), fast(*args))
    return original(lowered, program, args, mesh, example, compiler_options, extra, salt, **more)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--only", default="")
    parser.add_argument("--no-mistakes", action="store_true")
    parser.add_argument("--option", action="append", default=[], metavar="NAME=VALUE",
                        help="XLA option to try instead of the backend optimisation level")  # fmt: skip
    args = parser.parse_args()
    if args.option:
        FAST.clear()
        for item in args.option:
            name, _, value = item.partition("=")
            FAST[name] = {"true": True, "false": False}.get(value.lower(), value)
            if isinstance(FAST[name], str) and FAST[name].lstrip("-").isdigit():
                FAST[name] = int(FAST[name])
    wanted = {int(n) for n in args.only.split(",") if n.strip()}
    runtimes.run_compiled = comparing
    mistakes = []
    if not args.no_mistakes:
        sys.path.insert(0, str(ROOT))
        from tests.mistakes import collect

        mistakes = collect()
    for lesson in registry.load().lessons:
        if wanted and lesson.number not in wanted:
            continue
        current[0] = lesson.number
        backends.grade_lesson(lesson.number, lesson.module, ROOT / "solutions")
        solution = (ROOT / "solutions" / f"{lesson.module}.py").read_text()
        for m in (m for m in mistakes if m.module == lesson.module):
            with tempfile.TemporaryDirectory() as tmp:
                (Path(tmp) / f"{lesson.module}.py").write_text(m.source(solution))
                backends.grade_lesson(lesson.number, lesson.module, Path(tmp), only=[m.exercise])
    cols = ["programs", "asked already", "same collectives", "same memory", "same HLO text",
            "same outputs", "compile s (as asked)", "compile s (tried)"]  # fmt: skip
    tried = ", ".join(f"{k}={v}" for k, v in FAST.items())
    table = Table(title=f"{tried} against the spec's own options")
    table.add_column("lesson")
    for c in cols:
        table.add_column(c, justify="right")
    for n, s in sorted(stats.items()):
        table.add_row(str(n), *(f"{s[c]:.2f}" if c.startswith("compile") else f"{s[c]:.0f}"
                                for c in cols))  # fmt: skip
    Console(width=160).print(table)


if __name__ == "__main__":
    main()
