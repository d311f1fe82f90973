"""Test set-up: 8 simulated CPU devices before anything imports jax."""

from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from grader.measure import devices  # noqa: E402

os.environ.setdefault("COURSE_PLATFORM", "cpu")
devices.configure(8)

import pytest  # noqa: E402


@pytest.fixture
def root() -> Path:
    return ROOT


if os.environ.get("COURSE_TEST_GRADES"):  # count the grades (tests/gradecount.py)
    from tests import gradecount

    gradecount.install(Path(os.environ["COURSE_TEST_GRADES"]))

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_protocol(item, nextitem):
        gradecount.CURRENT["test"] = item.nodeid
        try:
            return (yield)
        finally:
            gradecount.CURRENT["test"] = "(between tests)"
