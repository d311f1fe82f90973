"""``course dev check`` and ``course dev new``: the course's developers' commands.

``course dev check``: the course is consistent, solutions pass, stubs are stubs.

1. the registry matches the files: every lesson has its exercise stub,
   solution, grading spec, text and catalogue of mistakes
   (``tests/mistakes/lNN.py``), and nothing else lies there;
2. each stub's public functions have the same signatures and docstrings as
   its solution's (read with ast: no import, no jax);
3. the grading spec names exactly the registry's exercises;
4. every exercise declares a hint in course.toml, and its first hint points at the idea:
   it holds no call the solution makes, verbatim (:func:`_first_hint_problems`); no catalogue of mistakes is
   empty, and each names every exercise; no lesson folder imports another
   lesson or ``grader.sandbox`` (read with ast); nothing still holds the
   skeleton's :data:`MARKER` that ``course dev new`` left to fill in (the README's
   lesson table included);
5. no ``run`` that hands over programs reaches the grader's side (``grader.expected``,
   hidden in the student's process, where that ``run`` also runs) but deferred with
   ``later(fn, …)``: the rule of grader/spec.py's ``ExerciseSpec.run``, checked with ast
   as far as it can be (:func:`_deferral_problems` says how far);
6. every solution passes its grader, and every untouched stub is reported
   "not started" (not with ``--static``);
7. with ``--mistakes all|N,…``, each catalogued mistake of those lessons is graded once
   and fails as its entry says (:func:`mistake_problems`: lesson 1's 10 in about 10 s,
   all 372 in about 4 minutes on two cores), so a wrong entry is caught without pytest.

``course dev new N slug`` writes a new lesson's skeletons (:func:`new`): the
grading folder, the stub and the reference with the same signatures, the text,
the catalogue of mistakes, the registry entry, the README's row and the notebook
(with the index and the notebook of the lesson before, whose "Next" names it);
``course dev check`` then names what is left to write.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import keyword
import os
import re
import sys
import tomllib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click
from rich.table import Table
from rich.text import Text

from course import notebooks, registry
from course.commands.common import App
from course.registry import Course, Lesson, RegistryError
from grader.repo import CODE, shipped
from grader.results import Status


def public_functions(path: Path) -> dict[str, tuple[str, str | None]]:
    """name → (signature text, docstring) of a module's top-level public functions."""
    tree = ast.parse(path.read_text(), filename=str(path))
    out = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and not node.name.startswith("_"):
            returns = f" -> {ast.unparse(node.returns)}" if node.returns else ""
            out[node.name] = (f"({ast.unparse(node.args)}){returns}", ast.get_docstring(node))
    return out


MARKER = "TODO(course dev new)"
"""What ``course dev new`` leaves where the lesson's author must write; ``course dev
check`` names every file (and registry entry) that still holds it. (A stub's own
``# TODO`` lines are the student's, and stay.)"""


def static_problems(course: Course, root: Path) -> list[str]:
    """Everything about the files and the registry that is wrong, read with ast (no
    stub, solution or catalogue is imported; only each lesson's grading spec is)."""
    problems = []
    known = {lesson.module for lesson in course.lessons}
    for folder in ("exercises", "solutions"):
        for f in sorted((root / folder).glob("l[0-9][0-9]_*.py")):
            if f.stem not in known:
                problems.append(f"{folder}/{f.name} belongs to no lesson in course.toml")
    for d in sorted((root / "grader" / "lessons").glob("l[0-9][0-9]_*")):
        if d.is_dir() and d.name not in known:
            problems.append(f"grader/lessons/{d.name}/ belongs to no lesson in course.toml")
    numbered = {f"l{lesson.number:02d}" for lesson in course.lessons}
    for f in sorted((root / "tests" / "mistakes").glob("l[0-9][0-9].py")):
        if f.stem not in numbered:
            problems.append(f"tests/mistakes/{f.name} belongs to no lesson in course.toml")
    texts = {lesson.text_name for lesson in course.lessons}
    for f in sorted((root / "course" / "lessons").glob("*.md")):
        if f.name not in texts:
            problems.append(f"course/lessons/{f.name} belongs to no lesson in course.toml")
    for lesson in course.lessons:
        files = {
            "stub": root / "exercises" / f"{lesson.module}.py",
            "solution": root / "solutions" / f"{lesson.module}.py",
            "grading spec": root / "grader" / "lessons" / lesson.module / "spec.py",
            "text": root / "course" / "lessons" / lesson.text_name,
            "catalogue of mistakes": root / "tests" / "mistakes" / f"l{lesson.number:02d}.py",
        }
        missing = [k for k, f in files.items() if not f.exists()]
        problems += [
            f"lesson {lesson.number}: no {k} ({files[k].relative_to(root)})" for k in missing
        ]
        problems += [
            f"lesson {lesson.number}: {e.name} has no hint in course.toml (its own `hints` "
            "under its [[lessons.exercises]] entry)"
            for e in lesson.exercises
            if not e.hints
        ]
        problems += _registry_marker_problems(lesson)
        if files["solution"].is_file():
            problems += _first_hint_problems(lesson, files["solution"])
        unparsed = _syntax_problems(
            lesson.number, root, [f for f in (*files.values(), *_folder_files(root, lesson.module))
                                  if f.suffix == ".py" and f.is_file()]
        )  # fmt: skip
        if unparsed:  # the other checks read these files with ast
            problems += unparsed
            continue
        problems += [
            f"lesson {lesson.number}: {f.relative_to(root)} still holds the skeleton's {MARKER}"
            for f in dict.fromkeys((*files.values(), *_folder_files(root, lesson.module)))
            if f.is_file() and f.suffix in (".py", ".md") and MARKER in f.read_text()
        ]
        if "catalogue of mistakes" not in missing:
            problems += _catalogue_problems(lesson, files["catalogue of mistakes"], root)
        if {"stub", "solution"} & set(missing):
            continue
        stub, sol = public_functions(files["stub"]), public_functions(files["solution"])
        names = [e.name for e in lesson.exercises]
        for name in names:
            if name not in sol:
                problems.append(f"lesson {lesson.number}: the solution defines no {name}()")
            if name not in stub:
                problems.append(f"lesson {lesson.number}: the stub defines no {name}()")
        for name in sorted(set(stub) | set(sol)):
            if name in stub and name in sol:
                if stub[name][0] != sol[name][0]:
                    problems.append(
                        f"lesson {lesson.number}: {name} signatures differ: stub {stub[name][0]} vs solution {sol[name][0]}"
                    )
                if stub[name][1] != sol[name][1]:
                    problems.append(
                        f"lesson {lesson.number}: {name} docstrings differ between stub and solution"
                    )
            else:
                where = "stub" if name in stub else "solution"
                problems.append(f"lesson {lesson.number}: {name}() is public in the {where} only")
        stub_text = files["stub"].read_text()
        if "TODO" not in stub_text or "NotImplementedError" not in stub_text:
            problems.append(f"lesson {lesson.number}: the stub has no TODO / NotImplementedError")
        if "grading spec" not in missing:
            problems += _lesson_folder_problems(lesson.number, lesson.module, root, known)
            problems += _deferral_problems(lesson.number, lesson.module, root)
            try:
                spec_names = _spec_exercises(root, lesson.module)
            except Exception as exc:  # a spec that does not import is a problem to name
                problems.append(
                    f"lesson {lesson.number}: the grading spec does not load: "
                    f"{type(exc).__name__}: {exc}"
                )
            else:
                if spec_names != names:
                    problems.append(
                        f"lesson {lesson.number}: the grading spec grades {spec_names}, course.toml lists {names}"
                    )
    problems += _readme_problems(course, root)
    return problems


def _syntax_problems(number: int, root: Path, files: list[Path]) -> list[str]:
    out = []
    for f in dict.fromkeys(files):
        try:
            ast.parse(f.read_text(), filename=str(f))
        except SyntaxError as exc:
            out.append(f"lesson {number}: {f.relative_to(root)} does not parse: line {exc.lineno}: {exc.msg}")  # fmt: skip
    return out


def _folder_files(root: Path, module: str) -> list[Path]:
    return sorted((root / "grader" / "lessons" / module).glob("*.py"))


def solution_calls(source: str) -> list[str]:
    """Every call with an argument that ``source`` makes, as written there (whitespace
    runs made one space): ``jax.device_put(x, NamedSharding(mesh, spec))``, and the
    ``NamedSharding(mesh, spec)`` inside it; [] for a source that does not parse."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    calls = (
        ast.get_source_segment(source, n)
        for n in ast.walk(tree)
        if isinstance(n, ast.Call) and (n.args or n.keywords)
    )
    return list(dict.fromkeys(" ".join(c.split()) for c in calls if c))


def _first_hint_problems(lesson: Lesson, solution: Path) -> list[str]:
    """A first hint is shown to whoever asks once (``course hint N``): it points at the
    idea, so it may not hold a call the solution makes verbatim (the answer, copied);
    a later hint may."""
    calls = solution_calls(solution.read_text())
    out = []
    for e in lesson.exercises:
        if not e.hints:
            continue
        first = "".join(e.hints[0].split())  # matched without spaces: x*x is x * x
        found = [c for c in calls if "".join(c.split()) in first]
        longest = [c for c in found if not any(c != o and c in o for o in found)]
        if longest:
            out.append(
                f"lesson {lesson.number}: {e.name}'s first hint holds the solution's call "
                f"{', '.join(longest)} verbatim: a first hint points at the idea; move the "
                "call to a later hint"
            )
    return out


def _registry_marker_problems(lesson: Lesson) -> list[str]:
    """The registry entry's texts ``course dev new`` left to write."""
    fields = [("title", lesson.title), ("summary", lesson.summary)]
    fields += [(f"{e.name}'s summary", e.summary) for e in lesson.exercises]
    fields += [(f"{e.name}'s hints", h) for e in lesson.exercises for h in e.hints]
    fields += [("general hints", h) for h in lesson.general_hints]
    left = list(dict.fromkeys(name for name, text in fields if MARKER in text))
    if not left:
        return []
    return [f"lesson {lesson.number}: course.toml's {', '.join(left)} still hold {MARKER}"]


def _catalogue_problems(lesson: Lesson, path: Path, root: Path) -> list[str]:
    """The catalogue of mistakes (read with ast): a ``MISTAKES`` list that is not empty
    and names every exercise of the lesson (a mistake per exercise, at least)."""
    where = path.relative_to(root)
    tree = ast.parse(path.read_text(), filename=str(path))
    value = None
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []  # fmt: skip
        if any(isinstance(t, ast.Name) and t.id == "MISTAKES" for t in targets):
            value = node.value
    if value is None:
        return [f"lesson {lesson.number}: {where} defines no MISTAKES"]
    if isinstance(value, ast.List | ast.Tuple) and not value.elts:
        return [
            f"lesson {lesson.number}: the catalogue of mistakes is empty ({where}): each "
            "exercise needs realistic wrong implementations the grader must fail"
        ]
    said = {
        n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)
    }
    return [
        f"lesson {lesson.number}: the catalogue of mistakes ({where}) has none for {e.name}"
        for e in lesson.exercises
        if e.name not in said
    ]


def _spec_exercises(root: Path, module: str) -> list[str]:
    """The exercise names ``grader/lessons/<module>/spec.py`` grades. A lesson the running
    code has is imported as the grader imports it; one only under ``root`` (a tree
    ``course dev new`` wrote elsewhere) is read from its file."""
    if (CODE / "grader" / "lessons" / module / "spec.py").is_file():
        from grader.engine import load_spec  # imports hypothesis and numpy, not jax

        return [e.name for e in load_spec(module).exercises]
    path = root / "grader" / "lessons" / module / "spec.py"
    name = f"_course_dev_check_{module}"
    found = importlib.util.spec_from_file_location(name, path)
    assert found is not None and found.loader is not None
    loaded = importlib.util.module_from_spec(found)
    sys.modules[name] = loaded  # dataclasses look their module up while the file runs
    try:
        found.loader.exec_module(loaded)
    finally:
        sys.modules.pop(name, None)
    return [e.name for e in loaded.SPEC.exercises]


def _lesson_folder_problems(number: int, module: str, root: Path, known: set[str]) -> list[str]:
    """A lesson folder is a package that imports no other lesson (shared pieces
    live below the lessons: grader/checks, grader/reference, grader/measure), and
    nothing of ``grader.sandbox``: the core and every lesson sit below the sandbox."""
    folder = root / "grader" / "lessons" / module
    problems = []
    if not (folder / "__init__.py").exists():
        problems.append(f"lesson {number}: grader/lessons/{module}/ has no __init__.py")
    for f in sorted(folder.glob("*.py")):
        for node in ast.walk(ast.parse(f.read_text(), filename=str(f))):
            names = []
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            for name in names:
                parts = name.split(".")
                other = parts[2] if parts[:2] == ["grader", "lessons"] and len(parts) > 2 else None
                if other in known and other != module:
                    problems.append(
                        f"lesson {number}: grader/lessons/{module}/{f.name} imports lesson "
                        f"{other}; move what both use below the lessons"
                    )
                if parts[:2] == ["grader", "sandbox"]:
                    problems.append(
                        f"lesson {number}: grader/lessons/{module}/{f.name} imports "
                        f"{'.'.join(parts[:3])}; a lesson imports nothing of grader.sandbox "
                        "(it reaches processes through its runtime)"
                    )
    return sorted(set(problems))


DEFERRED = ("later", "in_worker")
"""What defers a call (:mod:`grader.later`): the function handed to it is called in the
worker only (``in_worker``: where the grader's side can be imported)."""


def _module_functions(tree: ast.Module) -> dict[str, ast.FunctionDef]:
    return {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}


def _own_nodes(function: ast.FunctionDef) -> list[ast.AST]:
    """The nodes a call of ``function`` evaluates: its body without the lambdas and
    functions defined in it (they run when called, later or elsewhere)."""
    nested = ast.Lambda | ast.FunctionDef | ast.AsyncFunctionDef
    out, todo = [], [n for n in function.body if not isinstance(n, nested)]
    while todo:
        node = todo.pop()
        out.append(node)
        todo += [c for c in ast.iter_child_nodes(node) if not isinstance(c, nested)]
    return out


def _deferral_problems(number: int, module: str, root: Path) -> list[str]:
    """A ``run`` that hands over programs runs in the student's process too, where the
    grader's side (:mod:`grader.expected`, reached through ``expected("…")``) is hidden:
    there it must reach it only deferred, ``later(fn, …)`` or ``in_worker(fn, …)`` with
    ``fn`` a function, never an attribute of ``expected("…")`` (reading one imports the
    module) nor a call of it (grader/spec.py's ``ExerciseSpec.run``, grader/later.py).

    Read with ast over the lesson's folder, approximately: a function *hands over
    programs* when its body calls ``….compile_and_run(…)`` without ``ours=True``, or calls
    (by name, in the folder) one that does; a function *reaches the grader's side* when
    its body, outside lambdas and the functions defined in it, reads an attribute of a
    module-level ``expected("…")`` (but ``.fn``) or imports grader.expected, or calls one
    that does. Each reach in a function that hands over programs is named. Not decided
    here: a reference computed inline from code the student's process can read (lessons 2
    and 5 compute theirs in float64 numpy in ``run``), which costs time there but hides
    nothing; nor calls through variables."""
    folder = root / "grader" / "lessons" / module
    trees = {f.stem: ast.parse(f.read_text(), filename=str(f)) for f in sorted(folder.glob("*.py"))}
    prefix = f"grader.lessons.{module}"
    hidden: dict[str, set[str]] = {}  # module → its names bound to expected("…")
    wrapped: dict[str, set[str]] = {}  # module → its names bound to expected("…").fn("…")
    imported: dict[str, dict[str, tuple[str, str | None]]] = {}  # name → (module, function)
    for stem, tree in trees.items():
        hidden[stem], wrapped[stem], imported[stem] = set(), set(), {}
        for node in tree.body:
            if isinstance(node, ast.Assign):
                pairs = []
                for target in node.targets:
                    if isinstance(target, ast.Tuple) and isinstance(node.value, ast.Tuple):
                        pairs += zip(target.elts, node.value.elts)
                    else:
                        pairs.append((target, node.value))
                for target, value in pairs:
                    if not (isinstance(target, ast.Name) and isinstance(value, ast.Call)):
                        continue
                    if isinstance(value.func, ast.Name) and value.func.id == "expected":
                        hidden[stem].add(target.id)
                    elif (isinstance(value.func, ast.Attribute) and value.func.attr == "fn"
                            and isinstance(value.func.value, ast.Name)
                            and value.func.value.id in hidden[stem]):  # fmt: skip
                        wrapped[stem].add(target.id)  # route = _REFERENCE.fn("route")
            elif isinstance(node, ast.ImportFrom) and node.module:
                for a in node.names:
                    name = a.asname or a.name
                    if (
                        node.module == prefix and a.name in trees
                    ):  # from grader.lessons.lNN import x
                        imported[stem][name] = (a.name, None)
                    elif node.module.startswith(prefix + "."):
                        other = node.module.removeprefix(prefix + ".")
                        if other in trees:
                            imported[stem][name] = (other, a.name)
                    elif node.level == 1 and (node.module or "") in trees:
                        imported[stem][name] = (node.module, a.name)

    def callee(stem: str, func: ast.expr) -> tuple[str, str] | None:
        """The folder's (module, function) a call's ``func`` names, if it names one."""
        if isinstance(func, ast.Name):
            if func.id in _module_functions(trees[stem]) or func.id in wrapped[stem]:
                return (stem, func.id)
            other, name = imported[stem].get(func.id, (None, None))
            return (other, name) if other and name else None
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
            other, name = imported[stem].get(func.value.id, (None, None))
            if (
                other
                and name is None
                and (func.attr in _module_functions(trees[other]) or func.attr in wrapped[other])
            ):
                return (other, func.attr)
        return None

    functions = {(stem, name): f for stem, tree in trees.items()
                 for name, f in _module_functions(tree).items()}  # fmt: skip
    every, named = [], {}  # every function, nested ones too; each one's qualified name
    for stem, tree in trees.items():
        todo: list[tuple[ast.AST, str]] = [(tree, "")]
        while todo:
            node, outer = todo.pop()
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.FunctionDef):
                    every.append((stem, child))
                    named[id(child)] = outer + child.name
                    todo.append((child, f"{outer}{child.name}."))
                else:
                    todo.append((child, outer))

    def direct(stem: str, f: ast.FunctionDef) -> tuple[list[tuple[int, str]], bool, list[tuple[int, tuple[str, str]]]]:  # fmt: skip
        """(reaches: line and what, hands over a program, calls of the folder's functions)."""
        reaches, hands, calls = [], False, []
        nodes = _own_nodes(f)
        for node in nodes:
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
                if node.value.id in hidden[stem] and node.attr != "fn":
                    reaches.append((node.lineno, f"{node.value.id}.{node.attr} (reading it imports grader.expected)"))  # fmt: skip
            elif isinstance(node, ast.Import | ast.ImportFrom):
                names = (
                    [a.name for a in node.names]
                    if isinstance(node, ast.Import)
                    else [node.module or ""]
                )
                if any(n.startswith("grader.expected") for n in names):
                    reaches.append((node.lineno, "an import of grader.expected"))
            elif isinstance(node, ast.Call):
                if isinstance(node.func, ast.Attribute) and node.func.attr == "compile_and_run":
                    ours = any(k.arg == "ours" and isinstance(k.value, ast.Constant) and k.value.value
                               for k in node.keywords)  # fmt: skip
                    hands = hands or not ours
                target = callee(stem, node.func)
                if target:
                    calls.append((node.lineno, target))
        return reaches, hands, calls

    facts = {}
    for stem, f in every:
        facts[(stem, f)] = direct(stem, f)
    reach = {key for key, (r, _, _) in facts.items() if r}
    hand = {key for key, (_, h, _) in facts.items() if h}
    by_name: dict[tuple[str, str], Any] = {k: (k[0], functions[k]) for k in functions}
    for stem, names in wrapped.items():  # a wrapper's call imports the grader's side
        for name in names:
            by_name[(stem, name)] = ("wrapped", stem, name)
            reach.add(by_name[(stem, name)])
    changed = True
    while changed:  # through the folder's calls, to a fixed point
        changed = False
        for key, (_, _, calls) in facts.items():
            for _, target in calls:
                called = by_name.get(target)
                if called is None:
                    continue
                if called in reach and key not in reach:
                    reach.add(key)
                    changed = True
                if called in hand and key not in hand:
                    hand.add(key)
                    changed = True
    problems = []
    for key in sorted(hand, key=lambda k: (k[0], k[1].lineno)):
        stem, f = key
        where = f"grader/lessons/{module}/{stem}.py"
        found = list(facts[key][0])
        found += [(line, f"{target[1]}(), which reaches grader.expected")
                  for line, target in facts[key][2] if by_name.get(target) in reach]  # fmt: skip
        for line, what in sorted(set(found)):
            problems.append(
                f"lesson {number}: {where}:{line}: {named[id(f)]} hands over programs, so it "
                f"runs in the student's process too, where grader.expected is hidden, and there "
                f"it reaches {what}: defer it, trial.expected = later(fn, …) with fn a function "
                "(computed in the worker when a check reads it)"
            )
    return problems


README_ROW = re.compile(r"^\| (\d+) \|.*$", flags=re.M)
"""A row of the README's lesson table: ``| 7 | title | what you build |``."""


def _readme_problems(course: Course, root: Path) -> list[str]:
    """The README's lesson table lists exactly the registry's lessons, in order, and no
    row still holds the :data:`MARKER` ``course dev new`` left in it."""
    readme = root / "README.md"
    if not readme.exists():
        return []
    rows = list(README_ROW.finditer(readme.read_text()))
    listed = [int(m[1]) for m in rows]
    numbers = [lesson.number for lesson in course.lessons]
    problems = [
        f"README.md's lesson table: lesson {m[1]}'s row still holds the skeleton's {MARKER}"
        for m in rows
        if MARKER in m[0]
    ]
    if listed != numbers:
        problems.append(f"README.md's lesson table lists lessons {listed}, course.toml {numbers}")
    return problems


def _readme_with_row(text: str, number: int, title: str, after: int | None) -> str | None:
    """The README's text with lesson ``number``'s row in its lesson table, after lesson
    ``after``'s row (default: the table's last); None where the README has no such table."""
    rows = list(README_ROW.finditer(text))
    if not rows:
        return None
    before = next((m for m in rows if int(m[1]) == after), rows[-1])
    row = f"| {number} | {title} | {MARKER}: what the student builds, and what it is checked for |"
    return text[: before.end()] + "\n" + row + text[before.end() :]


def _course_at(root: Path) -> Course:
    """The registry of the repository at ``root`` (read afresh: ``course dev new`` edits
    it); where ``root`` has none (a copy of the lesson folders only), this code's."""
    path = root / "course" / "course.toml"
    try:
        return registry.load.__wrapped__(path if path.is_file() else registry.REGISTRY)
    except RegistryError as exc:
        raise click.ClickException(str(exc)) from None


def check(
    app: App, grade_code: bool = True, timeout: float = 120.0, root: Path | None = None,
    mistakes: Sequence[int] | None = (), graded: Sequence[int] | None = None,
) -> int:  # fmt: skip
    """``course dev check``: the repository at ``root`` (default: this one, or
    ``COURSE_ROOT``), its own course.toml included; ``mistakes``: the lessons whose
    catalogue of mistakes is graded too (:func:`mistake_problems`; None: every lesson's);
    ``graded``: the lessons whose solutions and stubs are graded (None: every lesson's;
    the file checks are the whole course's whatever it is)."""
    from grader.sandbox.protocol import LessonJob, Request
    from grader.sandbox.runner import grade

    if root is None:
        if not shipped(app.root).checkout:
            raise click.ClickException(
                "course dev check checks a clone of the repository; none here"
            )
        root = app.root
    elif not (root / "exercises").is_dir():
        raise click.ClickException(f"{root} is no clone of the course (it has no exercises/)")
    course = _course_at(root)
    problems = static_problems(course, root)
    rows: list[tuple[str, str, bool, str]] = []
    if graded is not None:
        unknown = sorted(set(graded) - {lesson.number for lesson in course.lessons})
        if unknown:
            raise click.UsageError(f"--lessons: no lesson {', '.join(map(str, unknown))}")
    if grade_code and not problems:
        lessons = tuple(
            LessonJob(lesson.number, lesson.module, tuple(e.name for e in lesson.exercises))
            for lesson in course.lessons
            if graded is None or lesson.number in graded
        )
        for folder, want in (("solutions", Status.PASSED), ("exercises", Status.NOT_STARTED)):
            with app.console.status(f"grading {folder}/ …"):
                results = grade(
                    Request(
                        lessons, str(root / folder), timeout=timeout, cache_dir=app.compile_cache()
                    ),
                    debug=app.debug,
                )
            for lr in results:
                for er in lr.exercises:
                    ok = er.status == want
                    rows.append((folder, f"{er.lesson}.{er.exercise}", ok, str(er.status)))
                    if not ok:
                        why = er.error or next((c.message for c in er.checks if not c.passed), "")
                        problems.append(
                            f"{folder}: {er.lesson}.{er.exercise} is {er.status}, expected {want}: {why}"
                        )
    caught = 0
    if mistakes is None:
        mistakes = [lesson.number for lesson in course.lessons]
    if mistakes and not problems:
        unknown = sorted(set(mistakes) - {lesson.number for lesson in course.lessons})
        if unknown:
            raise click.UsageError(f"--mistakes: no lesson {', '.join(map(str, unknown))}")
        found = mistake_problems(app, root, mistakes)
        caught = sum(1 for p in found if p is None)
        problems += [p for p in found if p is not None]
    problems += notebooks.problems(course, root)  # figures and notebooks/ up to date
    if rows:
        table = Table(title="course dev check", title_justify="left")
        table.add_column("graded")
        table.add_column("exercise")
        table.add_column("status")
        for folder, name, ok, status in rows:
            table.add_row(folder, name, Text(status, style="green" if ok else "red"))
        app.console.print(table)
    for p in problems:
        app.console.print(Text("✘ " + p, style="red"))
    if problems:
        return 1
    app.console.print(
        Text(
            f"✔ {len(course.lessons)} lessons consistent"
            + (", solutions pass, stubs not started" if grade_code else "")
            + (
                f" (lessons {', '.join(map(str, graded))} graded)"
                if grade_code and graded is not None
                else ""
            )  # fmt: skip
            + (
                f", {caught} catalogued mistake{'s' * (caught != 1)} caught with their words"
                if mistakes
                else ""
            ),  # fmt: skip
            style="green",
        )
    )
    return 0


def mistake_problems(app: App, root: Path, numbers: Sequence[int]) -> list[str | None]:
    """Each catalogued mistake of lessons ``numbers`` (``root/tests/mistakes/lNN.py``)
    graded once, as tests/test_mistakes.py grades it, in a process of its own
    (:mod:`course.commands.dev_mistakes`): per mistake, None when the grader fails it as
    its entry says, else what is wrong. About 0.5 s a mistake on two cores, lesson 1's
    10 in 5 s; the whole course's 372 in about 4 minutes."""
    import subprocess

    out: list[str | None] = []
    command = [sys.executable, "-m", "course.commands.dev_mistakes", str(root), *map(str, numbers)]
    with app.console.status("grading the catalogued mistakes …") as status:
        proc = subprocess.Popen(command, cwd=CODE, stdout=subprocess.PIPE, text=True)
        assert proc.stdout is not None
        for line in proc.stdout:
            said = json.loads(line)
            status.update(f"grading the catalogued mistakes … {len(out) + 1}: {said['id']}")
            if said["problem"] is None:
                out.append(None)
            else:
                out.append(
                    f"lesson {said['lesson']}: the catalogued mistake {said['id']} "
                    f"({said['exercise']}): {said['problem']}"
                )
    if proc.wait() != 0:
        out.append(f"grading the catalogued mistakes stopped (exit {proc.returncode}): see above")
    return out


# ------------------------------------------------------------------ course dev new

SLUG = re.compile(r"[a-z][a-z0-9_]*")


def _skeletons(number: int, slug: str, title: str, exercises: Sequence[str]) -> dict[str, str]:
    """Path (relative to the repository) → text of every file a new lesson starts with."""
    module, nn = f"l{number:02d}_{slug}", f"{number:02d}"
    const = f"L{nn}"
    doc = f"{MARKER}: what it returns, for which inputs; shapes and units."
    stub_defs = "".join(
        f'\n\ndef {name}(x: object) -> object:\n    """{doc}"""\n'
        f'    # TODO: your code here.\n    raise NotImplementedError("{name}: TODO")\n'
        for name in exercises
    )
    solution_defs = "".join(
        f'\n\ndef {name}(x: object) -> object:\n    """{doc}"""\n'
        f'    raise NotImplementedError("{MARKER}: the reference {name}")\n'
        for name in exercises
    )
    runs = "".join(
        f"\n\ndef _run_{name}(rt: Runtime, fn: Callable[..., Any], ex: Example) -> Trial:\n"
        f'    """{MARKER}: build the inputs from ex and rt, call fn, keep what the checks read.\n\n'
        "    The reference is deferred: trial.expected = later(reference, ...) (grader.later),\n"
        "    computed in the worker when a check reads it; run also runs in the student's\n"
        '    process, where grader.expected is hidden (course dev check names a call of it)."""\n'
        f'    raise NotImplementedError("{MARKER}: run {name}")\n'
        for name in exercises
    )
    specs = "".join(
        f'        ExerciseSpec(name="{name}", strategy=_strategy, explicit=_explicit,\n'
        f"                     run=_run_{name}, checks=[]),  # {MARKER}: its checks\n"
        for name in exercises
    )
    listed = "".join(
        f"{i}. `{name}(...)` — {MARKER}: what it computes, the formula, a worked example.\n"
        for i, name in enumerate(exercises, start=1)
    )
    return {
        f"grader/lessons/{module}/__init__.py": (
            f'"""Lesson {number}, {title}: its grading spec (``spec.py``) and what only it uses."""\n'
        ),
        f"grader/lessons/{module}/spec.py": f'''"""Grading spec for lesson {number}: {title}.

{MARKER}: what each exercise is held against, on which examples (drawn where
the plans or mistakes the lesson contrasts differ), and which mistake each check
tells apart. Lessons 3 and 14 grade pure functions; 4 to 12 sharded programs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hypothesis import strategies as st

from grader.runtime import Runtime
from grader.spec import Context, Example, ExerciseSpec, LessonSpec, Trial


def _strategy(ctx: Context) -> Any:
    """{MARKER}: a hypothesis strategy of examples (dicts of plain fields)."""
    return st.fixed_dictionaries({{}})


def _explicit(ctx: Context) -> list[Example]:
    """{MARKER}: the edge cases every grade runs first."""
    return []
{runs}

SPEC = LessonSpec(
    exercises=[
{specs}    ]
)  # fmt: skip
''',
        f"exercises/{module}.py": f'''"""Lesson {number} — {title}.

{MARKER}: what the student builds, in two or three sentences.

Read the lesson first: ``course show {number}``. Grade with ``course grade {number}``.
"""
{stub_defs}''',
        f"solutions/{module}.py": f'''"""Lesson {number} — {title} (reference solution).

{MARKER}: what the student builds, in two or three sentences.
"""
{solution_defs}''',
        f"course/lessons/{nn}_{slug}.md": f"""# Lesson {number} — {title}

{MARKER}: the idea, its formulas, a worked example with numbers, a diagram.

## Exercises

{listed}""",
        f"tests/mistakes/l{nn}.py": f'''"""Realistic wrong implementations for lesson {number} (see tests/mistakes/__init__.py).

{MARKER}: one per way of getting an exercise wrong that the lesson warns about,
each with the words the grader's message or hint must say.
"""

from __future__ import annotations

from tests.mistakes import Mistake

{const} = "{module}"

MISTAKES: list[Mistake] = [
    # Mistake(id="l{nn}-what-goes-wrong", module={const}, exercise="{exercises[0]}",
    #         status="failed", check="values", says=("words of the diagnosis",),
    #         patch=(("a line of the solution", "the wrong line"),)),
]
''',
    }


def _registry_entry(number: int, slug: str, title: str, exercises: Sequence[str]) -> str:
    q = lambda text: json.dumps(text, ensure_ascii=False)  # noqa: E731  (TOML's escapes are JSON's)
    entry = (
        f"[[lessons]]\nnumber = {number}\nslug = {q(slug)}\ntitle = {q(title)}\n"
        f"summary = {q(MARKER + ': one line for course list.')}\n"
    )
    for name in exercises:
        entry += (
            f"\n[[lessons.exercises]]\nname = {q(name)}\npoints = 1\n"
            f"summary = {q(MARKER + ': what the function must do, in one line.')}\n"
            "hints = []\n"
        )
    return entry


def _placed(text: str, entry: str, after: int | None, course: Course) -> str:
    """course.toml's text with ``entry`` after lesson ``after``'s entry (default: last)."""
    starts = [m.start() for m in re.finditer(r"^\[\[lessons\]\]\s*$", text, flags=re.M)]
    numbers = [lesson.number for lesson in course.lessons]
    if after is None or numbers.index(after) == len(numbers) - 1:
        return text.rstrip("\n") + "\n\n" + entry
    cut = starts[numbers.index(after) + 1]
    return text[:cut] + entry + "\n" + text[cut:]


def new(
    app: App,
    number: int,
    slug: str,
    title: str | None = None,
    exercises: Sequence[str] = (),
    after: int | None = None,
    root: Path | None = None,
) -> int:
    """``course dev new N slug``: write a new lesson's skeletons under ``root`` (default:
    this repository) and its course.toml entry (after lesson ``after``, default last).
    Refuses, writing nothing, a number or slug the registry has, or a file that exists."""
    root = app.root if root is None else root
    exercises = tuple(exercises) or ("first_exercise",)
    title = title or f"{MARKER}: the lesson's title"
    toml = root / "course" / "course.toml"
    if not toml.is_file():
        raise click.UsageError(f"{root} has no course/course.toml: not a clone of the course")
    course = _course_at(root)
    refused = []
    if not 1 <= number <= 99:
        refused.append(f"the number must be 1–99 (files are named lNN_…), not {number}")
    if not SLUG.fullmatch(slug):
        refused.append(
            f"the slug must be lower-case letters, digits and _, first a letter: {slug!r}"
        )
    for name in exercises:
        if not name.isidentifier() or keyword.iskeyword(name) or name.startswith("_"):
            refused.append(f"{name!r} cannot be an exercise: a public Python function name is")
    if len(set(exercises)) != len(exercises):
        refused.append("an exercise is named twice")
    if any(c in title for c in '\\"\n|') or not title.strip():
        refused.append("the title is one line without quotes, backslashes or |")
    for lesson in course.lessons:
        if lesson.number == number:
            refused.append(f"lesson {number} exists already ({lesson.slug})")
        if lesson.slug == slug:
            refused.append(f"the slug {slug!r} is lesson {lesson.number}'s already")
    if after is not None and after not in {lesson.number for lesson in course.lessons}:
        refused.append(f"there is no lesson {after} to place it after")
    files = _skeletons(number, slug, title, exercises) if not refused else {}
    refused += [f"{path} exists already" for path in files if (root / path).exists()]
    if refused:
        raise click.UsageError("nothing written: " + "; ".join(refused))
    text = _placed(toml.read_text(), _registry_entry(number, slug, title, exercises), after, course)
    try:  # the new file must read back as the course with the lesson where it was put
        parsed = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:  # pragma: no cover - the entry is ours
        raise click.ClickException(f"the new course.toml would not parse: {exc}") from None
    order = [e["number"] for e in parsed["lessons"]]
    want = [lesson.number for lesson in course.lessons]
    want.insert(want.index(after) + 1 if after is not None else len(want), number)
    assert order == want, (order, want)
    readme = root / "README.md"
    with_row = _readme_with_row(readme.read_text(), number, title, after) if readme.is_file() else None  # fmt: skip
    for path, body in files.items():
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(body)
    tmp = toml.with_name(".course.toml.new")
    tmp.write_text(text)
    os.replace(tmp, toml)
    written = [*files, "course/course.toml"]
    if with_row is not None:
        readme.write_text(with_row)
        written.append("README.md")
    app.console.print(f"Lesson {number} ({slug}): wrote")
    for path in written:
        app.console.print(f"  {path}")
    try:  # the notebook, from the text and the stub (and the lesson before's, and the index)
        import nbformat  # noqa: F401
    except ImportError:
        app.console.print(
            "  no notebook: nbformat is not installed (pip install -e '.[test]'), then run "
            "course dev notebooks"
        )
    else:
        for f in notebooks.write(_course_at(root), root, drawn=False):
            app.console.print(f"  {f.relative_to(root)}")
    app.console.print(
        f"Every {MARKER} is yours to write; `course dev check` names what is left. Once the "
        "text and the stub are written, `course dev notebooks` writes the notebook anew."
    )
    return 0


def notebooks_command(app: App) -> int:
    """``course dev notebooks``: figures and notebooks written from the texts and stubs."""
    if not shipped(app.root).checkout:
        raise click.ClickException("course dev notebooks writes into a clone of the repository")
    try:
        import nbformat  # noqa: F401
    except ImportError:
        raise click.ClickException("nbformat is not installed: pip install -e '.[test]'") from None
    changed = notebooks.write(app.course, app.root)
    for f in changed:
        app.console.print(f"wrote {f.relative_to(app.root)}")
    app.console.print(f"{len(changed)} file(s) changed")
    return 0
