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
    cpu_measured: bool = True  # False: CPU not measured (the figures are not to be shown)
    complete: bool = True  # False: the jobs alone (`jobs_board`), no processes or listeners

    def to_json(self) -> dict[str, Any]:
        return {
            "project": self.project,
            "jobs": [{**j.to_json(), "project": self.projects[j.id]} for j in self.jobs],
            "unsupervised": [p.to_json() for p in self.loose],
            "other_listeners": self.listeners,
            "cpu_measured": self.cpu_measured,
            "complete": self.complete,
        }


def board(folder: Path, *, observed: Any = None, cpu_interval: float = 0.1) -> Board:
    """The control room's rows for a person working in `folder`: every job (finished ones
    too, until `clean`), the processes of agent sessions corral does not supervise (of this
    user), and the other listeners, all from one snapshot: `observed`, a `sessions.Observed`
    (the daemon's warm one; None: a fresh one is taken). A job's processes the snapshot saw
    for the first time get their CPU % measured over `cpu_interval` seconds from it (0: not
    measured, `cpu_measured` is False)."""
    from corral.service import sessions

    obs = observed if observed is not None else sessions.observe()
    listing = sessions.list_processes(observed=obs, supervised=False)
    seen = jobs.seen_jobs(
        obs.records, obs.snapshot, include_finished=True, cpu_interval=cpu_interval
    )
    loose = [v for v in listing.processes if v.attribution != "supervised" and v.own]
    return Board(
        str(project_root(folder)),
        seen,
        _projects(seen),
        loose,
        listing.other_listeners,
        list(listing.warnings),  # the snapshot's: the ledger's among them
        cpu_interval > 0,
    )


def jobs_board(folder: Path) -> Board:
    """The jobs alone, with their ports, processes and memory (CPU not measured, no other
    process read): what the control room draws first while the whole `board` is read (for
    200 jobs a tenth of its time, and none of the machine's other processes)."""
    listing = jobs.list_jobs(include_finished=True, cpu_interval=0)
    return Board(
        str(project_root(folder)),
        listing.jobs,
        _projects(listing.jobs),
        [],
        [],
        list(listing.warnings),
        cpu_measured=False,
        complete=False,
    )


def _projects(views: list[jobs.JobView]) -> dict[str, str]:
    """Job id -> the project its folder belongs to."""
    roots: dict[str, str] = {}  # one lookup per folder: 200 jobs share a few
    projects = {}
    for job in views:
        if job.cwd not in roots:
            roots[job.cwd] = str(project_root(Path(job.cwd)))
        projects[job.id] = roots[job.cwd]
    return projects


def tag(data: dict[str, Any], warnings: list[str]) -> str:
    """What a board (`Board.to_json()`) says, but for the ages of what runs: it changes when
    anything else does (a job, a state, a port, CPU, a process come or gone). A client that
    has the board of a tag needs only `aged` while the tag stays the same."""
    import hashlib
    import json

    def still(row: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in row.items() if k != "age_seconds"} if _runs(row) else row

    fixed = {
        **data,
        "jobs": [still(j) for j in data["jobs"]],
        "unsupervised": [still(p) for p in data["unsupervised"]],
        "warnings": warnings,
    }
    body = json.dumps(fixed, separators=(",", ":")).encode()
    return '"' + hashlib.blake2b(body, digest_size=12).hexdigest() + '"'


def aged(data: dict[str, Any], seconds: float) -> dict[str, Any]:
    """The board `seconds` later when its tag is still the same: what runs is older."""

    def older(row: dict[str, Any]) -> dict[str, Any]:
        if not _runs(row):
            return row
        return {**row, "age_seconds": round(row["age_seconds"] + seconds, 1)}

    return {
        **data,
        "jobs": [older(j) for j in data["jobs"]],
        "unsupervised": [older(p) for p in data["unsupervised"]],
    }


def _runs(row: dict[str, Any]) -> bool:
    """A row whose age moves on: a job not ended, or a process (listed while it runs)."""
    return row.get("ended_at") is None
