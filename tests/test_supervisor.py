"""The supervisor with real processes: groups, escapes, signals, shells, isolation."""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from tests.helpers import (
    LAUNCHER,
    alive,
    corral,
    job_pids,
    pgid_of,
    record,
    start_job,
    wait_for,
)


def sleeps(token: str) -> list[int]:
    out = []
    for pid in job_pids(token):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if f.read().startswith(b"sleep"):
                    out.append(pid)
        except OSError:
            continue
    return out


def new_token() -> str:
    """A job id of our own: job_pids() finds a token's processes machine-wide, so a fixed
    one would also find the same test's job in another suite running side by side."""
    return uuid.uuid4().hex


def sup_argv(line: str, *opts: str) -> list[str]:
    return [sys.executable, "-I", "-S", str(LAUNCHER), *opts, "--", line]


def test_escaped_descendants_are_stopped(corral_home: Path) -> None:
    # setsid escapes the group; the subshell's `&` double-forks (reparented to the subreaper)
    job = start_job("setsid sleep 300 & (sleep 301 &); sleep 302")
    pids = wait_for(lambda: len(sleeps(job["id"])) == 3 and job_pids(job["id"]), what="3 sleeps")
    sessions = {os.getsid(p) for p in pids}
    assert len(sessions) >= 2, "setsid should have made a new session"
    result = corral("stop", job["id"][:8])
    assert result.returncode == 0, result.stdout + result.stderr
    assert "terminated" in result.stdout
    assert not [p for p in pids if alive(p)]
    assert record(corral_home, job["id"])["state"] == "stopped"


def test_job_ignoring_sigterm_is_killed_after_grace(corral_home: Path) -> None:
    job = start_job("trap '' TERM; sleep 300 & trap '' TERM; wait", "--grace", "0.5")
    wait_for(lambda: len(job_pids(job["id"])) >= 2, what="job start")
    pids = job_pids(job["id"])
    started = time.monotonic()
    result = corral("stop", job["id"])
    elapsed = time.monotonic() - started
    assert result.returncode == 0, result.stdout
    assert elapsed >= 0.5  # it waited for the grace period before SIGKILL
    assert not [p for p in pids if alive(p)]
    assert record(corral_home, job["id"])["state"] == "killed"


def test_exit_status_and_output_pass_through(corral_home: Path) -> None:
    result = subprocess.run(sup_argv("echo out; echo err >&2; exit 7"), capture_output=True)
    assert (result.returncode, result.stdout, result.stderr) == (7, b"out\n", b"err\n")
    signalled = subprocess.run(sup_argv("kill -TERM $$"), capture_output=True)
    assert signalled.returncode == -signal.SIGTERM


def test_ledger_record_is_private_and_complete(corral_home: Path) -> None:
    token = new_token()
    subprocess.run(sup_argv("true", "--job", token, "--session", "s1"), check=True)
    ledger = corral_home / "ledger"
    assert ledger.stat().st_mode & 0o777 == 0o700
    path = ledger / f"{token}.json"
    assert path.stat().st_mode & 0o777 == 0o600
    rec = record(corral_home, token)
    for key in (
        "pid",
        "started_at",
        "id",
        "pgid",
        "mode",
        "session",
        "cwd",
        "command",
        "digest",
        "shell",
        "created_at",
        "ended_at",
        "state",
        "exit_code",
    ):
        assert key in rec
    assert rec["state"] == "exited" and rec["exit_code"] == 0 and rec["session"] == "s1"
    assert rec["pgid"] == rec["pid"]
    assert not list(ledger.glob("*.stop")), "the stop channel is removed at the end"
    assert not list(ledger.glob(".*tmp")), "no temporary file is left"


def test_shadowed_tools_and_python_hooks_cannot_run(corral_home: Path, tmp_path: Path) -> None:
    marker = tmp_path / "marker"
    evil = tmp_path / "evil"
    evil.mkdir()
    for name in ("ps", "kill", "sh", "bash", "python3", "setsid"):
        script = evil / name
        script.write_text(f"#!/bin/sh\necho {name} >> {marker}\n")
        script.chmod(0o755)
    (evil / "sitecustomize.py").write_text(f"open({str(marker)!r}, 'a').write('site\\n')\n")
    (evil / "usercustomize.py").write_text(f"open({str(marker)!r}, 'a').write('user\\n')\n")
    (evil / "startup.py").write_text(f"open({str(marker)!r}, 'a').write('startup\\n')\n")
    env = dict(
        os.environ,
        PATH=f"{evil}:{os.environ['PATH']}",
        PYTHONPATH=str(evil),
        PYTHONSTARTUP=str(evil / "startup.py"),
        PYTHONINSPECT="",
        SHELL="/bin/bash",
    )
    token = new_token()
    result = subprocess.run(
        sup_argv("echo fine; exit 3", "--job", token), env=env, capture_output=True, text=True
    )
    assert (result.returncode, result.stdout) == (3, "fine\n")
    assert record(corral_home, token)["state"] == "exited"
    assert not marker.exists(), marker.read_text()
    # and a stop goes through the real channel, not through a shadowed kill or ps
    job = start_job("sleep 300")
    stop = corral("stop", job["id"], env=dict(os.environ, PATH=env["PATH"]))
    assert stop.returncode == 0 and not marker.exists()


def test_inherited_job_control_cannot_move_the_job_out(corral_home: Path) -> None:
    # An exported SHELLOPTS with monitor on would give the job's `&` its own group.
    script = (
        "set -m -e; export SHELLOPTS; "
        f"exec {sys.executable} -m corral run -d --json -c 'sleep 300 & sleep 301 & wait'"
    )
    out = subprocess.run(["bash", "-c", script], capture_output=True, text=True, check=True)
    import json

    job = json.loads(out.stdout)["data"]
    pids = wait_for(lambda: len(job_pids(job["id"])) >= 3 and job_pids(job["id"]), what="start")
    assert {pgid_of(p) for p in pids} == {job["pid"]}
    assert corral("stop", job["id"]).returncode == 0
    assert not [p for p in pids if alive(p)]


@pytest.mark.parametrize("mode", ["task", "detached"])
def test_launching_shell_gone(corral_home: Path, mode: str) -> None:
    token = new_token()
    shell = subprocess.Popen(
        ["bash", "-c", shlex.join(sup_argv("sleep 300", "--job", token, f"--{mode}")) + " & wait"],
        stdout=subprocess.DEVNULL,
    )
    pids = wait_for(lambda: job_pids(token), what="job start")
    sup = record(corral_home, token)["pid"]
    shell.kill()
    shell.wait()
    if mode == "task":
        wait_for(lambda: not alive(sup), what="supervisor to stop the job")
        assert record(corral_home, token)["state"] == "stopped"
        assert not [p for p in pids if alive(p)]
    else:
        time.sleep(0.3)
        assert alive(sup) and all(alive(p) for p in pids)
        assert corral("stop", token).returncode == 0
        assert not alive(sup)


def test_sigterm_to_the_supervisor_stops_the_whole_job(corral_home: Path) -> None:
    job = start_job("sleep 300 & setsid sleep 301 & wait")
    pids = wait_for(lambda: len(job_pids(job["id"])) >= 3 and job_pids(job["id"]), what="start")
    os.kill(job["pid"], signal.SIGTERM)
    wait_for(lambda: not alive(job["pid"]), what="supervisor exit")
    assert not [p for p in pids if alive(p)]
    assert record(corral_home, job["id"])["state"] == "stopped"


def test_unwritable_ledger_runs_the_line_unsupervised(corral_home: Path, tmp_path: Path) -> None:
    blocked = tmp_path / "file-not-dir"
    blocked.write_text("")
    result = subprocess.run(
        sup_argv("echo still runs; exit 4", "--ledger", str(blocked / "x")),
        capture_output=True,
        text=True,
    )
    assert (result.returncode, result.stdout) == (4, "still runs\n")


def test_supervisor_releases_the_callers_output(corral_home: Path) -> None:
    # The line closes its stdout at once and lives on; a reader sees EOF without waiting
    # for the job (the supervisor holds no copy).
    token = new_token()
    proc = subprocess.Popen(
        sup_argv("exec >/dev/null 2>&1; sleep 300", "--job", token, "--detached"),
        stdout=subprocess.PIPE,
    )
    assert proc.stdout is not None
    started = time.monotonic()
    with proc.stdout:
        assert proc.stdout.read() == b""
    assert time.monotonic() - started < 60  # long before the job ends (and CI may be slow)
    assert corral("stop", token).returncode == 0
    proc.wait(timeout=10)


def test_usage_errors_exit_2() -> None:
    assert subprocess.run(sup_argv("true", "--grace", "x"), capture_output=True).returncode == 2
    assert subprocess.run([sys.executable, str(LAUNCHER)], capture_output=True).returncode == 2
