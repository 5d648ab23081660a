"""The daemon's routes for corral's Claude Code mod, over the real Unix socket with real jobs:
the band, the `/procs` pane and its actions, a job's last lines, the briefing and the re-telling
after a compaction, the session-end policy, and the supervision question for a Bash call."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest

from corral.lowlevel import locations
from tests.helpers import alive, corral, corral_json, free_port, start_job, wait_for
from tests.surfaces.test_http import client, daemon, data

__all__ = ["client", "daemon"]  # fixtures this module uses


@pytest.fixture
def project(tmp_path: Path) -> Path:
    folder = tmp_path / "project"
    (folder / ".git").mkdir(parents=True)  # a project root
    return folder


def band(client: httpx.Client, folder: Path) -> Any:
    return data(client.get("/api/claude/band", params={"folder": str(folder)}))


def test_band_shows_running_jobs_with_ports_and_failures(
    client: httpx.Client, project: Path
) -> None:
    assert band(client, project) == {"folder": str(project), "text": None, "failed": []}
    port = free_port()
    server = f"python3 -m http.server {port} --bind 127.0.0.1"
    job = start_job(server, "--ready", f"port:{port}", cwd=project)
    shown = wait_for(lambda: port_shown(client, project, port), what="the port in the band")
    assert shown["text"] == f"⚙ 1 running · :{port} · /procs"
    corral("run", "-d", "--name", "web", "-c", "sleep 0.2; exit 3", cwd=project)
    failed = wait_for(lambda: band(client, project)["failed"], what="the failure in the band")
    assert [f["label"] for f in failed] == ["✖ web exited 3"]
    corral("stop", job["id"], check=True)
    wait_for(lambda: band(client, project)["text"] is None, what="the band emptied")


def port_shown(client: httpx.Client, folder: Path, port: int) -> Any:
    got = band(client, folder)
    return got if got["text"] and f":{port}" in got["text"] else None


def test_procs_rows_and_actions(client: httpx.Client, project: Path) -> None:
    session = f"m-{uuid.uuid4().hex[:8]}"
    mine = start_job("sleep 300", "--session", session, cwd=project)
    other = start_job("sleep 301", cwd=project)
    got = data(client.get("/api/claude/procs", params={"folder": str(project), "session": session}))
    assert [j["id"] for j in got["session_jobs"]] == [mine["id"]]
    assert [j["id"] for j in got["other_session_jobs"]] == [other["id"]]
    post = client.post
    done = data(post("/api/claude/procs", json={"action": "stop", "job": other["id"][:8]}))
    assert [t["result"] for o in done["outcomes"] for t in o["targets"]][:1] == ["terminated"]
    assert not alive(other["pid"])
    done = data(post("/api/claude/procs", json={"action": "stop-all", "session": session}))
    assert done["ok"] and [o["id"] for o in done["outcomes"]] == [mine["id"]]
    done = data(post("/api/claude/procs", json={"action": "clean"}))
    assert sorted(done["forgotten"]) == sorted([mine["id"], other["id"]])
    gone = post("/api/claude/procs", json={"action": "stop", "job": "zzzzzzzz"})
    assert gone.status_code == 404 and "zzzzzzzz" in gone.json()["errors"][0]


@pytest.mark.parametrize(
    "body",
    [
        {"action": "kill"},
        {"action": "stop"},
        {"action": "stop-all"},
        {"action": "earlier"},
        {"action": "earlier", "folder": "relative"},
        {"action": "stop-pid", "pid": True, "started_at": "x"},
        {"action": "clean", "signal": 9},
    ],
)
def test_bad_procs_actions_are_refused(client: httpx.Client, body: Any) -> None:
    response = client.post("/api/claude/procs", json=body)
    assert response.status_code == 400 and data(response, 400) is None


def test_logs_give_the_last_lines(client: httpx.Client, project: Path) -> None:
    job = start_job("echo first; echo second; sleep 300", cwd=project)
    url = f"/api/jobs/{job['id'][:8]}/logs"
    got = wait_for(lambda: data(client.get(url, params={"lines": "1"}))["lines"], what="log")
    assert got == ["second"]
    assert client.get(url, params={"lines": "0"}).status_code == 400
    corral("stop", job["id"], check=True)


def test_briefing_and_the_retelling_after_a_compaction(client: httpx.Client, project: Path) -> None:
    session = f"m-{uuid.uuid4().hex[:8]}"
    job = start_job("sleep 300", "--session", session, cwd=project)
    params = {"folder": str(project), "session": session}
    assert data(client.get("/api/claude/briefing", params=params))["text"] is None
    again = data(client.get("/api/claude/briefing", params={**params, "source": "compact"}))
    again = again["text"]
    assert again.startswith("corral: 1 job(s) this session started are still running")
    assert f"job {job['id'][:8]}: `sleep 300` in {project}" in again
    other = {"folder": str(project), "session": "someone-else"}
    text = data(client.get("/api/claude/briefing", params=other))["text"]
    assert "1 job(s) started earlier are still running" in text and job["id"][:8] in text
    bad = client.get("/api/claude/briefing", params={**params, "source": "later"})
    assert bad.status_code == 400
    corral("stop", job["id"], check=True)


def test_session_end_keeps_or_terminates_by_policy(
    client: httpx.Client, project: Path, corral_home: Path
) -> None:
    session = f"m-{uuid.uuid4().hex[:8]}"
    job = start_job("sleep 300", "--session", session, cwd=project)
    got = data(client.post("/api/claude/session-end", json={"session": session}))
    assert got == {"session": session, "policy": "keep"} and alive(job["pid"])
    (corral_home / "config.toml").write_text('session_end = "terminate"\n')
    got = data(client.post("/api/claude/session-end", json={"session": session}))
    assert got["policy"] == "terminate"
    wait_for(lambda: not alive(job["pid"]), what="the session's job stopped")


def test_supervise_wraps_refuses_or_leaves_alone(client: httpx.Client, project: Path) -> None:
    port = free_port()
    line = f"python3 -m http.server {port}"
    ask: dict[str, Any] = {"command": line, "cwd": str(project), "background": True}
    got = first = data(client.post("/api/claude/supervise", json=ask))
    assert got["action"] == "wrap" and locations.runs_corral_program(got["rewritten"])
    assert "corral supervises `python3 -m http.server" in got["context"]
    again = data(client.post("/api/claude/supervise", json={**ask, "command": got["rewritten"]}))
    assert again == {"action": "none", "why": "already runs under corral"}
    prefix = "/somewhere/bin/corral-claude-prefix"
    got = data(client.post("/api/claude/supervise", json={**ask, "prefix": prefix}))
    assert got["action"] == "none" and "prefix" in got["why"]
    quiet = {**ask, "command": "ls -l", "background": False}
    plain = data(client.post("/api/claude/supervise", json=quiet))
    assert plain["action"] == "none" and plain["why"] == "nothing to supervise"
    # the first answer reserved the server (as the hook does): a second start is refused
    got = data(client.post("/api/claude/supervise", json=ask))
    assert got["action"] == "refuse" and "being started" in got["reason"], got
    # until the mod withdraws it (Claude Code refused the rewritten call)
    assert len(first["tokens"]) == 1
    assert data(client.post("/api/claude/withdraw", json={"tokens": first["tokens"]}))
    assert data(client.post("/api/claude/supervise", json=ask))["action"] == "wrap"
    bad = client.post("/api/claude/withdraw", json={"tokens": ["../x"]})
    assert bad.status_code == 400
    assert corral_json("ls")["data"] == []
