"""End to end with the real Qwen Code CLI (0.24.4, `.tools/qwen`), offline against a fake
chat-completions server, installed by `corral install qwen`: the model's background server is
denied with the `corral run -d` line, the model runs that line, and the server runs under
corral's supervisor in the Qwen session, outlives Qwen, and a second request is refused and
starts nothing."""

from __future__ import annotations

import shlex
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from corral.surfaces.agents import qwen
from tests.agents.chat_harness import Agent, AgentRun
from tests.agents.fake_chat import Call, Reply, Request, Text, Turn
from tests.agents.tools import INSTALL, QWEN_BIN
from tests.helpers import alive, binary_or_skip, corral, corral_json, free_port

pytestmark = pytest.mark.slow

OFFLINE = {
    "OPENAI_API_KEY": "sk-fake-key-for-tests",
    "OPENAI_BASE_URL": "{api}",
    "OPENAI_MODEL": "fake-model",
    "QWEN_CODE_SUPPRESS_YOLO_WARNING": "1",
}


@pytest.fixture
def qwen_cli(tmp_path: Path) -> Iterator[Agent]:
    agent = Agent(tmp_path / "qwen", binary_or_skip(QWEN_BIN, "Qwen Code", INSTALL))
    installed = corral("install", "qwen", env=agent.env(), cwd=agent.project)
    assert installed.returncode == 0, installed.stderr
    yield agent
    escaped = agent.reap_escaped()
    assert not escaped, f"processes started under Qwen were left running: {escaped}"


def run_qwen(agent: Agent, session: str, script: list[Turn]) -> AgentRun:
    args = ["start the dev server", "--yolo", "--auth-type", "openai", "-o", "json",
            "--session-id", session]  # fmt: skip
    run = agent.run(args, script, config=OFFLINE)
    assert run.returncode == 0, run.explain()
    return run


def shell(command: str) -> Call:
    return Call("run_shell_command", {"command": command, "is_background": False})


def the_corral_line(request: Request) -> Reply:
    """What a model does with corral's deny: run the `corral run -d` line it names."""
    reason = request.last_tool_result()
    [line] = [p for p in reason.split("`")[1::2] if shlex.split(p)[1:3] == ["run", "-d"]]
    return shell(line)


def test_background_server_is_redirected_supervised_and_not_started_twice(
    qwen_cli: Agent, corral_home: Path
) -> None:
    port = free_port()
    line = f"python3 -m http.server {port} --bind 127.0.0.1"
    first = str(uuid.uuid4())
    run = run_qwen(qwen_cli, first, [shell(f"{line} &"), the_corral_line, Text("started")])
    deny, started = run.tool_results().values()
    assert deny.startswith("corral: not run. ") and f"--session {first} -c '{line}'" in deny
    assert f"ready: http://localhost:{port}" in started, run.explain()
    [job] = corral_json("ls")["data"]
    # Listed with Qwen's session, and alive after Qwen exited (its process group is gone).
    assert (job["session"], job["command"], job["ports"]) == (first, line, [port])
    assert job["state"] == "running" and alive(job["pid"])

    second = str(uuid.uuid4())
    again = run_qwen(qwen_cli, second, [shell(f"{line} &"), the_corral_line_anyway(line, second),
                                    Text("it runs already")])  # fmt: skip
    refused, refused_too = again.tool_results().values()
    assert refused.startswith("corral refused: ") and job["id"][:8] in refused, again.explain()
    assert "corral refused: " in refused_too and job["id"][:8] in refused_too
    assert [j["id"] for j in corral_json("ls")["data"]] == [job["id"]]
    assert len(list((corral_home / "ledger").glob("*.json"))) == 1
    corral("stop", "--all", check=True)


def the_corral_line_anyway(line: str, session: str) -> Turn:
    """A model that runs the corral line though told the server runs already."""
    return shell(qwen.start_line(line, session))
