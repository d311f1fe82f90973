"""``course dev check`` finds each kind of inconsistency it promises to."""

from __future__ import annotations

import dataclasses
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from course import registry
from course.commands.dev import public_functions, static_problems


@pytest.fixture
def tree(root, tmp_path) -> Path:
    """A copy of the course's checked folders."""
    for folder in ("exercises", "solutions", "grader/lessons", "course/lessons", "tests/mistakes"):
        shutil.copytree(root / folder, tmp_path / folder)
    return tmp_path


def test_the_real_course_is_consistent(root):
    assert static_problems(registry.load(), root) == []


def test_signature_drift_is_found(tree):
    stub = tree / "exercises" / "l02_collectives.py"
    stub.write_text(
        stub.read_text().replace(
            "def ring_all_gather(x: jax.Array, axis_name: str)", "def ring_all_gather(x, axis)"
        )
    )
    (problem,) = static_problems(registry.load(), tree)
    assert "ring_all_gather signatures differ" in problem


def test_docstring_drift_is_found(tree):
    sol = tree / "solutions" / "l01_meshes.py"
    sol.write_text(sol.read_text().replace("Bytes of the block each device holds", "Bytes held"))
    assert any(
        "bytes_per_device docstrings differ" in p for p in static_problems(registry.load(), tree)
    )


def test_missing_and_stray_files_are_found(tree):
    (tree / "course" / "lessons" / "02_collectives.md").unlink()
    (tree / "solutions" / "l99_stray.py").write_text("")
    (tree / "tests" / "mistakes" / "l03.py").unlink()
    (tree / "tests" / "mistakes" / "l99.py").write_text("")
    problems = static_problems(registry.load(), tree)
    assert "lesson 2: no text (course/lessons/02_collectives.md)" in problems
    assert "solutions/l99_stray.py belongs to no lesson in course.toml" in problems
    assert "lesson 3: no catalogue of mistakes (tests/mistakes/l03.py)" in problems
    assert "tests/mistakes/l99.py belongs to no lesson in course.toml" in problems


def test_an_import_between_lessons_is_found(tree):
    spec = tree / "grader" / "lessons" / "l10_context_parallel" / "spec.py"
    spec.write_text(
        "from grader.lessons.l05_collective_matmul.spec import streams\n" + spec.read_text()
    )
    problems = static_problems(registry.load(), tree)
    assert any("spec.py imports lesson l05_collective_matmul" in p for p in problems), problems


def test_a_lesson_folder_without_its_package_file_is_found(tree):
    (tree / "grader" / "lessons" / "l04_sharded_matmul" / "__init__.py").unlink()
    problems = static_problems(registry.load(), tree)
    assert "lesson 4: grader/lessons/l04_sharded_matmul/ has no __init__.py" in problems


def test_a_lesson_missing_from_the_readme_table_is_found(root, tree):
    readme = (root / "README.md").read_text()
    (tree / "README.md").write_text(readme.replace("\n| 7 |", "\n| seven |", 1))
    problems = static_problems(registry.load(), tree)
    assert any("README.md's lesson table lists lessons" in p for p in problems), problems


def test_a_stub_that_is_not_a_stub_is_found(tree):
    shutil.copy(tree / "solutions" / "l01_meshes.py", tree / "exercises" / "l01_meshes.py")
    assert "lesson 1: the stub has no TODO / NotImplementedError" in static_problems(
        registry.load(), tree
    )


def test_a_lesson_importing_the_sandbox_is_found(tree):
    """The core and every lesson sit below grader.sandbox: an import of it, at the top or
    inside a function, is named with the file and the module."""
    spec = tree / "grader" / "lessons" / "l01_meshes" / "spec.py"
    spec.write_text(
        spec.read_text() + "\n\ndef _f():\n    from grader.sandbox.wire import encode\n"
    )
    (tree / "grader" / "lessons" / "l04_sharded_matmul" / "helper.py").write_text(
        "import grader.sandbox\n"
    )
    problems = static_problems(registry.load(), tree)
    assert (
        "lesson 1: grader/lessons/l01_meshes/spec.py imports grader.sandbox.wire; a lesson imports "
        "nothing of grader.sandbox (it reaches processes through its runtime)"
    ) in problems
    assert any(p.startswith("lesson 4: grader/lessons/l04_sharded_matmul/helper.py imports grader.sandbox;") for p in problems)  # fmt: skip
    assert len(problems) == 2, problems  # and no other lesson imports it


def test_an_empty_catalogue_of_mistakes_is_found(tree):
    catalogue = tree / "tests" / "mistakes" / "l03.py"
    text = catalogue.read_text()
    start = text.index("MISTAKES: list[Mistake] = [")
    catalogue.write_text(text[:start] + "MISTAKES: list[Mistake] = []\n")
    assert static_problems(registry.load(), tree) == [
        "lesson 3: the catalogue of mistakes is empty (tests/mistakes/l03.py): each exercise "
        "needs realistic wrong implementations the grader must fail"
    ]
    catalogue.write_text(text.replace("MISTAKES: list[Mistake] = [", "OTHERS: list[Mistake] = ["))
    assert static_problems(registry.load(), tree) == [
        "lesson 3: tests/mistakes/l03.py defines no MISTAKES"
    ]


def test_an_exercise_the_catalogue_never_names_is_found(tree):
    """Lesson 1's catalogue with only its shard_shape mistakes: the other three named."""
    catalogue = tree / "tests" / "mistakes" / "l01.py"
    text = catalogue.read_text()
    first_other = text.index('exercise="device_slices"')
    cut = text.rindex("    Mistake(", 0, first_other)
    catalogue.write_text(text[:cut] + "]\n")
    assert static_problems(registry.load(), tree) == [
        f"lesson 1: the catalogue of mistakes (tests/mistakes/l01.py) has none for {name}"
        for name in ("device_slices", "place", "bytes_per_device")
    ]


def test_an_exercise_without_a_hint_is_found(tree):
    """Only its own hints count: the lesson's general hints (lesson 2 has two) do not."""
    course = registry.load()
    two = course.lesson(2)
    assert two.general_hints
    bare = dataclasses.replace(two.exercises[2], hints=())
    edited = dataclasses.replace(two, exercises=(*two.exercises[:2], bare))
    course = dataclasses.replace(
        course, lessons=tuple(edited if x is two else x for x in course.lessons)
    )
    assert static_problems(course, tree) == [
        "lesson 2: ring_all_reduce has no hint in course.toml (its own `hints` under its "
        "[[lessons.exercises]] entry)"
    ]


def test_a_skeleton_marker_left_in_a_file_is_found(tree):
    from course.commands.dev import MARKER

    sol = tree / "solutions" / "l06_data_parallel.py"
    sol.write_text(sol.read_text() + f"\n# {MARKER}: the reference\n")
    assert static_problems(registry.load(), tree) == [
        f"lesson 6: solutions/l06_data_parallel.py still holds the skeleton's {MARKER}"
    ]


def test_public_functions_reads_without_importing(tmp_path):
    f = tmp_path / "m.py"
    f.write_text(
        'import no_such_module\n\ndef f(a, b: int = 2) -> int:\n    """Doc."""\n\ndef _private(): pass\n'
    )
    assert public_functions(f) == {"f": ("(a, b: int=2) -> int", "Doc.")}


def test_a_failing_solution_fails_the_check(root, tree, tmp_path):
    sol = tree / "solutions" / "l01_meshes.py"
    right = "jax.device_put(x, NamedSharding(mesh, spec))"
    sol.write_text(
        sol.read_text().replace(right, "jax.device_put(x, NamedSharding(mesh, PartitionSpec()))")
    )
    env = {
        **os.environ,
        "COURSE_ROOT": str(tree),
        "COURSE_HOME": str(tmp_path / "home"),
        "COURSE_PLATFORM": "cpu",
    }
    r = subprocess.run([sys.executable, "-m", "course.cli", "dev", "check", "--lessons", "1"],
                       cwd=root, env=env, capture_output=True, text=True, timeout=300)  # fmt: skip
    assert r.returncode == 1, r.stdout + r.stderr
    assert "solutions: 1.place is failed, expected passed" in " ".join(r.stdout.split())


def test_a_wrong_catalogue_entry_is_caught_without_pytest(root, tree, tmp_path):
    """``--mistakes 1`` grades lesson 1's catalogue once, each entry as
    tests/test_mistakes.py does: the catalogue as it is passes; an entry whose words the
    diagnosis does not say, one with the wrong status and one whose patch no longer
    applies are each named."""
    env = {**os.environ, "COURSE_HOME": str(tmp_path / "home"), "COURSE_PLATFORM": "cpu"}
    shutil.copytree(root / "notebooks", tree / "notebooks")  # the check reads them too

    def check(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "course.cli", "dev", "check", "--static", "--root", str(tree), *args],
            cwd=root, env=env, capture_output=True, text=True, timeout=300,
        )  # fmt: skip

    r = check("--mistakes", "1")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "10 catalogued mistakes caught with their words" in r.stdout
    catalogue = tree / "tests" / "mistakes" / "l01.py"
    text = catalogue.read_text()
    edits = [('says=("Integer division",)', 'says=("Integer divisions",)'),
             ('check="values",\n        says=("product of all their sizes",)',
              'check="values",\n        says=("product of all their sizes",), patch=(("no such line", "x"),)')]  # fmt: skip
    for old, new in edits:
        assert text.count(old) == 1, old
        text = text.replace(old, new)
    at = text.index('id="zip-truncates-short-spec"')
    text = text[:at] + text[at:].replace('status="failed"', 'status="error"', 1)
    catalogue.write_text(text)
    r = check("--mistakes", "1")
    said = " ".join(r.stdout.split())
    assert r.returncode == 1, r.stdout + r.stderr
    assert (
        "lesson 1: the catalogued mistake floor-division-hides-indivisible (shard_shape): "
        "'Integer divisions' not in:"
    ) in said
    assert (
        "lesson 1: the catalogued mistake tuple-entry-first-axis-only (shard_shape): "
        "tuple-entry-first-axis-only: 'no such line' no longer in the solution"
    ) in said
    assert (
        "lesson 1: the catalogued mistake zip-truncates-short-spec (shard_shape): graded "
        "failed, the catalogue says error (the checks that failed: values)"
    ) in said
    assert said.count("the catalogued mistake") == 3
    r = check("--mistakes", "99")
    assert r.returncode == 2 and "--mistakes: no lesson 99" in r.stderr


@pytest.mark.parametrize(
    "module, old, new, says",
    [
        ("l11_expert_parallel", "trial.expected = later(moe_routing.route, logits.astype(np.float64), capacity, k)",
         "trial.expected = moe_routing.route(logits.astype(np.float64), capacity, k)",
         "lesson 11: grader/lessons/l11_expert_parallel/spec.py:LINE: _dispatch_run.run hands over "
         "programs, so it runs in the student's process too, where grader.expected is hidden, and "
         "there it reaches route(), which reaches grader.expected: defer it, trial.expected = "
         "later(fn, …) with fn a function (computed in the worker when a check reads it)"),
        ("l12_parallel_transformer", "trial.expected = later(_expected, params, x, y, heads)",
         "trial.expected = later(F.train_step, params, x, y, heads)",
         "lesson 12: grader/lessons/l12_parallel_transformer/spec.py:LINE: run_train hands over "
         "programs, so it runs in the student's process too, where grader.expected is hidden, and "
         "there it reaches F.train_step (reading it imports grader.expected): defer it"),
        ("l15_optimizer", "step = later(reference.adamw,", "step = (reference.adamw)(",
         "lesson 15: grader/lessons/l15_optimizer/spec.py:LINE: _run_adam.run hands over programs"),
    ],
    ids=["inline-call", "attribute-read", "through-a-module-of-the-lesson"],
)  # fmt: skip
def test_a_reference_reached_inline_in_a_run_that_hands_over_programs_is_found(tree, module, old, new, says):  # fmt: skip
    """A run that hands over programs also runs in the student's process, where
    grader.expected is hidden: a reference reached there, not deferred with later(fn, …),
    is named (the real course's deferred ones are not: test_the_real_course_is_consistent)."""
    spec = tree / "grader" / "lessons" / module / "spec.py"
    text = spec.read_text()
    assert text.count(old) == 1, old
    spec.write_text(text.replace(old, new))
    (problem,) = static_problems(registry.load(), tree)
    assert re.match(re.escape(says).replace("LINE", r"\d+"), problem), problem  # at any line


def _with_hints(course, number: int, name: str, hints: tuple[str, ...]):
    lesson = course.lesson(number)
    exercises = tuple(
        dataclasses.replace(e, hints=hints) if e.name == name else e for e in lesson.exercises
    )
    edited = dataclasses.replace(lesson, exercises=exercises)
    return dataclasses.replace(
        course, lessons=tuple(edited if x is lesson else x for x in course.lessons)
    )


def test_a_first_hint_holding_the_solutions_call_is_refused(tree):
    """Issue 45 §6: a first hint points at the idea; lesson 1's place used to be the answer
    (``jax.device_put(x, NamedSharding(mesh, spec))``, the solution's own call), named
    once, by its longest call (not also the NamedSharding inside it)."""
    answer = "place is one line: jax.device_put(x,  NamedSharding(mesh, spec))."
    course = _with_hints(registry.load(), 1, "place", (answer,))
    assert static_problems(course, tree) == [
        "lesson 1: place's first hint holds the solution's call jax.device_put(x, "
        "NamedSharding(mesh, spec)) verbatim: a first hint points at the idea; move the "
        "call to a later hint"
    ]


def test_the_same_call_in_a_later_hint_or_an_idea_first_is_accepted(tree):
    """The other way: the call as a second hint is the ladder working; a first hint that
    names the API without the solution's arguments holds no call of it."""
    idea = "A sharding built from the mesh and the spec, handed to jax.device_put."
    answer = "place is one line: jax.device_put(x, NamedSharding(mesh, spec))."
    course = _with_hints(registry.load(), 1, "place", (idea, answer))
    assert static_problems(course, tree) == []


def test_solution_calls_are_read_as_written():
    from course.commands.dev import solution_calls

    calls = solution_calls("def f(x):\n    return jnp.sum(\n        x * x, axis=0)  # c\n")
    assert calls == ["jnp.sum( x * x, axis=0)"]
    assert solution_calls("def f(:\n") == []


def test_a_first_hint_matches_the_call_whatever_its_spacing(tree):
    """The solution writes ``jnp.sum(g * g)``; a hint writing ``jnp.sum(g*g)`` is the same call."""
    course = _with_hints(
        registry.load(), 15, "clip_by_global_norm", ("norm = jnp.sqrt(jnp.sum(g*g))",)
    )
    (problem,) = static_problems(course, tree)
    assert problem.startswith(
        "lesson 15: clip_by_global_norm's first hint holds the solution's call jnp.sum(g * g)"
    )
