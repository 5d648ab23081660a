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
from corral.adapters import ledger, members
from corral.adapters.identity import ProcessIdentity, started_at
from corral.adapters.ledger import JobRecord, supervisor_alive
from corral.core.outcomes import LIVE_STATES, JobState, StopResult, failed, transition
from corral.errors import UsageError
from corral.lowlevel.record import LEDGER_VERSION, write_record

TYPE_CHECKING = False
if TYPE_CHECKING:
    from corral.adapters.scan import Snapshot

log = logging.getLogger("corral.service")

STOP_TIMEOUT = 12.0  # a job still running this long after its stop request stays `running`
FAILED_SHOWN_FOR = 3600.0  # a job that failed stays in plain `ls` this long (or until clean)


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
    attribution: str = "supervised"  # the listing's row model (see service.listing)
    name: str | None = None
    log: str | None = None  # where its output is kept (None: a pipe or terminal, not kept)
    ended_at: float | None = None
    signal: int | None = None

    @property
    def failed(self) -> bool:
        """Ended on its own with a non-zero code or by a signal (not stopped by request)."""
        return failed(self.state, self.exit_code, self.signal)

    def to_json(self) -> dict[str, Any]:
        # A shallow copy (asdict deep-copies every value: a third of a 200-job listing), by
        # the names read once (dataclasses.fields() builds its tuple at every call).
        row = {name: getattr(self, name) for name in _VIEW_FIELDS}
        row["ports"] = list(self.ports)
        return row


_VIEW_FIELDS = tuple(f.name for f in dataclasses.fields(JobView))


@dataclass(frozen=True)
class Listing:
    jobs: list[JobView]
    warnings: list[str] = field(default_factory=list)


def supervisor_identity(record: JobRecord) -> ProcessIdentity | None:
    return None if record.started_at is None else ProcessIdentity(record.pid, record.started_at)


def _leftovers(
    records: Sequence[JobRecord], snap: Snapshot | None = None
) -> dict[str, list[members.Member]]:
    """Processes of jobs whose supervisor is gone, by job id (one read of the table: `snap`'s
    when given)."""
    keys = [members.JobKey(r.id, r.pid, r.pgid, r.started_at) for r in records]
    table = None
    if snap is not None:
        table = [
            members.Row(p.pid, p.ppid, p.pgid, p.started_at, p.markers.get("CORRAL_JOB"))
            for p in snap.procs.values()
        ]
    return {job: found for job, found in members.find(keys, table).items() if found}


def _gone_note(record: JobRecord, left: Sequence[members.Member]) -> str:
    unmarked = sum(1 for m in left if not m.marked)
    text = (
        f"supervisor gone; {len(left)} process(es) of the job remain: "
        f"`corral stop {record.id[:8]}` ends them after checking each one"
    )
    if unmarked:
        text += f" ({unmarked} without corral's marker are listed, never signalled)"
    return text


def _observed_states(
    records: Sequence[JobRecord], snap: Snapshot | None = None
) -> dict[str, tuple[JobState, str | None, list[int]]]:
    """Each job's state as seen now (as `snap` saw it, when given), a note for a person, and
    the pids of processes that outlived its supervisor (the job is then `unsupervised`)."""
    seen: dict[str, tuple[JobState, str | None, list[int]]] = {}
    gone = []
    for record in records:
        if snap is not None and record.started_at is not None:
            alive = snap.alive(record.pid, record.started_at)
        else:
            alive = bool(supervisor_alive(record))
        if record.final or alive:
            seen[record.id] = (JobState(record.state), None, [])
        else:
            gone.append(record)
    left = _leftovers(gone, snap) if gone else {}
    for record in gone:
        found = left.get(record.id)
        if found:
            state = transition(record.id, JobState(record.state), JobState.UNSUPERVISED)
            pids = [m.identity.pid for m in found]
            seen[record.id] = (state, _gone_note(record, found), pids)
        elif not os.path.exists(os.path.join(paths.ledger_dir(), f"{record.id}.stop")):
            # A supervisor removes its stop channel as it ends, also when the record of the
            # end could not be written (a full disk); a killed one leaves it behind.
            end = JobState.STOPPED if record.stop_requested_at else JobState.EXITED
            note = f"its supervisor saw it end but could not record how: {_NO_END}"
            seen[record.id] = (end, note, [])
        else:
            note = "supervisor ended without recording the job's end"
            seen[record.id] = (JobState.KILLED, note, [])
    return seen


_NO_END = "is the ledger folder full or read-only? `corral doctor` checks it"
# A job as a listing saw it: its record, its state now, a note, the pids of its processes
# that outlived its supervisor.
_Seen = tuple[JobRecord, JobState, str | None, list[int]]


def _shown(
    records: Sequence[JobRecord],
    include_finished: bool,
    session: str | None,
    snap: Snapshot | None = None,
) -> list[_Seen]:
    """The jobs a listing shows, with their states (see `list_jobs`)."""
    chosen = [r for r in records if session is None or r.session == session]
    states = _observed_states(chosen, snap)
    now = time.time()
    shown = []
    for record in chosen:
        state, note, extra = states[record.id]
        if state.final and not include_finished and not recent_failure(record, now):
            continue
        shown.append((record, state, note, extra))
    return shown


def _live(shown: Sequence[_Seen]) -> dict[str, tuple[int, list[int]]]:
    """The jobs that run: (supervisor pid, or -1 when it is gone; the pids that outlived it)."""
    return {
        r.id: (r.pid if s is not JobState.UNSUPERVISED else -1, extra)
        for r, s, _, extra in shown
        if s in LIVE_STATES
    }


def list_jobs(
    *,
    include_finished: bool = False,
    session: str | None = None,
    measure: bool = True,
    cpu_interval: float = 0.1,
) -> Listing:
    """Jobs in the ledger with their live usage (ports read from their processes' sockets);
    finished ones only with `include_finished`, and those that failed within the hour; only
    those of `session` when given. A job whose supervisor died while its processes run is
    listed `unsupervised`, with them. CPU % is measured over `cpu_interval` seconds."""
    read = ledger.read_all()
    shown = _shown(read.records, include_finished, session)
    live = _live(shown)
    usage: dict[str, Any] = {}
    if live and measure:
        from corral.adapters import scan

        usage = scan.usage(live, interval=cpu_interval)
    return Listing(_views(shown, usage), read.warnings)


def seen_jobs(
    records: Sequence[JobRecord],
    snap: Snapshot,
    *,
    include_finished: bool = False,
    session: str | None = None,
    cpu_interval: float = 0.0,
) -> list[JobView]:
    """The jobs `list_jobs` lists, from one snapshot: `records` (the ledger as it was read for
    `snap`) and the processes, ports, CPU and memory `snap` holds; nothing is read again (the
    ledger's warnings are the snapshot's). A job's processes `snap` read without a CPU figure
    (it saw them for the first time) are measured over `cpu_interval` seconds from it (0:
    left at 0.0)."""
    from corral.adapters import scan

    shown = _shown(records, include_finished, session, snap)
    found = scan.jobs_pids(snap, _live(shown))
    unmeasured = [
        pid
        for pids in found.values()
        for pid in pids
        if pid not in snap.cpu_percent
        and (snap.procs[pid].seen_at or snap.taken_at) >= snap.taken_at
    ]  # read by `snap` itself: one carried over from an older read is not measured from it
    if unmeasured and cpu_interval > 0:
        snap = scan.with_cpu(snap, unmeasured, cpu_interval)
    usage = {job: scan.job_usage(snap, pids) for job, pids in found.items()}
    return _views(shown, usage)


def _views(shown: Sequence[_Seen], usage: dict[str, Any]) -> list[JobView]:
    """The rows of the jobs `shown`, with their `usage` (scan.Usage by job id). Running jobs'
    logs are kept under their cap on the way (readers trim the logs no supervisor watches)."""
    running = [record for record, state, _, _ in shown if state in LIVE_STATES]
    if running:
        from corral import config
        from corral.service import logs

        cap = config.log_max_bytes()  # once per listing, not once per job
        for record in running:
            path = record.extra.get("log")
            if isinstance(path, str):
                logs.trim(path, cap)  # corral's own logs only (trim checks)
    now = time.time()
    jobs = []
    for record, state, note, _ in shown:
        u = usage.get(record.id)
        end = record.ended_at if state not in LIVE_STATES and record.ended_at else now
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
                name=record.extra.get("name") or None,
                log=record.extra.get("log") or None,
                ended_at=record.ended_at,
                signal=record.signal,
            )
        )
    return jobs


def recent_failure(record: JobRecord, now: float) -> bool:
    """A job that `failed` (ended on its own with a non-zero code or by a signal) less than
    an hour ago: plain `ls` keeps showing it (a crash must not look like a clean exit)."""
    return (
        failed(record.state, record.exit_code, record.signal)
        and record.ended_at is not None
        and now - record.ended_at < FAILED_SHOWN_FOR
    )


def resolve(ref: str, records: Sequence[JobRecord] | None = None) -> JobRecord:
    """The job `ref` names: a job name, or a unique prefix of its id (4 characters or more)."""
    from corral.service.names import resolve as by_name_or_prefix

    pool = list(records) if records is not None else ledger.read_all().records
    return by_name_or_prefix(ref, pool)


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


def target(
    ident: ProcessIdentity,
    result: StopResult,
    detail: str | None = None,
    role: str = "process",
) -> TargetOutcome:
    """The one way a stop's outcome for a target is built."""
    return TargetOutcome(ident.pid, ident.started_at, role, result, detail)


def job_outcome(
    record: JobRecord,
    state: str,
    result: StopResult,
    detail: str | None = None,
    *,
    rest: Sequence[TargetOutcome] = (),
    note: str | None = None,
) -> StopOutcome:
    """A job's stop outcome: its supervisor's `result` first, then its processes' (`rest`)."""
    sup = TargetOutcome(record.pid, record.started_at, "supervisor", result, detail)
    return StopOutcome(record.id, record.command, state, [sup, *rest], note)


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
    """Supervisor gone: signal each process carrying the job's marker, after checking its
    identity and the marker; a process of the job's group without the marker (it cleared its
    environment) cannot be proven the job's now: reported unproven, never signalled."""
    from corral.adapters import procs

    outcomes: list[TargetOutcome] = []
    handles = []
    for member in _leftovers([record]).get(record.id, []):
        ident = member.identity
        if not member.marked:
            outcomes.append(
                unreached(
                    ident, "no corral marker in its environment (it cleared it); not signalled"
                )
            )
            continue
        handle = procs.open_verified(ident)
        if handle is None:
            outcomes.append(target(ident, StopResult.ALREADY_EXITED))
            continue
        marked = procs.verify_marker(ident, "CORRAL_JOB", record.id)
        if not marked:
            handle.close()
            result = StopResult.UNPROVEN if marked is None else StopResult.IDENTITY_MISMATCH
            detail = "environment unreadable" if marked is None else None
            outcomes.append(target(ident, result, detail))
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
            outcomes.append(target(ident, result, detail))
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
            outcomes[record.id] = job_outcome(record, record.state, StopResult.ALREADY_EXITED)
            continue
        handle = procs.open_verified(sup) if sup is not None else None
        alive = supervisor_alive(record) if handle is not None else False
        if handle is not None and alive:
            try:
                _request_stop(record)
            except OSError as exc:
                handle.close()
                outcomes[record.id] = job_outcome(
                    record, record.state, StopResult.FAILED, f"stop channel: {exc}"
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
        rest = _stop_leftovers(record, record.grace)
        if not rest:  # nothing of the job is left; its supervisor died
            state = transition(record.id, JobState(record.state), JobState.KILLED)
        elif all(t.result.ok for t in rest):
            state = transition(record.id, JobState.UNSUPERVISED, JobState.STOPPED)
            _finish_record(record, state)
        else:  # what could not be proven still runs: the job stays listed
            state = transition(record.id, JobState(record.state), JobState.UNSUPERVISED)
        outcomes[record.id] = job_outcome(
            record,
            state.value,
            StopResult.IDENTITY_MISMATCH if mismatch else StopResult.ALREADY_EXITED,
            "pid now belongs to another process; not signalled" if mismatch else None,
            rest=rest,
        )
    if waiting:
        gone = procs.wait_gone([h for _, h in waiting.values()], timeout)
        recorded = {r.id: r.state for r in ledger.read_all().records}
        for job_id, (record, handle) in waiting.items():
            handle.close()
            if handle.identity in gone:
                state_now = recorded.get(job_id, JobState.STOPPED.value)
                outcomes[job_id] = job_outcome(record, state_now, StopResult.TERMINATED)
            else:
                outcomes[job_id] = job_outcome(
                    record,
                    JobState.RUNNING.value,
                    StopResult.FAILED,
                    f"still running {timeout:g} s after the stop request",
                    note="the job did not stop in time; it is still listed as running",
                )
    _close_tmux_windows([r for r in records if outcomes[r.id].ok])
    _release_reservations([r.id for r in records if outcomes[r.id].ok])
    ordered = [outcomes[r.id] for r in records]
    errors = audit_outcomes(ordered, surface) if audit else []
    return ordered, errors


def _release_reservations(tokens: Sequence[str]) -> None:
    """Reservations of stopped or forgotten jobs, and unheld ones, end at once."""
    from corral.service import admission

    try:
        admission.release(tokens)
    except OSError as exc:
        log.warning("cannot end reservations: %s", exc)


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


def audit_outcomes(outcomes: list[StopOutcome], surface: str) -> list[str]:
    """One audit event for these jobs' stop outcomes (errors: the audit failed)."""
    from corral.service.audit import record_stop

    if not outcomes:
        return []
    return record_stop(
        [{"job": o.job, **t.to_json()} for o in outcomes for t in o.targets], surface=surface
    )


def stop_identity(
    pid: int,
    when: str,
    *,
    surface: str = "cli",
    otherwise: Callable[[ProcessIdentity], tuple[list[StopOutcome], list[str]]] | None = None,
) -> tuple[list[StopOutcome], list[str]]:
    """Stop what `(pid, started_at)` names: a job's supervisor, or a process of a job; for
    anything else, `otherwise(identity)` answers (sessions: an attributed process), or the
    target is reported unproven and left alone. A pid that names no single process (0 or
    less: a group, or every process) is a usage error, and nothing is audited."""
    if pid <= 0:
        raise UsageError(f"a process id is a positive number, not {pid}")
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
                else [target(ident, StopResult.ALREADY_EXITED)]
            )
            outcome = StopOutcome(record.id, record.command, "running", targets)
            return [outcome], audit_outcomes([outcome], surface)
    if otherwise is not None:
        return otherwise(ident)
    left_alone = unreached(ident, "not started by corral; not signalled")
    outcome = StopOutcome("-", "", "unknown", [left_alone])
    return [outcome], audit_outcomes([outcome], surface)


def unreached(ident: ProcessIdentity, why: str) -> TargetOutcome:
    """The outcome for a target that is not (or no longer) one we may stop: gone, its pid
    taken by another process, or alive and unproven (`why` says why), never signalled."""
    now = started_at(ident.pid)
    if now is None:
        return target(ident, StopResult.ALREADY_EXITED)
    if now != ident.started_at:
        return target(
            ident, StopResult.IDENTITY_MISMATCH, "pid now belongs to another process; not signalled"
        )
    return target(ident, StopResult.UNPROVEN, why)


def not_signalled(pid: int, started_at: str | None, why: str) -> TargetOutcome:
    """The outcome for a target a surface may not stop: gone, replaced, or `unproven`."""
    return unreached(ProcessIdentity(pid, started_at or ""), why)


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
            if _leftovers([record]):
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
    _release_reservations(forgotten)
    from corral.service import logs

    folder = paths.ledger_dir() if ledger_path is None else os.fspath(ledger_path)
    try:
        for job_id in forgotten:
            ledger.remove(job_id, ledger_path)
            logs.remove(job_id)
    except OSError as exc:
        from corral.errors import StorageError

        raise StorageError(
            f"cannot remove finished jobs' records in {folder}: {exc.strerror or exc}; "
            "make the folder writable (`corral doctor` checks it)"
        ) from exc
    from corral.service import litter

    removed, _ = litter.sweep(folder)
    return CleanResult(forgotten, kept, removed)
