"""Test set-up: 8 simulated CPU devices before anything imports jax."""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from grader.measure import devices  # noqa: E402

os.environ.setdefault("COURSE_PLATFORM", "cpu")
devices.configure(8)

# Ctrl-C reaches the processes the tests start and stop with SIGINT (`course watch`, a class
# graded at once): a pytest started as a background job of a non-interactive shell (.ci/run's
# legs, nohup) has SIGINT ignored, and an ignored signal stays ignored through exec, so those
# processes would never see it. A handler (not ignored) here is reset to the default in them.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

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
