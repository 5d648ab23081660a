"""A tmux job outlives its wrapper, stops with `corral stop`, and shares its project's session."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path

from tests.helpers import alive, corral, job_pids, wait_for
from tests.tmux.conftest import TmuxEnv, default_argv, wrapper_argv


def _start(line: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        wrapper_argv(line),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
    )


def _records(home: Path) -> list[dict[str, object]]:
    return [json.loads(p.read_text()) for p in sorted((home / "ledger").glob("*.json"))]


def _running_record(home: Path, count: int = 1) -> list[dict[str, object]]:
    def ready() -> list[dict[str, object]]:
        found = [r for r in _records(home) if r["state"] == "running"]
        return found if len(found) == count else []

    found: list[dict[str, object]] = wait_for(ready, what=f"{count} running job(s)")
    return found


def test_killed_wrapper_leaves_window_and_job_then_stop_ends_both(
    tmux_env: TmuxEnv, corral_home: Path
) -> None:
    wrapper = _start("echo ready; sleep 300")
    assert wrapper.stdout is not None
    assert wrapper.stdout.readline() == b"ready\n"  # output arrives as it is produced
    (record,) = _running_record(corral_home)
    token = str(record["id"])
    wrapper.kill()
    out, _ = wrapper.communicate()
    assert out == b""
    job = wait_for(lambda: job_pids(token), what="job processes")
    assert all(alive(p) for p in job)
    assert tmux_env.windows() == ["my_project_x:echo"]

    listing = json.loads(corral("ls", "--json").stdout)["data"]
    assert [(j["backend"], j["tmux"]) for j in listing] == [("tmux", "my_project_x:echo")]
    assert "tmux attach -t my_project_x" in corral("ls").stdout

    result = corral("stop", token[:8])
    assert result.returncode == 0, result.stdout + result.stderr
    assert not [p for p in job if alive(p)]
    wait_for(lambda: tmux_env.windows() == [], what="window closed")
    assert not job_pids(token)
    assert corral("clean").returncode == 0
    assert tmux_env.leftovers() == []  # the killed wrapper's private folder is gone too


def test_two_jobs_in_one_project_share_a_session(tmux_env: TmuxEnv, corral_home: Path) -> None:
    first = _start("vite --port 5173; sleep 300")
    second = _start("vite --port 5173; sleep 300")
    try:
        _running_record(corral_home, count=2)
        wait_for(lambda: len(tmux_env.windows()) == 2, what="two windows")
        sessions = tmux_env.tmux("list-sessions", "-F", "#{session_name}").stdout.split()
        assert sessions == ["my_project_x"]
        names = sorted(w.split(":", 1)[1] for w in tmux_env.windows())
        assert len(set(names)) == 2
        assert names[0].startswith("vite") and names[1].startswith("vite")
        ids = [str(r["id"])[:8] for r in _records(corral_home)]
        assert corral("stop", *ids).returncode == 0
        assert first.wait(timeout=15) != 0 and second.wait(timeout=15) != 0
        wait_for(lambda: tmux_env.windows() == [], what="windows closed")
    finally:
        for p in (first, second):
            p.kill()
            p.communicate()


def test_sigint_reaches_the_job_as_ctrl_c(tmux_env: TmuxEnv, corral_home: Path) -> None:
    line = "trap 'echo got-int; exit 42' INT; echo ready; while :; do sleep 0.05; done"
    wrapper = _start(line)
    assert wrapper.stdout is not None
    assert wrapper.stdout.readline() == b"ready\n"
    wrapper.send_signal(signal.SIGINT)
    out, _ = wrapper.communicate(timeout=15)
    assert out == b"got-int\n"
    assert wrapper.returncode == 42
    # the pane's exit reaches the tmux server on its own schedule: the window closes soon after
    wait_for(lambda: tmux_env.windows() == [], what="window closed")
    assert tmux_env.leftovers() == []


def test_sigterm_to_the_wrapper_removes_its_folder_and_keeps_the_job(
    tmux_env: TmuxEnv, corral_home: Path
) -> None:
    wrapper = _start("echo ready; sleep 300")
    assert wrapper.stdout is not None
    assert wrapper.stdout.readline() == b"ready\n"
    (record,) = _running_record(corral_home)
    wrapper.terminate()
    wrapper.communicate(timeout=10)
    assert wrapper.returncode == -signal.SIGTERM
    assert tmux_env.leftovers() == []
    assert tmux_env.windows() == ["my_project_x:echo"]
    assert job_pids(str(record["id"]))
    assert corral("stop", str(record["id"])).returncode == 0
    wait_for(lambda: tmux_env.windows() == [], what="window closed")


def test_a_line_that_uses_tmux_is_not_wrapped_again(tmux_env: TmuxEnv) -> None:
    result = subprocess.run(
        wrapper_argv("tmux -V; echo $TMUX_PANE"), capture_output=True, timeout=30
    )
    assert result.returncode == 0
    assert result.stdout.startswith(b"tmux ")
    assert tmux_env.windows() == []


def test_corral_run_backend_tmux_and_config_default(tmux_env: TmuxEnv, corral_home: Path) -> None:
    result = corral("run", "--backend", "tmux", "-c", "echo via-cli; exit 3")
    assert (result.returncode, result.stdout) == (3, "via-cli\n")
    (corral_home / "config.toml").write_text('backend = "tmux"\n')
    result = corral("run", "-c", "echo via-config")
    assert (result.returncode, result.stdout) == (0, "via-config\n")
    assert {r["backend"] for r in _records(corral_home)} == {"tmux"}


def test_keep_windows_keeps_a_finished_jobs_window(tmux_env: TmuxEnv, corral_home: Path) -> None:
    (corral_home / "config.toml").write_text("[tmux]\nkeep_windows = true\n")
    result = subprocess.run(wrapper_argv("echo kept"), capture_output=True, timeout=30)
    assert (result.returncode, result.stdout) == (0, b"kept\n")
    assert tmux_env.windows() == ["my_project_x:echo"]
    (record,) = _records(corral_home)
    assert record["state"] == "exited"
    # `corral stop` of the finished job closes the kept window
    assert corral("stop", str(record["id"])).returncode == 0
    wait_for(lambda: tmux_env.windows() == [], what="kept window closed")


def test_fifty_runs_leave_no_temporary_files(tmux_env: TmuxEnv, corral_home: Path) -> None:
    killed = []
    for i in range(50):
        if i % 10 == 9:  # every tenth wrapper is killed while its job runs
            wrapper = _start(f"echo run{i}; sleep 300")
            assert wrapper.stdout is not None
            assert wrapper.stdout.readline() == f"run{i}\n".encode()
            wrapper.kill()
            wrapper.communicate()
            killed.append(i)
        else:
            result = subprocess.run(wrapper_argv(f"echo run{i}"), capture_output=True, timeout=30)
            assert result.stdout == f"run{i}\n".encode()
    running = [str(r["id"]) for r in _records(corral_home) if r["state"] == "running"]
    assert len(running) == len(killed)
    # the last killed wrapper's folder is still there; the others were removed by later runs
    assert len(tmux_env.leftovers()) == 1
    assert corral("stop", "--all").returncode == 0
    assert corral("clean").returncode == 0
    assert tmux_env.leftovers() == []
    wait_for(lambda: tmux_env.windows() == [], what="windows closed")
    assert os.listdir(tmux_env.tmpdir) == []


def test_tmux_missing_falls_back_with_one_warning(tmux_env: TmuxEnv, tmp_path: Path) -> None:
    bare = tmp_path / "bin"
    bare.mkdir()
    for tool in ("seq", "head", "tr"):  # a PATH with the line's tools but no tmux
        (bare / tool).symlink_to(f"/usr/bin/{tool}")
    env = {**os.environ, "PATH": str(bare)}
    line = "seq 1 50; echo err >&2; exit 6"
    expected = subprocess.run(default_argv(line), capture_output=True, env=env, timeout=30)
    got = subprocess.run(wrapper_argv(line), capture_output=True, env=env, timeout=30)
    assert (got.returncode, got.stdout) == (expected.returncode, expected.stdout)
    assert expected.returncode == 6
    warning, rest = got.stderr.split(b"\n", 1)
    assert warning.startswith(b"corral: tmux backend unavailable")
    assert b"default backend" in warning
    assert rest == expected.stderr == b"err\n"
    assert tmux_env.leftovers() == []


def test_unreachable_server_falls_back(tmux_env: TmuxEnv, tmp_path: Path) -> None:
    # a socket whose folder does not exist: tmux cannot create (or reach) the server
    env = {**os.environ, "CORRAL_TMUX_SOCKET": "no-such-folder/socket"}
    got = subprocess.run(wrapper_argv("echo still-runs"), capture_output=True, env=env, timeout=30)
    assert (got.returncode, got.stdout) == (0, b"still-runs\n")
    assert got.stderr.count(b"\n") == 1
    assert b"tmux backend unavailable" in got.stderr
    assert tmux_env.leftovers() == []


def test_ctrl_c_typed_in_the_pane_interrupts_the_job(tmux_env: TmuxEnv, corral_home: Path) -> None:
    line = "trap 'echo got-int; exit 42' INT; echo ready; while :; do sleep 0.05; done"
    wrapper = _start(line)
    assert wrapper.stdout is not None
    assert wrapper.stdout.readline() == b"ready\n"
    (window,) = tmux_env.windows()
    assert tmux_env.tmux("send-keys", "-t", window, "C-c").returncode == 0
    out, _ = wrapper.communicate(timeout=15)
    assert (out, wrapper.returncode) == (b"got-int\n", 42)


def test_closing_the_window_stops_the_job(tmux_env: TmuxEnv, corral_home: Path) -> None:
    wrapper = _start("echo ready; sleep 300")
    assert wrapper.stdout is not None
    assert wrapper.stdout.readline() == b"ready\n"
    (record,) = _running_record(corral_home)
    job = job_pids(str(record["id"]))
    (window,) = tmux_env.windows()
    assert tmux_env.tmux("kill-window", "-t", window).returncode == 0
    wrapper.communicate(timeout=15)
    assert wrapper.returncode != 0
    wait_for(lambda: not [p for p in job if alive(p)], what="the job stopped")
    (record,) = _records(corral_home)
    assert record["state"] in ("stopped", "killed")
    assert tmux_env.leftovers() == []
