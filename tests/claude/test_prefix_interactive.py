"""corral's shell prefix inside the real Claude Code CLI 2.1.332 as a person uses it: the
interactive terminal UI (tmux, see terminal.py), in manual and in auto permission mode, one
session per mode that checks each point in turn.

Auto mode's safety classifier does not run against a local model server, so in auto mode
the lines are those an allow rule or the person (answering an ask rule's dialog) lets run:
2.1.332 sends a `server &` line to the classifier even past an exact allow rule, but an ask
rule overrides auto mode. A line the classifier approves reaches the prefix the same way
(test_prefix_e2e.py shows the prefix is handed the same string and environment in every
mode).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from corral.surfaces.claude import prefix
from tests.claude.fake_api import JSON, Text, Turn, block_text
from tests.claude.harness import ClaudeCLI
from tests.claude.terminal import Terminal
from tests.claude.test_hooks_e2e import bash, free_port, listening, records
from tests.claude.test_prefix_e2e import install
from tests.helpers import job_pids

pytestmark = pytest.mark.slow

# Manual mode: every Bash line (2.1.332 asks about a `cmd &` line beyond a prefix rule).
# Auto mode drops so broad a rule and sends a `&` line to its classifier: there, named lines.
ALLOW = {
    "manual": ["Bash"],
    "auto": ["Bash(python3 -m http.server:*)", "Bash(./wait.sh:*)", "Bash(corral stop:*)"],
}
# A user's own prefix, chained behind corral's: it notes every string it is handed.
THEIRS = """\
#!/bin/sh
printf '%s\\n' "$1" >> {log}
exec /bin/bash -c "$1"
"""


def session_id(claude: ClaudeCLI) -> str:
    """The interactive session's id: the name of its transcript."""
    [transcript] = (claude.home / ".claude" / "projects").glob("*/*.jsonl")
    return transcript.stem


def ls_rows(result: JSON) -> list[dict[str, Any]]:
    text = block_text(result)
    rows: list[dict[str, Any]] = json.loads(text[text.index("{") :])["data"]
    return rows


@pytest.mark.parametrize("mode", ["manual", "auto"])
def test_interactive_session_supervises_lists_refuses_asks_denies_and_stops(
    claude: ClaudeCLI, corral_home: Path, tmp_path: Path, mode: str
) -> None:
    tasked, amped, denied_port = free_port(), free_port(), free_port()
    server = f"python3 -m http.server {tasked} --bind 127.0.0.1"
    amp = f"cd web && python3 -m http.server {amped} --bind 127.0.0.1 &"  # another folder
    denied = f"python3 -m http.server {denied_port} --bind 127.0.0.1"
    ports = [tasked, amped]
    log = tmp_path / "their-prefix.log"
    if mode == "auto":  # a user's own prefix, chained: every string passes through it too
        theirs = tmp_path / "their-prefix"
        theirs.write_text(THEIRS.format(log=log))
        theirs.chmod(0o755)
        claude.write_settings({"env": {prefix.PREFIX: str(theirs)}})
    # Auto mode lets a `&` line run only by a rule that overrides it, or a person: an ask
    # rule. Manual mode's allow-all rule lets it run.
    asked = [server, amp] if mode == "auto" else [server]
    asks = [f"Bash({line})" for line in asked]
    install(claude, {"allow": ALLOW[mode], "deny": [f"Bash({denied})"], "ask": asks})
    script: list[Turn] = [
        bash(denied, background=True),  # a deny rule for the original line denies it
        bash(server, background=True),  # an ask rule asks; the person says yes
        bash(amp),  # in auto mode an ask rule asks too
        bash(f"./wait.sh {' '.join(map(str, ports))}"),
        Text("started"),
        bash(server, background=True),  # the running server again: refused, nothing starts
        bash(server),  # and in the foreground
        bash("corral stop --all --json"),
        Text("stopped"),
    ]
    first_prompt = len(ports) + 3
    with Terminal(claude, script, ["--permission-mode", mode]) as term:
        term.wait_for(f"{mode} mode on")
        term.type("start the servers")
        says = "says to ask" if mode == "manual" else "overrides auto mode"
        for line in asked:
            asking = term.wait_for(f"Rule Bash({line}) from shared project settings")
            assert f"Rule Bash({line}) from shared project settings {says}" in asking
            assert "Do you want to proceed?" in term.wait_for("❯ 1. Yes")
            term.press("Enter")  # 1. Yes
        term.wait_for_turns(first_prompt)
        # corral's status line, run by Claude Code through the prefix, shows the servers
        shown = " ".join(f":{p}" for p in sorted(ports))
        term.wait_for(f"⚙ {len(ports)} running · {shown} · /procs")
        jobs = records(corral_home)
        term.type("again")
        term.wait_for_turns(len(script))
        term.wait_for(lambda s: "stopped" in s and "⚙" not in s)
        results = term.api.tool_results()
    refused_by_rule, started, amp_result, listed, again, again_fg, stopped = results[:7]
    assert not amp_result.get("is_error"), results
    assert refused_by_rule["is_error"] is True
    assert f"Permission to use Bash with command {denied} has been denied" in block_text(
        refused_by_rule
    )
    assert not listening(denied_port)
    assert "running in background" in block_text(started), results
    assert sorted(j["port"] for j in jobs) == sorted(ports), jobs
    by_port = {j["port"]: j for j in jobs}
    assert by_port[tasked]["command"] == server and by_port[tasked]["mode"] == "task"
    assert by_port[amped]["command"] == amp.removesuffix(" &")
    assert by_port[amped]["mode"] == "detached"
    session = session_id(claude)
    for job in jobs:
        [row] = [r for r in ls_rows(listed) if r["id"] == job["id"]]
        assert job["port"] in row["ports"] and row["session"] == session, row
    for refused in (again, again_fg):
        assert refused["is_error"] is True, results
        assert "corral refused" in block_text(refused)
        assert by_port[tasked]["id"][:8] in block_text(refused), results
    assert [j["id"] for j in records(corral_home)] == [j["id"] for j in jobs]  # none started
    assert "terminated" in block_text(stopped), results
    assert {j["state"] for j in records(corral_home)} <= {"stopped", "killed"}
    assert not any(listening(p) for p in ports)
    assert not any(job_pids(j["id"]) for j in jobs)
    if mode == "auto":  # the hooks and the status line went through the prefix too
        seen = log.read_text()
        for through in ("corral-hook session-start", "corral-hook pre-tool-use",
                        "corral-hook statusline", f"eval '{server}'"):  # fmt: skip
            assert through in seen, seen
