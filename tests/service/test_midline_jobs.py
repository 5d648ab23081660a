"""A long runner sent to the background mid-line, rewritten in place by admission and run by
a real shell: `$!` is its supervisor, `kill $!` stops the whole job, and after the shell is
gone the job lives on, listed with its port and session, refused as a duplicate, stoppable."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from corral.service.admission import admit
from tests.helpers import (
    LAUNCHER,
    alive,
    corral,
    corral_json,
    free_port,
    job_pids,
    pids_with_env,
    record,
    wait_for,
)

WRAPPER = [sys.executable, "-I", "-S", str(LAUNCHER)]
SESSION = "midline-session-1"


def run_line(line: str, cwd: Path) -> tuple[str, subprocess.CompletedProcess[str]]:
    decision = admit(line, background=False, cwd=str(cwd), wrapper=WRAPPER)
    assert decision.action == "wrap" and decision.mode == "in-place", decision
    assert decision.rewritten is not None and decision.job_token is not None
    env = dict(os.environ, CLAUDE_CODE_SESSION_ID=SESSION, SHELL="/bin/bash")
    done = subprocess.run(
        ["bash", "-c", decision.rewritten], cwd=cwd, env=env, capture_output=True, text=True,
        timeout=60, check=False,
    )  # fmt: skip
    return decision.job_token, done


def test_the_job_outlives_the_shell_listed_refused_and_stoppable(
    tmp_path: Path, corral_home: Path
) -> None:
    port = free_port()
    server = f"python3 -m http.server {port} --bind 127.0.0.1"
    line = f"{server} > /dev/null 2>&1 & echo pid=$!; sleep 0.2"
    token, done = run_line(line, tmp_path)
    assert done.returncode == 0, done.stderr
    supervisor = int(done.stdout.split("pid=")[1].split()[0])
    listed = wait_for(
        lambda: [j for j in corral_json("ls")["data"] if j["id"] == token and j["ports"]],
        what="the in-place job listed with its port",
    )[0]
    assert record(corral_home, token)["front_pid"] == supervisor  # `$!` (front.py)
    assert listed["session"] == SESSION and port in listed["ports"], listed
    assert listed["state"] == "running"
    session = corral_json("ls", "--session", SESSION)["data"]
    assert [j["id"] for j in session if j.get("id")] == [token]
    again = admit(f"{server} & sleep 1", background=False, cwd=str(tmp_path), wrapper=WRAPPER)
    assert again.action == "refuse" and again.refusal is not None
    assert token[:8] in again.refusal and f"http://localhost:{port}" in again.refusal
    pids = job_pids(token)
    assert pids
    out = corral("stop", token[:8])
    assert out.returncode == 0 and "terminated" in out.stdout, out.stdout + out.stderr
    ended = [supervisor, listed["pid"], *pids]
    wait_for(lambda: not any(alive(p) for p in ended), what="the job's end")


def test_kill_bang_stops_the_whole_job_escapees_included(tmp_path: Path) -> None:
    sleeper = tmp_path / "corral-escapee"  # a copy of sleep: pgrep -x finds it by name
    sleeper.write_bytes(Path("/bin/sleep").read_bytes())
    sleeper.chmod(0o755)
    runner = tmp_path / "runner"
    runner.write_text(f"#!/bin/sh\nsetsid {sleeper} 300 &\n({sleeper} 301 &)\n{sleeper} 302\n")
    runner.chmod(0o755)
    line = "./runner & p=$!; sleep 1; kill $p; wait $p; echo rc=$?; "
    line += "pgrep -x corral-escapee || echo none-left"
    decision = admit(
        line, background=False, cwd=str(tmp_path), wrapper=WRAPPER, extra_runners=["./runner"]
    )
    assert decision.mode == "in-place" and decision.rewritten is not None, decision
    env = dict(os.environ, SHELL="/bin/bash")
    done = subprocess.run(
        ["bash", "-c", decision.rewritten], cwd=tmp_path, env=env, capture_output=True,
        text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.stdout.endswith("rc=143\nnone-left\n"), done.stdout + done.stderr


def test_two_jobs_of_one_line_are_each_only_their_own(tmp_path: Path) -> None:
    """Both stay in the calling shell's group; once the shell is gone that group has no
    leader, and it must not make either job the owner of the other's processes and port."""
    ports = [free_port(), free_port()]
    servers = [f"python3 -m http.server {p} --bind 127.0.0.1" for p in ports]
    for name in ("api", "web"):
        (tmp_path / name).mkdir()
    # `cd dir && SERVER &`: the background list holds the caller's stdout while the server
    # runs (so it does without corral), so the caller's output goes to a file here
    line = f"cd api && {servers[0]} & cd web && {servers[1]} & echo started"
    decision = admit(line, background=False, cwd=str(tmp_path), wrapper=WRAPPER)
    assert decision.action == "wrap" and decision.rewritten is not None, decision
    env = dict(os.environ, CLAUDE_CODE_SESSION_ID=SESSION, SHELL="/bin/bash")
    with open(tmp_path / "out", "wb") as out:
        subprocess.run(
            ["bash", "-c", decision.rewritten], cwd=tmp_path, env=env, stdout=out,
            stderr=out, timeout=60, check=True, start_new_session=True,  # as Claude Code's
        )  # fmt: skip
    jobs = wait_for(
        lambda: (
            (rows := [j for j in corral_json("ls")["data"] if j.get("id") and j["ports"]])
            and len(rows) == 2
            and rows
        ),
        what="both jobs listed with a port",
    )
    assert sorted(tuple(j["ports"]) for j in jobs) == sorted([(ports[0],), (ports[1],)]), jobs
    assert [j["processes"] for j in jobs] == [jobs[0]["processes"]] * 2, jobs
    again = admit(
        f"{servers[0]} & sleep 1", background=False, cwd=str(tmp_path / "api"), wrapper=WRAPPER
    )
    assert again.refusal is not None and f"localhost:{ports[0]}" in again.refusal
    assert str(ports[1]) not in again.refusal, again.refusal  # the other job's port
    corral("stop", "--all", check=True)


def _copy_of_sleep(folder: Path, name: str) -> Path:
    """A copy of sleep with a name of its own: pgrep -x finds it, and nothing else."""
    copy = folder / name
    copy.write_bytes(Path("/bin/sleep").read_bytes())
    copy.chmod(0o755)
    return copy


def _run_in_bash(line: str, cwd: Path, runners: list[str]) -> subprocess.CompletedProcess[str]:
    decision = admit(line, background=False, cwd=str(cwd), wrapper=WRAPPER, extra_runners=runners)
    assert decision.mode == "in-place" and decision.rewritten is not None, decision
    env = dict(os.environ, SHELL="/bin/bash")
    return subprocess.run(
        ["bash", "-c", decision.rewritten], cwd=cwd, env=env, capture_output=True, text=True,
        timeout=20, check=False,
    )  # fmt: skip


def test_kill_KILL_bang_kills_the_command_as_it_does_without_corral(
    tmp_path: Path, corral_home: Path
) -> None:
    """`kill -KILL $!` cannot be caught by the supervisor; the command dies with it anyway
    (as the command itself would have been killed), and `wait` reports the kill."""
    _copy_of_sleep(tmp_path, "corral-victim")
    line = "./corral-victim 300 > /dev/null 2>&1 & p=$!; sleep 0.5; kill -KILL $p; wait $p; "
    line += "echo rc=$?; sleep 0.3; pgrep -x corral-victim || echo none-left"
    for text in (line, None):  # as written, then rewritten: the same answer
        done = (
            subprocess.run(["bash", "-c", line], cwd=tmp_path, capture_output=True, text=True,
                           timeout=20, check=False)
            if text is not None
            else _run_in_bash(line, tmp_path, ["./corral-victim"])
        )  # fmt: skip
        assert done.stdout == "rc=137\nnone-left\n", (text is None, done.stdout + done.stderr)
    # The front (`$!`) was killed, so nothing waited for the keeper: it kills the command,
    # records the end and exits after the shell is gone; the teardown must not find it.
    home = f"CORRAL_HOME={corral_home}".encode()
    wait_for(lambda: not pids_with_env(home), what="the keeper's end")


def test_wait_bang_returns_when_the_command_ends_its_leftovers_stay_owned(
    tmp_path: Path,
) -> None:
    """Without corral `wait $!` returns when the backgrounded command exits, whatever it
    left running; so it does with corral, and what it left stays the job's: listed, and
    stopped by `corral stop`."""
    _copy_of_sleep(tmp_path, "corral-leftover")
    runner = tmp_path / "runner"
    runner.write_text("#!/bin/sh\n./corral-leftover 300 > /dev/null 2>&1 &\nexit 4\n")
    runner.chmod(0o755)
    line = "./runner & wait $!; echo rc=$?"
    done = _run_in_bash(line, tmp_path, ["./runner"])
    assert done.stdout == "rc=4\n", done.stdout + done.stderr
    leftover = subprocess.run(["pgrep", "-x", "corral-leftover"], capture_output=True, text=True)
    assert leftover.stdout.split(), "the leftover should still run"
    jobs = [j for j in corral_json("ls")["data"] if j.get("id") and j["state"] == "running"]
    assert len(jobs) == 1, jobs
    out = corral("stop", jobs[0]["id"][:8])
    assert out.returncode == 0 and "terminated" in out.stdout, out.stdout + out.stderr
    wait_for(lambda: not any(alive(int(p)) for p in leftover.stdout.split()), what="its end")
