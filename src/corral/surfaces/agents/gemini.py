"""corral's Gemini CLI hook: Gemini's JSON to the agent-neutral decision (common.py) and back.

usage: python3 -I -S run_hook.py gemini before-tool | after-tool | session-start |
       session-end

- BeforeTool on `run_shell_command` (`tool_input: {command, description, dir_path,
  is_background, …}`): a rewrite answers `hookSpecificOutput.tool_input`, which REPLACES
  the arguments: every original key comes back, only `command` changed (without
  `is_background` a server would hold `gemini -p` open). `is_background` is the background
  flag. A refusal answers `{"decision": "deny", "reason": …}`; the model reads the reason.
- AfterTool of a rewritten call: the server's URL once it listens, or how it ended at start
  with its last lines (`additionalContext`, appended to the tool's output).
- SessionStart: the jobs already running in the project, with their URLs
  (`additionalContext`, put before the first prompt).
- SessionEnd: the session-end policy; Gemini may say it twice (the TUI's /quit): once is
  acted on.

Gemini's shell commands carry no session variable, so the rewrite carries the hook's
`session_id` to the supervisor, and a line of corral's own `run` (which corral does not
wrap again) is given it as `CORRAL_SESSION`. It fails open (common.serve).
"""

import sys

from corral.surfaces.agents import common

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

AGENT = "gemini"
EVENTS = ("before-tool", "after-tool", "session-start", "session-end")
SHELL_TOOL = "run_shell_command"


def answer(event: str, payload: "dict[str, Any]", home: str) -> "str | None":
    """Gemini's hook output for one event (None: print nothing, the call runs as it is)."""
    if event == "before-tool":
        return before_tool(payload, home)
    if event == "after-tool":
        call = common.shell_call(payload, SHELL_TOOL)
        note = common.started_note(call[1], home) if call else None
        return common.context_answer("AfterTool", note)
    return common.session_event(event, payload, home)


def before_tool(payload: "dict[str, Any]", home: str) -> "str | None":
    call = common.shell_call(payload, SHELL_TOOL)
    if call is None:
        return None
    tool_input, command = call
    folder = tool_input.get("dir_path")
    cwd = common.payload_text(payload, "cwd")
    if isinstance(folder, str) and folder and cwd:
        import os

        cwd = os.path.join(cwd, folder)  # the call's folder (absolute, or the project's)
    verdict = common.decide(
        command,
        cwd=cwd,
        session=common.payload_text(payload, "session_id"),
        agent=AGENT,
        background=tool_input.get("is_background") is True,
        home=home,
        call=f"{payload.get('timestamp')}\0{command}\0{folder}",  # BeforeTool has no call id
        shell_session=False,  # Gemini's shell commands carry no session variable
    )
    if verdict.action == common.DENY:
        return common.to_json({"decision": "deny", "reason": verdict.reason})
    if verdict.action == common.REWRITE:
        out = {
            "hookEventName": "BeforeTool",
            "tool_input": {**tool_input, "command": verdict.command},
        }
        return common.to_json({"hookSpecificOutput": out})
    return None


def main(argv: "list[str]") -> int:
    return common.serve(argv, EVENTS, answer)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
