"""corral's Qwen Code hook: Qwen's JSON to the agent-neutral decision (common.py) and back.

usage: python3 -I -S run_hook.py qwen pre-tool-use | session-start | session-end

Qwen Code 0.24 fires PreToolUse but ignores `updatedInput`: a hook can deny a call, never
change it. So corral supervises by deny-and-redirect:
- PreToolUse on `run_shell_command` (`tool_input: {command, is_background, description}`):
  a duplicate or a held port is denied with corral's reason; a line corral would run under
  its supervisor (a long runner, `CMD &`, an `is_background` call) is denied with the exact
  `corral run -d --session <session> -c '…'` line to run instead, so the job still ends up
  supervised and attributed to the session. Answers are `hookSpecificOutput` with
  `permissionDecision: "deny"` and `permissionDecisionReason`, which the model reads as the
  tool's error. Nothing is reserved for a line that is denied (the model's own `corral run`
  reserves when it starts).
- SessionStart: the jobs already running in the project, with their URLs
  (`additionalContext`, given to the model with the first prompt).
- SessionEnd: the session-end policy (`terminate` stops the session's jobs).

The session is the hook's `session_id`, which is the `QWEN_CODE_SESSION_ID` every command
Qwen spawns carries. It fails open (common.serve).
"""

import sys

from corral.surfaces.agents import common

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

AGENT = "qwen"
EVENTS = ("pre-tool-use", "session-start", "session-end")
SHELL_TOOL = "run_shell_command"


def answer(event: str, payload: "dict[str, Any]", home: str) -> "str | None":
    """Qwen's hook output for one event (None: print nothing, the call runs as it is)."""
    if event == "pre-tool-use":
        return pre_tool_use(payload, home)
    return common.session_event(event, payload, home)


def pre_tool_use(payload: "dict[str, Any]", home: str) -> "str | None":
    call = common.shell_call(payload, SHELL_TOOL)
    if call is None:
        return None
    tool_input, command = call
    session = common.payload_text(payload, "session_id")
    # The redirected `corral run -d …`, even sent with is_background, passes: the line
    # reader never puts corral's own `run` under a second supervisor.
    verdict = common.decide(
        command,
        cwd=common.payload_text(payload, "cwd"),
        session=session,
        agent=AGENT,
        background=tool_input.get("is_background") is True,
        home=home,
        reserve=False,  # denied either way: nothing of this call will start
        call=common.payload_text(payload, "tool_use_id"),  # Qwen's own id of the call
    )
    if verdict.action == common.DENY and verdict.reason:
        reason = verdict.reason
    elif verdict.action == common.REWRITE and verdict.lines:
        reason = redirect(verdict.lines, session, in_place=verdict.mode == "in-place")
    else:
        return None
    out = {
        "hookEventName": "PreToolUse",
        "permissionDecision": "deny",
        "permissionDecisionReason": reason,
    }
    return common.to_json({"hookSpecificOutput": out})


def redirect(lines: "tuple[str, ...]", session: "str | None", *, in_place: bool) -> str:
    """The deny that tells the model what to run instead: each command under `corral run -d`,
    attributed to the session."""
    starts = [f"`{start_line(line, session)}`" for line in lines]
    if not in_place:
        return (
            "corral: not run. corral runs long-running and background commands under its "
            "supervisor, and Qwen Code cannot hand a command over, so run this instead, "
            f"exactly: {starts[0]} (it starts the command in the background under corral and "
            "returns once it is ready; `corral ls` lists it with its ports, `corral stop ID` "
            "stops it)."
        )
    return (
        "corral: not run. corral runs commands sent to the background under its supervisor, "
        "and Qwen Code cannot hand them over, so start each of them first, exactly: "
        f"{'; '.join(starts)}; then run the rest of your line without them (`corral ls` "
        "lists them with their ports, `corral stop ID` stops one)."
    )


def start_line(line: str, session: "str | None") -> str:
    """`corral run -d --session S -c LINE` as shell text, with the corral this hook is."""
    import shlex

    argv = [*corral_program(), "run", "-d"]
    if session:
        argv += ["--session", session]
    return shlex.join([*argv, "-c", line])


def corral_program() -> "list[str]":
    """The words that start this installation's corral in the model's shell: `corral` when
    that is the one on PATH, else its script by absolute path, else `python -m corral`."""
    import os
    import shutil

    script = os.path.join(os.path.dirname(sys.executable), "corral")
    if not os.access(script, os.X_OK):
        return [sys.executable, "-m", "corral"]
    found = shutil.which("corral")
    if found and os.path.realpath(found) == os.path.realpath(script):
        return ["corral"]
    return [script]


def main(argv: "list[str]") -> int:
    return common.serve(argv, EVENTS, answer)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
