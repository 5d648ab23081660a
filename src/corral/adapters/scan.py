"""A psutil snapshot of jobs' processes: count, listening ports, CPU and memory.

Listing is lenient: a process that vanishes or denies access mid-scan is skipped.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import psutil

_GONE = (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess)


@dataclass(frozen=True)
class Usage:
    processes: int
    ports: tuple[int, ...]
    cpu_percent: float
    rss_bytes: int
    pids: tuple[int, ...]


EMPTY = Usage(0, (), 0.0, 0, ())


def _job_processes(root: int, extra: Iterable[int]) -> list[psutil.Process]:
    """The supervisor's descendants (the subreaper keeps escaped ones among them) and `extra`."""
    procs: dict[int, psutil.Process] = {}
    try:
        for child in psutil.Process(root).children(recursive=True):
            procs[child.pid] = child
    except _GONE:
        pass
    for pid in extra:
        if pid not in procs and pid != root:
            try:
                procs[pid] = psutil.Process(pid)
            except _GONE:
                continue
    return list(procs.values())


def _listening_ports(proc: psutil.Process) -> set[int]:
    ports: set[int] = set()
    try:
        conns = proc.net_connections(kind="inet")
    except _GONE:
        return ports
    for conn in conns:
        if not conn.laddr:
            continue
        if conn.status == psutil.CONN_LISTEN or (
            conn.status == psutil.CONN_NONE and not conn.raddr
        ):
            ports.add(conn.laddr.port)
    return ports


def usage(jobs: Mapping[str, tuple[int, Iterable[int]]], interval: float = 0.1) -> dict[str, Usage]:
    """Usage per job id, given (supervisor pid, extra pids) for each.

    CPU % is measured over `interval` seconds, shared by all jobs (one wait in all)."""
    procs = {job: _job_processes(root, extra) for job, (root, extra) in jobs.items()}
    first: dict[int, float] = {}
    for plist in procs.values():
        for proc in plist:
            try:
                times = proc.cpu_times()
                first[proc.pid] = times.user + times.system
            except _GONE:
                continue
    start = time.monotonic()
    result: dict[str, Usage] = {}
    ports_by_job = {
        job: sorted({p for proc in plist for p in _listening_ports(proc)})
        for job, plist in procs.items()
    }
    remaining = interval - (time.monotonic() - start)
    if first and remaining > 0:
        time.sleep(remaining)
    elapsed = max(time.monotonic() - start, 1e-6)
    for job, plist in procs.items():
        cpu = 0.0
        rss = 0
        alive: list[int] = []
        for proc in plist:
            try:
                times = proc.cpu_times()
                rss += proc.memory_info().rss
            except _GONE:
                continue
            alive.append(proc.pid)
            if proc.pid in first:
                cpu += (times.user + times.system - first[proc.pid]) / elapsed * 100
        result[job] = Usage(len(alive), tuple(ports_by_job[job]), round(cpu, 1), rss, tuple(alive))
    return result
