"""The real Codex and Gemini CLIs (`.tools/`, scripts/install-agents.sh), offline against
fakes this test owns, with corral installed by `corral install AGENT` into a temporary HOME:
a background dev server the model asks for runs under corral's supervisor, is listed with
the agent's session, outlives the agent as the agent's own background jobs would, and a
second request for it is refused and starts nothing."""

from __future__ import annotations

import json
import socket
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.agents.fake_responses import serving
from tests.helpers import ROOT, corral, corral_json, free_port, private_home, wait_for

pytestmark = pytest.mark.slow

TOOLS = ROOT / ".tools"


def binary_or_skip(agent: str) -> Path:
    path = TOOLS / agent / "node_modules" / ".bin" / agent
    if not path.exists():
        pytest.skip(f"{agent} CLI not installed at {path}: scripts/install-agents.sh could not")
    return path


def answers(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


def only_job(corral_home: Path) -> dict[str, Any]:
    """The one job corral recorded, as `corral ls --json` lists it."""
    assert len(list((corral_home / "ledger").glob("*.json"))) == 1  # the refused one: none
    [job] = corral_json("ls")["data"]
    assert job["attribution"] == "supervised"
    return dict(job)


CODEX_CONFIG = """model = "gpt-5"
model_provider = "mock"
approval_policy = "never"
sandbox_mode = "danger-full-access"
[model_providers.mock]
name = "mock"
base_url = "http://127.0.0.1:{port}/v1"
wire_api = "responses"
request_max_retries = 0
stream_max_retries = 0
"""


def test_codex_background_server_is_supervised_and_a_second_refused(
    tmp_path: Path, corral_home: Path
) -> None:
    codex = binary_or_skip("codex")
    project = tmp_path / "project"
    project.mkdir()
    home = tmp_path / "home"
    env = {**private_home(home), "CODEX_HOME": str(home / ".codex"), "OPENAI_API_KEY": "x"}
    port = free_port()
    line = f"python3 -m http.server {port} --bind 127.0.0.1 &"  # the agent's own `&` dies
    call = ("exec_command", {"cmd": line, "yield_time_ms": 2000})
    with serving([call, call]) as fake:
        (home / ".codex").mkdir(parents=True)
        (home / ".codex" / "config.toml").write_text(CODEX_CONFIG.format(port=fake.port))
        assert corral("install", "codex", env=env, cwd=project).returncode == 0
        try:
            run = subprocess.run(
                [str(codex), "exec", "--skip-git-repo-check", "start the dev server"],
                cwd=project, env=env, capture_output=True, text=True, timeout=120,
                stdin=subprocess.DEVNULL,
            )  # fmt: skip
            assert run.returncode == 0, run.stderr
            # Codex has exited (and SIGKILLed each command's process group): the server runs
            wait_for(lambda: answers(port), 30, "the server to answer after Codex exited")
            job = only_job(corral_home)
            session = next(
                w.split(": ")[1] for w in run.stderr.splitlines() if w.startswith("session id: ")
            )
            assert job["session"] == session and job["state"] == "running"
            assert port in job["ports"]
            first, second = fake.tool_outputs()
            assert "corral refused" not in first
            assert "Command blocked by PreToolUse hook: corral refused: " in second
            assert job["id"] in second
            told = json.dumps(fake.requests[1])  # after the first call: its URL
            assert f"is ready at http://localhost:{port}" in told
        finally:
            corral("stop", "--all", check=True)


def test_gemini_background_server_is_supervised_and_a_second_refused(
    tmp_path: Path, corral_home: Path
) -> None:
    gemini = binary_or_skip("gemini")
    project = tmp_path / "project"
    project.mkdir()
    home = tmp_path / "home"
    env = {**private_home(home), "GEMINI_API_KEY": "x", "GEMINI_CLI_TRUST_WORKSPACE": "true"}
    (home / ".gemini").mkdir(parents=True)
    (home / ".gemini" / "settings.json").write_text(
        json.dumps(
            {
                "security": {"auth": {"selectedType": "gemini-api-key"}},
                "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
                "privacy": {"usageStatisticsEnabled": False},  # offline: nothing to send
            }
        )
    )
    assert corral("install", "gemini", env=env, cwd=project).returncode == 0
    port = free_port()
    args = {"command": f"python3 -m http.server {port} --bind 127.0.0.1",
            "description": "serve", "is_background": True}  # fmt: skip

    def turn(part: dict[str, Any]) -> str:
        chunk = {"candidates": [{"content": {"role": "model", "parts": [part]},
                                 "finishReason": "STOP"}]}  # fmt: skip
        return json.dumps({"method": "generateContentStream", "response": [chunk]})

    call = turn({"functionCall": {"name": "run_shell_command", "args": args}})
    script = tmp_path / "responses.jsonl"
    script.write_text("\n".join([call, call, turn({"text": "done"})]) + "\n")
    try:
        run = subprocess.run(
            [str(gemini), "-m", "gemini-2.5-flash", "--fake-responses-non-strict", str(script),
             "--yolo", "-o", "json", "-p", "start the dev server"],
            cwd=project, env=env, capture_output=True, text=True, timeout=120,
            stdin=subprocess.DEVNULL,
        )  # fmt: skip
        assert run.returncode == 0, run.stderr
        wait_for(lambda: answers(port), 30, "the server to answer after Gemini exited")
        job = only_job(corral_home)
        session = json.loads(run.stdout)["session_id"]
        assert job["session"] == session and job["state"] == "running"
        assert port in job["ports"]
        chats = "".join(p.read_text() for p in (home / ".gemini").rglob("session-*.jsonl"))
        assert "Tool execution blocked: corral refused: " in chats and job["id"] in chats
        assert f"is ready at http://localhost:{port}" in chats
    finally:
        corral("stop", "--all", check=True)
