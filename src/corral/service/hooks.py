"""What every agent's hook asks of the service for one shell line (the Claude Code hook and
the adapters in surfaces/agents alike): the admission with the user's configuration, and what
the model is told about the job it just started. Nothing is imported until a function runs:
the hooks' start-up is a budget."""

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from corral.core.shell.decision import Reading
    from corral.core.shell.plan import Decision


# Agents whose shell may be a POSIX sh (the user's login shell, or $SHELL): a mid-line job
# moves into the supervisor's command line there, never through a `function NAME {` (bash
# and zsh only). Claude Code runs bash or zsh, Gemini CLI bash; Qwen Code is only denied.
POSIX_SHELL_AGENTS = frozenset({"codex", "opencode"})


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
    user's configuration: their long runners, grace period and backend. `detach_to`: see
    `core.shell.plan.decide`."""
    from corral.service.admission import admit_reading

    reading = read_line(
        line,
        cwd=cwd,
        background=background,
        session=session,
        agent=agent,
        settings=settings,
        detach_to=detach_to,
    )
    return admit_reading(reading, accept=accept, holder=holder, reserve=reserve)


def read_line(
    line: str,
    *,
    cwd: str,
    background: bool,
    session: "str | None" = None,
    agent: "str | None" = None,
    settings: "dict[str, Any] | None" = None,
    detach_to: "str | None" = None,
) -> "Reading":
    """`line` read with the user's configuration, before it meets the live jobs (the first
    half of `admit_line`; `service.admission.admit_reading` is the second)."""
    from corral import config
    from corral.service import claude
    from corral.service.admission import read

    settings = config.load() if settings is None else settings
    return read(
        line,
        background=background,
        cwd=cwd,
        wrapper=claude.wrapper(settings, session=session, agent=agent),
        extra_runners=config.extra_runners(settings),
        detach_to=detach_to,
        kept_text=agent not in POSIX_SHELL_AGENTS,
    )


def started_context(decision: "Decision") -> str:
    """What the model is told about the job it just started."""
    if decision.in_place:
        started = []
        for wrap in decision.in_place:
            moved = decision.jobs[wrap.job]
            port = f", port {moved.port}" if moved.port else ""
            started.append(f"`{moved.display}` as job {wrap.token[:8]} in {moved.cwd}{port}")
        told = (
            f"corral supervises {'; '.join(started)} (each sent to the background in this "
            "line, rewritten in place; the rest of the line ran as written). `corral ls` "
            "lists them with their ports; `corral stop ID` stops one with every process it "
            "started. Reuse them rather than starting the same servers again."
        )
        if any(wrap.form == "hash" for wrap in decision.in_place):
            told += (
                " A list whose server only the shell's table of commands leads to corral "
                "runs as written, unsupervised, when one of your shell functions is in it "
                "(it could change PATH): `corral ls` then lists that server as unsupervised."
            )
        return told
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


def briefing(cwd: str, session: "str | None", source: "str | None" = None) -> "str | None":
    """What a session starting in `cwd` is told: the jobs running in its project with their
    URLs (after a compaction or a resume, its own first), and processes earlier sessions left
    there unsupervised; None if nothing."""
    from corral.service import claude

    parts = [claude.session_briefing(cwd, session, source), claude.unsupervised_leftovers(cwd)]
    return "\n\n".join(p for p in parts if p) or None
