"""The agent-neutral decision behind every coding agent's hook adapter (codex.py, gemini.py,
and the others beside them): for one shell line the agent is about to run, `decide` says
pass (run it as written), rewrite (run it under corral's supervisor, attributed to the
agent's session) or deny (a duplicate, or a port something holds: the reason names what to
reuse). It is the Claude Code hook's decision (`admit_line`, which surfaces/claude/pretool.py
calls too), its fast path (`hook.may_need_supervision`) and its refusals, word for word.

An adapter only translates: its agent's JSON to `decide`'s arguments, the `Verdict` back to
its agent's JSON. `serve` is the entry every adapter shares: read stdin, answer, fail open.

Start-up is the hook's budget: importing this module loads nothing; a line that starts no
long runner and sends nothing to the background is answered after the same word check as
the Claude hook, without `json`, `re`, the line reader or site-packages. Only a candidate
line (or a session event) loads the rest.
"""

import sys

# Every agent's hook, Claude Code's included, asks the service the same way.
from corral.service.hooks import admit_line, started_context

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from corral.core.shell.plan import Decision


__all__ = ["admit_line", "started_context"]

PASS = "pass"
REWRITE = "rewrite"
DENY = "deny"


class Verdict:
    """What to do with one line: `action` is PASS, REWRITE (`command` replaces the line;
    `context` tells the model what corral started; `lines` are the commands it runs under a
    supervisor, as the agent wrote them; `mode`: the supervisor's, `in-place` when only
    commands sent to the background mid-line are) or DENY (`reason`, for the model)."""

    __slots__ = ("action", "command", "context", "lines", "mode", "reason")

    def __init__(
        self,
        action: str,
        command: "str | None" = None,
        reason: "str | None" = None,
        context: "str | None" = None,
        *,
        lines: "tuple[str, ...]" = (),
        mode: "str | None" = None,
    ) -> None:
        self.action = action
        self.command = command
        self.reason = reason
        self.context = context
        self.lines = lines
        self.mode = mode

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Verdict) and all(
            getattr(self, k) == getattr(other, k) for k in self.__slots__
        )

    def __hash__(self) -> int:
        return hash((self.action, self.command, self.reason, self.context, self.lines, self.mode))

    def __repr__(self) -> str:
        return f"Verdict({self.action!r}, command={self.command!r}, reason={self.reason!r})"


PASSED = Verdict(PASS)


def decide(
    line: str,
    *,
    cwd: "str | None",
    session: "str | None",
    agent: str,
    background: bool,
    home: str,
    leave_group: bool = False,
    holder: "int | None" = None,
    call: "str | None" = None,
    reserve: bool = True,
    shell_session: bool = True,
) -> Verdict:
    """The verdict for `line`, which agent `agent` runs in session `session` from folder
    `cwd` (`background`: the agent itself runs it in the background). A rewrite runs the
    whole line under a supervisor given `--session` (the agent's shell children may carry no
    session variable) and the agent's name. `leave_group`: a line sent to the background whole
    returns only once its supervisor leads a group of its own, its output in corral's log of
    the job (`core.shell.plan.decide`'s `detach_to`). `call`: what tells this tool call
    from the session's others (the agent's call id, or its time and input): of two copies
    of corral's hook (user and project scope), only the first to claim the call decides
    (`hook.first_copy`), else the second would refuse the server the first is starting.
    `reserve` False: the caller will not run the rewrite (an agent that can only deny), so
    no start is reserved for it. `shell_session` False: the agent's shell commands carry no
    session variable (Gemini), so a line of corral's own `run`, which the line reader leaves
    as written, is given the session (`export CORRAL_SESSION=…;` before it). `home` is
    corral's state folder. Never raises for a line it cannot read: PASSED."""
    from corral.surfaces.claude import hook

    if len(line) > hook.LINE_LIMIT or hook.rewritten_by_corral(line):
        return PASSED
    if not shell_session and session and "corral" in line:
        carried = _with_session(line, cwd, session, home)
        if carried is not None:
            return carried
    from corral.lowlevel import locations

    extra = hook.extra_words(home, locations.config_path())
    if not hook.may_need_supervision(line, background, extra):
        return PASSED
    import os

    if cwd is None or not os.path.isdir(cwd):
        return PASSED
    if call and session:
        from corral.lowlevel.redact import command_digest

        claim = {
            "session_id": command_digest(session)[:32],
            "tool_use_id": command_digest(call)[:32],
        }
        if not hook.first_copy(home, f"{agent}-pre-tool", claim):
            return PASSED
    hook._site()
    hook._pin_home(home)
    detach_to = None
    if leave_group:
        detach_to = locations.ensure_private(os.path.join(home, "logs"))
    decision = admit_line(
        line,
        cwd=cwd,
        background=background,
        session=session,
        agent=agent,
        holder=holder,
        detach_to=detach_to,
        reserve=reserve,
    )
    if decision.action == "refuse" and decision.refusal:
        return Verdict(DENY, reason=decision.refusal)
    if decision.action == "wrap" and decision.rewritten:
        context = started_context(decision)
        lines = supervised_lines(line, decision)
        return Verdict(
            REWRITE, decision.rewritten, context=context, lines=lines, mode=decision.mode
        )
    return PASSED


def _with_session(line: str, cwd: "str | None", session: str, home: str) -> "Verdict | None":
    """`line` given the session when it starts its jobs through corral's own `run` only
    (corral run reads CORRAL_SESSION); None for any other line."""
    import os

    if cwd is None or not os.path.isdir(cwd):
        return None
    from corral.surfaces.claude import hook

    hook._site()
    from corral.core.shell.plan import started_by_corral

    if not started_by_corral(line, cwd, os.path.expanduser("~")):
        return None
    import shlex

    return Verdict(REWRITE, f"export CORRAL_SESSION={shlex.quote(session)}; {line}")


def supervised_lines(line: str, decision: "Decision") -> "tuple[str, ...]":
    """The commands a wrapped `line` runs under supervisors, as written in it: each command
    sent to the background mid-line, or the whole line (less a trailing `&`)."""
    if decision.in_place:
        raw = line.encode("utf-8")
        return tuple(raw[w.start : w.end].decode("utf-8") for w in decision.in_place)
    import shlex

    # The line is the word after the supervisor's `--` (whatever shell text is around it:
    # a trailing `&`, a handshake); no word after the line is `--`.
    words = shlex.split(decision.rewritten or "")
    marks = [at for at, word in enumerate(words) if word == "--"]
    return (words[marks[-1] + 1].rstrip(),) if marks and marks[-1] + 1 < len(words) else ()


def briefing(
    cwd: "str | None", session: "str | None", home: str, source: "str | None" = None
) -> "str | None":
    """What a new session is told (SessionStart): the jobs already running in its project
    with their URLs, and processes earlier sessions left there unsupervised; None if none.
    After a compaction or a resume (`source`), the session's own running jobs come first."""
    import os

    if cwd is None or not os.path.isdir(cwd):
        return None
    from corral.surfaces.claude import hook

    hook._site()
    hook._pin_home(home)
    from corral.service.hooks import briefing as told

    return told(cwd, session, source)


def session_ended(session: "str | None", home: str) -> None:
    """A session ended (SessionEnd): with the `terminate` policy, stop its jobs in the
    background. Said again within ENDED_SECONDS (Gemini says it twice on /quit) it is acted
    on once; a resumed session that ends later is acted on again."""
    if not session:
        return
    from corral.surfaces.claude import hook

    hook._site()
    hook._pin_home(home)
    from corral import config

    if config.session_end() != "terminate" or not _first_end(session, home):
        return
    from corral.surfaces.claude.events import stop_in_background

    stop_in_background(session)


ENDED_SECONDS = 30.0


def _first_end(session: str, home: str) -> bool:
    """Whether this is the first SessionEnd of `session` in ENDED_SECONDS (a marker file,
    created exclusively, so of two told at once one acts)."""
    import os
    import time

    from corral.lowlevel import locations
    from corral.lowlevel.redact import command_digest

    folder = locations.ensure_private(os.path.join(home, "ended-sessions"))
    path = os.path.join(folder, command_digest(session)[:32])
    for _ in range(2):
        try:
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
            _forget_old_ends(folder, time.time() - ENDED_SECONDS)
            return True
        except FileExistsError:
            try:
                if time.time() - os.stat(path).st_mtime < ENDED_SECONDS:
                    return False
                os.unlink(path)  # an end long ago: this session was resumed since
            except FileNotFoundError:
                pass
    return False


def started_note(command: "str | None", home: str) -> "str | None":
    """After a call corral rewrote (PostToolUse): the server's URL once it listens, or how
    the job ended at start with its last lines (surfaces/claude/started.py); None for a
    line corral did not rewrite, or nothing worth saying."""
    from corral.surfaces.claude import hook

    if not isinstance(command, str) or not hook.rewritten_by_corral(command):
        return None
    hook._site()
    hook._pin_home(home)
    from corral.surfaces.claude import started

    return started.note(command)


def session_event(event: str, payload: "dict[str, Any]", home: str) -> "str | None":
    """SessionStart and SessionEnd for an agent whose hooks speak Claude Code's JSON (Codex,
    Gemini, Qwen Code): the briefing as `hookSpecificOutput.additionalContext`, the
    session-end policy; None for any other event, or nothing to tell."""

    def text(key: str) -> "str | None":
        return payload_text(payload, key)

    if event == "session-start":
        return context_answer("SessionStart", briefing(text("cwd"), text("session_id"), home,
                                                       text("source")))  # fmt: skip
    if event == "session-end":
        session_ended(text("session_id"), home)
    return None


def serve(argv: "list[str]", events: "tuple[str, ...]", answer: "Callable[..., str | None]") -> int:
    """The entry of an agent's hook: `argv` is one of `events`; the JSON on stdin and corral's
    home go to `answer(event, payload, home)`, whose text (if any) goes to stdout. It fails
    open: input that is not JSON, or any internal error, means exit 0, no output and one line
    in corral's log, so the agent's command runs exactly as written."""
    from corral.lowlevel import locations
    from corral.surfaces.claude import hook, parse

    home = locations.home_dir()
    if len(argv) != 1 or argv[0] not in events:
        sys.stderr.write(f"usage: one of {' | '.join(events)}, with the hook's JSON on stdin\n")
        return 2
    try:
        payload = parse(sys.stdin.buffer.read().decode("utf-8"))
        out = answer(argv[0], payload, home) if isinstance(payload, dict) else None
    except BaseException as exc:  # noqa: BLE001 - the hook fails open, whatever went wrong
        hook.log(home, f"{argv[0]}: {type(exc).__name__}: {exc}")
        return 0
    if out:
        sys.stdout.write(out)
        sys.stdout.flush()
    return 0


def _forget_old_ends(folder: str, before: float) -> None:
    """Remove the markers of ends older than `before`: they decide nothing any more."""
    import os

    for entry in os.scandir(folder):
        try:
            if entry.stat().st_mtime < before:
                os.unlink(entry.path)
        except OSError:
            continue


def payload_text(payload: "dict[str, Any]", key: str) -> "str | None":
    """`payload[key]` when it is a non-empty string, else None."""
    value = payload.get(key)
    return value if isinstance(value, str) and value else None


def shell_call(payload: "dict[str, Any]", tool: str) -> "tuple[dict[str, Any], str] | None":
    """The arguments and the command line of `payload` when it is a call of the agent's shell
    tool `tool`; None for any other tool or shape."""
    tool_input = payload.get("tool_input")
    if payload.get("tool_name") != tool or not isinstance(tool_input, dict):
        return None
    command = tool_input.get("command")
    return (tool_input, command) if isinstance(command, str) else None


def context_answer(hook_event: str, text: "str | None") -> "str | None":
    """The answer that gives the model `text` (`hookSpecificOutput.additionalContext`, read
    by Codex, Gemini and Claude Code alike); None without text."""
    if not text:
        return None
    return to_json({"hookSpecificOutput": {"hookEventName": hook_event, "additionalContext": text}})


def to_json(value: object) -> str:
    """Compact JSON for a hook's stdout (`json` is loaded only for an answer)."""
    import json

    return json.dumps(value)
