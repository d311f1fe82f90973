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


SHARED = (
    "test_engine", "test_isolation", "test_mistakes", "test_grades", "test_l07", "test_l10",
    "test_l11",
)  # fmt: skip
"""Test modules that read the run's shared grades (:mod:`tests.grades`: every solution's,
every catalogued mistake's): one worker runs them all, so each grade is made once a run."""

FIRST = (
    "shared-grades", "test_readers", "test_l13", "test_dev_check", "test_ahead", "test_cli",
    "test_faults",
)  # fmt: skip
"""The longest groups, handed out first, longest first (measured one after another on two
idle cores: the shared grades 7 minutes, the others 1 to 1.5 each): a long group handed
out last would keep one worker busy alone at the end. xdist's own order (by the number of
tests) put ``test_readers``, three tests of a minute and a half, among the last."""


def _group(item: pytest.Item) -> str:
    module = item.path.stem
    return "shared-grades" if module in SHARED else module


def pytest_configure(config: pytest.Config) -> None:
    if config.getoption("dist", "no") == "loadgroup":
        config.option.loadscopereorder = False  # the groups in the order collected: below


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under pytest-xdist's ``--dist loadgroup`` (the README's test command), a module's
    tests go to one worker together (its module-scoped fixtures are made once), and
    :data:`SHARED`'s modules to one worker between them; :data:`FIRST`'s groups are
    collected first. Before xdist's own hook, which reads the marks."""
    if config.getoption("dist", "no") != "loadgroup":
        return
    for item in items:
        item.add_marker(pytest.mark.xdist_group(_group(item)))
    rank = {group: i for i, group in enumerate(FIRST)}
    items.sort(key=lambda item: rank.get(_group(item), len(FIRST)))  # stable: else as collected
