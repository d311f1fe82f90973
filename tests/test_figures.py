"""The lesson figures: drawn from the grader's data, up to date, shown by the texts,
shipped in the wheel, and one line in the terminal."""

from __future__ import annotations

import fnmatch
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
    for gb in ("112 GB", "29.3 GB", "15.5 GB", "1.75 GB"):
        assert f">{gb}<" in svg and gb in text, gb


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
    assert {f.lesson for f in figures.FIGURES} >= set(range(1, 15))  # every lesson draws one


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


def test_the_terminal_shows_a_figure_as_one_line(root, tmp_path):
    text = (root / "course" / "lessons" / "01_meshes.md").read_text()
    assert figure_links.names(text) == ["01_mesh_layouts.svg"]
    env = {"COURSE_HOME": str(tmp_path), "COLUMNS": "100", "PATH": "/usr/bin:/bin"}
    shown = subprocess.run(
        [sys.executable, "-m", "course", "show", "1"], cwd=root, env=env,
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert shown.returncode == 0, shown.stderr
    assert "(figure: which device holds which block" in shown.stdout
    assert "![" not in shown.stdout and "figures/" not in shown.stdout and "svg" not in shown.stdout
    assert "rows 0:4  │   d0   │" in shown.stdout  # the text diagram stays
