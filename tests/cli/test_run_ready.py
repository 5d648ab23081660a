"""`corral run -d` waits until the job is ready or says why it failed; crashes stay in `ls`."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

from tests.helpers import corral, corral_json, free_port, job_pids, wait_for

SERVER = f"{sys.executable} -m http.server"


def _job(data: dict[str, object], job_id: str) -> dict[str, object]:
    jobs = [j for j in data["data"] if j["id"] == job_id]  # type: ignore[attr-defined]
    assert len(jobs) == 1, data
    return jobs[0]  # type: ignore[no-any-return]


def test_a_job_that_fails_at_once_is_reported_with_its_output(corral_home: Path) -> None:
    result = corral("run", "-d", "-c", "echo boom; exit 3")
    assert result.returncode == 1, result
    assert "boom" in result.stderr
    assert "exited with code 3" in result.stderr
    job_id = re.search(r"started job ([0-9a-f]{8})", result.stdout).group(1)  # type: ignore[union-attr]
    listed = corral("ls").stdout
    assert job_id in listed and "failed (3)" in listed
    data = corral_json("ls")
    job = next(j for j in data["data"] if j["id"].startswith(job_id))
    assert job["exit_code"] == 3 and job["ended_at"] and job["log"]
    assert corral("logs", job_id).stdout == "boom\n"


def test_a_killed_job_is_listed_as_killed(corral_home: Path) -> None:
    result = corral("run", "-d", "--json", "-c", "echo dying; kill -9 $$")
    assert result.returncode == 1
    job_id = json.loads(result.stdout)["data"]["id"]
    assert "killed by signal 9" in json.loads(result.stdout)["data"]["ready"]["reason"]
    row = [line for line in corral("ls").stdout.splitlines() if line.startswith(job_id[:8])]
    assert row and " killed " in row[0]


def test_a_stopped_job_leaves_plain_ls(corral_home: Path) -> None:
    job = corral_json("run", "-d", "-c", "sleep 60")["data"]
    assert job["ready"]["ready"] is True  # `none`: alive after the quick check
    corral("stop", job["id"], check=True)
    assert job["id"][:8] not in corral("ls").stdout


def test_a_job_killed_after_the_grace_of_its_stop_is_not_a_failure(corral_home: Path) -> None:
    """A stop by request that had to SIGKILL (the job ignored SIGTERM) is recorded `killed`
    with signal 9: not a failure, whatever the surface (core.outcomes.failed)."""
    from corral.service.jobs import list_jobs

    # the job's own process can only end by the SIGKILL: a shell waiting for its child could
    # end by itself (status 137) between the child's kill and its own on a loaded machine
    line = "trap '' TERM; sleep 300 & exec sleep 301"
    job = corral_json("run", "-d", "--grace", "0.5", "-c", line)["data"]
    # the start returns once the job lived through the quick check, which says nothing of
    # how far its shell got: a stop before its `trap` would end it by SIGTERM. Its second
    # process exists only after the fork, which comes after the trap.
    wait_for(lambda: len(job_pids(job["id"])) >= 2, what="the job past its trap")
    corral("stop", job["id"], check=True)
    (view,) = [j for j in list_jobs(include_finished=True).jobs if j.id == job["id"]]
    assert (view.state, view.signal) == ("killed", 9), view
    assert not view.failed
    assert job["id"][:8] not in corral("ls").stdout  # plain `ls` shows failures only


def test_a_job_that_finishes_well_at_once_is_fine(corral_home: Path) -> None:
    result = corral("run", "-d", "-c", "echo done")
    assert result.returncode == 0, result.stderr
    assert "finished: exited with code 0" in result.stdout
    assert "no jobs" in corral("ls").stdout


def test_ready_port_waits_for_the_port_the_job_opens(corral_home: Path) -> None:
    line = f"sleep 0.3; exec {SERVER} 0 --bind 127.0.0.1"
    result = corral("run", "-d", "--ready", "port", "-c", line)
    assert result.returncode == 0, result.stderr
    port = int(re.search(r"^ready: http://localhost:(\d+)$", result.stdout, re.M).group(1))  # type: ignore[union-attr]
    job_id = re.search(r"started job ([0-9a-f]{8})", result.stdout).group(1)  # type: ignore[union-attr]
    job = next(j for j in corral_json("ls")["data"] if j["id"].startswith(job_id))
    assert job["ports"] == [port]
    corral("stop", job_id, check=True)


def test_a_known_server_waits_for_its_port_by_default(corral_home: Path) -> None:
    port = free_port()
    result = corral("run", "-d", "--", *SERVER.split(), str(port), "--bind", "127.0.0.1")
    assert result.returncode == 0, result.stderr
    assert f"ready: http://localhost:{port}\n" in result.stdout
    corral("stop", "--all", check=True)


def test_ready_http_and_log(corral_home: Path) -> None:
    port = free_port()
    line = f"echo warming; sleep 0.2; echo listening now; exec {SERVER} {port} --bind 127.0.0.1"
    url = f"http://127.0.0.1:{port}/"
    result = corral("run", "-d", "--json", "--ready", url, "-c", line)
    ready = json.loads(result.stdout)["data"]["ready"]
    assert (result.returncode, ready["ready"], ready["url"]) == (0, True, url)
    corral("stop", "--all", check=True)
    result = corral("run", "-d", "--json", "--ready", "log:listening \\w+", "-c", line)
    ready = json.loads(result.stdout)["data"]["ready"]
    assert (result.returncode, ready["ready"], ready["spec"]) == (0, True, "log:listening \\w+")
    corral("stop", "--all", check=True)


def test_not_ready_in_time_fails_and_leaves_it_running(corral_home: Path) -> None:
    # the timeout must leave the job time to print its line on a loaded machine: the tail
    # shown is what it had written when the wait ended
    result = corral(
        "run", "-d", "--ready", "port", "--ready-timeout", "1.5", "-c", "echo waiting; sleep 60"
    )
    assert result.returncode == 1
    assert "not ready after 1.5 s" in result.stderr and "waiting" in result.stderr
    assert "running" in corral("ls").stdout
    corral("stop", "--all", check=True)


def test_a_server_that_crashes_before_ready_fails(corral_home: Path) -> None:
    result = corral("run", "-d", "--ready", "port", "-c", "echo 'Error: no such script'; exit 1")
    assert result.returncode == 1
    assert "exited with code 1" in result.stderr and "Error: no such script" in result.stderr


@pytest.mark.parametrize("spec", ["port:0", "port:x", "tcp", "log:(", "http://"])
def test_bad_ready_specs_are_usage_errors(spec: str) -> None:
    assert corral("run", "-d", "--ready", spec, "-c", "true").returncode == 2


def test_ready_goes_with_detached() -> None:
    assert corral("run", "--ready", "port", "-c", "true").returncode == 2
