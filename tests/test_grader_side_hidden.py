"""The grader's side of the lessons is hidden from the student's process (issue 39).

The student's process imports a lesson's spec to run it, so whatever a spec
imports at import time is readable there. Before ``grader/expected/`` the
formulas of lessons 3, 14 and 16 were: a submission whose function imported the
grader's own formula and returned its result passed ``3.matmul_flops``,
``14.param_count`` and ``16.kv_cache_bytes`` through the real ``course grade``,
sandbox on, on all 23, 18 and 11 examples, recorded as passed; so did returning
lesson 9's own GPipe schedule (``9.gpipe_schedule``, 23 examples) and lesson 12's
``reference_bytes`` (``12.predict_step_bytes``, 8): measured when this file was written.

Each test runs the real command, bounded in time: a probe that tries to import
every module of :mod:`grader.expected` and to read every file of it from inside
the sandbox, beside the reference solution (which must still pass); and the
cheat above, which must now fail. Without a sandbox, the specs must still import
with :mod:`grader.expected` missing (what the sandbox makes of it), and an
installed wheel must ship it and hide it.
"""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from grader.runtime import Runtime
from grader.sandbox import references
from tests import reports
from tests.sandboxed import needs_sandbox
from tests.test_faults import ROOT, as_json, attempts, course, states

HIDDEN = ROOT / "grader" / "expected"


def _hidden_modules() -> list[str]:
    """Every module of the grader's side, by name, found on disk (outside the sandbox)."""
    found = []
    for path in sorted(HIDDEN.rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        found.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return found


PROBE = r"""
import importlib, os
_report = {"imported": [], "read": [], "listed": [], "control": []}
for _name in __MODULES__:
    if _name == "grader.expected":
        continue  # an empty folder imports as a namespace package: its modules are the point
    try:
        importlib.import_module(_name)
        _report["imported"].append(_name)
    except Exception:
        pass
for _path in __FILES__:
    try:
        with open(_path, "rb") as _f:
            _report["read"].append([_path, len(_f.read())])
    except OSError:
        pass
try:
    _report["listed"] = os.listdir(__FOLDER__)
except OSError:
    pass
# the control: the student's side of the same lesson is importable and readable here
importlib.import_module("grader.lessons.l14_planning.spec")
with open(__CONTROL__, "rb") as _f:
    _report["control"].append(len(_f.read()))
""" + reports.emit("_report")  # on its stdout: its folder is read-only


def _workspace(home: Path, source: str) -> Path:
    ex = home / "exercises"
    ex.mkdir(parents=True)
    (ex / "l14_planning.py").write_text(source)
    return ex


@needs_sandbox
def test_the_grader_side_cannot_be_imported_or_read_from_the_students_process(tmp_path):
    modules, files = _hidden_modules(), sorted(str(p) for p in HIDDEN.rglob("*.py"))
    assert "grader.expected.l14_planning.cost" in modules and len(files) >= 10, files
    probe = (PROBE.replace("__MODULES__", repr(modules)).replace("__FILES__", repr(files))
             .replace("__FOLDER__", repr(str(HIDDEN)))
             .replace("__CONTROL__", repr(str(ROOT / "grader/lessons/l14_planning/spec.py"))))  # fmt: skip
    home = tmp_path / "home"
    _workspace(home, (ROOT / "solutions" / "l14_planning.py").read_text() + probe)
    r = course(home, "grade", "14", "--max-examples", "2", "--json", timeout=300)
    (lesson,) = as_json(r)["lessons"]
    assert lesson["sandbox"] == "on", lesson
    got = {e["exercise"]: e["status"] for e in lesson["exercises"]}
    assert set(got.values()) == {"passed"}, got  # the lesson still grades: the grader's side works
    seen = reports.read(r.stderr.decode(errors="replace"))
    assert seen["control"], seen  # the probe ran, and reads what it may
    assert seen["imported"] == [], seen["imported"]
    assert seen["read"] == [], seen["read"]
    assert seen["listed"] == [], seen["listed"]  # an empty folder: not even the names
    # outside, all of it is there
    assert all(Path(f).stat().st_size > 0 for f in files)


@needs_sandbox
def test_a_submission_returning_the_graders_formula_fails(tmp_path):
    cheat = (ROOT / "exercises" / "l14_planning.py").read_text() + (
        "\n\ndef param_count(m):\n"
        "    from grader.expected.l14_planning.cost import param_count as grader_formula\n\n"
        "    return grader_formula(m)\n"
    )
    home = tmp_path / "home"
    _workspace(home, cheat)
    r = course(home, "grade", "14.param_count", "--json", timeout=300)
    (lesson,) = as_json(r)["lessons"]
    assert lesson["sandbox"] == "on", lesson
    (ex,) = lesson["exercises"]
    assert ex["status"] == "error", ex
    assert "No module named 'grader.expected.l14_planning'" in ex["error"], ex["error"]
    assert all(s != "passed" for s in states(home).values()) and "passed" not in attempts(home)


def test_every_spec_imports_without_the_graders_side():
    """What the sandbox makes of ``grader.expected`` (an empty folder), in a process of
    its own: every lesson's spec (and what it imports) still imports, so none uses the
    grader's side at import time; a grader-side function called there is a grader fault."""
    code = r"""
import importlib.abc, sys
class Hidden(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.startswith("grader.expected."):
            raise ModuleNotFoundError(f"No module named {name!r}")
sys.meta_path.insert(0, Hidden())
import tomllib
from grader.spec import load_spec
from grader.faults import GraderFault
lessons = tomllib.loads(open("course/course.toml", "rb").read().decode())["lessons"]
for lesson in lessons:
    load_spec(f"l{lesson['number']:02d}_{lesson['slug']}")
from grader.lessons.l14_planning import spec
try:
    spec.cost.param_count
except GraderFault as exc:
    print("fault:", exc)
print("loaded", len(lessons))
"""
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                       timeout=300)  # fmt: skip
    assert r.returncode == 0, r.stderr[-3000:]
    assert "loaded 17" in r.stdout, r.stdout
    assert (
        "fault: grader.expected.l14_planning.cost is the grader's side and could not" in r.stdout
    ), r.stdout


def test_an_installed_wheel_ships_the_graders_side_and_hides_it(tmp_path):
    sys.path.insert(0, str(ROOT))
    try:
        import setup
    finally:
        sys.path.remove(str(ROOT))
    shipped = setup.packages(str(ROOT))
    want = {m for m in _hidden_modules() if (ROOT / m.replace(".", "/") / "__init__.py").exists()}
    assert want and want <= set(shipped), sorted(want - set(shipped))
    site = tmp_path / "site-packages"  # a wheel's layout: the course's code is site-packages
    assert str(site / "grader" / "expected") in references.folders(site)
    assert str(HIDDEN) in references.folders(ROOT)


REFERENCES = {
    "grader.reference.training": ("forward", "loss", "grads", "sgd_step"),
    "grader.lessons.l08_tensor_parallel.spec": ("mlp", "attention"),
    "grader.lessons.l10_context_parallel.attention": ("partial", "merge", "attention"),
    "grader.lessons.l11_expert_parallel.routing": ("route", "moe_layer", "expert"),
    "grader.lessons.l12_parallel_transformer.transformer": ("forward", "grads", "sgd_step"),
    "grader.lessons.l15_optimizer.reference": ("adamw", "clip", "loss_scaled", "fp8_round_trip"),
    "grader.lessons.l16_serving.model": ("hidden", "logits", "kv", "greedy", "decode"),
}
"""The float64 references the grader holds the JAX lessons' programs to (the
course model's step, Megatron's MLP and attention, attention, MoE routing, the transformer's step, AdamW, the
serving model), by the modules the specs reached them through: names a submission
could import from its own process before they moved to :mod:`grader.expected`."""

REFERENCE_PROBE = r"""
import importlib, inspect
_report = {"source": [], "called": [], "control": []}
for _module, _names in __REFERENCES__.items():
    try:
        _mod = importlib.import_module(_module)
    except Exception:
        continue
    for _name in _names:
        _fn = getattr(_mod, _name, None)
        if _fn is None:
            continue
        try:  # the reference's own code, reachable from here
            _src = inspect.getsource(_fn)
            if _src.lstrip().startswith(f"def {_name}("):
                _report["source"].append(f"{_module}.{_name}")
        except Exception:
            pass
for _module, _call in (
    ("grader.reference.training", lambda t: t.grads(
        {"w_in": __import__("numpy").ones((1, 2, 2), "float32"),
         "w_out": __import__("numpy").ones((1, 2, 2), "float32")},
        __import__("numpy").ones((2, 2), "float32"), __import__("numpy").zeros((2, 2), "float32"))),
    ("grader.lessons.l10_context_parallel.attention", lambda a: a.attention(
        *([__import__("numpy").ones((2, 1, 2))] * 3), True)),
):
    try:  # a submission returning the reference's answer
        _call(importlib.import_module(_module))
        _report["called"].append(_module)
    except Exception:
        pass
# the control: what the student's process may read (the inputs' drawing) is there
from grader.reference.training import draw_params, tolerance
_report["control"].append(draw_params.__name__)
""" + reports.emit("_report")


@needs_sandbox
def test_the_float64_references_cannot_be_reached_from_the_students_process(tmp_path):
    """A submission (lesson 14's solution, so that it passes) that imports each
    reference through the modules the specs import, reads its source and calls it
    on small inputs: none may be reachable. Before the references moved to
    :mod:`grader.expected` every one was, in source and by a call."""
    probe = REFERENCE_PROBE.replace("__REFERENCES__", repr(REFERENCES))
    home = tmp_path / "home"
    _workspace(home, (ROOT / "solutions" / "l14_planning.py").read_text() + probe)
    r = course(home, "grade", "14.param_count", "--max-examples", "1", "--json", timeout=300)
    (lesson,) = as_json(r)["lessons"]
    assert lesson["sandbox"] == "on", lesson
    seen = reports.read(r.stderr.decode(errors="replace"))
    assert seen["control"] == ["draw_params"], seen
    assert seen["source"] == [], seen["source"]
    assert seen["called"] == [], seen["called"]
    # outside the sandbox the same names still serve the grader (in the worker)
    import importlib

    for module, names in REFERENCES.items():
        mod = importlib.import_module(module)
        assert all(callable(getattr(mod, n, None)) for n in names), module


RUNS_WITHOUT = r"""
import ast, importlib.abc, json, sys
from pathlib import Path
class Hidden(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.startswith("grader.expected."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
sys.meta_path.insert(0, Hidden())
from grader.measure import devices
devices.configure(8)
import jax, numpy as np
from grader.loader import load_module
from grader.runtime import Runtime
from grader.sandbox.student import decoys
from grader.spec import Trial, load_spec

class Tracing(Runtime):
    # the student's process's runtime without the export: each program traced, decoys back
    programs = 0
    def student_program(self, program, args, mesh, compiler_options, extra):
        jitted = program if hasattr(program, "lower") else jax.jit(program)
        shapes = jax.eval_shape(jitted, *args)
        self.programs += 1
        rng = np.random.default_rng(self.programs)
        return Trial(self.example, output=decoys(shapes, args, mesh, rng), mesh=mesh,
                     extra=extra, salt=self.salt)

out = {}
examples = ast.literal_eval(sys.stdin.read())  # drawn by the worker, handed to this process
for module, exercises in examples.items():
    spec = load_spec(module)
    solution = load_module(Path("solutions"), module)
    for name, example in exercises.items():
        ex_spec = spec.exercise(name)
        rt = Tracing(example, salt=7)
        try:
            ex_spec.run(rt, getattr(solution, ex_spec.name), example)
            raised = None
        except Exception as exc:
            raised = f"{type(exc).__name__}: {str(exc)[:300]}"
        out[f"{module}.{ex_spec.name}"] = [rt.programs, raised]
print(json.dumps(out))
"""


class _NoProgram(Exception):
    pass


class _Classify(Runtime):
    """Whether ``run`` hands the student's process a program (it stops at the first)."""

    def student_program(self, program, args, mesh, compiler_options, extra):
        raise _NoProgram()


def test_every_run_that_hands_over_programs_runs_without_the_graders_side():
    """The ``run`` of an exercise that hands over programs runs in the student's process
    too, where :mod:`grader.expected` is hidden: with it hidden, each such run (every
    lesson's solution, its first explicit example, programs traced on decoys as there)
    completes, computing no reference (its expected value is deferred: grader.later.later).
    A run that computed its float64 reference there raised a grader fault before its
    next program; one that fed a program a reference's output (lesson 16's decode step,
    the greedy tokens and the prompt's cache) could not build its inputs. The runs that
    fail there must be those that hand over no program at all (the worker runs them)."""
    import json

    from grader.loader import load_module
    from grader.spec import FULL, load_spec

    examples: dict[str, dict[str, dict]] = {}
    for lesson in tomllib.loads((ROOT / "course" / "course.toml").read_text())["lessons"]:
        module = f"l{lesson['number']:02d}_{lesson['slug']}"
        for ex_spec in load_spec(module).exercises:
            if ex_spec.cluster is None:  # lesson 13's run runs in the worker; its processes, tasks
                examples.setdefault(module, {})[ex_spec.name] = ex_spec.explicit(FULL)[0]
    r = subprocess.run([sys.executable, "-c", RUNS_WITHOUT], cwd=ROOT, capture_output=True,
                       text=True, timeout=600, input=repr(examples))  # fmt: skip
    assert r.returncode == 0, r.stderr[-3000:]
    seen = json.loads(r.stdout.strip().splitlines()[-1])
    failed = {name: raised for name, (_, raised) in seen.items() if raised}
    handed = [name for name, (programs, _) in seen.items() if programs]
    assert len(handed) >= 30, handed  # the JAX lessons' exercises are all there
    for name, raised in failed.items():
        module, _, exercise = name.rpartition(".")
        ex_spec = load_spec(module).exercise(exercise)
        solution = load_module(ROOT / "solutions", module)
        example = examples[module][exercise]
        try:  # here, where the grader's side is there, it stops at its first program
            ex_spec.run(_Classify(example), getattr(solution, exercise), example)
        except _NoProgram:
            pytest.fail(f"{name} hands over a program, and its run failed without the "
                        f"grader's side: {raised}")  # fmt: skip
