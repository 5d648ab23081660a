"""corral's opencode hook: what corral's opencode plugin sends, to the agent-neutral decision
(common.py) and back.

usage: python3 -I -S run_hook.py opencode tool-before | briefing

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

opencode has no session-start hook that gives the model context; it builds the system
prompt anew for each request to the model, and a plugin may add to it
(`experimental.chat.system.transform`, input `{sessionID, model}`, output `{system:
string[]}`). There the plugin sends `{"sessionID", "directory", "worktree"}` to `briefing`
and puts the answer's `context` (the briefing every agent gets at session start: the jobs
running in the project with their URLs, processes earlier sessions left there) into the
prompt. A briefing costs a scan of the machine (0.35-0.6 s measured on a loaded 2-core
machine, bench/bench_briefing.py), and a task may take many requests to the model, so the
plugin keeps it per session and asks again only when the answer's `watch` folder, corral's
ledger, changed (a job started, ended, was forgotten): a stat, ~0.02 ms.
Once opencode compacted the session (`experimental.session.compacting`) it asks with
`"source": "compact"`, and the session's own running jobs are told first, as Claude Code is
told after a compaction.

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
EVENTS = ("tool-before", "briefing")
SHELL_TOOL = "bash"
PLUGIN_MARK = "// corral's opencode plugin: `corral install opencode` writes it"
_HOOK_SLOT = "__CORRAL_HOOK__"


def answer(event: str, payload: "dict[str, Any]", home: str) -> "str | None":
    """The plugin's answer for one event (None: print nothing, the call runs as it is)."""
    if event == "briefing":
        return briefing(payload, home)
    args = payload.get("args")
    if payload.get("tool") != SHELL_TOOL or not isinstance(args, dict):
        return None
    command = args.get("command")
    if not isinstance(command, str):
        return None
    cwd = common.payload_text(payload, "directory")
    workdir = args.get("workdir")
    if isinstance(workdir, str) and workdir and cwd:
        import os

        cwd = os.path.join(cwd, workdir)  # the call's folder (absolute, or the project's)
    verdict = common.decide(
        command,
        cwd=cwd,
        session=common.payload_text(payload, "sessionID"),
        agent=AGENT,
        background=False,  # opencode's bash tool has no background flag: `CMD &`
        home=home,
        holder=_opencode_pid(),
        # opencode's bash tool returns only once the command's output pipe closes: a job
        # sent to the background must leave it (its output goes to corral's log).
        leave_group=True,
        call=common.payload_text(payload, "callID"),
    )
    if verdict.action == common.DENY:
        return common.to_json({"deny": verdict.reason})
    if verdict.action == common.REWRITE:
        return common.to_json({"command": verdict.command, "context": verdict.context})
    return None


def briefing(payload: "dict[str, Any]", home: str) -> str:
    """The session briefing for `{"sessionID", "directory", "source"}`: `{"context": …}`
    (the jobs running in the project with their URLs, what every agent is told at session
    start, and after a compaction, `"source": "compact"`, the session's own first; absent
    when there is nothing to tell) and `{"watch": …}`, corral's ledger folder, whose change
    (a job started, ended or was forgotten) is when the briefing may have changed."""
    from corral.lowlevel import locations

    source = "compact" if payload.get("source") == "compact" else None
    text = common.briefing(
        common.payload_text(payload, "directory"),
        common.payload_text(payload, "sessionID"),
        home,
        source,
    )
    out = {"watch": locations.ledger_dir()}
    return common.to_json({**out, "context": text} if text else out)


def _opencode_pid() -> "int | None":
    """opencode, which runs this program from its plugin and then the rewritten line: the
    reservation of the job's start ends if it is gone."""
    import os

    parent = os.getppid()
    return parent if parent > 1 else None


def hook_program() -> "list[str]":
    """The command of corral's hook program the plugin runs, without the event's name (the
    plugin adds it)."""
    from corral.surfaces.agents import run_hook

    return run_hook.command(AGENT, EVENTS[0])[:-1]


def plugin_text(hook: "Sequence[str]") -> str:
    """The plugin as installed: its source with `hook` (the argv of the program it asks,
    to which it adds each event's name) in place of the placeholder, as a JSON array (a
    TypeScript array literal too)."""
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
