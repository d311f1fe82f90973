"""The lesson figures: drawn from the grader's data, up to date, shown by the texts,
shipped in the wheel, and one line in the terminal."""

from __future__ import annotations

import fnmatch
import html
import importlib.util
import shutil
import subprocess
import sys
import tomllib
import xml.etree.ElementTree as ET

import pytest

from course import figure_links, figures


def _solution(root, module):
    spec = importlib.util.spec_from_file_location(module, root / "solutions" / f"{module}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize("spec", figures.SPECS_1)
def test_lesson_1s_owners_are_the_reference_solutions(root, spec):
    """The picture's blocks are device_slices of the reference, device by device
    (a figure with the tuple's axes minor-first draws ('x','y') as ('y','x') and fails)."""
    slices = _solution(root, "l01_meshes").device_slices((8, 8), figures.MESH_1, spec)
    drawn = figures.owners((8, 8), figures.MESH_1, spec)
    sizes = list(figures.MESH_1.values())
    for coord, block in slices.items():
        device = coord[0] * sizes[1] + coord[1]
        assert drawn[device] == tuple((s.start, s.stop) for s in block), (spec, coord)


def test_the_ring_passes_on_what_it_received():
    """Each step, device i gets the block device i − 1 got the step before (its own at
    step 1), and after N − 1 steps every device holds every block."""
    n = 5
    steps = figures.ring_all_gather_steps(n)
    assert len(steps) == n

    def held(s: int, i: int) -> set[int]:
        return {b for b in steps[s][i] if b is not None}

    for s in range(1, n):
        for i in range(n):
            left = (i - 1) % n
            came = {left} if s == 1 else held(s - 1, left) - held(s - 2, left)
            assert held(s, i) - held(s - 1, i) == came, (s, i)
    assert all(row == list(range(n)) for row in steps[-1])


def test_the_collective_matmul_passes_left_and_meets_every_block():
    """Step s + 1 on device i holds what device i + 1 held at step s (sent left), and down
    a column every device multiplies each block once (a right-sending figure fails)."""
    for n in (2, 3, 4, 5):
        held = figures.held_blocks(n)
        assert held[0] == list(range(n))  # each starts with its own block
        for s in range(n - 1):
            assert [held[s + 1][i] for i in range(n)] == [held[s][(i + 1) % n] for i in range(n)]
        assert all(sorted(held[s][i] for s in range(n)) == list(range(n)) for i in range(n))


def test_lesson_3s_and_11s_figures_draw_the_texts_numbers(root):
    roof = figures.roofline()
    for chip, critical in (
        ("tpu-v5e", 241),
        ("tpu-v5p", 166),
        ("h100-sxm", 295),
        ("h200-sxm", 206),
    ):
        assert f"{chip}: C/H = {critical}" in roof  # lesson 3's table, from the grader's CHIPS
    moe = figures.expert_capacity()
    text = (root / "course" / "lessons" / "11_expert_parallel.md").read_text()
    assert "tokens routed per expert: [95, 18, 18, 25, 32, 22, 23, 23]" in text
    assert "95 routed, 55 dropped" in moe and "capacity C = 40" in moe  # the grader's router


def test_lesson_12s_figure_agrees_with_the_texts_table(root):
    text = (root / "course" / "lessons" / "12_parallel_transformer.md").read_text()
    svg = figures.who_holds_what()
    for label in (
        "heads 0–2, F cols 0–31",
        "heads 3–5, F cols 32–63",
        "D rows 8–15",
        "D rows 24–31",
    ):
        assert label in svg and label in text, label


def test_lesson_15s_figure_draws_the_texts_worked_example(root):
    text = (root / "course" / "lessons" / "15_optimizer.md").read_text()
    svg = figures.zero_stages()  # from the grader's byte table
    for gb in ("126 GB", "43.3 GB", "15.8 GB", "1.97 GB"):
        assert f">{gb}<" in svg and gb in text, gb


def test_lesson_15s_step_figure_counts_what_the_graders_report_counts(root):
    """Each stage's elements sent in the figure are the grader's report's (stage_rows) for
    the same example, its collectives' counts the grader's (ZeRO-3 gathers 2·M times), and
    the per-collective figures are the text's section 3 measurement (36,864 per unit)."""
    from grader.lessons.l15_optimizer import spec

    ex = figures.ZERO_STEP_15
    svg = figures.zero_step_collectives()
    text = (root / "course" / "lessons" / "15_optimizer.md").read_text()
    rows = {r[0]: r for r in spec.stage_rows(ex)}
    for stage in (1, 2, 3):
        assert f">{rows[f'ZeRO-{stage}'][3]} elements,<" in svg, stage
    micro, unit = ex["micro"], spec.ring_elements(ex)
    assert f"{unit:,}" in text and f"N = {ex['n']}, Ψ = {spec.psi(ex):,}" in text
    titles = {s: [t for _, t, _ in figures.zero_step_boxes(s, ex)] for s in (1, 2, 3)}
    assert "2 all-gathers" in titles[3] and "reduce-scatter" in titles[2]  # per micro-batch
    assert f">{2 * micro} × {unit:,} bf16<" in svg  # ZeRO-3's gathers in the step
    assert f">1 × {unit:,} f32<" in svg  # ZeRO-1's float32 buffer, once


def test_lesson_13s_groups_span_the_axes_the_grader_expects():
    from grader.checks.groups import spanned_axes

    for p, d in ((2, 4), (4, 2), (3, 2)):
        g = figures.hierarchical_groups(p, d)
        assert spanned_axes(g["reduce-scatter"], (p, d), ("host", "local")) == {"local"}
        assert spanned_axes(g["all-reduce"], (p, d), ("host", "local")) == {"host"}
        assert sorted(x for grp in g["all-gather"] for x in grp) == list(range(p * d))


def test_lesson_14s_figure_draws_the_texts_worked_example(root):
    """The six plans of lesson 14's table, each with the step and MFU the text prints
    (computed by the grader's cost model)."""
    import re

    text = (root / "course" / "lessons" / "14_planning.md").read_text()
    rows = re.findall(
        r"^\| [1-6]  \| (\d+) +\| (\d+) +\| (\d+) +\| (\d+) +\| (\d+) +\| (\w+) +\| [\d.]+ GB \| "
        r"([\d.]+ s) \| ([\d.]+%) \|$", text, flags=re.M,
    )  # fmt: skip
    assert [(*map(int, r[:5]), r[5]) for r in rows] == [tuple(p) for p in figures.PLANS_14]
    svg = figures.time_breakdown()
    for *_, step, mfu in rows:
        assert f"{step} · MFU {mfu}" in svg, (step, mfu)


def test_every_figure_is_valid_svg_with_its_own_white_card():
    for f in figures.FIGURES:
        tree = ET.fromstring(f.draw())
        ns = "{http://www.w3.org/2000/svg}"
        assert tree.tag == f"{ns}svg" and tree.find(f"{ns}title").text
        card = tree.find(f"{ns}rect")
        assert card.get("fill") == "#ffffff" and card.get("width") == tree.get("width")


def test_the_real_figures_are_up_to_date_and_shown(root):
    assert figures.problems(root / "course" / "lessons") == []
    assert {f.lesson for f in figures.FIGURES} >= set(range(1, 17))  # every lesson draws one


def test_a_stale_missing_unshown_or_stray_figure_is_named(root, tmp_path):
    lessons = tmp_path / "lessons"
    shutil.copytree(root / "course" / "lessons", lessons)
    (lessons / "figures" / "09_pipeline_schedules.svg").write_text("<svg/>")
    (lessons / "figures" / "02_ring_all_gather.svg").unlink()
    (lessons / "figures" / "99_old.svg").write_text("<svg/>")
    text = lessons / "04_sharded_matmul.md"
    text.write_text(text.read_text().replace("(figures/04_matmul_cases.svg)", "(x.png)"))
    text = lessons / "07_fsdp.md"
    text.write_text(text.read_text().replace("![bytes per parameter", "![Bytes per parameter"))
    problems = figures.problems(lessons)
    assert any("09_pipeline_schedules.svg is out of date" in p for p in problems)
    assert any("02_ring_all_gather.svg is missing" in p for p in problems)
    assert any("99_old.svg is drawn by no figure" in p for p in problems)
    assert any("no lesson text shows figures/04_matmul_cases.svg" in p for p in problems)
    assert any("07_memory_per_device.svg is shown with other words" in p for p in problems)
    assert len(problems) == 5, problems


def test_the_wheel_ships_every_figure(root):
    data = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"]
    import runpy

    found = runpy.run_path(str(root / "setup.py"))["packages"](str(root))
    assert "course.lessons.figures" in found  # a data folder: a package, or setuptools warns
    patterns = data["package-data"]["course.lessons.figures"]
    for svg in (root / "course" / "lessons" / "figures").glob("*.svg"):
        assert any(fnmatch.fnmatch(svg.name, p) for p in patterns), svg.name


def test_the_terminal_shows_a_figure_as_a_line_and_its_files_path(root, tmp_path):
    text = (root / "course" / "lessons" / "01_meshes.md").read_text()
    assert figure_links.names(text) == ["01_mesh_layouts.svg"]
    env = {"COURSE_HOME": str(tmp_path), "COLUMNS": "100", "PATH": "/usr/bin:/bin"}
    shown = subprocess.run(
        [sys.executable, "-m", "course", "show", "1"], cwd=root, env=env,
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert shown.returncode == 0, shown.stderr
    assert "(figure: which device holds which block" in shown.stdout
    # issue 48.3: the SVG's path follows, whole on a line of its own, for a browser to open
    svg = (root / "course" / "lessons" / "figures" / "01_mesh_layouts.svg").resolve()
    said = [line.strip() for line in shown.stdout.splitlines()]
    assert str(svg) in said and svg.is_file()
    assert "; open it in a browser:)" in " ".join(said[said.index(str(svg)) - 3 :])
    assert "![" not in shown.stdout and shown.stdout.count(".svg") == 1
    assert "rows 0:4  │   d0   │" in shown.stdout  # the text diagram stays


def _serving_16(model_name: str):
    from grader.lessons.l16_serving.records import MODELS, SLICES

    name, slice_name, context, itemsize = figures.SERVE_16
    assert name == "llama-2-13b"
    return MODELS[model_name], SLICES[slice_name], context, itemsize


def test_lesson_16s_decode_figure_is_the_graders_cost_model(root):
    """The curves add up to the grader's decode_step_time, the weights' two terms cross at
    cost.critical_batch (where the figure marks B*), max_batch is the grader's, and the
    step times and throughputs are the text's worked example (a figure that drops the
    caches, reads the weights per chip, or marks B* for int8 fails)."""
    import re

    from grader.expected.l16_serving import cost
    from grader.lessons.l16_serving.records import param_count

    m, s, context, itemsize = _serving_16("llama-2-13b")
    terms = figures.decode_terms("llama-2-13b")
    critical = cost.critical_batch(s, itemsize)
    for t in terms:
        b = t["batch"]
        assert t["step"] == pytest.approx(cost.decode_step_time(m, s, b, context, itemsize))
        assert t["caches"] == pytest.approx(
            b * cost.kv_cache_bytes(m, context, itemsize) / (s.chips * s.hbm_bandwidth)
        )
        assert t["read"] == pytest.approx(param_count(m) * itemsize / (s.chips * s.hbm_bandwidth))
        assert t["step"] == pytest.approx(t["caches"] + max(t["read"], t["flops"]))
        assert (t["read"] > t["flops"]) == (b < critical), b  # the regions meet at B*
    assert min(t["batch"] for t in terms) < critical < max(t["batch"] for t in terms)
    svg = figures.decode_roofline()
    fits = cost.max_batch(m, s, context, itemsize)
    assert f">B* = {critical:.0f}<" in svg and f">max_batch = {fits}<" in svg
    text = (root / "course" / "lessons" / "16_serving.md").read_text()
    assert f"**B* = {critical:.0f}**" in text
    rows = re.findall(r"^\| (\d+) \| [\d,.]+ \| [\d.]+ \| ([\d.]+) \| ([\d,]+) \|", text, re.M)
    by_batch = {t["batch"]: t for t in terms}
    assert len(rows) == 6
    for b, ms, tokens in rows:
        t = by_batch[int(b)]
        assert f"{t['step'] * 1e3:.2f}" == ms and f"{t['tokens']:,.0f}" == tokens, b


def test_lesson_16s_latency_figure_fills_what_fits(root):
    """One filled point per batch that fits beside the weights (cost.max_batch), hollow
    past it, for both models, and the ceiling the text gives (bandwidth over one
    sequence's cache bytes)."""
    import re

    from grader.expected.l16_serving import cost

    svg = figures.latency_throughput()
    text = (root / "course" / "lessons" / "16_serving.md").read_text()
    colours = {"llama-2-13b": "#0b5cad", "llama-2-13b-gqa": "#c5221f"}
    for name, colour in colours.items():
        m, s, context, itemsize = _serving_16(name)
        points = re.findall(rf'<circle [^>]* r="4" fill="([^"]+)" stroke="{colour}"', svg)
        batches = [int(b) for b in re.findall(r">B=(\d+)<", svg)]
        fits = cost.max_batch(m, s, context, itemsize)
        assert fits in batches
        assert len(points) == 10
        filled = sum(f == colour for f in points)
        assert filled == sum(b <= fits for b in (1, 2, 4, 8, 16, 32, 64, 83, 128, 240)), name
        assert f">max_batch = {fits}<" in svg
    m, s, context, itemsize = _serving_16("llama-2-13b")
    ceiling = s.chips * s.hbm_bandwidth / cost.kv_cache_bytes(m, context, itemsize)
    assert f"ceiling {int(ceiling):,} tokens/s" in svg and f"≈ {int(ceiling)} tokens/s" in text


@pytest.mark.parametrize("mesh", [{"data": 2, "model": 2}, {"data": 2, "model": 3},
                                  {"data": 3, "model": 2}])  # fmt: skip
def test_lesson_16s_cache_grid_is_the_graders_partition_spec(root, mesh):
    """Each cell's owner is the device that holds that (row, head) of the cache under the
    grader's CACHE_SPEC and CACHE_GQA, by lesson 1's reference device_slices (a grid with
    the rows and heads swapped, or the ('data', 'model') tuple read minor-first, fails),
    and the figure draws exactly those two specs."""
    from grader.lessons.l16_serving.serve import CACHE_GQA, CACHE_SPEC

    ref = _solution(root, "l01_meshes")
    batch = 2 * mesh["data"] * mesh["model"]
    for spec, heads in ((CACHE_SPEC, 2 * mesh["model"]), (CACHE_GQA, 1)):
        shape = (1, 1, batch, 1, heads, 1)
        grid = figures.kv_cache_owners(spec, mesh, batch, heads)
        for (d, r), block in ref.device_slices(shape, mesh, spec).items():
            for b in range(block[2].start, block[2].stop):
                for k in range(block[4].start, block[4].stop):
                    assert grid[b][k] == d * mesh["model"] + r, (spec, b, k)
    svg = figures.kv_cache_sharding()
    text = (root / "course" / "lessons" / "16_serving.md").read_text()
    spec_text = figures._spec_text(CACHE_SPEC)
    assert f">{html.escape(spec_text)}<" in svg and spec_text in text
    assert f">{html.escape(figures._spec_text(CACHE_GQA))}<" in svg


# ------------------------------------------------ issue 48.2: figures that misled

SVG = "{http://www.w3.org/2000/svg}"


def _texts(svg: str) -> list[tuple[float, str]]:
    """Every label's font size and words."""
    tree = ET.fromstring(svg)
    return [(float(t.get("font-size")), t.text or "") for t in tree.iter(f"{SVG}text")]


def test_lesson_15s_step_figure_reads_at_the_size_it_renders():
    """It was 1,196 wide with 10-11 px labels: a page or a notebook (about 800 wide) showed
    them at 6-7 px. Drawn at most 800 wide now, every label 12 px or more."""
    svg = figures.zero_step_collectives()
    width = float(ET.fromstring(svg).get("width"))
    assert width <= 800, width
    small = [(size, words) for size, words in _texts(svg) if size < 12]
    assert small == [], small


def test_lesson_13s_figure_colours_every_step_by_the_part_a_device_holds():
    """Its panels coloured by host, by group, by host, with no legend. Now every panel says
    which part of the data (1/D) each device holds summed: after steps 1 and 2 the devices
    of one all-reduce group hold the same part and those of one host all differ; after step
    3 every device holds every part; and a legend says so."""
    p, d = 2, 4
    groups = figures.hierarchical_groups(p, d)
    for step in ("reduce-scatter", "all-reduce"):
        for group in groups["all-reduce"]:  # one device of each host: the same part
            assert len({figures.parts_held(step, x, d) for x in group}) == 1
        for host in groups["reduce-scatter"]:  # one host's devices: every part once
            assert sorted(q for x in host for q in figures.parts_held(step, x, d)) == list(range(d))
    assert all(figures.parts_held("all-gather", x, d) == tuple(range(d)) for x in range(p * d))
    svg = figures.hierarchical_all_reduce()
    words = " ".join(w for _, w in _texts(svg))
    assert all(f"part {q}" in words for q in range(d)) and "every part" in words
    assert "Colour: the part of the data" in words
    fills = [r.get("fill") for r in ET.fromstring(svg).iter(f"{SVG}rect")]
    for q in range(d):  # part q: 2 devices in each of steps 1 and 2, 8 in step 3, 2 legends
        assert fills.count(figures.DEVICE_FILLS[q]) == 2 * p + p * d + 2


def test_lesson_9s_zero_bubble_is_drawn_beside_1f1b_on_the_same_ticks(root):
    """Zero bubble's 27 ticks stood beside 1F1B's 22, which take a backward in one tick:
    the figure now draws 1F1B with the backward split as zero bubble splits it (30 ticks)
    and says which to compare; that 1F1B is the text's ("24 ticks, a bubble of 0.25" for
    p = 4, m = 6)."""
    from grader.expected.l09_pipeline.schedules import simulate, zero_bubble

    text = " ".join((root / "course" / "lessons" / "09_pipeline.md").read_text().split())
    six = figures.one_f_one_b_split(4, 6)
    assert not simulate(six, 4, 6, split_w=True).violations
    idle = sum(op is None for row in six for op in row) / (len(six) * 4)
    assert f"it takes {len(six)} ticks, a bubble of {idle:.2f}" in text  # 24, 0.25
    assert all(six[t + 1][s] == ("W", op[1]) for t, row in enumerate(six)
               for s, op in enumerate(row) if op and op[0] == "B")  # fmt: skip
    words = " ".join(w for _, w in _texts(figures.pipeline_schedules()))
    split, zb = len(figures.one_f_one_b_split(4, 8)), len(zero_bubble(4, 8))
    assert zb < split
    assert f"1F1B, W right after its B: {split} ticks" in words
    assert f"W passes fill the idle ticks: {zb} ticks" in words
    assert "compare zero bubble with the 1F1B just below" in words
    assert words.index("a backward takes two ticks") < words.index("1F1B, W right after")


# ------------------------------------------------ issue 49.3: the lessons meet the chip


def _module(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_lesson_3s_chip_figure_and_text_are_the_measured_data(root):
    """Each measured point sits at the reference's arithmetic intensity of its matmul (a
    figure that plots B, or n, as the intensity fails) with the FLOP/s of roofline.json;
    the text's tables are that file and the reference's matmul_time on the tpu-v5e preset,
    and its bandwidth the stream's largest."""
    import re

    from grader.lessons.l03_cost_model.spec import CHIPS

    ref = _solution(root, "l03_cost_model")
    chip = CHIPS["tpu-v5e"]
    pts = figures.roofline_points_v5e()
    data = figures.chip_data("roofline.json")
    assert [r["batch"] for r in pts["weight"]] == [r["batch"] for r in data["weight"]]
    for r in pts["weight"]:
        assert r["intensity"] == pytest.approx(ref.arithmetic_intensity(r["batch"], 8192, 8192, 2))
    for r in pts["square"]:
        assert r["intensity"] == pytest.approx(ref.arithmetic_intensity(r["n"], r["n"], r["n"], 2))
    assert pts["bandwidth"] == pytest.approx(636.5458e9)  # 1 GiB read + 1 GiB written
    text = (root / "course" / "lessons" / "03_cost_model.md").read_text()
    rows = re.findall(r"^\| (\d+) +\| ([\d.]+) +\| ([\d.]+) +\| ([\d.]+) +\| ([\d.]+) +\| "
                      r"([\d.]+) +\| ([\d.]+) / ([\d.]+) +\|$", text, re.M)  # fmt: skip
    assert len(rows) == len(data["weight"])
    for row, r, p in zip(rows, data["weight"], pts["weight"]):
        b = r["batch"]
        flops, nbytes = 2 * b * 8192**2, 2 * (2 * b * 8192 + 8192**2)
        assert int(row[0]) == b and row[1] == f"{p['intensity']:.1f}"
        assert (row[2], row[3]) == (f"{flops / chip.peak_flops * 1e6:.1f}",
                                    f"{nbytes / chip.hbm_bandwidth * 1e6:.1f}")  # fmt: skip
        assert max(float(row[2]), float(row[3])) == pytest.approx(
            ref.matmul_time(b, 8192, 8192, chip, 2) * 1e6, abs=0.06
        )
        assert (row[4], row[5]) == (f"{r['seconds'] * 1e6:.1f}", f"{r['tflops']:.1f}")
        for roof, bw in zip(row[6:], (chip.hbm_bandwidth, pts["bandwidth"])):
            assert roof == f"{min(chip.peak_flops, p['intensity'] * bw) / 1e12:.1f}"
    squares = re.findall(r"^\| (\d+) +\| ([\d.,]+) +\| ([\d,]+) +\| ([\d.]+) +\| (\d+) %", text,
                         re.M)  # fmt: skip
    assert [int(n) for n, *_ in squares] == [r["n"] for r in data["square"]]
    for (_, t_math, us, tflops, share), r in zip(squares, data["square"]):
        assert t_math == f"{2 * r['n'] ** 3 / chip.peak_flops * 1e6:,.1f}"
        assert (us, tflops) == (f"{r['seconds'] * 1e6:,.0f}", f"{r['tflops']:.1f}")
        assert int(share) == round(r["tflops"] * 1e12 / chip.peak_flops * 100)
    assert f"**{pts['bandwidth'] / 1e9:.1f} GB/s, 78 % of the 819 GB/s**" in text
    svg = figures.roofline_v5e()
    assert f"I · {pts['bandwidth'] / 1e9:.1f} GB/s measured" in svg and "C/H = 241" in svg
    assert svg.count('r="4.5" fill="#1a7f37"') == len(data["weight"]) + 1  # + the legend's


def test_lesson_16s_chip_figure_and_table_are_the_measured_data(root):
    """decode.json is decode.txt's rows; its model column is the grader's decode_step_time
    for the benchmark's own model and chip (a figure with another model, or a text with a
    row of another form, fails); the text's table is the file; the figure draws one point
    per measured row and marks each one that ran out of HBM."""
    import json
    import re

    bench = root / "benchmarks"
    rows = figures.chip_data("decode.json")
    parse = _module(bench / "tpu_v5e" / "from_text.py", "from_text")
    assert rows == parse.rows((bench / "tpu_v5e" / "decode.txt").read_text())
    assert json.loads((bench / "tpu_v5e" / "decode.json").read_text()) == rows
    decode = _module(bench / "tpu_decode.py", "tpu_decode")
    name, *shape = figures.MODEL_16_CHIP
    assert tuple(shape) == (decode.L, decode.D, decode.F, decode.N, decode.K, decode.DH, decode.V)
    assert figures.CONTEXT_16_CHIP == decode.S
    batches = sorted({r["batch"] for r in rows})
    model = {t["batch"]: t for t in figures.decode_on_chip_model(tuple(batches))}
    for r in rows:
        assert r["model_ms"] == pytest.approx(model[r["batch"]]["model"] * 1e3, abs=0.005)
    text = (root / "course" / "lessons" / "16_serving.md").read_text()
    forms = [f for f, _ in figures.FORMS_16_CHIP]
    assert f"| B | model | {' | '.join(forms)} |" in text
    table = re.findall(r"^\| (\d+) \| ([\d.]+) \| (.+) \|$", text, re.M)
    table = [t for t in table if "×" in t[2] or "out of HBM" in t[2]]
    assert [int(b) for b, *_ in table] == batches
    for b, ms, cells in table:
        b = int(b)
        assert ms == f"{model[b]['model'] * 1e3:.2f}"
        by = {r["form"]: r for r in rows if r["batch"] == b}
        want = ["—" if f not in by else "out of HBM" if "error" in by[f] else
                f"{by[f]['ms']:.2f} ({by[f]['ms'] / (model[b]['model'] * 1e3):.2f}×)"
                for f in forms]  # fmt: skip
        assert cells.split(" | ") == want, b
    floor = model[64]["floor"] * 1e3
    assert (
        f"= {floor:.2f} ms at B = 64, **{floor / (model[64]['model'] * 1e3):.2f}×** the model"
        in text
    )
    svg = figures.decode_on_chip()
    for form, colour in figures.FORMS_16_CHIP:
        measured = sum(r["form"] == form and "ms" in r for r in rows)
        assert svg.count(f'r="4" fill="{colour}"') == measured + 1, form  # + the legend's
    assert svg.count(">out of HBM<") == sum("error" in r for r in rows) == 2
