"""Lesson 14's report material: a chip's memory as bars, two plans side by side
(every term of memory and time, so the student sees which one decided), and
the plans ranked."""

from __future__ import annotations

from grader.evidence import Bar, MemoryBars, Note, Table
from grader.expected.l14_planning import cost
from grader.lessons.l14_planning.records import Plan

GB = 1e9


def plan_text(p: Plan) -> str:
    return f"dp={p.dp} fsdp={p.fsdp} tp={p.tp} pp={p.pp} n_micro={p.n_micro} remat={p.remat}"


def memory_bars(example: str, mem: dict[str, float], hbm: float, note: str = "") -> MemoryBars:
    bars = [Bar(k, round(mem[k])) for k in cost.MEMORY_KEYS]
    return MemoryBars(example=example, bars=bars, marks=[Bar("HBM of a chip", round(hbm))],
                      note=note)  # fmt: skip


def gb(x: float) -> str:
    return f"{x / GB:.2f} GB"


def seconds(x: float) -> str:
    return f"{x:.4g} s"


def side_by_side(
    best: tuple[Plan, dict, dict], yours: tuple[Plan, dict, dict | None], hbm: float
) -> Table:
    """Every term of both plans: the best one, then the student's (the last column)."""
    (bp, bm, bt), (yp, ym, yt) = best, yours
    rows = [[a, str(getattr(bp, a)), str(getattr(yp, a))]
            for a in ("dp", "fsdp", "tp", "pp", "n_micro", "remat")]  # fmt: skip
    rows += [[f"memory: {k}", gb(bm[k]), gb(ym[k])] for k in cost.MEMORY_KEYS]
    rows.append(["fits HBM", f"yes (≤ {gb(hbm)})", "yes" if ym["total"] <= hbm else "NO"])
    if yt is not None:
        rows += [[f"time: {k}", seconds(bt[k]), seconds(yt[k])] for k in cost.TIME_KEYS[:-1]]
        rows.append(["MFU", f"{bt['mfu']:.1%}", f"{yt['mfu']:.1%}"])
    return Table(columns=["term", "best plan", "your plan"], rows=rows)


def decided_by(bt: dict, yt: dict) -> str:
    """The time term that costs the student's plan the most against the best one."""
    terms = cost.TIME_KEYS[:-2]
    worst = max(terms, key=lambda k: yt[k] - bt[k])
    return (
        f"{worst} decided: {seconds(yt[worst])} in your plan against {seconds(bt[worst])} in "
        f"the best ({yt['total'] / bt['total']:.3g}× the best step time in all)"
    )


def ranking(rows: list, n: int = 6) -> list:
    """The fastest plans that fit, as a table, and the best one's memory as bars."""
    if not rows:
        return [Note("No plan fits this cluster's HBM.")]
    table = Table(
        columns=["#", "dp", "fsdp", "tp", "pp", "n_micro", "remat", "memory", "step", "MFU"],
        rows=[
            [str(i + 1), str(p.dp), str(p.fsdp), str(p.tp), str(p.pp), str(p.n_micro), p.remat,
             gb(mem["total"]), seconds(t["total"]), f"{t['mfu']:.1%}"]
            for i, (p, mem, t) in enumerate(rows[:n])
        ],
    )  # fmt: skip
    return [table]
