"""The OS sandbox's settings as the tests' environment gives them (the tests' edge,
:meth:`grader.config.Sandbox.from_environment`), and the mark of a test that needs one."""

from __future__ import annotations

import os

import pytest

from grader.config import Sandbox
from grader.sandbox import jail

SANDBOX = Sandbox.from_environment(os.environ)
"""The sandbox's settings in the tests' environment."""

needs_sandbox = pytest.mark.skipif(
    not jail.on(SANDBOX), reason=f"no sandbox here: {jail.state(SANDBOX)}"
)
