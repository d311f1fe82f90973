"""What ``course … --help`` says (issue 48.3): every file it names can be found from an
installed wheel, --version's help names what it prints, and classroom's --seed speaks
of a class."""

from __future__ import annotations

import re

import click
import pytest
from click.testing import CliRunner

from course import versions
from course.cli import cli


def _help(*args: str) -> str:
    r = CliRunner().invoke(cli, [*args, "--help"], terminal_width=100)
    assert r.exit_code == 0, r.output
    return " ".join(r.output.split())


def _commands(group: click.Group = cli, path: tuple[str, ...] = ()):
    for name, command in group.commands.items():
        yield (*path, name)
        if isinstance(command, click.Group):
            yield from _commands(command, (*path, name))


def test_every_doc_a_help_names_is_said_to_be_in_the_source_repository():
    """An installed wheel holds no docs/: a help that names docs/X.md says where it is."""
    named = 0
    for command in [(), *_commands()]:
        said = _help(*command)
        for m in re.finditer(r"docs/[\w.-]+", said):
            named += 1
            after = said[m.end() : m.end() + 40]
            assert "course's source repository" in after, (command, said[m.start() - 40 :])
    assert named >= 4  # list, status, grade --json; classroom, autograder


@pytest.mark.parametrize("command", [("list",), ("status",), ("grade",)])
def test_the_json_option_says_what_it_prints_and_where_its_fields_are(command):
    assert (
        "--json Print JSON instead, version 1: its fields are described in docs/grade-json.md "
        "of the course's source repository" in _help(*command)
    )


def test_version_help_names_every_version_it_prints():
    said = _help().lower()
    printed = [name for name in versions.versions() if name != versions.DISTRIBUTION]
    assert printed == ["python", "jax", "jaxlib", "hypothesis", "numpy"]
    line = said[said.index("--version") : said.index("--home")]
    assert all(name in line for name in printed), line


def test_classrooms_seed_is_the_class_seed_and_grades_seed_the_students():
    classroom, grade = _help("classroom"), _help("grade")
    assert "not recorded" not in classroom and "shown, not" not in classroom
    assert (
        "one for the whole class: the same seed draws the same examples for every "
        "submission" in classroom
    )
    assert "passes on a seed you chose are shown, not recorded" in grade
