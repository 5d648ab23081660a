"""corral's own `run`, sent by an agent with its background flag (Claude Code's
`run_in_background`, Gemini's and Qwen's `is_background`) or with `&` (Codex, opencode): every
agent's hook lets it run as written, never under a second supervisor. The decision is the line
reader's (core.shell.plan), one for all agents; `corral run` applies the refusals itself."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.agents.hooks import output, run
from tests.agents.opencode.test_opencode_hook import tool_before
from tests.agents.qwen.test_qwen_hook import pre_tool_use as qwen_call
from tests.agents.test_codex import pre_tool_use as codex_call
from tests.agents.test_gemini import before_tool as gemini_call
from tests.helpers import corral, corral_json, free_port, start_job
from tests.surfaces.claude.test_hook import payload as claude_call
from tests.surfaces.claude.test_hook import run_hook as run_claude_hook


def claude_hook(data: dict[str, Any]) -> subprocess.CompletedProcess[str]:
    return run_claude_hook("pre-tool-use", data)


def ask(agent: str, command: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """The agent's pre-tool hook for `command`, sent the way that agent sends it to the
    background: its own flag, else a trailing `&`."""
    calls: dict[str, Callable[[], subprocess.CompletedProcess[str]]] = {
        "claude": lambda: claude_hook(claude_call(command, cwd, run_in_background=True)),
        "gemini": lambda: run(
            "gemini", "before-tool", gemini_call(command, cwd, is_background=True, dir_path="")
        ),
        "qwen": lambda: run("qwen", "pre-tool-use", qwen_call(command, cwd, is_background=True)),
        "codex": lambda: run("codex", "pre-tool-use", codex_call(f"{command} &", cwd)),
        "opencode": lambda: run("opencode", "tool-before", tool_before(f"{command} &", cwd)),
    }
    return calls[agent]()


AGENTS = ("claude", "gemini", "qwen", "codex", "opencode")
CORRAL_SCRIPT = os.path.join(os.path.dirname(sys.executable), "corral")
STARTS = {
    "corral": "corral run -d -- {server}",
    "by path": shlex.quote(CORRAL_SCRIPT) + " run -d --name web --ready port -- {server}",
    "python -m": shlex.quote(sys.executable) + " -I -m corral run -d -c '{server}'",
    "in a folder": "cd . && corral run -d --session s-1 -- {server}",
}


@pytest.mark.parametrize("agent", AGENTS)
@pytest.mark.parametrize("how", sorted(STARTS))
def test_corrals_own_run_in_the_background_runs_as_written(
    agent: str, how: str, tmp_path: Path
) -> None:
    server = f"python3 -m http.server {free_port()} --bind 127.0.0.1"
    line = STARTS[how].format(server=server)
    result = ask(agent, line, tmp_path)
    if agent != "gemini":
        assert (result.returncode, result.stdout, result.stderr) == (0, "", "")
        return
    # Gemini's shells carry no session: the line is given it, nothing else.
    tool_input = output(result)["hookSpecificOutput"]["tool_input"]
    assert tool_input == {
        "command": f"export CORRAL_SESSION=g-1; {line}",
        "description": "serve",
        "is_background": True,
        "dir_path": "",
    }


def test_gemini_gives_corral_run_the_session(tmp_path: Path, corral_home: Path) -> None:
    port = free_port()
    server = f"python3 -m http.server {port} --bind 127.0.0.1"
    line = f"{shlex.quote(sys.executable)} -m corral run -d -- {server}"
    answer = output(ask("gemini", line, tmp_path))["hookSpecificOutput"]
    done = subprocess.run(
        ["sh", "-c", answer["tool_input"]["command"]], cwd=tmp_path, capture_output=True,
        text=True, timeout=60, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    jobs = corral_json("ls", "--all")["data"]
    assert [(j["command"], j["ports"], j["session"]) for j in jobs] == [(server, [port], "g-1")]
    corral("stop", "--all", check=True)


@pytest.mark.parametrize("agent", AGENTS)
def test_the_same_server_without_corral_run_is_still_supervised(agent: str, tmp_path: Path) -> None:
    server = f"python3 -m http.server {free_port()} --bind 127.0.0.1"
    result = ask(agent, server, tmp_path)
    assert result.returncode == 0 and result.stdout, result.stderr  # rewritten or redirected


def test_claude_background_corral_run_is_one_supervised_job_and_refused_again(
    tmp_path: Path, corral_home: Path
) -> None:
    # Claude Code sends `corral run -d …` with run_in_background: the job runs under one
    # supervisor (not a second one around corral's CLI), and a second start is refused by
    # corral run itself, nothing started.
    port = free_port()
    server = f"python3 -m http.server {port} --bind 127.0.0.1"
    line = f"corral run -d -- {server}"
    env = {
        **os.environ,
        "PATH": f"{os.path.dirname(sys.executable)}:{os.environ['PATH']}",
        "CLAUDE_CODE_SESSION_ID": "s-own-run",
    }

    def as_claude_runs_it() -> subprocess.CompletedProcess[str]:
        out = claude_hook(claude_call(line, tmp_path, run_in_background=True)).stdout
        command = json.loads(out)["hookSpecificOutput"]["updatedInput"]["command"] if out else line
        return subprocess.run(
            ["sh", "-c", command], cwd=tmp_path, env=env, capture_output=True, text=True,
            timeout=60, stdin=subprocess.DEVNULL,
        )  # fmt: skip

    first = as_claude_runs_it()
    assert first.returncode == 0, first.stderr
    jobs = corral_json("ls", "--all")["data"]
    assert [(j["command"], j["ports"], j["session"]) for j in jobs] == [
        (server, [port], "s-own-run")
    ]
    again = as_claude_runs_it()
    assert again.returncode == 1 and "corral refused" in again.stderr, again.stderr
    assert [j["id"] for j in corral_json("ls", "--all")["data"]] == [jobs[0]["id"]]
    corral("stop", "--all", check=True)


def test_a_held_port_is_refused_by_corral_run_not_the_hook(tmp_path: Path) -> None:
    port = free_port()
    start_job(f"python3 -m http.server {port} --bind 127.0.0.1", cwd=tmp_path)
    line = f"corral run -d -- python3 -m http.server {port} --bind 127.0.0.1"
    for agent in AGENTS:
        result = ask(agent, line, tmp_path)
        assert result.returncode == 0 and "corral refused" not in result.stdout, agent
        assert agent == "gemini" or result.stdout == "", agent
    refused = corral("run", "-d", "--", *shlex.split(line)[4:], cwd=tmp_path)
    assert refused.returncode == 1 and "corral refused" in refused.stderr, refused.stderr
    corral("stop", "--all", check=True)
