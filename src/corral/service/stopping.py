"""Choosing what to stop, and stopping it: the one entry every surface calls (`corral stop`,
`corral procs`, `/procs`, and later the MCP server and the mod) with explicit arguments.

Targets are named by job ids (a unique prefix of at least 4 characters), by `every` running
job (of one `session`), by the jobs of `earlier` agent sessions in a project (never a job
started without a session), or by one process identity (pid and start time). The outcome of
every target is built by `jobs.target`/`jobs.stop_records` and audited once (service.audit).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from corral.adapters import ledger
from corral.adapters.ledger import JobRecord
from corral.core.outcomes import LIVE_STATES
from corral.errors import UsageError
from corral.lowlevel.named import NamedTuple
from corral.service import jobs


class Stopped(NamedTuple):
    """What a stop did: one outcome per job (or identity), and errors (an audit not written)."""

    outcomes: list[jobs.StopOutcome]
    errors: list[str]
    nothing: str  # what to say when there was nothing to stop

    @property
    def ok(self) -> bool:
        return all(o.ok for o in self.outcomes) and not self.errors


def select(
    ids: Sequence[str] = (), *, every: bool = False, session: str | None = None
) -> list[JobRecord]:
    """The jobs named by `ids` (unique prefixes, in the order given, each once), or with
    `every` the running ones (of `session` when given). Exactly one way of naming is a usage
    error otherwise; an unknown or ambiguous id raises JobNotFound or AmbiguousJob."""
    if bool(ids) == every:
        raise UsageError("name jobs by ID, or use --all")
    if session is not None and not every:
        raise UsageError("--session goes with --all")
    records = ledger.read_all().records
    if every:
        return [r for r in records if not r.final and (session is None or r.session == session)]
    return [jobs.resolve(ref, records) for ref in dict.fromkeys(ids)]


def select_earlier(session: str | None, folder: Path) -> list[JobRecord]:
    """The running jobs of earlier agent sessions (their agent is not alive) in `folder`'s
    project, other than `session`'s; a job started without a session is never among them."""
    from corral.service.claude import overview

    view = overview(session, folder)
    earlier = {j.id for j in view.earlier if j.state in LIVE_STATES and j.session is not None}
    return [r for r in ledger.read_all().records if r.id in earlier]


def stop(
    ids: Sequence[str] = (),
    *,
    every: bool = False,
    session: str | None = None,
    surface: str = "cli",
) -> Stopped:
    """Stop the jobs `select` names; see `jobs.stop_records` for how each is stopped."""
    chosen = select(ids, every=every, session=session)
    nothing = "no running jobs" if every else "nothing to stop"
    return _stop(chosen, surface, nothing)


def stop_earlier(session: str | None, folder: Path, *, surface: str = "claude") -> Stopped:
    """Stop the jobs of earlier agent sessions in `folder`'s project (`/procs earlier`)."""
    chosen = select_earlier(session, folder)
    return _stop(chosen, surface, "no jobs of earlier sessions are running in this project")


def stop_identity(pid: int, started_at: str, *, surface: str = "cli") -> Stopped:
    """Stop the one process `(pid, started_at)` names, whatever it is: a job's supervisor
    or process (through its job), a process of an agent session (its attribution checked),
    else nothing (reported unproven). A pid of 0 or less is a usage error."""
    from corral.service import sessions

    if pid <= 0:
        raise UsageError(f"--pid takes a process id (a positive number), not {pid}")
    outcomes, errors = sessions.stop_identity(pid, started_at, surface=surface)
    return Stopped(outcomes, errors, "nothing to stop")


def _stop(chosen: list[JobRecord], surface: str, nothing: str) -> Stopped:
    # also with nothing chosen: a stop ends the reservations no live process holds
    outcomes, errors = jobs.stop_records(chosen, surface=surface)
    return Stopped(outcomes, errors, nothing)


def describe(outcomes: Sequence[jobs.StopOutcome]) -> list[str]:
    """A stop's outcomes as lines for a person (the CLI and the tui): each job with its state
    and command, then each target's result, then the job's note."""
    lines = []
    for o in outcomes:
        head = f"{o.job[:8]}  {o.state}"
        lines.append(f"{head}  {o.command}" if o.command else head)
        for t in o.targets:
            extra = f" ({t.detail})" if t.detail else ""
            lines.append(f"  {t.role} pid {t.pid}: {t.result.value}{extra}")
        if o.note:
            lines.append(f"  {o.note}")
    return lines
