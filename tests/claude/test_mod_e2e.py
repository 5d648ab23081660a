"""corral's mod in the real Claude Code CLI 2.1.332, with ONLY the plugin loaded
(`--plugin-dir`, no settings install, so no shell prefix): the mod supervises a Bash call in
`tool.call` and answers `tool.check` with the decision for the model's original line.

In `auto` mode the plugin's settings-style PreToolUse hook rewrites nothing (it cannot consult
the classifier), so a supervised job there is the mod's doing. Against a local model server
auto mode's classifier does not run: the lines here are the ones a rule decides."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.claude.fake_api import Text, Turn, block_text
from tests.claude.harness import ROOT, ClaudeCLI
from tests.claude.test_hooks_e2e import bash, free_port, listening, records
from tests.claude.test_prefix_e2e import WAIT
from tests.helpers import job_pids
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
    script: list[Turn] = [
        bash(server, background=True),
        bash(f"./wait.sh {port}"),
        bash("corral stop --all --json"),
        Text("stopped"),
        Text("noted"),  # the background task's notification
    ]
    run = claude.run("start the server", script, args=args(mode), timeout=180)
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
