"""Running an agent's hook as its agent does: the command `corral install AGENT` writes, fed
the agent's JSON on stdin."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from typing import Any

import pytest

from corral.lowlevel import logline
from corral.surfaces.agents import run_hook


def run(agent: str, event: str, data: Any) -> subprocess.CompletedProcess[str]:
    """The hook's run for `data`: bytes and text as they are, anything else as JSON."""
    raw = (
        data
        if isinstance(data, bytes)
        else str(data if isinstance(data, str) else json.dumps(data)).encode()
    )
    result = subprocess.run(
        run_hook.command(agent, event), input=raw, capture_output=True, timeout=60
    )
    return subprocess.CompletedProcess(
        result.args, result.returncode, result.stdout.decode(), result.stderr.decode()
    )


def output(result: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    """The hook's JSON answer (it must have exited 0 and said nothing on stderr)."""
    assert (result.returncode, result.stderr) == (0, ""), result.stderr
    out: dict[str, Any] = json.loads(result.stdout)
    return out


def words_after(command: str, flag: str) -> str:
    words = command.split()
    return words[words.index(flag) + 1]


@pytest.fixture
def in_process() -> Iterator[None]:
    """For calling an adapter's `answer` in the test process: it pins corral's log for the
    process (as the hook does for its own), which is undone afterwards."""
    home = os.environ.get("CORRAL_HOME")
    try:
        yield
    finally:
        logline._WHO = None
        if home is not None:
            os.environ["CORRAL_HOME"] = home
