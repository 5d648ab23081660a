"""The CLI as a user runs it: transparency of `corral run`, listing and its JSON contract."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import corral, corral_json, start_job

# At least 30 lines: quotes, pipes, redirects, unicode, binary and large output, statuses.
LINES = [
    "exit 7",
    "echo hello",
    "printf 'no newline'",
    "echo 'single quotes' \"double $((1+2))\"",
    "echo it\\'s",
    'echo "it\'s"',
    "echo $'tab\\there'",
    "echo a | tr a b",
    "printf 'b\\na\\nc\\n' | sort | head -n 2",
    "echo out; echo err >&2",
    "echo err >&2; exit 3",
    "echo x >| /dev/null; echo y",
    "ls /nonexistent-corral-path",
    "false",
    "true && echo yes || echo no",
    "false || echo fallback",
    "echo 'héllo wörld ✓ 日本語'",
    "printf '\\x00\\x01\\xff\\xfe'",
    "head -c 3000 /dev/zero | tr '\\0' 'z'",
    "seq 1 100000",
    "seq 1 5000 >&2",
    "for i in 1 2 3; do echo $i; done",
    "x=5; echo $((x*x))",
    "f() { echo in-f \"$@\"; }; f a 'b c'",
    "(echo sub; exit 9)",
    "{ echo grp; } 2>&1",
    "cat <<'EOF'\nheredoc $HOME\nEOF",
    'echo "$(echo nested)"',
    "set -e; false; echo never",
    "kill -TERM $$",
    "echo a; sleep 0.1 & wait; echo b",
    'echo "multi\nline"',
    "printf '%s\\n' \"a  b\" c",
    "test -d / && echo dir",
]


def test_corral_run_c_exit_status() -> None:
    assert corral("run", "-c", "exit 7").returncode == 7


@pytest.mark.parametrize("line", LINES)
def test_corral_run_is_byte_identical(line: str, corral_home: Path) -> None:
    env = {"SHELL": "/bin/bash"}
    import os

    full_env = dict(os.environ, **env)
    direct = subprocess.run(["bash", "-c", line], capture_output=True, env=full_env)
    via = subprocess.run(
        [sys.executable, "-m", "corral", "run", "-c", line], capture_output=True, env=full_env
    )
    assert (via.returncode, via.stdout, via.stderr) == (
        direct.returncode,
        direct.stdout,
        direct.stderr,
    )


def test_corral_run_with_argv(corral_home: Path) -> None:
    result = corral("run", "--", "printf", "%s|", "a b", "it's")
    assert (result.returncode, result.stdout) == (0, "a b|it's|")


def test_run_usage_errors() -> None:
    assert corral("run").returncode == 2
    assert corral("run", "-c", "true", "--", "true").returncode == 2
    assert corral("run", "--grace", "-1", "-c", "true").returncode == 2


def test_ls_json_contract(corral_home: Path, tmp_path: Path) -> None:
    job = start_job(
        f"exec {sys.executable} -m http.server 0 --bind 127.0.0.1", "--session", "sess-1"
    )
    from tests.helpers import wait_for

    data = wait_for(lambda: [j for j in corral_json("ls")["data"] if j["ports"]], what="port")
    row = data[0]
    assert set(row) >= {
        "id", "pid", "started_at", "state", "mode", "session", "cwd", "command", "ports",
        "processes", "cpu_percent", "rss_bytes", "age_seconds", "exit_code",
    }  # fmt: skip
    assert row["id"] == job["id"] and row["pid"] == job["pid"]
    assert row["state"] == "running" and row["mode"] == "detached"
    assert row["session"] == "sess-1" and row["processes"] == 1 and row["rss_bytes"] > 0
    assert isinstance(row["ports"][0], int) and row["exit_code"] is None
    assert corral_json("ls", "--session", "other")["data"] == []
    human = corral("ls")
    assert job["id"][:8] in human.stdout and f":{row['ports'][0]}" in human.stdout
    corral("stop", job["id"], check=True)
    finished = corral_json("ls", "--all")["data"]
    assert finished[0]["state"] == "stopped" and corral_json("ls")["data"] == []


def test_help_texts() -> None:
    for cmd in ("run", "ls", "stop", "clean"):
        result = corral(cmd, "--help")
        assert result.returncode == 0 and "usage:" in result.stdout
    top = corral("--help")
    assert top.returncode == 0 and "stop" in top.stdout


def test_output_into_a_closed_pipe_is_quiet() -> None:
    import subprocess
    import sys

    result = subprocess.run(
        ["bash", "-c", f"{sys.executable} -m corral explain --help | head -c 10"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    lines = subprocess.run(
        ["bash", "-c", f"{sys.executable} -m corral explain -- 'npm run dev' | true"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert len(result.stdout) == 10
    assert "Traceback" not in lines.stderr and "BrokenPipe" not in lines.stderr


def test_stop_by_identity_reaches_a_process_of_an_agent_session(tmp_path: Path) -> None:
    import os
    import subprocess
    import uuid

    from corral.adapters.identity import started_at

    marked = subprocess.Popen(
        ["sleep", "300"], env={**os.environ, "CLAUDE_CODE_SESSION_ID": str(uuid.uuid4())}
    )
    plain = subprocess.Popen(["sleep", "301"])
    try:
        from tests.helpers import execed, wait_for

        wait_for(lambda: execed(marked), what="exec")  # its marker shows once it exec'd
        when = started_at(marked.pid)
        assert when is not None
        out = corral_json("stop", "--pid", str(marked.pid), "--started-at", when)
        [target] = out["data"][0]["targets"]
        assert target["result"] == "terminated" and target["attribution"] == "env"
        assert marked.wait(timeout=10) == -15
        other = started_at(plain.pid)
        assert other is not None
        out = corral_json("stop", "--pid", str(plain.pid), "--started-at", other)
        assert out["data"][0]["targets"][0]["result"] == "unproven"
        assert plain.poll() is None
    finally:
        for proc in (marked, plain):
            proc.kill()
            proc.wait()


@pytest.mark.parametrize("variable", ["CLAUDE_CODE_SESSION_ID", "CODEX_THREAD_ID",
                                      "QWEN_CODE_SESSION_ID"])  # fmt: skip
def test_run_takes_the_agents_session_from_its_shell(variable: str, tmp_path: Path) -> None:
    # What a model runs itself (`corral run -d …` without --session) is its session's job:
    # each agent that has one gives its shells a session variable (issue 16).
    import os
    import uuid

    session = str(uuid.uuid4())
    env = {k: v for k, v in os.environ.items() if k not in ("CORRAL_SESSION",)}
    started = corral("run", "-d", "-c", "sleep 300", env={**env, variable: session})
    try:
        assert started.returncode == 0, started.stderr
        [listed] = corral_json("ls")["data"]
        assert listed["session"] == session
    finally:
        corral("stop", "--all", check=True)
