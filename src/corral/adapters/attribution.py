"""Which agent session each process belongs to, and how that is known.

`supervised`: a live supervisor in the ledger, its descendants, or a process carrying the
`CORRAL_JOB` marker of a ledger record. `env`: a session marker in the process's environment
(`CORRAL_JOB` of no known job, or a session variable: scan.SESSION_MARKERS). `lineage`: a
descendant of a live agent process (the `CLAUDE_PID` its shells carry). A process known
earlier (an observation) keeps its attribution only while its exact identity lives.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from corral.adapters.ledger import JobRecord
from corral.adapters.scan import SESSION_MARKERS, Proc, Snapshot

SUPERVISED, ENV, LINEAGE = "supervised", "env", "lineage"
AGENT_ALIVE, AGENT_GONE, AGENT_UNKNOWN = "alive", "gone", "unknown"

Identity = tuple[int, str]  # (pid, started_at)


@dataclass(frozen=True)
class Attribution:
    pid: int
    started_at: str
    how: str
    session: str | None
    job: str | None = None
    role: str = "process"  # "supervisor" for a job's supervisor
    recalled: bool = False  # known from an earlier observation, not from this snapshot


@dataclass(frozen=True)
class Attributed:
    rows: dict[int, Attribution]
    agents: dict[str, str]  # session -> AGENT_ALIVE / AGENT_GONE / AGENT_UNKNOWN
    live_agents: dict[str, list[Identity]]  # session -> agent identities alive now

    def orphaned(self, row: Attribution) -> bool:
        """Attributed to a session whose agent process is gone, or to no known session."""
        return row.session is None or self.agents.get(row.session) == AGENT_GONE


def _marker_session(proc: Proc) -> str | None:
    return next((v for k in SESSION_MARKERS if (v := proc.markers.get(k))), None)


def _agent_pid(proc: Proc) -> int | None:
    raw = proc.markers.get("CLAUDE_PID", "")
    return int(raw) if raw.isdigit() and int(raw) > 0 else None


def attribute(
    snap: Snapshot,
    records: Iterable[JobRecord],
    remembered: Mapping[Identity, Attribution] | None = None,
    known_agents: Mapping[str, Iterable[Identity]] | None = None,
) -> Attributed:
    """Attribute every process of `snap`. Pure over its inputs: it reads nothing itself."""
    kids = snap.children()
    rows: dict[int, Attribution] = {}
    by_token = {r.id: r for r in records}

    def put(proc: Proc, how: str, session: str | None, job: str | None, role: str) -> None:
        if proc.pid not in rows:
            rows[proc.pid] = Attribution(proc.pid, proc.started_at, how, session, job, role)

    for record in by_token.values():
        if record.final or record.started_at is None:
            continue
        sup = snap.procs.get(record.pid)
        if sup is None or sup.started_at != record.started_at:
            continue
        put(sup, SUPERVISED, record.session, record.id, "supervisor")
        for pid in snap.descendants(record.pid, kids):
            put(snap.procs[pid], SUPERVISED, record.session, record.id, "process")

    live_agents: dict[str, list[Identity]] = {}
    gone_agents: set[str] = set()
    agent_of: dict[int, str] = {}
    for proc in snap.procs.values():
        if not proc.markers:
            continue  # most of the machine: nothing below applies (the daemon's refresh)
        token = proc.markers.get("CORRAL_JOB")
        session = _marker_session(proc)
        owner = by_token.get(token) if token else None
        if owner is not None:
            put(proc, SUPERVISED, owner.session or session, owner.id, "process")
        elif token or session:
            put(proc, ENV, session, token, "process")
        agent = _agent_pid(proc)
        if agent is None or session is None:
            continue
        found = snap.procs.get(agent)
        if found is not None and found.start <= proc.start:
            agent_of[agent] = session
            ident = (found.pid, found.started_at)
            if ident not in live_agents.setdefault(session, []):
                live_agents[session].append(ident)
        else:
            gone_agents.add(session)  # its agent pid is gone, or now a younger process

    for session, idents in (known_agents or {}).items():
        for pid, started_at in idents:
            if snap.alive(pid, started_at):
                agent_of.setdefault(pid, session)
                if (pid, started_at) not in live_agents.setdefault(session, []):
                    live_agents[session].append((pid, started_at))
            else:
                gone_agents.add(session)

    for agent, session in agent_of.items():
        for pid in snap.descendants(agent, kids):
            put(snap.procs[pid], LINEAGE, session, None, "process")

    for (pid, started_at), old in (remembered or {}).items():
        if pid not in rows and snap.alive(pid, started_at):
            rows[pid] = Attribution(
                pid, started_at, old.how, old.session, old.job, old.role, recalled=True
            )

    agents: dict[str, str] = {}
    for row in rows.values():
        if row.session is None:
            continue
        if live_agents.get(row.session):
            agents[row.session] = AGENT_ALIVE
        elif row.session in gone_agents:
            agents[row.session] = AGENT_GONE
        else:
            agents[row.session] = AGENT_UNKNOWN
    for pid, session in agent_of.items():  # an agent owns its session; it is not one of its jobs
        mine = rows.get(pid)
        if mine is not None and mine.session == session:
            del rows[pid]
    return Attributed(rows, agents, {s: v for s, v in live_agents.items() if v})
