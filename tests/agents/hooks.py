"""Running an agent's hook as its agent does: the command `corral install AGENT` writes, fed
the agent's JSON on stdin."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

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


# Hypothesis over an agent's payloads: any JSON value where the agent sends one, a command
# among them (plain, a long runner, sent to the background, or not a string at all).
VALUES = st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=30))
COMMANDS = st.one_of(
    st.text(max_size=60),
    st.sampled_from(["npm run dev", "sleep 300 &", "vite", "a & b", "python3 -m http.server"]),
    VALUES,
)
PAYLOADS = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


def garbage(tool: str, other_tool: str) -> list[str | bytes]:
    """Input an agent's pre-tool hook answers with exit 0 and nothing: not JSON, not an
    object, a shell call whose command is no string, another tool, a folder that is gone."""

    def call(tool_input: Any, name: str = tool, cwd: str = "/") -> str:
        return json.dumps({"tool_name": name, "tool_input": tool_input, "cwd": cwd})

    return ["", "not json", "[1, 2", "NaN", json.dumps([1]), b"\xff\xfe{",
            call({"command": 7}), call("npm run dev"),
            call({"command": "npm run dev"}, name=other_tool),
            call({"command": "npm run dev"}, cwd="/nope")]  # fmt: skip


def briefed(agent: str, data: dict[str, Any], cwd: Path) -> None:
    """SessionStart (`data`, in `cwd`) tells the model of the server running there, by job
    id and URL, in the agent's additionalContext shape."""
    from tests.helpers import corral, free_port, start_job

    port = free_port()
    job = start_job(f"python3 -m http.server {port} --bind 127.0.0.1", cwd=cwd)
    try:
        out = output(run(agent, "session-start", {**data, "cwd": str(cwd)}))
        answer = out["hookSpecificOutput"]
        assert set(answer) == {"hookEventName", "additionalContext"}
        assert answer["hookEventName"] == "SessionStart"
        assert job["id"][:8] in answer["additionalContext"]
        assert f"http://localhost:{port}" in answer["additionalContext"]
    finally:
        corral("stop", "--all", check=True)


def told_the_url(agent: str, pre: str, post: str, data: dict[str, Any], cwd: Path) -> None:
    """The agent's after-tool hook, for a call its pre-tool hook rewrote (`data`, the shell
    call, its command rewritten and run), tells the model the server's URL; for a line
    corral did not rewrite it says nothing."""
    from tests.helpers import corral, free_port

    port = free_port()
    tool_input = dict(data["tool_input"], command=f"python3 -m http.server {port} &")
    rewritten = output(run(agent, pre, {**data, "tool_input": tool_input}))
    answer = rewritten["hookSpecificOutput"]
    command = (answer.get("updatedInput") or answer["tool_input"])["command"]
    subprocess.run(["sh", "-c", command], cwd=cwd, check=True, timeout=30,
                   stdout=subprocess.DEVNULL)  # fmt: skip
    try:
        done = {**data, "tool_input": {**tool_input, "command": command}}
        out = output(run(agent, post, done))["hookSpecificOutput"]
        assert set(out) == {"hookEventName", "additionalContext"}
        token = command.split("--job ")[1][:8]
        assert out["additionalContext"].startswith(f"corral: job {token} (")
        assert f"is ready at http://localhost:{port}. " in out["additionalContext"]
        plain = run(agent, post, {**data, "tool_input": {**tool_input, "command": "ls"}})
        assert (plain.returncode, plain.stdout, plain.stderr) == (0, "", "")
    finally:
        corral("stop", "--all", check=True)
