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

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from corral.core.shell.plan import Decision

PASS = "pass"
REWRITE = "rewrite"
DENY = "deny"


class Verdict:
    """What to do with one line: `action` is PASS, REWRITE (`command` replaces the line;
    `context` tells the model what corral started) or DENY (`reason`, for the model)."""

    __slots__ = ("action", "command", "context", "reason")

    def __init__(
        self,
        action: str,
        command: "str | None" = None,
        reason: "str | None" = None,
        context: "str | None" = None,
    ) -> None:
        self.action = action
        self.command = command
        self.reason = reason
        self.context = context

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Verdict) and all(
            getattr(self, k) == getattr(other, k) for k in self.__slots__
        )

    def __hash__(self) -> int:
        return hash((self.action, self.command, self.reason, self.context))

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
) -> Verdict:
    """The verdict for `line`, which agent `agent` runs in session `session` from folder
    `cwd` (`background`: the agent itself runs it in the background). A rewrite runs the
    whole line under a supervisor given `--session` (the agent's shell children may carry no
    session variable) and the agent's name. `leave_group`: a line sent to the background whole
    returns only once its supervisor leads a group of its own, its output in corral's log of
    the job (`core.shell.plan.decide`'s `detach_to`).
    `home` is corral's state folder. Never raises for a line it cannot read: PASSED."""
    from corral.surfaces.claude import hook

    if len(line) > hook.LINE_LIMIT or hook.rewritten_by_corral(line):
        return PASSED
    from corral.lowlevel import locations

    extra = hook.extra_words(home, locations.config_path())
    if not hook.may_need_supervision(line, background, extra):
        return PASSED
    import os

    if cwd is None or not os.path.isdir(cwd):
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
    )
    if decision.action == "refuse" and decision.refusal:
        return Verdict(DENY, reason=decision.refusal)
    if decision.action == "wrap" and decision.rewritten:
        return Verdict(REWRITE, command=decision.rewritten, context=started_context(decision))
    return PASSED


def admit_line(
    line: str,
    *,
    cwd: str,
    background: bool,
    session: "str | None" = None,
    agent: "str | None" = None,
    settings: "dict[str, Any] | None" = None,
    accept: "Callable[[Decision], bool] | None" = None,
    holder: "int | None" = None,
    detach_to: "str | None" = None,
    reserve: bool = True,
) -> "Decision":
    """The admission every agent's hook asks for one line (service.admission.admit) with the
    user's configuration: their long runners, grace period and backend."""
    from corral import config
    from corral.service import claude
    from corral.service.admission import admit

    settings = config.load() if settings is None else settings
    return admit(
        line,
        background=background,
        cwd=cwd,
        wrapper=claude.wrapper(settings, session=session, agent=agent),
        extra_runners=config.extra_runners(settings),
        accept=accept,
        holder=holder,
        detach_to=detach_to,
        reserve=reserve,
    )


def started_context(decision: "Decision") -> str:
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


def briefing(cwd: "str | None", session: "str | None", home: str) -> "str | None":
    """What a new session is told (SessionStart): the jobs already running in its project
    with their URLs, and processes earlier sessions left there unsupervised; None if none."""
    import os

    if cwd is None or not os.path.isdir(cwd):
        return None
    from corral.surfaces.claude import hook

    hook._site()
    hook._pin_home(home)
    from corral.service import claude

    parts = [claude.session_briefing(cwd, session), claude.unsupervised_leftovers(cwd)]
    return "\n\n".join(p for p in parts if p) or None


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
            return True
        except FileExistsError:
            try:
                if time.time() - os.stat(path).st_mtime < ENDED_SECONDS:
                    return False
                os.unlink(path)  # an end long ago: this session was resumed since
            except FileNotFoundError:
                pass
    return False


def serve(argv: "list[str]", events: "tuple[str, ...]", answer: "Callable[..., str | None]") -> int:
    """The entry of an agent's hook: `argv` is one of `events`; the JSON on stdin and corral's
    home go to `answer(event, payload, home)`, whose text (if any) goes to stdout. It fails
    open: input that is not JSON, or any internal error, means exit 0, no output and one line
    in corral's log, so the agent's command runs exactly as written."""
    from corral.lowlevel import locations
    from corral.surfaces.claude import hook

    home = locations.home_dir()
    if len(argv) != 1 or argv[0] not in events:
        sys.stderr.write(f"usage: one of {' | '.join(events)}, with the hook's JSON on stdin\n")
        return 2
    try:
        payload = hook.parse(sys.stdin.buffer.read().decode("utf-8"))
        out = answer(argv[0], payload, home) if isinstance(payload, dict) else None
    except BaseException as exc:  # noqa: BLE001 - the hook fails open, whatever went wrong
        hook.log(home, f"{argv[0]}: {type(exc).__name__}: {exc}")
        return 0
    if out:
        sys.stdout.write(out)
        sys.stdout.flush()
    return 0


def to_json(value: object) -> str:
    """Compact JSON for a hook's stdout (`json` is loaded only for an answer)."""
    import json

    return json.dumps(value)
