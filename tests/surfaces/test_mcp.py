"""`corral mcp` over stdio, with the official SDK's client: real jobs, real processes."""

from __future__ import annotations

import json
import os
import sys
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from tests.helpers import alive, corral, corral_json, free_port

TOOLS = {"jobs_list", "job_start", "job_logs", "job_stop", "job_restart", "line_explain"}


def _params(home: Path, cwd: Path, session: str | None = None) -> StdioServerParameters:
    """The server's start; a session of its own (tests in parallel must not share one)."""
    session = session or f"s-mcp-{uuid.uuid4().hex[:8]}"
    env = {
        "CORRAL_HOME": str(home),
        "PATH": os.environ["PATH"],
        "SHELL": "/bin/bash",
        "HOME": str(cwd),
    }
    env["CORRAL_SESSION"] = session
    return StdioServerParameters(
        command=sys.executable, args=["-m", "corral", "mcp"], env=env, cwd=str(cwd)
    )


def _serve(params: StdioServerParameters, body: Callable[[Any], Awaitable[None]]) -> None:
    async def main() -> None:
        async with Client(params, read_timeout_seconds=60) as client:
            await body(client)

    anyio.run(main)


async def _call(client: Any, tool: str, **arguments: Any) -> tuple[Any, str]:
    result = await client.call_tool(tool, arguments)
    envelope = result.structured_content
    assert envelope["schema"] == 1, envelope
    return envelope, result.content[0].text


def test_start_list_logs_stop_over_stdio(corral_home: Path, tmp_path: Path) -> None:
    port = free_port()
    line = (
        f"echo token=abc123secretvalue; echo starting; "
        f"{sys.executable} -m http.server {port} --bind 127.0.0.1"
    )

    async def body(client: Any) -> None:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert set(tools) == TOOLS
        assert tools["jobs_list"].annotations.read_only_hint is True
        assert tools["job_stop"].annotations.destructive_hint is True
        assert tools["job_stop"].annotations.idempotent_hint is True
        started, text = await _call(client, "job_start", line=line, name="web")
        job = started["data"]
        assert job["ready"]["url"] == f"http://localhost:{port}", started
        # the words every surface says after a start (service.starting.start_lines)
        assert text == (
            f"started job {job['id'][:8]} (supervisor pid {job['pid']})\n"
            f"ready: http://localhost:{port}"
        )
        again, text = await _call(client, "job_start", line=line)
        assert again["errors"] and "refused" in text and str(port) in text
        assert text == f"not started: {again['errors'][0]}"
        listed, _ = await _call(client, "jobs_list", scope="session")
        rows = listed["data"]["jobs"]
        assert [(r["id"], r["name"], r["ports"]) for r in rows] == [(job["id"], "web", [port])]
        logs, text = await _call(client, "job_logs", job="web")
        texts = [line["text"] for line in logs["data"]["lines"]]
        assert "starting" in texts and "abc123secretvalue" not in text
        assert not any("abc123secretvalue" in t for t in texts)
        cursor = logs["data"]["cursor"]
        newer, _ = await _call(client, "job_logs", job="web", after=cursor)
        assert newer["data"]["lines"] == [] and newer["data"]["cursor"] == cursor
        stopped, text = await _call(client, "job_stop", jobs=["web"])
        assert [t["result"] for t in stopped["data"][0]["targets"]] == ["terminated"], stopped
        assert not alive(job["pid"])
        after, _ = await _call(client, "jobs_list", scope="all")
        assert after["data"]["jobs"] == []

    _serve(_params(corral_home, tmp_path), body)


def test_another_sessions_job_is_not_stopped(corral_home: Path, tmp_path: Path) -> None:
    other = corral_json("run", "-d", "--session", "someone-else", "-c", "sleep 60")["data"]

    async def body(client: Any) -> None:
        mine, _ = await _call(client, "jobs_list", scope="session", processes=True)
        assert mine["data"]["jobs"] == [] and mine["data"]["processes"] == []
        everyone, _ = await _call(client, "jobs_list", scope="all")
        assert [j["id"] for j in everyone["data"]["jobs"]] == [other["id"]]
        stopped, _ = await _call(client, "job_stop", jobs=[other["id"][:8]])
        target = stopped["data"][0]["targets"][0]
        assert target["result"] == "unproven" and "not a job of this session" in target["detail"]
        by_identity, _ = await _call(
            client, "job_stop", pid=other["pid"], started_at=_started_at(other["pid"])
        )
        assert by_identity["data"][0]["targets"][0]["result"] == "unproven"
        restarted, _ = await _call(client, "job_restart", job=other["id"][:8])
        assert restarted["errors"] == ["refused"]

    _serve(_params(corral_home, tmp_path), body)
    assert alive(other["pid"])
    corral_json("stop", other["id"])


def _started_at(pid: int) -> str:
    job = next(j for j in corral_json("ls")["data"] if j["pid"] == pid)
    return str(job["started_at"])


def test_restart_and_explain_over_stdio(corral_home: Path, tmp_path: Path) -> None:
    async def body(client: Any) -> None:
        first, _ = await _call(client, "job_start", line="echo hello; sleep 60", name="sl")
        restarted, text = await _call(client, "job_restart", job="sl")
        new = restarted["data"]["start"]
        assert new["name"] == "sl" and new["id"] != first["data"]["id"], restarted
        # the words every surface says after a start (service.starting.start_lines)
        assert text == f"started job {new['id'][:8]} (supervisor pid {new['pid']})"
        assert not alive(first["data"]["pid"]) and alive(new["pid"])
        explained, text = await _call(client, "line_explain", line="npm run dev")
        assert explained["data"]["readable"] is True and text.startswith("supervised")
        own = "corral run -d -- python3 -m http.server 8000"
        explained, text = await _call(client, "line_explain", line=own, background=True)
        assert explained["data"]["action"] == "untouched", explained
        assert text.startswith("untouched: corral's own `run` starts the job"), text
        await _call(client, "job_stop", jobs=["sl"])

    _serve(_params(corral_home, tmp_path), body)


def test_a_start_not_ready_or_not_started_says_so(corral_home: Path, tmp_path: Path) -> None:
    async def failing(client: Any) -> None:
        line = "echo token=abc123secretvalue; echo boom; exit 3"
        started, text = await _call(client, "job_start", line=line)
        job = started["data"]
        assert job["ready"]["reason"] == "exited with code 3", started
        said, _, tail = text.partition("\n")
        assert said == f"started job {job['id'][:8]} (supervisor pid {job['pid']})", text
        # why, then the last lines of its log, secrets hidden
        assert tail.startswith("not ready: exited with code 3\n") and tail.endswith("boom")
        assert "abc123secretvalue" not in text and not started["errors"]

    _serve(_params(corral_home, tmp_path), failing)
    (corral_home / "ledger").rename(corral_home / "ledger.kept")
    (corral_home / "ledger").write_text("a file where the ledger folder should be")
    marker = tmp_path / "ran"

    async def unrecorded(client: Any) -> None:
        started, text = await _call(client, "job_start", line=f"touch {marker}; sleep 300")
        error = started["data"]["error"]
        assert "cannot supervise" in error and started["errors"] == [error], started
        assert text == f"not started: {error}"

    _serve(_params(corral_home, tmp_path), unrecorded)
    time.sleep(0.5)
    assert not marker.exists()


def test_the_session_is_the_one_the_cli_and_the_supervisor_read(
    corral_home: Path, tmp_path: Path
) -> None:
    """With both corral's and Claude Code's variable set, the MCP server names the session
    as `corral run` and the supervisor do (lowlevel.record.session_from: corral's first)."""
    ours, claudes = f"s-corral-{uuid.uuid4().hex[:8]}", f"s-claude-{uuid.uuid4().hex[:8]}"
    params = _params(corral_home, tmp_path, session=ours)
    assert params.env is not None
    params.env["CLAUDE_CODE_SESSION_ID"] = claudes
    by_cli = corral(
        "run", "-d", "--json", "-c", "sleep 60", env={**os.environ, **params.env}, cwd=tmp_path
    )
    cli_job = json.loads(by_cli.stdout)["data"]
    sessions: list[str] = []

    async def body(client: Any) -> None:
        started, _ = await _call(client, "job_start", line="sleep 61")
        listed, _ = await _call(client, "jobs_list", scope="all")
        rows = {j["id"]: j["session"] for j in listed["data"]["jobs"]}
        sessions.extend([rows[cli_job["id"]], rows[started["data"]["id"]]])

    try:
        _serve(params, body)
    finally:
        corral("stop", "--all", check=True)
    assert sessions == [ours, ours]
