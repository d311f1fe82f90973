"""The lesson texts' figures, drawn as SVG from the data the grader uses.

Each figure is one function returning SVG text, drawn from the grader's own
pieces where they exist (lesson 4's cases from :mod:`grader.reference.matmul`,
lesson 9's schedules from its simulator, lesson 10's ring from its checks,
lesson 14's plans from its cost model, lesson 7's bytes from the same constants)
and from the lesson's formula otherwise (lesson 1's owners, lesson 2's ring,
lesson 13's groups; ``tests/test_figures.py`` holds those against the
reference solutions). The SVG is written here, with no dependency: a few
rectangles, lines and labels on a white card of its own, so it reads the same on a
light or dark page, on GitHub and in a notebook.

``course dev notebooks`` writes them to ``course/lessons/figures/``; ``course dev
check`` names a figure that differs from what this module draws now.
"""

from __future__ import annotations

import dataclasses
import html
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

INK = "#1a1a1a"
"""Text and lines: 17:1 on the white card."""
MUTED = "#595959"
"""Secondary labels: 7:1 on white."""
CARD = "#ffffff"
DEVICE_FILLS = (
    "#cfe2ff", "#ffd6a5", "#caffbf", "#ffadad", "#e0c3fc", "#fdffb6", "#9bf6ff", "#ffc6ff",
)  # fmt: skip
"""One light fill per device (labels in :data:`INK` read at 12:1 or more on each)."""
OP_FILLS = {"F": "#9fdfb0", "B": "#a9cdf5", "W": "#d9c2f0"}
USE_FILLS = {
    "whole": "#9fdfb0",
    "diagonal": "#fde68a",
    "masked": "#f4a3a3",
    "first key chunk": "#a9cdf5",
    "second query chunk": "#a9cdf5",
}
TERM_FILLS = {
    "compute": "#9fdfb0", "bubble": "#d9d9d9", "tp": "#a9cdf5", "fsdp": "#d9c2f0",
    "dp": "#ffd6a5", "pp": "#f4a3a3",
}  # fmt: skip


class Svg:
    """An SVG document built from a few shapes; the same calls give the same bytes."""

    def __init__(self, width: float, height: float):
        self.width, self.height = width, height
        self.parts: list[str] = [
            f'<rect x="0" y="0" width="{width:g}" height="{height:g}" fill="{CARD}"/>'
        ]

    def rect(self, x: float, y: float, w: float, h: float, fill: str, stroke: str = INK) -> None:
        self.parts.append(
            f'<rect x="{x:g}" y="{y:g}" width="{w:g}" height="{h:g}" fill="{fill}" '
            f'stroke="{stroke}" stroke-width="1"/>'
        )

    def text(
        self, x: float, y: float, s: str, *, size: int = 12, anchor: str = "middle",
        bold: bool = False, colour: str = INK,
    ) -> None:  # fmt: skip
        weight = ' font-weight="bold"' if bold else ""
        self.parts.append(
            f'<text x="{x:g}" y="{y:g}" font-size="{size}" text-anchor="{anchor}" '
            f'fill="{colour}"{weight}>{html.escape(s)}</text>'
        )

    def line(
        self, x1: float, y1: float, x2: float, y2: float, *, arrow: bool = False,
        both: bool = False,
    ) -> None:  # fmt: skip
        head = ' marker-end="url(#arrow)"' if arrow or both else ""
        head += ' marker-start="url(#arrow)"' if both else ""
        self.parts.append(
            f'<line x1="{x1:g}" y1="{y1:g}" x2="{x2:g}" y2="{y2:g}" stroke="{INK}" '
            f'stroke-width="1.2"{head}/>'
        )

    def render(self, title: str) -> str:
        return (
            f'<svg xmlns="http://www.w3.org/2000/svg" width="{self.width:g}" '
            f'height="{self.height:g}" viewBox="0 0 {self.width:g} {self.height:g}" '
            'font-family="Helvetica, Arial, sans-serif" role="img">\n'
            f"<title>{html.escape(title)}</title>\n"
            '<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" '
            f'markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" '
            f'fill="{INK}"/></marker></defs>\n' + "\n".join(self.parts) + "\n</svg>\n"
        )


@dataclass(frozen=True)
class Figure:
    lesson: int
    name: str
    """The file name in ``course/lessons/figures/``."""
    alt: str
    """What it shows: the Markdown's alt text, the terminal's ``(figure: …)`` line."""
    draw: Callable[[], str]


# ------------------------------------------------------------------ lesson 1


MESH_1 = {"x": 2, "y": 4}
SPECS_1 = (("x", "y"), ("x", None), (None, "y"), (("x", "y"), None), (("y", "x"), None))


def owners(shape: tuple[int, ...], mesh: dict[str, int], spec: tuple) -> dict[int, tuple]:
    """Device id (row-major over the mesh) → the block it holds, one (start, stop) per
    dim: a dim split over axes (a, b) has block index c_a·size(b) + c_b (the first
    axis major), lesson 1's rule."""
    names = list(mesh)
    out = {}
    for device in range(_prod(mesh.values())):
        coord, rest = {}, device
        for name in reversed(names):
            coord[name] = rest % mesh[name]
            rest //= mesh[name]
        block = []
        for d, size in enumerate(shape):
            entry = spec[d] if d < len(spec) else None
            axes = () if entry is None else (entry,) if isinstance(entry, str) else tuple(entry)
            index, parts = 0, 1
            for a in axes:
                index, parts = index * mesh[a] + coord[a], parts * mesh[a]
            step = size // parts
            block.append((index * step, (index + 1) * step))
        out[device] = tuple(block)
    return out


def _prod(values) -> int:
    out = 1
    for v in values:
        out *= v
    return out


def _spec_text(spec: tuple) -> str:
    def one(e) -> str:
        if e is None:
            return "None"
        return repr(e) if isinstance(e, str) else "(" + ", ".join(map(repr, e)) + ")"

    return "P(" + ", ".join(one(e) for e in spec) + ")"


def mesh_layouts() -> str:
    cell, gap = 20, 40
    panel = 8 * cell
    svg = Svg(5 * panel + 6 * gap - 20, panel + 96)
    svg.text(20, 22, "An 8×8 array on the mesh {'x': 2, 'y': 4}: which device holds which block",
             anchor="start", bold=True, size=13)  # fmt: skip
    for p, spec in enumerate(SPECS_1):
        x0, y0 = 20 + p * (panel + gap), 58
        svg.text(x0 + panel / 2, y0 - 10, _spec_text(spec), size=12, bold=True)
        held: dict[tuple, list[int]] = {}
        for device, block in owners((8, 8), MESH_1, spec).items():
            held.setdefault(block, []).append(device)
        for ((r0, r1), (c0, c1)), devices in sorted(held.items()):
            svg.rect(x0 + c0 * cell, y0 + r0 * cell, (c1 - c0) * cell, (r1 - r0) * cell,
                     DEVICE_FILLS[devices[0]])  # fmt: skip
            label = ",".join(f"d{d}" for d in devices)
            size = 11 if (c1 - c0) * cell >= 7 * len(label) else 9
            if (c1 - c0) * cell < 6 * len(label):  # narrow: one device a line
                for k, d in enumerate(devices):
                    svg.text(x0 + (c0 + c1) / 2 * cell, y0 + (r0 + r1) / 2 * cell + 4
                             + (k - (len(devices) - 1) / 2) * 12, f"d{d}", size=size)  # fmt: skip
            else:
                svg.text(x0 + (c0 + c1) / 2 * cell, y0 + (r0 + r1) / 2 * cell + 4, label,
                         size=size)  # fmt: skip
        copies = 8 // len(held)
        svg.text(x0 + panel / 2, y0 + panel + 18,
                 f"{len(held)} blocks, {copies} cop{'y' if copies == 1 else 'ies'} of each",
                 size=11, colour=MUTED)  # fmt: skip
    return svg.render("Lesson 1: the blocks of an 8×8 array under five PartitionSpecs")


# ------------------------------------------------------------------ lesson 2


def ring_all_gather_steps(n: int) -> list[list[list[int | None]]]:
    """``out[s][i]``: device i's slots after step s of a ring all-gather sending to
    i + 1 (step 0: its own block only); in step s it receives block (i − s) mod N."""
    slots: list[list[int | None]] = [[i if j == i else None for j in range(n)] for i in range(n)]
    out = [[row[:] for row in slots]]
    for s in range(1, n):
        for i in range(n):
            b = (i - s) % n
            slots[i][b] = b
        out.append([row[:] for row in slots])
    return out


def ring_all_gather() -> str:
    n, cell = 4, 26
    steps = ring_all_gather_steps(n)
    col = n * cell + 70
    svg = Svg(60 + n * col, 110 + n * (cell + 10))
    svg.text(20, 22, "Ring all-gather on 4 devices: each step, every device passes on the block "
             "it received last", anchor="start", bold=True, size=13)  # fmt: skip
    for s, state in enumerate(steps):
        x0 = 60 + s * col
        svg.text(x0 + n * cell / 2, 54, "start" if s == 0 else f"after step {s}", bold=True)
        for i in range(n):
            y = 68 + i * (cell + 10)
            if s == 0:
                svg.text(40, y + cell / 2 + 4, f"d{i}", bold=True)
            for j, b in enumerate(state[i]):
                fill = DEVICE_FILLS[b] if b is not None else CARD
                svg.rect(x0 + j * cell, y, cell, cell, fill, stroke=MUTED)
                if b is not None:
                    new = s > 0 and b == (i - s) % n
                    svg.text(x0 + j * cell + cell / 2, y + cell / 2 + 4, f"B{b}", size=11,
                             bold=new)  # fmt: skip
            if s > 0:  # what arrived this step, from the left neighbour
                svg.line(x0 - 44, y + cell / 2, x0 - 6, y + cell / 2, arrow=True)
                svg.text(x0 - 26, y + cell / 2 - 4, f"B{(i - s) % n}", size=10, colour=MUTED)
    svg.text(60, 68 + n * (cell + 10) + 18,
             "Bold: the block that arrived in that step, from device i − 1 (block (i − s) mod N). "
             "N − 1 steps, one block each.", anchor="start", size=11, colour=MUTED)  # fmt: skip
    return svg.render("Lesson 2: a ring all-gather's steps on four devices")


# ------------------------------------------------------------------ lesson 3


def roofline() -> str:
    import math

    from grader.lessons.l03_cost_model.spec import CHIPS

    chips = [c for name, c in CHIPS.items() if not name.startswith("toy")]
    x0, y0, w, h = 80, 50, 560, 300  # plot area
    lo_i, hi_i, lo_f, hi_f = 0.0, 4.0, 11.0, 15.5  # log10 of FLOPs/byte and FLOP/s

    def px(i: float) -> float:
        return x0 + (math.log10(i) - lo_i) / (hi_i - lo_i) * w

    def py(f: float) -> float:
        return y0 + h - (math.log10(f) - lo_f) / (hi_f - lo_f) * h

    svg = Svg(900, y0 + h + 60)
    svg.text(20, 22, "The roofline: attainable FLOP/s = min(C, intensity · H), log-log",
             anchor="start", bold=True, size=13)  # fmt: skip
    svg.rect(x0, y0, w, h, CARD, stroke=MUTED)
    for e in range(int(lo_i), int(hi_i) + 1):
        svg.text(px(10**e), y0 + h + 16, f"{10**e:g}", size=10, colour=MUTED)
    for e in range(12, 16):
        svg.text(x0 - 6, py(10**e) + 4, f"{10**e / 1e12:g} T", anchor="end", size=10,
                 colour=MUTED)  # fmt: skip
    svg.text(x0 + w / 2, y0 + h + 34, "arithmetic intensity (FLOPs per byte)", size=11)
    svg.text(x0 - 6, y0 - 8, "FLOP/s", anchor="end", size=11)
    colours = ("#0b5cad", "#1a7f37", "#c5221f", "#a3319c")
    for k, (chip, colour) in enumerate(zip(chips, colours)):
        knee = chip.peak_flops / chip.hbm_bandwidth
        pts = [(10**lo_i, chip.hbm_bandwidth * 10**lo_i), (knee, chip.peak_flops),
               (10**hi_i, chip.peak_flops)]  # fmt: skip
        path = " ".join(f"{px(i):.1f},{py(f):.1f}" for i, f in pts)
        svg.parts.append(f'<polyline points="{path}" fill="none" stroke="{colour}" '
                         'stroke-width="2"/>')  # fmt: skip
        svg.parts.append(f'<circle cx="{px(knee):.1f}" cy="{py(chip.peak_flops):.1f}" r="3.5" '
                         f'fill="{colour}"/>')  # fmt: skip
        svg.text(x0 + w + 10, y0 + 20 + 18 * k, f"{chip.name}: C/H = {knee:.0f}",
                 anchor="start", size=11, colour=colour)  # fmt: skip
    h100 = CHIPS["h100-sxm"]
    d = 8192
    for b in (1, 128, 319, 1024, 4096):  # lesson 3's worked example: [B, d]·[d, d] in bf16
        intensity = b * d / (2 * b + d)
        attained = min(h100.peak_flops, intensity * h100.hbm_bandwidth)
        svg.parts.append(f'<circle cx="{px(intensity):.1f}" cy="{py(attained):.1f}" r="4" '
                         f'fill="{CARD}" stroke="{INK}" stroke-width="1.2"/>')  # fmt: skip
        svg.text(px(intensity) + 6, py(attained) + 16, f"B={b}", anchor="start", size=10)
    svg.text(x0 + w + 10, y0 + 20 + 18 * len(chips) + 10, "○ H100, [B, 8192]·[8192, 8192]",
             anchor="start", size=11)  # fmt: skip
    return svg.render("Lesson 3: the roofline of four chips")


# ------------------------------------------------------------------ lesson 4


def matmul_cases() -> str:
    from grader.reference.matmul import ALL_GATHER, ALL_REDUCE, CASES, REDUCE_SCATTER

    n, unit = 4, 64
    names = ("local", "allgather", "allreduce", "reducescatter")
    row_h = unit + 64
    svg = Svg(900, 40 + len(names) * row_h)
    svg.text(20, 22, "The four cases of A[I, J] · B[J, K] on N = 4 devices (colour: device; "
             "grey: every device holds it all)", anchor="start", bold=True, size=13)  # fmt: skip

    def matrix(x: float, y: float, spec: tuple, label: str, partial: bool = False) -> None:
        split = next((d for d, e in enumerate(spec) if e == "x"), None)
        for k in range(n if split is not None or partial else 1):
            if split == 0:
                svg.rect(x, y + k * unit / n, unit, unit / n, DEVICE_FILLS[k])
            elif split == 1:
                svg.rect(x + k * unit / n, y, unit / n, unit, DEVICE_FILLS[k])
            elif partial:  # N partial sums, one per device, stacked
                svg.rect(x + k * 4, y - k * 4, unit, unit, DEVICE_FILLS[n - 1 - k])
            else:
                svg.rect(x, y, unit, unit, "#e6e6e6")
        svg.text(x + unit / 2, y + unit + 16, label, size=11)

    for r, name in enumerate(names):
        case = CASES[name]
        y = 48 + r * row_h
        svg.text(20, y + 4, f"{name}: A[{_dims(case.a, 'IJ')}] · B[{_dims(case.b, 'JK')}] → "
                 f"C[{_dims(case.c, 'IK')}]", anchor="start", bold=True)  # fmt: skip
        top, x = y + 18, 20.0
        what = ", ".join(sorted(case.allowed))

        def collective(x: float, what: str = what, top: float = top) -> float:
            svg.line(x + 8, top + unit / 2, x + 112, top + unit / 2, arrow=True)
            svg.text(x + 60, top + unit / 2 - 8, what, size=11, bold=True)
            return x + 124

        matrix(x, top, case.a, "A")
        x += unit
        if ALL_GATHER in case.allowed and case.a[1] == "x":  # gather A first, then multiply
            x = collective(x)
            matrix(x, top, (None, None), "A, gathered")
            x += unit
        svg.text(x + 14, top + unit / 2 + 4, "·", size=16)
        matrix(x + 28, top, case.b, "B")
        x += 28 + unit
        svg.text(x + 14, top + unit / 2 + 4, "=", size=16)
        x += 32
        if case.allowed & {ALL_REDUCE, REDUCE_SCATTER}:  # N partial sums, then the collective
            matrix(x, top + 12, (None, None), "partial C, one per device", partial=True)
            x = collective(x + unit + 12)
        matrix(x, top, case.c, "C")
        svg.text(x + unit + 20, top + unit / 2 + 4, f"bytes sent per device: {case.formula}",
                 anchor="start", size=11, colour=MUTED)  # fmt: skip
    return svg.render("Lesson 4: the four cases of a sharded matmul")


def _dims(spec: tuple, letters: str) -> str:
    return ", ".join(f"{d}_X" if e == "x" else d for d, e in zip(letters, spec))


# ------------------------------------------------------------------ lesson 5


def held_blocks(n: int) -> list[list[int]]:
    """``held[s][i]``: the W block device i multiplies at step s of the all-gather matmul
    that sends left: block (i + s) mod N."""
    return [[(i + s) % n for i in range(n)] for s in range(n)]


def collective_matmul() -> str:
    n, cell = 4, 58
    held = held_blocks(n)
    svg = Svg(140 + n * (cell + 40) + 180, 90 + n * (cell + 16))
    svg.text(20, 22, "allgather_matmul on 4 devices: each step multiplies the W block it holds "
             "and passes it left", anchor="start", bold=True, size=13)  # fmt: skip
    for i in range(n):
        svg.text(110 + i * (cell + 40) + cell / 2, 54, f"device {i}", bold=True)
    for s in range(n):
        y = 66 + s * (cell + 16)
        svg.text(50, y + cell / 2 + 4, f"step {s}", anchor="end", bold=True)
        for i in range(n):
            x = 110 + i * (cell + 40)
            b = held[s][i]
            svg.rect(x, y, cell, cell, DEVICE_FILLS[b])
            svg.text(x + cell / 2, y + cell / 2 - 4, f"W{b}", size=12, bold=True)
            svg.text(x + cell / 2, y + cell / 2 + 12, f"× X[:, {b}]", size=10)
            if s < n - 1:  # the send to device i − 1 (the last step sends nothing)
                svg.line(x - 2, y + cell / 2, x - (38 if i else 26), y + cell / 2, arrow=True)
                if i == 0:  # device 0 sends round the ring, to the last device
                    svg.text(x - 30, y + cell / 2 + 4, f"d{n - 1}", anchor="end", size=10)
    svg.text(110, 66 + n * (cell + 16) + 4, "Colour: which W block. Down a column a device "
             "meets every block once; N products, N − 1 sends.", anchor="start", size=11,
             colour=MUTED)  # fmt: skip
    return svg.render("Lesson 5: the all-gather matmul's steps")


# ------------------------------------------------------------------ lesson 6


def data_parallel_step() -> str:
    n, w, h = 4, 120, 30
    svg = Svg(40 + 110 + n * (w + 16) + 120, 330)
    svg.text(20, 22, "One data-parallel step on N = 4 devices: the batch is split, the gradient "
             "all-reduced", anchor="start", bold=True, size=13)  # fmt: skip
    batch = ("x[0 : B/4]", "x[B/4 : B/2]", "x[B/2 : 3B/4]", "x[3B/4 : B]")
    rows = (("params", ["θ"] * n, False, "P()"), ("batch rows", batch, True, "P('data', None)"),
            ("local grad", [f"∇ℓ_{i}" for i in range(n)], True, "local"),
            ("gradient", ["∇L"] * n, False, "P()"))  # fmt: skip
    x0 = 150
    for i in range(n):
        svg.text(x0 + i * (w + 16) + w / 2, 52, f"device {i}", bold=True)
    top = []
    for r, (label, cells, own, spec) in enumerate(rows):
        y = 64 + r * (h + 22) + (40 if r == 3 else 0)
        top.append(y)
        svg.text(x0 - 12, y + h / 2 + 4, label, anchor="end", size=11)
        for i in range(n):
            x = x0 + i * (w + 16)
            svg.rect(x, y, w, h, DEVICE_FILLS[i] if own else "#e6e6e6")
            svg.text(x + w / 2, y + h / 2 + 4, cells[i], size=11)
        svg.text(x0 + n * (w + 16) + 4, y + h / 2 + 4, spec, anchor="start", size=11,
                 colour=MUTED)  # fmt: skip
    join = top[2] + h + 20
    svg.line(x0 + w / 2, join, x0 + (n - 1) * (w + 16) + w / 2, join)
    for i in range(n):
        x = x0 + i * (w + 16) + w / 2
        svg.line(x, top[2] + h, x, join)
        svg.line(x, join, x, top[3] - 2, arrow=True)
    svg.text(x0 + (n * (w + 16) - 16) / 2, top[3] + h + 22, "all-reduce over 'data', ÷ N "
             "(lax.pmean): 2(N − 1)/N · |params| bytes per device, whatever the batch", size=11,
             bold=True)  # fmt: skip
    return svg.render("Lesson 6: a data-parallel step")


# ------------------------------------------------------------------ lesson 7


def memory_per_device() -> str:
    from grader.expected.l14_planning.cost import ADAM, BF16

    n = 8
    stages = {
        "DP": (BF16, BF16, ADAM),
        "ZeRO-1": (BF16, BF16, ADAM / n),
        "ZeRO-2": (BF16, BF16 / n, ADAM / n),
        "ZeRO-3 (FSDP)": (BF16 / n, BF16 / n, ADAM / n),
    }
    fills = ("#a9cdf5", "#9fdfb0", "#ffd6a5")
    scale, bar = 30, 26
    svg = Svg(900, 80 + len(stages) * (bar + 16) + 20)
    svg.text(20, 22, f"Bytes per parameter on each of N = {n} devices (Adam, mixed precision)",
             anchor="start", bold=True, size=13)  # fmt: skip
    for r, (stage, parts) in enumerate(stages.items()):
        y = 48 + r * (bar + 16)
        svg.text(130, y + bar / 2 + 4, stage, anchor="end", bold=True)
        x = 140.0
        for part, fill in zip(parts, fills):
            svg.rect(x, y, part * scale, bar, fill)
            x += part * scale
        total = sum(parts)
        gb = total * 7e9 / 1e9
        svg.text(x + 8, y + bar / 2 + 4, f"{total:g} B  ({gb:g} GB for 7·10⁹ parameters)",
                 anchor="start", size=11)  # fmt: skip
    y = 48 + len(stages) * (bar + 16) + 8
    for k, (label, fill) in enumerate(zip(("bf16 weight (2)", "bf16 gradient (2)",
                                            "fp32 master + Adam m, v (12)"), fills)):  # fmt: skip
        svg.rect(140 + k * 190, y, 14, 14, fill)
        svg.text(160 + k * 190, y + 11, label, anchor="start", size=11)
    return svg.render("Lesson 7: memory per device under DP and the ZeRO stages")


# ------------------------------------------------------------------ lesson 8


def tensor_parallel_mlp() -> str:
    n, unit = 4, 80
    svg = Svg(900, 250)
    svg.text(20, 22, "A Megatron MLP on N = 4 devices: w_in split by columns, w_out by rows, "
             "one all-reduce", anchor="start", bold=True, size=13)  # fmt: skip
    top = 60

    def block(x: float, w: float, h: float, split: str | None, label: str) -> None:
        for k in range(n if split else 1):
            if split == "cols":
                svg.rect(x + k * w / n, top, w / n, h, DEVICE_FILLS[k])
            elif split == "rows":
                svg.rect(x, top + k * h / n, w, h / n, DEVICE_FILLS[k])
            else:
                svg.rect(x, top, w, h, "#e6e6e6")
        svg.text(x + w / 2, top + h + 16, label, size=11)

    block(20, 50, unit, None, "x [B, D]")
    svg.text(84, top + unit / 2 + 4, "·", size=16)
    block(96, unit, unit, "cols", "w_in [D, F_model]")
    svg.text(190, top + unit / 2 + 4, "=", size=16)
    block(204, unit, unit / 1.6, "cols", "tanh(h) [B, F_model]")
    svg.text(298, top + unit / 2 + 4, "·", size=16)
    block(310, 50, unit * 1.2, "rows", "w_out [F_model, D]")
    svg.text(374, top + unit / 2 + 4, "=", size=16)
    for k in range(n):  # N partial sums
        svg.rect(392 + k * 4, top + 8 - k * 4, 50, unit / 1.6, DEVICE_FILLS[n - 1 - k])
    svg.text(430, top + unit + 16, "y_i, partial [B, D]", size=11)
    svg.line(470, top + unit / 3, 600, top + unit / 3, arrow=True)
    svg.text(535, top + unit / 3 - 8, "all-reduce (psum)", size=11, bold=True)
    block(614, 50, unit / 1.6, None, "y [B, D]")
    svg.text(20, top + unit + 60, "Column-parallel: x · w_in[:, i] needs no communication; "
             "tanh acts on each column. Row-parallel: t_i · w_out[i, :] is a partial sum over F.",
             anchor="start", size=11, colour=MUTED)  # fmt: skip
    svg.text(20, top + unit + 78, "Bytes per device: one all-reduce of [B, D], "
             "2(N−1)/N · B·D · bytes per element.", anchor="start", size=11,
             colour=MUTED)  # fmt: skip
    return svg.render("Lesson 8: a tensor-parallel MLP")


# ------------------------------------------------------------------ lesson 9


def one_f_one_b_split(p: int, m: int):
    """1F1B with the backward split as zero bubble splits it, B then W, each one tick, W
    straight after its B: the schedule zero bubble is measured against (the text's "1F1B
    with a two-tick backward")."""
    from grader.expected.l09_pipeline.schedules import BACKWARD, FORWARD, WEIGHT, list_schedule

    rank = {WEIGHT: 0, BACKWARD: 1, FORWARD: 2}  # a W is ready the tick after its B
    return list_schedule(p, m, lambda key: (rank[key[0]], key[2]), split_w=True,
                         cap=lambda s: p - s)  # fmt: skip


SPLIT_GAP = 58
"""Room for the line that says the schedules under it take two ticks a backward."""


def pipeline_schedules() -> str:
    """GPipe and 1F1B with a one-tick backward, then 1F1B and zero bubble with the backward
    split in two ticks (B, W): issue 48.2 — drawn side by side on unequal ticks, zero
    bubble's 27 ticks looked slower than 1F1B's 22; its match is 1F1B's 30."""
    from grader.expected.l09_pipeline.schedules import gpipe, one_f_one_b, simulate, zero_bubble

    p, m, cell = 4, 8, 20
    runs = (("GPipe", gpipe(p, m), False), ("1F1B", one_f_one_b(p, m), False),
            ("1F1B, W right after its B", one_f_one_b_split(p, m), True),
            ("Zero bubble (ZB-H1): W passes fill the idle ticks", zero_bubble(p, m), True))  # fmt: skip
    ticks = max(len(s) for _, s, _ in runs)
    band = p * cell + 56
    split_at = 2  # the runs from here on take two ticks for a backward
    svg = Svg(max(120 + ticks * cell + 20, 780), 60 + len(runs) * band + SPLIT_GAP + 10)
    svg.text(20, 22, f"Pipeline schedules, p = {p} stages, m = {m} micro-batches: "
             "one op per stage per tick", anchor="start", bold=True, size=13)  # fmt: skip
    for r, (name, schedule, split_w) in enumerate(runs):
        sim = simulate(schedule, p, m, split_w=split_w)
        assert not sim.violations, f"{name}: {sim.violations}"
        y0 = 56 + r * band + (SPLIT_GAP if r >= split_at else 0)
        if r == split_at:
            svg.line(20, y0 - 76, svg.width - 20, y0 - 76)
            svg.text(20, y0 - 54, "Below, a backward takes two ticks, B (input gradient) then "
                     "W (weight gradient), as zero bubble needs:", anchor="start", bold=True,
                     size=12)  # fmt: skip
            svg.text(20, y0 - 37, "compare zero bubble with the 1F1B just below, not with the "
                     "two above, whose backward is one tick.", anchor="start", size=12,
                     colour=MUTED)  # fmt: skip
        idle = sum(op is None for row in schedule for op in row) / (len(schedule) * p)
        svg.text(20, y0 - 8, f"{name}: {len(schedule)} ticks, {idle:.0%} idle", anchor="start",
                 bold=True)  # fmt: skip
        for s in range(p):
            svg.text(100, y0 + s * cell + cell / 2 + 4, f"stage {s}", anchor="end", size=11)
            for t, row in enumerate(schedule):
                op = row[s]
                x = 110 + t * cell
                svg.rect(x, y0 + s * cell, cell, cell, OP_FILLS[op[0]] if op else CARD,
                         stroke="#bfbfbf")  # fmt: skip
                if op:
                    svg.text(x + cell / 2, y0 + s * cell + cell / 2 + 4, f"{op[0]}{op[1]}",
                             size=9)  # fmt: skip
    y = 56 + len(runs) * band + SPLIT_GAP - 30
    legend = (("F", "forward of micro-batch i: Fi"), ("B", "backward: Bi"),
              ("W", "weight gradient: Wi"))  # fmt: skip
    for k, (kind, label) in enumerate(legend):
        svg.rect(110 + k * 190, y, 14, 14, OP_FILLS[kind])
        svg.text(130 + k * 190, y + 11, label, anchor="start", size=11)
    svg.rect(110 + 3 * 190, y, 14, 14, CARD, stroke="#bfbfbf")
    svg.text(130 + 3 * 190, y + 11, "idle", anchor="start", size=11)
    return svg.render("Lesson 9: GPipe, 1F1B and zero-bubble schedules, tick by tick")


# ------------------------------------------------------------------ lesson 10


def ring_attention() -> str:
    from grader.evidence import RING_USE
    from grader.lessons.l10_context_parallel.checks import ring_steps

    n, cell = 4, 44
    layouts = (("contiguous layout", False), ("zigzag layout", True))
    svg = Svg(980, 110 + n * cell + 50)
    svg.text(20, 22, f"Causal ring attention on N = {n} devices: what each step's K/V block is "
             "worth", anchor="start", bold=True, size=13)  # fmt: skip
    short = {"whole": "1", "diagonal": "½ ◣", "masked": "0",
             "first key chunk": "½", "second query chunk": "½"}  # fmt: skip
    for k, (title, zigzag) in enumerate(layouts):
        steps = ring_steps(n, n - 1, 1, True, zigzag)
        x0, y0 = 80 + k * (n * cell + 190), 72
        svg.text(x0 + n * cell / 2, 50, title, bold=True)
        for s in range(n):
            svg.text(x0 + s * cell + cell / 2, y0 - 6, f"step {s}", size=10, colour=MUTED)
        for i in range(n):
            svg.text(x0 - 8, y0 + i * cell + cell / 2 + 4, f"d{i}", anchor="end", bold=True)
            for s in range(n):
                use = steps.use[s][i]
                svg.rect(x0 + s * cell, y0 + i * cell, cell, cell, USE_FILLS[use])
                svg.text(x0 + s * cell + cell / 2, y0 + i * cell + cell / 2 - 2,
                         f"K{steps.held[s][i]}", size=10)  # fmt: skip
                svg.text(x0 + s * cell + cell / 2, y0 + i * cell + cell / 2 + 12, short[use],
                         size=10)  # fmt: skip
            work = steps.work()[i]
            svg.text(x0 + n * cell + 8, y0 + i * cell + cell / 2 + 4,
                     f"work {work:g}", anchor="start", size=11)  # fmt: skip
        wasted = sum(RING_USE[u] == 0 for row in steps.use for u in row)
        svg.text(x0 + n * cell / 2, y0 + n * cell + 20,
                 f"{wasted} of {n * n} blocks fully masked; slowest device {max(steps.work()):g}",
                 size=11, colour=MUTED)  # fmt: skip
    y = y0 + n * cell + 44
    for k, (use, label) in enumerate((("whole", "whole block (1)"),
                                      ("diagonal", "causal triangle (½)"),
                                      ("masked", "masked: computed for nothing (0)"),
                                      ("first key chunk", "zigzag half block (½)"))):  # fmt: skip
        svg.rect(40 + k * 235, y, 14, 14, USE_FILLS[use])
        svg.text(60 + k * 235, y + 11, label, anchor="start", size=11)
    return svg.render("Lesson 10: ring attention's blocks and the causal waste")


# ------------------------------------------------------------------ lesson 11


def expert_capacity() -> str:
    import math

    import numpy as np

    from grader.lessons.l11_expert_parallel import routing

    t, e = 256, 8  # lesson 11's measurement: 256 tokens, 8 experts, expert 0 favoured by one
    skewed = np.random.default_rng(0).standard_normal((t, e)) + np.eye(e)[0]
    capacity = math.ceil(1.25 * t / e)
    load = routing.route(skewed, capacity).load()
    scale, bar = 3.2, 22
    svg = Svg(720, 70 + e * (bar + 8) + 40)
    svg.text(20, 22, f"Tokens per expert, {t} tokens, capacity C = {capacity} (cf = 1.25), the "
             "router favouring expert 0", anchor="start", bold=True, size=13)  # fmt: skip
    x0 = 100
    for k, (routed, kept) in enumerate(load):
        y = 44 + k * (bar + 8)
        svg.text(x0 - 10, y + bar / 2 + 4, f"expert {k}", anchor="end", size=11)
        svg.rect(x0, y, kept * scale, bar, USE_FILLS["whole"])
        if routed > kept:
            svg.rect(x0 + kept * scale, y, (routed - kept) * scale, bar, USE_FILLS["masked"])
        svg.text(x0 + routed * scale + 8, y + bar / 2 + 4,
                 f"{routed} routed" + (f", {routed - kept} dropped" if routed > kept else ""),
                 anchor="start", size=11)  # fmt: skip
    cap_x = x0 + capacity * scale
    svg.line(cap_x, 38, cap_x, 44 + e * (bar + 8))
    svg.text(cap_x, 44 + e * (bar + 8) + 14, f"C = {capacity} slots", size=11, bold=True)
    y = 44 + e * (bar + 8) + 24
    svg.rect(x0, y, 14, 14, USE_FILLS["whole"])
    svg.text(x0 + 20, y + 11, "kept", anchor="start", size=11)
    svg.rect(x0 + 80, y, 14, 14, USE_FILLS["masked"])
    svg.text(x0 + 100, y + 11, "dropped (over capacity)", anchor="start", size=11)
    return svg.render("Lesson 11: tokens per expert against the capacity")


# ------------------------------------------------------------------ lesson 12


def who_holds_what() -> str:
    data, model, d, f, heads = 4, 2, 32, 64, 6  # lesson 12's example mesh and sizes
    w, h = 230, 52
    svg = Svg(120 + model * (w + 16) + 80, 80 + data * (h + 10) + 30)
    svg.text(20, 22, f"Who holds what on the ('data', 'model') = ({data}, {model}) mesh: "
             "each weight split twice", anchor="start", bold=True, size=13)  # fmt: skip
    for m in range(model):
        x = 120 + m * (w + 16)
        hs = heads // model
        svg.text(x + w / 2, 50, f"'model' {m}: heads {m * hs}–{(m + 1) * hs - 1}, "
                 f"F cols {m * f // model}–{(m + 1) * f // model - 1}", size=11, bold=True)  # fmt: skip
    for r in range(data):
        y = 62 + r * (h + 10)
        svg.text(110, y + h / 2 + 4, f"'data' {r}", anchor="end", bold=True)
        for m in range(model):
            x = 120 + m * (w + 16)
            svg.rect(x, y, w, h, DEVICE_FILLS[r * model + m])
            svg.text(x + w / 2, y + 20, f"device ({r}, {m}): x rows {r}", size=11)
            svg.text(x + w / 2, y + 38, f"D rows {r * d // data}–{(r + 1) * d // data - 1} "
                     "of its heads / F cols", size=11)  # fmt: skip
    svg.text(120, 62 + data * (h + 10) + 14, "A row of devices holds the same activations; each "
             "device holds |params| / (data · model).", anchor="start", size=11,
             colour=MUTED)  # fmt: skip
    return svg.render("Lesson 12: who holds what on a two-axis mesh")


# ------------------------------------------------------------------ lesson 13


def hierarchical_groups(p: int, d: int) -> dict[str, list[list[int]]]:
    """The replica groups of the three collectives on a (host, local) mesh of P × D
    devices, device id = host·D + local: within a host, then one device of each host."""
    within = [[h * d + j for j in range(d)] for h in range(p)]
    across = [[h * d + j for h in range(p)] for j in range(d)]
    return {"reduce-scatter": within, "all-reduce": across, "all-gather": within}


def parts_held(step: str, device: int, d: int) -> tuple[int, ...]:
    """The parts of the data (each 1/D of it) device ``device`` holds summed after ``step``
    of the hierarchical all-reduce, device id = host·D + local: its own local index's after
    the reduce-scatter within its host and the all-reduce across hosts, every part after
    the all-gather."""
    return tuple(range(d)) if step == "all-gather" else (device % d,)


def hierarchical_all_reduce() -> str:
    """Every panel colours a device by the D-th of the data it holds summed (issue 48.2: the
    middle one coloured by group and the others by host, with no legend): after step 1
    device j of each host holds part j summed over its host; step 2 sums part j over the
    hosts, between the devices that hold it (arrows); step 3 gathers every part onto every
    device (all D colours). The grey boxes are steps 1 and 3's groups, the arrows step 2's."""
    p, d, cell = 2, 4, 34
    groups = hierarchical_groups(p, d)
    col = d * cell + 60
    width = 80 + 3 * (col + 50)
    svg = Svg(width, 80 + p * (cell + 40) + 20 + 84)
    svg.text(20, 22, f"Hierarchical all-reduce on {p} hosts × {d} devices: 1/D of the data "
             "crosses hosts", anchor="start", bold=True, size=13)  # fmt: skip
    titles = {
        "reduce-scatter": "1. reduce-scatter within each host",
        "all-reduce": "2. all-reduce of 1/D across hosts",
        "all-gather": "3. all-gather within each host",
    }
    for k, (kind, gs) in enumerate(groups.items()):
        x0 = 80 + k * (col + 50)
        svg.text(x0 + d * cell / 2 + 10, 50, titles[kind], size=11, bold=True)
        for h in range(p):
            y = 70 + h * (cell + 40)
            svg.rect(x0 - 6, y - 6, d * cell + 12, cell + 12, "#f2f2f2", stroke=MUTED)
            svg.text(x0 - 10, y + cell / 2 + 4, f"host {h}", anchor="end", size=10)
            for j in range(d):
                device = h * d + j
                x, w = x0 + j * cell + 3, cell - 6
                held = parts_held(kind, device, d)
                for i, q in enumerate(held):  # one stripe per part it holds
                    svg.rect(x + i * w / len(held), y + 3, w / len(held), w, DEVICE_FILLS[q],
                             stroke="none")  # fmt: skip
                svg.rect(x, y + 3, w, w, "none")
                svg.text(x0 + j * cell + cell / 2, y + cell / 2 + 4, f"d{device}", size=10)
        if kind == "all-reduce":
            for j in range(d):
                x = x0 + j * cell + cell / 2
                svg.line(x, 70 + cell - 1, x, 70 + cell + 39, both=True)  # both ways
        label = " ".join("{" + ",".join(map(str, g)) + "}" for g in gs)
        svg.text(x0 + d * cell / 2, 70 + p * (cell + 40) + 4, f"groups {label}", size=10,
                 colour=MUTED)  # fmt: skip
    y = 70 + p * (cell + 40) + 26
    for q in range(d):
        svg.rect(80 + q * 84, y, 14, 14, DEVICE_FILLS[q])
        svg.text(100 + q * 84, y + 11, f"part {q}", anchor="start", size=11)
    for q in range(d):
        svg.rect(80 + d * 84 + 10 + q * 14 / d, y, 14 / d, 14, DEVICE_FILLS[q], stroke="none")
    svg.rect(80 + d * 84 + 10, y, 14, 14, "none")
    svg.text(80 + d * 84 + 30, y + 11, "every part", anchor="start", size=11)
    caption = ("Colour: the part of the data (1/D of it) a device holds summed: over its host "
               "after step 1,", "over every host after step 2, and every part after step 3. "
               "Grey boxes: the groups of steps 1 and 3;", "arrows: step 2's, between the "
               "devices of the hosts that hold the same part.")  # fmt: skip
    for i, line in enumerate(caption):
        svg.text(80, y + 34 + i * 15, line, anchor="start", size=11, colour=MUTED)
    return svg.render("Lesson 13: the hierarchical all-reduce's three steps and their groups")


# ------------------------------------------------------------------ lesson 14


PLANS_14 = ((1, 1, 8, 8, 64, "none"), (2, 1, 4, 8, 32, "block"), (1, 1, 4, 16, 64, "block"),
            (2, 2, 4, 4, 16, "block"), (1, 2, 4, 8, 32, "block"), (2, 1, 8, 4, 32, "block"))  # fmt: skip
"""Lesson 14's worked example: the six fastest plans for LLaMA-3-70B on 64 H100s."""


def time_breakdown() -> str:
    from grader.expected.l14_planning import cost
    from grader.lessons.l14_planning.records import HARDWARE, MODELS, Plan

    model = MODELS["llama-3-70b"]
    hw = dataclasses.replace(HARDWARE["h100-sxm"], chips=64)
    terms = ("compute", "bubble", "tp", "fsdp", "dp", "pp")
    scale, bar = 62, 24
    svg = Svg(900, 70 + len(PLANS_14) * (bar + 12) + 30)
    svg.text(20, 22, "LLaMA-3-70B on 64 H100s, 64 × 8192 tokens: one step's time by term, "
             "the six fastest plans that fit", anchor="start", bold=True, size=13)  # fmt: skip
    for r, plan in enumerate(PLANS_14):
        t = cost.step_time(model, hw, Plan(*plan), 64)
        y = 44 + r * (bar + 12)
        dp, fsdp, tp, pp, micro, remat = plan
        svg.text(200, y + bar / 2 + 4, f"dp{dp} fsdp{fsdp} tp{tp} pp{pp} m{micro} {remat}",
                 anchor="end", size=11)  # fmt: skip
        x = 210.0
        for term in terms:
            w = t[term] * scale
            if w > 0:
                svg.rect(x, y, w, bar, TERM_FILLS[term])
                if w > 30:
                    svg.text(x + w / 2, y + bar / 2 + 4, f"{t[term]:.2f}", size=10)
            x += w
        svg.text(x + 8, y + bar / 2 + 4, f"{t['total']:.2f} s · MFU {t['mfu']:.1%}",
                 anchor="start", size=11)  # fmt: skip
    y = 44 + len(PLANS_14) * (bar + 12) + 10
    for k, term in enumerate(terms):
        svg.rect(210 + k * 95, y, 14, 14, TERM_FILLS[term])
        svg.text(230 + k * 95, y + 11, term, anchor="start", size=11)
    return svg.render("Lesson 14: a plan's step time, term by term")


# ------------------------------------------------------------------ lesson 15


def zero_stages() -> str:
    from grader.lessons.l15_optimizer.byte_table import THIS_LESSON, per_device

    psi, n, hbm = 7e9, 64, 80  # lesson 15's worked example: 7B parameters on 64 GPUs of 80 GB
    mix = THIS_LESSON
    names = ("no sharding", "ZeRO-1", "ZeRO-2", "ZeRO-3")
    fills = ("#a9cdf5", "#9fdfb0", "#ffd6a5")
    scale, bar, x0 = 5.5, 26, 140
    svg = Svg(900, 70 + len(names) * (bar + 16) + 50)
    svg.text(20, 22, f"A 7B model on {n} GPUs of {hbm} GB: the state each device keeps, by "
             "ZeRO stage", anchor="start", bold=True, size=13)  # fmt: skip
    for stage, name in enumerate(names):
        y = 48 + stage * (bar + 16)
        parts = (mix.params / (n if stage >= 3 else 1), mix.grads / (n if stage >= 2 else 1),
                 mix.optimizer / (n if stage >= 1 else 1))  # fmt: skip
        total = per_device(mix, stage, n)  # the grader's formula
        assert abs(sum(parts) - total) < 1e-9, (stage, parts, total)
        svg.text(x0 - 10, y + bar / 2 + 4, name, anchor="end", bold=True)
        x = float(x0)
        for part, fill in zip(parts, fills):
            svg.rect(x, y, part * psi / 1e9 * scale, bar, fill)
            x += part * psi / 1e9 * scale
        gb = total * psi / 1e9
        svg.text(x + 8, y + bar / 2 + 4, f"{gb:.3g} GB", anchor="start", size=11)
    line_x = x0 + hbm * scale
    svg.line(line_x, 40, line_x, 48 + len(names) * (bar + 16) - 8)
    svg.text(line_x + 4, 44 + len(names) * (bar + 16) + 6, f"{hbm} GB: one GPU", anchor="start",
             size=11, bold=True)  # fmt: skip
    y = 48 + len(names) * (bar + 16) + 20
    labels = (f"bf16 params ({mix.params} B)", f"fp32 gradient buffer ({mix.grads} B)",
              f"fp32 master, m, v ({mix.optimizer} B)")  # fmt: skip
    for k, (label, fill) in enumerate(zip(labels, fills)):
        svg.rect(x0 + k * 200, y, 14, 14, fill)
        svg.text(x0 + 20 + k * 200, y + 11, label, anchor="start", size=11)
    return svg.render("Lesson 15: the state per device under each ZeRO stage")


ZERO_STEP_15 = {"n": 4, "chunk": 12_288, "micro": 2}
"""Section 3's measured example: N = 4, Ψ = 49,152 (N·chunk), M = 2 micro-batches."""
WIRE_FILLS = {"reduce-scatter": "#f4a3a3", "all-gather": "#a9cdf5", "compute": "#e6e6e6"}


def zero_step_boxes(stage: int, ex: dict) -> list[tuple[str, str, list[str]]]:
    """One ZeRO step's phases, in order, as (kind, title, lines): the collectives' counts
    from the grader's :func:`stage_collectives` (a title counts those of one micro-batch
    where the phase runs per micro-batch; the lines count the step's), their elements from
    its ring model, their bytes in the width :data:`RS_WIRE` (and bfloat16 params) gives."""
    from grader.lessons.l15_optimizer.spec import RS_WIRE, WIDTH, ring_elements, stage_collectives

    micro, unit = ex["micro"], ring_elements(ex)
    count = stage_collectives(stage, micro)
    rs, ag = count["reduce-scatter"], count["all-gather"]

    def wire(k: int, dtype: str) -> list[str]:
        short = "f32" if dtype == "float32" else "bf16"
        return [f"{k} × {unit:,} {short}", f"= {k * unit * WIDTH[dtype]:,} B"]

    step = "; per step:" if stage >= 2 else ":"

    def times(k: int, what: str) -> str:
        return what if k == 1 else f"{k} {what}s"

    per = micro if stage >= 2 else 1  # the scatter runs per micro-batch from ZeRO-2 on
    scatter = ("reduce-scatter", times(rs // per, "reduce-scatter"),
               [f"the gradient{step}", *wire(rs, RS_WIRE[stage])])  # fmt: skip
    update = ("compute", "AdamW", ["on this device's", "Ψ/N slice, float32"])
    if stage == 3:
        gather = ("all-gather", times(ag // micro, "all-gather"),
                  ["fwd, bwd; per step:", *wire(ag, "bfloat16")])  # fmt: skip
        return [gather, ("compute", "fwd + bwd", ["on the gathered", "params, then freed"]),
                scatter, update]  # fmt: skip
    gather = ("all-gather", times(ag, "all-gather"), ["of bf16(master):", *wire(ag, "bfloat16")])
    if stage == 1:
        return [("compute", f"{micro} × fwd + bwd", ["Σ g in float32,", "[Ψ] on each device"]),
                scatter, update, gather]  # fmt: skip
    return [
        ("compute", "fwd + bwd", ["one micro-batch's", "bf16 gradient"]),
        scatter,
        update,
        gather,
    ]


def zero_step_collectives() -> str:
    from grader.lessons.l15_optimizer.byte_table import THIS_LESSON, per_device
    from grader.lessons.l15_optimizer.spec import (
        RS_WIRE,
        WIDTH,
        psi,
        ring_elements,
        stage_collectives,
    )

    ex = ZERO_STEP_15
    n, size, micro, unit = ex["n"], psi(ex), ex["micro"], ring_elements(ex)
    # Drawn about 750 wide, so that a page or a notebook shows it near its own size: each
    # stage's memory above its step, no label under 12 px (issue 48.2: side by side it was
    # 1,196 wide, and its 10 px labels were 6 px on a page).
    track, row, x0, label_x = 100, 24, 312, 302
    box_w, box_h, gap = 162, 92, 20
    panel = 26 + 3 * (row + 6) + 30 + 24 + box_h + 34
    width = 20 + 4 * box_w + 3 * gap + 20
    svg = Svg(width, 78 + 3 * panel + 34)
    svg.text(20, 24, f"One ZeRO step on N = {n} devices, M = {micro} micro-batches, "
             f"Ψ = {size:,}", anchor="start", bold=True, size=16)  # fmt: skip
    svg.text(20, 44, "what each device holds, and what moves; one unit = (N − 1)/N · Ψ = "
             f"{unit:,} elements", anchor="start", size=13, colour=MUTED)  # fmt: skip
    svg.text(20, 62, "sent per device (the ring optimum), in the width each collective sends",
             anchor="start", size=13, colour=MUTED)  # fmt: skip
    held = {1: ("whole", "whole", "slice"), 2: ("whole", "slice", "slice"),
            3: ("slice", "slice", "slice")}  # fmt: skip
    labels = ("bf16 params", "gradient", "fp32 master, m, v")
    seg = track / n
    for k, stage in enumerate((1, 2, 3)):
        y0 = 84 + k * panel
        if k:
            svg.line(20, y0 - 14, width - 20, y0 - 14)
        kept = per_device(THIS_LESSON, stage, n) * size  # the grader's byte table
        units = sum(stage_collectives(stage, micro).values())
        sent = sum(k * unit * WIDTH[RS_WIRE[stage] if c == "reduce-scatter" else "bfloat16"]
                   for c, k in stage_collectives(stage, micro).items())  # fmt: skip
        svg.text(20, y0 + 14, f"ZeRO-{stage}", anchor="start", bold=True, size=16)
        for j, (line, bold) in enumerate(((f"keeps {kept:,.0f} B", False), ("per device", False),
                                          (f"sends {units} units:", True),
                                          (f"{units * unit:,} elements,", False),
                                          (f"{sent:,} B", False))):  # fmt: skip
            svg.text(20, y0 + 36 + j * 17, line, anchor="start", size=13, bold=bold)
        for i in range(n):
            svg.text(x0 + i * (track + 8) + track / 2, y0 + 14, f"device {i}", size=13)
        for r, (label, how) in enumerate(zip(labels, held[stage])):
            y = y0 + 24 + r * (row + 6)
            svg.text(label_x, y + row / 2 + 5, label, anchor="end", size=13)
            for i in range(n):
                x = x0 + i * (track + 8)
                if how == "whole":
                    svg.rect(x, y, track, row, "#d9d9d9")
                    svg.text(x + track / 2, y + row / 2 + 5, "[Ψ]", size=13)
                else:
                    svg.rect(x, y, track, row, CARD, stroke=MUTED)
                    svg.rect(x + i * seg, y, seg, row, DEVICE_FILLS[i])
        note = {1: "the gradient buffer is whole until the one reduce-scatter",
                2: "only this device's slice of the gradient is accumulated",
                3: "params whole only inside each micro-batch's fwd and bwd"}[stage]  # fmt: skip
        svg.text(x0, y0 + 24 + 3 * (row + 6) + 14, note, anchor="start", size=13, colour=MUTED)
        by = y0 + 24 + 3 * (row + 6) + 30 + 24  # the step's boxes, under the memory
        each = {1: 0, 2: 2, 3: 3}[stage]  # the boxes run once per micro-batch
        if each:
            right = 20 + each * (box_w + gap) - gap
            svg.line(20, by - 8, right, by - 8, both=True)
            svg.text((20 + right) / 2, by - 14, f"each of the M = {micro} micro-batches",
                     size=13, bold=True)  # fmt: skip
        for b, (kind, title, lines) in enumerate(zero_step_boxes(stage, ex)):
            x = 20 + b * (box_w + gap)
            svg.rect(x, by, box_w, box_h, WIRE_FILLS[kind])
            svg.text(x + box_w / 2, by + 20, title, size=14, bold=True)
            for j, line in enumerate(lines):
                svg.text(x + box_w / 2, by + 40 + j * 17, line, size=13)
            if b:
                svg.line(x - gap, by + box_h / 2, x - 2, by + box_h / 2, arrow=True)
    y = 84 + 3 * panel - 8
    for k, (label, fill) in enumerate((("whole [Ψ] on every device", "#d9d9d9"),
                                       ("this device's slice, Ψ/N", DEVICE_FILLS[0]),
                                       ("reduce-scatter", WIRE_FILLS["reduce-scatter"]),
                                       ("all-gather", WIRE_FILLS["all-gather"]))):  # fmt: skip
        x = 20 + (0, 210, 410, 560)[k]
        svg.rect(x, y, 16, 16, fill)
        svg.text(x + 22, y + 13, label, anchor="start", size=13)
    return svg.render("Lesson 15: one ZeRO-1, ZeRO-2 and ZeRO-3 step's collectives")


# ------------------------------------------------------------------ lesson 16


SERVE_16 = ("llama-2-13b", "tpu-v5e-8", 8192, 2)
"""Lesson 16's worked example: model, slice, context (tokens cached a sequence), itemsize."""
BATCHES_16 = (1, 2, 4, 8, 16, 32, 64, 128, 240, 512, 1024)


def decode_terms(model: str, batches: tuple[int, ...] = BATCHES_16) -> list[dict[str, float]]:
    """Per batch, lesson 16's decode step in seconds and its parts, from the grader's cost
    model: ``caches`` (read at bandwidth), the weights' ``read`` and ``flops`` (the step
    takes the larger) and ``step``; ``tokens`` per second of the slice."""
    from grader.expected.l16_serving import cost
    from grader.lessons.l16_serving.records import MODELS, SLICES, param_count

    _, slice_name, context, itemsize = SERVE_16
    m, s = MODELS[model], SLICES[slice_name]
    out = []
    for b in batches:
        weights = cost.decode_step_time(m, s, b, 0, itemsize)  # no cache: the weights' max
        step = cost.decode_step_time(m, s, b, context, itemsize)
        out.append({
            "batch": b,
            "caches": step - weights,
            "read": param_count(m) * itemsize / (s.chips * s.hbm_bandwidth),
            "flops": 2.0 * b * param_count(m) / (s.chips * s.peak_flops),
            "step": step,
            "tokens": cost.throughput(m, s, b, context, itemsize),
        })  # fmt: skip
    return out


def _serving_16(model: str) -> tuple[float, int, float]:
    """The critical batch, max_batch and the throughput ceiling (bandwidth / cache bytes
    of one sequence) of lesson 16's worked example for ``model``."""
    from grader.expected.l16_serving import cost
    from grader.lessons.l16_serving.records import MODELS, SLICES

    _, slice_name, context, itemsize = SERVE_16
    m, s = MODELS[model], SLICES[slice_name]
    ceiling = s.chips * s.hbm_bandwidth / cost.kv_cache_bytes(m, context, itemsize)
    return cost.critical_batch(s, itemsize), cost.max_batch(m, s, context, itemsize), ceiling


def decode_roofline() -> str:
    import math

    model = SERVE_16[0]
    terms = decode_terms(model)
    critical, fits, _ = _serving_16(model)
    x0, y0, w, h = 80, 60, 560, 300
    lo_b, hi_b, lo_t, hi_t = 0.0, math.log2(1024), -5.0, 0.2  # log2 batch, log10 seconds

    def px(b: float) -> float:
        return x0 + (math.log2(b) - lo_b) / (hi_b - lo_b) * w

    def py(t: float) -> float:
        return y0 + h - (math.log10(t) - lo_t) / (hi_t - lo_t) * h

    svg = Svg(900, y0 + h + 70)
    svg.text(20, 22, "LLaMA-2-13B on 8 TPU v5e, bf16, 8,192-token caches: one decode step "
             "against the batch, log-log", anchor="start", bold=True, size=13)  # fmt: skip
    svg.rect(x0, y0, px(critical) - x0, h, "#eef4fb", stroke=MUTED)
    svg.rect(px(critical), y0, x0 + w - px(critical), h, "#fdf0e6", stroke=MUTED)
    middle = (px(fits) + px(critical)) / 2
    svg.text(middle, y0 + 16, "weights memory-bound:", size=11, bold=True)
    svg.text(middle, y0 + 30, "step = caches + weights read", size=11)
    svg.text((px(critical) + x0 + w) / 2, y0 + h - 70, "compute-bound:", size=11, bold=True)
    svg.text((px(critical) + x0 + w) / 2, y0 + h - 56, "caches + FLOPs", size=11)
    for b in (1, 4, 16, 64, 256, 1024):
        svg.text(px(b), y0 + h + 16, f"{b}", size=10, colour=MUTED)
    for e in range(-5, 1):
        svg.text(x0 - 6, py(10**e) + 4, f"{10**e * 1e3:g} ms", anchor="end", size=10,
                 colour=MUTED)  # fmt: skip
    svg.text(x0 + w / 2, y0 + h + 34, "batch B (sequences decoding at once)", size=11)
    svg.text(x0 - 6, y0 - 8, "time", anchor="end", size=11)
    lines = (("step", "#1a1a1a", 3, "decode step: caches + max(read, FLOPs)"),
             ("caches", "#0b5cad", 1.5, "caches read: B · cache bytes / bandwidth"),
             ("read", "#1a7f37", 1.5, "weights read: P · itemsize / bandwidth"),
             ("flops", "#c5221f", 1.5, "weights' FLOPs: 2 · B · P / peak"))  # fmt: skip
    for k, (key, colour, width, label) in enumerate(lines):
        path = " ".join(f"{px(t['batch']):.1f},{py(t[key]):.1f}" for t in terms)
        svg.parts.append(f'<polyline points="{path}" fill="none" stroke="{colour}" '
                         f'stroke-width="{width:g}"/>')  # fmt: skip
        svg.text(x0 + w + 12, y0 + 60 + 34 * k, label.split(": ")[0], anchor="start",
                 size=11, colour=colour, bold=True)  # fmt: skip
        if ": " in label:
            svg.text(x0 + w + 12, y0 + 74 + 34 * k, label.split(": ")[1], anchor="start",
                     size=10, colour=colour)  # fmt: skip
    svg.line(px(critical), y0, px(critical), y0 + h)
    svg.text(px(critical) + 4, y0 + h - 28, f"B* = {critical:.0f}", anchor="start",
             size=11, bold=True)  # fmt: skip
    svg.text(px(critical) + 4, y0 + h - 14, "read = FLOPs", anchor="start", size=10)
    svg.parts.append(f'<line x1="{px(fits):.1f}" y1="{y0}" x2="{px(fits):.1f}" y2="{y0 + h}" '
                     f'stroke="{INK}" stroke-width="1.2" stroke-dasharray="5,4"/>')  # fmt: skip
    svg.text(px(fits) - 4, y0 + 40, f"max_batch = {fits}", anchor="end", size=11, bold=True)
    svg.text(px(fits) - 4, y0 + 54, "HBM full beyond", anchor="end", size=10)
    svg.text(x0, y0 + h + 56, "The caches are read at every batch (intensity ≈ 1): only the "
             "weights' term changes side at B*.", anchor="start", size=11,
             colour=MUTED)  # fmt: skip
    return svg.render("Lesson 16: a decode step's time against the batch")


def latency_throughput() -> str:
    import math

    models = (("llama-2-13b", "#0b5cad", "K = 40 (LLaMA-2-13B)"),
              ("llama-2-13b-gqa", "#c5221f", "K = 8 (GQA what-if)"))  # fmt: skip
    batches = (1, 2, 4, 8, 16, 32, 64, 83, 128, 240)
    x0, y0, w, h = 80, 50, 560, 300
    lo_t, hi_t, top = 0.0, math.log10(300), 5000.0  # log10 ms, tokens/s

    def px(ms: float) -> float:
        return x0 + (math.log10(ms) - lo_t) / (hi_t - lo_t) * w

    def py(tokens: float) -> float:
        return y0 + h - tokens / top * h

    svg = Svg(900, y0 + h + 70)
    svg.text(20, 22, "Throughput against latency on 8 TPU v5e, 8,192-token caches: each "
             "point a batch size", anchor="start", bold=True, size=13)  # fmt: skip
    svg.rect(x0, y0, w, h, CARD, stroke=MUTED)
    for ms in (1, 3, 10, 30, 100, 300):
        svg.text(px(ms), y0 + h + 16, f"{ms:g}", size=10, colour=MUTED)
    for tokens in range(0, 5001, 1000):
        svg.text(x0 - 6, py(tokens) + 4, f"{tokens:,}", anchor="end", size=10, colour=MUTED)
    svg.text(x0 + w / 2, y0 + h + 34, "decode step time = latency per token (ms, log)", size=11)
    svg.text(20, y0 - 8, "tokens/s of the slice", anchor="start", size=11)
    for k, (model, colour, label) in enumerate(models):
        _, fits, ceiling = _serving_16(model)
        svg.parts.append(f'<line x1="{x0}" y1="{py(ceiling):.1f}" x2="{x0 + w}" '
                         f'y2="{py(ceiling):.1f}" stroke="{colour}" stroke-width="1" '
                         'stroke-dasharray="5,4"/>')  # fmt: skip
        svg.text(x0 + 6, py(ceiling) + (-5 if k == 0 else 14), f"ceiling {int(ceiling):,} tokens/s: bandwidth / "
                 "cache bytes of a sequence", anchor="start", size=10, colour=colour)  # fmt: skip
        terms = decode_terms(model, batches)
        path = " ".join(f"{px(t['step'] * 1e3):.1f},{py(t['tokens']):.1f}" for t in terms)
        svg.parts.append(f'<polyline points="{path}" fill="none" stroke="{colour}" '
                         'stroke-width="1.5"/>')  # fmt: skip
        for t in terms:
            fill = colour if t["batch"] <= fits else CARD
            svg.parts.append(f'<circle cx="{px(t["step"] * 1e3):.1f}" cy="{py(t["tokens"]):.1f}" '
                             f'r="4" fill="{fill}" stroke="{colour}" stroke-width="1.5"/>')  # fmt: skip
            if t["batch"] in {1, 16, 240, fits} | ({64} if k == 0 else set()):
                svg.text(px(t["step"] * 1e3) + (6 if k == 0 else -6),
                         py(t["tokens"]) + (14 if k == 0 else -8), f"B={t['batch']}",
                         anchor="start" if k == 0 else "end", size=10)  # fmt: skip
        svg.text(x0 + w + 12, y0 + 20 + 40 * k, label, anchor="start", size=11, colour=colour,
                 bold=True)  # fmt: skip
        svg.text(x0 + w + 12, y0 + 34 + 40 * k, f"max_batch = {fits}", anchor="start",
                 size=10, colour=colour)  # fmt: skip
    svg.text(x0, y0 + h + 56, "Filled: the caches fit in the slice's HBM (B ≤ max_batch); "
             "hollow: they do not.", anchor="start", size=11, colour=MUTED)  # fmt: skip
    return svg.render("Lesson 16: throughput against latency as the batch grows")


def kv_cache_owners(spec: tuple, mesh: dict[str, int], batch: int, heads: int) -> list[list[int]]:
    """``out[b][h]``: the device (row-major over ``mesh``) holding batch row b and head h
    of a cache ``[L, 2, B, S, K, Dh]`` sharded by ``spec`` (lesson 1's owners, so a
    replicated cell names its first holder)."""
    shape = (1, 1, batch, 1, heads, 1)
    grid = [[-1] * heads for _ in range(batch)]
    for device, block in sorted(owners(shape, mesh, spec).items(), reverse=True):
        (b0, b1), (h0, h1) = block[2], block[4]
        for b in range(b0, b1):
            for k in range(h0, h1):
                grid[b][k] = device
    return grid


def kv_cache_sharding() -> str:
    from grader.lessons.l16_serving.serve import CACHE_GQA, CACHE_SPEC, DATA, MODEL

    mesh = {DATA: 2, MODEL: 2}
    panels = ((CACHE_SPEC, 8, 4, "§5: K = 4 heads, split over 'model'"),
              (CACHE_GQA, 8, 1, "§6: K = 1 head < model: the batch split twice"))  # fmt: skip
    cell = 30
    svg = Svg(900, 110 + 8 * cell + 60)
    svg.text(20, 22, "The KV cache [L, 2, B, S, K, Dh] on the ('data', 'model') = (2, 2) mesh: "
             "who holds which rows and heads", anchor="start", bold=True, size=13)  # fmt: skip
    for p, (spec, batch, heads, title) in enumerate(panels):
        x0, y0 = 110 + p * 520, 84
        grid = kv_cache_owners(spec, mesh, batch, heads)
        svg.text(x0 + heads * cell * 1.5, y0 - 40, title, size=12, bold=True)
        svg.text(x0 + heads * cell * 1.5, y0 - 24, _spec_text(spec), size=11)
        for k in range(heads):
            svg.text(x0 + (k + 0.5) * cell * 3, y0 - 6, f"head {k}", size=10, colour=MUTED)
        for b in range(batch):
            svg.text(x0 - 8, y0 + (b + 0.5) * cell + 4, f"row {b}", anchor="end", size=10,
                     colour=MUTED)  # fmt: skip
            for k in range(heads):
                d = grid[b][k]
                svg.rect(x0 + k * cell * 3, y0 + b * cell, cell * 3, cell, DEVICE_FILLS[d])
                svg.text(x0 + (k + 0.5) * cell * 3, y0 + (b + 0.5) * cell + 4,
                         f"d{d} = ({d // mesh[MODEL]}, {d % mesh[MODEL]})", size=10)  # fmt: skip
    svg.text(20, y0 + 8 * cell + 24, "d = (data, model) coordinate. Left: the device that "
             "computes a row's keys and values for a head stores them — the cache never moves.",
             anchor="start", size=11, colour=MUTED)  # fmt: skip
    svg.text(20, y0 + 8 * cell + 42, "Right: each device keeps B/(data·model) whole rows; "
             "two all-to-alls per layer move the queries to their rows instead.",
             anchor="start", size=11, colour=MUTED)  # fmt: skip
    return svg.render("Lesson 16: the KV cache's rows and heads on a (data, model) mesh")


# ------------------------------------------------------------------ measured on one TPU v5e


CHIP_DATA = "benchmarks/tpu_v5e"
"""Where the figures measured on the lent TPU v5e are kept (its README says how they were
measured): in a checkout, beside the benchmarks that wrote them."""


def chip_data(name: str):
    """A measured file of :data:`CHIP_DATA`, parsed (``roofline.json``, ``decode.json``)."""
    import json

    from grader.repo import CODE

    return json.loads((CODE / CHIP_DATA / name).read_text())


def roofline_points_v5e() -> dict[str, list[dict[str, float]]]:
    """Lesson 3's measured points on the v5e: for each matmul of ``roofline.json``, its
    arithmetic intensity (section 2's flops / bytes in bf16: [B, d]·[d, d] and n×n×n) and
    the FLOP/s it reached; and the stream's bandwidth (bytes/s) at its largest size."""
    data = chip_data("roofline.json")
    d = 8192
    weight = [{"batch": r["batch"], "intensity": r["batch"] * d / (2 * r["batch"] + d),
               "flops": r["tflops"] * 1e12, "seconds": r["seconds"]}
              for r in data["weight"]]  # fmt: skip
    square = [{"n": r["n"], "intensity": r["n"] / 3, "flops": r["tflops"] * 1e12,
               "seconds": r["seconds"]} for r in data["square"]]  # fmt: skip
    stream = max(data["stream"], key=lambda r: r["mib"])
    return {"weight": weight, "square": square, "bandwidth": stream["gbs"] * 1e9}


def roofline_v5e() -> str:
    import math

    from grader.lessons.l03_cost_model.spec import CHIPS

    chip = CHIPS["tpu-v5e"]
    pts = roofline_points_v5e()
    measured_bw = pts["bandwidth"]
    x0, y0, w, h = 80, 56, 460, 300
    lo_i, hi_i, lo_f, hi_f = 0.0, 4.0, 12.0, 14.5  # log10 of FLOPs/byte and FLOP/s

    def px(i: float) -> float:
        return x0 + (math.log10(i) - lo_i) / (hi_i - lo_i) * w

    def py(f: float) -> float:
        return y0 + h - (math.log10(f) - lo_f) / (hi_f - lo_f) * h

    svg = Svg(800, y0 + h + 76)
    svg.text(20, 22, "One TPU v5e, measured: achieved FLOP/s against arithmetic intensity, "
             "log-log", anchor="start", bold=True, size=13)  # fmt: skip
    svg.rect(x0, y0, w, h, CARD, stroke=MUTED)
    for e in range(int(lo_i), int(hi_i) + 1):
        svg.text(px(10**e), y0 + h + 16, f"{10**e:g}", size=11, colour=MUTED)
    for f in (1e12, 3e12, 1e13, 3e13, 1e14, 3e14):
        svg.text(x0 - 6, py(f) + 4, f"{f / 1e12:g} T", anchor="end", size=11, colour=MUTED)
    svg.text(x0 + w / 2, y0 + h + 34, "arithmetic intensity (FLOPs per byte)", size=12)
    svg.text(x0 - 6, y0 - 10, "FLOP/s", anchor="end", size=12)
    for bw, colour, dash, label in (
        (chip.hbm_bandwidth, "#0b5cad", "", f"roofline: min({chip.peak_flops / 1e12:g} T, "
         f"I · {chip.hbm_bandwidth / 1e9:g} GB/s)"),
        (measured_bw, "#c5221f", ' stroke-dasharray="6,4"', f"min({chip.peak_flops / 1e12:g} T, "
         f"I · {measured_bw / 1e9:.1f} GB/s measured)"),
    ):  # fmt: skip
        knee = chip.peak_flops / bw
        start = 10**lo_f / bw  # where I · bandwidth enters the plot at its floor
        line = [(start, 10**lo_f), (knee, chip.peak_flops), (10**hi_i, chip.peak_flops)]
        path = " ".join(f"{px(i):.1f},{py(f):.1f}" for i, f in line)
        svg.parts.append(f'<polyline points="{path}" fill="none" stroke="{colour}" '
                         f'stroke-width="2"{dash}/>')  # fmt: skip
        k = 0 if bw == chip.hbm_bandwidth else 1
        svg.text(x0 + w + 12, y0 + 20 + 36 * k, label.split(": ")[0] if k == 0 else
                 "measured bandwidth:", anchor="start", size=12, colour=colour,
                 bold=True)  # fmt: skip
        svg.text(x0 + w + 12, y0 + 36 + 36 * k, label.split(": ")[-1] if k == 0 else label,
                 anchor="start", size=11, colour=colour)  # fmt: skip
    knee = chip.peak_flops / chip.hbm_bandwidth
    svg.parts.append(f'<line x1="{px(knee):.1f}" y1="{y0}" x2="{px(knee):.1f}" y2="{y0 + h}" '
                     f'stroke="{MUTED}" stroke-width="1" stroke-dasharray="2,3"/>')  # fmt: skip
    svg.text(px(knee) + 4, y0 + h - 8, f"C/H = {knee:.0f}", anchor="start", size=11)
    ink = "#1a7f37"
    for r in pts["weight"]:
        svg.parts.append(f'<circle cx="{px(r["intensity"]):.1f}" cy="{py(r["flops"]):.1f}" '
                         f'r="4.5" fill="{ink}"/>')  # fmt: skip
        if r["batch"] in (8, 64, 256, 1024):
            under = r["batch"] == 1024  # n=4096's square is just right of it
            svg.text(px(r["intensity"]) + (0 if under else 7), py(r["flops"]) + (19 if under
                     else 15), f"B={r['batch']}", anchor="middle" if under else "start",
                     size=11)  # fmt: skip
    for r in pts["square"]:
        x, y = px(r["intensity"]), py(r["flops"])
        svg.parts.append(f'<rect x="{x - 4.5:.1f}" y="{y - 4.5:.1f}" width="9" height="9" '
                         f'fill="{CARD}" stroke="{INK}" stroke-width="1.5"/>')  # fmt: skip
        dy = {4096: 18, 8192: -9}.get(r["n"], 4)
        svg.text(x + 7, y + dy, f"n={r['n']}", anchor="start", size=11)
    svg.parts.append(f'<circle cx="{x0 + w + 18}" cy="{y0 + 96}" r="4.5" fill="{ink}"/>')
    svg.text(x0 + w + 28, y0 + 100, "[B, 8192]·[8192, 8192]", anchor="start", size=11)
    svg.parts.append(f'<rect x="{x0 + w + 13.5}" y="{y0 + 113.5}" width="9" height="9" '
                     f'fill="{CARD}" stroke="{INK}" stroke-width="1.5"/>')  # fmt: skip
    svg.text(x0 + w + 28, y0 + 122, "n×n·n×n", anchor="start", size=11)
    svg.text(x0 + w + 12, y0 + 150, "bf16, each call's share of", anchor="start", size=11,
             colour=MUTED)  # fmt: skip
    svg.text(x0 + w + 12, y0 + 165, "10 queued back to back", anchor="start", size=11,
             colour=MUTED)  # fmt: skip
    svg.text(20, y0 + h + 56, "Measured 2026-12-05 with jax 0.10.2 by benchmarks/tpu_roofline.py "
             "(benchmarks/tpu_v5e/roofline.json).", anchor="start", size=11,
             colour=MUTED)  # fmt: skip
    return svg.render("Lesson 3: the roofline of one TPU v5e against its measured matmuls")


MODEL_16_CHIP = ("llama-0.85b", 16, 2048, 5632, 16, 4, 128, 32000)
"""Lesson 16's decode step measured on one v5e (benchmarks/tpu_decode.py's model):
name, L, D, F, N, K, H, V; bf16, context :data:`CONTEXT_16_CHIP`."""
CONTEXT_16_CHIP = 2048
SLICE_16_CHIP = ("v5e-1", 1, 1.97e14, 16 * 2**30, 8.2e11)
"""One v5e chip as the lesson's slices give it (peak, HBM, bandwidth per chip)."""
FORMS_16_CHIP = (("repeat", "#c5221f"), ("grouped", "#d97706"), ("heads-major", "#0b5cad"),
                 ("layers", "#1a7f37"), ("kv-layers", "#a3319c"), ("paged", "#0f766e"))  # fmt: skip
"""The forms lesson 16's table and figure show (decode.json holds two more: unrolled and
kt-layers, which the text gives in words)."""


def decode_on_chip_model(batches: tuple[int, ...]) -> list[dict[str, float]]:
    """Per batch: the lesson's ``decode_step_time`` on one v5e (seconds), and the same
    bytes (caches + weights) at the bandwidth ``roofline.json`` measured (``floor``)."""
    from grader.expected.l16_serving import cost
    from grader.lessons.l16_serving.records import Model, Slice, param_count

    m, s = Model(*MODEL_16_CHIP), Slice(*SLICE_16_CHIP)
    bw = roofline_points_v5e()["bandwidth"]
    out = []
    for b in batches:
        nbytes = b * cost.kv_cache_bytes(m, CONTEXT_16_CHIP, 2) + param_count(m) * 2
        out.append({"batch": b, "model": cost.decode_step_time(m, s, b, CONTEXT_16_CHIP, 2),
                    "floor": nbytes / bw})  # fmt: skip
    return out


def decode_on_chip() -> str:
    import math

    rows = chip_data("decode.json")
    batches = sorted({r["batch"] for r in rows})
    x0, y0, w, h = 80, 56, 440, 300
    lo_b, hi_b, lo_t, hi_t = 0.0, math.log2(128), 0.0, math.log10(300)  # log2 B, log10 ms

    def px(b: float) -> float:
        return x0 + 12 + (math.log2(b) - lo_b) / (hi_b - lo_b) * (w - 24)

    def py(ms: float) -> float:
        return y0 + h - (math.log10(ms) - lo_t) / (hi_t - lo_t) * h

    svg = Svg(800, y0 + h + 76)
    svg.text(20, 22, "A decode step on one TPU v5e: LLaMA-like 0.85 B, GQA 16/4, context 2,048, "
             "bf16, log-log", anchor="start", bold=True, size=13)  # fmt: skip
    svg.rect(x0, y0, w, h, CARD, stroke=MUTED)
    for b in batches:
        svg.text(px(b), y0 + h + 16, f"{b}", size=11, colour=MUTED)
    for ms in (1, 2, 5, 10, 20, 50, 100, 200):
        svg.text(x0 - 6, py(ms) + 4, f"{ms:g} ms", anchor="end", size=11, colour=MUTED)
    svg.text(x0 + w / 2, y0 + h + 34, "batch B (sequences decoding at once)", size=12)
    svg.text(x0 - 6, y0 - 10, "step time", anchor="end", size=12)
    model = decode_on_chip_model(tuple(batches))
    spec = SLICE_16_CHIP[4] / 1e9
    for key, width, dash, label, y in (
        ("model", 3, "", f"the lesson's model ({spec:g} GB/s)", 20),
        ("floor", 1.5, ' stroke-dasharray="6,4"', "its bytes at 636.5 GB/s", 38),
    ):  # fmt: skip
        path = " ".join(f"{px(t['batch']):.1f},{py(t[key] * 1e3):.1f}" for t in model)
        svg.parts.append(f'<polyline points="{path}" fill="none" stroke="{INK}" '
                         f'stroke-width="{width}"{dash}/>')  # fmt: skip
        svg.parts.append(f'<line x1="{x0 + w + 12}" y1="{y0 + y - 4}" x2="{x0 + w + 36}" '
                         f'y2="{y0 + y - 4}" stroke="{INK}" stroke-width="{width}"{dash}/>')  # fmt: skip
        svg.text(x0 + w + 42, y0 + y, label, anchor="start", size=11)
    for k, (form, colour) in enumerate(FORMS_16_CHIP):
        mine = [r for r in rows if r["form"] == form]
        ok = [r for r in mine if "ms" in r]
        path = " ".join(f"{px(r['batch']):.1f},{py(r['ms']):.1f}" for r in ok)
        svg.parts.append(f'<polyline points="{path}" fill="none" stroke="{colour}" '
                         'stroke-width="1.5"/>')  # fmt: skip
        for r in ok:
            svg.parts.append(f'<circle cx="{px(r["batch"]):.1f}" cy="{py(r["ms"]):.1f}" r="4" '
                             f'fill="{colour}"/>')  # fmt: skip
        for r in mine:
            if "error" in r:  # out of HBM: a cross at the top of the plot
                x, y = px(r["batch"]), y0 + 12 + 14 * k
                svg.parts.append(f'<path d="M{x - 4:.1f},{y - 4:.1f} L{x + 4:.1f},{y + 4:.1f} '
                                 f'M{x - 4:.1f},{y + 4:.1f} L{x + 4:.1f},{y - 4:.1f}" '
                                 f'stroke="{colour}" stroke-width="2"/>')  # fmt: skip
                svg.text(x - 8, y + 4, "out of HBM", anchor="end", size=11, colour=colour)
        y = y0 + 74 + 20 * k
        svg.parts.append(f'<circle cx="{x0 + w + 24}" cy="{y - 4}" r="4" fill="{colour}"/>')
        cut = "" if len(mine) == len(batches) else f" (B ≤ {max(r['batch'] for r in mine)})"
        svg.text(x0 + w + 42, y, form + cut, anchor="start", size=12, colour=colour, bold=True)
    svg.text(x0 + w + 12, y0 + 74 + 20 * len(FORMS_16_CHIP) + 8, "each step's share of 10",
             anchor="start", size=11, colour=MUTED)  # fmt: skip
    svg.text(x0 + w + 12, y0 + 74 + 20 * len(FORMS_16_CHIP) + 24, "queued back to back",
             anchor="start", size=11, colour=MUTED)  # fmt: skip
    svg.text(20, y0 + h + 56, "Measured 2026-12-05 and -06 with jax 0.10.2 by benchmarks/tpu_decode.py "
             "(benchmarks/tpu_v5e/decode.json).", anchor="start", size=11,
             colour=MUTED)  # fmt: skip
    return svg.render("Lesson 16: a decode step on one TPU v5e against the lesson's model")


# ------------------------------------------------------------------ lesson 17


def tiled_matmul() -> str:
    gm, gk, gn, cell = 2, 4, 2, 30
    i, j, k = 1, 0, 2  # the program shown
    svg = Svg(660, 300)
    svg.text(20, 22, "A tiled matmul: the program (i, j, k) = (1, 0, 2) of a grid "
             "(M/bm, N/bn, K/bk) = (2, 2, 4)", anchor="start", bold=True, size=13)  # fmt: skip

    def grid(x0: float, y0: float, rows: int, cols: int, lit: tuple[int, int], label: str,
             fill: str) -> None:  # fmt: skip
        for r in range(rows):
            for c in range(cols):
                svg.rect(x0 + c * cell, y0 + r * cell, cell, cell,
                         fill if (r, c) == lit else CARD, stroke=MUTED)  # fmt: skip
        svg.text(x0 + cols * cell / 2, y0 + rows * cell + 18, label, size=11)

    grid(40, 110, gm, gk, (i, k), "A [M, K]: tile (i, k)", DEVICE_FILLS[0])
    svg.text(40 + gk * cell + 18, 110 + cell + 4, "·", bold=True, size=20)
    grid(220, 60, gk, gn, (k, j), "B [K, N]: tile (k, j)", DEVICE_FILLS[1])
    svg.text(220 + gn * cell + 20, 110 + cell + 4, "→", bold=True, size=18)
    grid(320, 110, gm, gn, (i, j), "C [M, N]: tile (i, j)", DEVICE_FILLS[2])
    svg.rect(440, 112, 150, 56, DEVICE_FILLS[3], stroke=INK)
    svg.text(515, 134, "acc [bm, bn] float32", size=11, bold=True)
    svg.text(515, 152, "in VMEM, across k", size=11)
    svg.line(440, 140, 320 + gn * cell + 4, 140, arrow=True)
    notes = (
        "k = 0: acc = 0.   every k: acc += A[i, k] · B[k, j] (bfloat16 in, float32 sum).",
        "k = K/bk − 1: C[i, j] = acc, cast; Pallas writes the tile to HBM once, when (i, j) moves on.",
        "Per k step: 2·bm·bk·bn FLOPs for 2·bk·(bm + bn) bytes read: bm·bn / (bm + bn) FLOP/B.",
    )
    for n, line in enumerate(notes):
        svg.text(40, 230 + n * 20, line, anchor="start", size=11, colour=MUTED)
    return svg.render("Lesson 17: the tiled matmul's blocks")


def dma_ring() -> str:
    n, cw, ch = 4, 118, 34
    svg = Svg(60 + 5 * (cw + 10) + 20, 120 + n * (ch + 14) + 50)
    svg.text(20, 22, "A ring all-gather as DMAs on 4 devices: step s sends slot (i − s) mod N "
             "to device i + 1", anchor="start", bold=True, size=13)  # fmt: skip
    columns = ("own block", "barrier", "step 0", "step 1", "step 2")
    for c, title in enumerate(columns):
        svg.text(60 + c * (cw + 10) + cw / 2, 56, title, bold=True)
    for i in range(n):
        y = 70 + i * (ch + 14)
        svg.text(40, y + ch / 2 + 4, f"d{i}", bold=True)
        cells = [(f"slot {i} ← x (local)", DEVICE_FILLS[i]),
                 (f"signal d{(i - 1) % n}, d{(i + 1) % n}; wait 2", CARD)]  # fmt: skip
        for s in range(n - 1):
            b = (i - s) % n
            cells.append((f"slot {b} → d{(i + 1) % n}, sem {s}", DEVICE_FILLS[b]))
        for c, (text, fill) in enumerate(cells):
            svg.rect(60 + c * (cw + 10), y, cw, ch, fill, stroke=MUTED)
            svg.text(60 + c * (cw + 10) + cw / 2, y + ch / 2 + 4, text, size=10)
    y = 70 + n * (ch + 14) + 6
    for n_line, line in enumerate((
        "Each step: start(); wait_send(): our block has left; wait_recv(): slot (i − s − 1) "
        "has landed,",
        "and it is what step s + 1 sends. One receive semaphore per step (sem s): a DMA "
        "semaphore counts",
        "bytes, so one shared by the steps cannot tell their blocks apart.",
    )):  # fmt: skip
        svg.text(60, y + 14 + n_line * 18, line, anchor="start", size=11, colour=MUTED)
    return svg.render("Lesson 17: a ring all-gather's DMAs")


FIGURES = (
    Figure(1, "01_mesh_layouts.svg", "which device holds which block of an 8×8 array, for five specs on the 2×4 mesh", mesh_layouts),
    Figure(2, "02_ring_all_gather.svg", "a ring all-gather on four devices, step by step", ring_all_gather),
    Figure(3, "03_roofline.svg", "the roofline of four chips, with lesson 3's worked example on the H100", roofline),
    Figure(3, "03_roofline_v5e.svg", "one TPU v5e's roofline with its measured matmuls: achieved FLOP/s against arithmetic intensity", roofline_v5e),
    Figure(4, "04_matmul_cases.svg", "the four cases of a sharded matmul and the collective each needs", matmul_cases),
    Figure(5, "05_collective_matmul.svg", "the all-gather matmul's steps: which W block each device multiplies", collective_matmul),
    Figure(6, "06_data_parallel_step.svg", "a data-parallel step: the batch split, the gradient all-reduced", data_parallel_step),
    Figure(7, "07_memory_per_device.svg", "bytes per parameter on each device under DP and ZeRO-1, 2, 3", memory_per_device),
    Figure(8, "08_tensor_parallel_mlp.svg", "a Megatron MLP: w_in split by columns, w_out by rows, one all-reduce", tensor_parallel_mlp),
    Figure(9, "09_pipeline_schedules.svg", "GPipe and 1F1B, then 1F1B and zero bubble with the backward split in B and W, tick by tick", pipeline_schedules),
    Figure(10, "10_ring_attention.svg", "ring attention's blocks per step, contiguous and zigzag, and the causal waste", ring_attention),
    Figure(11, "11_expert_capacity.svg", "tokens per expert against the capacity: kept and dropped", expert_capacity),
    Figure(12, "12_who_holds_what.svg", "who holds what on the ('data', 'model') mesh: each weight split twice", who_holds_what),
    Figure(13, "13_hierarchical_all_reduce.svg", "the hierarchical all-reduce's three steps, their replica groups and the part of the data each device holds", hierarchical_all_reduce),
    Figure(14, "14_time_breakdown.svg", "the step time of lesson 14's six best plans, term by term", time_breakdown),
    Figure(15, "15_zero_stages.svg", "a 7B model's state per device on 64 GPUs, by ZeRO stage, against 80 GB", zero_stages),
    Figure(15, "15_zero_step_collectives.svg", "one ZeRO-1, ZeRO-2 and ZeRO-3 step on 4 devices: what each holds, which collective moves what", zero_step_collectives),
    Figure(16, "16_decode_roofline.svg", "a decode step's time against the batch: caches, weights read, weights' FLOPs, the critical batch", decode_roofline),
    Figure(16, "16_latency_throughput.svg", "throughput against latency as the batch grows, 40 and 8 key/value heads", latency_throughput),
    Figure(16, "16_kv_cache_sharding.svg", "which device holds which rows and heads of the KV cache on the (data, model) mesh", kv_cache_sharding),
    Figure(16, "16_decode_on_chip.svg", "a decode step on one TPU v5e against the lesson's model, six forms of the same step", decode_on_chip),
    Figure(17, "17_tiled_matmul.svg", "the tiled matmul's grid: which tiles of A and B the program at (i, j, k) reads, and the float32 accumulator", tiled_matmul),
    Figure(17, "17_dma_ring.svg", "a ring all-gather's DMAs on four devices, step by step: start, wait for the send, wait for the arrival", dma_ring),
)  # fmt: skip
"""Every figure, in lesson order."""


def reference(figure: Figure) -> str:
    """The Markdown line that shows ``figure`` in its lesson's text."""
    return f"![{figure.alt}](figures/{figure.name})"


def write(folder: Path) -> list[Path]:
    """Draw every figure into ``folder``; return the files that changed."""
    folder.mkdir(parents=True, exist_ok=True)
    changed = []
    for f in FIGURES:
        target = folder / f.name
        svg = f.draw()
        if not target.exists() or target.read_text() != svg:
            target.write_text(svg)
            changed.append(target)
    return changed


def problems(lessons: Path) -> list[str]:
    """What is out of date: a figure that differs from what this module draws, one the
    texts do not show, a file no figure draws, a reference to a missing file."""
    folder = lessons / "figures"
    out = []
    drawn = {f.name for f in FIGURES}
    for f in FIGURES:
        target = folder / f.name
        if not target.exists():
            out.append(f"course/lessons/figures/{f.name} is missing: run course dev notebooks")
        elif target.read_text() != f.draw():
            out.append(f"course/lessons/figures/{f.name} is out of date: run course dev notebooks")
    texts = {p.name: p.read_text() for p in sorted(lessons.glob("*.md"))}
    shown = {name for text in texts.values() for name in _linked(text)}
    for f in FIGURES:
        if f.name not in shown:
            out.append(f"no lesson text shows figures/{f.name} (add: {reference(f)})")
        elif not any(reference(f) in text for text in texts.values()):
            out.append(f"figures/{f.name} is shown with other words than its own: {reference(f)}")
    for name in sorted(shown - drawn):
        out.append(f"a lesson text shows figures/{name}, which no figure draws")
    if folder.is_dir():
        for p in sorted(folder.glob("*.svg")):
            if p.name not in drawn:
                out.append(f"course/lessons/figures/{p.name} is drawn by no figure")
    return out


def _linked(text: str) -> list[str]:
    from course.figure_links import names

    return names(text)
