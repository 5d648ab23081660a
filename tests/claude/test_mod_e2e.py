"""corral's mod in the real Claude Code CLI 2.1.332, with ONLY the plugin loaded
(`--plugin-dir`, no settings install, so no shell prefix): the mod supervises a Bash call in
`tool.call` and answers `tool.check` with the decision for the model's original line.

In `auto` mode the plugin's settings-style PreToolUse hook rewrites nothing (it cannot consult
the classifier), so a supervised job there is the mod's doing. Against a local model server
auto mode's classifier does not run: the supervised lines here are the ones a rule allows, and
a line no rule decides is shown to reach the classifier as the model wrote it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.claude.fake_api import Text, Turn, block_text
from tests.claude.harness import ROOT, ClaudeCLI
from tests.claude.terminal import Terminal
from tests.claude.test_hooks_e2e import bash, free_port, listening, records
from tests.claude.test_prefix_e2e import WAIT
from tests.helpers import (
    alive,
    corral,
    job_pids,
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
    server = bash(f"python3 -m http.server {port}", background=True)
    run = claude.run("go", [server, server, Text("ok")], args=args(mode), timeout=180)
    results = run.tool_results()
    for result in results:  # the second try too: judged by the rule, not "being started"
        assert result["is_error"] is True, run.explain()
        assert "Auto mode is unavailable" not in block_text(result), run.explain()
        assert "being started" not in block_text(result), run.explain()
    assert len(results) == 2 and block_text(results[0]) == block_text(results[1])
    assert records(corral_home) == [] and not listening(port)


@pytest.mark.usefixtures("daemon")
def test_interactive_band_and_procs_pane_stop_a_job(claude: ClaudeCLI, tmp_path: Path) -> None:
    """In tmux (a private socket): the band shows the job and its port, `/procs` opens the
    pane with no request to the model server, and the row's stop button (hotkey 1) stops it."""
    port = free_port()
    job = start_job(f"python3 -m http.server {port} --bind 127.0.0.1", cwd=claude.project)
    # An interactive session writes the mod's types into the plugin folder it loads: a copy
    plugin = tmp_path / "plugin"
    for part in (".claude-plugin", "hooks", "mod", "commands", "bin", "tsconfig.json"):
        copy = shutil.copytree if (ROOT / part).is_dir() else shutil.copy2
        copy(ROOT / part, plugin / part)
    args = ["--plugin-dir", str(plugin), "--permission-mode", "manual"]
    with Terminal(claude, [Text("hello")], args) as term:
        band = f"⚙ 1 running · :{port} · /procs"
        term.wait_for(band)
        before = len(term.api.requests)
        term.type("/procs")
        term.wait_for("Other jobs here (1)")
        assert f"{job['id'][:8]}  :{port}" in term.screen(), term.screen()
        term.press("1")
        wait_for(lambda: not alive(job["pid"]), 30, "the job stopped by its stop button")
        term.wait_for(lambda screen: band not in screen and "terminated" in screen)
        assert f"{job['id'][:8]} terminated" in term.screen(), term.screen()
        turns = [r for r in term.api.requests[before:] if r.kind == "main"]  # no model turn
        assert not turns, [(r.method, r.path, r.kind) for r in term.api.requests]
    assert not listening(port)


@pytest.mark.usefixtures("daemon")
def test_a_line_only_auto_modes_classifier_would_judge_reaches_it_as_written(
    claude: ClaudeCLI, corral_home: Path
) -> None:
    """No rule names the line: the mod leaves it as written, so auto mode's classifier judges
    the model's own line (here it cannot run, and Claude Code refuses what needs it)."""
    only_the_plugin(claude, {"allow": ALLOW[1:]})
    port = free_port()
    line = f"python3 -m http.server {port}"
    run = claude.run("go", [bash(line, background=True), Text("ok")], args=args("auto"))
    [result] = run.tool_results()
    assert "Auto mode is unavailable" in block_text(result), run.explain()
    [denied] = run.result["permission_denials"]
    assert denied["tool_input"]["command"] == line, run.explain()  # not corral's wrapper
    assert records(corral_home) == [] and not listening(port)
