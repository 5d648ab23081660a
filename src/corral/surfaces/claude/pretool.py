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
from corral.surfaces.claude import notes

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

REWRITES = ("allow", "ask", "none")  # permission verdicts under which a line may be rewritten


def context(decision: Decision) -> str:
    """What the model is told about the job it just started."""
    if decision.in_place:
        started = []
        for wrap in decision.in_place:
            moved = decision.jobs[wrap.job]
            port = f", port {moved.port}" if moved.port else ""
            started.append(f"`{moved.display}` as job {wrap.token[:8]} in {moved.cwd}{port}")
        return (
            f"corral supervises {'; '.join(started)} (each sent to the background in this "
            "line, rewritten in place; the rest of the line ran as written). `corral ls` "
            "lists them with their ports; `corral stop ID` stops one with every process it "
            "started. Reuse them rather than starting the same servers again."
        )
    job = decision.job_token[:8] if decision.job_token else "?"
    spec = decision.jobs[0] if decision.jobs else None
    what = f"`{spec.display}`" if spec else "this command"
    where = f" in {spec.cwd}" if spec else ""
    port = f", port {spec.port}" if spec and spec.port else ""
    return (
        f"corral supervises {what} as job {job}{where}{port} ({decision.mode} mode). "
        f"`corral ls` lists it with its ports; `corral stop {job}` stops it with every "
        "process it started. Reuse it rather than starting the same server again."
    )


def _agent_pid() -> int | None:
    """The agent that runs the rewritten line: its reservation ends if the agent is gone."""
    raw = os.environ.get("CLAUDE_PID", "")
    return int(raw) if raw.isdigit() and int(raw) > 0 else None


def answer(payload: dict[str, Any], tool_input: dict[str, Any], home: str) -> str | None:
    """The PreToolUse output for a candidate line, or None to let it run as written."""
    from corral.lowlevel import locations
    from corral.service import claude
    from corral.service.admission import admit

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

    decision = admit(
        line,
        background=tool_input.get("run_in_background") is True,
        cwd=cwd,
        wrapper=claude.wrapper(settings),
        extra_runners=config.extra_runners(settings),
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
    background call for the prefix (which cannot see `run_in_background`) and refuses a
    duplicate or a held port early; nothing is reserved, the prefix reserves when it runs."""
    from corral.service.admission import admit

    line: str = tool_input["command"]
    background = tool_input.get("run_in_background") is True
    session = payload.get("session_id")
    if background and isinstance(session, str):
        notes.note_background(home, session, line)
    decision = admit(
        line,
        background=background,
        cwd=cwd,
        extra_runners=config.extra_runners(settings),
        reserve=False,
    )
    if decision.action != "refuse" or not decision.refusal:
        return None
    out = {
        "hookEventName": "PreToolUse",
        "permissionDecision": "deny",
        "permissionDecisionReason": decision.refusal,
    }
    return json.dumps({"hookSpecificOutput": out})
