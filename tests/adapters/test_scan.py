"""The snapshot with real processes: listeners of every kind, jobs' processes, leniency."""

from __future__ import annotations

import subprocess
import sys

from corral.adapters import scan
from tests.helpers import job_pids, start_job, wait_for

# A TCP and a UDP socket on IPv4 and IPv6 loopback, in `socks`.
SOCKETS = """
import socket, sys
socks = []
for fam, kind, host in [(socket.AF_INET, socket.SOCK_STREAM, "127.0.0.1"),
                        (socket.AF_INET6, socket.SOCK_STREAM, "::1"),
                        (socket.AF_INET, socket.SOCK_DGRAM, "127.0.0.1"),
                        (socket.AF_INET6, socket.SOCK_DGRAM, "::1")]:
    s = socket.socket(fam, kind)
    s.bind((host, 0))
    if kind == socket.SOCK_STREAM:
        s.listen()
    socks.append(s)
"""
LISTEN = (
    SOCKETS
    + """
print(" ".join(str(s.getsockname()[1]) for s in socks), flush=True)
sys.stdin.read()
"""
)


def test_listeners_tcp_udp_ipv4_ipv6_are_attributed_to_their_process() -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", LISTEN], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout is not None
        ports = [int(p) for p in child.stdout.readline().split()]
        snap = scan.take()
        mine = {(x.port, x.proto, x.family) for x in snap.listeners if x.pid == child.pid}
        assert mine == {
            (ports[0], "tcp", "ipv4"),
            (ports[1], "tcp", "ipv6"),
            (ports[2], "udp", "ipv4"),
            (ports[3], "udp", "ipv6"),
        }
        assert snap.ports_of([child.pid]) == sorted(set(ports))
        assert snap.procs[child.pid].markers == {}  # nothing but markers is ever kept
    finally:
        assert child.stdin is not None
        child.stdin.close()
        child.wait()
        assert child.stdout is not None
        child.stdout.close()


def test_job_usage_counts_escaped_processes_and_measures_cpu() -> None:
    job = start_job("setsid sh -c 'while :; do :; done' & sleep 300")
    wait_for(lambda: len(job_pids(job["id"])) >= 3, what="job processes")
    try:

        def busy() -> bool:
            usage = scan.usage({job["id"]: (job["pid"], [])}, interval=0.3)[job["id"]]
            assert usage.processes >= 3
            assert usage.rss_bytes > 0
            return usage.cpu_percent > 20

        # The loop gets what CPU the machine spares: on a loaded 2-core CI machine one
        # 0.3 s window may give it less than a fifth of a core, so measure until one does.
        wait_for(busy, what="the busy loop measured above 20% CPU")
    finally:
        from corral.adapters.ledger import read_all
        from corral.service.jobs import stop_records

        stop_records(read_all().records)


def test_snapshot_is_lenient_about_processes_that_vanish() -> None:
    quick = [subprocess.Popen(["true"]) for _ in range(30)]
    snap = scan.take()  # some of these exit mid-scan: skipped, never an error
    for p in quick:
        p.wait()
    assert snap.procs
