"""Restarting a job: stop it (verified, as `stop` does) and start the same line again in the
same folder, with the same backend, mode and name. corral never stores environments: the new
job gets the caller's."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from corral.adapters.ledger import JobRecord
from corral.errors import CorralError
from corral.service.jobs import StopOutcome
from corral.service.readiness import DEFAULT_TIMEOUT, ReadySpec
from corral.service.starting import StartResult


class CannotRestart(CorralError):
    pass


@dataclass(frozen=True)
class RestartResult:
    """The old job's stop, and the new job's start (with its readiness)."""

    old: str
    stop: StopOutcome
    start: StartResult
    note: str | None = None

    @property
    def ok(self) -> bool:
        return self.stop.ok and self.start.ok

    def to_json(self) -> dict[str, Any]:
        return {
            "old_id": self.old,
            "stop": self.stop.to_json(),
            "start": self.start.to_json(),
            "note": self.note,
        }


def exact_line(record: JobRecord) -> str:
    """The line the job runs, byte for byte: from its live supervisor's command line, or the
    stored form when that is the line itself (nothing was hidden from it)."""
    from corral.adapters.identity import cmdline
    from corral.adapters.ledger import supervisor_alive
    from corral.lowlevel.redact import command_digest

    if not record.final and supervisor_alive(record):
        argv = cmdline(record.pid) or []
        if "--" in argv and argv.index("--") == len(argv) - 2:
            line = argv[-1]
            if command_digest(line) == record.digest:
                return line
    if command_digest(record.command) == record.digest:
        return record.command
    raise CannotRestart(
        f"job {record.id[:8]} has ended and its line held something corral does not store "
        "(a secret or an environment assignment): start it again with `corral run`"
    )


def restart(
    record: JobRecord,
    *,
    session: str | None = None,
    ready: ReadySpec | None = None,
    ready_timeout: float = DEFAULT_TIMEOUT,
    surface: str = "cli",
) -> RestartResult:
    """Stop `record`'s job and start its line again detached, in the folder it was started
    from, with its backend and name (a task-mode job is restarted detached: the shell that
    launched it is not the caller). Raises CannotRestart, before stopping anything, when the
    exact line is unknown; a stop that does not succeed starts nothing."""
    from corral.service import starting
    from corral.service.jobs import stop_records

    line = exact_line(record)
    name = record.extra.get("name") or None
    stopped, _ = stop_records([record], surface=surface)
    outcome = stopped[0]
    if not outcome.ok:
        refusal = "the old job did not stop; nothing was started"
        return RestartResult(record.id, outcome, StartResult(None, refusal, name=name))
    result = starting.start(
        line,
        cwd=record.cwd,
        session=session or record.session,
        name=name if isinstance(name, str) else None,
        ready=ready,
        ready_timeout=ready_timeout,
        grace=record.grace,
        backend=record.backend if record.backend in ("group", "tmux") else "group",
    )
    note = None
    if record.mode == "task" and result.started is not None:
        ref = name if isinstance(name, str) and name else result.started.id[:8]
        note = (
            "restarted detached: the old job ran in task mode (it ended with the shell that "
            f"launched it); the new one runs until `corral stop {ref}`"
        )
    return RestartResult(record.id, outcome, result, note)
