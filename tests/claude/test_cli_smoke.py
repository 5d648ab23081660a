"""The real Claude Code CLI, driven offline: Bash runs, and hooks see and change what we think.

These tests pin the Claude Code facts corral's hooks rely on (DESIGN.md). When one fails after
the pinned version moves, the design needs a look, not just the test.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.claude.fake_api import JSON, Text, ToolUse, Turn, block_text
from tests.claude.harness import ClaudeCLI, claude_binary_or_skip

pytestmark = pytest.mark.slow

SAMPLES = Path(__file__).resolve().parent / "samples"
# CORRAL_UPDATE_SAMPLES=1 rewrites tests/claude/samples/ from what the CLI sends.
UPDATE_SAMPLES = os.environ.get("CORRAL_UPDATE_SAMPLES") == "1"

# A settings hook: records its stdin per event, then answers as its second argument says.
HOOK = r"""
import json, os, sys
data = json.load(sys.stdin)
record_dir, mode = sys.argv[1], sys.argv[2]
event = data["hook_event_name"]
with open(os.path.join(record_dir, event + ".jsonl"), "a") as f:
    f.write(json.dumps(data) + "\n")
env = {k: v for k, v in os.environ.items() if k.startswith("CLAUDE")}
with open(os.path.join(record_dir, event + ".env.jsonl"), "a") as f:
    f.write(json.dumps(env) + "\n")
arg = sys.argv[3] if len(sys.argv) > 3 else ""
decision = sys.argv[4] if len(sys.argv) > 4 else ""
out = None
if event == "PreToolUse" and mode == "deny":
    out = {"permissionDecision": "deny", "permissionDecisionReason": arg}
elif event == "PreToolUse" and mode == "rewrite-all":
    out = {"updatedInput": {**data["tool_input"], "command": arg},
           "additionalContext": "corral-test: wrapped as job 7"}
    if decision:
        out["permissionDecision"] = decision
elif event == "PreToolUse" and mode == "rewrite-command":
    out = {"updatedInput": {"command": arg}}
elif event == "SessionStart" and mode == "session-context":
    with open(os.environ["CLAUDE_ENV_FILE"], "a") as f:
        f.write("export CORRAL_SESSION=" + arg + "\n")
    out = {"additionalContext": "corral-test: 1 job already running on :3000"}
if out is not None:
    print(json.dumps({"hookSpecificOutput": {"hookEventName": event, **out}}))
"""


class Hooks:
    """A recording hook installed for EVENTS in the project's `.claude/settings.json`."""

    def __init__(
        self, claude: ClaudeCLI, mode: str = "record", arg: str = "", decision: str = ""
    ) -> None:
        self.dir = claude.home.parent / "hook-records"
        self.dir.mkdir(exist_ok=True)
        script = claude.home.parent / "hook.py"
        script.write_text(HOOK)
        command = shlex.join([sys.executable, str(script), str(self.dir), mode, arg, decision])
        entry: list[JSON] = [{"hooks": [{"type": "command", "command": command}]}]
        bash_only: list[JSON] = [{"matcher": "Bash", **entry[0]}]
        claude.write_settings(
            {
                "hooks": {
                    "PreToolUse": bash_only,
                    "PostToolUse": bash_only,
                    "SessionStart": entry,
                    "SessionEnd": entry,
                }
            }
        )

    def add_permissions(self, claude: ClaudeCLI, permissions: JSON) -> None:
        path = claude.settings_path()
        claude.write_settings({**json.loads(path.read_text()), "permissions": permissions})

    def inputs(self, event: str) -> list[JSON]:
        path = self.dir / f"{event}.jsonl"
        if not path.exists():
            return []
        return [json.loads(line) for line in path.read_text().splitlines()]

    def envs(self, event: str) -> list[dict[str, str]]:
        path = self.dir / f"{event}.env.jsonl"
        return [json.loads(line) for line in path.read_text().splitlines()]


def all_text(value: Any) -> str:
    """Every string inside a request body, joined: where did the model get to see X?"""
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        return "\n".join(all_text(v) for v in value.values())
    if isinstance(value, list):
        return "\n".join(all_text(v) for v in value)
    return ""


def test_scripted_bash_runs_for_real(claude: ClaudeCLI) -> None:
    run = claude.run(
        "write the marker",
        [
            ToolUse("Bash", {"command": "echo corral-smoke > marker.txt", "description": "m"}),
            Text("done"),
        ],
    )
    assert run.returncode == 0, run.explain()
    assert (claude.project / "marker.txt").read_text() == "corral-smoke\n"
    assert run.text == "done"
    assert run.api.turns_used == 2
    assert run.api.overruns == 0
    [result] = run.tool_results()
    assert result["is_error"] is False
    assert [r.kind for r in run.requests] == ["main", "main"], run.explain()


def test_rewrite_keeping_every_field_keeps_background(claude: ClaudeCLI) -> None:
    hooks = Hooks(claude, "rewrite-all", "echo rewritten > out.txt")
    original = {"command": "echo original > out.txt", "description": "d", "run_in_background": True}
    run = claude.run("go", [ToolUse("Bash", original), Text("started"), Text("noted")])
    assert run.returncode == 0, run.explain()
    assert (claude.project / "out.txt").read_text() == "rewritten\n"
    [pre] = hooks.inputs("PreToolUse")
    assert pre["tool_input"] == original
    [post] = hooks.inputs("PostToolUse")
    assert post["tool_input"] == {**original, "command": "echo rewritten > out.txt"}
    assert post["tool_response"]["backgroundTaskId"]
    [result, *_] = run.tool_results()
    assert "running in background" in block_text(result), run.explain()
    # The hook's additionalContext reaches the model in the request after the tool ran.
    assert "corral-test: wrapped as job 7" in all_text(run.api.main_requests()[1].body)


def test_rewrite_of_command_only_replaces_the_whole_input(claude: ClaudeCLI) -> None:
    hooks = Hooks(claude, "rewrite-command", "echo rewritten > out.txt")
    original = {"command": "echo original > out.txt", "description": "d", "run_in_background": True}
    run = claude.run("go", [ToolUse("Bash", original), Text("done"), Text("noted")])
    assert run.returncode == 0, run.explain()
    assert (claude.project / "out.txt").read_text() == "rewritten\n"
    [post] = hooks.inputs("PostToolUse")
    # description and run_in_background are gone: the command ran in the foreground.
    assert post["tool_input"] == {"command": "echo rewritten > out.txt"}
    assert "backgroundTaskId" not in post["tool_response"]
    [result] = run.tool_results()
    assert "running in background" not in block_text(result)


def test_deny_reason_reaches_the_model(claude: ClaudeCLI) -> None:
    reason = "corral-test: already running as job 3 on :8000; reuse it or `corral stop 3`"
    Hooks(claude, "deny", reason)
    command = {"command": "echo ran > marker.txt", "description": "m"}
    run = claude.run("go", [ToolUse("Bash", command), Text("understood")])
    assert run.returncode == 0, run.explain()
    assert not (claude.project / "marker.txt").exists()
    [result] = run.tool_results()
    assert result["is_error"] is True
    assert reason in block_text(result), run.explain()
    assert run.text == "understood"


ALLOWED = ("--allowedTools", "Bash", "--output-format", "json")
PLAIN = ("--output-format", "json")


@dataclass(frozen=True)
class PermissionCase:
    permissions: JSON
    decision: str  # the hook's permissionDecision next to its rewrite; "" = none
    args: tuple[str, ...]
    runs: bool
    says: str  # in the tool_result


PERMISSION_CASES = {
    # Rules are matched against the rewritten command: a deny written for the original no
    # longer applies once a hook rewrites it (corral must leave such lines alone) ...
    "deny-original": PermissionCase({"deny": ["Bash(echo original:*)"]}, "", ALLOWED, True, ""),
    # ... and an allow rule for the original no longer allows it.
    "allow-original": PermissionCase(
        {"allow": ["Bash(echo original:*)"]}, "", PLAIN, False, "needs approval"
    ),
    # A hook's "allow" skips the permission prompt ...
    "hook-allow": PermissionCase({}, "allow", PLAIN, True, ""),
    # ... but not a settings deny that matches the rewritten command.
    "deny-wrapped": PermissionCase(
        {"deny": ["Bash(echo wrapped:*)"]}, "allow", ALLOWED, False, "has been denied"
    ),
    # "ask" has nobody to ask in -p mode: the call is refused.
    "ask": PermissionCase({}, "ask", ALLOWED, False, "asked for confirmation"),
}


@pytest.mark.parametrize("case", PERMISSION_CASES.values(), ids=PERMISSION_CASES.keys())
def test_permission_rules_see_the_rewritten_command(
    claude: ClaudeCLI, case: PermissionCase
) -> None:
    hooks = Hooks(claude, "rewrite-all", "echo wrapped > out.txt", case.decision)
    hooks.add_permissions(claude, case.permissions)
    command = {"command": "echo original > out.txt", "description": "d"}
    run = claude.run("go", [ToolUse("Bash", command), Text("done")], args=case.args)
    assert run.returncode == 0, run.explain()
    assert (claude.project / "out.txt").exists() == case.runs, run.explain()
    [result] = run.tool_results()
    assert case.says in block_text(result), run.explain()


def test_session_start_context_and_env_file(claude: ClaudeCLI) -> None:
    hooks = Hooks(claude, "session-context", "corral-session-42")
    probe = "echo $CORRAL_SESSION $CLAUDECODE $CLAUDE_CODE_SESSION_ID $CLAUDE_PID > env.txt"
    run = claude.run("go", [ToolUse("Bash", {"command": probe, "description": "e"}), Text("ok")])
    assert run.returncode == 0, run.explain()
    [start] = hooks.inputs("SessionStart")
    values = (claude.project / "env.txt").read_text().split()
    assert values[:2] == ["corral-session-42", "1"]
    assert values[2] == start["session_id"] == run.result["session_id"]
    assert re.fullmatch(r"\d+", values[3])
    first = run.api.main_requests()[0].body
    assert "corral-test: 1 job already running on :3000" in all_text(first)


def normalised(data: JSON, claude: ClaudeCLI) -> JSON:
    """The hook input with this run's folders replaced by names, for a stable sample."""
    text = json.dumps(data)
    slug = re.sub(r"[^A-Za-z0-9]", "-", str(claude.project))  # ~/.claude/projects/<slug>
    for path, name in ((slug, "-PROJECT"), (str(claude.tmp), "$TMPDIR")):
        text = text.replace(path, name)
    for folder, name in ((claude.project, "$PROJECT"), (claude.home, "$HOME")):
        text = text.replace(str(folder), name)
    parsed: JSON = json.loads(text)
    return parsed


def shape(value: Any) -> Any:
    """Field names and JSON types, recursively: what a hook author relies on."""
    if isinstance(value, dict):
        return {k: shape(v) for k, v in value.items()}
    return type(value).__name__


def test_hook_inputs_match_the_samples(claude: ClaudeCLI) -> None:
    hooks = Hooks(claude)
    foreground = {"command": "echo hi", "description": "say hi", "timeout": 60000}
    background = {"command": "echo bg", "description": "in bg", "run_in_background": True}
    script: list[Turn] = [
        ToolUse("Bash", foreground),
        ToolUse("Bash", background),
        Text("done"),
        Text("ok"),
    ]
    run = claude.run("go", script)
    assert run.returncode == 0, run.explain()
    pre, _ = hooks.inputs("PreToolUse")
    post, post_background = hooks.inputs("PostToolUse")
    [start] = hooks.inputs("SessionStart")
    samples = {
        "pretooluse": pre,
        "posttooluse": post,
        "posttooluse-background": post_background,
        "sessionstart": start,
    }
    for name, data in samples.items():
        sample = SAMPLES / f"{name}.json"
        if UPDATE_SAMPLES:
            SAMPLES.mkdir(exist_ok=True)
            sample.write_text(json.dumps(normalised(data, claude), indent=2, sort_keys=True) + "\n")
        assert shape(data) == shape(json.loads(sample.read_text())), name
    # tool_input is exactly what the model sent: absent fields are not filled with defaults.
    assert pre["tool_input"] == foreground
    assert post_background["tool_input"] == background
    assert post_background["tool_response"]["backgroundTaskId"]


def test_processes_that_escape_the_cli_are_reaped_by_the_harness(tmp_path: Path) -> None:
    cli = ClaudeCLI(tmp_path / "claude", claude_binary_or_skip())
    try:
        line = "setsid sleep 300 > /dev/null 2>&1 < /dev/null & echo $! > escaped.pid"
        run = cli.run("go", [ToolUse("Bash", {"command": line, "description": "e"}), Text("ok")])
        assert run.returncode == 0, run.explain()
        pid = int((cli.project / "escaped.pid").read_text())
        assert Path(f"/proc/{pid}").exists(), "the escaped sleep should outlive the CLI"
    finally:
        escaped = cli.close()
    assert pid in escaped
    assert not Path(f"/proc/{pid}").exists() or "Z" in Path(f"/proc/{pid}/stat").read_text()
