"""The first run ever's walk over every process, made by a child process while the table is
read (owners.walk_ahead): the same owner for every socket as the walk made afterwards, the
child always reaped, and the walk made here whenever the child cannot be trusted.

Each case runs in a fresh interpreter of its own: a fork is only made with one thread, and
a test runner's worker may have more."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.adapters.test_scan import SOCKETS

SRC = Path(__file__).resolve().parents[2] / "src"

# Five sockets two processes hold (a server that forked a worker after listen): the owner of
# each is the one the walk's order meets first.
SERVERS = (
    SOCKETS
    + """
import os
shared = socket.socket()
shared.bind(("127.0.0.1", 0))
shared.listen()
worker = os.fork()
if worker == 0:
    sys.stdin.read()
    os._exit(0)
ports = [s.getsockname()[1] for s in [*socks, shared]]
print(" ".join(map(str, ports)), worker, flush=True)
sys.stdin.read()
os.waitpid(worker, 0)
"""
)

# Takes the first run ever's snapshot with the walk ahead and without it; prints both.
PROBE = """
import json, os, sys, threading, time
sys.path.insert(0, {src!r})
from corral.adapters import owners, scan
from corral.lowlevel import sockets

owners._AHEAD_FROM = 1  # this machine may run few processes: fork whatever their number
PORTS = {ports!r}
CASE = {case!r}
used = []
walk_ahead = owners.walk_ahead

def spy(entries):
    ahead = walk_ahead(entries)
    used.append(ahead is not None)
    return ahead

def first_run_ever():
    owners.forget_owners(persisted=True)
    snap = scan.take()
    return sorted([l.port, l.proto, l.family, l.pid] for l in snap.listeners if l.port in PORTS)

if CASE == "thread":
    threading.Thread(target=time.sleep, args=(1,), daemon=True).start()
if CASE == "child fails":
    def broken(inodes, among):
        raise OSError("the child's walk failed")
    sockets.holders = broken  # the child's copy fails; this process walks itself
owners.walk_ahead = spy
ahead = first_run_ever()
owners.walk_ahead = lambda entries: None
alone = first_run_ever()
import psutil
zombies = [c.pid for c in psutil.Process().children() if c.status() == psutil.STATUS_ZOMBIE]
print(json.dumps({{"used": used, "ahead": ahead, "alone": alone, "zombies": zombies}}))
"""


@pytest.fixture
def servers() -> Iterator[tuple[list[int], int, int]]:
    """(ports, server pid, worker pid): both processes hold every port's socket."""
    child = subprocess.Popen(
        [sys.executable, "-c", SERVERS], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert child.stdout is not None and child.stdin is not None
    try:
        *ports, worker = (int(p) for p in child.stdout.readline().split())
        yield ports, child.pid, worker
    finally:
        child.stdin.close()
        child.wait(timeout=30)
        child.stdout.close()


def _probe(ports: list[int], case: str, home: Path) -> dict[str, list[object]]:
    script = PROBE.format(src=str(SRC), ports=ports, case=case)
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
        env={"CORRAL_HOME": str(home), "PATH": "/usr/bin:/bin"},
    )
    found: dict[str, list[object]] = json.loads(done.stdout)
    return found


def test_the_walk_ahead_finds_the_owners_the_walk_after_the_table_finds(
    servers: tuple[list[int], int, int], tmp_path: Path
) -> None:
    ports, server, worker = servers
    found = _probe(ports, "plain", tmp_path)
    assert found["used"] == [True]  # nothing remembered, one thread: the child walked
    assert found["ahead"] == found["alone"]
    # each socket's owner: whichever of the two both walks meet first, the same in each
    assert {row[-1] for row in found["alone"]} <= {server, worker}  # type: ignore[index]
    assert found["zombies"] == []  # the child is reaped


@pytest.mark.parametrize("case", ["thread", "child fails"])
def test_the_walk_is_made_here_when_the_child_cannot_be_used(
    servers: tuple[list[int], int, int], tmp_path: Path, case: str
) -> None:
    ports, _, _ = servers
    found = _probe(ports, case, tmp_path)
    # another thread: no fork at all; a child that failed: its result is not used
    assert found["used"] == ([False] if case == "thread" else [True])
    assert found["ahead"] == found["alone"]
    assert len(found["alone"]) == len(ports)
    assert all(row[-1] is not None for row in found["alone"])  # type: ignore[index]
    assert found["zombies"] == []
