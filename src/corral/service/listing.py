"""What `corral ls` (and every surface listing a session's work) shows: the jobs corral
supervises, then the processes of agent sessions that it does not, one row model.

Every row has `attribution`: `supervised` (a job in the ledger, `id` its job id), `env` (a
session marker in its environment) or `lineage` (a descendant of a live agent). A job row is
a `jobs.JobView`; a process row is a `sessions.ProcessView` with `id` None. Both carry pid,
started_at, state, session, cwd, command, ports, processes, cpu_percent, rss_bytes,
age_seconds: the fields `corral stop --pid P --started-at T` and the listings need.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from corral.service import jobs


@dataclass(frozen=True)
class Rows:
    jobs: list[jobs.JobView]
    processes: list[Any] = field(default_factory=list)  # sessions.ProcessView, unsupervised
    warnings: list[str] = field(default_factory=list)

    def to_json(self) -> list[dict[str, Any]]:
        return [j.to_json() for j in self.jobs] + [process_row(p) for p in self.processes]


def process_row(view: Any) -> dict[str, Any]:
    """A `sessions.ProcessView` in the listing's row model (no job id: not supervised)."""
    return {"id": None, "state": "running", **view.to_json()}


def list_rows(
    *,
    session: str | None = None,
    project: Path | None = None,
    include_finished: bool = False,
) -> Rows:
    """The jobs (of `session` when given; finished ones with `include_finished`), then the
    unsupervised processes: all of `session`'s when it is given, else those of any agent
    session working inside `project` (None: none). Processes of other users are left out
    (listed read-only by `corral ls --orphaned`)."""
    from corral.service import sessions

    listing = jobs.list_jobs(include_finished=include_finished, session=session)
    if session is None and project is None:
        return Rows(listing.jobs, [], listing.warnings)
    procs = sessions.list_processes(session, project=project if session is None else None)
    loose = [
        view
        for view in procs.processes
        if view.attribution != "supervised"
        and view.own
        and view.session is not None
        and (session is None or view.session == session)
    ]
    warnings = list(dict.fromkeys([*listing.warnings, *procs.warnings]))  # one ledger, read twice
    return Rows(listing.jobs, loose, warnings)
