"""``python -m course``: the ``course`` command, where its script is not on PATH
(a notebook kernel's venv: ``!{sys.executable} -m course hint 1``)."""

import sys

from grader.sandbox import spares

# `python -m course grade`: its worker starts while the rest is imported
early = spares.early(sys.argv)

from course.cli import main  # noqa: E402

main(early)
