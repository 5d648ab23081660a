"""One question, one answer: `corral ls --session S` lists the session's supervised jobs and
its unsupervised processes, each row with its attribution; plain `corral ls` shows under the
jobs the unsupervised processes of agent sessions in this project; `earlier` reaches only jobs
of agent sessions, never a job started without one. Real processes."""

from __future__ import annotations

import os
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import alive, corral, corral_json, execed, start_job, wait_for

SESSION = f"ls-{uuid.uuid4().hex[:8]}"  # processes are found by marker machine-wide


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    (root / ".git").mkdir(parents=True)
    return root


@pytest.fixture
def loose(project: Path) -> Iterator[subprocess.Popen[bytes]]:
    """A process Claude Code ran for the session without corral (its marker, no job)."""
    env = {**os.environ, "CLAUDE_CODE_SESSION_ID": SESSION}
    proc = subprocess.Popen(["sleep", "300"], env=env, cwd=project)
    wait_for(lambda: execed(proc), what="start")  # its marker shows once its exec is done
    yield proc
    proc.kill()
    proc.wait()


def test_ls_session_lists_jobs_and_unsupervised_processes_with_attribution(
    project: Path, loose: subprocess.Popen[bytes]
) -> None:
    job = start_job("sleep 300", "--session", SESSION, cwd=project)
    rows = corral_json("ls", "--session", SESSION)["data"]
    by = {(r["attribution"], r["pid"]): r for r in rows}
    assert ("supervised", job["pid"]) in by and by[("supervised", job["pid"])]["id"] == job["id"]
    assert ("env", loose.pid) in by
    row = by[("env", loose.pid)]
    assert row["id"] is None and row["session"] == SESSION and "sleep 300" in row["command"]
    assert rows[0]["attribution"] == "supervised"  # jobs first
    human = corral("ls", "--session", SESSION).stdout
    assert job["id"][:8] in human and str(loose.pid) in human
    corral("stop", job["id"], check=True)


def test_plain_ls_shows_unsupervised_processes_of_agent_sessions_in_this_project(
    project: Path, loose: subprocess.Popen[bytes], tmp_path: Path
) -> None:
    job = start_job("sleep 300", cwd=project)
    rows = corral_json_in(project, "ls")
    assert [r["id"] for r in rows if r["attribution"] == "supervised"] == [job["id"]]
    assert [r["pid"] for r in rows if r["attribution"] == "env"] == [loose.pid]
    human = corral("ls", cwd=project).stdout
    assert human.index(job["id"][:8]) < human.index(str(loose.pid))
    assert "\nNot supervised (agent sessions in this project;" in human  # a heading of its own
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    assert loose.pid not in [r["pid"] for r in corral_json_in(elsewhere, "ls")]
    corral("stop", job["id"], check=True)


def test_earlier_never_reaches_a_job_started_without_a_session(project: Path) -> None:
    by_hand = start_job("sleep 300", cwd=project)  # a person's terminal: no session
    old = start_job("sleep 301", "--session", "sess-gone", cwd=project)
    data = corral_json_in(project, "procs", "--session", "sess-now")
    assert [j["id"] for j in data["earlier_jobs"]] == [old["id"]]
    gone = corral("procs", "--session", "sess-now", "earlier", cwd=project)
    assert gone.returncode == 0
    assert not alive(old["pid"]) and alive(by_hand["pid"])
    corral("stop", by_hand["id"], check=True)


def corral_json_in(cwd: Path, *args: str) -> Any:
    import json

    out = corral(*args, "--json", cwd=cwd)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)["data"]
