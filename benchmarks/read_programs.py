"""How long reading an exported program takes: the grader's StableHLO reader (jaxlib's
MLIR bindings: parse, then walk) against the regular-expression reader it replaced
(kept as the test oracle ``tests/stablehlo_text.py``), over every solution's programs.

    python benchmarks/read_programs.py [--rounds 5] [--mistakes]

Gathers the programs as ``tests/test_readers.py`` does (:func:`tests.programs.gather`),
then reads all of them with each reader in turn, ``--rounds`` times, alternating, and
prints per reader the best and the median round, per program (milliseconds of CPU).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from grader.measure import devices  # noqa: E402

devices.configure(8, "cpu")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--mistakes", action="store_true", help="the mistakes' programs too")
    args = parser.parse_args()

    import jax

    from grader.measure import stablehlo
    from tests import stablehlo_text
    from tests.programs import gather

    texts = [r.text for r in gather(mistakes=args.mistakes)]
    readers = {
        "bindings (parse + walk)": stablehlo.read,
        "bindings (parse only)": stablehlo.parse,
        "regular expressions": stablehlo_text.read,
    }
    for read in readers.values():  # warm: imports, compiled patterns
        read(texts[0])
    times: dict[str, list[float]] = {name: [] for name in readers}
    for _ in range(args.rounds):
        for name, read in readers.items():
            start = time.process_time()
            for text in texts:
                read(text)
            times[name].append((time.process_time() - start) / len(texts) * 1e3)
    kib = sum(len(t) for t in texts) / len(texts) / 1024
    print(f"jax {jax.__version__}: {len(texts)} programs, {kib:.1f} KiB of text each on average")
    for name, ts in times.items():
        print(f"  {name:24s} best {min(ts):6.2f} ms   median {statistics.median(ts):6.2f} ms")


if __name__ == "__main__":
    main()
