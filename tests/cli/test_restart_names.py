"""Names (`run --name`) and `corral restart`."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tests.helpers import alive, corral, corral_json, free_port


def test_a_name_is_unique_among_running_jobs_of_a_project(
    corral_home: Path, tmp_path: Path
) -> None:
    other = tmp_path / "other"
    other.mkdir()
    (tmp_path / ".git").mkdir()  # one project; `other` inside it
    first = corral("run", "-d", "--name", "web", "-c", "sleep 60", cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    again = corral("run", "-d", "--name", "web", "-c", "sleep 61", cwd=other)
    assert again.returncode == 1
    assert "the name 'web' is taken by running job" in again.stderr
    assert corral("run", "--name", "web", "-c", "true", cwd=tmp_path).returncode == 1
    elsewhere = tmp_path.parent / f"{tmp_path.name}-elsewhere"
    elsewhere.mkdir()
    assert corral("run", "-d", "--name", "web", "-c", "sleep 62", cwd=elsewhere).returncode == 0
    assert corral("run", "-d", "--name", "bad name", "-c", "true").returncode == 2
    corral("stop", "--all", check=True)
    assert corral("run", "-d", "--name", "web", "-c", "sleep 63", cwd=tmp_path).returncode == 0
    corral("stop", "web", check=True)


def test_every_command_takes_a_name(corral_home: Path) -> None:
    job = corral_json("run", "-d", "--name", "sleeper", "-c", "echo hi; sleep 60")["data"]
    assert [j["name"] for j in corral_json("ls")["data"]] == ["sleeper"]
    assert "sleeper" in corral("ls").stdout
    assert corral("logs", "sleeper").stdout == "hi\n"
    assert corral("stop", "sleeper").returncode == 0
    assert not alive(job["pid"])


def test_restart_stops_and_starts_the_same_line(corral_home: Path, tmp_path: Path) -> None:
    port = free_port()
    line = f"echo serving; exec {sys.executable} -m http.server {port} --bind 127.0.0.1"
    job = corral_json("run", "-d", "--name", "api", "--ready", "port", "-c", line)["data"]
    assert job["ready"]["url"] == f"http://localhost:{port}"
    result = corral("restart", "api", "--ready", "port", "--json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)["data"]
    assert data["old_id"] == job["id"]
    assert [t["result"] for t in data["stop"]["targets"]] == ["terminated"]
    new = data["start"]
    assert new["id"] != job["id"] and new["name"] == "api"
    assert new["ready"]["url"] == f"http://localhost:{port}"
    assert not alive(job["pid"]) and alive(new["pid"])
    listed = [j for j in corral_json("ls")["data"] if j["state"] == "running"]
    assert [(j["id"], j["cwd"], j["command"]) for j in listed] == [(new["id"], job_cwd(job), line)]
    human = corral("restart", "api", "--ready", "port:" + str(port))
    assert human.returncode == 0 and f"ready: http://localhost:{port}" in human.stdout
    corral("stop", "api", check=True)


def job_cwd(job: dict[str, object]) -> str:
    import os

    return os.getcwd()


def test_restart_of_a_failed_job_runs_it_again(corral_home: Path) -> None:
    first = corral("run", "-d", "--name", "flaky", "-c", "echo try; exit 4")
    assert first.returncode == 1
    again = corral("restart", "flaky")
    assert again.returncode == 1 and "exited with code 4" in again.stderr
    assert corral("logs", "flaky").stdout == "try\n"


def test_restart_refuses_a_line_it_does_not_know_exactly(corral_home: Path) -> None:
    corral("run", "-d", "--name", "secret", "-c", "echo x --password hunter2; exit 1")
    result = corral("restart", "secret")
    assert result.returncode == 1 and "start it again with `corral run`" in result.stderr


def test_a_task_mode_job_restarts_detached_and_says_so(corral_home: Path) -> None:
    """A task-mode job ends with the shell that launched it; `restart` cannot be that shell,
    so the new job is detached: the answer says so (human and JSON) and `ls` shows it."""
    import subprocess

    from tests.helpers import LAUNCHER, wait_for

    task = subprocess.Popen(
        [sys.executable, "-I", "-S", str(LAUNCHER), "--task", "--meta", "name=sleepy", "--",
         "sleep 60"],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        wait_for(lambda: [j for j in corral_json("ls")["data"] if j.get("name") == "sleepy"])
        human = corral("restart", "sleepy")
        assert human.returncode == 0, human.stderr
        assert (
            "restarted detached: the old job ran in task mode (it ended with the shell that "
            "launched it); the new one runs until `corral stop sleepy`"
        ) in human.stdout, human.stdout
        again = corral_json("restart", "sleepy")["data"]  # now detached: no note
        assert again["note"] is None and again["start"]["mode"] == "detached", again
        listed = [j for j in corral_json("ls")["data"] if j["state"] == "running"]
        assert [j["mode"] for j in listed] == ["detached"], listed
    finally:
        corral("stop", "--all")
        task.wait(timeout=30)
