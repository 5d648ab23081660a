"""corral's opencode hook: what corral's opencode plugin sends, to the agent-neutral decision
(common.py) and back.

usage: python3 -I -S run_hook.py opencode tool-before

opencode runs plugins in its own runtime (bun) before every tool call
(`tool.execute.before`): a plugin may change `output.args.command` in place, and throwing
refuses the call (the model reads the error's message). corral's plugin is thin on purpose
(opencode_plugin.ts, written by `corral install opencode`): for each `bash` call it sends
this program `{"tool", "sessionID", "callID", "args", "directory", "worktree"}` (`args` as
the model wrote them: `command`, `description`, and `workdir`, `timeout` when given) and
follows the answer: `{"command": …, "context": …}` replaces the line (it runs under corral's
supervisor) and adds the context to the call's output (what corral started, for the model),
`{"deny": reason}` refuses the call, nothing runs it as written. The line is read here, by
the same code as every other agent's, never in TypeScript.

opencode's shells carry no session variable (only `OPENCODE=1`, `OPENCODE_PID`), so the
rewrite carries the plugin's `sessionID` to the supervisor. It fails open (common.serve, and
the plugin, which runs the call as written when this program fails or says nothing).
"""

import sys

from corral.surfaces.agents import common

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

AGENT = "opencode"
EVENTS = ("tool-before",)
SHELL_TOOL = "bash"
PLUGIN_MARK = "// corral's opencode plugin: `corral install opencode` writes it"
_HOOK_SLOT = "__CORRAL_HOOK__"


def _text(payload: "dict[str, Any]", key: str) -> "str | None":
    value = payload.get(key)
    return value if isinstance(value, str) and value else None


def answer(event: str, payload: "dict[str, Any]", home: str) -> "str | None":
    """The plugin's answer for one call (None: print nothing, the call runs as it is)."""
    args = payload.get("args")
    if event != "tool-before" or payload.get("tool") != SHELL_TOOL or not isinstance(args, dict):
        return None
    command = args.get("command")
    if not isinstance(command, str):
        return None
    cwd = _text(payload, "directory")
    workdir = args.get("workdir")
    if isinstance(workdir, str) and workdir and cwd:
        import os

        cwd = os.path.join(cwd, workdir)  # the call's folder (absolute, or the project's)
    verdict = common.decide(
        command,
        cwd=cwd,
        session=_text(payload, "sessionID"),
        agent=AGENT,
        background=False,  # opencode's bash tool has no background flag: `CMD &`
        home=home,
        holder=_opencode_pid(),
        # opencode's bash tool returns only once the command's output pipe closes: a job
        # sent to the background must leave it (its output goes to corral's log).
        leave_group=True,
        call=_text(payload, "callID"),
    )
    if verdict.action == common.DENY:
        return common.to_json({"deny": verdict.reason})
    if verdict.action == common.REWRITE:
        return common.to_json({"command": verdict.command, "context": verdict.context})
    return None


def _opencode_pid() -> "int | None":
    """opencode, which runs this program from its plugin and then the rewritten line: the
    reservation of the job's start ends if it is gone."""
    import os

    parent = os.getppid()
    return parent if parent > 1 else None


def plugin_text(hook: "Sequence[str]") -> str:
    """The plugin as installed: its source with `hook` (the argv of the program it asks) in
    place of the placeholder, as a JSON array (a TypeScript array literal too)."""
    import json
    import os

    source_path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "opencode_plugin.ts")
    with open(source_path, encoding="utf-8") as f:
        source = f.read()
    if source.count(_HOOK_SLOT) != 1:
        raise RuntimeError(f"{source_path} must name {_HOOK_SLOT} exactly once")
    return source.replace(_HOOK_SLOT, json.dumps(list(hook)))


def main(argv: "list[str]") -> int:
    return common.serve(argv, EVENTS, answer)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
