"""`corral run -d` honours the tmux backend: the job runs in a window of its own, is listed
with its tmux target, and `corral stop` ends it and closes the window."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.helpers import alive, corral, corral_json, free_port, job_pids, record, wait_for
from tests.tmux.conftest import TmuxEnv


def _start(*args: str, **kw: Any) -> dict[str, Any]:
    result = corral("run", "-d", "--json", *args, **kw)
    assert result.returncode == 0, result.stderr
    data: dict[str, Any] = json.loads(result.stdout)["data"]
    return data


def _stop_and_check(tmux_env: TmuxEnv, job: dict[str, Any]) -> None:
    pids = job_pids(job["id"])
    result = corral("stop", job["id"][:8])
    assert result.returncode == 0, result.stdout + result.stderr
    assert not [p for p in pids if alive(p)]
    wait_for(lambda: tmux_env.windows() == [], what="window closed")
    assert not alive(job["pid"])
    assert tmux_env.leftovers() == []


def test_detached_start_with_backend_tmux_runs_in_a_window(
    tmux_env: TmuxEnv, corral_home: Path
) -> None:
    job = _start("--backend", "tmux", "-c", "echo started; echo to-err >&2; sleep 300")
    assert (job["backend"], job["tmux"], job["supervised"]) == ("tmux", "my_project_x:echo", True)
    assert tmux_env.windows() == ["my_project_x:echo"]  # it keeps running: we returned
    assert alive(job["pid"])
    (listed,) = json.loads(corral("ls", "--json").stdout)["data"]
    assert (listed["id"], listed["mode"], listed["backend"], listed["tmux"]) == (
        job["id"],
        "detached",
        "tmux",
        "my_project_x:echo",
    )
    assert "tmux attach -t my_project_x" in corral("ls").stdout
    # the output is in the pane and in the log, as for a detached job without tmux
    log = Path(job["log"])
    wait_for(lambda: log.read_bytes() == b"started\nto-err\n", what="the job's log")

    # the tmux server draws what the pane's terminal got on its own schedule, after the log
    def pane() -> str:
        return tmux_env.tmux("capture-pane", "-p", "-t", "my_project_x:echo").stdout

    wait_for(lambda: "started" in pane() and "to-err" in pane(), what="the output in the pane")
    _stop_and_check(tmux_env, job)


def test_detached_start_follows_the_config_backend(tmux_env: TmuxEnv, corral_home: Path) -> None:
    (corral_home / "config.toml").write_text('backend = "tmux"\n')
    port = free_port()  # `corral run` refuses a port something on the machine holds
    # a known server waits for its port by default; this one never opens it
    job = _start("--ready", "none", "-c", f"vite --port {port} || sleep 300")
    assert (job["backend"], job["tmux"]) == ("tmux", f"my_project_x:vite-{port}")
    wait_for(lambda: len(job_pids(job["id"])) >= 1, what="job processes")
    # the config can be overridden per call
    plain = _start("--backend", "group", "-c", "sleep 301")
    assert (plain["backend"], plain["tmux"]) == ("group", None)
    assert tmux_env.windows() == [f"my_project_x:vite-{port}"]
    _stop_and_check(tmux_env, job)
    assert corral("stop", plain["id"]).returncode == 0


def test_a_detached_tmux_jobs_stdin_is_dev_null(tmux_env: TmuxEnv, corral_home: Path) -> None:
    job = _start("--backend", "tmux", "-c", "cat; echo cat-ended-$?; sleep 300")
    log = Path(job["log"])
    wait_for(lambda: log.read_bytes() == b"cat-ended-0\n", what="cat to meet EOF")
    _stop_and_check(tmux_env, job)


def test_detached_without_tmux_falls_back_with_one_warning(
    tmux_env: TmuxEnv, tmp_path: Path
) -> None:
    bare = tmp_path / "bin"
    bare.mkdir()
    (bare / "sleep").symlink_to("/usr/bin/sleep")
    env = {**os.environ, "PATH": str(bare)}
    result = corral("run", "-d", "--json", "--backend", "tmux", "-c", "sleep 300", env=env)
    assert result.returncode == 0
    job = json.loads(result.stdout)["data"]
    assert (job["backend"], job["tmux"], job["supervised"]) == ("group", None, True)
    assert result.stderr.count("\n") == 1
    assert "tmux backend unavailable" in result.stderr
    assert tmux_env.windows() == []
    assert corral("stop", job["id"]).returncode == 0
    assert not alive(job["pid"])
    assert tmux_env.leftovers() == []


def test_a_detached_line_that_uses_tmux_is_not_put_in_a_window(tmux_env: TmuxEnv) -> None:
    job = _start("--backend", "tmux", "-c", "tmux -V; sleep 300")
    assert (job["backend"], job["tmux"]) == ("group", None)
    assert tmux_env.windows() == []
    assert corral("stop", job["id"]).returncode == 0


SERVER = f"{sys.executable} -m http.server 0 --bind 127.0.0.1"


def test_a_second_copy_in_a_window_is_refused(tmux_env: TmuxEnv, corral_home: Path) -> None:
    job = _start("--backend", "tmux", "-c", SERVER)
    assert record(corral_home, job["id"])["identity"]
    refused = corral("run", "-d", "--backend", "tmux", "-c", SERVER)
    assert refused.returncode == 1 and f"corral stop {job['id']}" in refused.stderr
    assert len(tmux_env.windows()) == 1
    _stop_and_check(tmux_env, job)


def test_a_task_in_a_window_records_its_identity(tmux_env: TmuxEnv, corral_home: Path) -> None:
    task = subprocess.Popen(
        [sys.executable, "-m", "corral", "run", "--backend", "tmux", "-c", SERVER],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        (job,) = wait_for(lambda: corral_json("ls")["data"], what="the task's record")
        assert record(corral_home, job["id"])["identity"]
        explained = json.loads(corral("explain", "--json", "--", SERVER).stdout)["data"]
        assert explained["action"] == "refuse" and job["id"] in explained["refusal"]
        assert corral("stop", job["id"]).returncode == 0
    finally:
        task.kill()
        task.wait()
    wait_for(lambda: tmux_env.windows() == [], what="window closed")


def test_detached_start_that_cannot_be_recorded_starts_nothing_in_a_window(
    tmux_env: TmuxEnv, tmp_path: Path, corral_home: Path
) -> None:
    """As with the default backend: no job nobody can track, unless --allow-unsupervised."""
    (corral_home / "ledger").write_text("a file where the ledger folder should be")
    marker = tmp_path / "ran"
    result = corral("run", "-d", "--backend", "tmux", "-c", f"touch {marker}; sleep 300")
    assert result.returncode == 1, (result.stdout, result.stderr)
    assert "nothing was started" in result.stderr and "--allow-unsupervised" in result.stderr
    assert not marker.exists()
