"""A student's rough edges (issue 38.5, 39.7): a piped solution is the file, long lists
are paged, a stub shows its first hint only, a fixed example says so, hints are as wide as
the report, a grade's seed is fresh and reported, and ``course watch`` stops a grade
on a new save and moves on once the lesson passes."""

from __future__ import annotations

import ast
import io
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from rich.console import Console

from course import registry
from course.commands.common import App
from course.paths import workspace
from grader import spec as grader_spec
from tests.mistakes import MISTAKES
from tests.test_cli import _wait_for, course

ROOT = Path(__file__).resolve().parent.parent
L01 = "l01_meshes.py"


@pytest.fixture
def home(tmp_path) -> Path:
    return tmp_path / "home"


def _app(home: Path | None, console: Console) -> App:
    return App(workspace(str(home), None) if home else None, console, registry.load())


def test_a_piped_solution_is_the_reference_file_itself(home):
    r = course(home, "solution", "1", "--force")
    assert r.returncode == 0, r.stderr
    ast.parse(r.stdout)  # valid Python, no line cut at the terminal's width
    assert r.stdout == (ROOT / "solutions" / L01).read_text()


def test_a_locked_solution_piped_writes_nothing_to_the_file(home):
    """`course solution 1 > ref.py` before lesson 1 passes: ref.py stays empty (no prose
    in a .py file) and the refusal is on the terminal, via stderr."""
    r = course(home, "solution", "1")
    assert r.returncode == 1 and r.stdout == ""
    assert "Lesson 1's solution unlocks once every exercise of it has passed" in r.stderr
    assert "course solution 1 --force" in r.stderr


def test_on_a_terminal_a_solution_is_paged_with_every_line_whole(tmp_path, monkeypatch):
    from course.commands.show import solution

    paged = tmp_path / "paged.txt"
    monkeypatch.setenv("PAGER", f"tee {paged}")
    console = Console(file=io.StringIO(), force_terminal=True, width=40, height=20,
                      color_system=None)  # fmt: skip
    assert solution(_app(None, console), 2, force=True) == 0
    shown = paged.read_text()
    for line in (ROOT / "solutions" / "l02_collectives.py").read_text().splitlines():
        assert line.rstrip() in shown  # not cropped at 40 columns


@pytest.mark.parametrize("command", ["list", "status"])
def test_list_and_status_are_paged_on_a_short_terminal(tmp_path, monkeypatch, command):
    from course.commands.status import list_lessons, status

    paged = tmp_path / "paged.txt"
    monkeypatch.setenv("PAGER", f"tee {paged}")
    screen = io.StringIO()
    console = Console(file=screen, force_terminal=True, width=100, height=20, color_system=None)
    app = _app(tmp_path / "home", console)
    (list_lessons if command == "list" else status)(app)
    text = paged.read_text()
    assert "Planning a training run at scale" in text  # the last lesson: the whole table
    assert "course grade" in text  # and the footer
    assert "Planning" not in screen.getvalue()  # the pager showed it, not the screen
    paged.unlink()
    tall = Console(file=io.StringIO(), force_terminal=True, width=100, height=500)
    (list_lessons if command == "list" else status)(_app(tmp_path / "home", tall))
    assert not paged.exists()  # fits the screen: no pager


def test_an_untouched_stub_names_the_hint_command_and_hints_as_wide_as_the_report(home):
    lesson = registry.load().lesson(1)
    r = course(home, "grade", "1")
    assert r.returncode == 1, r.stderr
    out = " ".join(r.stdout.split())
    words = [h.split()[:6] for h in lesson.hints]  # each hint by its first words
    shown = [w for w in words if " ".join(w) in out]
    assert shown == [], shown  # hints are climbed on request (issue 45 §6): none printed unasked
    assert "course hint 1" in out
    hint = course(home, "hint", "1")

    def borders(text: str) -> set[int]:
        return {len(line) for line in text.splitlines() if line.startswith(("╭", "╰"))}

    assert borders(hint.stdout) == borders(r.stdout) == {100}  # COLUMNS=100


def test_a_fixed_example_says_so_exits_0_and_is_not_recorded(root, home):
    ex = home / "exercises"
    ex.mkdir(parents=True)
    (ex / L01).write_text((root / "exercises" / L01).read_text())
    example = "mesh=2x4 shape=8x6 spec=x+y/- dtype=float32 seed=0"
    stub = course(home, "grade", "1.place", "--example", example)
    assert stub.returncode == 1 and "Fixed" not in stub.stdout  # a stub is not fixed
    (ex / L01).write_text((root / "solutions" / L01).read_text())
    r = course(home, "grade", "1.place", "--example", example)
    assert r.returncode == 0, r.stdout + r.stderr
    said = " ".join(r.stdout.split())
    assert f"Fixed: 1.place now passes this example ({example})" in said
    assert "never recorded; to record the pass, grade the whole lesson" in said
    assert said.endswith("course grade 1")
    progress = json.loads(course(home, "status", "--json").stdout)
    place = next(e for e in progress["lessons"][0]["exercises"] if e["exercise"] == "place")
    assert not place["ever_passed"] and place["score"] == 0


def _seed(out: str) -> int:
    (seed,) = re.findall(r"· seed (\d+) ·", " ".join(out.split()))
    return int(seed)


def test_a_grade_draws_a_fresh_seed_says_it_and_a_chosen_seed_records_no_pass(root, home):
    ex = home / "exercises"
    ex.mkdir(parents=True)
    wrong = next(m for m in MISTAKES if m.id == "floor-division-hides-indivisible")
    (ex / L01).write_text(wrong.source((root / "solutions" / L01).read_text()))
    first = course(home, "grade", "1", "--json")
    (lesson,) = json.loads(first.stdout)["lessons"]
    seed = lesson["seed"]
    assert seed in grader_spec.FRESH_SEEDS
    failed = {e["exercise"]: e["example"] for e in lesson["exercises"] if e["status"] == "failed"}
    again = course(home, "grade", "1", "--seed", str(seed), "--json")
    (lesson,) = json.loads(again.stdout)["lessons"]
    assert lesson["seed"] == seed  # the reported seed draws the same examples: the same failures
    assert {
        e["exercise"]: e["example"] for e in lesson["exercises"] if e["status"] == "failed"
    } == failed
    before = json.loads(course(home, "status", "--json").stdout)["lessons"][0]["score"]
    assert before < 5
    (ex / L01).write_text((root / "solutions" / L01).read_text())
    chosen = course(home, "grade", "1", "--seed", "5")
    assert chosen.returncode == 0 and "Score 5/5" in chosen.stdout
    assert "Not recorded: --seed 5 chose the examples" in " ".join(chosen.stdout.split())
    progress = json.loads(course(home, "status", "--json").stdout)
    assert progress["lessons"][0]["score"] == before  # a chosen seed's passes are not progress
    fresh = course(home, "grade", "1")
    assert fresh.returncode == 0 and _seed(fresh.stdout) not in (seed, 5)
    assert "Not recorded" not in fresh.stdout
    assert json.loads(course(home, "status", "--json").stdout)["lessons"][0]["score"] == 5


def test_a_fresh_seeds_draw_is_not_kept_on_disk(tmp_path):
    from hypothesis import strategies as st

    draws = grader_spec.Draws(kept=(tmp_path,))
    strategy = st.fixed_dictionaries({"n": st.integers(1, 10**6)})
    known = grader_spec.draw_examples(strategy, 6, 0, kept_as="t", draws=draws)
    assert len(list(tmp_path.glob("*.txt"))) == 1
    seed = grader_spec.fresh_seed()
    assert seed in grader_spec.FRESH_SEEDS and seed != grader_spec.fresh_seed()
    drawn = grader_spec.draw_examples(strategy, 6, seed, kept_as="t", draws=draws)
    again = grader_spec.draw_examples(strategy, 6, seed, kept_as="t", draws=grader_spec.Draws())
    assert drawn == again  # reproducible (in a fresh process too)
    assert len(list(tmp_path.glob("*.txt"))) == 1  # one grade's draw: not written
    # seed 0's first four (compiled already), and two that no one knew
    fresh = grader_spec.FRESH_EXAMPLES
    assert drawn[: 6 - fresh] == known[: 6 - fresh] and len(drawn) == 6
    assert not any(ex in known for ex in drawn[6 - fresh :])
    other = grader_spec.draw_examples(
        strategy, 6, grader_spec.fresh_seed(), kept_as="t", draws=draws
    )
    assert other[6 - fresh :] != drawn[6 - fresh :]


HANG = "\n\ndef device_slices(global_shape, mesh_shape, spec):\n    while True:\n        pass\n"


def _save(path: Path, text: str) -> None:
    staged = path.with_suffix(".tmp")
    staged.write_text(text)
    os.replace(staged, path)  # one save, as editors do it


def test_watch_stops_a_hung_grade_on_a_new_save_and_moves_on_once_it_passes(root, home):
    course(home, "status")  # sets up the workspace
    target = home / "exercises" / L01
    env = {**os.environ, "COURSE_HOME": str(home), "COURSE_PLATFORM": "cpu", "COLUMNS": "200"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "course.cli", "watch", "1", "--timeout", "600"], cwd=root, env=env,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    lines: list[str] = []
    threading.Thread(target=lambda: lines.extend(proc.stdout), daemon=True).start()
    threading.Thread(target=lambda: proc.stderr.read(), daemon=True).start()
    solution = (root / "solutions" / L01).read_text()
    try:
        _wait_for(lambda: any("Score 0/5" in line for line in lines))
        time.sleep(1.0)
        _save(target, solution + HANG)  # device_slices never returns: a 600 s limit
        _wait_for(lambda: sum("watching l01_meshes.py" in line for line in lines) >= 2)
        time.sleep(3.0)  # the hung grade is under way
        saved = time.monotonic()
        _save(target, solution)
        _wait_for(lambda: any("Score 5/5" in line for line in lines), timeout=300)
        assert time.monotonic() - saved < 300  # not the hang's 600 s
        _wait_for(lambda: any("Now watching lesson 2" in line for line in lines))
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=30)
    out = "".join(lines)
    assert "l01_meshes.py was saved again: that grade was stopped." in out
    nxt = registry.load().lessons[1]  # the course's order, not number + 1
    assert (
        f"Lesson 1 passes. Now watching lesson {nxt.number} · {nxt.title}: save "
        f"{home / 'exercises' / (nxt.module + '.py')} to grade it" in " ".join(out.split())
    )
    assert proc.returncode == 0 and "Stopped watching" in out


def test_lesson_1_teaches_the_example_notation_the_grader_writes(root):
    """Lesson 1's "Reading the examples the grader prints": its example line is the one the
    grader writes (and reads back) for that example, and every decoding it gives — spec,
    mesh, shape — is the grader's own."""
    from grader.lessons.l01_meshes.spec import AXES, _tuple, decode_spec, encode_spec

    text = (root / "course" / "lessons" / "01_meshes.md").read_text()
    section = text.split("## Reading the examples the grader prints", 1)[1].split("\n## ")[0]
    flat = " ".join(section.split())
    line = "mesh=2x4 shape=8x6 spec=x+y/- dtype=float32 seed=0"
    example = {"mesh": (2, 4), "shape": (8, 6), "spec": "x+y/-", "dtype": "float32", "seed": 0}
    assert grader_spec.format_example(example) == line
    assert grader_spec.parse_example(line) == example
    assert f"example  {line}" in section and f"--example '{line}'" in section

    specs = re.findall(r"`spec=([^` ]*)` is `(P\([^`]*\))`", flat)
    assert len(specs) >= 3, specs
    for code, written in specs:
        entries = eval(written, {"P": lambda *a: a})  # P(('x', 'y'), None) → its entries
        assert decode_spec(code) == entries, code
        assert encode_spec(list(entries)) == code, code
    assert "`spec=` with nothing after it is `P()`" in flat and decode_spec("") == ()

    meshes = re.findall(r"`mesh=([0-9x]+)` is `(\{[^`]*\})`", flat)
    assert len(meshes) >= 3, meshes
    for code, written in meshes:
        sizes = _tuple(grader_spec.parse_example(f"mesh={code}")["mesh"])
        assert dict(zip(AXES, sizes)) == eval(written), code

    shapes = re.findall(r"`shape=([^`]*)` is (?:the global shape )?`([^`]*)`", flat)
    assert len(shapes) >= 2, shapes
    for code, written in shapes:
        assert _tuple(grader_spec.parse_example(f"shape={code}")["shape"]) == eval(written)
