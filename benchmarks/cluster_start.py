"""How long lesson 13's clusters take to form (issue 20).

    python benchmarks/cluster_start.py

For each (P, D) the lesson grades on: the seconds from starting P student's
processes (in the sandbox, where there is one) until every one has joined
(``jax.distributed.initialize``) and until every one has imported the
reference module; first one cluster at a time, then all of them started
together under one launcher, as a grade does (``AHEAD`` in the lesson's spec). Prints the
machine's load beside the figures: on two shared cores they follow it.
"""

import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from grader.config import Sandbox  # noqa: E402
from grader.lessons.l13_multi_host.spec import CLUSTERS  # noqa: E402
from grader.sandbox import jail  # noqa: E402
from grader.sandbox.cluster import Cluster, start_together  # noqa: E402

MODULE = "l13_multi_host"


def form(clusters: list[Cluster]) -> list[tuple[float, float]]:
    start = time.perf_counter()
    start_together(clusters)  # one launcher for all of them, as a grade's pool does
    out = []
    for c in clusters:
        c.join()
        joined = time.perf_counter() - start
        c.load()
        out.append((joined, time.perf_counter() - start))
    for c in clusters:
        c.stop()
    return out


def main() -> None:
    sandbox = Sandbox.from_environment(os.environ)  # the script's edge
    print(f"sandbox: {jail.state(sandbox)}; {os.cpu_count()} cores; load {os.getloadavg()[0]:.1f}")
    where = str(ROOT / "solutions")
    for p, d in CLUSTERS:
        ((joined, loaded),) = form([Cluster(where, MODULE, p, d, sandbox=sandbox)])
        print(f"  {p}×{d} alone:    joined {joined:5.2f} s, module imported {loaded:5.2f} s")
    together = form([Cluster(where, MODULE, p, d, sandbox=sandbox) for p, d in CLUSTERS])
    for (p, d), (joined, loaded) in zip(CLUSTERS, together):
        print(f"  {p}×{d} together: joined {joined:5.2f} s, module imported {loaded:5.2f} s")
    print(f"load {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
