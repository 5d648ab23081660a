"""What the control room (`corral tui`) shows: every job with the project it belongs to, the
unsupervised processes of agent sessions and the orphans, and the other listeners (read-only),
from one snapshot. The daemon serves it (`GET /api/board`) and the tui falls back to it
directly; both give the same rows (`to_json`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from corral.service import jobs
from corral.service.projects import project_root


@dataclass(frozen=True)
class Board:
    project: str  # the folder's project: its jobs come first
    jobs: list[jobs.JobView]
    projects: dict[str, str]  # job id -> the project its folder belongs to
    loose: list[Any]  # sessions.ProcessView: not supervised, ours (agent sessions, orphans)
    listeners: list[dict[str, Any]]  # other listening sockets, read-only
    warnings: list[str] = field(default_factory=list)
    cpu_measured: bool = True  # False: taken without waiting to measure CPU (all 0.0)

    def to_json(self) -> dict[str, Any]:
        return {
            "project": self.project,
            "jobs": [{**j.to_json(), "project": self.projects[j.id]} for j in self.jobs],
            "unsupervised": [p.to_json() for p in self.loose],
            "other_listeners": self.listeners,
            "cpu_measured": self.cpu_measured,
        }


def board(folder: Path, *, observed: Any = None, cpu_interval: float = 0.1) -> Board:
    """The control room's rows for a person working in `folder`: every job (finished ones
    too, until `clean`), the processes of agent sessions corral does not supervise (of this
    user), and the other listeners. `observed` is a `sessions.Observed` to start from (the
    daemon's warm one); None takes a fresh one. CPU % is measured over `cpu_interval`
    seconds (0: not measured, `cpu_measured` is False)."""
    from corral.service import sessions

    obs = observed if observed is not None else sessions.observe()
    listing = sessions.list_processes(observed=obs)
    job_listing = jobs.list_jobs(include_finished=True, cpu_interval=cpu_interval)
    roots: dict[str, str] = {}  # one lookup per folder: 200 jobs share a few
    projects = {}
    for job in job_listing.jobs:
        if job.cwd not in roots:
            roots[job.cwd] = str(project_root(Path(job.cwd)))
        projects[job.id] = roots[job.cwd]
    loose = [v for v in listing.processes if v.attribution != "supervised" and v.own]
    warnings = list(dict.fromkeys([*listing.warnings, *job_listing.warnings]))
    return Board(
        str(project_root(folder)),
        job_listing.jobs,
        projects,
        loose,
        listing.other_listeners,
        warnings,
        cpu_interval > 0,
    )
