"""The ports a job actually holds (found from its processes' sockets, not its command line),
and a job whose supervisor was SIGKILLed: listed `unsupervised` with its processes and ports,
still refused as a duplicate, stopped only where each process is proven. Real processes."""

from __future__ import annotations

import json
import os
import signal
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import alive, corral, corral_json, start_job, wait_for

# A server that picks its own free port: no port is written in the line that starts it.
SERVER = """
import http.server, socketserver
with socketserver.TCPServer(("127.0.0.1", 0), http.server.SimpleHTTPRequestHandler) as s:
    s.serve_forever()
"""


@pytest.fixture
def nodemon(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder where `nodemon srv.js` (a long runner corral knows, no port) runs a server on
    a port of its own choosing."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "server.py").write_text(SERVER)
    program = bin_dir / "nodemon"
    program.write_text(f"#!/bin/sh\nexec {sys.executable} {bin_dir / 'server.py'}\n")
    program.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    app = tmp_path / "app"
    app.mkdir()
    return app


def _job(job_id: str) -> dict[str, Any]:
    rows: list[dict[str, Any]] = corral_json("ls")["data"]
    return next(r for r in rows if r["id"] == job_id)


def _group(pgid: int) -> list[int]:
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit() and int(name) != pgid:
            try:
                if os.getpgid(int(name)) == pgid and alive(int(name)):
                    found.append(int(name))
            except OSError:
                continue
    return found


@pytest.fixture
def reap_group() -> Iterator[list[int]]:
    """Group ids whose processes the test kills afterwards (by pid): processes that cleared
    their environment carry no CORRAL_HOME for the autouse reaper to find."""
    groups: list[int] = []
    yield groups
    for pgid in groups:
        for pid in _group(pgid):
            os.kill(pid, signal.SIGKILL)


def test_a_duplicate_is_refused_naming_the_port_the_job_holds(nodemon: Path) -> None:
    job = start_job("nodemon srv.js", cwd=nodemon)
    port = wait_for(lambda: _job(job["id"])["ports"], what="the server's port")[0]
    refused = corral("run", "-d", "-c", "nodemon srv.js", cwd=nodemon)
    assert refused.returncode == 1
    assert refused.stderr.startswith("corral refused: ")
    assert f"http://localhost:{port}" in refused.stderr and "no port open" not in refused.stderr
    out = corral("explain", "--json", "--cwd", str(nodemon), "--", "nodemon srv.js").stdout
    explained = json.loads(out)["data"]
    assert explained["action"] == "refuse"  # the hook's verdict, the same words
    assert f"http://localhost:{port}" in explained["refusal"]

    from corral.service.claude import session_briefing

    briefing = session_briefing(str(nodemon), "another-session")
    assert briefing is not None and f"http://localhost:{port}" in briefing
    corral("stop", job["id"], check=True)


def test_another_line_asking_for_a_job_s_port_is_refused_with_the_url(
    nodemon: Path, tmp_path: Path
) -> None:
    job = start_job("nodemon srv.js", cwd=nodemon)
    port = wait_for(lambda: _job(job["id"])["ports"], what="the server's port")[0]
    other = tmp_path / "other"
    other.mkdir()
    line = f"{sys.executable} -m http.server {port} --bind 127.0.0.1"
    refused = corral("run", "-d", "-c", line, cwd=other)
    assert refused.returncode == 1 and refused.stderr.startswith("corral refused: ")
    assert job["id"] in refused.stderr and f"http://localhost:{port}" in refused.stderr
    corral("stop", job["id"], check=True)


def test_a_job_whose_supervisor_died_is_unsupervised_refused_and_stoppable(
    nodemon: Path,
) -> None:
    job = start_job("nodemon srv.js", cwd=nodemon)
    port = wait_for(lambda: _job(job["id"])["ports"], what="the server's port")[0]
    os.kill(job["pid"], signal.SIGKILL)
    wait_for(lambda: not alive(job["pid"]), what="the supervisor's death")
    row = _job(job["id"])
    assert row["state"] == "unsupervised"
    assert row["ports"] == [port] and row["processes"] >= 1
    assert "unsupervised" in corral("ls", cwd=nodemon).stdout
    refused = corral("run", "-d", "-c", "nodemon srv.js", cwd=nodemon)
    assert refused.returncode == 1 and f"http://localhost:{port}" in refused.stderr
    stopped = corral_json("stop", job["id"])
    assert stopped["data"][0]["ok"] is True
    results = [t["result"] for t in stopped["data"][0]["targets"]]
    assert results[0] == "already_exited" and set(results[1:]) == {"terminated"}
    assert not [r for r in corral_json("ls")["data"] if r["id"] == job["id"]]


def test_processes_that_cleared_their_environment_are_unproven_not_stopped(
    reap_group: list[int],
) -> None:
    job = start_job("env -i sleep 300 & env -i sleep 301 & wait")
    reap_group.append(job["pid"])
    wait_for(lambda: len(_group(job["pid"])) >= 3, what="the job's processes")
    unmarked = [p for p in _group(job["pid"]) if b"CORRAL_JOB=" not in _environ(p)]
    assert len(unmarked) == 2
    os.kill(job["pid"], signal.SIGKILL)
    wait_for(lambda: not alive(job["pid"]), what="the supervisor's death")
    stop = corral("stop", "--json", job["id"])
    assert stop.returncode == 1
    outcome = json.loads(stop.stdout)["data"][0]
    assert outcome["ok"] is False and outcome["state"] == "unsupervised"
    by_pid = {t["pid"]: t["result"] for t in outcome["targets"]}
    assert {by_pid[p] for p in unmarked} == {"unproven"}
    assert all(alive(p) for p in unmarked)  # never signalled
    row = _job(job["id"])  # still listed, with what is left
    assert row["state"] == "unsupervised" and row["processes"] == 2


def _environ(pid: int) -> bytes:
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            return f.read()
    except OSError:
        return b""
