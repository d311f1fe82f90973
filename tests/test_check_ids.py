"""Check ids (``grader.spec.Check.id``): one id, one check, across the whole course."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from course import registry
from grader.engine import load_spec
from grader.spec import Check, ExerciseSpec


def every_exercise() -> Iterator[tuple[int, ExerciseSpec]]:
    for lesson in registry.load().lessons:
        for spec in load_spec(lesson.module).exercises:
            yield lesson.number, spec


def unwrapped(check: Check) -> Check:
    """The check a wrapper (``inner``: a hint added, applied leaf by leaf) stands for."""
    while isinstance(getattr(check, "inner", None), Check):
        check = check.inner  # type: ignore[attr-defined]
    return check


def shared_ids(checks: Iterable[Check]) -> dict[str, set[tuple[type, str]]]:
    """Ids that name more than one check (a class and a name)."""
    named: dict[str, set[tuple[type, str]]] = defaultdict(set)
    for check in checks:
        named[check.id].add((type(unwrapped(check)), check.name))
    return {i: kinds for i, kinds in named.items() if len(kinds) > 1}


def test_no_two_different_checks_of_the_course_share_an_id():
    checks = [check for _, spec in every_exercise() for check in spec.checks]
    assert len(checks) > 100  # every lesson's spec was read
    assert shared_ids(checks) == {}


def test_no_exercise_holds_one_id_twice():
    for lesson, spec in every_exercise():
        twice = [i for i, n in Counter(c.id for c in spec.checks).items() if n > 1]
        assert twice == [], f"{lesson}.{spec.name}"


def test_the_names_that_collide_have_ids_that_do_not():
    """The architecture issue's measurements: ``steps`` names two checks, and two
    classes are called ``WeightsStay``."""
    checks = [check for _, spec in every_exercise() for check in spec.checks]
    steps = {c.id: type(unwrapped(c)).__name__ for c in checks if c.name == "steps"}
    assert sorted(steps.values()) == ["Count", "RotationSteps"]
    stay = {c.id for c in checks if type(unwrapped(c)).__name__ == "WeightsStay"}
    assert len(stay) == 2


def test_a_wrapper_has_the_id_of_what_it_wraps_and_an_explicit_id_is_held_too():
    @dataclass(frozen=True)
    class Sends(Check):
        name: str = "bytes"

    @dataclass(frozen=True)
    class Hinted(Check):
        inner: Check = Sends()

        @property
        def name(self) -> str:  # type: ignore[override]
            return self.inner.name

    class Fixed(Check):
        id = Sends().id  # a class that fixes its id, and picks one that is taken

    assert Hinted().id == Sends().id and Sends().id.endswith("Sends:bytes")
    assert Sends(name="all-gather bytes").id != Sends().id
    assert shared_ids([Sends(), Hinted()]) == {}
    assert list(shared_ids([Sends(), Fixed()])) == [Sends().id]
