"""corral installed into the real Claude Code CLI, both ways: as a plugin from the repo's
marketplace, and with `corral install claude --scope project`. Hooks, the wrapper and
/procs must run."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.claude.fake_api import Text, ToolUse, Turn
from tests.claude.harness import ClaudeCLI, ClaudeRun, claude_binary_or_skip
from tests.helpers import corral, private_home
from tests.surfaces.test_http import daemon

__all__ = ["daemon"]  # a fixture

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
PLUGIN_PARTS = (".claude-plugin", "hooks", "mod", "commands", "bin")
ECHO_SESSION = ToolUse("Bash", {"command": "echo corral-session=$CORRAL_SESSION"})


def cli(claude: ClaudeCLI, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(claude.binary), *args],
        cwd=claude.project,
        env=claude.env("http://127.0.0.1:9"),
        capture_output=True,
        text=True,
        timeout=180,
    )


def session_seen(run: ClaudeRun) -> str:
    """What `echo corral-session=$CORRAL_SESSION` printed in the run."""
    found = re.findall(r"corral-session=([\w-]*)", json.dumps(run.tool_results()))
    assert found, run.explain()
    return str(found[0])


def sent_text(run: ClaudeRun) -> str:
    return "\n".join(json.dumps(r.body) for r in run.requests if r.kind == "main")


def test_the_repo_is_a_valid_plugin_and_marketplace(tmp_path: Path) -> None:
    binary = claude_binary_or_skip()
    result = subprocess.run(
        [str(binary), "plugin", "validate", "--strict", str(ROOT)],
        capture_output=True,
        text=True,
        timeout=180,
        env=private_home(tmp_path),  # the CLI writes telemetry and state into its HOME
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "commands: corral:procs" in result.stdout
    assert "SessionStart" in result.stdout and "bin: corral-hook" in result.stdout


# The plugin's mod finds (or starts) corral's daemon at session start: it runs before the CLI,
# as one it started would outlive the run.
@pytest.mark.usefixtures("daemon")
def test_marketplace_install_runs_the_hooks_and_procs(claude: ClaudeCLI, tmp_path: Path) -> None:
    # A local marketplace is copied whole into the plugin cache: give it the plugin's files
    # only (a clone of the repository holds no .venv or .tools either).
    market = tmp_path / "market"
    for part in PLUGIN_PARTS:
        shutil.copytree(ROOT / part, market / part, symlinks=True)
    added = cli(claude, "plugin", "marketplace", "add", str(market))
    assert added.returncode == 0, added.stdout + added.stderr
    installed = cli(claude, "plugin", "install", "corral@corral")
    assert installed.returncode == 0, installed.stdout + installed.stderr
    listed = cli(claude, "plugin", "list")
    assert "corral@corral" in listed.stdout

    run = claude.run("check", [ECHO_SESSION, Text("done")])
    assert run.returncode == 0, run.explain()
    session = run.result["session_id"]
    assert session_seen(run) == session  # the SessionStart hook ran through bin/corral-hook
    cache = claude.home / ".cache" / "corral" / "claude-plugin-paths"
    assert cache.read_text().splitlines()[1].endswith("corral/surfaces/claude/run_hook.py")

    procs = claude.run("/corral:procs", [Text("shown")])
    assert procs.returncode == 0, procs.explain()
    assert "Jobs of session" in sent_text(procs), procs.explain()


def test_settings_install_runs_our_hooks_and_procs(claude: ClaudeCLI, corral_home: Path) -> None:
    env = private_home(claude.home, {"PATH": "/usr/bin:/bin"})
    result = corral("install", "claude", "--scope", "project", cwd=claude.project, env=env)
    assert result.returncode == 0, result.stderr
    background = ToolUse(
        "Bash", {"command": "sleep 0.3", "run_in_background": True, "description": "nap"}
    )
    script: list[Turn] = [ECHO_SESSION, background, Text("started"), Text("noted")]
    run = claude.run("check", script)
    assert run.returncode == 0, run.explain()
    session = run.result["session_id"]
    assert session_seen(run) == session  # SessionStart wrote CORRAL_SESSION
    # PreToolUse wrapped the background line: its job is in the ledger, owned by the session
    records = [json.loads(p.read_text()) for p in (corral_home / "ledger").glob("*.json")]
    assert [(r["command"], r["session"]) for r in records] == [("sleep 0.3", session)]

    procs = claude.run("/procs", [Text("shown")])
    assert procs.returncode == 0, procs.explain()
    assert "Jobs of session" in sent_text(procs), procs.explain()
