"""corral's Codex CLI hook: Codex's JSON to the agent-neutral decision (common.py) and back.

usage: python3 -I -S run_hook.py codex pre-tool-use | post-tool-use | session-start |
       session-end

- PreToolUse (`tool_name: "Bash"`, `tool_input: {"command": …}`): a rewrite answers
  `permissionDecision: "allow"` with `updatedInput` (every field kept, only `command`
  changed) and tells the model what corral started; a refusal answers `"deny"` with the
  reason, which the model reads. A line sent to the background whole (`CMD &`) returns only
  once its supervisor leads a process group of its own: Codex SIGKILLs the command's group
  right after its shell exits. The hook's `cwd` is the session's, not the call's `workdir`
  (which the hook never sees): the rewrite does not change folder, so the job runs where
  Codex runs the command. In Codex's sandbox (a pid namespace that ends with the command)
  the line runs exactly as written: nothing there can outlive the command anyway.
- PostToolUse of a rewritten call: the server's URL once it listens, or how it ended at
  start with its last lines (`additionalContext`).
- SessionStart: the jobs already running in the project, with their URLs
  (`additionalContext`, a developer message).
- SessionEnd: the session-end policy (`terminate` stops the session's jobs).

The session is the hook's `session_id`, which is the `CODEX_THREAD_ID` every command Codex
spawns carries. It fails open (common.serve).
"""

import sys

from corral.surfaces.agents import common

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

AGENT = "codex"
EVENTS = ("pre-tool-use", "post-tool-use", "session-start", "session-end")


def _session(payload: "dict[str, Any]") -> "str | None":
    session = payload.get("session_id")
    return session if isinstance(session, str) and session else None


def _cwd(payload: "dict[str, Any]") -> "str | None":
    cwd = payload.get("cwd")
    return cwd if isinstance(cwd, str) else None


def answer(event: str, payload: "dict[str, Any]", home: str) -> "str | None":
    """Codex's hook output for one event (None: print nothing, the call runs as it is)."""
    if event == "pre-tool-use":
        return pre_tool_use(payload, home)
    if event == "post-tool-use":
        call = common.shell_call(payload, "Bash")
        note = common.started_note(call[1], home) if call else None
        return common.context_answer("PostToolUse", note)
    return common.session_event(event, payload, home)


def pre_tool_use(payload: "dict[str, Any]", home: str) -> "str | None":
    call = common.shell_call(payload, "Bash")
    if call is None:
        return None
    tool_input, command = call
    verdict = common.decide(
        command,
        cwd=_cwd(payload),
        session=_session(payload),
        agent=AGENT,
        background=False,  # Codex has no background flag: `CMD &`, or a call left running
        home=home,
        leave_group=True,
        call=common.payload_text(payload, "tool_use_id"),
    )
    out: dict[str, Any]
    if verdict.action == common.DENY:
        out = {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": verdict.reason,
        }
    elif verdict.action == common.REWRITE and verdict.command:
        out = {
            "hookEventName": "PreToolUse",
            "permissionDecision": "allow",
            "updatedInput": {**tool_input, "command": outside_sandbox(verdict.command, command)},
            "additionalContext": verdict.context,
        }
    else:
        return None
    return common.to_json({"hookSpecificOutput": out})


PROBE = "readlink /proc/self/ns/pid 2>/dev/null"


def outside_sandbox(rewritten: str, line: str) -> str:
    """`rewritten` where the command runs in this hook's pid namespace, else `line` exactly
    as written (`eval` of the quoted line). Codex's Linux sandbox (workspace-write, the
    default, and read-only) runs a command in a pid namespace of its own that ends with the
    command: nothing started there outlives it, and the pids a supervisor would record there
    are not the machine's. Without /proc (macOS) there is nothing to compare."""
    import os

    from corral.core.shell.decision import quote_for_wrapper

    try:
        here = os.readlink("/proc/self/ns/pid")
    except OSError:
        return rewritten
    return (
        f'if [ "$({PROBE})" = {quote_for_wrapper(here)} ]; then\n{rewritten}\n'
        f"else eval {quote_for_wrapper(line)}\nfi"
    )


def main(argv: "list[str]") -> int:
    return common.serve(argv, EVENTS, answer)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
