"""What every surface says after a start or a restart (service.starting.start_lines): `corral
restart`/`run -d` (stdout), the tui's `r`, the MCP server's job_restart."""

from __future__ import annotations

from pathlib import Path

import pytest

from corral.service.readiness import Readiness
from corral.service.runner import Started
from corral.service.starting import StartResult, start_lines

JOB = Started("0123456789abcdef" * 2, 4242, True, Path("/logs/j.log"))


@pytest.mark.parametrize(
    ("result", "said"),
    [
        (StartResult(None, "`npm run dev` already runs here: reuse it"),
         ["not started: `npm run dev` already runs here: reuse it"]),
        (StartResult(Started("a" * 32, 9, False, Path("/l/x.log"))),
         ["started unsupervised (corral could not supervise it; see /l/x.log)"]),
        (StartResult(JOB, readiness=Readiness(True, "port", 1.0, url="http://localhost:5173")),
         ["started job 01234567 (supervisor pid 4242)", "ready: http://localhost:5173"]),
        (StartResult(JOB, readiness=Readiness(True, "none", 1.0, ended=True, exit_code=0)),
         ["started job 01234567 (supervisor pid 4242)", "finished: exited with code 0"]),
        (StartResult(JOB, readiness=Readiness(True, "none", 1.0)),
         ["started job 01234567 (supervisor pid 4242)"]),
        (StartResult(JOB, readiness=Readiness(False, "port", 30.0, reason="not listening")),
         ["started job 01234567 (supervisor pid 4242)", "not ready: not listening"]),
    ],
)  # fmt: skip
def test_the_words_after_a_start(result: StartResult, said: list[str]) -> None:
    assert start_lines(result) == said
