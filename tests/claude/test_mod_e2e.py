"""corral's mod in the real Claude Code CLI 2.1.332, with ONLY the plugin loaded
(`--plugin-dir`, no settings install, so no shell prefix): the mod supervises a Bash call in
`tool.call` and answers `tool.check` with the decision for the model's original line.

In `auto` mode the plugin's settings-style PreToolUse hook rewrites nothing (it cannot consult
the classifier), so a supervised job there is the mod's doing. Against a local model server
auto mode's classifier does not run: the lines here are the ones a rule decides."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
from pathlib import Path

import pytest

from tests.claude.fake_api import FakeAPI, Text, Turn, block_text
from tests.claude.harness import OFFLINE_ENV, ROOT, RUN_MARKER, ClaudeCLI
from tests.claude.test_hooks_e2e import bash, free_port, listening, records
from tests.claude.test_prefix_e2e import WAIT
from tests.helpers import (
    alive,
    corral,
    job_pids,
    pids_with_env,
    private_home,
    start_job,
    wait_for,
)
from tests.surfaces.test_http import daemon

__all__ = ["daemon"]  # the daemon runs before the CLI: one it started would outlive the run

pytestmark = pytest.mark.slow

SERVER_RULE = "Bash(python3 -m http.server:*)"
ALLOW = [SERVER_RULE, "Bash(./wait.sh:*)", "Bash(corral stop:*)"]


def only_the_plugin(claude: ClaudeCLI, permissions: dict[str, list[str]]) -> None:
    claude.write_settings({"permissions": permissions}, scope="user")
    wait = claude.project / "wait.sh"
    wait.write_text(WAIT)
    wait.chmod(0o755)


def serve_list_stop(server: str, port: int) -> list[Turn]:
    """The model's turns: the server in the background, what corral lists once it listens,
    then every job stopped."""
    return [
        bash(server, background=True),
        bash(f"./wait.sh {port}"),
        bash("corral stop --all --json"),
        Text("stopped"),
        Text("noted"),  # the background task's notification
    ]


def args(mode: str) -> list[str]:
    return ["--plugin-dir", str(ROOT), "--output-format", "json", "--permission-mode", mode]


@pytest.mark.usefixtures("daemon")
@pytest.mark.parametrize("mode", ["default", "auto"])
def test_a_background_server_is_supervised_once_listed_and_stopped(
    claude: ClaudeCLI, corral_home: Path, mode: str
) -> None:
    only_the_plugin(claude, {"allow": ALLOW})
    port = free_port()
    server = f"python3 -m http.server {port} --bind 127.0.0.1"
    run = claude.run("start the server", serve_list_stop(server, port), args=args(mode))
    assert run.returncode == 0, run.explain()
    started, listed, stopped = run.tool_results()[:3]
    assert "running in background" in block_text(started), run.explain()
    [job] = records(corral_home)  # supervised once: one job, its command the model's own
    assert job["command"] == server and job["mode"] == "task" and job["port"] == port, job
    rows = json.loads(block_text(listed)[block_text(listed).index("{") :])["data"]
    [row] = [r for r in rows if r["attribution"] == "supervised"]
    assert row["id"] == job["id"] and port in row["ports"], rows
    assert row["session"] == run.result["session_id"]
    assert "terminated" in block_text(stopped), run.explain()
    assert not listening(port) and not job_pids(job["id"])
    told = [r for r in run.requests if f"as job {job['id'][:8]}" in json.dumps(r.body)]
    assert told and "(task mode)" in json.dumps(told[0].body)  # the mod's word to the model


@pytest.mark.usefixtures("daemon")
def test_with_corrals_shell_prefix_the_mod_leaves_the_call_alone(
    claude: ClaudeCLI, corral_home: Path
) -> None:
    """`corral install claude --prefix-only` beside the plugin: the prefix supervises at
    execution and the mod rewrites nothing (nothing supervised twice, no word of the mod's)."""
    done = corral("install", "claude", "--prefix-only", "--scope", "project",
                  cwd=claude.project, env=private_home(claude.home))  # fmt: skip
    assert done.returncode == 0, done.stderr
    only_the_plugin(claude, {"allow": ALLOW})
    port = free_port()
    server = f"python3 -m http.server {port} --bind 127.0.0.1"
    run = claude.run("start the server", serve_list_stop(server, port), args=args("default"))
    assert run.returncode == 0, run.explain()
    [job] = records(corral_home)
    assert job["command"] == server and job["port"] == port, job
    assert "terminated" in block_text(run.tool_results()[2]), run.explain()
    assert not any("(task mode)" in json.dumps(r.body) for r in run.requests), run.explain()


@pytest.mark.usefixtures("daemon")
@pytest.mark.parametrize("kind", ["deny", "ask"])
@pytest.mark.parametrize("mode", ["default", "auto"])
def test_a_deny_or_ask_rule_for_the_original_refuses_it(
    claude: ClaudeCLI, corral_home: Path, mode: str, kind: str
) -> None:
    """The rule names the model's command; the mod rewrites nothing it denies, and its
    `tool.check` gives the wrapped line the original's ask (a refusal in `-p`)."""
    only_the_plugin(claude, {"allow": ALLOW, kind: [SERVER_RULE]})
    port = free_port()
    script: list[Turn] = [bash(f"python3 -m http.server {port}", background=True), Text("ok")]
    run = claude.run("go", script, args=args(mode), timeout=180)
    [result] = run.tool_results()
    assert result["is_error"] is True, run.explain()
    assert "Auto mode is unavailable" not in block_text(result), run.explain()  # a rule decided
    assert records(corral_home) == [] and not listening(port)


INTERACTIVE = """\
#!/bin/sh
cd {project}
{exports}
exec {claude} --plugin-dir {root} --permission-mode manual
"""


@pytest.mark.usefixtures("daemon")
def test_interactive_band_and_procs_pane_stop_a_job(
    claude: ClaudeCLI, corral_home: Path, tmp_path: Path
) -> None:
    """In tmux (a private socket): the band shows the job and its port, `/procs` opens the
    pane with no request to the model server, and the row's stop button (hotkey 1) stops it."""
    port = free_port()
    job = start_job(f"python3 -m http.server {port} --bind 127.0.0.1", cwd=claude.project)
    config = claude.home / ".claude" / ".claude.json"
    config.parent.mkdir(parents=True, exist_ok=True)
    key = OFFLINE_ENV["ANTHROPIC_API_KEY"]
    config.write_text(
        json.dumps(
            {
                "hasCompletedOnboarding": True,
                "theme": "dark",
                "customApiKeyResponses": {"approved": [key[-20:]], "rejected": []},
                "projects": {str(claude.project): {"hasTrustDialogAccepted": True}},
            }
        )
    )
    socket = f"corral-mod-{os.urandom(6).hex()}"

    def tmux(*words: str) -> str:
        done = subprocess.run(
            ["tmux", "-L", socket, *words], capture_output=True, text=True, timeout=30
        )
        return done.stdout

    def screen() -> str:
        return tmux("capture-pane", "-p", "-t", "mod")

    with FakeAPI([Text("hello")]) as api:
        env = {**claude.env(api.url), "TERM": "xterm-256color"}
        exports = "\n".join(f"export {k}={shlex.quote(v)}" for k, v in env.items())
        script = tmp_path / "claude.sh"
        script.write_text(
            INTERACTIVE.format(
                project=shlex.quote(str(claude.project)),
                exports=exports,
                claude=shlex.quote(str(claude.binary)),
                root=shlex.quote(str(ROOT)),
            )
        )
        script.chmod(0o755)
        try:
            tmux("new-session", "-d", "-s", "mod", "-x", "160", "-y", "40", str(script))
            band = f"⚙ 1 running · :{port} · /procs"
            wait_for(lambda: band in screen(), 60, f"the band {band!r}")
            before = len(api.requests)
            tmux("send-keys", "-t", "mod", "/procs")
            wait_for(lambda: "/procs" in screen(), 30, "/procs typed")
            tmux("send-keys", "-t", "mod", "Enter")
            wait_for(lambda: "Other jobs here (1)" in screen(), 30, "the pane's rows")
            assert f"{job['id'][:8]}  :{port}" in screen(), screen()
            tmux("send-keys", "-t", "mod", "1")
            wait_for(lambda: not alive(job["pid"]), 30, "the job stopped by its stop button")
            wait_for(lambda: band not in screen(), 30, "the band emptied")
            assert f"{job['id'][:8]} terminated" in screen(), screen()
            assert len(api.requests) == before, [(r.method, r.path) for r in api.requests]
        finally:
            tmux("kill-server")  # the CLI gets SIGHUP and exits; its children with it
            marker = f"{RUN_MARKER}={claude.marker}".encode()
            wait_for(lambda: not pids_with_env(marker), 30, "the CLI gone")
            # tmux 3.3 leaves the socket file of a killed server behind: remove ours
            base = os.environ.get("TMUX_TMPDIR") or "/tmp"
            Path(base, f"tmux-{os.getuid()}", socket).unlink(missing_ok=True)
    assert not listening(port)
