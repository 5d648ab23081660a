"""A job's processes and the ports they hold, found from the process table, with or without
its supervisor: the supervisor's descendants (the subreaper keeps escaped ones among them),
the members of the job's process group (the supervisor leads it; its pgid outlives it while
any member runs), and every process carrying the job's `CORRAL_JOB` marker.

Only a marked process is proven the job's once its supervisor is gone: a group member
without the marker (it cleared its environment, `env -i ...`) is listed, never signalled.
Standard library only, and read only when asked: the hook calls this for a refusal, or when
a job's supervisor died.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Sequence

from corral.adapters.identity import ProcessIdentity, started_at
from corral.lowlevel import sockets as listeners
from corral.lowlevel.named import NamedTuple
from corral.lowlevel.procfs import PGRP, PPID, environ_value, read_stat

_LINUX = sys.platform.startswith("linux")


class Member(NamedTuple):
    identity: ProcessIdentity
    marked: bool  # carries the job's CORRAL_JOB marker: provably the job's


class JobKey(NamedTuple):
    """What finding a job's processes needs from its ledger record."""

    id: str
    pid: int  # the supervisor
    pgid: int
    started_at: str | None  # the supervisor's


class Row(NamedTuple):
    """One process as finding a job's processes needs it (a snapshot's table makes these)."""

    pid: int
    ppid: int
    pgid: int
    started_at: str
    marker: str | None  # its CORRAL_JOB value


def _marker(pid: int) -> str | None:
    return environ_value(pid, "CORRAL_JOB")


def _linux_table() -> list[Row]:
    rows = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        pid = int(entry)
        fields = read_stat(pid)
        when = started_at(pid) if fields is not None else None
        if fields is None or when is None or fields[0] == b"Z":
            continue
        rows.append(Row(pid, int(fields[PPID]), int(fields[PGRP]), when, _marker(pid)))
    return rows


def _psutil_table() -> list[Row]:
    import psutil

    rows = []
    for proc in psutil.process_iter(["pid", "ppid"]):
        try:
            env = proc.environ()
            pgid = os.getpgid(proc.pid)
        except (psutil.Error, OSError):
            env, pgid = {}, -1
        when = started_at(proc.pid)
        if when is not None:
            rows.append(Row(proc.pid, proc.info["ppid"] or 0, pgid, when, env.get("CORRAL_JOB")))
    return rows


def find(jobs: Sequence[JobKey], table: Sequence[Row] | None = None) -> dict[str, list[Member]]:
    """Each job's processes (never its supervisor), from one pass over the process table:
    `table`, a snapshot's (None: read now)."""
    if not jobs:
        return {}
    rows = table if table is not None else _linux_table() if _LINUX else _psutil_table()
    by_pid = {r.pid: r for r in rows}
    kids: dict[int, list[int]] = {}
    for r in rows:
        kids.setdefault(r.ppid, []).append(r.pid)
    found: dict[str, list[Member]] = {}
    for job in jobs:
        sup = by_pid.get(job.pid)
        sup_alive = sup is not None and sup.started_at == job.started_at
        leader = by_pid.get(job.pgid)
        # The group is the job's while its leader is the supervisor or gone (Linux keeps a pid
        # in use as long as a group bears its number); a live leader of another start time
        # means the number now names someone else's group.
        # Only a group the supervisor led (its number is the supervisor's pid) is the job's:
        # a job sent to the background mid-line stays in its caller's group, which holds
        # the caller and anything else it ran (other jobs of the same line too).
        group_ours = job.pgid == job.pid and (leader is None or leader.started_at == job.started_at)
        pids: dict[int, None] = {}
        if sup_alive:
            stack = list(kids.get(job.pid, ()))
            while stack:
                pid = stack.pop()
                if pid not in pids:
                    pids[pid] = None
                    stack.extend(kids.get(pid, ()))
        for r in rows:
            if r.marker == job.id or (group_ours and r.pgid == job.pgid):
                pids[r.pid] = None
        pids.pop(job.pid, None)
        found[job.id] = [
            Member(ProcessIdentity(p, by_pid[p].started_at), by_pid[p].marker == job.id)
            for p in pids
        ]
    return found


def ports(pids: Iterable[int]) -> tuple[int, ...]:
    """The ports the processes `pids` listen on (TCP listening, UDP bound), sorted."""
    among = list(pids)
    if not among:
        return ()
    if not _LINUX:
        import psutil

        held = set()
        for pid in among:
            try:
                conns = psutil.Process(pid).net_connections(kind="inet")
            except psutil.Error:
                continue
            held |= {c.laddr.port for c in conns if c.laddr and c.status in ("LISTEN", "NONE")}
        return tuple(sorted(held))
    sockets = listeners.listening()
    owned = listeners.owners(sockets, among)
    return tuple(sorted({sockets[inode].port for inode in owned}))
