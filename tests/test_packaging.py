"""The README, CI and packaging agree with the repository."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
TOP = ("course", "grader", "exercises", "solutions", "tests", "benchmarks", "docs", "tinymodels")


def test_ci_runs_the_readme_test_command():
    ci = (ROOT / ".ci" / "run").read_text()
    (assignment,) = re.findall(r"^README_TEST=(.*)$", ci, flags=re.M)
    (command,) = shlex.split(assignment)  # the shell's own reading of the quoting
    readme = (ROOT / "README.md").read_text()
    assert f"```bash\n{command}\n```" in readme
    assert 'bash -c "$README_TEST"' in ci


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_tables_are_not_broken_by_blank_lines(doc):
    lines = doc.read_text().splitlines()
    for i, line in enumerate(lines):
        starts_table = line.startswith("|") and (i == 0 or not lines[i - 1].startswith("|"))
        if starts_table:
            following = lines[i + 1] if i + 1 < len(lines) else ""
            assert re.match(r"^\|[-:| ]+\|$", following), f"{doc.name}:{i + 1}: {line[:60]}"


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_docs_name_only_files_the_repository_has(doc):
    text = doc.read_text()
    here = doc.parent
    links = [t for t in re.findall(r"\]\(([^)#]+)\)", text) if "://" not in t]
    assert all((here / t).exists() for t in links), links
    paths = [
        t for t in re.findall(r"`([\w./-]+)`", text)
        if t.split("/")[0] in TOP and "/" in t and "*" not in t
    ]  # fmt: skip
    missing = [t for t in paths if not (ROOT / t).exists()]
    assert missing == [], missing
