"""course/registry.py: course.toml → frozen dataclasses."""

from __future__ import annotations

import dataclasses
import tomllib
from pathlib import Path

import pytest

from course import registry
from course.registry import Course, Exercise, Lesson, RegistryError


def test_real_course_loads_in_order() -> None:
    course = registry.load()
    assert isinstance(course, Course)
    assert len(course.lessons) >= 2
    numbers = [lesson.number for lesson in course.lessons]
    assert numbers[0] == 1 and len(numbers) == len(set(numbers))  # unique; the file's order
    raw = tomllib.loads(registry.REGISTRY.read_text())
    assert raw["format_version"] == registry.FORMAT_VERSION
    assert [lesson.slug for lesson in course.lessons] == [e["slug"] for e in raw["lessons"]]
    for lesson in course.lessons:
        assert lesson.title
        assert lesson.exercises, f"lesson {lesson.number} has no exercises"
        names = [e.name for e in lesson.exercises]
        assert len(names) == len(set(names)), f"lesson {lesson.number} repeats an exercise"
        assert all(e.points >= 1 for e in lesson.exercises)


def test_every_real_exercise_declares_its_own_hints() -> None:
    """Each exercise has hints of its own, under its entry; the lesson's list holds only
    general ones (none opens with an exercise's name), and `course hint N` gives those first."""
    for lesson in registry.load().lessons:
        for e in lesson.exercises:
            assert e.hints, f"{lesson.number}.{e.name} has no hint"
            assert all(isinstance(h, str) and h.strip() for h in e.hints)
        others = {e.name for e in lesson.exercises}
        for h in lesson.general_hints:  # a general hint opens with no exercise's name
            assert h.split(":")[0].split()[0] not in others, (lesson.number, h)
        assert lesson.hints[: len(lesson.general_hints)] == lesson.general_hints


def test_real_course_first_lessons() -> None:
    course = registry.load()
    l1, l2 = course.lesson(1), course.lesson(2)
    assert (l1.slug, l2.slug) == ("meshes", "collectives")
    assert l1.module == "l01_meshes"
    assert l1.text_name == "01_meshes.md"
    assert l2.module == "l02_collectives"
    assert l2.text_name == "02_collectives.md"
    assert [e.name for e in l2.exercises][:3] == [
        "ring_all_gather",
        "ring_reduce_scatter",
        "ring_all_reduce",
    ]
    assert l2.points == sum(e.points for e in l2.exercises)


def test_load_is_cached() -> None:
    assert registry.load() is registry.load()


TOML = """
format_version = 2

[[lessons]]
number = 1
slug = "first"
title = "The first lesson"
summary = "One line."
hints = ["hint one", "hint two"]

[[lessons.exercises]]
name = "alpha"
points = 2
summary = "Does alpha."
hints = ["alpha: start here.", "alpha: then this."]

[[lessons.exercises]]
name = "beta"

[[lessons]]
number = 2
slug = "second_part"
title = "The second lesson"

[[lessons.exercises]]
name = "gamma"
points = 3
"""


def write(tmp_path: Path, text: str, name: str = "course.toml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_load_from_file(tmp_path: Path) -> None:
    course = registry.load(write(tmp_path, TOML))
    first, second = course.lessons
    assert first == Lesson(
        number=1,
        slug="first",
        title="The first lesson",
        summary="One line.",
        general_hints=("hint one", "hint two"),
        exercises=(
            Exercise("alpha", 2, "Does alpha.", hints=("alpha: start here.", "alpha: then this.")),
            Exercise("beta", 1, ""),
        ),
    )
    assert first.points == 3
    # course hint N: the general hints, then each exercise's own in the exercises' order
    assert first.hints == ("hint one", "hint two", "alpha: start here.", "alpha: then this.")
    assert first.exercise("beta").hints == ()
    assert second.summary == ""
    assert second.hints == () and second.general_hints == ()
    assert second.points == 3
    assert second.module == "l02_second_part"
    assert second.text_name == "02_second_part.md"


def test_lessons_are_frozen(tmp_path: Path) -> None:
    lesson = registry.load(write(tmp_path, TOML)).lesson(1)
    with pytest.raises(dataclasses.FrozenInstanceError):
        lesson.title = "changed"  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        lesson.exercises[0].points = 10  # type: ignore[misc]


def test_module_name_pads_two_digits() -> None:
    lesson = Lesson(12, "capstone", "Capstone", "", (), ())
    assert lesson.module == "l12_capstone"
    assert lesson.text_name == "12_capstone.md"
    assert lesson.points == 0


def test_exercise_lookup(tmp_path: Path) -> None:
    lesson = registry.load(write(tmp_path, TOML)).lesson(1)
    assert lesson.exercise("beta") == Exercise("beta", 1, "")
    assert lesson.exercise("alpha").points == 2
    with pytest.raises(KeyError):
        lesson.exercise("gamma")  # belongs to lesson 2


def test_missing_lesson_number(tmp_path: Path) -> None:
    course = registry.load(write(tmp_path, TOML))
    assert course.lesson(2).title == "The second lesson"
    with pytest.raises(KeyError) as info:
        course.lesson(3)
    assert "no lesson 3" in str(info.value)
    assert "1, 2" in str(info.value)
    with pytest.raises(KeyError):
        course.lesson(0)


def test_the_files_order_is_the_courses_order(tmp_path: Path) -> None:
    """Numbers need not increase: a lesson added later (15) may sit between older ones."""
    swapped = TOML.replace("number = 1", "number = @").replace("number = 2", "number = 1")
    swapped = swapped.replace("number = @", "number = 15")
    course = registry.load(write(tmp_path, swapped, "swapped.toml"))
    assert [lesson.number for lesson in course.lessons] == [15, 1]
    assert [lesson.slug for lesson in course.lessons] == ["first", "second_part"]
    assert course.lesson(15).module == "l15_first"


def test_a_gap_in_numbers_is_a_lesson_to_come(tmp_path: Path) -> None:
    course = registry.load(write(tmp_path, TOML.replace("number = 2", "number = 3"), "gap.toml"))
    assert [lesson.number for lesson in course.lessons] == [1, 3]
    assert course.lesson(3).module == "l03_second_part"
    with pytest.raises(KeyError, match=r"no lesson 2 \(lessons: 1, 3\)"):
        course.lesson(2)


def test_repeated_numbers(tmp_path: Path) -> None:
    path = write(tmp_path, TOML.replace("number = 2", "number = 1"), "twice.toml")
    with pytest.raises(RegistryError, match=r"lesson #2 is numbered 1, as lesson #1 \(first\) is"):
        registry.load(path)


def test_repeated_exercise_names(tmp_path: Path) -> None:
    path = write(tmp_path, TOML.replace('name = "beta"', 'name = "alpha"'), "names.toml")
    with pytest.raises(RegistryError, match="lesson #1 lists alpha twice"):
        registry.load(path)


@pytest.mark.parametrize(
    ("edit", "said"),
    [
        (lambda t: t.replace("format_version = 2\n", ""), "has no format_version"),
        (lambda t: t.replace("format_version = 2", "format_version = 1"), "is format_version 1"),
        (
            lambda t: t.replace("format_version = 2", 'format_version = "2"'),
            "is format_version '2'",
        ),
    ],
    ids=["missing", "older", "a string"],
)
def test_the_format_version_is_required(tmp_path: Path, edit, said: str) -> None:
    path = write(tmp_path, edit(TOML), "version.toml")
    with pytest.raises(RegistryError, match=f"{said}; this course reads format_version = 2"):
        registry.load(path)


@pytest.mark.parametrize(
    ("edit", "said"),
    [
        (
            lambda t: t.replace(
                'hints = ["alpha: start here.", "alpha: then this."]',
                'hints = "alpha: start here."',
            ),
            "exercise 'alpha': 'hints' must be",
        ),
        (lambda t: t.replace('"alpha: then this."', '""'), "exercise 'alpha': 'hints' must be"),
        (lambda t: t.replace('hints = ["hint one", "hint two"]', "hints = [1]"), "'hints' must be"),
    ],
    ids=["a string, not a list", "an empty hint", "not strings"],
)
def test_malformed_hints(tmp_path: Path, edit, said: str) -> None:
    """A bare string would be read as one hint per character: refused, as is an empty hint."""
    path = write(tmp_path, edit(TOML), "hints.toml")
    with pytest.raises(RegistryError, match=f"lesson #1 is malformed: {said}"):
        registry.load(path)


def test_a_hint_declared_twice_is_given_once() -> None:
    twice = Exercise("b", 1, "", hints=("shared.",))
    lesson = Lesson(1, "x", "X", "", ("shared.", "general."), (Exercise("a", 1, "", hints=("a.", "shared.")), twice))  # fmt: skip
    assert lesson.hints == ("shared.", "general.", "a.")


def test_lesson_missing_title(tmp_path: Path) -> None:
    path = write(tmp_path, TOML.replace('title = "The second lesson"\n', ""), "untitled.toml")
    with pytest.raises(RegistryError) as info:
        registry.load(path)
    assert "lesson #2 lacks 'title'" in str(info.value)


def test_exercise_missing_name(tmp_path: Path) -> None:
    path = write(tmp_path, TOML.replace('name = "gamma"\n', ""), "nameless.toml")
    with pytest.raises(RegistryError, match="lesson #2 lacks 'name'"):
        registry.load(path)


def test_unreadable_files(tmp_path: Path) -> None:
    with pytest.raises(RegistryError, match="cannot read"):
        registry.load(tmp_path / "absent.toml")
    bad = write(tmp_path, "[[lessons]\nnumber = ", "broken.toml")
    with pytest.raises(RegistryError, match="cannot read"):
        registry.load(bad)


def test_uncached_load_sees_edits(tmp_path: Path) -> None:
    path = write(tmp_path, TOML, "edited.toml")
    assert len(registry.load.__wrapped__(path).lessons) == 2
    path.write_text(TOML.split("[[lessons]]\nnumber = 2")[0])
    assert len(registry.load.__wrapped__(path).lessons) == 1


def test_non_integer_points(tmp_path: Path) -> None:
    path = write(tmp_path, TOML.replace("points = 2", 'points = "two"'), "points.toml")
    with pytest.raises(RegistryError, match="lesson #1"):
        registry.load(path)


# ------------------------------------------------------------ the pass rule


def _lesson() -> registry.Lesson:
    exercises = (
        registry.Exercise("a", 2, ""),
        registry.Exercise("b", 3, ""),
        registry.Exercise("extra", 1, "", bonus=True),
    )
    return registry.Lesson(1, "x", "X", "", (), exercises)


def test_a_lesson_passes_when_every_required_exercise_passes() -> None:
    card = _lesson().scorecard({"a": "passed", "b": "passed"})
    assert card.passed and (card.score, card.possible, card.bonus_score) == (5, 5, 0)
    assert not _lesson().scorecard({"a": "passed", "b": "failed", "extra": "passed"}).passed


def test_bonus_points_come_on_top_and_are_not_needed() -> None:
    card = _lesson().scorecard({"a": "passed", "b": "passed", "extra": "passed"})
    assert card.passed and (card.score, card.possible, card.bonus_score) == (5, 5, 1)
    assert card.exercises["extra"].bonus and card.exercises["extra"].score == 1


def test_only_a_passed_status_scores() -> None:
    for status in ("failed", "not started", "error", "timeout", None):
        s = _lesson().exercise("b").scored(status)
        assert not s.passed and s.score == 0 and s.points == 3


def test_an_exercise_without_a_status_has_not_passed() -> None:
    card = _lesson().scorecard({"a": "passed"})
    assert not card.passed and card.score == 2 and card.possible == 5


def test_a_run_is_scored_on_the_exercises_it_graded() -> None:
    card = _lesson().scorecard({"a": "passed"}, graded=["a"])
    assert card.passed and (card.score, card.possible) == (2, 2)
    assert set(card.exercises) == {"a"}
    assert not _lesson().scorecard({"extra": "passed"}, graded=["extra"]).passed  # no required one


# ------------------------------------------------------------------ the lesson texts

TEXTS = Path(registry.__file__).parent / "lessons"


def _exercise_section(text: str) -> str:
    """The text's last "Exercises" / "Your turn" section (else the whole text: lesson 12
    names its exercises in its introduction)."""
    import re

    heads = [m for m in re.finditer(r"^## .*$", text, re.M) if re.search(r"Exercises|Your turn", m.group(0))]  # fmt: skip
    return text[heads[-1].start() :] if heads else text


@pytest.mark.parametrize("lesson", registry.load().lessons, ids=lambda lesson: lesson.text_name)
def test_each_text_is_titled_and_lists_its_exercises_as_the_registry(lesson: Lesson) -> None:
    """One title form for every lesson ("# Lesson N — <the registry's title>"), and the
    exercises named in the text's exercise section in the registry's order (the order
    `course list` and `course grade` use)."""
    text = (TEXTS / lesson.text_name).read_text()
    assert text.splitlines()[0] == f"# Lesson {lesson.number} — {lesson.title}"
    section = _exercise_section(text)
    names = [e.name for e in lesson.exercises]
    import re

    # a whole name: lesson 16's `prefill` is not the start of `prefill_time`
    at = {n: (m.start() if (m := re.search(rf"`{n}\b", section)) else -1) for n in names}
    assert all(i >= 0 for i in at.values()), [n for n, i in at.items() if i < 0]
    assert sorted(names, key=at.__getitem__) == names


def test_the_order_check_tells_a_reordered_list() -> None:
    """Lesson 1's text as it was (bytes_per_device listed before place) fails the check."""
    lesson = registry.load().lesson(1)
    text = (TEXTS / lesson.text_name).read_text()
    place = text[text.index("3. `place(") : text.index("4. `bytes_per_device(")]
    old = text.replace(place, "").replace("device holds.\n", "device holds.\n" + place, 1)
    assert old.index("`bytes_per_device(") < old.index("`place(")
    section = _exercise_section(old)
    names = [e.name for e in lesson.exercises]
    assert sorted(names, key=lambda n: section.find(f"`{n}")) != names
