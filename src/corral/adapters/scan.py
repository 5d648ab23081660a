"""One snapshot of the machine's processes that every surface reads: the process table with
identities and session markers, listening ports (TCP and UDP, IPv4 and IPv6), CPU and memory.

Listing is lenient: a process that vanishes or denies access mid-scan is skipped. Linux reads
/proc directly (one `stat` read per process); elsewhere psutil answers. Raw environments never
leave this module: only the marker values corral attributes by are kept.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import re
import sys
import time
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import psutil

from corral.adapters import owners
from corral.lowlevel import procfs, record
from corral.lowlevel import sockets as _net
from corral.lowlevel.named import NamedTuple
from corral.lowlevel.procfs import PGRP, PPID, RSS, SESSION, START, STATE, STIME, UTIME, boot_id
from corral.lowlevel.sockets import Listener  # the one listener type

_LINUX = sys.platform.startswith("linux")
_GONE = (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess)
# The variables that name an agent session, first found wins (lowlevel.record).
SESSION_MARKERS = record.SESSION_VARIABLES
MARKERS = ("CORRAL_JOB", *SESSION_MARKERS, "CLAUDE_PID")
_ENVIRON_READ = 16384  # one read takes a whole environment in nearly every case
SETTLE = 1.0  # seconds after its start a process may still exec (see Snapshot.settling)


class Proc(NamedTuple):
    """One process as the snapshot saw it. `start` orders processes by start time. A named
    tuple: a whole snapshot makes a thousand of them and more, each at once."""

    pid: int
    ppid: int
    pgid: int
    sid: int
    uid: int
    name: str
    started_at: str  # the identity string, as adapters.identity produces it
    start: float  # seconds since boot (Linux) or the epoch (elsewhere): for ordering only
    created: float  # epoch seconds, for the age
    cpu_time: float
    rss: int
    markers: Mapping[str, str]  # only MARKERS; None of the rest of the environment
    environ_readable: bool
    seen_at: float = 0.0  # time.monotonic() of the read (0: the snapshot's own time)


@dataclass(frozen=True)
class Snapshot:
    taken_at: float
    procs: dict[int, Proc]
    listeners: tuple[Listener, ...]
    cpu_percent: dict[int, float] = field(default_factory=dict)
    # None: every process was read; else the pids read for this snapshot, the others carried
    # over from the previous one (an incremental snapshot)
    read: frozenset[int] | None = None
    # pids listed in /proc but left out of `procs` (zombies, unreadable): an incremental
    # snapshot leaves them out again without reading them
    skipped: frozenset[int] = frozenset()
    tasks: str | None = None  # the kernel's task count and last pid as the table was listed
    # Linux: the entries of /proc the table was read from, with their inode numbers (a pid
    # reused by a new process comes with a new /proc/<pid> inode)
    listed: Mapping[str, int] = field(default_factory=dict)
    # processes first read within SETTLE seconds of their start: the next incremental snapshot
    # reads them once more (a read between fork and exec saw the parent's name and environment)
    settling: frozenset[int] = frozenset()

    def children(self) -> dict[int, list[int]]:
        kids: dict[int, list[int]] = {}
        for proc in self.procs.values():
            kids.setdefault(proc.ppid, []).append(proc.pid)
        return kids

    def descendants(self, root: int, kids: Mapping[int, list[int]] | None = None) -> list[int]:
        tree = kids if kids is not None else self.children()
        found: list[int] = []
        stack = list(tree.get(root, ()))
        while stack:
            pid = stack.pop()
            if pid in found:
                continue
            found.append(pid)
            stack.extend(tree.get(pid, ()))
        return found

    def ports_of(self, pids: Iterable[int]) -> list[int]:
        by_pid = self._ports_by_pid
        return sorted({port for pid in pids for port in by_pid.get(pid, ())})

    @functools.cached_property
    def _ports_by_pid(self) -> dict[int | None, set[int]]:
        """Each owner's ports, gathered once: a listing asks for every row's ports, and a
        busy machine has hundreds of listeners."""
        found: dict[int | None, set[int]] = {}
        for lst in self.listeners:
            found.setdefault(lst.pid, set()).add(lst.port)
        return found

    def alive(self, pid: int, started_at: str) -> bool:
        proc = self.procs.get(pid)
        return proc is not None and proc.started_at == started_at


# -- the process table ------------------------------------------------------------------------

_BOOT: tuple[str, float, int] | None = None


def _boot() -> tuple[str, float, int]:
    """(boot id, boot time in epoch seconds, clock ticks per second)."""
    global _BOOT
    if _BOOT is None:
        _BOOT = (boot_id(), psutil.boot_time(), os.sysconf("SC_CLK_TCK"))
    return _BOOT


# One pass over an environment finds every marker: an entry starting with one of the names
# and `=`, after the NUL that ends the entry before (the environment is searched with a NUL
# put in front). Twice as fast as a search per name over a thousand processes' environments.
_MARKER_ENTRY = re.compile(
    b"\\0(" + b"|".join(re.escape(m.encode()) for m in MARKERS) + b")=([^\\0]*)"
)
_MARKER_NAMES = {m.encode(): m for m in MARKERS}


def _markers(raw: bytes) -> dict[str, str]:
    """The MARKERS set in an environment (entries separated by NUL): the first entry of each
    name, its value decoded."""
    found: dict[str, str] = {}
    for entry in _MARKER_ENTRY.finditer(b"\0" + raw):
        name = _MARKER_NAMES[entry[1]]
        if name not in found:
            found[name] = entry[2].decode("utf-8", "replace")
    return found


def _read_rest(fd: int, head: bytes) -> bytes:
    chunks = [head]
    while chunk := os.read(fd, 65536):
        chunks.append(chunk)
    return b"".join(chunks)


def _linux_table(entries: Iterable[str], skipped: set[int] | None = None) -> dict[int, Proc]:
    """Two /proc files per process (stat, environ) read with raw syscalls, one read each (a
    third of the cost of open() for small files); the owner's uid from the open stat file.
    The pids left out (zombies, unreadable) are added to `skipped`. The loop is the cost of
    every whole snapshot (a thousand processes and more): what it calls is bound to locals
    and each process is one tuple made at once."""
    if skipped is None:
        skipped = set()
    seen_at = time.monotonic()
    boot_id, boot_time, hz = _boot()
    page = os.sysconf("SC_PAGE_SIZE")
    clock = (boot_id, boot_time, hz, page)
    # looked up once per table, not per process (tests spy on os's functions)
    open_, read, fstat, close, rdonly = os.open, os.read, os.fstat, os.close, os.O_RDONLY
    fields_of, markers_of, proc = procfs.stat_fields, _markers, _proc
    procs: dict[int, Proc] = {}
    for entry in entries:
        if not entry.isdigit():
            continue
        folder = f"/proc/{entry}/"
        try:
            fd = open_(folder + "stat", rdonly)
        except OSError:
            skipped.add(int(entry))
            continue
        try:
            stat = read(fd, 4096)  # a stat line is far shorter
            uid = fstat(fd).st_uid  # /proc/<pid>'s files belong to the process's owner
        except OSError:
            skipped.add(int(entry))
            continue
        finally:
            close(fd)
        fields = fields_of(stat)
        if len(fields) <= RSS or fields[STATE] == b"Z":
            skipped.add(int(entry))
            continue  # a zombie holds no resources and cannot be stopped
        try:
            fd = open_(folder + "environ", rdonly)
        except OSError:
            markers, readable = {}, False
        else:
            try:
                raw = read(fd, _ENVIRON_READ)
                if len(raw) == _ENVIRON_READ:
                    raw = _read_rest(fd, raw)
                markers, readable = markers_of(raw), True
            except OSError:
                markers, readable = {}, False
            finally:
                close(fd)
        pid = int(entry)
        procs[pid] = proc(
            pid, stat, fields, clock, uid=uid, markers=markers, readable=readable, seen_at=seen_at
        )
    return procs


def _proc(
    pid: int,
    stat: bytes,
    fields: list[bytes],
    clock: tuple[str, float, int, int],
    *,
    uid: int,
    markers: dict[str, str],
    readable: bool,
    seen_at: float,
) -> Proc:
    """A process from its stat line (`fields` split by procfs); `clock` is the boot id,
    the boot time, clock ticks per second and the page size. The tuple is made directly
    (a whole snapshot makes one per process)."""
    boot_id, boot_time, hz, page = clock
    ticks = int(fields[START])
    start = ticks / hz
    return tuple.__new__(Proc, (
        pid, int(fields[PPID]), int(fields[PGRP]), int(fields[SESSION]), uid,
        procfs.stat_name(stat), f"{boot_id}:{ticks}", start, boot_time + start,
        (int(fields[UTIME]) + int(fields[STIME])) / hz, int(fields[RSS]) * page,
        markers, readable, seen_at,
    ))  # fmt: skip


def _psutil_table() -> dict[int, Proc]:
    procs: dict[int, Proc] = {}
    attrs = ["pid", "ppid", "uids", "name", "create_time", "cpu_times", "memory_info"]
    for p in psutil.process_iter(attrs):
        info = p.info
        if info["create_time"] is None or info["cpu_times"] is None:
            continue
        try:
            env, readable = p.environ(), True
            markers = {k: env[k] for k in MARKERS if k in env}
        except _GONE:
            markers, readable = {}, False
        try:
            pgid, sid = os.getpgid(p.pid), os.getsid(p.pid)
        except OSError:
            continue
        procs[p.pid] = Proc(
            pid=p.pid,
            ppid=info["ppid"] or 0,
            pgid=pgid,
            sid=sid,
            uid=info["uids"].real if info["uids"] else -1,
            name=info["name"] or "",
            started_at=f"{info['create_time']:.6f}",
            start=info["create_time"],
            created=info["create_time"],
            cpu_time=info["cpu_times"].user + info["cpu_times"].system,
            rss=info["memory_info"].rss if info["memory_info"] else 0,
            markers=markers,
            environ_readable=readable,
        )
    return procs


def _cpu_time(pid: int) -> float | None:
    if not _LINUX:
        try:
            t = psutil.Process(pid).cpu_times()
        except _GONE:
            return None
        return float(t.user + t.system)
    fields = procfs.read_stat(pid)
    if fields is None:
        return None
    return (int(fields[UTIME]) + int(fields[STIME])) / _boot()[2]


def _psutil_listeners() -> tuple[Listener, ...]:
    try:
        conns = psutil.net_connections(kind="inet")
    except psutil.AccessDenied:
        return ()
    found: set[Listener] = set()
    for c in conns:
        if not c.laddr:
            continue
        tcp = c.type == 1  # socket.SOCK_STREAM
        if tcp and c.status != psutil.CONN_LISTEN:
            continue
        if not tcp and c.raddr:
            continue
        family = "ipv6" if c.family == 10 or ":" in c.laddr.ip else "ipv4"
        found.add(Listener(c.laddr.port, "tcp" if tcp else "udp", family, c.laddr.ip, c.pid))
    return tuple(sorted(found, key=lambda x: (x.port, x.proto, x.family, x.address)))


def listeners() -> tuple[Listener, ...]:
    """Every listening socket we can see (TCP in LISTEN, UDP bound without a peer) with its
    owner when that is visible."""
    return take().listeners


def take(
    *,
    previous: Snapshot | None = None,
    incremental: bool = False,
    reread: Iterable[int] = (),
    walk_only: Collection[int] | None = None,
) -> Snapshot:
    """One snapshot of the machine; CPU % comes from `previous` for identities it also saw.

    `incremental` (Linux): only the processes `previous` did not see (a pid another process
    took over has a new /proc inode), those it saw seconds after their start, and `reread`
    are read; the others still listed in /proc are carried over as `previous` saw them: their
    CPU and memory as then, a later exec or exit not seen until they are gone from /proc (so
    take a whole one now and then). /proc is not even listed when the kernel's task count and
    last pid have not moved. The sockets are dumped again and their owners proven as in every
    snapshot; with `walk_only`, a socket no new process holds is looked for among those pids
    alone."""
    taken = time.monotonic()
    read: frozenset[int] | None = None
    skipped: set[int] = set()
    tasks: str | None = None
    listed: Mapping[str, int] = {}
    settling: frozenset[int] = frozenset()
    ahead: owners.Ahead | None = None
    if _LINUX:
        listed_at = time.clock_gettime(time.CLOCK_BOOTTIME)
        tasks = _tasks()  # before the listing: a change after it shows next time
        again: set[int] = set()
        try:
            if incremental and previous is not None and previous.listed:
                again = {*reread, *previous.settling}
                procs, read, skipped, listed = _carry(previous, again, tasks)
            else:
                listed = _listing()
                # the sockets' owners looked for meanwhile when nothing is known of them
                ahead = owners.walk_ahead(listed) if walk_only is None else None
                procs = _linux_table(listed, skipped)
            first = procs.keys() if read is None else read - again  # read for the first time
            settling = frozenset(pid for pid in first if listed_at - procs[pid].start < SETTLE)
            # the processes a previous walk did not see: every one, or (incremental) those read
            new = None if read is None else [procs[pid] for pid in read]
            held = owners.listening(procs.values(), listed_at, new, walk_only, ahead)
        finally:
            if ahead is not None:
                ahead.close()  # the child reaped, whatever happened
        ports = tuple(
            sorted(
                {Listener(s.port, s.proto, s.family, s.address(), pid) for s, pid in held},
                key=lambda x: (x.port, x.proto, x.family, x.address),
            )
        )
    else:
        procs, ports = _psutil_table(), _psutil_listeners()
    cpu: dict[int, float] = {}
    if previous is not None:
        if read is not None:  # carried over unread (the same tuples): their CPU as then
            cpu = {
                pid: percent
                for pid, percent in previous.cpu_percent.items()
                if pid in procs and pid not in read
            }
        for pid in procs if read is None else read:
            proc = procs[pid]
            before = previous.procs.get(pid)
            if before is None or before is proc or before.started_at != proc.started_at:
                continue
            elapsed = max((proc.seen_at or taken) - (before.seen_at or previous.taken_at), 1e-6)
            cpu[pid] = round(max(0.0, proc.cpu_time - before.cpu_time) / elapsed * 100, 1)
    return Snapshot(taken, procs, ports, cpu, read, frozenset(skipped), tasks, listed, settling)


_OWN_PROC: bool | None = None


def _tasks() -> str | None:
    """The kernel's count of tasks and the last pid it gave out (/proc/loadavg): the same two
    numbers mean no task was created or reaped in between. None when /proc is not our pid
    namespace's (its last pid would be another namespace's)."""
    global _OWN_PROC
    if _OWN_PROC is None:
        try:
            _OWN_PROC = os.readlink("/proc/self") == str(os.getpid())
        except OSError:
            _OWN_PROC = False
    if not _OWN_PROC:
        return None
    try:
        fd = os.open("/proc/loadavg", os.O_RDONLY)
    except OSError:
        return None
    try:
        raw = os.read(fd, 256)
    except OSError:
        return None
    finally:
        os.close(fd)
    fields = raw.split()  # load averages, running/total tasks, last pid
    if len(fields) < 5 or b"/" not in fields[3]:
        return None
    return f"{fields[3].partition(b'/')[2].decode()} {fields[4].decode()}"


def _listing() -> dict[str, int]:
    """/proc's entries and their inode numbers (given by the listing itself: no more calls)."""
    with os.scandir("/proc") as entries:
        return {entry.name: entry.inode() for entry in entries}


def _carry(
    previous: Snapshot, again: set[int], tasks: str | None
) -> tuple[dict[int, Proc], frozenset[int], set[int], Mapping[str, int]]:
    """The process table of `previous` with the processes gone since left out and those
    started since (and `again`) read: (table, pids read, pids left out, /proc's listing)."""
    before = previous.listed
    if tasks is not None and tasks == previous.tasks:
        listed: Mapping[str, int] = before
        new: set[str] = set()
        gone: set[str] = set()
    else:
        listed = _listing()
        # a pid whose /proc folder is another inode now: another process took it over
        new = {name for name, _ in listed.items() - before.items()}
        gone = {name for name, _ in before.items() - listed.items()}
    procs, skipped = dict(previous.procs), set(previous.skipped)
    for entry in gone:
        if entry.isdigit():
            procs.pop(int(entry), None)
            skipped.discard(int(entry))
    fresh = {entry for entry in new if entry.isdigit()}
    for pid in again:
        if procs.pop(pid, None) is not None or pid in skipped:
            skipped.discard(pid)
            fresh.add(str(pid))
    found = _linux_table(fresh, skipped)
    procs.update(found)
    return procs, frozenset(found), skipped, listed


def with_cpu(snap: Snapshot, pids: Iterable[int], interval: float) -> Snapshot:
    """`snap` with CPU % of `pids` measured from it over `interval` seconds (one wait in all)."""
    wanted = [pid for pid in pids if pid in snap.procs]
    if not wanted or interval <= 0:
        return snap
    remaining = interval - (time.monotonic() - snap.taken_at)
    if remaining > 0:
        time.sleep(remaining)
    elapsed = max(time.monotonic() - snap.taken_at, 1e-6)
    cpu = dict(snap.cpu_percent)
    for pid in wanted:
        now = _cpu_time(pid)
        if now is not None:
            cpu[pid] = round(max(0.0, now - snap.procs[pid].cpu_time) / elapsed * 100, 1)
    return dataclasses.replace(snap, cpu_percent=cpu)


def cwd(pid: int) -> str | None:
    """A process's working folder, or None when it is gone or not ours to read."""
    if _LINUX:
        try:
            return os.readlink(f"/proc/{pid}/cwd")
        except OSError:
            return None
    try:
        return str(psutil.Process(pid).cwd())
    except _GONE:
        return None


# -- per job ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Usage:
    processes: int
    ports: tuple[int, ...]
    cpu_percent: float
    rss_bytes: int
    pids: tuple[int, ...]


EMPTY = Usage(0, (), 0.0, 0, ())


def job_pids(
    snap: Snapshot,
    root: int,
    extra: Iterable[int] = (),
    kids: Mapping[int, list[int]] | None = None,
) -> list[int]:
    """A job's processes: the supervisor's descendants (the subreaper keeps escaped ones among
    them), anything carrying its CORRAL_JOB marker, and `extra`; never the supervisor."""
    pids = dict.fromkeys(snap.descendants(root, kids))
    for pid in extra:
        if pid in snap.procs:
            pids[pid] = None
    pids.pop(root, None)
    return list(pids)


def jobs_pids(
    snap: Snapshot,
    jobs: Mapping[str, tuple[int, Sequence[int]]],
    marked: Mapping[str, Iterable[int]] | None = None,
) -> dict[str, list[int]]:
    """Each job's processes in `snap`, given (supervisor pid, extra pids) for each: `job_pids`
    with the extra pids' descendants, and the pids `marked` with the job's CORRAL_JOB."""
    kids = snap.children()
    found = {}
    for job, (root, extra) in jobs.items():
        under = [pid for p in extra for pid in snap.descendants(p, kids)]
        more = marked.get(job, ()) if marked is not None else ()
        found[job] = job_pids(snap, root, [*extra, *under, *more], kids)
    return found


def job_usage(snap: Snapshot, pids: Iterable[int]) -> Usage:
    alive = [p for p in pids if p in snap.procs]
    return Usage(
        len(alive),
        tuple(snap.ports_of(alive)),
        round(sum(snap.cpu_percent.get(p, 0.0) for p in alive), 1),
        sum(snap.procs[p].rss for p in alive),
        tuple(alive),
    )


def usage(jobs: Mapping[str, tuple[int, Iterable[int]]], interval: float = 0.1) -> dict[str, Usage]:
    """Usage per job id, given (supervisor pid, extra pids) for each: the supervisor's
    descendants (its subreaper keeps escaped ones among them) and the extra pids with theirs.

    Linux reads only those processes (`jobs_snapshot`); elsewhere the whole machine is read,
    and a process carrying a job's CORRAL_JOB marker counts too. CPU % is measured over
    `interval` seconds, shared by all jobs (one wait in all)."""
    given = {job: (root, list(extra)) for job, (root, extra) in jobs.items()}
    by_marker: dict[str, list[int]] = {}
    if _LINUX:
        roots = [root for root, _ in given.values()] + [p for _, e in given.values() for p in e]
        snap = jobs_snapshot(roots, supervisors={root for root, _ in given.values()})
    else:
        snap = take()
        for proc in snap.procs.values():
            token = proc.markers.get("CORRAL_JOB")
            if token is not None and token in jobs:
                by_marker.setdefault(token, []).append(proc.pid)
    members = jobs_pids(snap, given, by_marker)
    snap = with_cpu(snap, [pid for pids in members.values() for pid in pids], interval)
    return {job: job_usage(snap, pids) for job, pids in members.items()}


# -- jobs only --------------------------------------------------------------------------------

_CHILDREN_FILES: bool | None = None


def _has_children_files() -> bool:
    """Whether the kernel lists a task's children (/proc/<pid>/task/<tid>/children: Linux
    3.5+ built with CONFIG_PROC_CHILDREN, as most distributions' kernels are)."""
    global _CHILDREN_FILES
    if _CHILDREN_FILES is None:
        me = os.getpid()
        _CHILDREN_FILES = os.path.exists(f"/proc/{me}/task/{me}/children")
    return _CHILDREN_FILES


def _children_of(pid: int, threads: bool = True) -> list[int]:
    return procfs.children(pid, threads) or []  # None: gone (the kernel keeps the lists)


def _read_stat(entry: str) -> bytes | None:
    try:
        fd = os.open(f"/proc/{entry}/stat", os.O_RDONLY)
    except OSError:
        return None
    try:
        return os.read(fd, 4096)
    except OSError:
        return None
    finally:
        os.close(fd)


def _tree_stats(roots: Iterable[int], single: Collection[int] = ()) -> dict[int, bytes]:
    """The stat lines of `roots` and their descendants: from the roots downward through the
    kernel's children lists where it has them, else from one pass over every process's stat
    (the one file each, never its environment or its descriptors). Of the roots in `single`
    (corral's supervisors, which run one thread) only the descendants are read, and their
    children from their one thread's list."""
    wanted = set(roots)
    stats: dict[int, bytes] = {}
    if _has_children_files():
        # a supervisor's own line is not read (its usage is not its job's, and it is left out
        # of the job's processes): only its children, from its one thread's list
        stack = [kid for pid in wanted & set(single) for kid in _children_of(pid, False)]
        stack += [pid for pid in wanted if pid not in single]
        while stack:
            pid = stack.pop()
            if pid in stats:
                continue
            raw = _read_stat(str(pid))
            if raw is None:
                continue
            stats[pid] = raw
            fields = procfs.stat_fields(raw)
            # one thread (most processes): its list alone, without listing the threads
            single_thread = len(fields) > procfs.THREADS and fields[procfs.THREADS] == b"1"
            stack.extend(_children_of(pid, threads=not single_thread))
        return stats
    every: dict[int, bytes] = {}
    kids: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        raw = _read_stat(entry)
        if raw is None:
            continue
        pid = int(entry)
        every[pid] = raw
        fields = procfs.stat_fields(raw)
        if len(fields) > PPID:
            kids.setdefault(int(fields[PPID]), []).append(pid)
    stack = [pid for pid in wanted if pid in every]
    while stack:
        pid = stack.pop()
        if pid not in stats:
            stats[pid] = every[pid]
            stack.extend(kids.get(pid, ()))
    return stats


def jobs_snapshot(roots: Iterable[int], supervisors: Collection[int] = ()) -> Snapshot:
    """Linux: a snapshot of `roots` (jobs' supervisors, leftover processes) and their
    descendants only, and the sockets they listen on: one socket dump, then the descriptors of
    those processes alone (no other process's environment or descriptors is read, so it costs
    the same on the first run ever). Markers are not read; other listeners are left out; the
    `supervisors` themselves are not in it, only what runs under them."""
    taken = time.monotonic()
    boot_id, boot_time, hz = _boot()
    page = os.sysconf("SC_PAGE_SIZE")
    procs: dict[int, Proc] = {}
    for pid, stat in _tree_stats(roots, supervisors).items():
        fields = procfs.stat_fields(stat)
        if len(fields) <= RSS or fields[STATE] == b"Z":
            continue
        clock = (boot_id, boot_time, hz, page)
        # uid -1: not read (usage needs no owner); markers are not read either
        procs[pid] = _proc(
            pid, stat, fields, clock, uid=-1, markers={}, readable=False, seen_at=taken
        )
    sockets = _net.listening()
    # A supervisor's descriptors are not read: any socket it holds, its job's shell holds too
    # (inherited), and with 200 jobs they are half of the folders walked.
    among = [pid for pid in procs if pid not in supervisors]
    held = _net.owners(sockets, among) if sockets and among else {}
    listed = {
        Listener(sock.port, sock.proto, sock.family, sock.address(), held[inode][0])
        for inode, sock in sockets.items()
        if inode in held
    }
    ports = tuple(sorted(listed, key=lambda x: (x.port, x.proto, x.family, x.address)))
    return Snapshot(taken, procs, ports, {}, frozenset(procs))
