"""The release workflow (issue 49.5): a tag builds the course, runs the wheel smoke test,
and only then publishes; README says how to make one."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WORKFLOW = ROOT / ".github" / "workflows" / "release.yml"


def _job(text: str, name: str) -> str:
    """The lines of job ``name`` (two-space indented key under ``jobs:``)."""
    m = re.search(rf"^  {name}:\n(.*?)(?=^  \S|\Z)", text, flags=re.M | re.S)
    assert m, f"no job {name!r}"
    return m[1]


def test_a_tag_builds_smoke_tests_then_publishes():
    text = WORKFLOW.read_text()
    on = re.search(r"^on:\n(.*?)(?=^\S)", text, flags=re.M | re.S)[1]
    assert on.split() == ["push:", "tags:", '["v*"]']  # a tag, nothing else
    build, publish = _job(text, "build"), _job(text, "publish")
    assert (
        build.index('"v$version"') < build.index(".ci/wheel_smoke") < build.index("python -m build")
    )
    assert (ROOT / ".ci" / "wheel_smoke").is_file()
    assert "needs: build" in publish and "pypa/gh-action-pypi-publish" in publish
    assert "id-token: write" in publish and "id-token" not in build  # only publish may
    assert "password" not in text and "secrets." not in text  # trusted publishing: no token


def test_the_readme_says_how_to_release():
    readme = " ".join((ROOT / "README.md").read_text().split())
    assert ".github/workflows/release.yml" in readme and "git tag v" in readme
    assert "trusted publish" in readme
