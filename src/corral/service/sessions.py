"""The service API for a session's processes: list, orphans, terminate, end a session.

Every surface calls these. Rows come from one fresh snapshot, attributed to sessions
(supervised / env / lineage) and rechecked against stored observations. A stop acts on
verified identities only and writes one audit event, whatever the surface.
"""

from __future__ import annotations

import logging
import os
import shlex
import sqlite3
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from corral import paths
from corral.adapters import attribution, ledger, owners, procs, scan
from corral.adapters.attribution import Attributed, Attribution
from corral.adapters.identity import ProcessIdentity, cmdline, identity_of
from corral.adapters.ledger import JobRecord
from corral.core.outcomes import StopResult
from corral.lowlevel.record import DEFAULT_GRACE
from corral.lowlevel.redact import display_command
from corral.service import jobs
from corral.service.audit import record_stop
from corral.store import db, observations

log = logging.getLogger("corral.sessions")

ROLE_SUPERVISOR = "supervisor"
Target = ProcessIdentity  # what surfaces name a process by: (pid, started_at)


def self_identity() -> ProcessIdentity | None:
    """The calling process's own identity (a daemon reports it in its health answer)."""
    return identity_of(os.getpid())


@dataclass(frozen=True)
class Observed:
    """One snapshot with its attribution: what every listing and stop starts from."""

    snapshot: scan.Snapshot
    attributed: Attributed
    records: list[JobRecord]
    warnings: list[str] = field(default_factory=list)
    # what it was attributed from besides the snapshot, for `refresh` to start from
    remembered: Mapping[tuple[int, str], Attribution] = field(default_factory=dict)
    known_agents: Mapping[str, list[tuple[int, str]]] = field(default_factory=dict)
    ledger_key: tuple[int, int] | None = None  # the ledger folder as `records` were read
    ledger_warnings: tuple[str, ...] = ()
    jobs_read_at: float = 0.0  # time.monotonic() the jobs' processes were last read (refresh)


# A folder's mtime moves in the kernel's coarse clock ticks: a file renamed into the ledger in
# the same tick as an earlier read leaves the mtime as that read saw it. A folder changed this
# recently is read again whatever its mtime says.
_RACY_NS = 1_000_000_000


def _ledger_key() -> tuple[int, int] | None:
    """(inode, mtime) of the ledger folder when it can be trusted to show a change; None when
    it changed too recently to tell (or cannot be read)."""
    try:
        st = os.stat(paths.ledger_dir())
    except OSError:
        return None
    if time.time_ns() - st.st_mtime_ns < _RACY_NS:
        return None
    return (st.st_ino, st.st_mtime_ns)


def observe(previous: scan.Snapshot | None = None, *, remember: bool = True) -> Observed:
    """Take a snapshot, attribute it, recheck stored observations and store the new ones."""
    key = _ledger_key()
    read = ledger.read_all()
    warnings = list(read.warnings)
    try:
        stored, agents = observations.load()
    except (sqlite3.Error, OSError) as exc:
        stored, agents = [], {}
        warnings.append(f"stored observations unreadable: {exc}")
    snap = scan.take(previous=previous)
    remembered = {
        (o.pid, o.started_at): Attribution(o.pid, o.started_at, o.how, o.session, o.job, o.role)
        for o in stored
    }
    attributed = attribution.attribute(snap, read.records, remembered, agents)
    if remember:
        _remember(snap, attributed, warnings)
    return Observed(
        snap,
        attributed,
        read.records,
        warnings,
        remembered,
        agents,
        key,
        tuple(read.warnings),
        snap.taken_at,
    )


def refresh(previous: Observed, *, remember: bool = True) -> Observed:
    """`previous` brought up to date reading only what changed, as the daemon refreshes while
    an agent's tool call runs: the processes started since (a process still listed keeps what
    `previous` saw of it: its CPU and memory as then, its markers), the jobs' own processes
    every USAGE_FOR seconds (their CPU and memory, as `corral ls` shows them), the ledger only
    when its folder changed, and the stored observations not at all (`previous` read them,
    and this process stores the new ones). The attribution is done again only when what
    changed can change it (a marked process, a child of an attributed one or of an agent, a
    gone agent or supervisor, a changed ledger); otherwise the gone processes' rows are
    dropped."""
    key = _ledger_key()
    if key is not None and key == previous.ledger_key:
        records, ledger_warnings = previous.records, list(previous.ledger_warnings)
    else:
        read = ledger.read_all()
        records, ledger_warnings = read.records, list(read.warnings)
    warnings = list(ledger_warnings)
    # a new socket's owner is looked for among the processes shown (a job's server binding
    # its port late), not among every process's descriptors at every refresh
    shown = previous.attributed.rows.keys()
    jobs_read_at, again = previous.jobs_read_at, []
    if time.monotonic() - jobs_read_at >= USAGE_FOR:
        rows = previous.attributed.rows.values()
        again = [
            r.pid for r in rows if r.how == attribution.SUPERVISED and r.role != ROLE_SUPERVISOR
        ]
        jobs_read_at = time.monotonic()
    snap = scan.take(previous=previous.snapshot, incremental=True, reread=again, walk_only=shown)
    remembered = previous.remembered
    if records is previous.records and not _may_change(previous, snap):
        attributed = _without_gone(previous.attributed, snap)
    else:
        # what the last refresh attributed counts as remembered, as if stored and loaded: a
        # process seen under its agent keeps that session once its parent shell is gone
        remembered = {
            **remembered,
            **{(r.pid, r.started_at): r for r in previous.attributed.rows.values()},
        }
        attributed = attribution.attribute(snap, records, remembered, previous.known_agents)
    if remember:
        _remember(snap, attributed, warnings, pause=SAVE_PAUSE)
    return Observed(
        snap,
        attributed,
        records,
        warnings,
        remembered,
        previous.known_agents,
        key,
        tuple(ledger_warnings),
        jobs_read_at,
    )


def _may_change(previous: Observed, snap: scan.Snapshot) -> bool:
    """Whether attributing `snap` afresh may give other rows than `previous` minus the
    processes gone: a process read now carries a marker or is the child of an attributed
    process or an agent, or a gone process was an agent or a job's supervisor. A process
    read again (a job's, or one seconds old) counts only when what the attribution reads of
    it changed (its markers, its parent)."""
    rows, agents = previous.attributed.rows, previous.attributed.live_agents
    agent_pids = {pid for idents in agents.values() for pid, _ in idents}
    before = previous.snapshot.procs
    for pid in snap.read or ():
        proc = snap.procs[pid]
        was = before.get(pid)
        if was is not None and (was.started_at, was.ppid, was.markers) == (
            proc.started_at,
            proc.ppid,
            proc.markers,
        ):
            continue
        if proc.markers or proc.ppid in rows or proc.ppid in agent_pids:
            return True
    gone = previous.snapshot.procs.keys() - snap.procs.keys()
    return any(
        pid in agent_pids or (pid in rows and rows[pid].role == ROLE_SUPERVISOR) for pid in gone
    )


def _without_gone(attributed: Attributed, snap: scan.Snapshot) -> Attributed:
    """`attributed` without the rows of processes gone from `snap`."""
    rows = {pid: row for pid, row in attributed.rows.items() if pid in snap.procs}
    if len(rows) == len(attributed.rows):
        return attributed
    sessions_left = {row.session for row in rows.values()}
    agents = {s: state for s, state in attributed.agents.items() if s in sessions_left}
    return Attributed(rows, agents, attributed.live_agents)


def _remember(
    snap: scan.Snapshot, attributed: Attributed, warnings: list[str], pause: float = 0.0
) -> None:
    if _paused(pause):
        return
    seen = [
        observations.Observation(r.pid, r.started_at, r.how, r.session, r.job, r.role)
        for r in attributed.rows.values()
    ]
    try:
        _save(seen, attributed.live_agents, snap, pause)
    except (sqlite3.Error, OSError) as exc:
        warnings.append(f"observations not stored: {exc}")


# A refresh reads the jobs' own processes again this often at most (their CPU and memory; a
# board shows them): read every second, bench_tui's 200 jobs cost the daemon 1.7 % of a core.
USAGE_FOR = 5.0
SAVE_AGAIN = 60.0  # what is unchanged is stored again (agents' last_seen) after this long
# A refresh stores what changed at most this often: while an agent's tool calls run, the
# machine's processes come and go several times a second, and one write (tens of ms on a
# loaded machine) costs more than a hundred refreshes. The refreshes in between keep what
# they saw in memory; a whole snapshot (a request) stores at once.
SAVE_PAUSE = 10.0
_SAVED: tuple[tuple[object, ...], float] | None = None  # what this process stored last, and when
_SAVED_LOCK = threading.Lock()  # the daemon's refresh and a terminate observe in two threads


def _paused(pause: float) -> bool:
    """Whether this process stored observations (of this home) less than `pause` s ago."""
    saved = _SAVED
    return saved is not None and saved[0][0] == paths.home() and time.monotonic() - saved[1] < pause


def _save(
    seen: list[observations.Observation],
    agents: dict[str, list[tuple[int, str]]],
    snap: scan.Snapshot,
    pause: float = 0.0,
) -> None:
    """Store observations unless this process stored the very same ones a moment ago (a
    daemon refreshing four times a second while a tool call runs writes only what changed),
    or stored any less than `pause` seconds ago. (Dead identities are pruned on the next
    write; every stored one is rechecked on load.)"""
    global _SAVED
    home = paths.home()
    with _SAVED_LOCK:
        now = time.monotonic()
        if _SAVED is not None and _SAVED[0][0] == home and now - _SAVED[1] < pause:
            return
        key = (
            home,
            frozenset(seen),
            frozenset((s, i) for s, ids in agents.items() for i in ids),
        )
        if _SAVED is not None and _SAVED[0] == key and now - _SAVED[1] < SAVE_AGAIN:
            return
        alive = {(p.pid, p.started_at) for p in snap.procs.values()}
        observations.save(seen, agents, alive)
        _SAVED = (key, now)


# -- listing ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class ProcessView:
    """A process as every surface shows it. Never holds an environment."""

    pid: int
    started_at: str
    attribution: str  # supervised / env / lineage
    session: str | None
    job: str | None
    role: str
    agent: str  # the session's agent process: alive / gone / unknown
    orphaned: bool
    own: bool  # ours to stop; other users' processes are listed read-only
    name: str
    command: str
    cwd: str | None
    ports: list[int]
    processes: int
    cpu_percent: float
    rss_bytes: int
    age_seconds: float
    recalled: bool

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass(frozen=True)
class ProcessListing:
    processes: list[ProcessView]
    other_listeners: list[dict[str, Any]]
    warnings: list[str]

    def to_json(self) -> dict[str, Any]:
        return {
            "processes": [p.to_json() for p in self.processes],
            "other_listeners": self.other_listeners,
        }


def _inside(path: str | None, root: Path) -> bool:
    if path is None:
        return False
    p = Path(path)
    return p == root or root in p.parents


_SHOWN: dict[str, str] = {}  # command line -> its display form (hiding secrets takes time)


def forget_caches(*, persisted: bool = False) -> None:
    """Forget what earlier listings learnt (display forms, sockets' owners): the next one
    costs what it costs in a new process; with `persisted`, also what earlier processes left
    in corral's home (the sockets' owners), as on the first run ever."""
    _SHOWN.clear()
    owners.forget_owners(persisted=persisted)


def _command(pid: int) -> str:
    argv = cmdline(pid)
    if not argv:
        return ""
    line = shlex.join(argv)
    shown = _SHOWN.get(line)
    if shown is None:
        if len(_SHOWN) > 4096:  # a long-lived daemon sees many command lines come and go
            _SHOWN.clear()
        shown = _SHOWN[line] = display_command(line)
    return shown


def _view(
    obs: Observed, row: Attribution, kids: dict[int, list[int]], jobs_by_id: dict[str, JobRecord]
) -> ProcessView:
    proc = obs.snapshot.procs[row.pid]
    members = [row.pid]
    record = jobs_by_id.get(row.job or "") if row.role == ROLE_SUPERVISOR else None
    if row.role == ROLE_SUPERVISOR:  # a job's row sums its processes, as `corral ls` does
        members = scan.job_pids(obs.snapshot, row.pid, (), kids) or []
    usage = scan.job_usage(obs.snapshot, members)
    session_agent = obs.attributed.agents.get(row.session or "", attribution.AGENT_UNKNOWN)
    return ProcessView(
        pid=row.pid,
        started_at=row.started_at,
        attribution=row.how,
        session=row.session,
        job=row.job,
        role=row.role,
        agent=session_agent if row.session else attribution.AGENT_UNKNOWN,
        orphaned=obs.attributed.orphaned(row),
        own=proc.uid == os.getuid(),
        name=proc.name,
        command=record.command if record is not None else _command(row.pid),
        cwd=scan.cwd(row.pid),
        ports=list(usage.ports),
        processes=usage.processes,
        cpu_percent=usage.cpu_percent,
        rss_bytes=usage.rss_bytes,
        age_seconds=round(max(0.0, time.time() - proc.created), 1),
        recalled=row.recalled,
    )


def _caller_chain(snap: scan.Snapshot) -> set[int]:
    """This process and its ancestors: never listed as a session's jobs, never stopped."""
    chain: set[int] = set()
    pid = os.getpid()
    while pid > 1 and pid not in chain:
        chain.add(pid)
        proc = snap.procs.get(pid)
        if proc is None:
            break
        pid = proc.ppid
    return chain


def list_processes(
    session: str | None = None,
    *,
    orphaned: bool = False,
    project: Path | None = None,
    observed: Observed | None = None,
    supervised: bool = True,
) -> ProcessListing:
    """Attributed processes: of one `session`, or the `orphaned` ones (a session whose agent is
    gone, or none known), or all; only those working inside `project` when it is given; with
    `supervised` False, none of corral's jobs (a caller that lists jobs from the ledger)."""
    obs = observed or observe()
    chain = _caller_chain(obs.snapshot)
    kids = obs.snapshot.children()
    jobs_by_id = {r.id: r for r in obs.records}
    views = []
    for row in sorted(obs.attributed.rows.values(), key=lambda r: (r.session or "", r.pid)):
        if row.pid in chain or row.pid not in obs.snapshot.procs:
            continue
        if session is not None and row.session != session:
            continue
        if orphaned and not obs.attributed.orphaned(row):
            continue
        if not supervised and row.how == attribution.SUPERVISED:
            continue
        view = _view(obs, row, kids, jobs_by_id)
        if project is not None and not _inside(view.cwd, project):
            continue
        views.append(view)
    listed = set(obs.attributed.rows)
    others = [
        {
            "port": lst.port,
            "proto": lst.proto,
            "family": lst.family,
            "address": lst.address,
            "pid": lst.pid,
            "name": obs.snapshot.procs[lst.pid].name if lst.pid in obs.snapshot.procs else None,
        }
        for lst in obs.snapshot.listeners
        if lst.pid not in listed
    ]
    return ProcessListing(views, others, obs.warnings)


# -- stopping ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class TargetResult(jobs.TargetOutcome):
    """A stop's outcome for one target, with the attribution that made it a target."""

    attribution: str | None = None
    session: str | None = None
    job: str | None = None

    @classmethod
    def of(
        cls,
        outcome: jobs.TargetOutcome,
        attribution: str | None = None,
        session: str | None = None,
        job: str | None = None,
    ) -> TargetResult:
        return cls(
            outcome.pid,
            outcome.started_at,
            outcome.role,
            outcome.result,
            outcome.detail,
            attribution,
            session,
            job,
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "pid": self.pid,
            "started_at": self.started_at,
            "attribution": self.attribution,
            "session": self.session,
            "job": self.job,
            "role": self.role,
            "result": self.result.value,
            "detail": self.detail,
        }


@dataclass(frozen=True)
class Termination:
    session: str | None
    targets: list[TargetResult]
    errors: list[str]

    @property
    def ok(self) -> bool:
        return all(t.result.ok for t in self.targets) and not self.errors

    def to_json(self) -> dict[str, Any]:
        return {
            "session": self.session,
            "ok": self.ok,
            "targets": [t.to_json() for t in self.targets],
        }


def _unreached(ident: ProcessIdentity, why: str | None = None) -> TargetResult:
    """A target that is not (or no longer) an attributed process we may stop."""
    return TargetResult.of(
        jobs.unreached(ident, why or "not attributed to any agent session; not signalled")
    )


def _still_attributed(row: Attribution, proc: scan.Proc) -> bool | None:
    """Recheck an env row's marker on the live process (None: unreadable)."""
    if row.how != attribution.ENV:
        return True  # lineage and recalled rows: the identity check is the proof
    ident = ProcessIdentity(row.pid, row.started_at)
    for name in ("CORRAL_JOB", *scan.SESSION_MARKERS):
        value = proc.markers.get(name)
        if value:
            return procs.verify_marker(ident, name, value)
    return False


def terminate(
    session: str | None,
    targets: Sequence[ProcessIdentity] | None = None,
    *,
    surface: str = "cli",
    grace: float = DEFAULT_GRACE,
) -> Termination:
    """Stop a session's processes (`targets` None: all of them) or the named `targets`
    (`session` None: of any session). Supervised jobs are stopped through their supervisors;
    other processes get SIGTERM, then SIGKILL after `grace`, each only after its identity and
    attribution are verified. Processes that start after the check are not included.
    One audit event records every target; an audit failure comes back in `errors`."""
    obs = observe()
    chain = _caller_chain(obs.snapshot)
    rows = obs.attributed.rows
    chosen: list[tuple[ProcessIdentity, Attribution | None, str | None]] = []
    if targets is None:
        for each in rows.values():
            if each.session == session and each.pid not in chain:
                chosen.append((ProcessIdentity(each.pid, each.started_at), each, None))
    else:
        for ident in dict.fromkeys(targets):
            found = rows.get(ident.pid)
            why = None
            if found is None or found.started_at != ident.started_at:
                found = None
            elif ident.pid in chain:
                why = "the process asking for the stop (or its parent); not signalled"
            elif session is not None and found.session != session:
                why = f"belongs to session {found.session!r}, not {session!r}; not signalled"
            chosen.append((ident, found, why))

    results: list[TargetResult] = []
    job_ids: dict[str, JobRecord] = {}
    by_id = {r.id: r for r in obs.records}
    handles: list[tuple[procs.Handle, Attribution]] = []
    for ident, maybe, why in chosen:
        if maybe is None or why is not None:
            results.append(_unreached(ident, why))
            continue
        row = maybe
        proc = obs.snapshot.procs[row.pid]
        if proc.uid != os.getuid():
            results.append(_as(row, StopResult.UNPROVEN, "another user's process; not signalled"))
            continue
        record = by_id.get(row.job or "") if row.how == attribution.SUPERVISED else None
        if record is not None and (targets is None or row.role == ROLE_SUPERVISOR):
            job_ids[record.id] = record  # its supervisor stops the whole job
            continue
        handle = procs.open_verified(ident)
        if handle is None:
            results.append(_as(row, _unreached(ident).result))  # gone or replaced meanwhile
            continue
        proven = _still_attributed(row, proc)
        if not proven:
            handle.close()
            result = StopResult.UNPROVEN if proven is None else StopResult.IDENTITY_MISMATCH
            results.append(_as(row, result, "its session marker could not be verified"))
            continue
        handles.append((handle, row))

    job_outcomes: list[jobs.StopOutcome] = []

    def stop_jobs() -> None:
        job_outcomes.extend(
            jobs.stop_records(list(job_ids.values()), surface=surface, audit=False)[0]
        )

    worker = threading.Thread(target=stop_jobs, name="corral-stop-jobs")
    worker.start()
    try:
        signalled = jobs.signal_handles([h for h, _ in handles], grace)
    finally:
        worker.join()
    for outcome, (_, row) in zip(signalled, handles, strict=True):
        results.append(TargetResult.of(outcome, row.how, row.session, row.job))
    for job in job_outcomes:
        session_of_job = job_ids[job.job].session
        results.extend(
            TargetResult.of(t, attribution.SUPERVISED, session_of_job, job.job) for t in job.targets
        )
    errors = record_stop([t.to_json() for t in results], surface=surface, session=session)
    return Termination(session, results, errors)


def _as(row: Attribution, result: StopResult, detail: str | None = None) -> TargetResult:
    outcome = jobs.target(ProcessIdentity(row.pid, row.started_at), result, detail, row.role)
    return TargetResult.of(outcome, row.how, row.session, row.job)


POLICIES = ("keep", "terminate")


def stop_identity(
    pid: int, when: str, *, surface: str = "cli"
) -> tuple[list[jobs.StopOutcome], list[str]]:
    """Stop what `(pid, started_at)` names: a job's supervisor or process (through the job),
    else a process attributed to an agent session (its attribution verified, then SIGTERM
    and SIGKILL after the grace period, to it alone); anything else is left alone."""

    def attributed(ident: ProcessIdentity) -> tuple[list[jobs.StopOutcome], list[str]]:
        command = _command(ident.pid)  # before the stop: afterwards it is gone
        ended = terminate(None, [ident], surface=surface)
        state = "stopped" if ended.ok else "unknown"
        outcome = jobs.StopOutcome("-", command, state, list(ended.targets))
        return [outcome], ended.errors

    return jobs.stop_identity(pid, when, surface=surface, otherwise=attributed)


def end_session(session: str, policy: str = "keep", *, surface: str = "cli") -> Termination:
    """End an agent session: `keep` leaves its processes running (they show up as orphans once
    its agent is gone); `terminate` stops them all."""
    if policy not in POLICIES:
        raise ValueError(f"policy must be one of {POLICIES}, not {policy!r}")
    if policy == "keep":
        return Termination(session, [], [])
    return terminate(session, None, surface=surface)


def audit_events(limit: int = 100) -> list[dict[str, Any]]:
    """The latest audit events, oldest first."""
    return [
        {
            "id": e.id,
            "at": e.at,
            "event": e.event,
            "surface": e.surface,
            "actor": e.actor,
            "session": e.session,
            "targets": e.targets,
        }
        for e in db.audit_events(limit)
    ]
