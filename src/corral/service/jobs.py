"""The service API for jobs: list, resolve, stop, clean. Every surface calls these."""

from __future__ import annotations

import dataclasses
import logging
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from corral import paths
from corral.adapters import ledger
from corral.adapters.identity import ProcessIdentity, started_at
from corral.adapters.ledger import JobRecord, supervisor_alive
from corral.core.outcomes import JobState, StopResult
from corral.errors import AmbiguousJob, JobNotFound
from corral.lowlevel.record import LEDGER_VERSION, write_record

log = logging.getLogger("corral.service")

STOP_TIMEOUT = 12.0  # a job still running this long after its stop request stays `running`


@dataclass(frozen=True)
class JobView:
    """A job as every surface shows it (the `--json` field names are a contract)."""

    id: str
    pid: int
    started_at: str | None
    state: str
    mode: str
    session: str | None
    cwd: str
    command: str
    ports: list[int]
    processes: int
    cpu_percent: float
    rss_bytes: int
    age_seconds: float
    exit_code: int | None
    backend: str = "group"
    tmux: str | None = None  # `session:window` of a tmux-backend job
    note: str | None = None

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass(frozen=True)
class Listing:
    jobs: list[JobView]
    warnings: list[str] = field(default_factory=list)


def supervisor_identity(record: JobRecord) -> ProcessIdentity | None:
    return None if record.started_at is None else ProcessIdentity(record.pid, record.started_at)


def _leftovers(record: JobRecord) -> list[ProcessIdentity]:
    from corral.adapters import procs

    return procs.marked_processes("CORRAL_JOB", record.id)


def _observed_state(record: JobRecord) -> tuple[JobState, str | None, list[int]]:
    """The job's state as seen now, a note for a person, and pids of leftover processes."""
    if record.final:
        return JobState(record.state), None, []
    alive = supervisor_alive(record)
    if alive:
        return JobState(record.state), None, []
    left = _leftovers(record)
    if left:
        note = (
            f"supervisor gone; {len(left)} process(es) of the job remain: "
            f"`corral stop {record.id[:8]}` ends them after checking each one"
        )
        return JobState.RUNNING, note, [p.pid for p in left]
    if not os.path.exists(os.path.join(paths.ledger_dir(), f"{record.id}.stop")):
        # A supervisor removes its stop channel as it ends, also when the record of the end
        # could not be written (a full disk); a killed one leaves it behind.
        state = JobState.STOPPED if record.stop_requested_at else JobState.EXITED
        return state, f"its supervisor saw it end but could not record how: {_NO_END}", []
    return JobState.KILLED, "supervisor ended without recording the job's end", []


_NO_END = "is the ledger folder full or read-only? `corral doctor` checks it"


def list_jobs(
    *, include_finished: bool = False, session: str | None = None, measure: bool = True
) -> Listing:
    """Jobs in the ledger with their live usage; finished ones only with include_finished."""
    read = ledger.read_all()
    observed = []
    for record in read.records:
        if session is not None and record.session != session:
            continue
        state, note, extra = _observed_state(record)
        if state.final and not include_finished:
            continue
        observed.append((record, state, note, extra))
    live = {r.id: (r.pid, extra) for r, s, _, extra in observed if not s.final}
    usage: dict[str, Any] = {}
    if live and measure:
        from corral.adapters import scan

        usage = scan.usage(live)
    now = time.time()
    jobs = []
    for record, state, note, _ in observed:
        u = usage.get(record.id)
        end = record.ended_at if state.final and record.ended_at else now
        jobs.append(
            JobView(
                id=record.id,
                pid=record.pid,
                started_at=record.started_at,
                state=state.value,
                mode=record.mode,
                session=record.session,
                cwd=record.cwd,
                command=record.command,
                ports=list(u.ports) if u else [],
                processes=u.processes if u else 0,
                cpu_percent=u.cpu_percent if u else 0.0,
                rss_bytes=u.rss_bytes if u else 0,
                age_seconds=round(max(0.0, end - record.created_at), 1),
                exit_code=record.exit_code,
                backend=record.backend,
                tmux=record.extra.get("tmux"),
                note=note,
            )
        )
    return Listing(jobs, read.warnings)


def resolve(ref: str, records: Sequence[JobRecord] | None = None) -> JobRecord:
    """The job whose id starts with `ref` (at least 4 characters)."""
    pool = list(records) if records is not None else ledger.read_all().records
    ref = ref.strip().lower()
    if len(ref) < 4:
        raise JobNotFound(ref)
    matches = [r for r in pool if r.id.startswith(ref)]
    if not matches:
        raise JobNotFound(ref)
    if len(matches) > 1:
        raise AmbiguousJob(ref, [r.id[:12] for r in matches])
    return matches[0]


# -- stopping -------------------------------------------------------------------------------


@dataclass(frozen=True)
class TargetOutcome:
    pid: int
    started_at: str | None
    role: str  # "supervisor" or "process"
    result: StopResult
    detail: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "pid": self.pid,
            "started_at": self.started_at,
            "role": self.role,
            "result": self.result.value,
            "detail": self.detail,
        }


@dataclass(frozen=True)
class StopOutcome:
    job: str
    command: str
    state: str
    targets: list[TargetOutcome]
    note: str | None = None

    @property
    def ok(self) -> bool:
        return all(t.result.ok for t in self.targets)

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.job,
            "command": self.command,
            "state": self.state,
            "ok": self.ok,
            "note": self.note,
            "targets": [t.to_json() for t in self.targets],
        }


def _request_stop(record: JobRecord) -> None:
    fifo = os.path.join(paths.ledger_dir(), f"{record.id}.stop")
    fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
    try:
        os.write(fd, b"stop\n")
    finally:
        os.close(fd)


def _stop_leftovers(record: JobRecord, grace: float) -> list[TargetOutcome]:
    """Supervisor gone: signal each process carrying the job's marker, after checking it."""
    from corral.adapters import procs

    outcomes: list[TargetOutcome] = []
    handles = []
    for ident in procs.marked_processes("CORRAL_JOB", record.id):
        handle = procs.open_verified(ident)
        if handle is None:
            outcomes.append(
                TargetOutcome(ident.pid, ident.started_at, "process", StopResult.ALREADY_EXITED)
            )
            continue
        marked = procs.verify_marker(ident, "CORRAL_JOB", record.id)
        if marked is None:
            handle.close()
            outcomes.append(
                TargetOutcome(
                    ident.pid,
                    ident.started_at,
                    "process",
                    StopResult.UNPROVEN,
                    "environment unreadable",
                )
            )
            continue
        if not marked:
            handle.close()
            outcomes.append(
                TargetOutcome(ident.pid, ident.started_at, "process", StopResult.IDENTITY_MISMATCH)
            )
            continue
        handles.append(handle)
    outcomes.extend(signal_handles(handles, grace))
    return outcomes


def signal_handles(handles: list[Any], grace: float) -> list[TargetOutcome]:
    """SIGTERM each verified handle, SIGKILL what remains after `grace`; close them all."""
    import signal

    from corral.adapters import procs

    outcomes = []
    try:
        live = [h for h in handles if h.send(signal.SIGTERM)]
        for h in live:
            h.send(signal.SIGCONT)
        gone = procs.wait_gone(live, grace)
        stubborn = [h for h in live if h.identity not in gone]
        for h in stubborn:
            h.send(signal.SIGKILL)
        gone |= procs.wait_gone(stubborn, 2.0)
        for h in handles:
            ident = h.identity
            if h not in live:
                result, detail = StopResult.ALREADY_EXITED, None
            elif ident in gone:
                result = StopResult.TERMINATED
                detail = "killed after the grace period" if h in stubborn else None
            else:
                result, detail = StopResult.FAILED, "still running after SIGKILL"
            outcomes.append(TargetOutcome(ident.pid, ident.started_at, "process", result, detail))
    finally:
        for h in handles:
            h.close()
    return outcomes


def _finish_record(record: JobRecord, state: JobState) -> None:
    """Record the end of a job whose supervisor could not (it was killed)."""
    data = {k: v for k, v in record._asdict().items() if k != "extra"}
    data.update(record.extra, version=LEDGER_VERSION, state=state.value, ended_at=time.time())
    try:
        write_record(str(paths.ledger_dir()), data)
    except OSError as exc:
        log.warning("cannot record the end of job %s: %s", record.id, exc)


def stop_records(
    records: Sequence[JobRecord],
    *,
    surface: str = "cli",
    timeout: float = STOP_TIMEOUT,
    audit: bool = True,
) -> tuple[list[StopOutcome], list[str]]:
    """Stop jobs: ask each verified supervisor first, then wait for all of them at once.

    Returns the outcome per job and errors (an audit that could not be written). A caller
    that audits the stop as part of a larger one passes audit=False."""
    from corral.adapters import procs

    outcomes: dict[str, StopOutcome] = {}
    waiting: dict[str, tuple[JobRecord, Any]] = {}
    for record in records:
        sup = supervisor_identity(record)
        if record.final:
            outcomes[record.id] = StopOutcome(
                record.id,
                record.command,
                record.state,
                [
                    TargetOutcome(
                        record.pid, record.started_at, "supervisor", StopResult.ALREADY_EXITED
                    )
                ],
            )
            continue
        handle = procs.open_verified(sup) if sup is not None else None
        alive = supervisor_alive(record) if handle is not None else False
        if handle is not None and alive:
            try:
                _request_stop(record)
            except OSError as exc:
                handle.close()
                outcomes[record.id] = StopOutcome(
                    record.id,
                    record.command,
                    record.state,
                    [
                        TargetOutcome(
                            record.pid,
                            record.started_at,
                            "supervisor",
                            StopResult.FAILED,
                            f"stop channel: {exc}",
                        )
                    ],
                )
                continue
            waiting[record.id] = (record, handle)
            continue
        if handle is not None:
            handle.close()
        # Not our supervisor: the pid is now another process, or the same identity without
        # the token in its command line. A zombie keeps its start time: same process, gone.
        now = started_at(record.pid)
        mismatch = now is not None and (now != record.started_at or not procs.is_zombie(record.pid))
        first = TargetOutcome(
            record.pid,
            record.started_at,
            "supervisor",
            StopResult.IDENTITY_MISMATCH if mismatch else StopResult.ALREADY_EXITED,
            "pid now belongs to another process; not signalled" if mismatch else None,
        )
        rest = _stop_leftovers(record, record.grace)
        state = JobState.STOPPED if all(t.result.ok for t in rest) else JobState.RUNNING
        if rest and state == JobState.STOPPED:
            _finish_record(record, JobState.STOPPED)
        elif not rest:
            state = JobState.KILLED  # nothing of the job is left; its supervisor died
        outcomes[record.id] = StopOutcome(record.id, record.command, state.value, [first, *rest])
    if waiting:
        gone = procs.wait_gone([h for _, h in waiting.values()], timeout)
        recorded = {r.id: r.state for r in ledger.read_all().records}
        for job_id, (record, handle) in waiting.items():
            handle.close()
            if handle.identity in gone:
                outcomes[job_id] = StopOutcome(
                    job_id,
                    record.command,
                    recorded.get(job_id, "stopped"),
                    [
                        TargetOutcome(
                            record.pid, record.started_at, "supervisor", StopResult.TERMINATED
                        )
                    ],
                )
            else:
                outcomes[job_id] = StopOutcome(
                    job_id,
                    record.command,
                    "running",
                    [
                        TargetOutcome(
                            record.pid,
                            record.started_at,
                            "supervisor",
                            StopResult.FAILED,
                            f"still running {timeout:g} s after the stop request",
                        )
                    ],
                    note="the job did not stop in time; it is still listed as running",
                )
    _close_tmux_windows([r for r in records if outcomes[r.id].ok])
    ordered = [outcomes[r.id] for r in records]
    errors = _audit(ordered, surface) if audit else []
    return ordered, errors


def _close_tmux_windows(records: Sequence[JobRecord]) -> None:
    """A stopped tmux job's window closes with it (also when kept by config)."""
    from corral.adapters import tmux

    for record in records:
        pane, pid = record.extra.get("tmux_pane"), record.extra.get("tmux_pane_pid")
        if record.backend == "tmux" and pane and str(pid).isdigit():
            socket = record.extra.get("tmux_socket") or None
            server = tmux.Server(path=socket) if socket else tmux.Server.from_env()
            try:
                tmux.close_job_pane(str(pane), int(str(pid)), server)
            except tmux.TmuxError as exc:
                log.warning("cannot close the tmux window of job %s: %s", record.id, exc)


def _audit(outcomes: list[StopOutcome], surface: str) -> list[str]:
    if not outcomes:
        return []
    import sqlite3

    from corral.store import db

    targets = [{"job": o.job, **t.to_json()} for o in outcomes for t in o.targets]
    try:
        db.audit(db.STOP_EVENT, targets, surface=surface)
    except (sqlite3.Error, OSError) as exc:
        return [f"the stop was done but could not be audited: {exc}"]
    return []


def stop_identity(
    pid: int,
    when: str,
    *,
    surface: str = "cli",
    otherwise: Callable[[ProcessIdentity], tuple[list[StopOutcome], list[str]]] | None = None,
) -> tuple[list[StopOutcome], list[str]]:
    """Stop what `(pid, started_at)` names: a job's supervisor, or a process of a job; for
    anything else, `otherwise(identity)` answers (sessions: an attributed process), or the
    target is reported unproven and left alone."""
    records = ledger.read_all().records
    for record in records:
        if record.pid == pid and record.started_at == when:
            return stop_records([record], surface=surface)
    ident = ProcessIdentity(pid, when)
    for record in records:
        from corral.adapters import procs

        if procs.verify_marker(ident, "CORRAL_JOB", record.id):
            handle = procs.open_verified(ident)
            targets = (
                signal_handles([handle], record.grace)
                if handle
                else [TargetOutcome(pid, when, "process", StopResult.ALREADY_EXITED)]
            )
            outcome = StopOutcome(record.id, record.command, "running", targets)
            return [outcome], _audit([outcome], surface)
    if otherwise is not None:
        return otherwise(ident)
    target = unreached(ident, "not started by corral; not signalled")
    outcome = StopOutcome("-", "", "unknown", [target])
    return [outcome], _audit([outcome], surface)


def unreached(ident: ProcessIdentity, why: str) -> TargetOutcome:
    """The outcome for a target that is not (or no longer) one we may stop: gone, its pid
    taken by another process, or alive and unproven (`why` says why), never signalled."""
    now = started_at(ident.pid)
    if now is None:
        return TargetOutcome(ident.pid, ident.started_at, "process", StopResult.ALREADY_EXITED)
    if now != ident.started_at:
        return TargetOutcome(
            ident.pid,
            ident.started_at,
            "process",
            StopResult.IDENTITY_MISMATCH,
            "pid now belongs to another process; not signalled",
        )
    return TargetOutcome(ident.pid, ident.started_at, "process", StopResult.UNPROVEN, why)


# -- clean ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class CleanResult:
    forgotten: list[str]
    kept: list[tuple[str, str]]  # (job id, why it was kept)
    litter: list[str] = field(default_factory=list)  # leftover files removed (service.litter)


def clean(ledger_path: Path | None = None) -> CleanResult:
    """Forget finished jobs and records whose supervisor is provably dead and left nothing."""
    from corral.store import db

    forgotten: list[str] = []
    kept: list[tuple[str, str]] = []
    archive = []
    for record in ledger.read_all(ledger_path).records:
        if not record.final:
            if supervisor_alive(record):
                continue
            if _leftovers(record):
                kept.append(
                    (
                        record.id,
                        f"supervisor gone but job processes remain: `corral stop {record.id[:8]}`",
                    )
                )
                continue
            if supervisor_alive(record):  # re-check the pid before judging it gone
                continue
        data = {k: v for k, v in record._asdict().items() if k != "extra"}
        archive.append(data)
        forgotten.append(record.id)
    db.archive(archive)
    from corral.adapters import tmux

    tmux.remove_stale_private_dirs()  # left by tmux wrappers that were SIGKILLed
    folder = paths.ledger_dir() if ledger_path is None else os.fspath(ledger_path)
    try:
        for job_id in forgotten:
            ledger.remove(job_id, ledger_path)
    except OSError as exc:
        from corral.errors import StorageError

        raise StorageError(
            f"cannot remove finished jobs' records in {folder}: {exc.strerror or exc}; "
            "make the folder writable (`corral doctor` checks it)"
        ) from exc
    from corral.service import litter

    removed, _ = litter.sweep(folder)
    return CleanResult(forgotten, kept, removed)
