"""The ranges the grading options accept (issue 19): outside them a run could only
hang, exhaust memory or record a correct solution as timed out, so each is a
one-line usage error (exit status 2) before anything is graded."""

from __future__ import annotations

import click

DEVICES = (1, 64)
"""Simulated CPU devices: every lesson needs at most 8; 64 is what a host simulates
in reasonable memory (each device is a thread and a copy of every buffer)."""
EXAMPLES = (0, 100)
"""Drawn examples per exercise beyond the fixed ones (a lesson draws about 6)."""
TIMEOUT = (0.1, 86400.0)
"""Seconds one example may run: from a tenth of a second to a day."""
DEFAULT_TIMEOUT = 60.0
"""``--timeout``'s default: the grader's own (``grader.sandbox.protocol.DEFAULT_TIMEOUT``,
which tests/test_cli_defaults.py holds it equal to), here so that ``course status`` does
not import the grading protocol (and hashlib, hmac) to build its command line."""


def devices_option(ctx: click.Context, param: click.Parameter, value: int | None) -> int | None:
    """1–64 devices, naming COURSE_DEVICES when the value came from it."""
    low, high = DEVICES
    if value is not None and not low <= value <= high:
        where = f"COURSE_DEVICES={value}" if _from_env(ctx, param) else f"--devices {value}"
        raise click.UsageError(
            f"{where}: this host simulates {low} to {high} devices (every lesson needs at most 8)"
        )
    return value


def _from_env(ctx: click.Context, param: click.Parameter) -> bool:
    source = ctx.get_parameter_source(param.name)
    return source is click.core.ParameterSource.ENVIRONMENT


def nonempty_example(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    if value is not None and not value.strip():
        raise click.BadParameter(
            "is empty; give the example as a failure printed it, or leave --example out",
            ctx=ctx, param=param,
        )  # fmt: skip
    return value
