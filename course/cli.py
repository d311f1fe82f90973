"""The ``course`` command: declarations only; each command lives in course/commands/."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from grader.sandbox import spares

# The worker `course grade` starts while the rest is imported (the command line's
# edge), handed to the command's App (`python -m course` hands its own to main()).
if __name__ == "__main__" or sys.argv[0].endswith("course"):  # run as the command
    EARLY = spares.early(sys.argv)
else:
    EARLY = None

import click

from course.commands.common import App, make_app
from course.limits import DEFAULT_TIMEOUT, EXAMPLES, TIMEOUT, devices_option, nonempty_example
from course.paths import cache_switch
from course.progress import ProgressError
from grader import repo
from grader.config import Sandbox

pass_app = click.make_pass_decorator(App)


class CourseGroup(click.Group):
    """Usage errors in one line (``Error: …``, exit status 2), without the usage
    text and help hint click puts before them."""

    def main(self, *args, **kwargs):
        try:
            return super().main(*args, standalone_mode=False, **kwargs)
        except click.exceptions.NoArgsIsHelpError as exc:  # `course` alone: its help
            exc.show()
            sys.exit(exc.exit_code)
        except click.UsageError as exc:
            exc.ctx = None
            exc.show()
            sys.exit(exc.exit_code)
        except click.ClickException as exc:
            exc.show()
            sys.exit(exc.exit_code)
        except ProgressError as exc:  # a write that failed midway (a full disk): one message
            click.echo(f"Error: {exc}", err=True)
            sys.exit(1)
        except click.Abort:
            click.echo("Aborted!", err=True)
            sys.exit(1)


def _print_version(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    if value and not ctx.resilient_parsing:
        from course.versions import describe

        click.echo(describe())
        ctx.exit()


@click.group(
    cls=CourseGroup,
    context_settings={"help_option_names": ["-h", "--help"]},
    invoke_without_command=True,
)
@click.option(
    "--version",
    is_flag=True,
    expose_value=False,
    is_eager=True,
    callback=_print_version,
    help="The course's version and the versions of Python, JAX, jaxlib, hypothesis and numpy "
    "it grades with (a result is reproduced on the same ones).",
)
@click.option(
    "--home",
    envvar="COURSE_HOME",
    type=click.Path(file_okay=False),
    help="Your workspace (default: the course init folder you are in, else workspace/ in a clone).",
)
@click.option(
    "--db",
    envvar="COURSE_DB",
    type=click.Path(dir_okay=False),
    help="Progress database (default: HOME/progress.db).",
)
@click.pass_context
def cli(ctx: click.Context, home: str | None, db: str | None) -> None:
    """scaling-course: learn to train large models across many accelerators, with JAX.

    The daily loop: course show N → edit your exercise file → course grade N
    (or course watch) → course hint N when stuck. Without a command: your
    status, then this help.
    """
    early = ctx.obj if isinstance(ctx.obj, spares.Early) else None  # main()'s
    debug = os.environ.get("COURSE_DEBUG") == "1"  # the command line's edge
    sandbox = Sandbox.from_environment(os.environ)
    caching = cache_switch(os.environ.get("COURSE_COMPILE_CACHE"))
    course_root = repo.root(os.environ.get("COURSE_ROOT"))
    ctx.obj = make_app(home, db, early, debug, course_root, sandbox, caching)
    if ctx.invoked_subcommand is None:
        from course.commands.status import status as run

        try:
            run(ctx.obj)
        except click.ClickException as exc:  # no workspace yet: say so, then the help
            click.echo(exc.format_message())
        click.echo("\n" + ctx.get_help())


@cli.command()
@click.argument("directory", default=".", type=click.Path(file_okay=False))
@pass_app
def init(app: App, directory: str) -> None:
    """Make DIRECTORY (default: this folder) your workspace: your exercise files and
    progress go there, and course commands run inside it use it."""
    from course.commands.init import init as run

    sys.exit(run(app, directory))


JSON_OPTION = click.option(
    "--json", "as_json", is_flag=True,
    help="Print JSON instead, version 1: its fields are described in docs/grade-json.md of the "
    "course's source repository (an installed wheel does not hold it).",
)  # fmt: skip


@cli.command("list")
@JSON_OPTION
@pass_app
def list_cmd(app: App, as_json: bool) -> None:
    """Lessons and exercises, with your status."""
    from course.commands.status import list_lessons

    sys.exit(list_lessons(app, as_json))


@cli.command()
@JSON_OPTION
@pass_app
def status(app: App, as_json: bool) -> None:
    """Your progress and what to do next."""
    from course.commands.status import status as run

    sys.exit(run(app, as_json))


@cli.command()
@click.argument("lesson", type=int, required=False)
@pass_app
def show(app: App, lesson: int | None) -> None:
    """Read lesson LESSON (default: the current one)."""
    from course.commands.show import show as run

    sys.exit(run(app, lesson))


GRADE_OPTIONS = [
    click.option(
        "--seed",
        type=click.IntRange(0),
        default=None,
        help="Seed for the drawn examples (default: a fresh one each grade, which the report "
        "names; passes on a seed you chose are shown, not recorded).",
    ),
    click.option(
        "--timeout",
        type=click.FloatRange(*TIMEOUT),
        default=DEFAULT_TIMEOUT,
        show_default=True,
        help="Seconds one example may run.",
    ),
    click.option(
        "--devices",
        type=int,
        envvar="COURSE_DEVICES",
        callback=devices_option,
        help="Simulated CPU devices, 1–64 (default 8; fewer: the run does not count).",
    ),
    click.option(
        "--cpu", is_flag=True, help="Simulate devices on the CPU even where accelerators exist."
    ),
]
MAX_EXAMPLES = click.option(
    "--max-examples",
    type=click.IntRange(*EXAMPLES),
    help="Drawn examples per exercise, at most 100 (beyond the fixed ones; fewer than the "
    "lesson's: the run does not count).",
)


CLASS_SEED = click.option(
    "--seed",
    type=click.IntRange(0),
    default=None,
    help="Seed for the drawn examples, one for the whole class: the same seed draws the same "
    "examples for every submission (default: a fresh one, said on the first line and in "
    "each results.json; give it again to grade a late submission on the same examples).",
)
"""``classroom``'s --seed: a teacher's run records no one's progress, so the student's
"not recorded" would mean nothing there."""


def run_options(f, seed: Any = None):
    """The options of every command that grades: seed, time limit, devices."""
    options = GRADE_OPTIONS if seed is None else [seed, *GRADE_OPTIONS[1:]]
    for option in reversed(options):
        f = option(f)
    return f


def class_options(f):
    """``classroom``'s: those of every command that grades, with its own --seed."""
    return run_options(f, CLASS_SEED)


def grade_options(f):
    return run_options(MAX_EXAMPLES(f))


@cli.command()
@click.argument("target", required=False)
@click.option("--all", "all_lessons", is_flag=True, help="Grade every lesson.")
@click.option(
    "--solutions", is_flag=True, help="Grade the reference solutions instead of your code."
)
@click.option(
    "--path",
    type=click.Path(exists=True, file_okay=False),
    help="Grade the modules in this directory.",
)
@click.option(
    "--example",
    callback=nonempty_example,
    help="Re-run one example, as printed by a failure (needs N.exercise); its input values are drawn afresh.",
)
@JSON_OPTION
@grade_options
@pass_app
def grade(app: App, target: str | None, **options) -> None:
    """Grade TARGET: a lesson N, one exercise N.name, or the current lesson.

    Exit status 0 when every required exercise graded passes (a bonus that fails
    is named in the summary, "bonus NAME failed", and leaves the status 0;
    grading only a bonus, N.name, its own result counts), 1 otherwise; 2 for a
    usage error, 3 when the grader itself failed, 128 + the signal when stopped.
    """
    from course.commands.grade import grade as run

    sys.exit(run(app, target, **options))


@cli.command()
@click.argument("lesson", type=int, required=False)
@grade_options
@pass_app
def watch(app: App, lesson: int | None, **options) -> None:
    """Re-grade LESSON (default: the current one) each time you save its file."""
    from course.commands.watch import watch as run

    sys.exit(run(app, lesson, **options))


@cli.command()
@click.argument("lesson", type=int, required=False)
@pass_app
def hint(app: App, lesson: int | None) -> None:
    """The next hint for LESSON (default: the current one); after the last, the first again."""
    from course.commands.show import hint as run

    sys.exit(run(app, lesson))


@cli.command()
@click.argument("lesson", type=int)
@click.option("--yes", "-y", is_flag=True, help="Do not ask first.")
@pass_app
def reset(app: App, lesson: int, yes: bool) -> None:
    """Restore LESSON's exercise file to the original stub (your code is kept as a numbered .bak)."""
    from course.commands.show import reset as run

    sys.exit(run(app, lesson, yes))


@cli.command()
@click.argument("lesson", type=int, required=False)
@click.option("--force", is_flag=True, help="Show it even though the lesson does not pass yet.")
@pass_app
def solution(app: App, lesson: int | None, force: bool) -> None:
    """The reference solution of LESSON (default: the current one), once it passes."""
    from course.commands.show import solution as run

    sys.exit(run(app, lesson, force))


@cli.command()
@click.argument("submissions", type=click.Path(exists=True, file_okay=False))
@click.option(
    "--out", "-o", required=True, type=click.Path(file_okay=False),
    help="Results folder: summary.csv, and per submission results.json (Gradescope) and junit.xml.",
)  # fmt: skip
@click.option(
    "--lesson", "lessons", type=int, multiple=True,
    help="Grade this lesson (repeat for several; default: every lesson).",
)  # fmt: skip
@click.option(
    "--require-sandbox", is_flag=True,
    help="Refuse to grade where the submissions' code cannot run in the OS sandbox.",
)  # fmt: skip
@click.option(
    "--jobs", "-j", type=click.IntRange(1, 256),
    help="Submissions graded at once (default: about half the cores).",
)  # fmt: skip
@class_options
@pass_app
def classroom(app: App, submissions: str, out: str, **options) -> None:
    """Grade a class: every sub-folder of SUBMISSIONS is one student's exercise files.

    Each is graded in its own worker with the full example set, drawn from one
    fresh seed for the class (said on the first line; --seed to choose); a
    submission that crashes or hangs costs its own result only. Your own
    progress is not touched. A folder that holds lesson files itself is one
    submission (as on Gradescope; see docs/classroom.md in the course's source
    repository). Where no sandbox can
    be made it grades only from an installation without the reference
    solutions (course autograder builds one).
    """
    from course.commands.classroom import classroom as run

    sys.exit(run(app, submissions, out, **options))


@cli.command()
@click.argument("out", type=click.Path(dir_okay=False))
@click.option(
    "--lesson", "lessons", type=int, multiple=True,
    help="Grade this lesson (repeat for several; default: every lesson).",
)  # fmt: skip
@click.option(
    "--timeout", type=click.FloatRange(*TIMEOUT), default=DEFAULT_TIMEOUT, show_default=True,
    help="Seconds one example may run.",
)  # fmt: skip
@click.option(
    "--devices", type=int, callback=devices_option,
    help="Simulated CPU devices, 1–64 (default 8).",
)  # fmt: skip
@pass_app
def autograder(app: App, out: str, **options) -> None:
    """Write OUT (a .zip): a Gradescope autograder for these lessons.

    It holds setup.sh (installs Python 3.11 where the image has an older one, and
    the course), run_autograder (grades one submission in any layout and always
    writes results.json) and a wheel of the course without its reference
    solutions. See docs/classroom.md in the course's source repository.
    """
    from course.commands.autograder import autograder as run

    sys.exit(run(app, out, **options))


@cli.group()
def dev() -> None:
    """Commands for the course's developers."""


_ROOT = click.option(
    "--root",
    type=click.Path(file_okay=False, exists=True, resolve_path=True, path_type=Path),
    help="The repository to work on (default: this one, or COURSE_ROOT).",
)


def _lessons_option(
    ctx: click.Context, param: click.Parameter, value: str | None
) -> tuple[int, ...] | None:
    """``all`` (None: every lesson) or lesson numbers, ``3,14``."""
    if value is None or value == "all":
        return None if value else ()
    try:
        return tuple(int(n) for n in value.split(","))
    except ValueError:
        raise click.BadParameter(f"'all' or lesson numbers such as 3,14, not {value!r}") from None


@dev.command("check")
@click.option("--static", is_flag=True, help="Only the file checks; grade no solution or stub.")
@click.option(
    "--mistakes", "mistakes", metavar="all|N[,N…]", callback=_lessons_option,
    help="Grade these lessons' catalogued mistakes too, each once: each must fail as its "
    "entry in tests/mistakes/lNN.py says (about 10 s for lesson 1, 4 min for all).",
)  # fmt: skip
@click.option(
    "--lessons", "graded", metavar="all|N[,N…]", default="all", callback=_lessons_option,
    help="Grade only these lessons' solutions and stubs (default all); the file checks "
    "are always the whole course's.",
)  # fmt: skip
@_ROOT
@click.pass_context
def dev_check(
    ctx: click.Context, static: bool, mistakes: tuple[int, ...] | None,
    graded: tuple[int, ...] | None, root: Path | None,
) -> None:  # fmt: skip
    """Check the registry, files, solutions and stubs.

    The registry matches the files; stubs match solutions; every exercise has a hint and
    every catalogue of mistakes names it; no lesson imports the sandbox; no spec computes
    a reference inline in a run that hands over programs; solutions pass; stubs are not
    started (not with --static); with --mistakes, each catalogued mistake fails as its
    entry says."""
    from course.commands.dev import check

    sys.exit(check(ctx.find_object(App), grade_code=not static, root=root, mistakes=mistakes,
                   graded=graded))  # fmt: skip


@dev.command("new")
@click.argument("number", type=int)
@click.argument("slug")
@click.option("--title", help="The lesson's title (else a TODO to fill in).")
@click.option(
    "--exercise", "exercises", multiple=True, help="An exercise's function name (repeatable)."
)
@click.option("--after", type=int, help="Place it after this lesson in course.toml (else last).")
@_ROOT
@click.pass_context
def dev_new(
    ctx: click.Context,
    number: int,
    slug: str,
    title: str | None,
    exercises: tuple[str, ...],
    after: int | None,
    root: Path | None,
) -> None:
    """Write a new lesson's skeletons.

    Lesson NUMBER's grading folder, stub, solution, text, catalogue of mistakes and
    course.toml entry, each TODO(course dev new) to fill in; then `course dev check`
    names what is left. Refuses a number, slug or file that exists."""
    from course.commands.dev import new

    sys.exit(new(ctx.find_object(App), number, slug, title, exercises, after, root))


@dev.command("notebooks")
@click.pass_context
def dev_notebooks(ctx: click.Context) -> None:
    """Write the figures and notebooks/ anew.

    The lesson figures (course/lessons/figures/*.svg) are drawn from the grader's data, and
    one notebook per lesson is written from its text and stub; course dev check names any
    that differ from what this writes."""
    from course.commands.dev import notebooks_command

    sys.exit(notebooks_command(ctx.find_object(App)))


def main(early: spares.Early | None = None) -> None:
    """The command; ``early``: the worker it started as it started (:data:`EARLY`
    by default). SIGUSR1 prints every thread's stack to stderr and goes on (Python's
    faulthandler): what a command that seems stuck is doing, for a bug report or a
    test that timed out."""
    import faulthandler
    import signal

    if hasattr(signal, "SIGUSR1"):
        faulthandler.register(signal.SIGUSR1, all_threads=True)
    cli(prog_name="course", obj=early or EARLY)


if __name__ == "__main__":
    main()
