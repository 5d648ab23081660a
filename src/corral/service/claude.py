"""The service behind corral's Claude Code hooks: permission parity, what a new session is
told, and the session-end policy. The hook entry point (surfaces/claude) holds no logic."""

from __future__ import annotations

import os

from corral import config
from corral.core.shell.messages import age
from corral.lowlevel import locations
from corral.lowlevel.named import NamedTuple

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any


def wrapper(
    settings: dict[str, Any] | None = None, *, session: str | None = None, agent: str | None = None
) -> list[str]:
    """The words that start the supervisor (or the tmux wrapper) in the agent's shell: an
    absolute interpreter in isolated mode and an absolute program, so nothing on PATH or in
    PYTHON* variables can stand in for them. They name corral's ledger folder, as `corral
    run` does: the supervisor runs in the agent's shell, whose environment (a relative
    CORRAL_HOME, another XDG_STATE_HOME) may not lead it to the folder the CLI reads.
    `session`: the agent session that owns the job, for agents whose shell commands carry no
    variable the supervisor reads it from (every agent but Claude Code); `agent`: the agent's
    name, recorded with the job."""
    settings = config.load() if settings is None else settings
    tmux = config.backend(settings) == "tmux"
    return locations.supervisor_argv(
        None,
        program=locations.TMUX_WRAPPER if tmux else locations.LAUNCHER,
        ledger=locations.ledger_dir(),
        session=session,
        grace=config.grace(settings),
        options=["--meta", f"agent={agent}"] if agent else (),
    )


def permission(
    line: str, rewritten: str, cwd: str, project_dir: str, permission_mode: str | None
) -> str:
    """How Claude Code's own rules treat the original `line`, given the `rewritten` text the
    hook would send instead: `allow`, `ask`, `deny`, `none` (no rule speaks) or `unsure`.
    Only allow, ask and none let corral rewrite it."""
    from corral.adapters.claude_settings import command_line_rules, load_rules
    from corral.core.claude.permissions import verdict

    if command_line_rules(os.getppid()) is not None:
        return "unsure"
    home = os.path.expanduser("~")
    rules = load_rules(project_dir, home, config_dir=os.environ.get("CLAUDE_CONFIG_DIR"))

    def cd_inside(target: str) -> bool:
        where = os.path.normpath(os.path.join(cwd, os.path.expanduser(target)))
        return _inside(where, project_dir)

    return str(verdict(line, rules, permission_mode, rewritten=rewritten, cd_inside=cd_inside))


def _inside(path: str | None, root: str) -> bool:
    if path is None:
        return False
    p, r = os.path.normpath(path), os.path.normpath(root)
    return p == r or p.startswith(r.rstrip("/") + "/")


def _live_here(folder: str) -> list[Any]:
    """The live jobs whose folder is inside `folder`'s project."""
    from pathlib import Path

    from corral.core.outcomes import LIVE_STATES
    from corral.service import jobs
    from corral.service.projects import project_root

    root = str(project_root(Path(folder)))
    return [j for j in jobs.list_jobs().jobs if j.state in LIVE_STATES and _inside(j.cwd, root)]


def _job_line(j: Any) -> str:
    ports = " ".join(f"http://localhost:{p}" for p in j.ports) or "no port open"
    note = f" ({j.note})" if j.note else ""
    return f"- job {j.id[:8]}: `{j.command}` in {j.cwd}, {ports}, up {age(j.age_seconds)}{note}"


def session_briefing(folder: str, session: str | None, source: str | None = None) -> str | None:
    """For a session starting in `folder`: the jobs already running there (any session's),
    with their ports, so the model reuses them; None when there are none. After a compaction
    or a resume (`source` "compact" or "resume") the model has lost track of its own
    background jobs too, so the session's own running jobs are told first."""
    live = _live_here(folder)
    parts = []
    own = [j for j in live if session is not None and j.session == session]
    if own and source in ("compact", "resume"):
        after = "the compaction" if source == "compact" else "resuming"
        parts.append(
            "\n".join(
                [
                    f"corral: {len(own)} job(s) this session started are still running "
                    f"(after {after} you may have lost track of them). Reuse them; "
                    "`corral logs ID` shows their output, `corral stop ID` stops one.",
                    *(_job_line(j) for j in own),
                ]
            )
        )
    listed = [j for j in live if j.session != session]
    if listed:
        parts.append(
            "\n".join(
                [
                    f"corral: {len(listed)} job(s) started earlier are still running in this "
                    "project. Reuse them instead of starting the same servers again; `corral "
                    "ls` shows them, `corral stop ID` stops one.",
                    *(_job_line(j) for j in listed),
                ]
            )
        )
    return "\n\n".join(parts) or None


def unsupervised_leftovers(folder: str) -> str | None:
    """Processes of ended sessions in `folder` that corral did not start (Claude moved them
    to the background, or the line was unreadable): listed, stoppable by identity."""
    from pathlib import Path

    from corral.service.projects import project_root
    from corral.service.sessions import list_processes

    root = project_root(Path(folder))
    views = [
        v
        for v in list_processes(orphaned=True, project=root).processes
        if v.attribution != "supervised" and v.own
    ]
    if not views:
        return None
    lines = [
        f"corral: {len(views)} process(es) left over from earlier sessions run in this "
        "project (not supervised; `corral ls --orphaned` lists them, "
        "`corral stop --pid PID --started-at T` stops one after checking it):"
    ]
    for v in views[:20]:
        ports = " ".join(f":{p}" for p in v.ports) or "no port"
        lines.append(f"- pid {v.pid}: `{v.command or v.name}`, {ports}, up {age(v.age_seconds)}")
    return "\n".join(lines)


def remember_background(session: str | None) -> None:
    """A Bash call Claude moved to the background (or that timed out) was not supervised:
    record its processes' attribution now, so they stay listed and stoppable."""
    from corral.service.sessions import observe

    observe()


class Overview(NamedTuple):
    """The rows `/procs` shows, in its groups."""

    session: str | None
    project: str
    mine: list[Any]  # JobView of this session
    earlier: list[Any]  # JobView of agent sessions whose agent is gone
    others: list[Any]  # JobView of other live sessions, or of no agent session
    loose: list[Any]  # ProcessView not supervised, of ours/earlier
    listeners: list[dict[str, Any]]
    warnings: list[str]

    def to_json(self) -> dict[str, Any]:
        return {
            "session": self.session,
            "project": self.project,
            "session_jobs": [j.to_json() for j in self.mine],
            "earlier_jobs": [j.to_json() for j in self.earlier],
            "other_session_jobs": [j.to_json() for j in self.others],
            "unsupervised": [p.to_json() for p in self.loose],
            "other_listeners": self.listeners,
        }


def overview(
    session: str | None,
    folder: Path,
    *,
    observed: Any = None,
    cpu_interval: float = 0.1,
) -> Overview:
    """What `/procs` shows for `session` in `folder`'s project: this session's jobs, earlier
    sessions' jobs (agent gone; never a job started without a session), other live sessions'
    jobs and jobs of no session, unsupervised leftovers, other listeners. `observed`: a
    snapshot already taken (`sessions.Observed`, the daemon's warm one); `cpu_interval`: the
    seconds CPU % of a job's processes the snapshot saw for the first time is measured over
    (the mod's pane asks for 0: no wait). The jobs are read from the snapshot too."""
    from corral.service import jobs, sessions
    from corral.service.projects import project_root

    project = str(project_root(folder))
    observed = sessions.observe() if observed is None else observed
    agents = observed.attributed.agents
    listing = sessions.list_processes(observed=observed, supervised=False)
    seen = jobs.seen_jobs(observed.records, observed.snapshot, cpu_interval=cpu_interval)
    mine: list[Any] = []
    earlier: list[Any] = []
    others: list[Any] = []
    for job in seen:
        if session is not None and job.session == session:
            mine.append(job)
        elif not _inside(job.cwd, project):
            continue
        elif job.session is None or agents.get(job.session) == "alive":
            # a live session's, or a job started without an agent session (by hand in a
            # terminal): never "earlier", so `/procs earlier` never stops it
            others.append(job)
        else:
            earlier.append(job)
    loose: list[Any] = []
    for view in listing.processes:
        if view.attribution == "supervised" or not view.own:
            continue
        if (session is not None and view.session == session and view.attribution == "env") or (
            view.orphaned and _inside(view.cwd, project)
        ):
            loose.append(view)
    warnings = list(listing.warnings)  # the snapshot's: the ledger's among them
    return Overview(
        session, project, mine, earlier, others, loose, listing.other_listeners, warnings
    )


def recent_failures(folder: str) -> list[Any]:
    """Ledger records of jobs in `folder`'s project that ended on their own with an error
    within the hour (the band shows them until the person has seen them), newest first. Read
    from the ledger alone: no process is looked at."""
    import time
    from pathlib import Path

    from corral.adapters import ledger
    from corral.service import jobs
    from corral.service.projects import project_root

    root = str(project_root(Path(folder)))
    now = time.time()
    failed = [
        r for r in ledger.read_all().records if jobs.recent_failure(r, now) and _inside(r.cwd, root)
    ]
    return sorted(failed, key=lambda r: r.ended_at or 0.0, reverse=True)
