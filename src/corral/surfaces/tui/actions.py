"""What the control room's keys do, through the service API (identity-checked, audited as
surface `tui`): each returns the lines a person reads about it, per target. They block
(a stop waits for its supervisor): the app runs them in thread workers."""

from __future__ import annotations

from pathlib import Path

from corral.core.text import printable
from corral.errors import CorralError
from corral.surfaces.tui.rows import Row

SURFACE = "tui"


def _said(lines: list[str], errors: list[str], nothing: str) -> list[str]:
    return [printable(line) for line in (lines or [nothing])] + [
        printable(f"error: {e}") for e in errors
    ]


def stop(row: Row) -> list[str]:
    """Stop the job or process `row` shows (a process by its identity, once proven)."""
    from corral.service import stopping

    try:
        if row.kind == "job" and row.job is not None:
            done = stopping.stop([row.job], surface=SURFACE)
        elif row.kind == "process" and row.pid is not None and row.started_at is not None:
            done = stopping.stop_identity(row.pid, row.started_at, surface=SURFACE)
        else:
            return ["read-only: corral did not start it and cannot prove whose it is"]
    except CorralError as exc:
        return [printable(str(exc))]
    return _said(stopping.describe(done.outcomes), done.errors, done.nothing)


def stop_session(session: str) -> list[str]:
    """Stop every running job of `session`."""
    from corral.service import stopping

    done = stopping.stop(every=True, session=session, surface=SURFACE)
    nothing = f"session {session[:8]} has no running jobs"
    return _said(stopping.describe(done.outcomes), done.errors, nothing)


def stop_earlier(session: str | None, folder: Path) -> list[str]:
    """Stop the jobs of earlier agent sessions (agent gone) in `folder`'s project."""
    from corral.service import stopping

    done = stopping.stop_earlier(session, folder, surface=SURFACE)
    return _said(stopping.describe(done.outcomes), done.errors, done.nothing)


def restart(row: Row) -> list[str]:
    """Stop the job `row` shows (verified) and start its line again."""
    from corral.service import jobs, stopping
    from corral.service.restart import restart as restart_job
    from corral.service.starting import start_lines

    if row.kind != "job" or row.job is None:
        return ["only a job can be restarted: corral does not know how this process started"]
    try:
        result = restart_job(jobs.resolve(row.job), surface=SURFACE)
    except CorralError as exc:
        return [printable(str(exc))]
    lines = stopping.describe([result.stop])
    if result.note:
        lines.append(result.note)
    return _said([*lines, *start_lines(result.start)], [], "")


def clean() -> list[str]:
    """Forget finished jobs (kept in the history database)."""
    from corral.service import jobs

    try:
        result = jobs.clean()
    except CorralError as exc:
        return [printable(str(exc))]
    lines = [f"cleared {len(result.forgotten)} finished job(s)"]
    lines += [f"kept {job_id[:8]}: {why}" for job_id, why in result.kept]
    return _said(lines, [], "")
