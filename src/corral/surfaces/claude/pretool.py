"""PreToolUse for a Bash line that may start a job: wrap it, refuse it, or leave it alone.

The line reader decides (through `service.admission`, which also holds a reservation so two
concurrent starts of one server cannot both win). A rewrite must never weaken the user's
permission rules, because Claude Code matches them against the rewritten text: the original
line is matched here the way Claude Code would match it, and a deny, or any doubt, leaves it
untouched.
"""

from __future__ import annotations

import json
import os

from corral import config
from corral.core.shell.plan import Decision
from corral.service.hooks import admit_line, read_line
from corral.service.hooks import started_context as context
from corral.surfaces.claude import notes

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

REWRITES = ("allow", "ask", "none")  # permission verdicts under which a line may be rewritten


def _agent_pid() -> int | None:
    """The agent that runs the rewritten line: its reservation ends if the agent is gone."""
    raw = os.environ.get("CLAUDE_PID", "")
    return int(raw) if raw.isdigit() and int(raw) > 0 else None


def answer(payload: dict[str, Any], tool_input: dict[str, Any], home: str) -> str | None:
    """The PreToolUse output for a candidate line, or None to let it run as written."""
    from corral.lowlevel import locations
    from corral.service import claude

    line: str = tool_input["command"]
    if locations.runs_corral_program(line):  # never wrapped twice
        return None
    cwd = payload.get("cwd")
    if not isinstance(cwd, str) or not os.path.isdir(cwd):
        return None
    settings = config.load()
    if notes.active(os.environ):
        return _refusal_only(payload, tool_input, cwd=cwd, settings=settings, home=home)
    mode = payload.get("permission_mode")
    project = os.environ.get("CLAUDE_PROJECT_DIR") or cwd
    verdicts: list[str] = []

    def accept(decision: Decision) -> bool:
        """Reserve the job only when the user's rules let corral rewrite the line."""
        if decision.rewritten is None:  # a wrap always has its rewrite; nothing to reserve
            return False
        mode_text = mode if isinstance(mode, str) else None
        verdicts.append(claude.permission(line, decision.rewritten, cwd, project, mode_text))
        return verdicts[-1] in REWRITES

    decision = admit_line(
        line,
        background=tool_input.get("run_in_background") is True,
        cwd=cwd,
        settings=settings,
        accept=accept,
        holder=_agent_pid(),
    )
    verdict = verdicts[-1] if verdicts else "none"
    out: dict[str, Any] = {"hookEventName": "PreToolUse"}
    if decision.action == "refuse" and decision.refusal:
        out["permissionDecision"] = "deny"
        out["permissionDecisionReason"] = decision.refusal
    elif decision.action == "wrap" and decision.rewritten and verdicts and verdict in REWRITES:
        out["updatedInput"] = {**tool_input, "command": decision.rewritten}
        out["additionalContext"] = context(decision)
        if verdict in ("allow", "ask"):
            out["permissionDecision"] = verdict
            out["permissionDecisionReason"] = (
                f"corral runs this line under its supervisor; your rules {verdict} the "
                "original line"
            )
    else:
        return None
    return json.dumps({"hookSpecificOutput": out})


def _refusal_only(
    payload: dict[str, Any],
    tool_input: dict[str, Any],
    *,
    cwd: str,
    settings: dict[str, Any],
    home: str,
) -> str | None:
    """With corral's shell prefix installed the prefix supervises at execution, after
    Claude Code's permission check, in every mode: the hook rewrites nothing. It only notes a
    background call for the prefix (which cannot see `run_in_background`), notes what its
    line reader found (nothing to supervise, or the jobs and how they start: the prefix
    checks that against the live jobs without reading the line again), and refuses a
    duplicate or a held port early; nothing is reserved, the prefix reserves when it runs."""
    line: str = tool_input["command"]
    background = tool_input.get("run_in_background") is True
    session = payload.get("session_id")
    if background and isinstance(session, str):
        notes.note_background(home, session, line)
    from corral.service import claude
    from corral.service.admission import admit_reading

    wrapper = claude.wrapper(settings)  # the prefix's own (service.hooks.read_line's too)
    reading = read_line(line, background=background, cwd=cwd, settings=settings)
    decision = admit_reading(reading, reserve=False)
    if decision.action != "refuse" and decision.readable and isinstance(session, str):
        # what the reader found, for the prefix: it checks this against the live jobs when
        # it runs the line, without reading it again
        notes.note_reading(
            home, session, cwd, line, background=background, wrapper=wrapper, reading=reading
        )
    if decision.action != "refuse" or not decision.refusal:
        return None
    out = {
        "hookEventName": "PreToolUse",
        "permissionDecision": "deny",
        "permissionDecisionReason": decision.refusal,
    }
    return json.dumps({"hookSpecificOutput": out})
