"""corral's hooks inside the real Claude Code CLI: what a user who installed corral sees.

The model is the scripted fake API; Bash, the hooks, the supervisor and the servers are real.
Every job a test starts is stopped through corral and checked gone.
"""

from __future__ import annotations

import json
import socket
import subprocess
from pathlib import Path
from typing import Any

import pytest

from corral.surfaces.claude import install as install_module
from tests.claude.fake_api import JSON, Text, ToolUse, Turn, block_text
from tests.claude.harness import ClaudeCLI
from tests.helpers import alive, corral, job_pids, private_home, wait_for

pytestmark = pytest.mark.slow


def install(claude: ClaudeCLI, permissions: JSON | None = None) -> None:
    """corral installed as a user would: `corral install claude --scope project`."""
    env = private_home(claude.home)
    result = corral("install", "claude", "--scope", "project", cwd=claude.project, env=env)
    assert result.returncode == 0, result.stderr
    settings = json.loads(claude.settings_path().read_text())
    # a project's settings are committed: they run `corral-hook` from PATH (the CLI's PATH
    # here has this venv's bin, where it is installed beside corral)
    assert install_module.hook_commands(portable=True)["pre-tool-use"] in json.dumps(settings)
    if permissions is not None:
        claude.write_settings({**settings, "permissions": permissions})


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port


def listening(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


def jobs(*args: str) -> list[dict[str, Any]]:
    result = corral("ls", "--all", *args, "--json")
    data: list[dict[str, Any]] = json.loads(result.stdout)["data"]
    return data


def records(home: Path) -> list[dict[str, Any]]:
    folder = home / "ledger"
    if not folder.exists():
        return []
    return [json.loads(p.read_text()) for p in sorted(folder.glob("*.json"))]


def bash(command: str, background: bool = False) -> ToolUse:
    tool_input: dict[str, Any] = {"command": command, "description": "run"}
    if background:
        tool_input["run_in_background"] = True
    return ToolUse("Bash", tool_input)


def test_background_server_is_supervised_listed_refused_twice_and_stopped(
    claude: ClaudeCLI, corral_home: Path
) -> None:
    install(claude)
    port = free_port()
    server = f"python3 -m http.server {port} --bind 127.0.0.1"
    wait = (
        f"until python3 -c \"import socket,sys; sys.exit(socket.socket().connect_ex(('127.0.0.1',"
        f' {port})))"; do sleep 0.1; done; corral ls --json'
    )
    script: list[Turn] = [
        bash(server, background=True),
        bash(server, background=True),  # the same server again: refused
        bash(wait),
        bash("corral stop --all --json"),
        Text("stopped"),
        Text("noted"),  # the background task's notification
    ]
    run = claude.run("start the server", script, timeout=180)
    assert run.returncode == 0, run.explain()
    started, refused, listed, stopped = run.tool_results()[:4]
    assert "running in background" in block_text(started), run.explain()
    assert refused["is_error"] is True, run.explain()
    [job] = records(corral_home)
    assert job["id"][:8] in block_text(refused) and "corral stop" in block_text(refused)
    [row] = [r for r in _ls_rows(block_text(listed)) if r["id"] == job["id"]]
    assert port in row["ports"] and row["state"] == "running" and row["mode"] == "task"
    assert row["session"] == run.result["session_id"]
    assert "terminated" in block_text(stopped) or "stopped" in block_text(stopped)
    assert records(corral_home)[0]["state"] == "stopped"
    assert not job_pids(job["id"]) and not listening(port)


def _ls_rows(text: str) -> list[dict[str, Any]]:
    data: list[dict[str, Any]] = json.loads(text[text.index("{") :])["data"]
    return data


def test_long_runner_and_trailing_ampersand_are_wrapped_unreadable_runs_as_typed(
    claude: ClaudeCLI, corral_home: Path
) -> None:
    install(claude)
    (claude.project / "package.json").write_text(
        json.dumps({"name": "p", "scripts": {"dev": "node -e \"console.log('dev-up')\""}})
    )
    unreadable = "echo a\\ \\ b && python3 -c 'print(2)'"
    script: list[Turn] = [
        bash("npm run dev"),
        bash("sleep 0.3 && echo later > later.txt &"),
        bash(unreadable),
        Text("done"),
    ]
    run = claude.run("go", script, timeout=180)
    assert run.returncode == 0, run.explain()
    dev, _, plain = run.tool_results()[:3]
    assert "dev-up" in block_text(dev), run.explain()
    by_command = {r["command"]: r for r in records(corral_home)}
    assert by_command["npm run dev"]["mode"] == "task"
    assert by_command["npm run dev"]["state"] == "exited"
    assert by_command["npm run dev"]["exit_code"] == 0
    detached = next(r for c, r in by_command.items() if c.startswith("sleep 0.3"))
    assert detached["mode"] == "detached"
    wait_for((claude.project / "later.txt").exists, 30, "the detached job's output")
    wait_for(lambda: not alive(detached["pid"]), 30, "the detached job to end")
    assert len(by_command) == 2, by_command  # the unreadable line was not recorded
    typed = subprocess.run(["bash", "-c", unreadable], capture_output=True, text=True, check=True)
    assert block_text(plain).strip() == typed.stdout.strip() == "a  b\n2"


@pytest.mark.parametrize("where", ["settings", "command line"])
def test_deny_rule_for_the_original_line_still_denies_it(
    claude: ClaudeCLI, corral_home: Path, where: str
) -> None:
    rule = "Bash(python3 -m http.server:*)"
    install(claude, {"deny": [rule]} if where == "settings" else None)
    args = ["--allowedTools", "Bash", "--output-format", "json"]
    if where == "command line":
        args += ["--disallowedTools", rule]
    port = free_port()
    script: list[Turn] = [bash(f"python3 -m http.server {port}", background=True), Text("ok")]
    run = claude.run("go", script, args=args, timeout=180)
    assert run.returncode == 0, run.explain()
    [result] = run.tool_results()
    assert result["is_error"] is True and "denied" in block_text(result), run.explain()
    assert records(corral_home) == [] and not listening(port)


DOUBLE_FORK = """\
import os, sys, time
if os.fork():
    os._exit(0)
os.setsid()
if os.fork():
    os._exit(0)
with open(sys.argv[1], "w") as f:
    f.write(str(os.getpid()))
time.sleep(300)
"""


def test_double_forked_job_outlives_the_cli_and_the_next_session_hears_of_it(
    claude: ClaudeCLI, corral_home: Path
) -> None:
    install(claude)
    (claude.project / "df.py").write_text(DOUBLE_FORK)
    run = claude.run("go", [bash("python3 df.py grandchild.pid &"), Text("started")], timeout=180)
    assert run.returncode == 0, run.explain()
    pid_file = claude.project / "grandchild.pid"
    wait_for(lambda: pid_file.exists() and pid_file.read_text(), 30, "the grandchild")
    grandchild = int(pid_file.read_text())
    try:
        [job] = [j for j in jobs() if j["state"] == "running"]
        assert job["mode"] == "detached" and job["processes"] >= 1
        assert alive(grandchild)
        again = claude.run("what runs here?", [Text("I see it")], timeout=180)
        assert again.returncode == 0, again.explain()
        first = json.dumps(again.api.main_requests()[0].body)
        assert f"job {job['id'][:8]}" in first and "df.py" in first, again.explain()
    finally:
        stop = corral("stop", "--all", "--json")
    assert stop.returncode == 0, stop.stdout + stop.stderr
    wait_for(lambda: not alive(grandchild), 30, "the double-forked grandchild to stop")
    assert not job_pids(job["id"])


def test_hook_is_silent_for_plain_lines(claude: ClaudeCLI, corral_home: Path) -> None:
    install(claude)
    run = claude.run("go", [bash("echo plain > p.txt"), Text("ok")], timeout=180)
    assert run.returncode == 0, run.explain()
    assert (claude.project / "p.txt").read_text() == "plain\n"
    assert records(corral_home) == []
    assert not (corral_home / "corral.log").exists()


STOP_UNSUPERVISED = """\
import json, subprocess, sys
rows = json.load(open(sys.argv[1]))["data"]["unsupervised"]
for row in rows:
    out = subprocess.run(["corral", "stop", "--pid", str(row["pid"]), "--started-at",
                          row["started_at"], "--json"], capture_output=True, text=True)
    print(row["pid"], row["attribution"], out.stdout.strip())
"""


def test_background_command_corral_could_not_read_is_listed_and_stopped_by_identity(
    claude: ClaudeCLI, corral_home: Path
) -> None:
    install(claude)
    (claude.project / "stop_unsupervised.py").write_text(STOP_UNSUPERVISED)
    unreadable = "sleep 300 && echo a\\ b"  # a backslash outside quotes: runs as typed
    script: list[Turn] = [
        bash(unreadable, background=True),
        bash("corral procs --json > procs.json && python3 stop_unsupervised.py procs.json"),
        Text("stopped"),
        Text("noted"),  # the background task's notification
    ]
    run = claude.run("go", script, timeout=180)
    assert run.returncode == 0, run.explain()
    assert records(corral_home) == []  # not supervised
    listed = json.loads((claude.project / "procs.json").read_text())["data"]["unsupervised"]
    sleeps = [r for r in listed if r["command"].startswith("sleep 300")]
    assert sleeps and all(r["attribution"] == "env" for r in sleeps), listed
    assert all(r["session"] == run.result["session_id"] for r in sleeps)
    stopped = block_text(run.tool_results()[1])
    assert '"terminated"' in stopped, run.explain()
    for row in sleeps:
        assert not alive(row["pid"])


def test_the_model_is_told_the_url_of_a_background_server_and_its_log_is_kept(
    claude: ClaudeCLI, corral_home: Path
) -> None:
    install(claude)
    port = free_port()
    # the hook waits 2 s for the port; a server slower than that (a loaded machine) is told
    # at the next call, which here returns once the port is open
    wait = f"import socket,time\nwhile socket.socket().connect_ex(('127.0.0.1',{port})):\n"
    wait += " time.sleep(0.05)"
    script: list[Turn] = [
        bash(f"python3 -m http.server {port} --bind 127.0.0.1", background=True),
        bash(f'python3 -c "{wait}"'),
        bash("corral stop --all --json"),
        Text("stopped"),
        Text("noted"),  # the background task's notification
    ]
    run = claude.run("start the server", script, timeout=180)
    assert run.returncode == 0, run.explain()
    told = [json.dumps(r.body) for r in run.api.main_requests()]
    assert any(f"is ready at http://localhost:{port}" in body for body in told), run.explain()
    [job] = records(corral_home)
    assert job["log"] and Path(job["log"]).is_file()  # Claude Code's task output file
    assert corral("logs", job["id"][:8]).returncode == 0
