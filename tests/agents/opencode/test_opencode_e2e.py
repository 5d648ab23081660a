"""End to end with the real opencode CLI (1.18.33, `.tools/opencode`), offline against a fake
chat-completions server, with corral's plugin placed by `corral install opencode`: the
model's background server runs under corral's supervisor in the opencode session, outlives
opencode, and a second request is refused (the plugin throws corral's reason) and starts
nothing; every command opencode runs carries the session (CORRAL_SESSION); the next
session's system prompt holds corral's briefing (the running job and its URL)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.agents.chat_harness import Agent, AgentRun
from tests.agents.fake_chat import Call, Text, Turn, message_text
from tests.agents.tools import INSTALL, OPENCODE_BIN
from tests.helpers import alive, binary_or_skip, corral, corral_json, free_port

pytestmark = pytest.mark.slow

VERSION = "1.18.33"
CONFIG = {
    "provider": {
        "fake": {
            "npm": "@ai-sdk/openai-compatible",
            "name": "Fake",
            "options": {"baseURL": "{api}", "apiKey": "sk-fake-key-for-tests"},
            "models": {"fake-model": {"name": "fake"}},
        }
    },
    "model": "fake/fake-model",
    "autoupdate": False,
    "share": "disabled",
}
OFFLINE = {"OPENCODE_DISABLE_MODELS_FETCH": "1", "OPENCODE_DISABLE_AUTOUPDATE": "1"}


def without_npm(folder: Path) -> None:
    """At start opencode installs @opencode-ai/plugin into each of its config folders with
    npm unless their lock file already names it (offline, npm's retries hold the start for
    a minute); the plugin needs nothing from it."""
    (folder / "node_modules").mkdir(parents=True, exist_ok=True)
    lock = {"packages": {"": {"dependencies": {"@opencode-ai/plugin": VERSION}}}}
    (folder / "package-lock.json").write_text(json.dumps(lock))


@pytest.fixture
def opencode_cli(tmp_path: Path) -> Iterator[Agent]:
    agent = Agent(tmp_path / "opencode", binary_or_skip(OPENCODE_BIN, "opencode", INSTALL))
    installed = corral("install", "opencode", "--scope", "project", env=agent.env(),
                       cwd=agent.project)  # fmt: skip
    assert installed.returncode == 0, installed.stderr
    without_npm(agent.home / ".config" / "opencode")
    without_npm(agent.project / ".opencode")
    yield agent
    escaped = agent.reap_escaped()
    assert not escaped, f"processes started under opencode were left running: {escaped}"


def run_opencode(agent: Agent, script: list[Turn]) -> tuple[AgentRun, str]:
    """One `opencode run`; its session id (from its JSON events)."""
    args = ["run", "--format", "json", "--title", "e2e", "start the dev server"]
    env = {**OFFLINE, "OPENCODE_CONFIG_CONTENT": json.dumps(CONFIG)}
    run = agent.run(args, script, config=env)
    assert run.returncode == 0, run.explain()
    sessions = {
        event.get("sessionID")
        for event in (json.loads(x) for x in run.stdout.splitlines() if x.startswith("{"))
    }
    sessions.discard(None)
    assert len(sessions) == 1, run.explain()
    return run, str(sessions.pop())


def bash(command: str) -> Call:
    return Call("bash", {"command": command, "description": "start the dev server"})


def test_background_server_is_supervised_and_not_started_twice(
    opencode_cli: Agent, corral_home: Path
) -> None:
    port = free_port()
    line = f"python3 -m http.server {port} --bind 127.0.0.1"
    script: list[Turn] = [bash(f"{line} &"), bash('echo "in $CORRAL_SESSION"'), Text("started")]
    run, session = run_opencode(opencode_cli, script)
    [job] = corral_json("ls")["data"]
    # Listed with opencode's session, and alive after opencode exited.
    assert (job["session"], job["command"], job["ports"]) == (session, line, [port]), run.explain()
    assert job["state"] == "running" and alive(job["pid"])
    told, echoed = run.tool_results().values()  # the call's output, what corral started
    assert f"corral supervises `{line}` as job {job['id'][:8]}" in told, run.explain()
    assert echoed.strip() == f"in {session}"  # opencode's commands carry the session

    again, _ = run_opencode(opencode_cli, [bash(f"{line} &"), Text("it runs already")])
    # The new session's system prompt (corral's plugin) names the running job and its URL,
    # in every request to the model.
    for request in (r for r in again.requests if r.main):
        system = "\n".join(message_text(m) for m in request.messages() if m["role"] == "system")
        assert f"- job {job['id'][:8]}: `{line}` in " in system, again.explain()
        assert f"http://localhost:{port}" in system
    [refused] = again.tool_results().values()
    assert refused.startswith("corral refused: ") and job["id"][:8] in refused, again.explain()
    assert [j["id"] for j in corral_json("ls")["data"]] == [job["id"]]
    assert len(list((corral_home / "ledger").glob("*.json"))) == 1
    corral("stop", "--all", check=True)
