"""Permission parity against the real CLI: for a few rule/line pairs, what corral's verdict
says about the ORIGINAL line is what Claude Code 2.1.332 does with it (no hooks installed).

deny -> the CLI denies it; ask -> the CLI asks (a refusal in -p mode); allow -> it runs
without a prompt; none -> the CLI prompts (a rewrite without a decision is prompted too).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import pytest

from corral.adapters.claude_settings import load_rules
from corral.core.claude.permissions import Verdict, verdict
from tests.claude.fake_api import JSON, Text, ToolUse, Turn, block_text
from tests.claude.harness import ClaudeCLI, ClaudeRun, Scope

pytestmark = pytest.mark.slow

SERVER = "python3 -m http.server --help"  # a real long runner's command that exits at once
RULE = "Bash(python3 -m http.server:*)"
ALLOWED = ("--allowedTools", "Bash", "--output-format", "json")
PLAIN = ("--output-format", "json")
DONT_ASK = ("--permission-mode", "dontAsk", *PLAIN)
# What the CLI does with the original line, for each verdict corral gives it.
OUTCOME = {
    Verdict.DENY: "denied",
    Verdict.ASK: "asked",
    Verdict.ALLOW: "ran",
    Verdict.NONE: "prompted",
}


def outcome(run: ClaudeRun) -> str:
    [result] = run.tool_results()
    text = block_text(result)
    if "has been denied" in text:
        return "denied"
    if "haven't granted it yet" in text:  # an ask rule, in -p mode
        return "asked"
    if run.result.get("permission_denials"):  # any other prompt: not approved in -p mode
        return "prompted"
    assert "usage:" in text, run.explain()
    return "ran"


@dataclass(frozen=True)
class Pair:
    permissions: JSON
    line: str
    expected: Verdict
    args: tuple[str, ...] = PLAIN
    scope: Scope = "user"
    mode: str = "default"


PAIRS = {
    "deny-in-a-compound-line": Pair({"deny": [RULE]}, f"cd web && {SERVER}", Verdict.DENY, ALLOWED),
    "ask-refused-in-p-mode": Pair({"ask": [RULE]}, SERVER, Verdict.ASK, ALLOWED),
    "allow-runs-without-prompt": Pair({"allow": [RULE]}, SERVER, Verdict.ALLOW),
    "cd-inside-needs-no-rule": Pair({"allow": [RULE]}, f"cd web && {SERVER}", Verdict.ALLOW),
    "background-amp-still-asks": Pair({"allow": [RULE]}, f"{SERVER} &", Verdict.NONE),
    "untrusted-project-allow-ignored": Pair(
        {"allow": [RULE]}, SERVER, Verdict.NONE, scope="project"
    ),
    "dont-ask-denies-an-ask-rule": Pair(
        {"ask": [RULE]}, SERVER, Verdict.DENY, DONT_ASK, mode="dontAsk"
    ),
}  # fmt: skip


@pytest.mark.parametrize("pair", PAIRS.values(), ids=PAIRS.keys())
def test_the_verdict_agrees_with_the_cli(claude: ClaudeCLI, pair: Pair) -> None:
    claude.write_settings({"permissions": pair.permissions}, scope=pair.scope)
    (claude.project / "web").mkdir()
    project = os.path.realpath(claude.project)

    def inside(target: str) -> bool:
        return os.path.realpath(os.path.join(project, target)).startswith(project + os.sep)

    rules = load_rules(str(claude.project), str(claude.home))
    wrapped = f"corral-run --task -- '{pair.line}'"
    found = verdict(pair.line, rules, pair.mode, rewritten=wrapped, cd_inside=inside)
    assert found is pair.expected

    script: list[Turn] = [ToolUse("Bash", {"command": pair.line, "description": "d"}), Text("ok")]
    run = claude.run("go", script, args=pair.args)
    assert run.returncode == 0, run.explain()
    assert outcome(run) == OUTCOME[pair.expected], run.explain()
